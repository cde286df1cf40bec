"""CLI: python -m webs.geminispace serve|truth|audit [config flags] ...

serve : bind every capsule, print each capsule's role and URL, then one line
        `READY {json}` (port, roots, seeds, special and hostile URLs, certificate
        fingerprints), serve until SIGTERM/SIGINT (or the parent's death).
truth : print the URLs a correct crawler fetches (space.reachable), sorted.
audit : print the politeness audit of a request log as JSON.
Config flags must be the same for serve, truth and audit of one run (truth and audit
need the port serve printed).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading

from . import RunningSpace
from .audit import audit_log
from .model import DEFAULT_AGENTS, GeminiSpace, SpaceConfig


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    d = SpaceConfig()
    parser.add_argument("--capsules", type=int, default=d.capsules)
    parser.add_argument("--pages", type=int, default=d.pages)
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument("--port", type=int, default=d.port, help="0 = pick a free port")
    parser.add_argument("--slow-delay", type=float, default=d.slow_delay)
    parser.add_argument("--slow-pages", type=int, default=d.slow_pages)
    parser.add_argument("--latency", type=float, default=d.latency)
    parser.add_argument("--crawl-delay", type=float, default=d.crawl_delay)
    parser.add_argument("--slow-down-seconds", type=int, default=d.slow_down_seconds)
    parser.add_argument("--slow-down-times", type=int, default=d.slow_down_times)
    parser.add_argument("--page-kb", type=int, nargs=2, metavar=("MIN", "MAX"), default=list(d.page_kb))
    parser.add_argument("--certificate-days", type=int, default=d.certificate_days)
    parser.add_argument("--hostile-seconds", type=float, default=d.hostile_seconds)
    parser.add_argument("--no-special-links", action="store_true", help="the home page does not link /special/")


def config_from_args(args: argparse.Namespace) -> SpaceConfig:
    return SpaceConfig(capsules=args.capsules, pages=args.pages, seed=args.seed, port=args.port,
                       slow_delay=args.slow_delay, slow_pages=args.slow_pages, latency=args.latency,
                       crawl_delay=args.crawl_delay, slow_down_seconds=args.slow_down_seconds,
                       slow_down_times=args.slow_down_times, page_kb=tuple(args.page_kb),
                       certificate_days=args.certificate_days, hostile_seconds=args.hostile_seconds,
                       link_specials=not args.no_special_links)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m webs.geminispace")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the space")
    truth = commands.add_parser("truth", help="print the URLs a correct crawler fetches")
    audit = commands.add_parser("audit", help="audit a request log, print JSON")
    for sub in (serve, truth, audit):
        add_config_arguments(sub)
    serve.add_argument("--log", default=None, help="request log file (truncated)")
    serve.add_argument("--exit-with-parent", action="store_true", help="stop when the parent process dies")
    for sub in (truth, audit):
        sub.add_argument("--agents", default=",".join(DEFAULT_AGENTS),
                         help="the robots.txt user-agents the crawler obeys, comma-separated")
        sub.add_argument("--star", choices=("fallback", "always"), default="fallback")
        sub.add_argument("--depth-limit", type=int, default=20)
    audit.add_argument("--log", required=True)
    audit.add_argument("--delay", type=float, default=0.0, help="the crawler's delay between two requests")
    return parser


def serve(config: SpaceConfig, log, exit_with_parent: bool, out=sys.stdout) -> int:
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    space = RunningSpace(config, log)
    try:
        for index, netloc in enumerate(space.netlocs):
            out.write(f"{space.role(index)}\tgemini://{netloc}/\n")
        ready = {"port": space.port, "roots": space.roots, "seeds": space.seeds, "special": space.special,
                 "hostile": space.hostile, "log": str(space.log_path),
                 "fingerprints": {netloc: space.fingerprint(i) for i, netloc in enumerate(space.netlocs)
                                  if i != space.tarpit_index}}
        out.write("READY " + json.dumps(ready) + "\n")
        out.flush()
        parent = os.getppid()
        while not stop.wait(1.0):
            if exit_with_parent and os.getppid() != parent:
                break
    finally:
        space.stop()
    return 0


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = config_from_args(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.command == "serve":
        return serve(config, args.log, args.exit_with_parent)
    space = GeminiSpace(config)
    agents = tuple(a.strip() for a in args.agents.split(",") if a.strip())
    if args.command == "truth":
        for url in sorted(space.reachable(agents, args.star, args.depth_limit)):
            print(url)
        return 0
    report = audit_log(args.log, args.delay, space=space, agents=agents, star=args.star,
                       depth_limit=args.depth_limit)
    json.dump(report, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
