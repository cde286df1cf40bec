"""PostgreSQL full text: the worker builds each document's weighted tsvector from the
analyzer's tokens and sends it as a literal; the query becomes a tsquery the same way.
PostgreSQL parses neither text nor query (to_tsvector was 4.5 ms of its 5.8 ms per page),
so identifiers, `<script>` in a page's text and the english configuration cannot disagree
with the query. GIN-indexed; no foreign key to indexer_document (Django's flush must be able
to TRUNCATE that table; delete() runs from a pre_delete signal and search joins documents).

key_vector holds the title, URL and headings tokens only: the small vector the candidate
pre-order reads. Positions run title (weight A), URL path words (D), headings (B), body (C), so a lexeme's
positions list its fields in that order. PostgreSQL keeps at most 256 positions per lexeme
and positions up to 16383; later ones share the last position (phrases deep in a very long
page can miss; identifiers are single tokens and do not need positions).

Ranking: the long group's term frequencies come from ts_rank with one field's weight set:
for a one-lexeme query it is 1 + Σ 1/(i+1)² over that field's positions i (ordinal among
the lexeme's positions), which is inverted back to a count (tf_from_rank).
"""

import bisect
import contextlib
from collections import Counter

import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format

from django.conf import settings
from django.db import connections, transaction

from common import stagetime

from .. import ranking
from ..fields import IndexedFields, index_fields
from ..query import Query, Term, analysis_token, language_token, site_token
from .base import Candidate, SearchBackend

CREATE_SQL = [
    """CREATE TABLE IF NOT EXISTS indexer_pg_index (
        document_id bigint PRIMARY KEY,
        vector tsvector NOT NULL,
        key_vector tsvector NOT NULL DEFAULT '',
        title_len integer NOT NULL DEFAULT 0,
        url_len integer NOT NULL DEFAULT 0,
        long_len integer NOT NULL DEFAULT 0)""",
    "CREATE INDEX IF NOT EXISTS indexer_pg_index_vector ON indexer_pg_index USING GIN (vector)",
]
DROP_SQL = ["DROP TABLE IF EXISTS indexer_pg_index"]

MAX_POSITION = 16383  # PostgreSQL's limits on tsvector positions
MAX_POSITIONS = 256
# ts_rank's weight array is {D, C, B, A}: url, body, headings, title.
HEADINGS_ONLY, BODY_ONLY = "{0,0,1,0}", "{0,1,0,0}"
BASEL = 1.64493406685  # ts_rank divides by π²/6
# _CUMULATIVE[k] = Σ_{i=1..k} 1/(i+1)²: the rank of positions after a field's first.
_CUMULATIVE = [0.0]
for _i in range(1, 2 * MAX_POSITIONS + 2):
    _CUMULATIVE.append(_CUMULATIVE[-1] + 1 / (_i + 1) ** 2)


def _lexeme(token: str) -> str:
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


# "12A"-style position labels, made once: formatting them per token was most of the cost.
_LABELS = {weight: [f"{p}{weight}" for p in range(MAX_POSITION + 1)] for weight in "ABCD"}


def _positions(fields, labels_by_weight: dict) -> dict[str, list]:
    """token -> the labels of its positions (labels_by_weight[weight][position]), in order:
    title (A), URL words (D), headings (B), body (C), a gap between fields so that no phrase
    spans two; past MAX_POSITION every later token shares the last position once
    (PostgreSQL's limit). A token may have more than MAX_POSITIONS labels here: callers
    keep the first MAX_POSITIONS. Sites get no position."""
    positions: dict[str, list] = {}
    get = positions.get
    at_last_position = set()  # tokens already given the last position (PostgreSQL's cap)
    position = 0
    for stream, weight in ((fields.title, "A"), (fields.url, "D"), (fields.headings, "B"), (fields.body, "C")):
        labels = labels_by_weight[weight]
        start = position + 2  # a gap: no phrase spans two fields
        end = start + len(stream)
        if end <= MAX_POSITION:  # the usual case: one label per token, no checks
            for token, label in zip(stream, labels[start:end]):
                kept = get(token)
                if kept is None:
                    positions[token] = [label]
                else:
                    kept.append(label)
            position = end - 1
            continue
        position += 1
        for token in stream:
            position += 1
            if position >= MAX_POSITION:
                if token in at_last_position:
                    continue
                at_last_position.add(token)
                label = labels[MAX_POSITION]
            else:
                label = labels[position]
            kept = get(token)
            if kept is None:
                positions[token] = [label]
            else:
                kept.append(label)
    return positions


