"""The document's language (indexer/language.py) and the analysis in it (indexer/analyzer.py,
indexer/query.py): no database. The pages are real text: Debian's translations
(tests/data/multilingual_pages.json says where each comes from)."""

import json
from pathlib import Path

import pytest

from indexer import analyzer
from indexer.analyzer import tokens
from indexer.language import identify, primary_subtag
from indexer.parse import parse_html
from indexer.query import parse

pytestmark = pytest.mark.backend_free
PAGES = json.loads((Path(__file__).parent / "data" / "multilingual_pages.json").read_text("utf-8"))


@pytest.mark.parametrize("page", PAGES, ids=[f"{p['language']}-{i}" for i, p in enumerate(PAGES)])
def test_it_identifies_the_language_of_real_pages(page):
    assert identify(page["text"]) == page["language"]


def test_it_takes_the_declaration_when_the_text_says_too_little():
    assert identify("Hallo", declared="de-AT") == "de"
    assert identify("OK", content_language="fr-CA, en") == "fr"
    assert identify("", declared="ja") == "ja"


def test_it_overrules_a_template_s_lang_attribute_when_the_text_is_clearly_another_language():
    german = ("Dies ist ein langer deutscher Text über Rechner und freie Software, die jeder benutzen, "
              "verändern und weitergeben darf, solange er die Bedingungen der Lizenz einhält.")
    assert identify(german, declared="en") == "de"


def test_it_reads_text_with_control_characters_and_says_nothing_for_no_language():
    assert identify("Bonjour\x07 tout le monde, comment allez-vous aujourd'hui ?\x00") == "fr"
    assert identify("12345 67890 ---- ////") == ""


def test_primary_subtags():
    assert [primary_subtag(t) for t in ("de-AT", "zh_TW", "iw", "EN", "x-klingon", "English", "")] == \
        ["de", "zh", "he", "en", "", "", ""]


def test_it_reads_html_lang_as_the_declaration():
    page = parse_html('<html lang="pt-BR"><title>T</title><body><p>Olá</p></body></html>'.encode(), "http://h.test/")
    assert page.declared_language == "pt-BR"


def test_it_cuts_cjk_and_thai_runs_into_overlapping_bigrams():
    assert tokens("東京都庁") == ["東京", "京都", "都庁"]
    assert tokens("Linux用のカーネル") == ["linux", "用の", "のカ", "カー", "ーネ", "ネル"]
    assert tokens("한국어 문서") == ["한국", "국어", "문서"]
    # Thai vowels and tone marks are no \w: the run is still one run
    assert tokens("นี่คือ") == ["นี", "ี่", "่ค", "คื", "ือ"]
    assert tokens("字") == ["字"]


def test_it_stems_in_the_page_s_language_and_lower_cases_where_no_stemmer_exists():
    assert tokens("Häuser Installationen", "de") == ["haus", "installation"]
    assert tokens("Databases", "en") == ["databas"]
    assert tokens("Шалом Компьютеры", "he") == ["шалом", "компьютеры"]  # no Hebrew stemmer: words as written
    assert tokens("компьютеры", "ru") == ["компьютер"]
    assert tokens("Databases", "") == ["databas"]  # not identified: English, as every page was before
    # some stemmers stem a word to nothing (PostgreSQL refuses an empty lexeme): the word stays
    assert tokens("όταν", "el") == ["όταν"] and tokens("ları", "tr") == ["ları"]


def test_a_query_word_matches_by_the_stem_of_every_language_of_the_index_in_that_language_s_pages():
    term = parse("Installationen", ("en", "de", "fr")).terms[0]
    assert dict(term.conditioned) == {"installationen": ("en", "fr"), "installation": ("de",)}
    assert term.matching_in("de") == ("installation",)
    assert parse("Installationen").terms[0].conditioned == [("installationen", ())]  # English only: no condition
    assert parse("zeppelin", ("en", "de")).terms[0].conditioned == [("zeppelin", ())]  # one token for all


def test_a_query_s_cjk_run_is_the_phrase_of_its_bigrams():
    query = parse("東京都 Linux", ("en", analyzer.NO_STEMMER))
    assert query.phrases == [["東京", "京都"]]
    assert [t.token for t in query.terms] == ["linux"]
    assert parse("京都").terms[0].token == "京都"  # two characters: one bigram, a plain term


def test_lang_filter_is_parsed_and_alone_lists_pages():
    query = parse("lang:JA 東京")
    assert query.languages == ["ja"] and not query.empty
    assert parse("lang:de").lists_sites
    assert parse("lang:toolong x").languages == []
    assert parse("lang:zh-TW 東京").languages == ["zh"]


def test_stopwords_of_any_index_language_are_dropped_from_queries():
    assert [t.token for t in parse("der Hund", ("en", "de")).terms] == ["hund"]
    assert [t.token for t in parse("der Hund", ("en",)).terms] == ["der", "hund"]


def test_snippets_highlight_the_characters_of_matched_bigrams_near_them():
    from indexer.backends.base import MARK_END, MARK_START
    from indexer.snippets import make_snippet

    query = parse("東京都")
    text = "これは長い前置きの文章です。" * 40 + "私は東京都に住んでいます。"
    snippet = make_snippet(text, query.highlight_tokens, query.text, 2000)
    assert f"私は{MARK_START}東{MARK_END}{MARK_START}京{MARK_END}{MARK_START}都{MARK_END}に" in snippet
    assert len(snippet) < 320  # a window around the match, not the text from its start


def test_the_detector_reads_past_a_long_page_s_menu():
    from indexer.language import content_sample

    menu = "orm engine sql mysql sqlite mssql oracle misc 0.7.4 " * 40  # a changelog's menu, ~2,000 chars
    prose = ("The session now flushes pending objects before a query runs, and the connection pool "
             "recycles connections that the database closed while they were idle. ") * 40
    sample = content_sample("Changelog", menu + prose)
    assert len(sample) <= 1100 and "flushes" in sample
    assert identify(sample) == "en"
    assert content_sample("T", "abcdefghij", [(2, 4), (6, 8)], 100) == "T. ab ef ij"
    assert content_sample("T", "all furniture", [(0, 13)]) == "T. all furniture"


def test_a_long_cjk_query_is_one_phrase_and_weighs_a_bounded_number_of_bigrams():
    query = parse("東京都庁" * 40)
    assert len(query.phrases) == 1 and len(query.phrases[0]) == 159
    assert len(query.typed_terms) <= 32
