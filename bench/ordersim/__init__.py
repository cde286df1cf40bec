"""Which pages first, offline: crawl orders simulated on link graphs, no HTTP
(`python -m bench.ordersim`; about a minute per concurrency).

bench.harvest crawls one web through the real crawler; this asks what any order could do
on it and on webs built from published measurements of the web graph, to tell a weak
order from a target no order can reach. The harvest is bench.harvest's: of the top 1 %
content pages by PageRank (damping 0.85), the share fetched within the first 10 % of
fetches (sitemaps count, robots.txt does not).

The model (sim.py): each round fetches up to C URLs of C distinct hosts (one request per
host at a time: politeness, or the crawl's fetch threads when there is no delay, as in
bench.harvest; C=32, the engine's threads, by default), and the links of a round are seen
after it. Orders: breadth-first as our crawler did it before issue 29 (round robin over
hosts, smallest depth first: "bfs-rr"; by the score -10 x depth, best host first:
"bfs-depth"), ours (frontier/importance.py's parts, the host standing, the band draw,
sitemaps with CRAWLER_SITEMAP_ENTRY_DEPTH), backlink count (Cho, Garcia-Molina & Page
1998), OPIC (Abiteboul, Preda & Cobena 2003), omniscient (the true PageRank of what has
been discovered) and the ideal (the cheapest paths to the important pages, knowing
everything). Not modelled: sessions of many URLs, thread timing, the mirror and trap rules.

The webs (graphs.py): webs.harvestweb as it is, and `realweb`, whose defaults come from
the literature, each varied one at a time in the table:
- site sizes P(n) ~ n^-1.8 (Huberman & Adamic, Nature 1999);
- in-degree tail 2.1, out-degree tail 2.72 (Broder et al., "Graph structure in the Web",
  WWW 2000; Kumar et al. 1999); a denser web with ~22 links a page (Meusel et al. 2014);
- about 80 % of links within the host (Kamvar et al., "Exploiting the block structure of
  the web for computing PageRank", 2003);
- links to other sites preferring big, well-linked sites, half of them to the home page
  (Baeza-Yates et al., "Crawling a country", WWW 2005; the share of home links has no
  published figure we know of: swept 0.3-0.7);
- templates: every page links its home and sections (Bar-Yossef & Rajagopalan, WWW 2002;
  Gibson, Punera & Tomkins, WWW 2005), and sections paginated in listings of 20;
- seeds: the five sites most other sites link to (or five random ones);
- sitemaps: none, a host's ten best pages with <priority> (as the harvest web's), or every
  page without <priority> (the common real form).

What it showed (docs/benchmarks.md, "What any order could reach, and sitemaps that list every page"):
breadth-first already fetches 70-99 % of the top pages at this budget on every such web,
so the most any order can gain over it is 1 / breadth-first's harvest, 1.05-1.45x with
templates and 1.6-1.9x without; not even the omniscient order reaches 2x on average.
"""