def tsvector_literal(fields) -> str:
    """The tsvector of an IndexedFields, as PostgreSQL's input syntax."""
    parts = [f"{_lexeme(t)}:{','.join(ps[:MAX_POSITIONS])}" for t, ps in _positions(fields, _LABELS).items()]
    parts.extend(_lexeme(s) for s in fields.sites)
    return " ".join(parts)


# The same tsvector in PostgreSQL's binary wire format (tsvectorsend/tsvectorrecv): an int32
# lexeme count, then per lexeme its UTF-8 bytes, a NUL, a uint16 position count and the
# positions as uint16 (weight in the top two bits: A=3, B=2, C=1, D=0). PostgreSQL takes
# it for a third of the CPU of the text syntax (no quoting, no escapes, no label parsing:
# 0.35 against 0.9 ms per page; docs/benchmarks.md), and it is quicker to build here too.
_WEIGHT_CODES = {"A": 3, "B": 2, "C": 1, "D": 0}
_BINARY_LABELS = {weight: [(p | code << 14).to_bytes(2, "big") for p in range(MAX_POSITION + 1)]
                  for weight, code in _WEIGHT_CODES.items()}
_BINARY_COUNTS = [n.to_bytes(2, "big") for n in range(MAX_POSITIONS + 1)]
_binary_lexemes: dict[str, bytes] = {}  # token -> its UTF-8 and the NUL (bounded below)


class TSVector(bytes):
    """A tsvector in the binary format: psycopg sends it as such (TSVectorDumper)."""


class TSVectorDumper(Dumper):
    format = Format.BINARY
    oid = 3614  # tsvector's built-in type oid

    def dump(self, obj):
        return obj


def register_binary_tsvector() -> None:
    """Teach psycopg to send TSVector values as binary tsvectors (every connection made
    after this; IndexerConfig.ready calls it)."""
    psycopg.adapters.register_dumper(TSVector, TSVectorDumper)


def tsvector_binary(fields) -> TSVector:
    """tsvector_literal(fields), in the binary format."""
    global _binary_lexemes
    positions = _positions(fields, _BINARY_LABELS)
    for site in fields.sites:
        positions.setdefault(site, [])
    lexemes = _binary_lexemes
    if len(lexemes) > 200_000:
        lexemes = _binary_lexemes = {}
    out = [len(positions).to_bytes(4, "big")]
    extend = out.extend
    for token, labels in positions.items():
        encoded = lexemes.get(token)
        if encoded is None:
            encoded = lexemes[token] = token.encode("utf-8") + b"\0"
        if len(labels) > MAX_POSITIONS:
            labels = labels[:MAX_POSITIONS]
        extend((encoded, _BINARY_COUNTS[len(labels)], b"".join(labels)))
    return TSVector(b"".join(out))


def _any_of(expressions: list[str]) -> str:
    return expressions[0] if len(expressions) == 1 else "(" + " | ".join(expressions) + ")"


def _conditioned(expression: str, analyses: tuple[str, ...]) -> str:
    """expression, matched only in pages of these analyses (all pages: none given)."""
    if not analyses:
        return expression
    return f"({expression} & {_any_of([_lexeme(analysis_token(a)) for a in analyses])})"


def term_tsquery(term: Term) -> str:
    return _any_of([_conditioned(_lexeme(token), analyses) for token, analyses in term.conditioned])


def phrase_tsquery(streams) -> str:
    return _any_of([_conditioned("(" + " <-> ".join(_lexeme(t) for t in stream) + ")", analyses)
                    for stream, analyses in streams])


def query_tsquery(query: Query, any_word: bool) -> str:
    required = [term_tsquery(t) for t in query.terms]
    required += [phrase_tsquery(p) for p in (query.phrase_alternatives or [[(p, ())] for p in query.phrases])]
    parts = [("(" + " | ".join(required) + ")" if any_word else " & ".join(required))] if required else []
    if query.sites:
        parts.append("(" + " | ".join(_lexeme(site_token(s)) for s in query.sites) + ")")
    if query.languages:
        parts.append("(" + " | ".join(_lexeme(language_token(lang)) for lang in query.languages) + ")")
    return " & ".join(parts)


