"""The PDF web: one loopback host serving PDFs the tests make, good and bad, for the PDF
crawl tests (tests/test_pdf.py; docs/pdf.md).

    with pdf_web() as web:   # web.url("/"), web.requests_for("/papers/report.pdf")
        ...

The home page links to every case below. The good PDFs each carry a word no other
document has (UNIQUE_WORDS), so a search for it finds that PDF or nothing. The report
carries link annotations: to a page nothing else links to (FROM_PDF), to a path robots.txt
disallows, and to another origin (out of the crawl's host scope).

The PDFs are written here, byte by byte (a small writer: Helvetica text, link
annotations, an Info title); the encrypted one is that writer's PDF encrypted by pypdf.
The bomb and the slow PDF are small files that cost the reader a lot: a content stream
that inflates to BOMB_BYTES, and SLOW_PAGES pages each of SLOW_OPERATORS text operators
(about a second of PDFium's CPU per page, a few minutes in all: far past any parse
timeout, and little memory).
"""
from __future__ import annotations

import contextlib
import functools
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BOMB_BYTES = 1 << 30  # what the bomb's one content stream inflates to
SLOW_PAGES = 200
SLOW_OPERATORS = 200_000

# path -> the word only that document has
UNIQUE_WORDS = {
    "/papers/report.pdf": "quillwort",
    "/download?id=7": "zanthoxylum",  # served as application/octet-stream
    "/untyped": "xylocarp",  # served with no Content-Type
    "/from-pdf.html": "pdflinkedpage",  # an HTML page only the report's link annotation names
}
# Served as application/octet-stream but not a PDF: its body is not downloaded past the
# sniffed head, and it is settled as not_html.
NOT_A_PDF = "/files/archive.zip"
REPORT_TITLE = "Quarterly Report on Quillwort Meadows"
ROBOTS_DISALLOWED = "/private/secret.html"
OTHER_ORIGIN = "http://127.0.0.2:9/elsewhere.html"  # never fetched: out of the host scope
# path -> the outcome the crawl should record for it (frontier.vocabulary.PdfOutcome)
BAD_CASES = {
    "/bad/encrypted.pdf": "pdf:encrypted",
    "/bad/truncated.pdf": "pdf:truncated",
    "/bad/malformed.pdf": "pdf:malformed",
    "/bad/scan.pdf": "pdf:no_text",
    "/bad/bomb.pdf": "pdf:crashed",
    "/bad/slow.pdf": "pdf:timeout",
}

_SENTENCES = (
    "The survey counted plants along every transect of the northern meadow this season",
    "Rainfall was lower than the ten year average and the soil stayed dry until October",
    "Volunteers recorded each specimen with its position height and the date of flowering",
    "The committee recommends repeating the count next spring with two more field teams",
    "Costs stayed within the budget agreed at the start of the year by the trustees",
)


