"""A user's query, parsed: words and identifiers (all required), "quoted phrases", site:host
(alone, it lists the site's pages).

Everything else is text: operators of other engines (`AND`, `+`, `|`, `*`, `(`) are just
characters the analyzer skips, so no input can inject syntax into FTS5 or tsquery; the
backends build their match expressions from analyzer tokens only. Control characters (NUL
included) are dropped; the query is cut at CRAWLER_SEARCH_MAX_QUERY_CHARS and
MAX_TERMS groups, and `truncated` says so.
"""

import re
from dataclasses import dataclass, field

from django.conf import settings

from .analyzer import Group, groups

MAX_TERMS = 32
MAX_SITES = 8
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_PIECE = re.compile(r'(?i)(?<!\S)site:(\S+)|"([^"]*)"?')
# A host as site: takes it: letters, digits, dots, hyphens (an IDN in its ASCII form).
_HOST = re.compile(r"^[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?$")


def site_token(host: str) -> str:
    """The index token that marks a page of this host (or of a subdomain of it). '=' never
    comes out of the analyzer, so page text cannot forge it."""
    return f"site={host}"


def site_tokens(host: str) -> list[str]:
    """The site tokens of a page on host: the host and each parent domain with a dot."""
    labels = host.lower().rstrip(".").split(".")
    return [site_token(".".join(labels[i:])) for i in range(len(labels) - 1)] or [site_token(host.lower())]


@dataclass(frozen=True)
class Term:
    """One required group of the query: matched by its token (the whole, or its one word)."""

    whole: str | None
    parts: tuple[str, ...]

    @classmethod
    def of(cls, group: Group) -> "Term":
        return cls(group.whole, group.parts)

    @property
    def token(self) -> str:
        return self.whole or self.parts[0]

    @property
    def tokens(self) -> set[str]:
        return ({self.whole} if self.whole else set()) | set(self.parts)


@dataclass
class Query:
    text: str  # what was searched, after cleaning and cutting
    terms: list[Term] = field(default_factory=list)
    phrases: list[list[str]] = field(default_factory=list)  # token streams, each matched in order
    sites: list[str] = field(default_factory=list)
    truncated: bool = False

    @property
    def empty(self) -> bool:
        """No words to search for (a site: alone lists that site: lists_sites)."""
        return not self.terms and not self.phrases

    @property
    def lists_sites(self) -> bool:
        """site: and no words: the sites' indexed pages, by URL."""
        return self.empty and bool(self.sites)

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


def parse(raw: str) -> Query:
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
        if m.group(1) is not None:
            host = _site_host(m.group(1))
            if host and len(query.sites) < MAX_SITES:
                query.sites.append(host)
            elif not host:
                free.append(m.group(1))
        else:
            phrase = groups(m.group(2) or "")
            stream = [t for g in phrase for t in g.tokens]
            if len(phrase) > 1:
                query.phrases.append(stream)
                query._phrase_terms.extend(Term.of(g) for g in phrase if not g.is_stopword and g.tokens)
            elif phrase:  # a "single word" is just a word
                free.append(m.group(2))
    free.append(text[position:])
    found = groups(" ".join(free))
    meaningful = [g for g in found if not g.is_stopword] or found  # "the who" still searches
    seen = set()
    for group in meaningful:
        term = Term.of(group)
        if term.tokens and term not in seen:
            seen.add(term)
            query.terms.append(term)
    if len(query.terms) + len(query.phrases) > MAX_TERMS:
        query.truncated = True
        query.terms = query.terms[:max(0, MAX_TERMS - len(query.phrases))]
        query.phrases = query.phrases[:MAX_TERMS]
    return query


def _site_host(value: str) -> str | None:
    host = re.sub(r"^[a-z][a-z0-9+.-]*://", "", value.lower()).split("/")[0].split(":")[0].rstrip(".")
    return host if _HOST.match(host) else None
