"""CLI: python -m webs.sampleweb serve|truth|audit [config flags] ...

serve  : bind all hosts, print one line `READY {json}`, serve until SIGTERM.
truth  : print the ground-truth URLs, sorted, one per line.
audit  : print audit_log(...) of a request log as JSON.
Config flags must be the same for serve, truth and audit of one run.
"""
from __future__ import annotations

import argparse
import json
import sys

from .audit import audit_log
from .model import SITE_SHAPES, SampleWeb, WebConfig


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    d = WebConfig()
    parser.add_argument("--hosts", type=int, default=d.hosts)
    parser.add_argument("--pages-per-host", type=int, default=d.pages_per_host)
    parser.add_argument("--port", type=int, default=d.port, help="0 = pick a free port")
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument("--crawl-delay-hosts", type=int, default=d.crawl_delay_hosts)
    parser.add_argument("--crawl-delay", type=float, default=d.crawl_delay)
    parser.add_argument("--slow-delay", type=float, default=d.slow_delay)
    parser.add_argument("--retry-after", type=int, default=d.retry_after)
    parser.add_argument("--page-kb", type=int, nargs=2, metavar=("MIN", "MAX"),
                        default=list(d.page_kb))
    parser.add_argument("--latency", type=float, default=d.latency,
                        help="seconds every response waits (a real server's think time)")
    parser.add_argument("--site-shape", choices=SITE_SHAPES, default=d.site_shape,
                        help="mesh: a page links 8 of its host's; chain: only the next")


def config_from_args(args: argparse.Namespace) -> WebConfig:
    return WebConfig(hosts=args.hosts, pages_per_host=args.pages_per_host, port=args.port,
                     seed=args.seed, crawl_delay_hosts=args.crawl_delay_hosts,
                     crawl_delay=args.crawl_delay, slow_delay=args.slow_delay,
                     retry_after=args.retry_after, page_kb=tuple(args.page_kb), latency=args.latency,
                     site_shape=args.site_shape)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m webs.sampleweb")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the sample web")
    add_config_arguments(serve)
    serve.add_argument("--log", default=None, help="request log file (truncated)")
    serve.add_argument("--exit-with-parent", action="store_true",
                       help="stop when the parent process dies")
    truth = commands.add_parser("truth", help="print the ground-truth URLs")
    audit = commands.add_parser("audit", help="audit a request log, print JSON")
    for sub in (truth, audit):
        add_config_arguments(sub)
        sub.add_argument("--depth-limit", type=int, default=20)
        sub.add_argument("--max-redirects", type=int, default=3)
        sub.add_argument("--scope", choices=("web", "host"), default="web",
                         help="the crawl's scope: the whole sample web, or the seed's host")
    audit.add_argument("--log", required=True)
    audit.add_argument("--default-delay", type=float, required=True)
    audit.add_argument("--tolerance", type=float, default=0.005)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = config_from_args(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.command == "serve":
        from .server import run
        return run(config, args.log, args.exit_with_parent)
    web = SampleWeb(config)
    if args.command == "truth":
        for url in sorted(web.ground_truth(args.depth_limit, args.max_redirects, args.scope)):
            print(url)
        return 0
    report = audit_log(args.log, web, args.default_delay, args.tolerance,
                       depth_limit=args.depth_limit, max_redirects=args.max_redirects, scope=args.scope)
    json.dump(report, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
