"""The evaluation's output: one markdown table of the systems, MRR per query kind, and the
whole result as JSON (var/searcheval/results.json)."""
from __future__ import annotations

import json
from pathlib import Path

from .metrics import Metrics
from .queries import KINDS

MAX_INDEX_CHARS = 200_000  # CRAWLER_MAX_INDEX_CHARS's default: a body this long was cut


def _number(value, digits=3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def table(rows: dict[str, Metrics]) -> str:
    """system -> metrics, as a markdown table."""
    lines = ["| system | MRR@10 | success@1 | success@10 | queries with no result | latency median / p95 ms |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, m in rows.items():
        lines.append(f"| {name} | {_number(m.mrr)} | {_number(m.success_at_1)} | {_number(m.success_at_10)} | "
                     f"{m.no_result} | {_number(m.latency_ms_median, 1)} / {_number(m.latency_ms_p95, 1)} |")
    return "\n".join(lines)


def kind_table(rows: dict[str, Metrics]) -> str:
    """MRR@10 per query kind (the number of queries of each kind in the header)."""
    counts = {}
    for m in rows.values():
        for kind, value in m.mrr_by_kind.items():
            counts[kind] = value["queries"]
    kinds = [k for k in KINDS if k in counts] + sorted(k for k in counts if k not in KINDS)
    lines = ["| system | " + " | ".join(f"{k} ({counts[k]})" for k in kinds) + " |",
             "| --- |" + " ---: |" * len(kinds)]
    for name, m in rows.items():
        cells = [_number(m.mrr_by_kind.get(k, {}).get("mrr")) for k in kinds]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render(headline: str, command: str, rows: dict[str, Metrics], cover: dict, overrides: dict,
           baselines: dict, timings: dict) -> str:
    """The printed report: headline, command, the table, MRR by kind, coverage per backend,
    the crawl overrides, the baselines' setups and the timings."""
    parts = [headline, f"Command: {command}", "", table(rows), "", "MRR@10 by query kind (queries of each kind):", "",
             kind_table(rows), ""]
    for backend, c in cover.items():
        seen = ", ".join(f"{k} {v}" for k, v in sorted(c["by_outcome"].items()))
        parts.append(f"Coverage ({backend}): " + ", ".join(f"{name} {v['indexed']}/{v['pages_on_disk']}"
                                                         for name, v in c["sites"].items())
                     + f" indexed/on disk; {c['urls_fetched']} URLs fetched ({seen}); "
                     f"{c['bodies_cut_at_index_cap']} bodies cut at {MAX_INDEX_CHARS} characters.")
    parts.append(f"Crawl overrides: {' '.join(f'{k}={v}' for k, v in overrides.items())} (everything else "
                 "default); scope host, one site per 127.0.9.x address.")
    parts += list(baselines.values())
    parts.append("Timings (s): " + ", ".join(f"{k.removesuffix('_seconds')} {v}" for k, v in timings.items()))
    return "\n".join(parts)


def write_json(path: Path, result: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1, default=str) + "\n")
