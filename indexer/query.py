"""A user's query, parsed: words and identifiers (all required), "quoted phrases", site:host
(alone, it lists the site's pages), lang:xx (only pages in that language; alone, it lists them).

A query has no language (issue 53): each word is analysed by every analysis the index
holds (`languages`, SearchBackend.indexed_languages()), and matches a page by the token the
page's own analysis makes of it (Term.conditioned: a token only some analyses make is
matched with their `analysis=` markers), so a word as the page writes it finds the page,
an inflected form finds it where that stemmer conflates the two, and one language's stems
never match in another's pages. A run of Chinese, Japanese, Korean or Thai is the phrase of its
bigrams. A word is dropped as a stopword when it is one in any of those languages.

Everything else is text: operators of other engines (`AND`, `+`, `|`, `*`, `(`) are just
characters the analyzer skips, so no input can inject syntax into FTS5 or tsquery; the
backends build their match expressions from analyzer tokens only. Control characters (NUL
included) are dropped; the query is cut at CRAWLER_SEARCH_MAX_QUERY_CHARS and
MAX_TERMS groups, and `truncated` says so.
"""

import re
from dataclasses import dataclass, field
from functools import lru_cache

from django.conf import settings

from .analyzer import STOPWORDS, Group, analyze_group, groups

DEFAULT_LANGUAGES = ("en",)  # a query parsed without the index's languages

MAX_TERMS = 32
MAX_SITES = 8
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_PIECE = re.compile(r'(?i)(?<!\S)site:(\S+)|"([^"]*)"?|(?<!\S)lang:([a-z]{2,3})(?:[-_][a-z0-9]{1,8})*(?!\S)')  # lang:zh-TW: zh
# A host as site: takes it: letters, digits, dots, hyphens (an IDN in its ASCII form).
_HOST = re.compile(r"^[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?$")


def site_token(host: str) -> str:
    """The index token that marks a page of this host (or of a subdomain of it). '=' never
    comes out of the analyzer, so page text cannot forge it."""
    return f"site={host}"


def language_token(language: str) -> str:
    """The index token that marks a page in a language (lang:xx matches it)."""
    return f"lang={language}"


def analysis_token(analysis: str) -> str:
    """The index token that marks a page analysed by a stemmer (or none): a query token that
    only that analysis makes matches only those pages."""
    return f"analysis={analysis}"


def site_tokens(host: str) -> list[str]:
    """The site tokens of a page on host: the host and each parent domain with a dot."""
    labels = host.lower().rstrip(".").split(".")
    return [site_token(".".join(labels[i:])) for i in range(len(labels) - 1)] or [site_token(host.lower())]


@dataclass(frozen=True)
class Term:
    """One required group of the query: matched by its token (the whole, or its one word)."""

    whole: str | None
    parts: tuple[str, ...]
    # The tokens that match it, one per analysis of the index (see the module's docstring),
    # and for each the analyses (indexer.analyzer.stemmer_language) of the pages it matches
    # in: () for every page. Empty: the token only, in every page.
    alternatives: tuple[str, ...] = field(default=(), compare=False)
    analyses: tuple[tuple[str, ...], ...] = field(default=(), compare=False)

    @classmethod
    def of(cls, group: Group, languages=DEFAULT_LANGUAGES) -> "Term":
        if not group.tokens:  # nothing indexable (a 100-letter word): no term
            return cls(group.whole, group.parts)
        by_token: dict[str, list[str]] = {}
        for language in languages:
            analysed = analyze_group(group.text, language)
            if analysed.tokens:
                by_token.setdefault(_match_token(analysed), []).append(language)
        if not by_token:
            return cls(group.whole, group.parts)
        everywhere = len(by_token) == 1  # every analysis gives the same token: no condition
        return cls(group.whole, group.parts, tuple(by_token),
                   tuple(() if everywhere else tuple(found) for found in by_token.values()))

    @property
    def token(self) -> str:
        return self.whole or self.parts[0]

    @property
    def matching(self) -> tuple[str, ...]:
        """The tokens that match it in a page (any of them, each in its analyses' pages)."""
        return self.alternatives or (self.token,)

    def matching_in(self, analysis: str) -> tuple[str, ...]:
        """The tokens that match it in a page of this analysis."""
        return tuple(token for token, analyses in self.conditioned if not analyses or analysis in analyses)

    @property
    def conditioned(self) -> list[tuple[str, tuple[str, ...]]]:
        """(token, the analyses of the pages it matches in; () for all) for each alternative."""
        return list(zip(self.alternatives, self.analyses)) or [(self.token, ())]

    @property
    def tokens(self) -> set[str]:
        return ({self.whole} if self.whole else set()) | set(self.parts) | set(self.alternatives)


def _match_token(group: Group) -> str:
    return group.whole or group.parts[0]


