"""The loopback Geminispace, described: capsules, pages, robots.txt, special and hostile
pages, and the ground truth of a crawl (no I/O).

Why a pure model: the server answers from it and the truth (what a correct crawler
fetches) is computed from the very same pages and links, so the two cannot drift; a
test or bench process rebuilds it from the SpaceConfig and the port alone. Everything
derives from the config through random.Random seeded with strings (never hash()).

Capsules (each a host: its own loopback address, all on one port):
  0 .. capsules-1   content capsules; 0 is the home capsule (the seed, the special pages)
  capsules          the slow capsule: slow_pages pages, each answered after slow_delay
  capsules + 1      the hostile capsule: HOSTILE paths (never linked)
  capsules + 2      the tarpit: accepts TCP, never answers the TLS ClientHello

Pages of a content capsule: "/" and /gemlog/K.gmi, except that K % 10 == 7 lives in
/private/, 8 in /drafts/ and 9 in /notes/ (the folders robots.txt files name). Page K
links K+1..K+3, 2K and 2K+1 (every page is reachable, in few hops), two random pages,
"/" and pages of other capsules, in every form a link takes (absolute, root-relative,
relative, "./", "../"). "/" lists pages 1..30; the home capsule's also lists every other
content capsule, the slow capsule and /special/.

The special pages (every status, redirects, a PNG, latin-1) and the hostile paths are
specials.py's; the drawings and code blocks art.py's.

Marker words (webs/sampleweb/text.py's scheme: vocabulary words never contain "q"):
unique word "qu…qz" (one per text page, in its first paragraph, findable), code word
"qc…qk" (in a code block, which a parser keeps: findable), art marker "qa…qx" (inside
an ASCII-art block, which a parser leaves out: not findable). No other "q" is served.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from ..sampleweb.text import Prose, unique_word
from . import art
from .pages import GEMTEXT, GEMTEXT_LANG, NOT_FOUND, Link, Page
from .specials import HOSTILE, PNG, SPECIALS, special_body, special_page

DEFAULT_PORT = 1965
# The robots.txt user-agents crawlerweb obeys by default: its product token and the
# virtual agents of what it does (it indexes, and it archives every answer in WARC files).
DEFAULT_AGENTS = ("crawlerweb", "indexer", "archiver")
FOLDERS = {7: "private", 8: "drafts", 9: "notes"}
HOME_LISTED = 30

def capsule_address(index: int) -> str:
    """Capsule `index`'s address: 127.0.2.1 .. 127.0.2.250, 127.0.3.1, ... (the sample web
    starts at 127.0.1.1)."""
    return f"127.0.{2 + index // 250}.{index % 250 + 1}"


@dataclass(frozen=True)
class SpaceConfig:
    """Every knob of the space; the space is a pure function of these (and the port)."""
    capsules: int = 4
    pages: int = 20
    seed: int = 1
    port: int = 0                  # 0: pick a free one at start
    slow_delay: float = 0.5        # the slow capsule waits this long before each answer
    slow_pages: int = 3
    latency: float = 0.0           # every capsule waits this long (a real server's think time)
    crawl_delay: float = 0.2       # the Crawl-delay of capsules 1, 5, 9, ... (robots kind 1)
    slow_down_seconds: int = 1     # the meta of 44 SLOW DOWN
    slow_down_times: int = 1       # how many first requests of /special/slow-down.gmi get 44
    page_kb: tuple[int, int] = (1, 4)
    link_specials: bool = True     # the home capsule's "/" links /special/
    certificate_days: int = 7
    hostile_seconds: float = 20.0  # the longest any hostile answer lasts

    def __post_init__(self):
        object.__setattr__(self, "page_kb", tuple(int(v) for v in self.page_kb))
        problems = []
        if not 1 <= self.capsules <= 250 * 250 - 3:
            problems.append("capsules must be in 1..62497")
        if self.pages < 10 or self.slow_pages < 1:
            problems.append("pages must be >= 10 and slow_pages >= 1")
        if not 0 <= self.port <= 65535:
            problems.append("port must be in 0..65535")
        if min(self.slow_delay, self.latency, self.crawl_delay, self.slow_down_seconds, self.hostile_seconds) < 0:
            problems.append("delays must be >= 0")
        if len(self.page_kb) != 2 or not 1 <= self.page_kb[0] <= self.page_kb[1]:
            problems.append("page_kb must be (min, max) with 1 <= min <= max")
        if problems:
            raise ValueError("; ".join(problems))

    def to_argv(self) -> list[str]:
        """The CLI flags describing this config (python -m webs.geminispace)."""
        return ["--capsules", str(self.capsules), "--pages", str(self.pages), "--seed", str(self.seed),
                "--port", str(self.port), "--slow-delay", repr(float(self.slow_delay)),
                "--slow-pages", str(self.slow_pages), "--latency", repr(float(self.latency)),
                "--crawl-delay", repr(float(self.crawl_delay)),
                "--slow-down-seconds", str(self.slow_down_seconds),
                "--slow-down-times", str(self.slow_down_times),
                "--page-kb", str(self.page_kb[0]), str(self.page_kb[1]),
                "--certificate-days", str(self.certificate_days),
                "--hostile-seconds", repr(float(self.hostile_seconds))] + (
                    [] if self.link_specials else ["--no-special-links"])


def _marker(capsule: int, local: int, head: str, tail: str) -> str:
    return head + unique_word(capsule, local)[2:-2] + tail


class GeminiSpace:
    """The space for one SpaceConfig (with its real port): capsules, pages, robots, truth."""

    def __init__(self, config: SpaceConfig | None = None, **overrides):
        config = config or SpaceConfig()
        if overrides:
            config = replace(config, **overrides)
        self.config = config
        self.port = config.port or DEFAULT_PORT
        n = config.capsules
        self.slow_index, self.hostile_index, self.tarpit_index = n, n + 1, n + 2
        self.addresses = [capsule_address(i) for i in range(n + 3)]
        # The default port is left out, as a canonical URL leaves it out.
        self.netlocs = [a if self.port == DEFAULT_PORT else f"{a}:{self.port}" for a in self.addresses]
        self._by_netloc = {netloc: i for i, netloc in enumerate(self.netlocs)}
        self._by_netloc.update({f"{a}:{self.port}": i for i, a in enumerate(self.addresses)})
        self.roots = [self.url("/", i) for i in range(n + 1)]  # content capsules and the slow one
        self.seeds = [self.roots[0]]
        self.special = {name: self.url(spec[0]) for name, spec in SPECIALS.items()}
        self.hostile = {name: self.url(path, self.hostile_index) for name, (path, _) in HOSTILE.items()}
        self.hostile["handshake-hang"] = self.url("/", self.tarpit_index)
        self.prose = Prose(config.seed)
        self._pages: dict[tuple[int, str], Page] = {}

    # ------------------------------------------------------------ capsules
    def url(self, path: str = "/", capsule: int = 0) -> str:
        return f"gemini://{self.netlocs[capsule]}{path}"

    def role(self, capsule: int) -> str:
        if capsule == 0:
            return "home"
        return {self.slow_index: "slow", self.hostile_index: "hostile", self.tarpit_index: "tarpit"}.get(
            capsule, "content")

    def capsule_of(self, url: str) -> int | None:
        return self._by_netloc.get(urlsplit(url).netloc)

    def page_count(self, capsule: int) -> int:
        if capsule < self.config.capsules:
            return self.config.pages
        return self.config.slow_pages if capsule == self.slow_index else 0

    def delay(self, capsule: int) -> float:
        """Seconds the capsule waits before each answer."""
        return self.config.latency + (self.config.slow_delay if capsule == self.slow_index else 0.0)

    def site_name(self, capsule: int) -> str:
        rng = random.Random(f"geminispace-site:{self.config.seed}:{capsule}")
        return f"{self.prose.phrase(rng, 1)} {rng.choice(('Capsule', 'Gemlog', 'Station', 'Outpost', 'Orbit'))}"

    # ------------------------------------------------------------ robots.txt
    def robots_groups(self, capsule: int) -> list[tuple[tuple[str, ...], tuple[tuple[str, str], ...], float | None]]:
        """(user-agents, ((allow|disallow, path prefix), ...), crawl delay) per group; [] with
        no robots.txt (51). Kinds by capsule % 4 (the slow capsule is kind 0):
        0: * disallows /private/.  1: indexer disallows /drafts/, researcher everything,
        * /private/ (both with Crawl-delay).  2: crawlerweb disallows /private/ but allows
        /private/7.gmi, archiver disallows /drafts/, * everything.  3: no robots.txt."""
        if capsule == self.hostile_index:
            return [(("*",), (), None)]
        if capsule >= self.slow_index:
            return [(("*",), (("disallow", "/private/"),), None)] if capsule == self.slow_index else []
        kind = capsule % 4
        delay = self.config.crawl_delay or None
        if kind == 0:
            return [(("*",), (("disallow", "/private/"),), None)]
        if kind == 1:
            return [(("indexer",), (("disallow", "/drafts/"),), delay),
                    (("researcher",), (("disallow", "/"),), None),
                    (("*",), (("disallow", "/private/"),), delay)]
        if kind == 2:
            return [(("crawlerweb",), (("disallow", "/private/"), ("allow", "/private/7.gmi")), None),
                    (("archiver",), (("disallow", "/drafts/"),), None),
                    (("*",), (("disallow", "/"),), None)]
        return []

    def robots_txt(self, capsule: int) -> str | None:
        groups = self.robots_groups(capsule)
        if not groups:
            return None
        blocks = []
        for agents, rules, delay in groups:
            lines = [f"User-agent: {agent}" for agent in agents]
            lines += [f"{kind.capitalize()}: {path}" for kind, path in rules] or ["Disallow:"]
            if delay is not None:
                lines.append(f"Crawl-delay: {delay:g}")
            blocks.append("\n".join(lines) + "\n")
        return f"# robots.txt of {self.site_name(capsule)}\n\n" + "\n".join(blocks)

    def _groups_for(self, capsule: int, agents, star: str):
        groups = self.robots_groups(capsule)
        wanted = {a.lower() for a in agents}
        named = [g for g in groups if wanted & {a.lower() for a in g[0]} - {"*"}]
        stars = [g for g in groups if "*" in g[0]]
        return named + stars if star == "always" else named or stars

    def allowed(self, url: str, agents=DEFAULT_AGENTS, star: str = "fallback") -> bool:
        """Whether robots.txt lets a crawler that obeys `agents` fetch `url`: the groups of
        every agent listed that has one apply together (the most restrictive combination,
        as the Gemini robots.txt companion asks); the "*" group only when none has one
        (RFC 9309), or always with star="always". The longest matching rule wins, allow on
        a tie."""
        parts = urlsplit(url)
        capsule = self._by_netloc.get(parts.netloc)
        if capsule is None:
            return True
        path = parts.path or "/"
        if path == "/robots.txt":
            return True
        best = None
        for _, rules, _ in self._groups_for(capsule, agents, star):
            for kind, prefix in rules:
                if path.startswith(prefix) and (best is None or len(prefix) > len(best[1])
                                                or (len(prefix) == len(best[1]) and kind == "allow")):
                    best = (kind, prefix)
        return best is None or best[0] == "allow"

    def crawl_delay(self, capsule: int, agents=DEFAULT_AGENTS, star: str = "fallback") -> float | None:
        delays = [d for _, _, d in self._groups_for(capsule, agents, star) if d is not None]
        return max(delays) if delays else None

    # ------------------------------------------------------------ pages
    def page(self, url: str) -> Page:
        parts = urlsplit(url)
        capsule = self._by_netloc.get(parts.netloc)
        return NOT_FOUND if capsule is None else self.page_at(capsule, parts.path or "/")

    def page_at(self, capsule: int, path: str) -> Page:
        key = (capsule, path)
        page = self._pages.get(key)
        if page is None:
            page = self._build(capsule, path)
            if page is not NOT_FOUND:  # a finite set of routes: a bounded cache
                self._pages[key] = page
        return page

    def _build(self, capsule: int, path: str) -> Page:
        if capsule == self.tarpit_index:
            return Page(0, "", kind="hostile", capsule=capsule, path=path)
        if path == "/robots.txt":
            text = self.robots_txt(capsule)
            if text is None:
                return NOT_FOUND
            return Page(20, "text/plain; charset=utf-8", kind="robots", capsule=capsule, path=path, text=text)
        if capsule == self.hostile_index:
            names = {spec[0]: name for name, spec in HOSTILE.items() if name != "handshake-hang"}
            if path in names:
                return Page(0, names[path], kind="hostile", capsule=capsule, path=path)
            return NOT_FOUND
        k = self._page_number(path)
        if k is not None and k < self.page_count(capsule):
            return self._content(capsule, k)
        if capsule == 0:
            return special_page(self, path)
        return NOT_FOUND

    @staticmethod
    def page_path(k: int) -> str:
        return "/" if k == 0 else f"/{FOLDERS.get(k % 10, 'gemlog')}/{k}.gmi"

    def _page_number(self, path: str) -> int | None:
        if path == "/":
            return 0
        match = re.fullmatch(r"/(gemlog|private|drafts|notes)/([1-9][0-9]*)\.gmi", path)
        if match and self.page_path(int(match[2])) == path:
            return int(match[2])
        return None

    def _content(self, capsule: int, k: int) -> Page:
        rng = random.Random(f"geminispace-page:{self.config.seed}:{capsule}:{k}")
        site = self.site_name(capsule)
        name = "Home" if k == 0 else f"{self.prose.phrase(rng, rng.randint(2, 4))}"
        markers = []
        if k == 0 or rng.random() < 0.6:
            markers.append(_marker(capsule, k, "qa", "qx"))
        code = _marker(capsule, k, "qc", "qk") if rng.random() < 0.3 else None
        if rng.random() < 0.3:
            markers.append(_marker(capsule, k, "qa", "qy"))
        return Page(20, GEMTEXT if capsule % 2 == 0 else GEMTEXT_LANG, capsule=capsule, path=self.page_path(k),
                    title=f"{name} - {site}", unique=unique_word(capsule, k), code_word=code,
                    art_markers=tuple(markers), links=tuple(self._links(capsule, k, rng)))

    def _href(self, rng: random.Random, capsule: int, here: int, there: int) -> str:
        """A link from page `here` to page `there` of one capsule, in a random form."""
        path = self.page_path(there)
        form = rng.randrange(4)
        if form == 0:
            return self.url(path, capsule)
        if form == 1:
            return path
        if here == 0:
            return path[1:] if there else "./"
        if there == 0:
            return ".." if form == 2 else "../"
        same = path.rsplit("/", 1)[0] == self.page_path(here).rsplit("/", 1)[0]
        file = path.rsplit("/", 1)[1]
        if same:
            return file if form == 2 else f"./{file}"
        return f"..{path}"

    def _links(self, capsule: int, k: int, rng: random.Random) -> list[Link]:
        count = self.page_count(capsule)
        if k == 0:
            targets = list(range(1, min(count, HOME_LISTED + 1)))
        else:
            targets = [0] + [t for t in (k + 1, k + 2, k + 3, 2 * k, 2 * k + 1) if t < count]
            targets += rng.sample(range(count), min(2, count))
        links = []
        for t in dict.fromkeys(t for t in targets if t != k):
            links.append(Link(self._href(rng, capsule, k, t), "Home" if t == 0 else self.prose.phrase(rng, 3),
                              (capsule, self.page_path(t))))
        content = self.config.capsules
        if capsule == 0 and k == 0:
            for other in list(range(1, content)) + [self.slow_index]:
                links.append(Link(self.roots[other], self.site_name(other), (other, "/")))
            if self.config.link_specials:
                links.append(Link("special/", "Special pages", (0, "/special/")))
        elif capsule < content and content > 1:
            for _ in range(2 if k else 1):
                other = rng.choice([c for c in range(content) if c != capsule])
                t = rng.randrange(self.config.pages)
                links.append(Link(self.url(self.page_path(t), other), self.prose.phrase(rng, 2),
                                  (other, self.page_path(t))))
        if rng.random() < 0.2:
            links.append(Link("mailto:editor@capsule.invalid", "Write to me"))
        return links

    # ------------------------------------------------------------ bodies
    def body(self, page: Page) -> bytes:
        """The exact body the server sends after the header."""
        if page.kind in ("robots", "plain"):
            return page.text.encode("utf-8")
        if page.kind == "image":
            return PNG
        if page.kind != "gemtext":
            return b""
        if page.capsule == 0 and page.path.startswith("/special/"):
            return special_body(page)
        return self._render(page).encode("utf-8")

    def _render(self, page: Page) -> str:
        rng = random.Random(f"geminispace-body:{self.config.seed}:{page.capsule}:{page.path}")
        low, high = self.config.page_kb
        size = rng.randint(low * 1024, high * 1024)
        prose = self.prose
        out = []
        top = [m for m in page.art_markers if m.endswith("qx")]
        if top:
            alt = rng.choice(("", f"{self.site_name(page.capsule)} banner", "ASCII art: the capsule's name"))
            drawing = (art.figlet_banner(rng) if rng.random() < 0.6
                       else art.box_banner(rng, self.site_name(page.capsule)))
            out += [f"```{alt}", *drawing, f"  {top[0]}", "```", ""]
        out += [f"# {page.title}", "", f"{page.unique} {prose.sentence(rng)}", "", rng.choice(prose.paragraphs), "",
                f"## {rng.choice(prose.headings)}", ""]
        out += [f"* {prose.phrase(rng, rng.randint(2, 5)).lower()}" for _ in range(rng.randint(2, 4))]
        out += ["", f"> {prose.sentence(rng)}", ""]
        if page.code_word:
            alt, code = art.code_snippet(rng, page.code_word)
            out += [f"```{alt}", *code, "```", ""]
        middle = [m for m in page.art_markers if m.endswith("qy")]
        if middle:
            drawing = art.braille_drawing(rng) if rng.random() < 0.5 else art.block_drawing(rng)
            out += [rng.choice(("```", "```a drawing")), *drawing, f"  {middle[0]}", "```", ""]
        out += [f"## {rng.choice(('Links', 'See also', 'More', 'Elsewhere'))}", ""]
        out += [f"=> {link.href} {link.label}" if rng.random() < 0.9 else f"=>\t{link.href}\t{link.label}"
                for link in page.links]
        out.append("")
        text = "\n".join(out)
        pieces = [text]
        length = len(text)
        while length < size:
            kind = rng.random()
            if kind < 0.15:
                piece = f"\n## {rng.choice(prose.headings)}\n"
            elif kind < 0.25:
                piece = f"\n> {prose.sentence(rng)}\n"
            else:
                piece = f"\n{rng.choice(prose.paragraphs)}\n"
            pieces.append(piece)
            length += len(piece)
        return "".join(pieces)

    # ------------------------------------------------------------ truth
    def reachable(self, agents=DEFAULT_AGENTS, star: str = "fallback", depth_limit: int = 20,
                  max_redirects: int = 3) -> set[str]:
        """Every URL a correct crawler seeded with `seeds` fetches (robots.txt excluded),
        whatever its answer: links are followed from gemtext pages (20 text/gemini) only,
        a redirect's target keeps the depth (hops + 1, at most max_redirects), robots.txt
        is obeyed as allowed() says, depth counts links from the seed."""
        seen: set[tuple[int, str]] = set()
        found: set[str] = set()
        level = [((0, "/"), 0)]
        depth = 0
        while level and depth <= depth_limit:
            following = []
            while level:
                (capsule, path), hops = level.pop()
                if (capsule, path) in seen or hops > max_redirects:
                    continue
                seen.add((capsule, path))
                url = self.url(path, capsule)
                if not self.allowed(url, agents, star):
                    continue
                found.add(url)
                page = self.page_at(capsule, path)
                if page.kind == "redirect" and page.target is not None:
                    level.append((page.target, hops + 1))
                elif page.kind == "gemtext" and page.status == 20:
                    following += [(link.target, 0) for link in page.links if link.target is not None]
            level = following
            depth += 1
        return found

    def words(self, agents=DEFAULT_AGENTS, star: str = "fallback", depth_limit: int = 20) -> dict[str, str]:
        """url -> unique word of every reachable page with a text body (what search finds)."""
        return {url: page.unique for url in self.reachable(agents, star, depth_limit)
                if (page := self.page(url)).unique is not None}

    def disallowed(self, agents=DEFAULT_AGENTS, star: str = "fallback") -> set[str]:
        """The pages of the content capsules that robots.txt keeps from such a crawler."""
        return {self.url(self.page_path(k), c) for c in range(self.config.capsules) for k in range(self.config.pages)
                if not self.allowed(self.url(self.page_path(k), c), agents, star)}
