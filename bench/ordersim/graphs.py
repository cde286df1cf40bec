"""Link graphs for the offline harvest simulator.

A Graph: nodes 0..n-1, each with a host, a URL path, out-links (node ids), and flags:
content (counts for PageRank and the top 1 %), real (counts for the budget). Optional
per-host sitemap nodes (not content, not real) list (node, priority). Nodes may be
created lazily (the trap host of webs.harvestweb) through `expand`.

Builders:
- from_harvestweb(config): webs.harvestweb.HarvestWeb as it is (content hosts, sitemap-only
  pages, the mirror host, the trap host), PageRank taken from the generator itself;
- realweb(...): a generator whose parameters come from published web measurements (the
  package's docstring names the sources).
"""
from __future__ import annotations

import bisect
import itertools
import math
import random
from dataclasses import dataclass, field

DEPTH_LIMIT = 20  # CRAWLER_DEPTH_LIMIT


@dataclass
class Graph:
    name: str
    host: list = field(default_factory=list)
    path: list = field(default_factory=list)
    out: list = field(default_factory=list)  # list of node ids, or None: expand lazily
    content: list = field(default_factory=list)
    real: list = field(default_factory=list)
    seeds: list = field(default_factory=list)
    nhosts: int = 0
    sitemap_node: dict = field(default_factory=dict)  # host -> sitemap node id
    sitemap_list: dict = field(default_factory=dict)  # sitemap node id -> [(node, priority)]
    pr: dict = field(default_factory=dict)  # content node -> PageRank
    expand: object = None  # callable(graph, node) -> list of node ids
    info: dict = field(default_factory=dict)

    def add(self, host: int, path: str, content: bool, real: bool, out=None) -> int:
        self.host.append(host)
        self.path.append(path)
        self.out.append(out)
        self.content.append(content)
        self.real.append(real)
        return len(self.host) - 1

    def links(self, node: int) -> list:
        if self.out[node] is None:
            self.out[node] = self.expand(self, node) if self.expand else []
        return self.out[node]

    # --- the truth ---------------------------------------------------------------------
    def compute_pagerank(self, iterations: int = 50, damping: float = 0.85) -> None:
        """PageRank of the content pages over content-to-content links (as webs.harvestweb)."""
        nodes = [i for i in range(len(self.host)) if self.content[i]]
        index = {v: k for k, v in enumerate(nodes)}
        out = [[index[t] for t in (self.out[v] or ()) if t in index] for v in nodes]
        n = len(nodes)
        rank = [1.0 / n] * n
        base = (1 - damping) / n
        for _ in range(iterations):
            new = [base] * n
            dangling = 0.0
            for i, targets in enumerate(out):
                if targets:
                    share = damping * rank[i] / len(targets)
                    for t in targets:
                        new[t] += share
                else:
                    dangling += damping * rank[i]
            d = dangling / n
            rank = [r + d for r in new]
        self.pr = {v: rank[index[v]] for v in nodes}

    @property
    def important(self) -> set:
        ranked = sorted(self.pr, key=lambda v: (-self.pr[v], v))
        return set(ranked[:max(1, len(ranked) // 100)])

    @property
    def budget(self) -> int:
        return max(1, round(0.1 * sum(1 for r in self.real if r)))

    def stats(self) -> dict:
        content = [i for i in range(len(self.host)) if self.content[i]]
        edges = intra = 0
        for v in content:
            for t in self.out[v] or ():
                if self.content[t]:
                    edges += 1
                    intra += self.host[t] == self.host[v]
        imp = self.important
        homes = sum(1 for v in imp if self.path[v] == "/")
        sections = sum(1 for v in imp if place_kind(self.path[v]) == "section")
        sizes = {}
        for v in content:
            sizes[self.host[v]] = sizes.get(self.host[v], 0) + 1
        return {"pages": len(content), "hosts": len(sizes), "links": edges,
                "links_per_page": round(edges / len(content), 1), "intra_share": round(intra / max(1, edges), 3),
                "important": len(imp), "important_homes": homes, "important_sections": sections,
                "important_hosts": len({self.host[v] for v in imp}),
                "largest_host": max(sizes.values()), "budget": self.budget, **self.info}


def place_kind(path: str) -> str:
    """frontier.importance.place_points, as a kind: home, section or none."""
    if "?" in path:
        return "none"
    segments = [s for s in path.split("/") if s]
    if not segments:
        return "home"
    if len(segments) == 1 and ("." not in segments[0] or path.endswith("/")):
        return "section"
    return "none"


# --- webs.harvestweb as it is ---------------------------------------------------------------

def from_harvestweb(hosts=60, pages=50, seed=1, sitemap_lists="best") -> Graph:
    from webs.harvestweb import HarvestConfig, HarvestWeb

    web = HarvestWeb(HarvestConfig(hosts=hosts, pages=pages, seed=seed, sitemap_lists=sitemap_lists))
    c = web.config
    g = Graph(name=f"harvestweb {hosts}x{pages} seed {seed}", nhosts=c.hosts + 2)
    ids = {}
    for (h, n), path in web.paths.items():  # content pages and sitemap-only pages
        ids[(h, n)] = g.add(h, path, True, True)
    for (h, n), targets in web.links.items():
        out = [ids[t] for t in targets]
        if (h, n) in web.mirror_linked_from:
            out.append(("mirror", 0))
        if h == 1 and n == 2:
            out.append(("trap", "/"))
        g.out[ids[(h, n)]] = out
    for (h, n) in web.paths:
        if g.out[ids[(h, n)]] is None:
            g.out[ids[(h, n)]] = []  # sitemap-only pages: no links (the generator gives them none)
    # the mirror: host 0's texts under its own name, its own links staying on it
    mirror = {}
    for n in range(c.pages):
        mirror[n] = g.add(web.mirror, web.paths[(0, n)], False, False)
    for n in range(c.pages):
        g.out[mirror[n]] = [mirror[t[1]] if t[0] == 0 else ids[t] for t in web.links[(0, n)]]
    # the trap: lazily, real pages are its home and the first trap_real days
    trap_ids = {}

    def trap_node(path):
        if path not in trap_ids:
            real = path == "/" or (path.startswith("/cal/") and int(path[5:]) < c.trap_real)
            trap_ids[path] = g.add(web.trap, path, False, real, None)
        return trap_ids[path]

    def expand(graph, node):
        path = graph.path[node]
        if path == "/":
            return [trap_node("/cal/0"), trap_node("/deep/")]
        if path.startswith("/cal/"):
            d = int(path[5:])
            return [trap_node(f"/cal/{d + k}") for k in (1, 2, 7)]
        return [trap_node(path + "deep/"), trap_node(path + "other/")]

    trap_node("/")
    for d in range(c.trap_real):
        trap_node(f"/cal/{d}")
    for i, out in enumerate(g.out):  # resolve the placeholders
        if out:
            g.out[i] = [mirror[0] if t == ("mirror", 0) else trap_node("/") if t == ("trap", "/") else t for t in out]
    g.expand = expand
    g.seeds = [ids[(h, 0)] for h in range(c.seeds)]
    for h in range(c.hosts):
        sm = g.add(h, "/sitemap.xml", False, False)
        listed = []
        for url, p in web.sitemap_pages(h):
            n = web._by_path["/" + url.split("/", 3)[3]]
            listed.append((ids[(h, n)], p))
        g.out[sm] = [v for v, _ in listed]
        g.sitemap_node[h] = sm
        g.sitemap_list[sm] = listed
    url_pr = web.pagerank
    g.pr = {ids[(h, n)]: url_pr[web.url(h, n)] for (h, n) in web.paths}
    g.info = {"real_urls_generator": len(web.real_urls()), "important_generator": len(web.important)}
    assert g.budget == max(1, round(0.1 * len(web.real_urls())))
    assert {web.url(g.host[v], web._by_path[g.path[v]]) for v in g.important} == web.important
    return g


# --- a web with the published statistical properties ------------------------------------------

def _powerlaw_int(rng, exponent, lo, hi, k):
    """k draws of n in [lo, hi] with P(n) proportional to n^-exponent."""
    cum = list(itertools.accumulate(n ** -exponent for n in range(lo, hi + 1)))
    return [lo + bisect.bisect_left(cum, rng.random() * cum[-1]) for _ in range(k)]


def realweb(seed=1, hosts=1000, size_exp=1.8, max_size=2000, in_alpha=1.1, out_exp=2.72, out_min=3.0,
            out_max=500, external=0.2, p_home=0.5, templates=True, per_listing=20, seeds=5,
            seed_mode="top", sitemaps=None, name=None) -> Graph:
    """
    hosts: number of sites; sizes P(n) ~ n^-size_exp on [1, max_size] (Huberman & Adamic 1999).
    Each page an attractiveness w ~ Pareto(in_alpha): links pick targets proportionally to w,
    so in-degree has a power-law tail of exponent 1 + in_alpha (2.1: Broder et al. 2000).
    Content links per page ~ Pareto(out_exp - 1, out_min), at most out_max (out-degree tail
    2.72: Broder et al. 2000), besides the template links.
    Site structure: home, sections (about log2 of the size), each section's pages listed on
    paginated listing pages (per_listing items each, the section root the first of them);
    templates: every page links its home and its sections (navigation bar).
    external: the overall share of links that go to other hosts (Kamvar et al. 2003: ~80 %
    intra-host); an external link picks a host proportionally to its pages' total w, then
    its home page with probability p_home, else one of its pages proportionally to w.
    seeds: the hosts most other hosts link to ("well-known sites"); seed_mode "random": random
    hosts of 10 pages or more instead.
    sitemaps: None; "best10" (a host's ten best pages by PageRank, priority 1.0, 0.95, ...,
    as webs.harvestweb's); "all" (every page, no priority).
    """
    rng = random.Random(seed)
    sizes = _powerlaw_int(rng, size_exp, 1, max_size, hosts)
    g = Graph(name=name or f"realweb seed {seed}", nhosts=hosts)
    members = []  # per host: node ids
    for h, size in enumerate(sizes):
        nodes = [g.add(h, "/", True, True, [])]
        if size > 1:
            s_count = min(10, max(1, round(math.log2(size))), size - 1)
            roots = [g.add(h, f"/s{k}/", True, True, []) for k in range(s_count)]
            nodes += roots
            rest = size - 1 - s_count
            per_section = [[] for _ in range(s_count)]
            for i in range(rest):
                per_section[i % s_count].append(i)
            for k, items in enumerate(per_section):
                chain = [roots[k]]
                articles = list(items)
                while len(articles) > per_listing * len(chain):
                    articles.pop(0)
                    chain.append(g.add(h, f"/s{k}/page/{len(chain) + 1}", True, True, []))
                arts = [g.add(h, f"/s{k}/a{i}.html", True, True, []) for i in articles]
                nodes += chain[1:] + arts
                for j, lp in enumerate(chain):
                    g.out[lp] += arts[j * per_listing:(j + 1) * per_listing]
                    if j + 1 < len(chain):
                        g.out[lp].append(chain[j + 1])
            home = nodes[0]
            g.out[home] += roots
            if templates:
                for v in nodes[1:]:
                    g.out[v] += [home] + [r for r in roots if r != v]
        members.append(nodes)
    n = len(g.host)
    w = [rng.random() ** (-1.0 / in_alpha) for _ in range(n)]
    host_cum = [list(itertools.accumulate(w[v] for v in nodes)) for nodes in members]
    host_w = [c[-1] for c in host_cum]
    all_cum = list(itertools.accumulate(host_w))

    def pick_in(h, exclude=None):
        nodes, cum = members[h], host_cum[h]
        for _ in range(20):
            v = nodes[bisect.bisect_left(cum, rng.random() * cum[-1])]
            if v != exclude:
                return v
        return None

    def pick_host(exclude):
        for _ in range(50):
            h = bisect.bisect_left(all_cum, rng.random() * all_cum[-1])
            if h != exclude:
                return h
        return None

    for h, nodes in enumerate(members):
        for v in nodes:
            k = min(out_max, int(out_min * rng.random() ** (-1.0 / (out_exp - 1.0))))
            templ = len(g.out[v])
            q = 1.0 if len(nodes) == 1 else min(1.0, external * (templ + k) / max(1, k))
            present = set(g.out[v]) | {v}
            k_ext = sum(1 for _ in range(k) if rng.random() < q)
            k_int = min(k - k_ext, len(nodes) - len(present))  # a small site has few pages to link
            extra = []
            for count, external_link in ((k_ext, True), (k_int, False)):
                got = attempts = 0
                while got < count and attempts < 4 * count + 20:  # distinct targets: a page lists a link once
                    attempts += 1
                    if external_link:
                        o = pick_host(h)
                        t = None if o is None else members[o][0] if rng.random() < p_home else pick_in(o)
                    else:
                        t = pick_in(h, exclude=v)
                    if t is not None and t not in present:
                        present.add(t)
                        extra.append(t)
                        got += 1
            g.out[v] = g.out[v] + extra
    g.compute_pagerank()
    # seeds: the hosts the most other hosts link to
    referrers = [set() for _ in range(hosts)]
    for v in range(n):
        for t in g.out[v]:
            if g.host[t] != g.host[v]:
                referrers[g.host[t]].add(g.host[v])
    ranked_hosts = sorted(range(hosts), key=lambda h: (-len(referrers[h]), h))
    if seed_mode == "top":
        g.seeds = [members[h][0] for h in ranked_hosts[:seeds]]
    else:
        candidates = [h for h in range(hosts) if sizes[h] >= 10]
        g.seeds = [members[h][0] for h in random.Random(seed + 7).sample(candidates, seeds)]
    if sitemaps:
        for h, nodes in enumerate(members):
            if len(nodes) < 2:
                continue
            if sitemaps == "best10":
                best = sorted(nodes, key=lambda v: -g.pr[v])[:10]
                listed = [(v, round(1.0 - i * 0.05, 2)) for i, v in enumerate(best)]
            else:
                listed = [(v, None) for v in nodes]
            sm = g.add(h, "/sitemap.xml", False, False, [v for v, _ in listed])
            g.sitemap_node[h] = sm
            g.sitemap_list[sm] = listed
    g.info = {"sizes_top5": sorted(sizes, reverse=True)[:5], "one_page_hosts": sum(1 for s in sizes if s == 1)}
    return g
