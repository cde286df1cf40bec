"""PDF -> title, text and links, in the ParsedPage of parse.py, with PDFium (pypdfium2).

Why PDFium: measured against pypdf and pdfminer.six on 70 real PDFs with poppler's
pdftotext as the yardstick (bench/pdftext.py, docs/pdf.md), it reads as many words as
the best of them at a small fraction of their CPU per page; its licence (Apache-2.0 /
BSD-3-Clause, the binding too) suits a server others run, where PyMuPDF's AGPL does not.

What a response is: Content-Type application/pdf (or the older x-pdf), or, for
application/octet-stream and a missing type, bytes that say so (`%PDF-` within the first
1024 bytes, the way browsers sniff: WHATWG MIME Sniffing, and PDF readers accept leading
junk up to that far).

What is read: the document's Title (its metadata; else the first line of its text), its
language as the catalog's /Lang declares it (a hint for the language found in its text,
as <html lang> is for a page), the text of at most CRAWLER_PDF_MAX_PAGES pages (up to CRAWLER_PDF_MAX_CHARS), and the
URIs of its link annotations (up to CRAWLER_MAX_LINKS_PER_PAGE), which go through the
frontier's admission like a page's links. A PDF that cannot be read raises PdfProblem with
its outcome (frontier.vocabulary.PdfOutcome): encrypted (a user password is needed; an
owner password alone restricts printing, not reading, and is read), truncated (no end of
file and no way in), malformed, no_text (pages but no text: a scan). A PDF that hangs
PDFium or exhausts the parse process's memory (a decompression bomb: PDFium inflates a
whole content stream at once and aborts when memory runs out) is the parse pool's to
settle (crawl/parsepool.py): the process is replaced, the URL settled as pdf:timeout or
pdf:crashed.

PDFium is not thread-safe: every call here holds one lock (the parse pool's processes
each parse one page at a time; the fetch threads, when they parse themselves, take turns).
"""

import ctypes
import re
import threading

from frontier.vocabulary import PdfOutcome

from .parse import ParsedPage

PDF_TYPES = ("application/pdf", "application/x-pdf")
# Served as these, a body is a PDF if its bytes say so.
SNIFFED_TYPES = ("application/octet-stream", "binary/octet-stream", "")
SNIFF_BYTES = 1024
_MAGIC = b"%PDF-"
# The end-of-file marker, looked for near the end (writers may add a little after it).
_EOF_MARKER = b"%%EOF"
_EOF_TAIL = 2048
_TITLE_CHARS = 200
_LOCK = threading.Lock()


class PdfProblem(Exception):
    """A PDF that could not be read: `outcome` says why (a PdfOutcome)."""

    def __init__(self, outcome: PdfOutcome, detail: str = ""):
        super().__init__(f"{outcome}: {detail}" if detail else str(outcome))
        self.outcome = outcome


def is_pdf(content_type: str, body: bytes) -> bool:
    """A response to read as a PDF (the module docstring says when)."""
    if content_type in PDF_TYPES:
        return True
    return content_type in SNIFFED_TYPES and sniffs_as_pdf(body)


def sniffs_as_pdf(head: bytes) -> bool:
    return _MAGIC in head[:SNIFF_BYTES]


def parse_pdf(body: bytes, url: str, *, max_pages: int, max_links: int, max_chars: int) -> ParsedPage:
    """Read a PDF (the module docstring has the rules); raises PdfProblem."""
    import pypdfium2

    with _LOCK:
        try:
            document = pypdfium2.PdfDocument(body)
        except pypdfium2.PdfiumError as error:
            raise PdfProblem(_why_unopened(error.err_code, body), str(error)) from None
        try:
            title = _metadata_title(document)
            declared = _catalog_language(document)
            texts, links, size = [], [], 0
            for index in range(min(len(document), max_pages)):
                text, page_links = _read_page(document, index)
                texts.append(text)
                size += len(text) + 1
                links.extend(page_links[: max(0, max_links - len(links))])
                if size >= max_chars:
                    break
        finally:
            document.close()
    text = "\n".join(texts)[:max_chars]
    if not re.search(r"\w", text):
        raise PdfProblem(PdfOutcome.NO_TEXT, f"{len(texts)} pages, no text")
    return ParsedPage(title=title or _first_line(text), text=text, links=links, base=url, declared_language=declared)


