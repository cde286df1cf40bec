"""Encoding detectors side by side on real text in legacy encodings (issue 53).

    python -m bench.decoders /tmp/debian-data [--pages 6]
    python -m bench.decoders /tmp/debian-data --cost   # what the rules cost per page

The other detectors: `pip install -r bench/decoders-requirements.txt`.

The development set is built from Debian packages unpacked (dpkg-deb -x) into one
directory: debian-reference-{de,es,fr,id,it,ja,pt,zh-cn,zh-tw}, debian-faq-{de,ja,ko,ru,
zh-cn} (real HTML pages, their meta charset removed) and iso-codes (the translated names of
countries, languages and currencies: real text in Greek, Hebrew, Arabic, Thai, Central
European, Cyrillic and Turkish, set as paragraphs). Each page is re-encoded into the legacy
encodings real sites of its language use (characters the encoding lacks become numeric
character references, as a CMS writes them). A detector is right on a page when the page
decoded with its guess is the page decoded with the truth.

Each detector sees the bytes the crawler gives it (indexer.decoding.DETECT_BYTES from the
first non-ASCII byte); ms/page is its CPU time on that window.
"""

import argparse
import gettext
import glob
import re
import time
from collections import defaultdict

from indexer import decoding, encodings

# Language -> (script, the encodings its legacy sites use, the TLD its sites use).
LEGACY = {
    "de": ("Latin", ["windows-1252"], "de"), "es": ("Latin", ["windows-1252"], "es"),
    "fr": ("Latin", ["windows-1252"], "fr"), "it": ("Latin", ["windows-1252"], "it"),
    "pt": ("Latin", ["windows-1252"], "br"), "id": ("Latin", ["windows-1252"], "id"),
    "pl": ("Latin", ["windows-1250", "ISO-8859-2"], "pl"), "cs": ("Latin", ["windows-1250", "ISO-8859-2"], "cz"),
    "hu": ("Latin", ["windows-1250", "ISO-8859-2"], "hu"), "tr": ("Latin", ["windows-1254"], "tr"),
    "ru": ("Cyrillic", ["windows-1251", "KOI8-R"], "ru"), "bg": ("Cyrillic", ["windows-1251"], "bg"),
    "uk": ("Cyrillic", ["windows-1251", "KOI8-U"], "ua"),
    "el": ("Greek", ["windows-1253", "ISO-8859-7"], "gr"), "he": ("Hebrew", ["windows-1255"], "il"),
    "ar": ("Arabic", ["windows-1256"], "sa"), "th": ("Thai", ["windows-874"], "th"),
    "ja": ("Japanese", ["Shift_JIS", "EUC-JP"], "jp"), "ko": ("Korean", ["EUC-KR"], "kr"),
    "zh-cn": ("Chinese", ["GBK", "gb18030"], "cn"), "zh-tw": ("Chinese", ["Big5"], "tw"),
}
_META = re.compile(r"<meta[^>]*charset[^>]*>", re.I)
_ISO_CODES_LANG = {"pl": "pl", "cs": "cs", "hu": "hu", "tr": "tr", "bg": "bg", "uk": "uk", "el": "el", "he": "he",
                   "ar": "ar", "th": "th", "ru": "ru"}


def _encode(text: str, name: str) -> bytes:
    return text.encode(encodings.codec_of(name) if name != "GBK" else "gbk", errors="xmlcharrefreplace")


def html_pages(root: str, lang: str, limit: int) -> list[str]:
    """Real HTML pages of `lang` from debian-reference and debian-faq, without their meta charset."""
    paths = sorted(glob.glob(f"{root}/usr/share/debian-reference/*.{lang}.html"))
    paths += sorted(glob.glob(f"{root}/usr/share/doc/debian/FAQ/{lang}/*.html"))
    pages = []
    for path in paths[:limit]:
        with open(path, encoding="utf-8") as f:
            pages.append(_META.sub("", f.read()))
    return pages


def catalog_pages(root: str, lang: str, limit: int, size: int = 6000) -> list[str]:
    """HTML pages made of iso-codes' translated names in `lang`, paragraphs of 12 names."""
    names = []
    for path in sorted(glob.glob(f"{root}/usr/share/locale/{lang}/LC_MESSAGES/iso_*.mo")):
        with open(path, "rb") as f:
            catalog = gettext.GNUTranslations(f)._catalog
        names += [v for k, v in catalog.items() if k and isinstance(v, str) and v != k]
    pages, page, length = [], [], 0
    for i in range(0, len(names), 12):
        paragraph = "<p>" + ", ".join(names[i:i + 12]) + ".</p>\n"
        page.append(paragraph)
        length += len(paragraph)
        if length >= size:
            pages.append(f"<!DOCTYPE html><html><head><title>{names[i]}</title></head><body>\n{''.join(page)}"
                         "</body></html>\n")
            page, length = [], 0
            if len(pages) >= limit:
                break
    return pages


def dev_set(root: str, per_encoding: int) -> list[tuple[str, str, str, bytes]]:
    """(language, script, encoding, page bytes) for every page and encoding."""
    cases = []
    for lang, (script, names, _tld) in LEGACY.items():
        pages = html_pages(root, lang, per_encoding)
        if len(pages) < per_encoding and lang in _ISO_CODES_LANG:
            pages += catalog_pages(root, _ISO_CODES_LANG[lang], per_encoding - len(pages))
        for name in names:
            cases += [(lang, script, name, _encode(page, name)) for page in pages]
    return cases


