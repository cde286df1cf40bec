"""`make bench-gemini`: the embedded crawler on the loopback Geminispace beside the http
sample web of the same size (hosts, pages per host, page sizes, server latency), with the
crawler's defaults and with CRAWLER_DEFAULT_DELAY=0: pages/s, CPU ms per page, peak RSS,
politeness violations and completeness from each server's own log, and the sockets of the
crawling process (open at once, and TIME_WAIT towards the server), sampled every 50 ms.

    python -m bench.gemini_bench [--hosts 20] [--pages 30] [--latency 0.01] [--modes default,nodelay]

Gemini opens one connection per request (the protocol has no kept-alive connection); the
http crawl keeps one per host session. The sockets figure shows whether Gemini's leave
the crawler bounded (the source system ran out of sockets). Bounded: each crawl is killed
after --timeout seconds.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from webs.geminispace import SpaceConfig
from webs.geminispace import audit_log as gemini_audit
from webs.geminispace import run_server as run_space
from .procstat import cpu_seconds, socket_inodes, tcp_sockets, wait_metered
from webs.sampleweb import WebConfig, audit_log, run_server

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ("crawlerweb", "indexer", "archiver")  # our token and CRAWLER_GEMINI_ROBOTS_AGENTS' default
TIME_WAIT = "06"


def sockets_of(pid: int) -> int:
    return len(socket_inodes(pid))


def time_waits(port: int) -> int:
    """TCP connections in TIME_WAIT whose remote end is `port` (the crawler's side)."""
    return sum(1 for sock in tcp_sockets() if sock.state == TIME_WAIT and sock.remote_port == port)


class SocketSampler:
    def __init__(self, pid: int, port: int):
        self.pid, self.port = pid, port
        self.open_max = self.time_wait_max = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(2)

    def _run(self):
        while not self._stop.wait(0.05):
            self.open_max = max(self.open_max, sockets_of(self.pid))
            self.time_wait_max = max(self.time_wait_max, time_waits(self.port))


def crawl(seeds: list[str], env: dict, workdir: Path, port: int, server_pid: int, timeout: float) -> dict:
    db = workdir / "bench.sqlite3"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    env = env | {"DATABASE_URL": f"sqlite:///{db}", "CRAWLER_WARC_DIR": str(workdir / "warc"),
                 "CRAWLER_CRAWL_LOG_FILE": str(workdir / "crawl.jsonl")}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    server_cpu = cpu_seconds(server_pid)
    out = workdir / "crawl.json"
    started = time.monotonic()
    with open(out, "w") as handle:
        proc = subprocess.Popen([sys.executable, "manage.py", "crawl", "--json", "--no-progress", "--scope", "web",
                                 *seeds], cwd=ROOT, env=env, stdout=handle, stderr=subprocess.DEVNULL)
        with SocketSampler(proc.pid, port) as sampler:
            status, usage = wait_metered(proc, timeout)
    wall = time.monotonic() - started
    if status != 0:
        raise RuntimeError(f"manage.py crawl exited with status {status}")
    import sqlite3

    with sqlite3.connect(db) as conn:
        fetched = conn.execute("SELECT count(*) FROM frontier_url WHERE last_fetched_at IS NOT NULL").fetchone()[0]
        documents = conn.execute("SELECT count(*) FROM indexer_document WHERE indexed").fetchone()[0]
    cpu = usage.ru_utime + usage.ru_stime
    return {"wall_s": round(wall, 2), "fetched": fetched, "indexed": documents,
            "pages_per_s": round(fetched / wall, 1), "cpu_ms_per_page": round(1000 * cpu / max(fetched, 1), 2),
            "server_cpu_ms_per_page": round(1000 * (cpu_seconds(server_pid) - server_cpu) / max(fetched, 1), 2),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "sockets_open_max": sampler.open_max,
            "time_wait_max": sampler.time_wait_max}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--pages", type=int, default=30)
    parser.add_argument("--latency", type=float, default=0.01)
    parser.add_argument("--page-kb", type=int, nargs=2, default=(10, 40))
    parser.add_argument("--modes", default="default,nodelay")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args(argv)
    base_env = dict(os.environ, CRAWLER_ALLOWED_NETWORKS="127.0.0.0/8")
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-gemini-") as tmp:
        workdir = Path(tmp)
        for mode in args.modes.split(","):
            env = base_env | ({"CRAWLER_DEFAULT_DELAY": "0"} if mode == "nodelay" else {})
            delay = 0.0 if mode == "nodelay" else float(env.get("CRAWLER_DEFAULT_DELAY", "1.0"))
            space_log = workdir / f"gemini-{mode}.log"
            # As alike as the two webs allow: the same slow host, the same Crawl-delay.
            config = SpaceConfig(capsules=args.hosts, pages=args.pages, latency=args.latency,
                                 page_kb=tuple(args.page_kb), link_specials=False, crawl_delay=0.1,
                                 slow_delay=0.02)
            with run_space(config, space_log) as space:
                figures = crawl(space.seeds, env, workdir, space.port, space.server_pid, args.timeout)
            report = gemini_audit(space_log, delay, space=space, agents=AGENTS, star="always")
            figures.update(violations=report["violations"], missing=len(report["missing"]),
                           reachable=len(space.reachable(AGENTS, "always")))
            results[f"gemini {mode}"] = figures
            web_log = workdir / f"http-{mode}.log"
            web_config = WebConfig(hosts=args.hosts, pages_per_host=args.pages, port=0, latency=args.latency,
                                   page_kb=tuple(args.page_kb), crawl_delay_hosts=2, crawl_delay=0.1,
                                   slow_delay=0.02, retry_after=0)
            with run_server(web_config, web_log) as web:
                figures = crawl(web.seeds, env, workdir, web.port, web.server_pid, args.timeout)
                report = audit_log(web_log, web, delay)
            figures.update(violations=report["violations"], missing=len(report["missing"]),
                           reachable=len(report["fetched"]) + len(report["missing"]) - len(report["unexpected"]))
            results[f"http {mode}"] = figures
    columns = ("fetched", "reachable", "missing", "violations", "wall_s", "pages_per_s", "cpu_ms_per_page",
               "server_cpu_ms_per_page", "peak_rss_mb", "sockets_open_max", "time_wait_max")
    print(f"{args.hosts} hosts x {args.pages} pages, {args.page_kb[0]}-{args.page_kb[1]} KB, "
          f"server latency {args.latency * 1000:.0f} ms, embedded crawler (SQLite)")
    print("| run | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for name, figures in results.items():
        print(f"| {name} | " + " | ".join(str(figures[c]) for c in columns) + " |")
    for mode in args.modes.split(","):
        g, h = results[f"gemini {mode}"], results[f"http {mode}"]
        print(f"{mode}: gemini/http pages/s {g['pages_per_s'] / h['pages_per_s']:.2f}, "
              f"CPU per page {g['cpu_ms_per_page'] / h['cpu_ms_per_page']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0 if all(r["violations"] == 0 and r["missing"] == 0 for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
