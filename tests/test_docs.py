"""The documentation as a map that holds: README.md stays a short map, every link in it and
in docs/ leads somewhere that exists (a file, and a heading for an anchor), and
docs/settings.md documents exactly the CRAWLER_* settings the settings module reads."""

import importlib
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.backend_free

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]+\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation out, spaces to hyphens."""
    heading = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", heading).replace(" ", "-")


def anchors_of(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {anchor(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def links_of(page: Path) -> list[str]:
    return LINK.findall(FENCE.sub("", page.read_text()))


def test_the_readme_is_a_map_not_the_reference():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_leads_to_a_file_and_a_heading_that_exist(page):
    broken = []
    for target in links_of(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # http:, https:, mailto: — not ours to check offline
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif fragment and file.suffix == ".md" and fragment not in anchors_of(file):
            broken.append(target)
    assert broken == []


def documented_settings() -> set[str]:
    text = (ROOT / "docs" / "settings.md").read_text()
    rows = [line.split("|")[1] for line in text.splitlines() if line.startswith("| `")]
    return {name for cell in rows for name in re.findall(r"`(CRAWLER_\w+)`", cell)}


def test_every_crawler_setting_is_documented_once_and_nothing_else():
    module = importlib.import_module("crawlerweb.settings")  # what it reads, not what a test overrode
    defined = {name for name in vars(module) if name.startswith("CRAWLER_")}
    # Derived from others, documented with them: the refused endpoints, the two score bands.
    computed = {"CRAWLER_OWN_SERVICES", "CRAWLER_SCORE_BANDS"}
    assert sorted(defined - computed - documented_settings()) == [], "settings docs/settings.md does not list"
    sources = "".join(path.read_text() for path in Path(module.__file__).parent.glob("*.py"))
    read = set(re.findall(r"[\"'](CRAWLER_\w+)[\"']", sources))  # read from the environment, not kept
    assert sorted(documented_settings() - defined - read) == [], "docs/settings.md lists settings that do not exist"