def tf_from_rank(rank: float, before: int) -> int:
    """Invert ts_rank for one lexeme and one field: the field's occurrence count, given how
    many positions of the lexeme come before the field (in earlier fields)."""
    if rank <= 0:
        return 0
    extra = rank * BASEL - 1 + _CUMULATIVE[min(before, len(_CUMULATIVE) - 1)]
    return max(1, bisect.bisect_left(_CUMULATIVE, extra - 1e-6) - before + 1)


@stagetime.timed("analysis")
def prepare_row(document) -> tuple:
    """(vector, key_vector, title_len, url_len, long_len) of a document: what the worker
    sends for it, the vectors in the binary format."""
    f = index_fields(document)
    key = IndexedFields(f.title, f.url, f.headings, [], [])
    return tsvector_binary(f), tsvector_binary(key), len(f.title), len(f.url), f.long_length


def index_rows(documents) -> list[tuple]:
    """(document_id, vector, key_vector, title_len, url_len, long_len) per document:
    bench.run and bench.index_cost measure PostgreSQL's cost of taking them."""
    return [(doc.id, *prepare_row(doc)) for doc in documents]


class PostgresSearchBackend(SearchBackend):
    @contextlib.contextmanager
    def reading(self):
        # The planner does not cost detoasting: a table of large (TOASTed) vectors looks
        # small, so it scans and decompresses every vector (25 ms at 2,000 pages) instead of
        # asking the GIN index (0.1 ms). Inside the search's own transaction only.
        with transaction.atomic(using=self.using):
            with connections[self.using].cursor() as cur:
                cur.execute("SET LOCAL enable_seqscan = off")
            yield

    def prepare(self, document):
        return prepare_row(document)

    def add_prepared(self, rows):
        """The batch in one pipeline (psycopg's executemany: one round trip); the GIN index
        takes it into its pending list (fastupdate) and merges it in bulk later."""
        if not rows:
            return
        rows = sorted((document_id, *row) for document_id, row in rows)
        with connections[self.using].cursor() as cur:
            cur.executemany(
                """INSERT INTO indexer_pg_index (document_id, vector, key_vector, title_len, url_len, long_len)
                   VALUES (%s, %s, %s, %s, %s, %s)
                   ON CONFLICT (document_id) DO UPDATE SET vector = EXCLUDED.vector, key_vector = EXCLUDED.key_vector,
                       title_len = EXCLUDED.title_len, url_len = EXCLUDED.url_len, long_len = EXCLUDED.long_len""",
                rows,
            )
        self.forget_corpus_stats()

    def delete(self, document_ids):
        with connections[self.using].cursor() as cur:
            cur.execute("DELETE FROM indexer_pg_index WHERE document_id = ANY(%s)", [list(document_ids)])
        self.forget_corpus_stats()

    def clear(self):
        with connections[self.using].cursor() as cur:
            cur.execute("TRUNCATE indexer_pg_index")
        self.forget_corpus_stats()

    def _count(self, tsquery: str, cap: int) -> int:
        with connections[self.using].cursor() as cur:
            cur.execute("SELECT count(*) FROM (SELECT 1 FROM indexer_pg_index WHERE vector @@ %s::tsquery LIMIT %s) s",
                        [tsquery, cap])
            return cur.fetchone()[0]

    def count(self, query, any_word, cap):
        return self._count(query_tsquery(query, any_word), cap)

    def document_frequencies(self, terms, cap):
        if not terms:
            return []
        counts = ", ".join(
            "(SELECT count(*) FROM (SELECT 1 FROM indexer_pg_index WHERE vector @@ %s::tsquery LIMIT %s) s)"
            for _ in terms)
        with connections[self.using].cursor() as cur:  # one round trip for every term
            cur.execute(f"SELECT {counts}", [value for t in terms for value in (term_tsquery(t), cap)])
            return list(cur.fetchone())

    def matching(self, query, document_ids):
        if not document_ids:
            return set()
        with connections[self.using].cursor() as cur:
            cur.execute("SELECT document_id FROM indexer_pg_index WHERE document_id = ANY(%s) AND vector @@ %s::tsquery",
                        [list(document_ids), query_tsquery(query, False)])
            return {row[0] for row in cur.fetchall()}

    def candidates(self, query, any_word, limit, exhaustive, terms, idfs, stats, weights):
        # Each term's tokens ranked one lexeme at a time (tf_from_rank inverts a one-lexeme
        # ts_rank): a page counts only the tokens its own analysis makes of the word.
        ranked = [(i, token, analyses) for i, term in enumerate(terms) for token, analyses in term.conditioned]
        rank_columns = "".join(
            f", ts_rank('{HEADINGS_ONLY}', top.vector, %s::tsquery, 0), ts_rank('{BODY_ONLY}', top.vector, %s::tsquery, 0)"
            for _ in ranked)
        params = [query_tsquery(query, any_word), max(limit, settings.CRAWLER_SEARCH_CANDIDATES * 5), limit]
        for _, token, _ in ranked:
            params += [_lexeme(token), _lexeme(token)]
        # A bounded candidate set: at most CRAWLER_SEARCH_CANDIDATES * 5 matches from the GIN
        # index, cut to `limit` by ts_rank over key_vector (title, URL and headings only: small,
        # so cheap to read; shorter pages first among equals) before the exact formula; when
        # every match fits, no pre-order. Decompressing a full vector (~50 µs at 11 KB) is most
        # of the cost of ranking a candidate.
        order = ("" if exhaustive else
                 "ORDER BY ts_rank('{0.3,0,0.6,1.0}', m.key_vector, q.query) DESC, m.long_len, m.document_id")
        with connections[self.using].cursor() as cur:
            cur.execute(
                f"""WITH q AS (SELECT %s::tsquery AS query),
                    matches AS (SELECT i.document_id, i.vector, i.key_vector, i.long_len FROM indexer_pg_index i, q
                                WHERE i.vector @@ q.query LIMIT %s),
                    top AS (SELECT m.* FROM matches m, q {order} LIMIT %s)
                    SELECT top.document_id, d.address, d.title, d.fetched_at, top.long_len, d.language {rank_columns}
                    FROM top JOIN indexer_document d ON d.id = top.document_id""",
                params,
            )
            rows = cur.fetchall()
        found = []
        for row in rows:
            fields = ranking.ShortFields.of(row[2], row[1], row[5])
            counts = Counter(fields.title) + Counter(fields.url)
            tf_headings, tf_body = [0] * len(terms), [0] * len(terms)
            for column, (i, token, analyses) in enumerate(ranked):
                if analyses and fields.analysis not in analyses:
                    continue  # another language's stem of the word: not this page's
                headings = tf_from_rank(row[6 + 2 * column], counts[token])
                tf_headings[i] += headings
                tf_body[i] += tf_from_rank(row[7 + 2 * column], counts[token] + headings)
            long = ranking.long_score(tf_headings, tf_body, row[4], idfs, stats, weights)
            found.append(Candidate(row[0], row[1], row[2], row[3], long, language=row[5]))
        return found

    def listed(self, query, limit, offset):
        # COLLATE "C": byte order, as SQLite's, so both backends list a site alike.
        with connections[self.using].cursor() as cur:
            cur.execute(
                """SELECT d.id, d.address, d.title, d.fetched_at
                   FROM indexer_pg_index i JOIN indexer_document d ON d.id = i.document_id
                   WHERE i.vector @@ %s::tsquery ORDER BY d.address COLLATE "C", d.id LIMIT %s OFFSET %s""",
                [query_tsquery(query, False), limit, offset])
            return [Candidate(r[0], r[1], r[2], r[3], 0.0) for r in cur.fetchall()]

    def snippet_sources(self, document_ids, chars):
        with connections[self.using].cursor() as cur:
            cur.execute("SELECT id, substr(body, 1, %s), boilerplate FROM indexer_document WHERE id = ANY(%s)",
                        [chars, list(document_ids)])
            return {document_id: (prefix, boilerplate or "") for document_id, prefix, boilerplate in cur.fetchall()}

    def read_corpus_stats(self):
        with connections[self.using].cursor() as cur:
            cur.execute("SELECT count(*), avg(title_len), avg(url_len), avg(long_len) FROM indexer_pg_index")
            n, title, url, long = cur.fetchone()
        return ranking.CorpusStats(n or 0, float(title or 0), float(url or 0), float(long or 0))

