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

Languages (issue 53): a page is analysed in its language (Document.language): the Snowball
stemmer of that language where PyStemmer has one, no stemming otherwise (the word lower-cased).
Scripts written without spaces (Han, Hiragana, Katakana, Hangul, Thai) are cut into
overlapping character bigrams, as Lucene's CJKAnalyzer does (`東京都庁` → `東京 京都 都庁`; a
lone character is its own token), on pages and queries alike: a query's run of two or more
such characters is the phrase of its bigrams. Queries have no language: indexer.query
stems each word with every language the index holds (docs/search.md, "Languages").
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

# BCP 47 primary subtag -> PyStemmer's algorithm (Snowball).
STEMMERS = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech", "da": "danish", "nl": "dutch",
    "en": "english", "eo": "esperanto", "et": "estonian", "fi": "finnish", "fr": "french", "de": "german",
    "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian",
    "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "fa": "persian", "pl": "polish", "pt": "portuguese",
    "ro": "romanian", "ru": "russian", "sr": "serbian", "st": "sesotho", "es": "spanish", "sv": "swedish",
    "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}
_stemmers = {language: Stemmer.Stemmer(algorithm) for language, algorithm in STEMMERS.items()}


NO_STEMMER = "none"  # the analysis of a language PyStemmer has no stemmer for: words lower-cased only


def stemmer_language(language: str) -> str:
    """The analysis of text in `language`: its own stemmer's, NO_STEMMER where PyStemmer has
    none (Chinese, Japanese, Korean, Thai, Hebrew, Bulgarian ...), English where the language
    is unknown (""): what every page had before languages were identified, so an index built
    then still matches until `manage.py reindex` identifies its pages."""
    if not language:
        return "en"
    return language if language in _stemmers else NO_STEMMER


@lru_cache(maxsize=200_000)
def stem(word: str, language: str = "en") -> str:
    """The Snowball stem of one lower-case word in a language; the word itself where the
    language has no stemmer."""
    stemmer = _stemmers.get(language)
    if stemmer is None:
        return word
    return stemmer.stemWord(word) or word  # Greek's, Nepali's and Turkish's stem some words to nothing


# Runs of the scripts written without spaces between words: CJK ideographs (and their
# extensions and compatibility forms), Hiragana, Katakana (and the half-width forms),
# Hangul syllables and jamo, Thai (its vowels and tone marks included).
NO_SPACE_RUN = re.compile(
    "[\u0e00-\u0e7f\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]+")


def bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a run of a no-space script (a lone character: itself)."""
    return [run[i:i + 2] for i in range(len(run) - 1)] if len(run) > 1 else [run]


@dataclass(frozen=True)
class Group:
    """The tokens of one word or identifier: whole (None for a plain word) and parts."""

    text: str  # as written
    whole: str | None
    parts: tuple[str, ...]
    bigrammed: bool = False  # a no-space script's run (or runs): its parts are a phrase, not alternatives

    @property
    def tokens(self) -> list[str]:
        return ([self.whole] if self.whole else []) + list(self.parts)

    @property
    def is_stopword(self) -> bool:
        return self.whole is None and len(self.parts) == 1 and self.text.lower() in STOPWORDS

    @property
    def phrase(self) -> bool:
        """Matched as the phrase of its tokens (bigrams of a no-space script)."""
        return self.bigrammed and len(self.tokens) > 1


def _parts(raw: str) -> list[str]:
    parts = []
    for piece in _PART.findall(raw):
        if piece.islower() or piece.isupper() or piece[1:].islower():  # _CAMEL knows ASCII case only: "Häuser"
            parts.append(piece)
        else:
            parts.extend(_CAMEL.findall(piece))
    return parts[:MAX_PARTS]


_OUTER = re.compile(r"::|[./]")


def _segment(raw: str, language: str) -> tuple[str | None, tuple[str, ...]]:
    """A group without outer connectors: (whole, stemmed parts)."""
    parts = _parts(raw)
    stems = tuple(stem(p.lower(), language) for p in parts if len(p) <= MAX_TOKEN_CHARS)
    if _HAS_CONNECTOR.search(raw):
        return (raw.lower() if len(raw) <= MAX_TOKEN_CHARS else None), stems
    if len(parts) <= 1:
        return None, stems
    return stem(raw.lower(), language)[:MAX_TOKEN_CHARS], stems  # camelCase: a stemmed whole


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
def analyze_group(raw: str, language: str = "en") -> Group:
    """One regex match of _GROUP (or one run of a no-space script) → its tokens, in a language
    (cached: pages repeat their words, snippets look them up again)."""
    if NO_SPACE_RUN.fullmatch(raw):
        return Group(raw, None, tuple(bigrams(raw)), bigrammed=True)
    return _analyze_group(raw, stemmer_language(language))


def _matches(text: str):
    """The groups of a text, in order, as (start, end, raw): runs of a no-space script are
    cut out first (Thai's vowel and tone marks are no \\w, so _GROUP would split its words),
    the rest matched by _GROUP."""
    position = 0
    for run in NO_SPACE_RUN.finditer(text):
        for m in _GROUP.finditer(text, position, run.start()):
            yield m.start(), m.end(), m.group()
        yield run.start(), run.end(), run.group()
        position = run.end()
    for m in _GROUP.finditer(text, position):
        yield m.start(), m.end(), m.group()


def _raw_groups(text: str) -> list[str]:
    if NO_SPACE_RUN.search(text) is None:
        return _GROUP.findall(text)
    return [raw for _, _, raw in _matches(text)]


@lru_cache(maxsize=100_000)
def _analyze_group(raw: str, language: str) -> Group:
    """One regex match of _GROUP → its tokens (cached: pages repeat their words).

    A dotted (or slashed) identifier's parts are its inner runs of segments, then its
    segments' tokens, so a compound segment is a token too: `celery.exceptions.BackendError`
    → the whole, `celery.exceptions`, `exceptions.backenderror`, then `celeri` `except`
    `backenderror` `backend` `error`. An option's whole without its dashes is a part
    (`--help-env` → `help-env`)."""
    segments = [s for s in _OUTER.split(raw) if s]
    if len(segments) <= 1:
        whole, parts = _segment(raw, language)
        bare = whole.lstrip("-") if whole else ""
        if bare != whole and _HAS_CONNECTOR.search(bare):
            parts = (bare, *parts)
        return Group(raw, whole, parts)
    tail: list[str] = _sub_identifiers(raw)
    for segment in segments:
        whole, parts = _segment(segment, language)
        if whole:
            tail.append(whole)
        tail.extend(parts)
    return Group(raw, raw.lower() if len(raw) <= MAX_TOKEN_CHARS else None, tuple(tail[:MAX_PARTS]))


def groups(text: str, language: str = "en") -> list[Group]:
    return [analyze_group(raw, language) for raw in _raw_groups(text)]


def iter_group_spans(text: str, language: str = "en"):
    """(start, end, Group) for each group in text: snippets highlight by these spans. A run
    of a no-space script is given a character at a time, each with the bigrams it is part
    of, so that exactly the characters of a matched bigram are highlighted."""
    if NO_SPACE_RUN.search(text) is None:  # the usual case, without a generator in between
        for m in _GROUP.finditer(text):
            yield m.start(), m.end(), analyze_group(m.group(), language)
        return
    for start, end, raw in _matches(text):
        if NO_SPACE_RUN.fullmatch(raw) and len(raw) > 1:
            for i, char in enumerate(raw):
                around = tuple(raw[j:j + 2] for j in (i - 1, i) if 0 <= j < len(raw) - 1)
                yield start + i, start + i + 1, Group(char, None, around, bigrammed=True)
        else:
            yield start, end, analyze_group(raw, language)


@lru_cache(maxsize=100_000)
def _cached_group_tokens(raw: str, language: str) -> tuple[str, ...]:
    return tuple(analyze_group(raw, language).tokens)


def _group_tokens(raw: str, language: str) -> tuple[str, ...]:
    # A long run (a CJK or Thai sentence is one) is rarely seen twice: not cached.
    return _cached_group_tokens(raw, language) if len(raw) <= MAX_TOKEN_CHARS else tuple(
        analyze_group(raw, language).tokens)


# A page's text is analysed a whitespace-separated chunk at a time, each chunk's tokens
# looked up in a per-process cache: pages repeat their words (and their "word," and
# "(word"), so nearly every chunk is a hit and a page costs one str.split() and one dict
# lookup per word, all in C (2.8x faster than a regex match and a cache lookup per group).
# The same tokens either way: no group spans whitespace (\w and the connectors never match
# it), and the look-behind sees whitespace or the chunk's start alike (tests/indexer/test_analyzer.py
# checks the equality on random text).
CHUNK_CACHE_SIZE = 200_000  # chunks (~40 MB at most); the cache is replaced, not evicted, when full


class _ChunkTokens(dict):
    """chunk -> its tokens, in one language (one cache per language)."""

    def __init__(self, language: str = "en"):
        super().__init__()
        self.language = language

    def __missing__(self, chunk: str) -> tuple[str, ...]:
        value = tuple(token for raw in _raw_groups(chunk) for token in _group_tokens(raw, self.language))
        if len(chunk) > MAX_TOKEN_CHARS:  # a run of a no-space script (a whole sentence): not seen again
            return value
        if len(self) >= CHUNK_CACHE_SIZE:
            _chunk_caches[self.language] = _ChunkTokens(self.language)  # another thread may still read this one
        else:
            self[chunk] = value
        return value


_chunk_caches: dict[str, _ChunkTokens] = {}


def _chunk_cache(language: str) -> _ChunkTokens:
    cache = _chunk_caches.get(language)
    if cache is None:
        cache = _chunk_caches[language] = _ChunkTokens(language)
    return cache


def tokens(text: str, language: str = "en") -> list[str]:
    """The token stream of a text in a language (positions are list indexes)."""
    cache = _chunk_cache(stemmer_language(language))
    return list(chain.from_iterable(map(cache.__getitem__, text.split())))


def tokens_by_regex(text: str, language: str = "en") -> list[str]:
    """tokens(), the definition: a group at a time over the whole text (tests compare)."""
    out: list[str] = []
    for raw in _raw_groups(text):
        out.extend(_group_tokens(raw, stemmer_language(language)))
    return out
