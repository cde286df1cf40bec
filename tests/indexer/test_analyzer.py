"""The analyzer's tokens, table-driven; the query parser; the PostgreSQL tf inversion."""

import pytest
from django.db import connection
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from indexer import analyzer
from indexer.analyzer import tokens
from indexer.backends.postgres import tf_from_rank
from indexer.query import Term, parse, site_tokens
from indexer.ranking import url_words


@pytest.mark.parametrize("text, expected", [
    ("Databases", ["databas"]),
    ("crawling crawlers", ["crawl", "crawler"]),
    ("os.path.join", ["os.path.join", "os.path", "path.join", "os", "path", "join"]),
    ("os.path.join(path)", ["os.path.join", "os.path", "path.join", "os", "path", "join", "path"]),
    ("current_database()", ["current_database", "current", "databas"]),
    ("PL/Perl", ["pl/perl", "pl", "perl"]),
    ("pg_dump", ["pg_dump", "pg", "dump"]),
    ("--help-env", ["--help-env", "help-env", "help", "env"]),
    ("-v", ["-v", "v"]),
    ("__setitem__", ["__setitem__", "setitem"]),
    ("zipfile.Path.read_text()", ["zipfile.path.read_text", "zipfile.path", "path.read_text", "zipfil", "path",
                                  "read_text", "read", "text"]),
    ("celery.exceptions.BackendError", ["celery.exceptions.backenderror", "celery.exceptions", "exceptions.backenderror",
                                        "celeri", "except", "backenderror", "backend", "error"]),
    ("a.b.c.d.e.f.g", ["a.b.c.d.e.f.g", "a.b.c.d.e.f", "b.c.d.e.f.g", "a.b.c.d.e", "c.d.e.f.g", "a.b.c.d", "d.e.f.g",
                       "a.b.c", "e.f.g", "a.b", "f.g", "a", "b", "c", "d", "e", "f", "g"]),  # > 6 segments: ends only
    ("QuerySet", ["queryset", "queri", "set"]),
    ("HTTPResponse", ["httprespons", "http", "respons"]),
    ("std::vector", ["std::vector", "std", "vector"]),
    ("well-known", ["well-known", "well", "known"]),
    ("a - b", ["a", "b"]),
    ("version 3.14.", ["version", "3.14", "3", "14"]),
    ("End of sentence.", ["end", "of", "sentenc"]),
    ("café Ünïcode 東京", ["café", "ünïcode", "東京"]),
    ("<script>alert(1)</script>", ["script", "alert", "1", "script"]),
    ("x" * 65, []),  # junk runs are not tokens
    ("a_" + "b" * 70, ["a"]),  # an over-long whole: its parts only, minus the over-long one
])
def test_tokens(text, expected):
    assert tokens(text) == expected
    assert analyzer.tokens_by_regex(text) == expected


# Text made of the characters the analyzer treats specially: word characters of several
# scripts, every connector, dashes, underscores, digits and every kind of whitespace
# str.split() splits on (NBSP, U+2028, the ASCII separators \x1c-\x1f...).
_TRICKY = st.lists(st.sampled_from(list("aZé東9_-./:() ,'\"") + [" ", "\t", "\n", "\xa0", "\u2028", "\x1c", "\x1f",
                                                                "\u3000", "\x85", "--", "::", "Ab", "xY"]),
                   max_size=60).map("".join)


@hypothesis_settings(max_examples=400, deadline=None)
@given(_TRICKY)
def test_it_tokenizes_by_chunks_exactly_as_the_regex_does(text):
    assert tokens(text) == analyzer.tokens_by_regex(text)


def test_it_keeps_tokenizing_when_the_chunk_cache_is_full(monkeypatch):
    monkeypatch.setattr(analyzer, "CHUNK_CACHE_SIZE", 3)
    monkeypatch.setattr(analyzer, "_chunk_caches", {})
    text = "one two three four five os.path.join six"
    assert [tokens(text) for _ in range(3)] == [analyzer.tokens_by_regex(text)] * 3
    assert len(analyzer._chunk_caches["en"]) <= 3