def _why_unopened(code: int | None, body: bytes) -> PdfOutcome:
    import pypdfium2.raw as pdfium

    if code in (pdfium.FPDF_ERR_PASSWORD, pdfium.FPDF_ERR_SECURITY):
        return PdfOutcome.ENCRYPTED
    if _EOF_MARKER not in body[-_EOF_TAIL:]:
        return PdfOutcome.TRUNCATED
    return PdfOutcome.MALFORMED


def _read_page(document, index: int) -> tuple[str, list[str]]:
    """One page's text and its link annotations' URIs; a page PDFium cannot load is empty."""
    import pypdfium2

    try:
        page = document[index]
    except pypdfium2.PdfiumError:
        return "", []
    try:
        textpage = page.get_textpage()
        try:
            text = textpage.get_text_bounded().replace("\r\n", "\n")
        finally:
            textpage.close()
        return text, _uris(document, page)
    finally:
        page.close()


def _uris(document, page) -> list[str]:
    """The URIs of a page's link annotations (URI actions; links within the document are
    destinations, not URIs, and are skipped)."""
    import pypdfium2.raw as pdfium

    found = []
    position, link = ctypes.c_int(0), pdfium.FPDF_LINK()
    while pdfium.FPDFLink_Enumerate(page.raw, ctypes.byref(position), ctypes.byref(link)):
        action = pdfium.FPDFLink_GetAction(link)
        if not action or pdfium.FPDFAction_GetType(action) != pdfium.PDFACTION_URI:
            continue
        size = pdfium.FPDFAction_GetURIPath(document.raw, action, None, 0)
        if size <= 1 or size > 8192:
            continue
        buffer = ctypes.create_string_buffer(size)
        pdfium.FPDFAction_GetURIPath(document.raw, action, buffer, size)
        # A URI action's URI is 7-bit ASCII (PDF 32000-1:2008, 12.6.4.7); anything else is
        # kept as bytes would be read by a browser's address bar.
        uri = buffer.raw[: size - 1].decode("latin-1").strip()
        if uri:
            found.append(uri)
    return found


# Titles that say nothing about the document: a writer's placeholders.
_EMPTY_TITLES = re.compile(r"^(untitled|title|no title|document\d*|microsoft word - .*|.*\.(docx?|pdf|tex|dvi|ps))$",
                           re.I)


def _metadata_title(document) -> str:
    try:
        title = (document.get_metadata_value("Title") or "").strip()
    except Exception:  # noqa: BLE001  (a broken Info dictionary: no title from it)
        return ""
    title = " ".join(title.split())[:_TITLE_CHARS]
    return "" if _EMPTY_TITLES.match(title) else title


def _catalog_language(document) -> str:
    """The document's /Lang (ISO 32000 14.9.2, a BCP 47 tag, as <html lang> is), or ""."""
    import pypdfium2.raw as pdfium

    size = pdfium.FPDFCatalog_GetLanguage(document.raw, None, 0)  # bytes of UTF-16LE with its NUL
    if size <= 2 or size > 200:
        return ""
    buffer = (ctypes.c_ushort * (size // 2))()
    pdfium.FPDFCatalog_GetLanguage(document.raw, buffer, size)
    return bytes(buffer)[:size - 2].decode("utf-16-le", "replace").strip()[:35]


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = " ".join(line.split())
        if re.search(r"\w", line):
            return line[:_TITLE_CHARS]
    return ""
