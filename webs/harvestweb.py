"""The harvest web: a loopback web whose pages' importance is known, for `bench.harvest`
(issue 29: which pages first). Deterministic from its seed; the bench rebuilds the same
model to know the truth.

What it has, and why:
- `hosts` content hosts of `pages` pages each: a home page, a few section roots, pages.
  Links are skewed the way the web's are: most go to the host's own popular pages, some to
  other hosts' pages chosen with a Zipf-like preference (a few pages collect most of the
  web's votes), and a few hub pages link out to many hosts. Importance is the PageRank of
  that link graph (damping 0.85).
- Only `seeds` hosts are seeds; the others are found through links, as on the real web.
- Per host, a sitemap (named in robots.txt) lists its important pages with <priority> (or,
  with `sitemap_lists="all"`, every page without one) and `sitemap_only` pages no page
  links to.
- A mirror host serving the same texts as host 0 under its own name, linked from a few pages.
- A trap host: a calendar whose every day links the next ones, and relative links that
  nest paths deeper and deeper, every page the same template; its real pages are its home
  and the first `trap_real` days.

Served by the shared asyncio core (webs/httpserver.py): `python -m webs.harvestweb serve`.
Addresses 127.0.5.1 … (the sample web and the changing web use 127.0.1–4.x).
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import sys
from dataclasses import asdict, dataclass, replace
from email.utils import formatdate
from functools import cached_property

from . import httpserver
from .httpserver import RequestLog, reserve_port, response_head

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber basil cedar dune ember fern "
         "grove heath iris jade kelp lotus moss nectar olive pearl quartz reed sage thyme umber vale willow").split()


_TRAP_TEMPLATE = " ".join(random.Random(0).choices(WORDS, k=120))


def host_address(index: int) -> str:
    return f"127.0.{5 + index // 250}.{index % 250 + 1}"


@dataclass(frozen=True)
class HarvestConfig:
    hosts: int = 60
    pages: int = 50  # per content host
    seeds: int = 5
    sections: int = 4
    outlinks: int = 10
    external_share: float = 0.3  # of a page's links, to other hosts
    hubs: int = 2  # pages per host that link out to many hosts
    sitemap_only: int = 3  # pages per host listed only in its sitemap
    # What a host's sitemap lists besides its sitemap-only pages: "best", its ten best pages
    # with <priority> by rank; "all", every page and no <priority> (what most sites' generated
    # sitemaps are: the search engines ignore <priority>).
    sitemap_lists: str = "best"
    trap_real: int = 5  # calendar days that are real pages
    seed: int = 1
    port: int = 0
    latency: float = 0.0

    def __post_init__(self):
        if self.hosts < self.seeds or self.pages < self.sections + 2 or self.hosts > 1000:
            raise ValueError("need hosts >= seeds, pages >= sections + 2, hosts <= 1000")
        if self.sitemap_lists not in ("best", "all"):
            raise ValueError("sitemap_lists is 'best' or 'all'")


class HarvestWeb:
    """The model: hosts, pages, links, PageRank, sitemaps."""

    def __init__(self, config: HarvestConfig):
        self.config = config
        c = config
        self.mirror = c.hosts  # index of the mirror host
        self.trap = c.hosts + 1
        self.hosts = [f"{host_address(i)}:{c.port}" for i in range(c.hosts + 2)]
        rng = random.Random(c.seed)
        self.paths = {}  # (host, n) -> path
        for h in range(c.hosts):
            for n in range(c.pages + c.sitemap_only):
                self.paths[(h, n)] = self._path(n)
        self.links: dict[tuple[int, int], list[tuple[int, int]]] = {}
        popular = [(h, n) for h in range(c.hosts) for n in range(c.pages)]
        weights = list(itertools.accumulate(1.0 / (rank + 1) ** 1.1 for rank in range(len(popular))))
        rng.shuffle(popular)  # which pages the web votes for: anywhere, at any depth
        for h in range(c.hosts):
            hubs = set(rng.sample(range(c.sections + 1, c.pages), c.hubs))
            for n in range(c.pages):
                out = []
                if n == 0:
                    out += [(h, s) for s in range(1, c.sections + 1)]
                elif n <= c.sections:
                    out += [(h, m) for m in range(c.sections + 1, c.pages) if (m - c.sections - 1) % c.sections == n - 1]
                for _ in range(c.outlinks):
                    if rng.random() < c.external_share:
                        out.append(rng.choices(popular, cum_weights=weights)[0])
                    else:
                        out.append((h, min(c.pages - 1, int(rng.paretovariate(1.2)) - 1)))
                if n in hubs:
                    out += [(o, rng.randrange(c.pages)) for o in rng.sample(range(c.hosts), min(15, c.hosts))]
                self.links[(h, n)] = list(dict.fromkeys(link for link in out if link != (h, n)))
        self.mirror_linked_from = [(h, 1) for h in range(1, min(4, c.hosts))]
        self._by_path = {path: n for (h, n), path in self.paths.items() if h == 0}  # every host has host 0's paths

    def _path(self, n: int) -> str:
        sections = self.config.sections
        return "/" if n == 0 else f"/s{n}/" if n <= sections else f"/s{n % sections + 1}/p{n}.html"

    def url(self, h: int, n: int) -> str:
        return f"http://{self.hosts[h]}{self.paths[(h, n)]}"

    @property
    def seeds(self) -> list[str]:
        return [self.url(h, 0) for h in range(self.config.seeds)]

    @cached_property
    def pagerank(self) -> dict[str, float]:
        """PageRank of the content pages (sitemap-only pages included: no page links to them)."""
        nodes = list(self.paths)
        index = {node: i for i, node in enumerate(nodes)}
        out = [[index[t] for t in self.links.get(node, ())] for node in nodes]
        rank = [1.0 / len(nodes)] * len(nodes)
        for _ in range(50):
            new = [0.15 / len(nodes)] * len(nodes)
            dangling = 0.0
            for i, targets in enumerate(out):
                if targets:
                    share = 0.85 * rank[i] / len(targets)
                    for t in targets:
                        new[t] += share
                else:
                    dangling += 0.85 * rank[i]
            rank = [r + dangling / len(nodes) for r in new]
        return {self.url(*node): rank[index[node]] for node in nodes}

    @cached_property
    def important(self) -> set[str]:
        """The top 1 % of the content pages by PageRank."""
        ranked = sorted(self.pagerank, key=self.pagerank.get, reverse=True)
        return set(ranked[:max(1, len(ranked) // 100)])

    def sitemap_pages(self, h: int) -> list[tuple[str, float | None]]:
        """(URL, priority or None) a host's sitemap lists: its ten best pages by PageRank
        (priority by rank), or every page with no priority (`sitemap_lists`), and its
        sitemap-only pages."""
        c = self.config
        if c.sitemap_lists == "all":
            return [(self.url(h, n), None) for n in range(c.pages + c.sitemap_only)]
        own = sorted(range(c.pages), key=lambda n: self.pagerank[self.url(h, n)], reverse=True)[:10]
        listed = [(self.url(h, n), round(1.0 - i * 0.05, 2)) for i, n in enumerate(own)]
        return listed + [(self.url(h, n), 0.3) for n in range(c.pages, c.pages + c.sitemap_only)]

    def sitemap_only_urls(self) -> set[str]:
        c = self.config
        return {self.url(h, n) for h in range(c.hosts) for n in range(c.pages, c.pages + c.sitemap_only)}

    def mirror_urls(self) -> set[str]:
        return {f"http://{self.hosts[self.mirror]}{self.paths[(0, n)]}" for n in range(self.config.pages)}

    def is_trap_beyond_depth(self, url: str) -> bool:
        """A trap-host URL that is not one of its real pages (nor robots.txt or a sitemap guess)."""
        if not url.startswith(f"http://{self.hosts[self.trap]}/"):
            return False
        path = url.split("/", 3)[3]
        if path.startswith("cal/"):
            day = path[4:].rstrip("/")
            return not (day.isdigit() and int(day) < self.config.trap_real)
        return path not in ("", "robots.txt", "sitemap.xml")

    def real_urls(self) -> set[str]:
        """What a crawler should fetch: content pages (sitemap-only included), the trap
        host's home and real days; not the mirror."""
        trap = f"http://{self.hosts[self.trap]}"
        return set(self.pagerank) | {trap + "/"} | {f"{trap}/cal/{d}" for d in range(self.config.trap_real)}

    # --- responses -----------------------------------------------------------------------------

    def respond(self, h: int, path: str) -> tuple[int, str, bytes]:
        """(status, content type, body) for a GET of path on host h."""
        c = self.config
        if path == "/robots.txt":
            lines = "User-agent: *\nDisallow:\n"
            if h < c.hosts:
                lines += f"Sitemap: http://{self.hosts[h]}/sitemap.xml\n"
            return 200, "text/plain", lines.encode()
        if h == self.trap:
            return self._trap(path)
        content_host = 0 if h == self.mirror else h
        if path == "/sitemap.xml" and h < c.hosts:
            entries = "".join(f"<url><loc>{url}</loc>" + ("" if p is None else f"<priority>{p}</priority>") + "</url>"
                              for url, p in self.sitemap_pages(h))
            return 200, "application/xml", (f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}'
                                            "</urlset>").encode()
        n = self._page_of(path)
        if n is None:
            return 404, "text/html", b"<html><body>not found</body></html>"
        return 200, "text/html; charset=utf-8", self._page(h, content_host, n)

    def _page_of(self, path: str) -> int | None:
        return self._by_path.get(path)

    def _page(self, h: int, content_host: int, n: int) -> bytes:
        rng = random.Random(content_host * 100_003 + n)
        text = " ".join(rng.choice(WORDS) + rng.choice(WORDS) for _ in range(150))
        links = []
        for target in self.links.get((content_host, n), ()):
            target_host = h if target[0] == content_host else target[0]  # the mirror links within itself
            links.append(f"http://{self.hosts[target_host]}{self.paths[(target[0], target[1])]}")
        if (content_host, n) in self.mirror_linked_from and h != self.mirror:
            links.append(f"http://{self.hosts[self.mirror]}/")
        if content_host == 1 and n == 2 and h != self.mirror:
            links.append(f"http://{self.hosts[self.trap]}/")
        anchors = "".join(f'<a href="{link}">link</a> ' for link in links)
        title = f"page {n} of site {content_host}"
        return (f"<!DOCTYPE html><html><head><title>{title}</title></head><body><h1>{title}</h1>"
                f"<p>{text}</p><p>{anchors}</p></body></html>").encode()

    def _trap(self, path: str) -> tuple[int, str, bytes]:
        if path == "/":
            body = '<a href="/cal/0">calendar</a> <a href="deep/">more</a>'
        elif path.startswith("/cal/"):
            day = path[5:]
            if not day.isdigit():
                return 404, "text/html", b"<html><body>not found</body></html>"
            d = int(day)
            body = " ".join(f'<a href="/cal/{d + k}">day {d + k}</a>' for k in (1, 2, 7))
        else:  # ever-deeper relative paths: every page links "deep/" below itself
            body = '<a href="deep/">deeper</a> <a href="other/">other</a>'
        # As a trap's pages are: one template, a date or a path changed (near-duplicates).
        return 200, "text/html", (f"<html><head><title>Events</title></head><body><p>{_TRAP_TEMPLATE}</p>"
                                  f"{body}</body></html>").encode()


