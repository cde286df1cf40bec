"""The house's one rule of structure: apps import downward only (docs/architecture.md).

    console → crawl → indexer → archive → fetch → frontier → crawlerweb → common

An app may import any app below it and none above; nothing imports console. The import
statements are read from the source (function-level imports too), so a lazy import that
hides an upward arrow is caught like any other."""

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.backend_free

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ["common", "crawlerweb", "frontier", "fetch", "archive", "indexer", "crawl", "console"]  # bottom first
ALLOWED_UPWARD: set[tuple[str, str]] = set()  # (file, app) pairs allowed to go up: none


def imported_apps(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & set(LAYERS)


def upward_imports() -> list[tuple[str, str]]:
    wrong = []
    for app in LAYERS:
        for path in sorted((ROOT / app).rglob("*.py")):
            relative = str(path.relative_to(ROOT))
            for other in imported_apps(path):
                if LAYERS.index(other) > LAYERS.index(app) and (relative, other) not in ALLOWED_UPWARD:
                    wrong.append((relative, other))
    return wrong


def test_every_app_imports_only_the_apps_below_it():
    assert upward_imports() == []


def test_crawlerweb_is_configuration_only():
    """Settings, URLs, Celery, WSGI and their own small parts; helpers live in common/."""
    modules = sorted(p.name for p in (ROOT / "crawlerweb").glob("*.py"))
    assert modules == ["__init__.py", "celery.py", "urls.py", "worker_consumer.py", "wsgi.py"]


def test_the_rule_catches_an_upward_import(tmp_path, monkeypatch):
    fake = tmp_path / "fetch"
    fake.mkdir()
    (fake / "sneaky.py").write_text("def f():\n    from crawl import runners\n")
    monkeypatch.setitem(upward_imports.__globals__, "ROOT", tmp_path)
    assert upward_imports() == [("fetch/sneaky.py", "crawl")]
