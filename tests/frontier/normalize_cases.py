"""Inputs for the golden test of normalize() (test_normalize.py): links as pages write them
and strings built to hit every rule (escapes that fuse, dot segments, session ids, host
forms, credentials, ports, gemini://), each with a base. Seeded: the same list every time.

The golden file (data/normalize_golden.jsonl.gz) holds what normalize() made of them when
its speed work began (2026-12-07); a change that means to change the canonical form
rewrites it deliberately:

    .venv/bin/python -m tests.frontier.normalize_cases --write
"""

import gzip
import json
import os
import random
import sys
from pathlib import Path

GOLDEN = Path(__file__).parent / "data" / "normalize_golden.jsonl.gz"

_HOSTS = ["example.com", "docs.example.org", "www.bücher.example", "sub.site.co.uk", "127.0.1.3:8300", "H.TEST.",
          "0x7f.1", "127.1", "[::1]", "[2001:db8::1]:8080", "xn--n3h", "xn--", "%68.test", "192.168.257", "a_b.test",
          "user:pw@h.test", "h.test:80", "h.test:443", "h.test:1965", "h.test:0", "h.test:99999", "ex ample.com",
          "faß.example", "EXAMPLE.com.", "-x.test", "☃.net"]
_WORDS = ["index", "about", "p", "news", "2024", "a-b", "search", "docs", "api", "v2", "é", "a b", "~u", "x.y"]
_PIECES = list("aZ09-._~!$&'()*+,;=:@/?#[]%\\ \té\u2603") + [
    "%2e", "%2E", "%41", "%7e", "%7E", "%2F", "%%", "%", "%3", "%36", "%31", "..", "./", "/../", ";sid=1",
    ";jsessionid=AB", "?PHPSESSID=9", "&sid=2", "?a=1&b=2", "#f", "%00", "%zz", "\x00", "\n"]
_SCHEMES = ["http", "https", "HTTP", "gemini", "GEMINI", "ftp", "mailto", "javascript", ""]


def cases(count: int = 12000, seed: int = 20261207) -> list[tuple[str, str | None]]:
    rng = random.Random(seed)

    def words(k):
        return "/".join(rng.choice(_WORDS) for _ in range(k))

    def soup(k):
        return "".join(rng.choice(_PIECES) for _ in range(k))

    out = []
    for i in range(count):
        scheme = rng.choice(["http", "https", "http", "https", "gemini"])
        base = f"{scheme}://{rng.choice(_HOSTS[:6])}/{words(rng.randint(0, 3))}{rng.choice(['', '/', '.html'])}"
        r = rng.random()
        if r < 0.35:  # as pages write links
            href = rng.choice([
                f"{rng.choice(_WORDS)}.html", f"../{words(2)}.html", f"/{words(rng.randint(1, 3))}?q={rng.choice(_WORDS)}",
                f"#{rng.choice(_WORDS)}", f"http://{rng.choice(_HOSTS)}/{words(2)}/#frag", f"//{rng.choice(_HOSTS)}/{words(1)}",
                f"./{rng.choice(_WORDS)}/?x=%7e{rng.choice(_WORDS)}", "", " ", "?", "/", "mailto:a@b.c"])
        elif r < 0.7:  # an absolute URL with a tricky host, port and tail
            href = f"{rng.choice(_SCHEMES)}://{rng.choice(_HOSTS)}/{soup(rng.randint(0, 12))}"
        else:  # a relative reference made of the rules' pieces
            href = soup(rng.randint(0, 16))
        out.append((href, base if rng.random() < 0.8 else None))
    return out


def outcome(href: str, base: str | None) -> str:
    from frontier.normalize import InvalidUrl, normalize

    try:
        return normalize(href, base).url
    except InvalidUrl as exc:
        return f"!{exc.args[0]}"


def read_golden() -> list[tuple[str, str | None, str]]:
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as f:
        return [tuple(json.loads(line)) for line in f]


def write_golden() -> None:
    GOLDEN.parent.mkdir(exist_ok=True)
    with gzip.open(GOLDEN, "wt", encoding="utf-8") as f:
        for href, base in cases():
            f.write(json.dumps([href, base, outcome(href, base)], ensure_ascii=False) + "\n")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")
    import django

    django.setup()
    if "--write" in sys.argv:
        write_golden()
        print(f"wrote {GOLDEN}")
