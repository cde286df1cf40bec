"""The legacy web: sites in the encodings real sites of each language used before UTF-8,
with and without a declaration, for the decoding tests and `python -m bench.encodings`.

Each language is one site (its own port of 127.0.0.1: an origin per site). Its home page
(ASCII) links every page; a page is real text of its language (legacy_texts/: excerpts of
Debian's debian-reference and debian-faq translations and of iso-codes' translated names,
a few KB a language) in one encoding, declared one way:

- `none`: `Content-Type: text/html` and nothing in the page (the legacy web's commonest);
- `http`: the charset in the Content-Type;
- `meta`: `<meta charset>`;
- `http-equiv`: `<meta http-equiv="Content-Type" content="text/html; charset=...">`;
- `bom`: UTF-16LE with a byte-order mark (one page a site).
Characters an encoding lacks are written as numeric character references, as a CMS does.

Pages: /<encoding>/<declaration>/<n>.html, n < PAGES_PER_CASE. The text a page must be
read as is `expected_text(language, n)`.
"""
from __future__ import annotations

import contextlib
import functools
import html
import http.server
import threading
from pathlib import Path

TEXTS = Path(__file__).with_name("legacy_texts")
DECLARATIONS = ("none", "http", "meta", "http-equiv")
PAGES_PER_CASE = 2
# language -> (script, the encodings (WHATWG names) its legacy sites used)
LANGUAGES = {
    "de": ("Latin", ("windows-1252",)), "fr": ("Latin", ("windows-1252",)), "es": ("Latin", ("windows-1252",)),
    "pt": ("Latin", ("windows-1252",)), "it": ("Latin", ("windows-1252",)),
    "pl": ("Latin", ("windows-1250", "ISO-8859-2")), "cs": ("Latin", ("windows-1250", "ISO-8859-2")),
    "tr": ("Latin", ("windows-1254",)),
    "ru": ("Cyrillic", ("windows-1251", "KOI8-R")), "bg": ("Cyrillic", ("windows-1251",)),
    "el": ("Greek", ("windows-1253", "ISO-8859-7")), "he": ("Hebrew", ("windows-1255",)),
    "ar": ("Arabic", ("windows-1256",)), "th": ("Thai", ("windows-874",)),
    "ja": ("Japanese", ("Shift_JIS", "EUC-JP")), "ko": ("Korean", ("EUC-KR",)),
    "zh-cn": ("Chinese", ("GBK",)), "zh-tw": ("Chinese", ("Big5",)),
}
# The codec a page is written with (what the sites' software wrote).
_WRITE = {"windows-874": "cp874", "Shift_JIS": "cp932", "EUC-JP": "euc-jp", "EUC-KR": "euc-kr", "GBK": "gbk",
          "Big5": "big5", "KOI8-R": "koi8-r", "ISO-8859-2": "iso8859-2", "ISO-8859-7": "iso8859-7"}
BOM_PATH = "/utf-16/bom/0.html"


@functools.cache
def lines(language: str) -> tuple[str, ...]:
    return tuple(line for line in (TEXTS / f"{language}.txt").read_text(encoding="utf-8").splitlines() if line)


def paragraphs(language: str, n: int) -> list[str]:
    """Page n's paragraphs: the language's lines from the n-th on, about 1,200 characters."""
    source, out, size = lines(language), [], 0
    for i in range(len(source)):
        line = source[(n + i) % len(source)]
        out.append(line)
        size += len(line)
        if size >= 1200:
            break
    return out


def expected_text(language: str, n: int) -> str:
    """What the page's paragraphs read as, words separated by single spaces."""
    return " ".join(" ".join(paragraphs(language, n)).split())


def paths(language: str) -> list[str]:
    _, encodings = LANGUAGES[language]
    return [f"/{encoding}/{declaration}/{n}.html" for encoding in encodings for declaration in DECLARATIONS
            for n in range(PAGES_PER_CASE)] + [BOM_PATH]


def case_of(path: str) -> tuple[str, str, int]:
    """(encoding, declaration, n) of a page path."""
    encoding, declaration, name = path.strip("/").split("/")
    return encoding, declaration, int(name.split(".")[0])


def render(language: str, path: str) -> tuple[bytes, str]:
    """(body, Content-Type) of a page."""
    encoding, declaration, n = case_of(path)
    meta = {"meta": f'<meta charset="{encoding}">',
            "http-equiv": f'<meta http-equiv="Content-Type" content="text/html; charset={encoding}">'}
    body = "".join(f"<p>{html.escape(p)}</p>\n" for p in paragraphs(language, n))
    page = (f'<!DOCTYPE html>\n<html lang="{language}">\n<head>\n{meta.get(declaration, "")}\n'
            f"<title>{html.escape(paragraphs(language, n)[0][:40])}</title>\n</head>\n<body>\n"
            f'<nav><a href="/">home</a></nav>\n<main>\n{body}</main>\n</body>\n</html>\n')
    if declaration == "bom":
        return b"\xff\xfe" + page.encode("utf-16-le"), "text/html"
    data = page.encode(_WRITE.get(encoding, encoding), errors="xmlcharrefreplace")
    return data, f"text/html; charset={encoding}" if declaration == "http" else "text/html"


def home(language: str) -> bytes:
    links = "".join(f'<li><a href="{p}">{p}</a></li>\n' for p in paths(language))
    return f"<!DOCTYPE html><html><head><title>{language}</title></head><body><ul>\n{links}</ul></body></html>".encode()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 (the standard library's name)
        language = self.server.language
        if self.path == "/":
            body, content_type = home(language), "text/html; charset=utf-8"
        elif self.path in self.server.paths:
            body, content_type = render(language, self.path)
        else:
            body, content_type, status = b"not here", "text/plain", 404
            return self._send(status, body, content_type)
        return self._send(200, body, content_type)

    def _send(self, status: int, body: bytes, content_type: str):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


class LegacyWeb:
    """The running sites: .base[language] is its origin."""

    def __init__(self, address: str, languages):
        self.base: dict[str, str] = {}
        self._servers = []
        for language in languages:
            server = _Server((address, 0), _Handler)
            server.language, server.paths = language, frozenset(paths(language))
            self.base[language] = f"http://{address}:{server.server_address[1]}"
            self._servers.append(server)

    @property
    def seeds(self) -> list[str]:
        return [base + "/" for base in self.base.values()]

    def pages(self):
        """(language, url, path) of every page."""
        return [(language, base + path, path) for language, base in self.base.items() for path in paths(language)]


@contextlib.contextmanager
def legacy_web(address: str = "127.0.0.1", languages=tuple(LANGUAGES)):
    web = LegacyWeb(address, languages)
    for server in web._servers:
        threading.Thread(target=server.serve_forever, daemon=True, kwargs={"poll_interval": 0.1}).start()
    try:
        yield web
    finally:
        for server in web._servers:
            server.shutdown()
            server.server_close()