def write_pdf(pages: list[list[str]], *, title: str = "", links: list[str] = (), stream_filter: bool = False,
              raw_contents: bytes | None = None, page_count: int | None = None, lang: str = "") -> bytes:
    """A PDF whose pages hold these lines of Helvetica text; `links`: URI link annotations
    on the first page; `title`: the Info dictionary's; `lang`: the catalog's /Lang.
    raw_contents/page_count: every page shows that one content stream instead (the bomb,
    the slow PDF)."""
    objects: dict[int, bytes] = {}
    count = page_count or len(pages)
    page_ids = [10 + 3 * i for i in range(count)]
    objects[1] = b"<< /Type /Catalog /Pages 2 0 R%s >>" % (b" /Lang " + _string(lang) if lang else b"")
    objects[2] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % n for n in page_ids), count)
    objects[3] = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    info = 4
    objects[info] = b"<< /Title %s /Producer (crawlerweb pdfweb) >>" % _string(title) if title else \
        b"<< /Producer (crawlerweb pdfweb) >>"
    link_ids = list(range(500, 500 + len(links)))
    for index, (link_id, uri) in enumerate(zip(link_ids, links)):
        y = 700 - 20 * index
        objects[link_id] = (b"<< /Type /Annot /Subtype /Link /Rect [72 %d 300 %d] /Border [0 0 0] "
                            b"/A << /S /URI /URI %s >> >>" % (y, y + 12, _string(uri)))
    shared = None
    if raw_contents is not None:
        shared = 9
        objects[shared] = _stream(raw_contents, compress=True)
    for i, page_id in enumerate(page_ids):
        contents = shared
        if contents is None:
            contents = page_id + 1
            lines = b"".join(b"%s Tj T*\n" % _string(line) for line in pages[i])
            objects[contents] = _stream(b"BT /F1 11 Tf 14 TL 72 760 Td\n" + lines + b"ET", compress=stream_filter)
        annotations = b" /Annots [%s]" % b" ".join(b"%d 0 R" % n for n in link_ids) if i == 0 and link_ids else b""
        objects[page_id] = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                            b"/Resources << /Font << /F1 3 0 R >> >>%s >>" % (contents, annotations))
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (number, objects[number])
    xref, size = len(out), max(objects) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for number in range(1, size):
        out += b"%010d 00000 n \n" % offsets[number] if number in offsets else b"0000000000 65535 f \n"
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, info, xref)
    return bytes(out)


def _string(text: str) -> bytes:
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return b"(" + escaped.encode("cp1252") + b")"


def _stream(data: bytes, compress: bool) -> bytes:
    if compress:
        data = zlib.compress(data, 6)
        return b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(data), data)
    return b"<< /Length %d >>\nstream\n%s\nendstream" % (len(data), data)


def _prose(word: str, seed: int, paragraphs: int = 3) -> list[str]:
    """Lines of ordinary text with `word` in them, different for each seed."""
    lines = []
    for i in range(paragraphs * len(_SENTENCES)):
        sentence = _SENTENCES[(i * (seed + 2)) % len(_SENTENCES)]
        lines.append(f"{i + 1}. {sentence} ({word} note {seed}-{i}).")
    return lines


@functools.cache
def documents(origin: str) -> dict[str, tuple[str | None, bytes]]:
    """path -> (Content-Type or None for none, body) of every PDF the web serves."""
    report = write_pdf([[REPORT_TITLE, *(_prose("quillwort", 1))], _prose("quillwort", 2)], title=REPORT_TITLE,
                       links=[f"{origin}/from-pdf.html", f"{origin}{ROBOTS_DISALLOWED}", OTHER_ORIGIN],
                       stream_filter=True)
    download = write_pdf([_prose("zanthoxylum", 3)], title="Field notes")
    untyped = write_pdf([["Seed catalogue", *_prose("xylocarp", 4)]])  # no title: the first line is one
    served = {
        "/papers/report.pdf": ("application/pdf", report),
        "/download?id=7": ("application/octet-stream", download),
        "/untyped": (None, untyped),
        "/bad/encrypted.pdf": ("application/pdf", _encrypted(write_pdf([_prose("lockedword", 5)]))),
        "/bad/truncated.pdf": ("application/pdf", report[: len(report) // 3]),
        "/bad/malformed.pdf": ("application/pdf", b"%PDF-1.7\n" + bytes(range(256)) * 40 + b"\n%%EOF\n"),
        "/bad/scan.pdf": ("application/pdf", write_pdf([[]] * 3)),
        "/bad/bomb.pdf": ("application/pdf", _bomb()),
        "/bad/slow.pdf": ("application/pdf", write_pdf([], page_count=SLOW_PAGES,
                                                       raw_contents=b"BT /F1 1 Tf " + b"(a) Tj 0 0 Td " * SLOW_OPERATORS
                                                       + b"ET")),
    }
    return served


def _encrypted(pdf: bytes) -> bytes:
    """The PDF encrypted with a user password (RC4-128, pypdf's writer): unreadable without it."""
    import io

    import pypdf

    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(pdf)))
    writer.encrypt(user_password="sesame", owner_password="owner-sesame", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@functools.cache
def _bomb() -> bytes:
    """One page whose content stream inflates to BOMB_BYTES (spaces after a line of text)."""
    data = _inflating_to(b"BT /F1 12 Tf 72 700 Td (bomb) Tj ET\n", b" " * (1 << 20), BOMB_BYTES >> 20)
    stream = b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(data), data)
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>", stream,
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 6\n0000000000 65535 f \n" + b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size 6 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def _inflating_to(head: bytes, block: bytes, blocks: int) -> bytes:
    """A zlib stream of head + block * blocks, made in milliseconds: after a sync flush the
    compressor's state is the same before every further copy of `block`, so the bytes of
    one copy's deflate block stand for all the others (RFC 1950/1951; the checksum is
    computed over the whole)."""
    squeeze = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = squeeze.compress(head) + squeeze.compress(block) + squeeze.flush(zlib.Z_SYNC_FLUSH)
    repeated = squeeze.compress(block) + squeeze.flush(zlib.Z_SYNC_FLUSH)
    assert repeated == squeeze.compress(block) + squeeze.flush(zlib.Z_SYNC_FLUSH)
    last = squeeze.flush(zlib.Z_FINISH)
    checksum = zlib.adler32(head)
    for _ in range(blocks):
        checksum = zlib.adler32(block, checksum)
    return b"\x78\xda" + first + repeated * (blocks - 1) + last + checksum.to_bytes(4, "big")


