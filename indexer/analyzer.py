"""The one text analyzer: pages and queries become the same tokens, on every backend.

Search users type identifiers as often as prose, so a "word" is a run of word characters
joined by connectors (`.` `/` `-` `::`), optionally led by `-`/`--` (command-line options).
Each such run becomes a *group* of tokens, at consecutive positions:

- a plain word: its Snowball english stem (PostgreSQL's `english` uses the same algorithm),
  `Databases` → `databas`;
- an identifier: first the whole, lower-cased and not stemmed (`os.path.join`,
  `current_database`, `pl/perl`, `--help-env`, `__setitem__`), then its parts, stemmed, in
  order (`os path join`, `current databas`, `pl perl`, `help env`, `setitem`). CamelCase
  splits into parts too (`QuerySet` → `queryset queri set`; a camel word's whole is stemmed
  like a plain word, since users type it in lower case).

A dotted identifier's parts start with its inner runs of segments (`os.path`, `path.join`),
so `zipfile.Path read_text` finds a page that says `zipfile.Path.read_text()` by two tokens.

Whole first, parts after: a phrase of parts ("path join") and a phrase across groups
("os.path.join function") are consecutive tokens in the page and in the query alike, so one
token stream serves both backends' phrase search (FTS5 phrases, PostgreSQL `<->`).

Queries see a group as one term, its whole token (or its one word): an identifier is a
token, never a phrase of prose words (`current_database` does not match "current
database"); the parts of a queried identifier weigh in the ranking as terms of their own.
"""

import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain

import Stemmer

# A group: optional option dashes, then word runs joined by single connectors.
_GROUP = re.compile(r"(?<![\w-])-{1,2}(?=[^\W_])\w+(?:(?:::|[./-])\w+)*|\w+(?:(?:::|[./-])\w+)*")
_PART = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+|[^\W\d_]+")
_HAS_CONNECTOR = re.compile(r"[\W_]")

MAX_TOKEN_CHARS = 64  # a longer identifier is indexed by its parts only, a longer part not at all (base64, hex)
MAX_PARTS = 32  # parts indexed of one group (a long dotted path or a base64 blob)