@dataclass
class Query:
    text: str  # what was searched, after cleaning and cutting
    terms: list[Term] = field(default_factory=list)
    phrases: list[list[str]] = field(default_factory=list)  # token streams, each matched in order
    sites: list[str] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)  # lang:xx: only pages in these (any of them)
    truncated: bool = False
    free_text: str = ""  # the words typed outside quotes and operators, as typed
    # Each phrase's token streams, one per analysis of the index that cuts it differently,
    # with the analyses of the pages each matches in (() for all), as Term.conditioned.
    phrase_alternatives: list[list[tuple[list[str], tuple[str, ...]]]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """No words to search for (a site: alone lists that site: lists_sites)."""
        return not self.terms and not self.phrases

    @property
    def lists_sites(self) -> bool:
        """site: or lang: and no words: the sites' (the language's) indexed pages, by URL."""
        return self.empty and bool(self.sites or self.languages)

    @property
    def typed_terms(self) -> list[Term]:
        """The free terms and the phrases' words, each once, in order."""
        return list(dict.fromkeys(self.terms + self._phrase_terms))

    @property
    def scored_terms(self) -> list[tuple[Term, float]]:
        """Every term the ranking weighs, with its weight: the free terms and the phrases'
        words (1.0), first; then each part of an identifier on its own
        (CRAWLER_SEARCH_PART_WEIGHT): a page titled `os.path` is about `os.path.join` more
        than a list that names it."""
        scored = {t: 1.0 for t in self.typed_terms}
        for term in self.typed_terms:
            if term.whole:
                for part in term.parts:
                    scored.setdefault(Term(None, (part,)), settings.CRAWLER_SEARCH_PART_WEIGHT)
        return list(scored.items())

    @property
    def highlight_tokens(self) -> set[str]:
        out = set()
        for term, _ in self.scored_terms:
            out |= term.tokens
        return out

    _phrase_terms: list[Term] = field(default_factory=list)


@lru_cache(maxsize=64)
def _stopwords(language: str) -> frozenset:
    if language == "en":
        return STOPWORDS
    from stop_words import LANGUAGE_MAPPING, get_stop_words  # a query's only: loaded when a language is indexed
    return frozenset(get_stop_words(language)) if language in LANGUAGE_MAPPING else frozenset()


def _is_stopword(group: Group, languages) -> bool:
    if group.whole is not None or len(group.parts) != 1 or group.bigrammed:
        return False
    word = group.text.lower()
    return any(word in _stopwords(language) for language in languages)


def _add_phrase(query: Query, phrase: list[Group], languages) -> None:
    own = [t for g in phrase for t in g.tokens]
    by_stream: dict[tuple, list[str]] = {}
    for language in languages:
        stream = tuple(t for g in phrase for t in analyze_group(g.text, language).tokens)
        by_stream.setdefault(stream, []).append(language)
    if len(by_stream) <= 1:
        streams = [(list(next(iter(by_stream), own)), ())]
    else:
        streams = [(list(stream), tuple(found)) for stream, found in by_stream.items()]
    query.phrases.append(own)
    query.phrase_alternatives.append(streams)


def parse(raw: str, languages=DEFAULT_LANGUAGES) -> Query:
    """languages: those of the index (SearchBackend.indexed_languages()), each word is
    analysed in each."""
    languages = tuple(languages) or DEFAULT_LANGUAGES
    limit = settings.CRAWLER_SEARCH_MAX_QUERY_CHARS
    text = _CONTROL.sub(" ", raw or "").strip()
    truncated = len(text) > limit
    text = text[:limit]
    query = Query(text=text, truncated=truncated)
    free = []
    position = 0
    for m in _PIECE.finditer(text):
        free.append(text[position:m.start()])
        position = m.end()
        if m.group(3) is not None:
            language = m.group(3).lower()
            if language not in query.languages and len(query.languages) < MAX_SITES:
                query.languages.append(language)
        elif m.group(1) is not None:
            host = _site_host(m.group(1))
            if host and len(query.sites) < MAX_SITES:
                query.sites.append(host)
            elif not host:
                free.append(m.group(1))
        else:
            phrase = groups(m.group(2) or "")
            if len(phrase) > 1 or (phrase and phrase[0].phrase):
                _add_phrase(query, phrase, languages)
                for g in phrase:
                    if g.phrase:
                        query._phrase_terms.extend(Term(None, (bigram,)) for bigram in g.tokens)
                    elif not _is_stopword(g, languages) and g.tokens:
                        query._phrase_terms.append(Term.of(g, languages))
            elif phrase:  # a "single word" is just a word
                free.append(m.group(2))
    free.append(text[position:])
    query.free_text = " ".join(" ".join(free).split())
    found = groups(query.free_text)
    meaningful = [g for g in found if not _is_stopword(g, languages)] or found  # "the who" still searches
    seen = set()
    for group in meaningful:
        if group.phrase:  # a run of a no-space script: the phrase of its bigrams
            if group.tokens not in query.phrases:
                _add_phrase(query, [group], ())
                query._phrase_terms.extend(Term(None, (bigram,)) for bigram in group.tokens)
            continue
        term = Term.of(group, languages)
        if term.tokens and term not in seen:
            seen.add(term)
            query.terms.append(term)
    if len(query.terms) + len(query.phrases) > MAX_TERMS:
        query.truncated = True
        query.terms = query.terms[:max(0, MAX_TERMS - len(query.phrases))]
        query.phrases = query.phrases[:MAX_TERMS]
        query.phrase_alternatives = query.phrase_alternatives[:MAX_TERMS]
    # A long run of Chinese is a phrase of many bigrams: the ranking weighs the first MAX_TERMS.
    query._phrase_terms = list(dict.fromkeys(query._phrase_terms))[:MAX_TERMS]
    return query


def as_typed_phrase(query: Query, languages=DEFAULT_LANGUAGES) -> Query | None:
    """The words typed without quotes, as one quoted phrase (ranking lifts the pages that hold
    them as typed: "over the course of" says more than "course"); None when that says
    nothing more: fewer than two words, or a phrase already quoted."""
    if query.phrases or not query.terms or len(query.free_text.split()) < 2 or '"' in query.free_text:
        return None
    phrased = parse(f'"{query.free_text}"', languages)
    return phrased if len(phrased.phrases) == 1 and not phrased.terms else None


def _site_host(value: str) -> str | None:
    host = re.sub(r"^[a-z][a-z0-9+.-]*://", "", value.lower()).split("/")[0].split(":")[0].rstrip(".")
    return host if _HOST.match(host) else None