def home_page(origin: str) -> bytes:
    links = "".join(f'<li><a href="{path}">{path}</a></li>' for path in [*documents(origin), NOT_A_PDF])
    return (f"<!doctype html><html><head><title>Papers</title></head><body><h1>Papers and downloads</h1>"
            f"<p>Our reports, notes and catalogues, as PDF files.</p><ul>{links}</ul></body></html>").encode()


FROM_PDF_PAGE = (b"<!doctype html><html><head><title>Linked from a PDF</title></head><body>"
                 b"<p>Only the report's link annotation leads here: pdflinkedpage.</p></body></html>")
ROBOTS_TXT = f"User-agent: *\nDisallow: {ROBOTS_DISALLOWED}\n".encode()


class PdfWeb:
    def __init__(self, address: str = "127.0.0.1"):
        self.requests: list[str] = []
        web = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                web.requests.append(self.path)
                origin = web.origin
                served = documents(origin)
                if self.path in served:
                    content_type, body = served[self.path]
                elif self.path == "/":
                    content_type, body = "text/html; charset=utf-8", home_page(origin)
                elif self.path == "/from-pdf.html":
                    content_type, body = "text/html; charset=utf-8", FROM_PDF_PAGE
                elif self.path == NOT_A_PDF:  # a zip's signature, then 256 KiB
                    content_type, body = "application/octet-stream", b"PK\x03\x04" + bytes(range(256)) * 1024
                elif self.path == "/robots.txt":
                    content_type, body = "text/plain", ROBOTS_TXT
                else:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                if content_type is not None:
                    self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer((address, 0), Handler)
        self._server.daemon_threads = True
        self.origin = f"http://{address}:{self._server.server_address[1]}"
        documents(self.origin)  # made before serving: the bomb takes seconds to compress

    def url(self, path: str) -> str:
        return self.origin + path

    def requests_for(self, path: str) -> int:
        return self.requests.count(path)

    def start(self) -> None:
        threading.Thread(target=self._server.serve_forever, name="pdf-web", daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextlib.contextmanager
def pdf_web(address: str = "127.0.0.1"):
    web = PdfWeb(address)
    web.start()
    try:
        yield web
    finally:
        web.stop()