# The stopwords of PostgreSQL's english configuration (Snowball's list). Pages keep them
# (phrases need them); a query drops them unless it has nothing else.
STOPWORDS = frozenset("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself it
its itself they them their theirs themselves what which who whom this that these those am is are was were be been
being have has had having do does did doing a an the and but if or because as until while of at by for with about
against between into through during before after above below to from up down in out on off over under again further
then once here there when where why how all any both each few more most other some such no nor not only own same so
than too very s t can will just don should now
""".split())

_stemmer = Stemmer.Stemmer("english")


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """Snowball english stem of one lower-case word."""
    return _stemmer.stemWord(word)


@dataclass(frozen=True)
class Group:
    """The tokens of one word or identifier: whole (None for a plain word) and parts."""

    text: str  # as written
    whole: str | None
    parts: tuple[str, ...]

    @property
    def tokens(self) -> list[str]:
        return ([self.whole] if self.whole else []) + list(self.parts)

    @property
    def is_stopword(self) -> bool:
        return self.whole is None and len(self.parts) == 1 and self.text.lower() in STOPWORDS


def _parts(raw: str) -> list[str]:
    parts = []
    for piece in _PART.findall(raw):
        if piece.islower() or piece.isupper():
            parts.append(piece)
        else:
            parts.extend(_CAMEL.findall(piece))
    return parts[:MAX_PARTS]


_OUTER = re.compile(r"::|[./]")


def _segment(raw: str) -> tuple[str | None, tuple[str, ...]]:
    """A group without outer connectors: (whole, stemmed parts)."""
    parts = _parts(raw)
    stems = tuple(stem(p.lower()) for p in parts if len(p) <= MAX_TOKEN_CHARS)
    if _HAS_CONNECTOR.search(raw):
        return (raw.lower() if len(raw) <= MAX_TOKEN_CHARS else None), stems
    if len(parts) <= 1:
        return None, stems
    return stem(raw.lower())[:MAX_TOKEN_CHARS], stems  # camelCase: a stemmed whole


_SEGMENT = re.compile(r"(?:(?<=^)|(?<=[./:]))[^./:]+")
MAX_SUB_SEGMENTS = 6  # identifiers with more segments get no inner sub-identifiers


def _sub_identifiers(raw: str) -> list[str]:
    """The runs of two or more segments inside a dotted identifier, longest first:
    `os.path.join` → `os.path`, `path.join` (so `zipfile.Path` finds `zipfile.Path.read_text`
    as a token, without a phrase query)."""
    spans = [(m.start(), m.end()) for m in _SEGMENT.finditer(raw)]
    n = len(spans)
    if n > MAX_SUB_SEGMENTS:
        lengths, starts = range(n - 1, 1, -1), lambda length: (0, n - length)  # prefixes and suffixes
    else:
        lengths, starts = range(n - 1, 1, -1), lambda length: range(n - length + 1)
    subs = []
    for length in lengths:
        for start in starts(length):
            sub = raw[spans[start][0]:spans[start + length - 1][1]].lower()
            if len(sub) <= MAX_TOKEN_CHARS:
                subs.append(sub)
    return subs


@lru_cache(maxsize=100_000)
def analyze_group(raw: str) -> Group:
    """One regex match of _GROUP → its tokens (cached: pages repeat their words).

    A dotted (or slashed) identifier's parts are its inner runs of segments, then its
    segments' tokens, so a compound segment is a token too: `celery.exceptions.BackendError`
    → the whole, `celery.exceptions`, `exceptions.backenderror`, then `celeri` `except`
    `backenderror` `backend` `error`. An option's whole without its dashes is a part
    (`--help-env` → `help-env`)."""
    segments = [s for s in _OUTER.split(raw) if s]
    if len(segments) <= 1:
        whole, parts = _segment(raw)
        bare = whole.lstrip("-") if whole else ""
        if bare != whole and _HAS_CONNECTOR.search(bare):
            parts = (bare, *parts)
        return Group(raw, whole, parts)
    tail: list[str] = _sub_identifiers(raw)
    for segment in segments:
        whole, parts = _segment(segment)
        if whole:
            tail.append(whole)
        tail.extend(parts)
    return Group(raw, raw.lower() if len(raw) <= MAX_TOKEN_CHARS else None, tuple(tail[:MAX_PARTS]))


def groups(text: str) -> list[Group]:
    return [analyze_group(m) for m in _GROUP.findall(text)]


def iter_group_spans(text: str):
    """(start, end, Group) for each group in text: snippets highlight by these spans."""
    for m in _GROUP.finditer(text):
        yield m.start(), m.end(), analyze_group(m.group())


@lru_cache(maxsize=100_000)
def _group_tokens(raw: str) -> tuple[str, ...]:
    return tuple(analyze_group(raw).tokens)


# A page's text is analysed a whitespace-separated chunk at a time, each chunk's tokens
# looked up in a per-process cache: pages repeat their words (and their "word," and
# "(word"), so nearly every chunk is a hit and a page costs one str.split() and one dict
# lookup per word, all in C (2.8x faster than a regex match and a cache lookup per group).
# The same tokens either way: no group spans whitespace (\w and the connectors never match
# it), and the look-behind sees whitespace or the chunk's start alike (tests/indexer/test_analyzer.py
# checks the equality on random text).
CHUNK_CACHE_SIZE = 200_000  # chunks (~40 MB at most); the cache is replaced, not evicted, when full


class _ChunkTokens(dict):
    def __missing__(self, chunk: str) -> tuple[str, ...]:
        global _chunk_tokens
        value = tuple(token for raw in _GROUP.findall(chunk) for token in _group_tokens(raw))
        if len(self) >= CHUNK_CACHE_SIZE:
            _chunk_tokens = _ChunkTokens()  # another thread may still read this one: leave it whole
        else:
            self[chunk] = value
        return value


_chunk_tokens = _ChunkTokens()


def tokens(text: str) -> list[str]:
    """The token stream of a text (positions are list indexes)."""
    return list(chain.from_iterable(map(_chunk_tokens.__getitem__, text.split())))


def tokens_by_regex(text: str) -> list[str]:
    """tokens(), the definition: a group at a time over the whole text (tests compare)."""
    out: list[str] = []
    for raw in _GROUP.findall(text):
        out.extend(_group_tokens(raw))
    return out
