"""Gemtext (text/gemini) -> title, headings, text and links, in the ParsedPage of parse.py.

The format is line-oriented (gemini://geminiprotocol.net/docs/gemtext.gmi): each line's
type is fixed by its first characters, so one pass over the lines parses a page.

Choices:
- Decoding: a byte-order mark, else the `charset` parameter of the MIME type (labels as
  the WHATWG Encoding Standard maps them; an unknown one is ignored), else UTF-8 (the
  spec's default) when the bytes are UTF-8, else the detector's guess
  (indexer/decoding.py); undecodable bytes become U+FFFD; the byte-order mark is dropped,
  and so are NULs (PostgreSQL refuses them). Lines end at LF,
  a CR before it is dropped (CRLF and LF both work); no other character ends a line.
- `=>` link lines: "=>", optional spaces or tabs, the URL up to the next space or tab,
  optional whitespace, the label (the rest, stripped). A link line without a URL is
  ignored. Links are kept as written (relative ones too; the frontier resolves them
  against `base`, which is the page's URL: gemtext has no <base>), each once, in order,
  at most `max_links`; a fragment-only link ("#x", this very page) is dropped as
  parse_html drops it. The label is text (a label-less link adds nothing to the text).
- Headings: "#", "##", "###" then optional whitespace. More than three "#" is a level-3
  heading whose text starts with the extra "#"s. Every heading goes to `headings` (one per
  line) and to `text`; `title` is the first level-1 heading, else the first heading of
  any level, else "" (capped at 500 characters like parse_html's).
- "* " list items (the space is required: "*bold*" is text) and ">" quote lines are text,
  without their markers. Blank lines are dropped.
- "```" toggles preformatted mode; the rest of an opening toggle line is the block's alt
  text; a block left open runs to the end of the page. Lines inside a block are not
  parsed (a "=>" there is no link).
- Preformatted blocks are code (kept in the text, line by line, indentation kept) unless
  they are ASCII art, which is left out of the text, its alt text kept and marked as
  `boilerplate` (the index has its words, a snippet skips it). A block is art when
  (looks_like_art below):
    1. it is at the very top of the page (nothing but blank lines before it: the banner
       place, TLGS's rule), or
    2. box-drawing (U+2500-257F), block-element (U+2580-259F) or braille (U+2800-28FF)
       characters are >= 25 % of its non-space characters, or
    3. symbols (neither letter, digit nor space) are >= 70 % of its non-space characters
       once runs of three or more of one character are squeezed to one (a "//------"
       rule in a comment counts as one "-"), and fewer than half of its letters and
       digits are in words (runs of >= 3 letters, not all one letter), or
    4. it is a drawing made of letters and digits (FIGlet's "colossal", "univers",
       "roman", "doh" fonts): >= 60 non-space characters, the three most frequent ones
       >= 45 % of them, >= 30 % of its whitespace-separated tokens repeated, and either
       fewer than half of its letters and digits in words or the three most frequent
       characters >= 80 % of the squeezed block.
  Measured on 1,142 banners (all 571 FIGlet fonts of pyfiglet 1.0.4, two texts each) and
  2,773 real blocks (chunks of 3-20 lines of Python, C headers, shell scripts, /etc
  configuration, JavaScript, Markdown, tables of numbers): rules 2-4 find 96.6 % of the
  banners (the misses are fonts that print plain letters, decimal, octal, hex or binary
  digits, and a few sparse ones) and take 3 real blocks for art (C arrays of single
  characters: 'c','o','m',...). `for (i = 0; i < n; i++) { x[i] = y; }` has 56 % symbols:
  code. A drawing whose letters mostly make words (a framed notice, cowsay's speech
  bubble) is kept: its words are content. Rule 1 also drops a code block that opens a
  page (rare: a page starts with a heading). The measure reads at most the first ART_SAMPLE_CHARS of a block.
- `text`: one line per gemtext line (headings, text, list items, quotes, link labels,
  code lines, alt texts), joined by "\\n", at most `max_chars` characters (the page is
  still read to the end for its links). `boilerplate`: (start, end) of each art block's
  alt text in `text`.
- No robots directives exist in gemtext: noindex and nofollow stay False.

Speed: 0.075 ms of CPU for a 10 KB page (13,000 pages/s on one core; time.process_time
over 1,000 parses, the best of six, of a page of paragraphs, links, list items, quotes,
code blocks and a FIGlet banner on top; parse_html takes 0.64 ms for 17 KB of HTML).
"""

import re
from collections import Counter

from common import stagetime

from . import decoding
from .parse import MAX_HEADINGS_CHARS, ParsedPage

MAX_TITLE_CHARS = 500
ART_SAMPLE_CHARS = 16_000

_ALNUM = re.compile(r"[^\W_]")
_ART_CHARS = re.compile("[\u2500-\u259f\u2800-\u28ff]")
_WORD = re.compile(r"[^\W\d_]{3,}")
_RUN = re.compile(r"(\S)\1{2,}")
_LINK_SPLIT = re.compile(r"[ \t]+")


def decode(body: bytes, charset: str | None = None) -> str:
    """The page as text, without a byte-order mark or NULs (decode_text)."""
    return decode_text(body, charset)[0]


