"""Known-item search evaluation: real documentation sites, their back-of-the-book indexes
as queries, our crawler and search on SQLite and PostgreSQL, and two baselines (tantivy,
bm25s) on the very same extracted text.

    python -m bench.searcheval [--packages ...] [--backend sqlite|postgres|both] [--limit-queries N]

Modules, in the order a run uses them: corpus (Debian doc packages on disk), genindex (the
Sphinx index parsed), queries (index entries -> known-item queries), serve (the sites on
loopback), crawl (our crawler into a fresh database), oursearch (our search, timed, and the
documents exported), baseline_venv + baselines (the baselines in their own virtualenv),
metrics (MRR and the rest), report (the table and results.json).
"""
