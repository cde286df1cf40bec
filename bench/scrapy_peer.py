"""The Scrapy peer: the same sample web crawled by stock Scrapy, for comparison.

Scrapy is the reference crawler of its kind, and it stores nothing: no frontier table,
no documents, no index, no archive. Crawling the same web under the same rules tells
what our storing and indexing costs on top of fetching and parsing. It runs in its own
virtualenv (var/scrapy-venv, bench/scrapy-requirements.txt) so neither project's
dependencies touch the other's, and its spider (bench/scrapy_spider.py) imports nothing
of ours.

Settings, and why (the spider's `settings()`):
- ROBOTSTXT_OBEY=True: robots.txt obeyed, as ours does.
- CONCURRENT_REQUESTS_PER_DOMAIN=1: one request in flight per host (a slot per host:
  every sample-web host has its own address); CONCURRENT_REQUESTS large (256, or the
  number of hosts if more) so that this, not a global cap, limits the crawl.
- Crawl-delay applied: Scrapy parses it but does not apply it; the spider's HostPacing
  middleware sets the host's slot delay from it, with DOWNLOAD_DELAY_JITTER=0 (the
  successor of RANDOMIZE_DOWNLOAD_DELAY=False) so the delay is exact, counts it from the
  end of the previous response (Scrapy counts from the previous request's start) and
  holds the host for Retry-After after a 429/503. Other hosts: no delay, as ours.
- DEPTH_LIMIT=20 and REDIRECT_MAX_TIMES=3, as ours; breadth-first order (DEPTH_PRIORITY=1,
  FIFO queues) so that the depth limit cuts where the ground truth's does.
- Scrapy's own retry (429 and 503 among RETRY_HTTP_CODES), dupefilter, redirects and
  HTTP/1.1 downloader; LOG_LEVEL=WARNING; no telnet or remote-control listener.
- Twisted's epoll reactor, not Scrapy 2.19's default asyncio reactor: on asyncio a
  slot's transfers are started as tasks that count as "transferring" only once they run,
  so a host without a delay is sent its whole queue at once (up to 22 requests in flight
  to one host on the quick size) whatever CONCURRENT_REQUESTS_PER_DOMAIN says.
- CONCURRENT_ITEMS=1: Scrapy works through a callback's output with that many
  concurrent coroutines (default 100 per response); this spider yields only requests,
  which are enqueued synchronously, so one at a time loses nothing and saves CPU.
- Links: a[href] on 200 HTML pages, not rel=nofollow, none from meta robots nofollow
  pages, <base href> honoured, fragments dropped, loopback only (redirects too).

    ensure_venv() -> Path             # the venv's python; installs once (marker file)
    run_scrapy(web, workdir, timeout) -> dict   # figures for bench/run.py's report()
"""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from .procstat import cpu_seconds, peak_rss_mb, wait_metered

ROOT = Path(__file__).resolve().parent.parent
SPIDER = Path(__file__).resolve().parent / "scrapy_spider.py"
REQUIREMENTS = Path(__file__).resolve().parent / "scrapy-requirements.txt"
VENV = ROOT / "var" / "scrapy-venv"
MARKER = ".crawlerweb-installed"  # holds the sha256 of the requirements installed
DEPTH_LIMIT = 20
MAX_REDIRECTS = 3
INSTALL_TIMEOUT = 900  # seconds, for venv creation plus pip install


def ensure_venv(path: Path = VENV, requirements: Path = REQUIREMENTS) -> Path:
    """Make the virtualenv at `path` and install `requirements` (default: Scrapy's,
    bench/scrapy-requirements.txt) into it, unless the marker file says these very
    requirements are installed. Returns the venv's python. bench/searcheval installs its
    baselines the same way."""
    python = path / "bin" / "python"
    wanted = hashlib.sha256(requirements.read_bytes()).hexdigest()
    marker = path / MARKER
    if python.exists() and marker.exists() and marker.read_text().strip() == wanted:
        return python
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=INSTALL_TIMEOUT)
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                              "-r", str(requirements)], check=False, timeout=INSTALL_TIMEOUT, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if install.returncode != 0:  # pip's chatter only when it matters
        raise RuntimeError(f"pip install into {path} failed:\n{install.stdout[-4000:]}")
    marker.write_text(wanted + "\n")
    return python


def run_scrapy(web, workdir: Path, timeout: float) -> dict:
    """Crawl `web` (a running SampleWeb) with the Scrapy spider, in a subprocess of the
    venv's python, bounded by `timeout` seconds. Returns the figures bench/run.py's
    report() takes:

        {"counts": {"pages", "indexed": 0, "urls"}, "cpu_seconds": {"crawler", "sample_web"},
         "peak_rss_mb": {"crawler", "sample_web"}, "db_bytes": 0, "warc_bytes": 0,
         "scrapy": the spider's JSON line}

    pages: distinct URLs answered (any status, robots.txt excluded, a retried 429/503
    once): the audit's "fetched" and our crawler's fetched URLs; the 200 HTML pages alone
    are in ["scrapy"]["html_pages"]. urls: distinct URLs Scrapy scheduled. CPU and peak
    RSS are the spider process's own (os.wait4), start-up included, as for manage.py crawl.
    """
    python = ensure_venv()
    workdir = Path(workdir)
    seeds = workdir / "scrapy-seeds.txt"
    seeds.write_text("\n".join(web.seeds) + "\n")
    out, err = workdir / "scrapy-crawl.json", workdir / "scrapy-crawl.log"
    # Its own interpreter and packages only: none of our PYTHONPATH or Django settings.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}
    command = [str(python), str(SPIDER), "--seeds-file", str(seeds), "--timeout", str(timeout),
               "--concurrency", str(max(256, len(web.hosts))), "--depth-limit", str(DEPTH_LIMIT),
               "--max-redirects", str(MAX_REDIRECTS)]
    web_cpu = cpu_seconds(web.server_pid)
    with open(out, "w") as stdout, open(err, "w") as stderr:
        proc = subprocess.Popen(command, cwd=workdir, env=env, stdout=stdout, stderr=stderr)
        # CLOSESPIDER_TIMEOUT stops the spider at `timeout`; the watchdog is the backstop.
        status, usage = wait_metered(proc, timeout + 30)
    web_cpu = cpu_seconds(web.server_pid) - web_cpu
    if status != 0:
        raise RuntimeError(f"scrapy spider exited with status {status}; see {err}")
    lines = out.read_text().strip().splitlines()
    result = json.loads(lines[-1]) if lines else {}
    if result.get("finish_reason") != "finished":
        raise TimeoutError(f"scrapy crawl did not finish within {timeout} s ({result.get('finish_reason')})")
    return {
        "counts": {"pages": result["pages"], "indexed": 0, "urls": result["urls"]},
        "cpu_seconds": {"crawler": usage.ru_utime + usage.ru_stime, "sample_web": web_cpu},
        "peak_rss_mb": {"crawler": round(usage.ru_maxrss / 1024, 1), "sample_web": peak_rss_mb(web.server_pid)},
        "db_bytes": 0,   # stores nothing
        "warc_bytes": 0,
        "scrapy": result,
    }