def _chardetng(window: bytes, tld: str, last: bool) -> str:
    import chardetng_py
    detector = chardetng_py.EncodingDetector()
    detector.feed(window, last=last)
    return detector.guess(allow_utf8=True, tld=tld.encode() if tld else None)


def _chardet(window: bytes, tld: str, last: bool) -> str:
    import chardet
    return chardet.detect(window)["encoding"] or ""


def _charset_normalizer(window: bytes, tld: str, last: bool) -> str:
    import charset_normalizer
    best = charset_normalizer.from_bytes(window).best()
    return best.encoding if best else ""


def _resiliparse(window: bytes, tld: str, last: bool) -> str:
    from resiliparse.parse.encoding import detect_encoding
    return detect_encoding(window, max_len=0, html5_compatible=True) or ""


DETECTORS = {"chardetng (TLD hint)": (_chardetng, True), "chardetng": (_chardetng, False),
             "chardet": (_chardet, False), "charset-normalizer": (_charset_normalizer, False),
             "resiliparse (uchardet)": (_resiliparse, False)}


def decoded_as(body: bytes, guess: str) -> str | None:
    name = encodings.name_of(guess)
    if name:
        return encodings.decode(body, name)
    try:
        return body.decode(guess, errors="replace")
    except (LookupError, TypeError):
        return None


def measure(cases, detectors) -> dict:
    results = {}
    for label, (function, hinted) in detectors.items():
        right, cpu, by_script, wrong = 0, 0.0, defaultdict(lambda: [0, 0]), defaultdict(int)
        for lang, script, name, body in cases:
            window, last = decoding.detector_window(body)
            tld = LEGACY[lang][2] if hinted else ""
            started = time.process_time()
            guess = function(window, tld, last)
            cpu += time.process_time() - started
            ok = decoded_as(body, guess) == encodings.decode(body, name)
            right += ok
            by_script[script][0] += ok
            by_script[script][1] += 1
            if not ok:
                wrong[f"{lang}/{name}->{guess}"] += 1
        results[label] = (right, len(cases), cpu * 1000 / len(cases), dict(by_script), dict(wrong))
    return results


def cost(root: str, per_language: int) -> None:
    """CPU µs per page of decoding.choose() (the decision, the part parse_html adds) and of
    decoding the body with it, per kind of page: real UTF-8 pages as served (their meta
    charset), the same without it, with the charset in HTTP, and legacy pages undeclared."""
    utf8 = [page.encode() for lang in LEGACY for page in html_pages(root, lang, per_language)]
    declared_meta = [re.sub(rb"<head>", b'<head><meta charset="utf-8">', page, count=1) for page in utf8]
    legacy = [body for _lang, _script, _name, body in dev_set(root, 2)]
    kinds = {"UTF-8, <meta charset> (typical)": (declared_meta, None),
             "UTF-8, charset in HTTP": (utf8, "utf-8"), "UTF-8, undeclared": (utf8, None),
             "legacy, undeclared (detector)": (legacy, None)}
    print("| page | pages | mean bytes | choose() µs | choose() + decode µs |\n|---|---|---|---|---|")
    for label, (bodies, charset) in kinds.items():
        def run(decode: bool) -> float:
            best = float("inf")
            for _ in range(5):
                started = time.process_time()
                for body in bodies:
                    chosen = decoding.choose(body, charset)
                    if decode:
                        chosen.decode(body)
                best = min(best, time.process_time() - started)
            return best * 1e6 / len(bodies)
        print(f"| {label} | {len(bodies)} | {sum(map(len, bodies)) // len(bodies)} | {run(False):.0f} | "
              f"{run(True):.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", help="directory the Debian packages were unpacked into")
    parser.add_argument("--pages", type=int, default=6, help="pages per language and encoding")
    parser.add_argument("--only", nargs="*", help="detectors to run (default: all)")
    parser.add_argument("--cost", action="store_true", help="instead: what the decoding rules cost per page")
    args = parser.parse_args()
    if args.cost:
        return cost(args.root, args.pages)
    cases = dev_set(args.root, args.pages)
    detectors = {k: v for k, v in DETECTORS.items() if not args.only or k in args.only}
    results = measure(cases, detectors)
    scripts = sorted({c[1] for c in cases})
    print(f"{len(cases)} pages, mean {sum(len(c[3]) for c in cases) // len(cases)} bytes, "
          f"detector window <= {decoding.DETECT_BYTES} bytes\n")
    print("| detector | right | " + " | ".join(scripts) + " | ms/page |")
    print("|---" * (len(scripts) + 3) + "|")
    for label, (right, total, ms, by_script, _wrong) in results.items():
        cells = " | ".join(f"{by_script[s][0]}/{by_script[s][1]}" for s in scripts)
        print(f"| {label} | {right}/{total} ({100 * right / total:.1f} %) | {cells} | {ms:.2f} |")
    for label, (*_, wrong) in results.items():
        if wrong:
            print(f"\n{label} wrong: " + ", ".join(f"{k} x{v}" for k, v in sorted(wrong.items())))


if __name__ == "__main__":
    main()