class HarvestServer(httpserver.HTTPServer):
    def __init__(self, web: HarvestWeb, log: RequestLog):
        super().__init__([httpserver.Host(i, web.hosts[i], web.config.latency) for i in range(len(web.hosts))], log)
        self.web = web

    def head(self, status: int, headers) -> bytes:
        return response_head(status, (("Date", formatdate(usegmt=True)), *headers), "harvestweb")

    def answer(self, host, method, path, headers):
        status, content_type, body = self.web.respond(host.index, path)
        return status, self.head(status, (("Content-Type", content_type), ("Content-Length", str(len(body))))), \
            body, ()


async def serve(config: HarvestConfig, log_path=None, exit_with_parent: bool = False) -> int:
    first_sock = None
    if config.port == 0:
        first_sock = reserve_port(host_address(0))
        config = replace(config, port=first_sock.getsockname()[1])
    web = HarvestWeb(config)
    server = HarvestServer(web, RequestLog(log_path))

    def ready():
        sys.stdout.write("READY " + json.dumps({"config": asdict(config)}) + "\n")
        sys.stdout.flush()

    return await server.serve_until_stopped([host_address(i) for i in range(len(web.hosts))], config.port,
                                            first_sock, exit_with_parent, ready)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m webs.harvestweb")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser("serve")
    for name, value in asdict(HarvestConfig()).items():
        serve_parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    serve_parser.add_argument("--log", default=None)
    serve_parser.add_argument("--exit-with-parent", action="store_true")
    args = vars(parser.parse_args(argv))
    log, exit_with_parent = args.pop("log"), args.pop("exit_with_parent")
    args.pop("command")
    return asyncio.run(serve(HarvestConfig(**args), log, exit_with_parent))


if __name__ == "__main__":
    sys.exit(main())
