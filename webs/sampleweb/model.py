"""The pure, deterministic description of the sample web (no I/O).

Why: the server renders exactly what this module describes, and the ground
truth (what a correct crawler must fetch) is computed from the very same
Page objects and link lists, so the two can never drift apart.  Everything
derives from WebConfig through random.Random instances seeded with strings
(sha512-based, identical in every process), never from hash().
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from .text import Prose, render_html, unique_word
from .truth import ground_truth

HTML_UTF8 = "text/html; charset=utf-8"
SITE_SHAPES = ("mesh", "chain")


def host_address(index: int) -> str:
    """IP address of host `index`: 127.0.1.1 .. 127.0.1.250, 127.0.2.1, ..."""
    return f"127.0.{1 + index // 250}.{index % 250 + 1}"


@dataclass(frozen=True)
class WebConfig:
    """Every knob of the sample web; the web is a pure function of these."""
    hosts: int = 8
    pages_per_host: int = 30
    port: int = 8300
    seed: int = 1
    crawl_delay_hosts: int = 2
    crawl_delay: float = 0.2
    slow_delay: float = 0.15
    retry_after: int = 1
    page_kb: tuple[int, int] = (10, 40)
    latency: float = 0.0  # every response waits this long (a real server takes time)
    # How a host's pages link: "mesh" (each links 8 of its host's pages: a crawler knows most
    # of a site after two pages) or "chain" (each links only the next, and other hosts link
    # only home pages: a small site's next URL is found on the page just fetched).
    site_shape: str = "mesh"

    def __post_init__(self):
        object.__setattr__(self, "page_kb", tuple(int(v) for v in self.page_kb))
        problems = []
        if not 8 <= self.hosts <= 250 * 254:
            problems.append("hosts must be in 8..63500")
        if self.pages_per_host < 10:
            problems.append("pages_per_host must be >= 10 (specials use /p/0../p/9)")
        if not 0 <= self.crawl_delay_hosts <= self.hosts - 5:
            problems.append("crawl_delay_hosts must be in 0..hosts-5")
        if not 0 <= self.port <= 65535:
            problems.append("port must be in 0..65535")
        if self.crawl_delay < 0 or self.slow_delay < 0 or self.retry_after < 0 or self.latency < 0:
            problems.append("delays must be >= 0")
        if len(self.page_kb) != 2 or not 1 <= self.page_kb[0] <= self.page_kb[1]:
            problems.append("page_kb must be (min, max) with 1 <= min <= max")
        if self.site_shape not in SITE_SHAPES:
            problems.append(f"site_shape must be one of {', '.join(SITE_SHAPES)}")
        if problems:
            raise ValueError("; ".join(problems))

    def netloc(self, index: int) -> str:
        return f"{host_address(index)}:{self.port}"

    def to_argv(self) -> list[str]:
        """The `serve`/`truth`/`audit` CLI flags describing this config."""
        return ["--hosts", str(self.hosts), "--pages-per-host", str(self.pages_per_host),
                "--port", str(self.port), "--seed", str(self.seed),
                "--crawl-delay-hosts", str(self.crawl_delay_hosts),
                "--crawl-delay", repr(float(self.crawl_delay)),
                "--slow-delay", repr(float(self.slow_delay)),
                "--retry-after", str(self.retry_after),
                "--page-kb", str(self.page_kb[0]), str(self.page_kb[1]),
                "--latency", repr(float(self.latency)), "--site-shape", self.site_shape]


@dataclass(frozen=True)
class Link:
    href: str          # exactly as written in the HTML
    text: str
    rel: str = ""


@dataclass(frozen=True)
class Page:
    """One response as described by the model (the body is rendered lazily)."""
    status: int
    kind: str = "html"          # html | pdf | robots | redirect | error
    content_type: str = HTML_UTF8
    location: str | None = None
    links: tuple[Link, ...] = ()
    base_href: str = ""
    meta_robots: str = ""
    title: str = ""
    heading: str = ""
    unique: str | None = None
    size: int = 0               # target body size of html pages
    key: str = ""               # render key: same key => same bytes
    charset: str = "utf-8"
    text: str = ""              # literal body of robots/redirect/error pages


def _plain(status: int, title: str) -> Page:
    return Page(status, kind="error",
                text=f"<!DOCTYPE html>\n<html><head><title>{status} {title}</title></head>"
                     f"<body><h1>{title}</h1></body></html>\n")


NOT_FOUND = _plain(404, "Not Found")
GONE = _plain(410, "Gone")
_MOVED_TEXT = "<!DOCTYPE html>\n<html><head><title>Moved</title></head><body>Moved.</body></html>\n"

_LISTED_RE = re.compile(r"^/(p|private|nofollow)/(0|[1-9][0-9]*)\.html$")
_CAL_RE = re.compile(r"^/cal/([0-9]{4})/(0[1-9]|1[0-2])/$")
_LEAF_NAMES = {"private": "Members only", "nofollow": "Sponsored"}
# Host 0's html specials, in the order that fixes their unique words.
_HOME_HTML = ("/meta/noindex.html", "/meta/nofollow.html", "/base/index.html",
              "/report.pdf", "/charset/latin1.html",
              "/only-from-nofollow/1.html", "/only-from-pdf/1.html")
# Specials linked from host 0's "/" (redirect/loop intermediates are not).
HOME_SPECIAL_LINKS = ("/missing/1.html", "/missing/2.html", "/gone/1.html",
                      "/redirect/a", "/long/1", "/loop/a", "/dup/3.html", "/copy/3.html",
                      "/meta/noindex.html", "/meta/nofollow.html", "/base/index.html",
                      "/report.pdf", "/charset/latin1.html")
_SUFFIXES = ("Gazette", "Journal", "Review", "Almanac", "Courier", "Digest",
             "Herald", "Chronicle", "Times", "Ledger", "Observer", "Bulletin")
_LATIN1_EXTRA = ("<p>Caf\u00e9 cr\u00e8me, \u00fcber na\u00efve fa\u00e7ade "
                 "\u00e0 la carte, \u00e9t\u00e9 \u00e0 M\u00fcnchen.</p>\n")


class SampleWeb:
    """The sample web for one WebConfig: hosts, pages, links, ground truth."""

    def __init__(self, config: WebConfig | None = None, **overrides):
        config = config or WebConfig()
        if overrides:
            config = replace(config, **overrides)
        self.config = config
        self.port = config.port
        count = config.hosts
        self.hosts = [config.netloc(i) for i in range(count)]
        self._index = {netloc: i for i, netloc in enumerate(self.hosts)}
        self.seeds = [f"http://{self.hosts[0]}/"]
        self.slow_index, self.flaky_index, self.trap_index = count - 3, count - 2, count - 1
        self.no_robots_index = config.crawl_delay_hosts + 1
        self.content_hosts = tuple(range(count - 1))   # all but the trap
        self.prose = Prose(config.seed)
        self._cache: dict[tuple[int, str], Page] = {}
        self.log_path = None       # set by run_server
        self.server_pid = None     # set by run_server

    # ----------------------------------------------------------- hosts
    def host_index(self, netloc: str) -> int | None:
        return self._index.get(netloc)

    def role(self, netloc: str) -> str:
        i = self._index[netloc]
        if i == 0:
            return "home"
        return {self.slow_index: "slow", self.flaky_index: "flaky",
                self.trap_index: "trap"}.get(i, "normal")

    def delay_for(self, netloc: str) -> float | None:
        """The Crawl-delay announced by the host's robots.txt, or None."""
        i = self._index.get(netloc)
        if i is not None and 1 <= i <= self.config.crawl_delay_hosts:
            return float(self.config.crawl_delay)
        return None

    def has_robots(self, netloc: str) -> bool:
        i = self._index.get(netloc)
        return i is not None and i != self.no_robots_index

    def robots_txt(self, netloc: str) -> str | None:
        if not self.has_robots(netloc):
            return None
        text = "User-agent: *\nDisallow: /private/\n"
        delay = self.delay_for(netloc)
        if delay is not None:
            text += f"Crawl-delay: {delay:g}\n"
        return text

    def robots_disallowed(self, url: str) -> bool:
        parts = urlsplit(url)
        return self.has_robots(parts.netloc) and (parts.path or "/").startswith("/private/")

    def site_name(self, index: int) -> str:
        if index == self.trap_index:
            return "Endless Calendar"
        rng = random.Random(f"site:{self.config.seed}:{index}")
        return f"{self.prose.phrase(rng, 1)} {rng.choice(_SUFFIXES)}"

    @staticmethod
    def flaky_status(path: str) -> int:
        """First-answer status on the flaky host: 429 for odd numbers, else 503."""
        numbers = re.findall(r"[0-9]+", path)
        return 429 if numbers and int(numbers[-1]) % 2 else 503

    # ----------------------------------------------------------- pages
    def page(self, url: str) -> Page:
        parts = urlsplit(url)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return self.page_at(parts.netloc, path)

    def page_at(self, netloc: str, path: str) -> Page:
        i = self._index.get(netloc)
        if i is None:
            return NOT_FOUND
        if path == "/robots.txt":
            text = self.robots_txt(netloc)
            if text is None:
                return NOT_FOUND
            return Page(200, kind="robots", content_type="text/plain; charset=utf-8", text=text)
        if i == self.trap_index:
            return self._trap_page(i, path)
        page = self._cache.get((i, path))
        if page is None:
            page = self._content_page(i, path)
            if page is not NOT_FOUND:       # finite set of routes: bounded cache
                self._cache[(i, path)] = page
        return page

    def unique_word(self, url: str) -> str | None:
        """The word only this page contains (None if it serves no 200 body)."""
        return self.page(url).unique

    def body(self, page: Page) -> bytes:
        """The exact bytes the server sends for `page` (GET)."""
        if page.kind == "html":
            rng = random.Random(f"body:{self.config.seed}:{page.key}")
            extra = _LATIN1_EXTRA if page.charset != "utf-8" else ""
            html = render_html(self.prose, rng, title=page.title, heading=page.heading,
                               unique=page.unique, links=page.links, target_size=page.size,
                               meta_robots=page.meta_robots, base_href=page.base_href,
                               charset=page.charset, extra_html=extra)
            return html.encode(page.charset)
        if page.kind == "pdf":
            annex = "".join(f'<a href="{link.href}">{link.text}</a>' for link in page.links)
            return (f"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
                    f"% {page.title} {page.unique}\n% {annex}\n"
                    f"trailer << /Root 1 0 R >>\n%%EOF\n").encode("ascii")
        return page.text.encode("utf-8")

    def _html(self, i: int, path: str, local: int, name: str, links=(), size_kb=None,
              **extra) -> Page:
        rng = random.Random(f"size:{self.config.seed}:{i}:{path}")
        low, high = size_kb or self.config.page_kb
        word = unique_word(i, local)
        site = self.site_name(i)
        return Page(200, links=tuple(links), title=f"{name} - {site} ({word})",
                    heading=f"{name} - {site}", unique=word,
                    size=rng.randint(low * 1024, high * 1024), key=f"{i}:{path}", **extra)

    def _content_page(self, i: int, path: str) -> Page:
        n = self.config.pages_per_host
        if path == "/":
            return self._listing(i, None)
        match = _LISTED_RE.match(path)
        if match and int(match[2]) < n:
            k = int(match[2])
            if match[1] == "p":
                return self._listing(i, k)
            offset = 1 + n if match[1] == "private" else 1 + 2 * n
            return self._html(i, path, offset + k, f"{_LEAF_NAMES[match[1]]} {k}", size_kb=(1, 3))
        if i == 0:
            return self._home_special(path)
        return NOT_FOUND

    def _listing(self, i: int, k: int | None) -> Page:
        """Host `i`'s "/" (k=None) or /p/k.html."""
        path = "/" if k is None else f"/p/{k}.html"
        links = self._normal_links(i, k)
        if i == 0 and k is None:
            links += self._home_links()
        return self._html(i, path, 0 if k is None else 1 + k,
                          "Home" if k is None else f"Page {k}", links)

    def _normal_links(self, i: int, k: int | None) -> list[Link]:
        rng = random.Random(f"links:{self.config.seed}:{i}:{k}")
        n, netloc = self.config.pages_per_host, self.hosts[i]
        if self.config.site_shape == "chain":
            return self._chain_links(rng, i, k)
        if k is None:
            targets = [0] + rng.sample(range(1, n), 7)
            forms = ("http://{}/p/{}.html", "/p/{}.html", "p/{}.html", "./p/{}.html")
        else:
            nxt = (k + 1) % n      # the "next" chain makes every page reachable
            targets = [nxt] + rng.sample([t for t in range(n) if t not in (k, nxt)], 7)
            forms = ("http://{}/p/{}.html", "/p/{}.html", "{}.html", "../p/{}.html")
        rng.shuffle(targets)
        # host 0's /p/3.html is also served at /dup/ and /copy/: keep its
        # links valid from there (no plain relative form).
        no_plain = i == 0 and k == 3
        links = [Link("#top", "Back to top")]
        for target in targets:
            form = rng.randrange(4)
            if no_plain and form == 2:
                form = 3
            href = forms[form].format(netloc, target) if form == 0 else forms[form].format(target)
            links.append(Link(href + self._fragment(rng), self.prose.phrase(rng, 2)))
        others = [h for h in self.content_hosts if h != i]
        for _ in range(2):
            host = rng.choice(others)
            scheme = "//" if rng.random() < 0.25 else "http://"
            href = f"{scheme}{self.hosts[host]}/p/{rng.randrange(n)}.html"
            links.append(Link(href + self._fragment(rng), self.prose.phrase(rng, 3)))
        links += [Link("mailto:editor@sampleweb.test", "Write to the editor"),
                  Link("javascript:void(0)", "Print this page"),
                  Link("ftp://127.0.1.1/x", "File archive"),
                  Link(f"/nofollow/{rng.randrange(n)}.html", "Sponsored", rel="nofollow"),
                  Link(f"/private/{rng.randrange(n)}.html", "Members only")]
        return links

    def _chain_links(self, rng: random.Random, i: int, k: int | None) -> list[Link]:
        """A small site read page by page: home links /p/0, /p/k links /p/k+1 (the last
        none), and each page two other sites' home pages."""
        n = self.config.pages_per_host
        nxt = 0 if k is None else k + 1
        links = [Link("#top", "Back to top")]
        if nxt < n:
            links.append(Link(f"/p/{nxt}.html", self.prose.phrase(rng, 2)))
        others = [h for h in self.content_hosts if h != i]
        links += [Link(f"http://{self.hosts[rng.choice(others)]}/", self.prose.phrase(rng, 3)) for _ in range(2)]
        return links

    @staticmethod
    def _fragment(rng: random.Random) -> str:
        return f"#s{rng.randint(1, 6)}" if rng.random() < 0.25 else ""

    def _home_links(self) -> list[Link]:
        links = [Link(f"http://{self.hosts[j]}/", self.site_name(j))
                 for j in range(1, len(self.hosts))]
        if self.config.site_shape == "mesh":
            links += [Link(f"http://{self.hosts[j]}/p/0.html", f"First page of {self.site_name(j)}")
                      for j in self.content_hosts]
        links += [Link(path, f"Special {path}") for path in HOME_SPECIAL_LINKS]
        return links

    def _home_special(self, path: str) -> Page:
        if path in ("/dup/3.html", "/copy/3.html"):
            return self._listing(0, 3)           # same key => same bytes
        if path.startswith("/missing/") and path in HOME_SPECIAL_LINKS:
            return NOT_FOUND
        if path == "/gone/1.html":
            return GONE
        redirect = self._redirects().get(path)
        if redirect:
            return Page(redirect[0], kind="redirect", location=redirect[1], text=_MOVED_TEXT)
        if path not in _HOME_HTML:
            return NOT_FOUND
        local = 1 + 3 * self.config.pages_per_host + _HOME_HTML.index(path)
        small = (2, 4)
        if path == "/meta/noindex.html":
            return self._html(0, path, local, "Noindex", [Link("/p/7.html", "Seven")],
                              small, meta_robots="noindex")
        if path == "/meta/nofollow.html":
            return self._html(0, path, local, "Nofollow",
                              [Link("/only-from-nofollow/1.html", "Hidden")], small,
                              meta_robots="nofollow")
        if path == "/base/index.html":
            return self._html(0, path, local, "Base", [Link("8.html", "Eight"),
                                                       Link("9.html", "Nine")],
                              small, base_href="/p/")
        if path == "/report.pdf":
            return Page(200, kind="pdf", content_type="application/pdf",
                        links=(Link("/only-from-pdf/1.html", "annex"),),
                        title="Annual report", unique=unique_word(0, local))
        if path == "/charset/latin1.html":
            return self._html(0, path, local, "Latin-1", (), small, charset="iso-8859-1",
                              content_type="text/html; charset=iso-8859-1")
        return self._html(0, path, local, "Leaf", (), (1, 3))

    def _redirects(self) -> dict[str, tuple[int, str]]:
        table = {"/redirect/a": (301, "/redirect/b"),
                 "/redirect/b": (302, "/redirect/c"),
                 "/redirect/c": (307, f"http://{self.hosts[2]}/p/5.html"),
                 "/loop/a": (301, "/loop/b"),
                 "/loop/b": (301, "/loop/a")}
        for hop in range(1, 6):
            table[f"/long/{hop}"] = (302, f"/long/{hop + 1}")
        table["/long/6"] = (302, "/p/1.html")
        return table

    def _trap_page(self, i: int, path: str) -> Page:
        """The endless calendar: /cal/YYYY/MM/ for years 0001..9999."""
        if path == "/":
            return self._html(i, path, 0, "Calendar", [Link("/cal/2026/01/", "January 2026")],
                              (2, 4))
        match = _CAL_RE.match(path)
        if not match or int(match[1]) < 1:
            return NOT_FOUND
        year, month = int(match[1]), int(match[2])
        links = []
        prev = (year, month - 1) if month > 1 else (year - 1, 12)
        nxt = (year, month + 1) if month < 12 else (year + 1, 1)
        for y, m, label in (prev + ("Previous month",), nxt + ("Next month",)):
            if 1 <= y <= 9999:
                links.append(Link(f"/cal/{y:04d}/{m:02d}/", label))
        return self._html(i, path, 1 + year * 12 + month - 1, f"Calendar {year:04d}-{month:02d}",
                          links, (2, 4))

    # ----------------------------------------------------------- truth
    def ground_truth(self, depth_limit: int = 20, max_redirects: int = 3, scope: str = "web") -> set[str]:
        """Canonical URLs a correct crawler fetches (robots.txt excluded); see truth.py."""
        return ground_truth(self, depth_limit, max_redirects, scope)
