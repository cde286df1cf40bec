"""CLI: python -m webs.changeweb serve|truth ...

serve : bind all hosts, write the info file, print one line `READY {json}`, serve until
        SIGTERM/SIGINT (the request log is flushed on exit).
truth : from a server's info file, print one JSON line per page URL:
        {"url", "rate_per_day", "validators", "noise"}.
"""
from __future__ import annotations

import argparse
import json
import sys

from .model import ChangeConfig


def build_parser() -> argparse.ArgumentParser:
    d = ChangeConfig()
    parser = argparse.ArgumentParser(prog="python -m webs.changeweb")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the changing web")
    serve.add_argument("--port", type=int, default=d.port, help="0 = pick a free port")
    serve.add_argument("--hosts", type=int, default=d.hosts)
    serve.add_argument("--pages", type=int, default=d.pages_per_host, help="pages per host")
    serve.add_argument("--seed", type=int, default=d.seed)
    serve.add_argument("--day-seconds", type=float, default=d.day_seconds,
                       help="real seconds per simulated day")
    serve.add_argument("--horizon-days", type=float, default=d.horizon_days,
                       help="simulated days with changes (pages freeze after)")
    serve.add_argument("--crawl-delay", type=float, default=d.crawl_delay,
                       help="robots.txt Crawl-delay, real seconds")
    serve.add_argument("--validators-fraction", type=float, default=d.validators_fraction)
    serve.add_argument("--noise-fraction", type=float, default=d.noise_fraction)
    serve.add_argument("--latency", type=float, default=d.latency,
                       help="real seconds every response waits")
    serve.add_argument("--profile", choices=("days", "realtime"), default=d.profile,
                       help="the spread of change rates (realtime: pages changing every 2 s to 12 min)")
    serve.add_argument("--log", default=None, help="request log file (truncated)")
    serve.add_argument("--info", default=None, help="info JSON file written when ready")
    serve.add_argument("--epoch", type=float, default=None,
                       help="wall time of simulated day 0 (default: now)")
    serve.add_argument("--exit-with-parent", action="store_true",
                       help="stop when the parent process dies")
    truth = commands.add_parser("truth", help="print per-URL ground truth")
    truth.add_argument("--info", required=True, help="the server's info file")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "truth":
        from .server import read_info
        from .truth import Truth
        for page in Truth(*read_info(args.info)).pages():
            print(json.dumps({"url": page.url, "rate_per_day": page.rate_per_day,
                              "validators": page.validators, "noise": page.noise}))
        return 0
    try:
        config = ChangeConfig(hosts=args.hosts, pages_per_host=args.pages, port=args.port,
                              seed=args.seed, day_seconds=args.day_seconds,
                              horizon_days=args.horizon_days, crawl_delay=args.crawl_delay,
                              validators_fraction=args.validators_fraction,
                              noise_fraction=args.noise_fraction, latency=args.latency,
                              profile=args.profile)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from .server import run
    return run(config, args.log, args.info, args.epoch, args.exit_with_parent)


if __name__ == "__main__":
    sys.exit(main())