def decode_text(body: bytes, charset: str | None = None) -> tuple[str, decoding.Decision]:
    """The page as text and how it was decoded: a byte-order mark, else `charset`, else
    UTF-8 (Gemini's default) when the bytes are UTF-8, else the detector's guess
    (indexer/decoding.py, kind "text"); errors replaced, without NULs."""
    text, chosen = decoding.decode(body, charset, kind="text")
    return (text.replace("\x00", "") if "\x00" in text else text), chosen




def looks_like_art(lines: list[str]) -> bool:
    """Whether a preformatted block's lines are a drawing rather than code or data (rules
    2-4 of the module docstring; rule 1, the top of the page, is the parser's)."""
    block = "\n".join(lines)[:ART_SAMPLE_CHARS]
    packed = "".join(block.split())
    total = len(packed)
    if not total:
        return False
    if len(_ART_CHARS.findall(packed)) >= 0.25 * total:
        return True
    alnum = len(_ALNUM.findall(packed))
    words = sum(len(w) for w in _WORD.findall(block) if len(set(w.lower())) >= 2)
    wordy = alnum > 0 and words >= 0.5 * alnum
    squeezed = _RUN.sub(r"\1", packed)
    symbols = len(squeezed) - len(_ALNUM.findall(squeezed))
    if symbols >= 0.7 * len(squeezed) and not wordy:
        return True
    if total < 60:
        return False
    top3 = sum(count for _, count in Counter(packed).most_common(3))
    if top3 < 0.45 * total:
        return False
    tokens = block.split()
    if len(set(tokens)) > 0.7 * len(tokens):
        return False
    return not wordy or sum(count for _, count in Counter(squeezed).most_common(3)) >= 0.8 * len(squeezed)


class _Text:
    """The text being built: lines joined by "\\n", up to max_chars, with boilerplate ranges."""
    __slots__ = ("lines", "length", "max_chars", "spans")

    def __init__(self, max_chars: int):
        self.lines: list[str] = []
        self.length = -1  # no separator before the first line
        self.max_chars = max_chars
        self.spans: list[tuple[int, int]] = []

    @property
    def full(self) -> bool:
        return self.length >= self.max_chars

    def add(self, line: str, boilerplate: bool = False) -> None:
        if not line or self.length >= self.max_chars:
            return
        start = self.length + 1
        self.lines.append(line)
        self.length = start + len(line)
        if boilerplate:
            self.spans.append((start, min(self.length, self.max_chars)))

    def result(self) -> tuple[str, list[tuple[int, int]]]:
        text = "\n".join(self.lines)[:self.max_chars]
        return text, [(a, b) for a, b in self.spans if a < len(text)]


@stagetime.timed("parse")  # the stage parse_html counts in: the bench's stage table
def parse_gemtext(body: bytes, url: str, charset: str | None = None, *,
                  max_links: int = 1000, max_chars: int = 200_000) -> ParsedPage:
    """Parse a text/gemini body (the module docstring has the rules)."""
    decoded, chosen = decode_text(body, charset)
    page = ParsedPage(base=url, encoding=chosen.encoding, encoding_source=chosen.source)
    text = _Text(max_chars)
    headings: list[str] = []
    headings_chars = 0
    first_heading = level1 = None
    links: dict[str, None] = {}
    block: list[str] | None = None  # the open preformatted block's lines
    alt = ""
    block_at_top = False
    seen_content = False

    def close_block():
        if block_at_top or looks_like_art(block):
            text.add(alt, boilerplate=True)
        else:
            text.add(alt)
            for code in block:
                text.add(code)

    for line in decoded.split("\n"):
        if line.endswith("\r"):
            line = line[:-1]
        if block is not None:
            if line.startswith("```"):
                close_block()
                block = None
            elif not text.full:  # a full text takes no more lines: keep none
                block.append(line.rstrip())
            continue
        if not line:
            continue
        if line.startswith("```"):
            block, alt = [], line[3:].strip()
            block_at_top = not seen_content
            seen_content = True
            continue
        first = line[:1]
        if first == "=" and line.startswith("=>"):
            seen_content = True
            parts = _LINK_SPLIT.split(line[2:].strip(" \t"), 1)
            target = parts[0]
            if target:
                if len(links) < max_links and target[0] != "#":
                    links[target] = None
                if len(parts) > 1:
                    text.add(parts[1].strip())
            continue
        if first == "#":
            seen_content = True
            level = 3 if line.startswith("###") else 2 if line.startswith("##") else 1
            heading = line[level:].strip(" \t")
            if not heading:
                continue
            if first_heading is None:
                first_heading = heading
            if level == 1 and level1 is None:
                level1 = heading
            if headings_chars < MAX_HEADINGS_CHARS:
                headings.append(heading)
                headings_chars += len(heading) + 1
            text.add(heading)
            continue
        if first == "*" and line.startswith("* "):
            line = line[2:]
        elif first == ">":
            line = line[1:]
        line = line.strip()
        if line:
            seen_content = True
            text.add(line)
    if block is not None:  # a block left open runs to the end of the page
        close_block()

    page.title = (level1 if level1 is not None else first_heading or "")[:MAX_TITLE_CHARS]
    page.headings = "\n".join(headings)[:MAX_HEADINGS_CHARS]
    page.links = list(links)
    page.text, page.boilerplate = text.result()
    return page
