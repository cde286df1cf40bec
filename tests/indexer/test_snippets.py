"""What a snippet is cut from (indexer/snippets.py): the content, without furniture or a
repeated title. The backends' side is in tests/indexer/test_search_contract.py."""

import pytest

from indexer.maincontent import decode_spans, encode_spans, without_spans
from indexer.snippets import snippet_source, without_title

PYTHON_TITLE = "os.path — Common pathname manipulations — Python 3.11.2 documentation"


@pytest.mark.parametrize("text, title, expected", [
    ("os.path — Common pathname manipulations¶ Source code: Lib/posixpath.py", PYTHON_TITLE,
     "Source code: Lib/posixpath.py"),
    ("Common pathname manipulations. This module…", PYTHON_TITLE, "This module…"),
    ("Models | Django docs", "Models | Django docs", "Models | Django docs"),  # nothing else: kept
    ("Models A model is the single source of truth.", "Django | Models", "A model is the single source of truth."),
    ("Pages of results are numbered from one.", "Page", "Pages of results are numbered from one."),
    ("LIGHTHOUSES: a guide to the coast", "Lighthouses", "a guide to the coast"),
    ("Some text first. Lighthouses", "Lighthouses", "Some text first. Lighthouses"),
    ("No title here", "", "No title here"),
])
def test_it_drops_a_leading_repetition_of_the_title(text, title, expected):
    assert without_title(text, title) == expected


def test_it_leaves_out_the_furniture_and_keeps_a_page_that_is_all_furniture():
    text = "Home Ships Lights A lighthouse guides ships. © 2026"
    spans = [(0, 18), (44, 51)]
    assert decode_spans(encode_spans(spans)) == spans and encode_spans(spans) == "0-18 44-51"
    assert without_spans(text, spans) == "A lighthouse guides ships."
    assert snippet_source(text, "0-18 44-51", "") == "A lighthouse guides ships."
    assert snippet_source("Home Ships", "0-10", "") == "Home Ships"
    assert snippet_source(text[:10], "0-18 44-51", "") == "Home Ships"  # a prefix cut in the menu: all furniture
    assert snippet_source(text, "garbage 5-x", "") == text  # an unreadable value leaves nothing out
