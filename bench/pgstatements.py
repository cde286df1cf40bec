"""PostgreSQL's cost per page by statement group, from pg_stat_statements.

PostgreSQL is the one part of the crawler that does not scale out, so the bench shows
where its time goes: links (admission: the seen test, new URLs, host counts), documents
(documents and content fingerprints), index (the full-text index), states (URL states
written back, dead letters), leases (hosts leased, renewed, released; a session's URLs),
log (the crawl log's database copy) and other (heartbeats, limits, metrics, beat).

pg_stat_statements measures execution time, not CPU; a group's CPU per page is PostgreSQL's
metered CPU per page (bench.procstat, every backend and the postmaster's reaped children)
apportioned by the group's share of execution time. Planning time is not tracked (the
default), and autovacuum and WAL writing are in the CPU figure but in no statement: the
shares are of the statements' time. The extension must be preloaded
(shared_preload_libraries), which needs a restart: `scripts/services.sh --statements` does
that; without it the bench says so and prints no group table.

The bench's own statements carry the comment BENCH_TAG and are left out.
"""

import re

BENCH_TAG = "/* bench */"
GROUPS = ("links", "documents", "index", "states", "leases", "log", "other")

# First match wins; the query text is pg_stat_statements' normalized text ($1 for values).
# A foreign key's check ("SELECT 1 FROM ONLY <referenced table> x … FOR KEY SHARE OF x")
# belongs to the insert that fires it: a URL's host (links), a document's URL and a
# fingerprint's document (documents).
_RULES = (
    ("links", re.compile(r'FROM ONLY "public"\."frontier_host" x')),
    ("documents", re.compile(r'FROM ONLY "public"\."(frontier_url|indexer_document)" x')),
    ("log", re.compile(r"fetch_crawllogentry")),
    ("index", re.compile(r"indexer_pg_index")),
    ("documents", re.compile(r"indexer_document|indexer_contentfingerprint")),
    # Before leases' UNION ALL: admission's insert answers with one too (what it added, and
    # what was there), and it is a link's cost, not a lease's.
    ("links", re.compile(r"INSERT INTO \"?frontier_url\"?")),
    ("leases", re.compile(r"lease_owner|leased_until|frontier_serveraddress|UNION ALL|"
                          r"FROM \"?frontier_host\"? WHERE \"?frontier_host\"?\.\"?id\"? = ")),
    ("links", re.compile(r"url_key|url_hash|url_count|"
                         r"INSERT INTO \"?frontier_host\"?|frontier_host\"?\.\"?origin\"? (= |IN)|"
                         r"frontier_crawlscope|frontier_seed|frontier_hostreferrer|referrer_bits|frontier_urlpattern")),
    ("states", re.compile(r"UPDATE \"?frontier_url\"?|frontier_deadletter|FROM \"?frontier_url\"?")),
)


def group_of(query: str) -> str | None:
    """The group of a statement; None for the bench's own."""
    if BENCH_TAG in query:
        return None
    for name, pattern in _RULES:
        if pattern.search(query):
            return name
    return "other"


def available(conn) -> bool:
    """Can this database report statements? (Creates the extension when it is preloaded.)"""
    preloaded = conn.execute("SHOW shared_preload_libraries").fetchone()[0]
    if "pg_stat_statements" not in preloaded:
        return False
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    return True


def reset(conn) -> None:
    conn.execute(f"{BENCH_TAG} SELECT pg_stat_statements_reset()")


def read(conn) -> dict[str, dict]:
    """Execution ms and calls by group, for this database's statements since reset()."""
    rows = conn.execute(
        f"""{BENCH_TAG} SELECT s.query, s.calls, s.total_exec_time FROM pg_stat_statements s
            JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database()""").fetchall()
    groups = {name: {"exec_ms": 0.0, "calls": 0, "statements": []} for name in GROUPS}
    for query, calls, exec_ms in rows:
        name = group_of(query)
        if name is None:
            continue
        groups[name]["exec_ms"] += exec_ms
        groups[name]["calls"] += calls
        groups[name]["statements"].append((exec_ms, calls, " ".join(query.split())[:160]))
    for group in groups.values():
        group["statements"] = sorted(group["statements"], reverse=True)[:5]
    return groups


def per_page(groups: dict[str, dict], cpu_seconds: float, pages: int) -> dict[str, dict]:
    """Each group's CPU ms per page (PostgreSQL's CPU apportioned by execution time), calls
    per page and share; plus `total`."""
    total_ms = sum(g["exec_ms"] for g in groups.values()) or 1.0
    pages = max(pages, 1)
    table = {}
    for name, group in groups.items():
        share = group["exec_ms"] / total_ms
        table[name] = {"cpu_ms_per_page": round(1000 * cpu_seconds * share / pages, 3),
                       "calls_per_page": round(group["calls"] / pages, 2), "share": round(share, 3),
                       "top": group["statements"]}
    table["total"] = {"cpu_ms_per_page": round(1000 * cpu_seconds / pages, 3),
                      "calls_per_page": round(sum(g["calls"] for g in groups.values()) / pages, 2), "share": 1.0}
    return table