@pytest.mark.parametrize("raw, terms, phrases, sites", [
    ("os.path.join", [("os.path.join", ("os.path", "path.join", "os", "path", "join"))], [], []),
    ("the zen of python", [(None, ("zen",)), (None, ("python",))], [], []),
    ("the who", [(None, ("the",)), (None, ("who",))], [], []),  # only stopwords: keep them
    ('"quick brown" fox', [(None, ("fox",))], [["quick", "brown"]], []),
    ('"single"', [(None, ("singl",))], [], []),
    ("site:Docs.Example.org/path x", [(None, ("x",))], [], ["docs.example.org"]),
    ("site:not_a_host x", [("not_a_host", ("not", "a", "host")), (None, ("x",))], [], []),  # searched as text
    ("AND OR ( * ) | ! &", [(None, ("and",)), (None, ("or",))], [], []),
    ("\x00nul\x00", [(None, ("nul",))], [], []),
])
def test_parse(raw, terms, phrases, sites, settings):
    query = parse(raw)
    assert [(t.whole, t.parts) for t in query.terms] == terms
    assert query.phrases == phrases and query.sites == sites


def test_parse_cuts_long_queries_and_says_so(settings):
    settings.CRAWLER_SEARCH_MAX_QUERY_CHARS = 500
    query = parse("word " * 5000)
    assert query.truncated and len(query.text) <= 500 and query.terms == [Term(None, ("word",))]
    many = parse(" ".join(f"w{i}" for i in range(100)))
    assert many.truncated and len(many.terms) == 32


def test_identifier_parts_are_scored_at_part_weight(settings):
    settings.CRAWLER_SEARCH_PART_WEIGHT = 0.25
    scored = dict(parse("os.path.join os").scored_terms)
    assert scored[Term("os.path.join", ("os.path", "path.join", "os", "path", "join"))] == 1.0
    assert scored[Term(None, ("os.path",))] == 0.25
    assert scored[Term(None, ("os",))] == 1.0  # typed on its own: full weight
    assert scored[Term(None, ("path",))] == 0.25


def test_site_tokens_and_url_words():
    assert site_tokens("Docs.Example.org") == ["site=docs.example.org", "site=example.org"]
    assert site_tokens("localhost") == ["site=localhost"]
    assert url_words("http://h.test/ref/models/querysets.html?x=1#y") == "ref models querysets"


@pytest.mark.postgres
@pytest.mark.django_db
@pytest.mark.parametrize("before", [0, 1, 3, 40])
def test_tf_from_rank_inverts_postgres_ts_rank(before):
    """tf per field comes back from ts_rank exactly, up to PostgreSQL's 256 positions."""
    with connection.cursor() as cur:
        for tf in (1, 2, 3, 7, 30, 200):
            positions = [f"{i + 1}A" for i in range(before)] + [f"{before + i + 1}C" for i in range(tf)]
            cur.execute("SELECT ts_rank('{0,1,0,0}', %s::tsvector, 'w'::tsquery, 0)",
                        [f"'w':{','.join(positions[:256])}"])
            assert tf_from_rank(cur.fetchone()[0], before) == min(tf, 256 - before)


@pytest.mark.postgres
@pytest.mark.django_db
def test_it_sends_postgres_the_same_tsvector_in_binary_as_in_text():
    """The binary tsvector the worker sends equals the text syntax's, lexeme for lexeme and
    position for position: quotes and backslashes in tokens, the 256-position cap per
    lexeme, the last position (16,383) shared past PostgreSQL's limit, lexemes without
    positions (sites), a field left empty."""
    from indexer.backends.postgres import tsvector_binary, tsvector_literal
    from indexer.fields import IndexedFields

    long_body = [f"w{i % 700}" for i in range(20_000)] + ["late"]  # past position 16,383
    cases = [
        IndexedFields(["it's", "a\\b"], ["ref"], ["o'neil"], ["x"] * 300 + ["y"], ["site=a.test", "site=test"]),
        IndexedFields([], [], [], long_body, ["site=b.test"]),
        IndexedFields(["only", "title"], [], [], [], []),
    ]
    with connection.cursor() as cur:
        for fields in cases:
            cur.execute("SELECT (%s::tsvector)::text, %s::tsvector::text",
                        [tsvector_binary(fields), tsvector_literal(fields)])
            binary, text = cur.fetchone()
            assert binary == text
            assert len(binary) > 10
