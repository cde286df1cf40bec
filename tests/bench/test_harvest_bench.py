"""The harvest benchmark (bench/harvest.py) at a small size: the web's truth is what its
model says, and the figures tell the crawlers apart. No timing is asserted."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import harvest
from webs.harvestweb import HarvestConfig, HarvestWeb

ROOT = Path(__file__).resolve().parents[2]
IS_POSTGRES = os.environ.get("DATABASE_URL", "").startswith("postgres")


def test_the_web_knows_its_important_pages_and_its_traps():
    web = HarvestWeb(HarvestConfig(hosts=20, pages=20, seeds=3, port=9))
    assert len(web.pagerank) == 20 * (20 + 3) and abs(sum(web.pagerank.values()) - 1) < 1e-6
    assert len(web.important) == len(web.pagerank) // 100
    ranked = sorted(web.pagerank.values(), reverse=True)
    assert ranked[0] > 5 * ranked[len(ranked) // 2]  # skewed, as the web's votes are
    assert web.is_trap_beyond_depth(f"http://{web.hosts[web.trap]}/cal/9")
    assert not web.is_trap_beyond_depth(f"http://{web.hosts[web.trap]}/cal/1")
    assert web.is_trap_beyond_depth(f"http://{web.hosts[web.trap]}/deep/other/")
    status, _, body = web.respond(0, "/sitemap.xml")
    assert status == 200 and all(url.encode() in body for url in web.sitemap_only_urls() if "127.0.5.1:" in url)
    # The mirror serves host 0's text under its own name.
    assert web.respond(web.mirror, "/")[2].replace(web.hosts[web.mirror].encode(), b"") != b""
    figures = harvest.figures(web, sorted(web.important) + ["x"] * 100)
    assert figures["harvest"] == 1.0 and figures["sitemap_only_fetched"] == 0.0


@pytest.mark.skipif(IS_POSTGRES, reason="embedded crawls: run once, in the SQLite pass")
def test_ours_reads_sitemaps_and_stops_traps_where_breadth_first_does_not():
    proc = subprocess.run([sys.executable, "-m", "bench.harvest", "--modes", "ours,breadth-first", "--hosts", "20",
                           "--pages", "20", "--json", "--timeout", "300", "--repeat", "1"],
                          # A depth limit of 10 (the Scrapy and wget2): at the default 20
                          # breadth-first spends ~90 s on ~6,000 trap pages that show nothing more.
                          cwd=ROOT, env=dict(os.environ, CRAWLER_DEPTH_LIMIT="10"), text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    import json
    results = json.loads(proc.stdout)
    ours, breadth = results["ours"], results["breadth-first"]
    assert (ours["sitemap_only_fetched"], breadth["sitemap_only_fetched"]) == (1.0, 0.0)
    # The trap's first pattern stops after CRAWLER_TRAP_MIN_PAGES pages, the others sooner.
    assert ours["trap_requests_past_depth"] <= 40 < breadth["trap_requests_past_depth"]
    # The mirror stops after CRAWLER_MIRROR_MIN_PAGES copies (and robots.txt, a few in flight).
    assert ours["mirror_requests"] <= 10 < breadth["mirror_requests"]
    assert ours["mirror_texts_indexed_twice"] == 0 < breadth["mirror_texts_indexed_twice"]
    assert ours["real_pages_fetched"] == 1.0
    assert 0 <= breadth["harvest"] <= 1 and 0 <= ours["harvest"] <= 1
