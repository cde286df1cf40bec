"""URL canonicalization speed: uncached frontier.normalize calls per second on realistic
links (relative paths, ../, queries, protocol-relative and absolute links, IDN hosts,
fragments), each resolved against the page it was found on, beside ada-url's join_url
alone on the same links in the same run (the WHATWG parse our canonical form starts from:
the ratio says what our policy costs on top of it; machines differ, ratios less).

    python -m bench.normalize_speed [--pairs 50000] [--runs 5]
"""

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")

import django  # noqa: E402

django.setup()

import ada_url  # noqa: E402

from frontier import normalize as n  # noqa: E402

HOSTS = ["example.com", "docs.example.org", "www.bücher.example", "sub.site.co.uk", "127.0.1.3:8300"]
WORDS = ["index", "about", "p", "news", "2024", "a-b", "search", "docs", "api", "v2"]


def link_pairs(count: int, seed: int = 7) -> list[tuple[str, str]]:
    rng = random.Random(seed)

    def path(k):
        return "/".join(rng.choice(WORDS) for _ in range(k))

    pairs = []
    for _ in range(count):
        base = f"http://{rng.choice(HOSTS)}/{path(rng.randint(1, 3))}/{rng.choice(WORDS)}.html"
        r = rng.random()
        if r < .25:
            href = f"{rng.choice(WORDS)}.html"
        elif r < .40:
            href = f"../{path(2)}.html"
        elif r < .55:
            href = f"/{path(rng.randint(1, 3))}?q={rng.choice(WORDS)}&page={rng.randint(1, 9)}"
        elif r < .65:
            href = f"#{rng.choice(WORDS)}"
        elif r < .80:
            href = f"http://{rng.choice(HOSTS)}/{path(2)}/#frag"
        elif r < .90:
            href = f"//{rng.choice(HOSTS)}/{path(1)}"
        else:
            href = f"./{rng.choice(WORDS)}/{path(1)}/?x=%7e{rng.choice(WORDS)}"
        pairs.append((href, base))
    return pairs


def calls_per_second(pairs) -> float:
    started = time.perf_counter()
    for href, base in pairs:
        try:
            n._normalize(href, base)  # the uncached work: every call parses
        except n.InvalidUrl:
            pass
    return len(pairs) / (time.perf_counter() - started)


def ada_calls_per_second(pairs) -> float:
    started = time.perf_counter()
    for href, base in pairs:
        try:
            ada_url.join_url(base, href)
        except ValueError:
            pass
    return len(pairs) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    pairs = link_pairs(args.pairs)
    ours, ada = 0.0, 0.0
    for _ in range(args.runs):  # interleaved: a machine that slows down slows both
        ours = max(ours, calls_per_second(pairs))
        ada = max(ada, ada_calls_per_second(pairs))
    print(f"uncached normalize: {ours:,.0f} calls/s ({1e6 / ours:.2f} us a link); ada-url join_url alone: "
          f"{ada:,.0f} calls/s; ratio {ours / ada:.2f} (best of {args.runs} runs over {len(pairs)} links)")


if __name__ == "__main__":
    main()
