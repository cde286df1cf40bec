"""Offline crawl-order simulator: which pages a crawler fetches first, no HTTP.

simulate(graph, order, **options) -> the list of fetched nodes (at most `budget`).

Orders:
  bfs-fifo   plain global FIFO (discovery order), hosts ignored;
  bfs-rr     breadth-first as the brief describes our crawler's: round robin over hosts with
             waiting URLs (the one that waited longest), from it the smallest depth, then
             discovery order;
  bfs-depth  breadth-first as the engine orders due sessions in breadth-first mode
             (score = -10 x depth, best due session first, ties by who waited longest);
  ours       frontier/importance.py's score: -10 depth, +40 home, +10 section root,
             +12 x min(5, distinct other hosts seen linking to it), + sitemap hint
             (10 + 20 x priority) when sitemaps are on; hosts by their best waiting URL
             (+ 6 log2(1 + distinct other hosts linking to the host) with standing=True);
  backlink   most links seen from fetched pages first (Cho, Garcia-Molina & Page 1998);
  opic       most cash first (Abiteboul, Preda & Cobena 2003; Baeza-Yates et al. 2005);
  omniscient the true PageRank of the discovered URLs, best first (knows the answer, but
             can fetch only what it has discovered);
  ideal      (ideal()) shortest paths from the seeds to the important pages, the
             cheapest first: a feasible order that knows everything.

Options: concurrency C (each round fetches up to C URLs of distinct hosts; the links of a
round are seen after it: the crawl's threads and its writer's lag), sitemaps (ours: a host's
sitemap admitted when its first page is fetched, scored like a page listed at priority 1.0,
its URLs hinted 10 + 20 x <priority>, `absent_priority_hint` without one, and admitted
`sitemap_step` links below it: CRAWLER_SITEMAP_ENTRY_DEPTH), bands (the engine's draw over
score bands: 60/30/10, 80/15/5 when at least 32 hosts wait), parts (which parts of our score
are on).
"""
from __future__ import annotations

import heapq
import math
import random
from collections import deque

from .graphs import DEPTH_LIMIT, place_kind

BAND_HIGH, BAND_LOW = 20, -30
SHARES, SHARES_LOADED = (60, 30, 10), (80, 15, 5)
OURS_PARTS = ("depth", "home", "section", "inlinks")


