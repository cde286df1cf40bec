"""The home capsule's special pages and the hostile capsule's paths of the loopback
Geminispace (model.py serves them): a named answer per Gemini status, a PNG, a latin-1
page, redirects and a redirect loop.
"""
from __future__ import annotations

import struct
import zlib
from urllib.parse import urlsplit

from ..sampleweb.text import unique_word
from .pages import GEMTEXT, NOT_FOUND, Link, Page

# name -> (path on the home capsule, status, meta, what it is). Meta "{...}" is filled in
# by special_page().
SPECIALS = {
    "index": ("/special/", 20, GEMTEXT, "the list of special pages"),
    "input": ("/special/input", 10, "Enter a search term", "asks for input (1x: not followed)"),
    "sensitive-input": ("/special/password", 11, "Password", "asks for sensitive input"),
    "temporary-failure": ("/special/temporary-failure", 40, "Temporary failure", "40"),
    "server-unavailable": ("/special/server-unavailable", 41, "Server unavailable", "41"),
    "cgi-error": ("/special/cgi-error", 42, "CGI error", "42"),
    "proxy-error": ("/special/proxy-error", 43, "Proxy error", "43"),
    "slow-down": ("/special/slow-down.gmi", 44, "{slow_down_seconds}",
                  "44 SLOW DOWN at first, then a page"),
    "not-found": ("/special/not-found", 51, "Not found", "51 (every unknown path too)"),
    "gone": ("/special/gone", 52, "Gone", "52"),
    "bad-request": ("/special/malformed", 59, "Bad request", "59 (also the answer to a line over 1024 bytes)"),
    "client-certificate": ("/special/client-certificate", 60, "Client certificate required", "60"),
    "certificate-not-authorised": ("/special/certificate-not-authorised", 61, "Certificate not authorised", "61"),
    "certificate-not-valid": ("/special/certificate-not-valid", 62, "Certificate not valid", "62"),
    "redirect-temporary": ("/special/redirect-temporary", 30, "redirect-permanent",
                           "30 to a relative URL, then 31"),
    "redirect-permanent": ("/special/redirect-permanent", 31, "gemini://{netloc}/special/redirected.gmi",
                           "31 to an absolute URL"),
    "redirected": ("/special/redirected.gmi", 20, GEMTEXT, "a page only a redirect leads to"),
    "redirect-loop": ("/special/loop-a", 30, "/special/loop-b", "30 to loop-b, which 31s back here"),
    "redirect-loop-b": ("/special/loop-b", 31, "/special/loop-a", "the loop's other half"),
    "plain-text": ("/special/plain.txt", 20, "text/plain; charset=utf-8", "a text/plain page"),
    "image": ("/special/image.png", 20, "image/png", "a PNG image (stored, not indexed)"),
    "latin1": ("/special/latin1.gmi", 20, "text/gemini; charset=iso-8859-1", "gemtext in latin-1"),
}
# name -> (path on the hostile capsule, what it does). "handshake-hang" is the tarpit's.
HOSTILE = {
    "endless-body": ("/endless", "20 text/gemini, then a body that never ends (until the client leaves)"),
    "long-header": ("/long-header", "a header line of over 2,000 bytes"),
    "endless-header": ("/endless-header", "a header that never ends: bytes, never a CRLF"),
    "no-crlf": ("/no-crlf", "'20 text/gemini' without CRLF, then silence"),
    "bad-status-one-digit": ("/bad-status-one-digit", "'2 text/gemini' as the header"),
    "bad-status-letters": ("/bad-status-letters", "'xx text/gemini' as the header"),
    "empty-answer": ("/empty", "the connection closed without a byte"),
    "drip": ("/drip", "20 text/gemini, then a line every 0.5 s"),
    "handshake-hang": ("/", "the tarpit: TCP accepted, the TLS ClientHello never answered"),
}
_LATIN1_TEXT = "Café crème, über naïve façade à la carte, été à München."


def _png() -> bytes:
    """An 8x8 grey gradient, a valid PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + bytes(range(y * 8, y * 8 + 64, 8)) for y in range(8))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


PNG = _png()


def special_page(space, path: str) -> Page:
    """The home capsule's page at `path` under /special/ (NOT_FOUND if none)."""
    names = {spec[0]: name for name, spec in SPECIALS.items()}
    name = names.get(path)
    if name is None:
        return NOT_FOUND
    _, status, meta, _ = SPECIALS[name]
    meta = meta.format(slow_down_seconds=space.config.slow_down_seconds, netloc=space.netlocs[0])
    local = space.config.pages + list(SPECIALS).index(name)
    word = unique_word(0, local)
    if 30 <= status <= 31:
        target = urlsplit(meta).path if meta.startswith("gemini:") else (
            meta if meta.startswith("/") else f"/special/{meta}")
        return Page(status, meta, kind="redirect", path=path, target=(0, target))
    if name == "slow-down":
        return Page(20, GEMTEXT, path=path, title="Slowed down", unique=word)
    if status != 20:
        return Page(status, meta, kind="status", path=path)
    if name == "index":
        links = tuple(Link(spec[0][len("/special/"):], spec[3], (0, spec[0]))
                      for n, spec in SPECIALS.items() if n not in ("index", "redirected", "redirect-loop-b"))
        return Page(20, meta, path=path, title="Special pages", unique=word, links=links)
    if name == "plain-text":
        return Page(20, meta, kind="plain", path=path, unique=word,
                    text=f"Plain text, not gemtext.\n=> not-a-link.gmi\n{word} {_LATIN1_TEXT}\n")
    if name == "image":
        return Page(20, meta, kind="image", path=path)
    return Page(20, meta, path=path, title=name.capitalize(), unique=word)


def special_body(page: Page) -> bytes:
    """The gemtext body of a special page."""
    lines = [f"# {page.title}", "", f"{page.unique} A page of the home capsule's special corner."]
    if page.path.endswith("latin1.gmi"):
        lines.append(_LATIN1_TEXT)
    lines += [""] + [f"=> {link.href} {link.label}" for link in page.links] + ["=> / Home"]
    return ("\n".join(lines) + "\n").encode("iso-8859-1" if "iso-8859-1" in page.meta else "utf-8")
