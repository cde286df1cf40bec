"""Run the baselines (bench/searcheval/baselines.py) in their own virtualenv.

var/searcheval-venv is made on first use and holds only bench/searcheval-requirements.txt
(bm25s, tantivy, PyStemmer, pinned), installed by the helper the Scrapy peer uses
(bench/scrapy_peer.ensure_venv: a marker file with the requirements' hash, so it installs
once). Neither project's dependencies touch the other's, and the script runs with none of
our PYTHONPATH or Django settings.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from ..scrapy_peer import ensure_venv

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / "var" / "searcheval-venv"
REQUIREMENTS = ROOT / "bench" / "searcheval-requirements.txt"
SCRIPT = Path(__file__).resolve().parent / "baselines.py"


def run_baselines(docs: Path, queries: list[str], workdir: Path, systems=("tantivy", "bm25s"),
                  timeout: float = 3600.0) -> dict:
    """{system: {"urls", "seconds", "index_seconds", "setup"}} for these query strings over
    the exported documents."""
    python = ensure_venv(VENV, REQUIREMENTS)
    query_file, out = workdir / "baseline-queries.json", workdir / "baseline-rankings.json"
    query_file.write_text(json.dumps(queries))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}
    log = workdir / "baselines.log"
    with open(log, "w") as stderr:
        status = subprocess.run([str(python), str(SCRIPT), "--docs", str(docs), "--queries", str(query_file),
                                 "--out", str(out), "--systems", ",".join(systems)],
                                cwd=workdir, env=env, stderr=stderr, timeout=timeout).returncode
    if status != 0:
        raise RuntimeError(f"the baselines exited with status {status}; see {log}")
    return json.loads(out.read_text())