def simulate(g, order, budget=None, C=1, sitemaps=False, standing=False, bands=False, parts=OURS_PARTS,
             rng_seed=0, absent_priority_hint=20, sitemap_step=2, home_points=40, section_points=10, inlink_points=12,
             inlink_max=5, depth_points=-10):
    budget = budget or g.budget
    rng = random.Random(rng_seed)
    depth = {}
    disc = {}
    fetched = set()
    fetched_list = []
    inhosts = {}
    backl = {}
    cash = {}
    hint = {}
    host_refs = {}
    host_started = set()
    cur = {}  # node -> current score (score orders)
    heaps = {}  # host -> heap of (-score, disc, node, score)
    active = set()  # hosts with a (maybe stale) heap
    last_served = {}  # host -> step it was last served (or got work)
    rr = deque()
    in_rr = set()
    fifo = deque()
    step = [0]
    place_cache = {}

    def place(v):
        k = place_cache.get(v)
        if k is None:
            k = place_cache[v] = place_kind(g.path[v])
        return k

    def score(v):
        if order == "bfs-depth":
            return -10 * depth[v]
        if order == "ours":
            s = depth_points * depth[v] if "depth" in parts else 0
            k = place(v)
            if k == "home" and "home" in parts:
                s += home_points
            elif k == "section" and "section" in parts:
                s += section_points
            if "inlinks" in parts:
                s += inlink_points * min(inlink_max, len(inhosts.get(v, ())))
            return s + hint.get(v, 0)
        if order == "backlink":
            return backl.get(v, 0)
        if order == "opic":
            return cash.get(v, 0.0)
        if order == "omniscient":
            return g.pr.get(v, 0.0)
        raise ValueError(order)

    def push(v):
        h = g.host[v]
        if order == "bfs-fifo":
            return
        if order == "bfs-rr":
            heapq.heappush(heaps.setdefault(h, []), (depth[v], disc[v], v, depth[v]))
            if h not in in_rr:
                rr.append(h)
                in_rr.add(h)
            return
        s = score(v)
        if cur.get(v) == s:
            return
        cur[v] = s
        heapq.heappush(heaps.setdefault(h, []), (-s, disc[v], v, s))
        if h not in active:
            active.add(h)
            last_served.setdefault(h, step[0])

    def admit(v, d, h_from=None, via_sitemap=None):
        if d > DEPTH_LIMIT:
            return
        new = v not in depth
        if new:
            depth[v] = d
            disc[v] = len(disc)
            if order == "bfs-fifo":
                fifo.append(v)
        elif d < depth[v]:
            depth[v] = d
        if via_sitemap is not None:
            hint[v] = max(hint.get(v, 0), via_sitemap)
        if h_from is not None and g.host[v] != h_from:
            inhosts.setdefault(v, set()).add(h_from)
            host_refs.setdefault(g.host[v], set()).add(h_from)
        if v not in fetched:
            push(v)

    def valid_top(h):
        heap = heaps.get(h)
        while heap:
            top = heap[0]
            v = top[2]
            if v in fetched or (order == "bfs-rr" and top[3] != depth[v]) or (order != "bfs-rr" and top[3] != cur[v]):
                heapq.heappop(heap)
                continue
            return top
        return None

    def host_key(h, top):
        s = top[3]
        if standing:
            s += round(6 * math.log2(1 + len(host_refs.get(h, ()))))
        return s

    def pick_hosts(c):
        if order == "bfs-fifo":
            out = []
            while fifo and len(out) < c:
                v = fifo.popleft()
                if v in fetched:
                    continue
                out.append(v)
            return out
        if order == "bfs-rr":
            out = []
            skipped = []
            while rr and len(out) < c:
                h = rr.popleft()
                in_rr.discard(h)
                top = valid_top(h)
                if top is None:
                    continue
                heapq.heappop(heaps[h])
                out.append(top[2])
                skipped.append(h)
            for h in skipped:  # back at the end if they have more
                if valid_top(h) is not None and h not in in_rr:
                    rr.append(h)
                    in_rr.add(h)
            return out
        cands = []
        for h in list(active):
            top = valid_top(h)
            if top is None:
                active.discard(h)
                continue
            cands.append((host_key(h, top), -last_served[h], h, top))
        if not cands:
            return []
        if not bands:
            chosen = heapq.nlargest(c, cands)
        else:
            chosen = []
            by_band = {0: [], 1: [], 2: []}
            for cand in cands:
                b = 0 if cand[0] >= BAND_HIGH else 1 if cand[0] >= BAND_LOW else 2
                by_band[b].append(cand)
            for b in by_band:
                by_band[b].sort(reverse=True)
            shares = SHARES_LOADED if len(cands) >= 32 else SHARES
            while len(chosen) < c and any(by_band.values()):
                nonempty = [b for b in range(3) if by_band[b]]
                b = nonempty[0] if len(nonempty) == 1 else rng.choices(nonempty, [shares[b] for b in nonempty])[0]
                chosen.append(by_band[b].pop(0))
        out = []
        for _, _, h, top in chosen:
            heapq.heappop(heaps[h])
            out.append(top[2])
        return out

    for s in g.seeds:
        admit(s, 0)
        if order == "opic":
            cash[s] = 1.0 / len(g.seeds)
            push(s)
    while len(fetched_list) < budget:
        step[0] += 1
        batch = pick_hosts(min(C, budget - len(fetched_list)))
        if not batch:
            break
        for v in batch:
            fetched.add(v)
            fetched_list.append(v)
            last_served[g.host[v]] = step[0]
        for v in batch:
            h = g.host[v]
            d = depth[v]
            if v in g.sitemap_list:
                for t, p in g.sitemap_list[v]:
                    admit(t, d + sitemap_step, via_sitemap=absent_priority_hint if p is None else 10 + round(20 * p))
                continue
            if sitemaps and order == "ours" and h not in host_started:
                # robots.txt names it, or CRAWLER_SITEMAP_GUESS tries /sitemap.xml (a 404 here):
                # scored as a page listed at priority 1.0; either way one request
                admit(g.sitemap_node[h] if h in g.sitemap_node else guess_node(g, h), d, via_sitemap=30)
            host_started.add(h)
            targets = list(dict.fromkeys(g.links(v)))
            if order == "opic" and targets:
                share = cash.get(v, 0.0) / len(targets)
                cash[v] = 0.0
                for t in targets:
                    cash[t] = cash.get(t, 0.0) + share
            for t in targets:
                backl[t] = backl.get(t, 0) + 1
                admit(t, d + 1, h_from=h)
    return fetched_list


def guess_node(g, h):
    """The /sitemap.xml a crawler guesses for a host whose robots.txt names none: a 404."""
    guesses = g.info.setdefault("_guess", {})
    if h not in guesses:
        guesses[h] = g.add(h, "/sitemap.xml", False, False, [])
        g.sitemap_list[guesses[h]] = []
    return guesses[h]


def harvest(g, fetched, budget=None):
    budget = budget or g.budget
    imp = g.important
    return len(imp & set(fetched[:budget])) / len(imp)


def ideal(g):
    """A feasible order knowing everything: shortest paths (BFS over content pages) from the
    seeds to the important pages, the cheapest additions first. Returns (harvest within the
    budget, fetches needed for every reachable important page, reachable share)."""
    parent = {s: None for s in g.seeds}
    dist = {s: 0 for s in g.seeds}
    queue = deque(g.seeds)
    while queue:
        v = queue.popleft()
        if dist[v] >= DEPTH_LIMIT:
            continue
        for t in g.out[v] or ():
            if t not in dist and g.content[t]:
                dist[t] = dist[v] + 1
                parent[t] = v
                queue.append(t)
    imp = g.important
    reach = [v for v in imp if v in dist]
    covered, needed = within_budget(parent, reach, g.budget), within_budget(parent, reach, None, count=True)
    return covered / len(imp), needed, len(reach) / len(imp)


def within_budget(parent, reach, budget, count=False):
    """Greedy: add the important page whose path adds the fewest new fetches. The important
    pages covered within `budget` fetches, or (count) the fetches to cover them all."""
    chosen = set()
    got = 0
    remaining = set(reach)
    while remaining:
        best = None
        for v in remaining:
            cost = 0
            u = v
            while u is not None and u not in chosen:
                cost += 1
                u = parent[u]
            if best is None or cost < best[0]:
                best = (cost, v)
        if budget is not None and len(chosen) + best[0] > budget:
            break
        u = best[1]
        while u is not None and u not in chosen:
            chosen.add(u)
            u = parent[u]
        for w in [w for w in remaining if w in chosen]:
            remaining.discard(w)
            got += 1
    return len(chosen) if count else got
