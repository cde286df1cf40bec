"""`make demo`: start the sample web, crawl it with the embedded crawler, search the result,
and audit the crawl from the sample web's own request log.

Run from the repository root with DATABASE_URL pointing at a migrated database.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from webs.sampleweb import WebConfig, audit_log, run_server

ROOT = Path(__file__).resolve().parent.parent


def manage(*args: str, capture: bool = False) -> str:
    proc = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, check=True, text=True,
                          stdout=subprocess.PIPE if capture else None)
    return proc.stdout or ""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8300)
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--pages-per-host", type=int, default=30)
    parser.add_argument("--log", default="var/demo-requests.log")
    args = parser.parse_args(argv)

    config = WebConfig(hosts=args.hosts, pages_per_host=args.pages_per_host, port=args.port)
    with run_server(config, args.log) as web:
        print(f"sample web: {len(web.hosts)} hosts on 127.0.1.x:{web.port}, seed {web.seeds[0]}", flush=True)
        manage("crawl", "--scope", "web", *web.seeds)
        # Every page of the sample web carries one word found nowhere else: it must come first.
        word = web.unique_word(f"http://{web.hosts[4]}/p/4.html")
        print(f"\n$ manage.py search {word!r}   # a word only http://{web.hosts[4]}/p/4.html has", flush=True)
        manage("search", word, "--limit", "3")
    default_delay = float(os.environ.get("CRAWLER_DEFAULT_DELAY", "1.0"))
    depth = int(os.environ.get("CRAWLER_DEPTH_LIMIT", "20"))
    audit = audit_log(args.log, web, default_delay, depth_limit=depth)
    print("\nAudit from the sample web's request log:")
    print(json.dumps({k: audit[k] for k in (
        "requests", "violations", "in_flight_violations", "missing", "unexpected")} | {
        "gap_violations": len(audit["gap_violations"]),
        "retry_after_violations": len(audit["retry_after_violations"]),
        "robots_disallowed_fetched": len(audit["robots_disallowed_fetched"]),
        "ground_truth_fetched": f"{len(audit['fetched']) - len(audit['unexpected'])}/"
                                f"{len(web.ground_truth(depth_limit=depth))}",
    }, indent=2))
    print("\nEvery request the crawler sent, one JSON line each (docs/operations.md \"The crawl log\"): "
          f"{os.environ.get('CRAWLER_CRAWL_LOG_FILE') or 'var/log/crawl.jsonl'}")
    # The demo has its own database: the hints name it so that they work as printed.
    database = os.environ.get("DATABASE_URL", "")
    prefix = f"DATABASE_URL={database} " if database else ""
    print("\nThe crawl is in " + (database.removeprefix("sqlite:///") or "crawlerweb.sqlite3")
          + ". Search it, and browse it at http://127.0.0.1:8000/ :")
    print(f"  {prefix}.venv/bin/python manage.py search {word!r}")
    print(f"  {prefix}.venv/bin/python manage.py runserver")
    return 1 if audit["violations"] or audit["missing"] or audit["unexpected"] else 0


if __name__ == "__main__":
    sys.exit(main())
