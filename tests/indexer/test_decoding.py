"""Decoding as browsers decode (indexer/decoding.py, indexer/encodings.py; issue 53): the
order of the rules, the WHATWG label table, the meta prescan, and bad input bounded."""

import pytest

from indexer import decoding, encodings
from indexer.decoding import BOM, DEFAULT, DETECTED, HTTP, META, XML, choose, decode
from indexer.parse import parse_html

pytestmark = pytest.mark.backend_free

RUSSIAN = ("Москва - столица России, город федерального значения, административный центр Центрального "
           "федерального округа и центр Московской области, в состав которой не входит. ") * 3
JAPANESE = ("日本語の文章です。東京は日本の首都であり、世界有数の大都市である。ひらがなとカタカナと漢字を"
            "使って書かれている。") * 3
THAI = "กรุงเทพมหานครเป็นเมืองหลวงและนครที่มีประชากรมากที่สุดของประเทศไทย เป็นศูนย์กลางการปกครอง การศึกษา " * 3
GREEK = "Η Αθήνα είναι η πρωτεύουσα και μεγαλύτερη πόλη της Ελλάδας, με ιστορία τριών χιλιάδων ετών. " * 3


def page(text: str, head: str = "") -> str:
    return f"<!DOCTYPE html><html><head>{head}<title>t</title></head><body><p>{text}</p></body></html>"


# --- the order of the rules

def test_it_takes_a_byte_order_mark_over_the_http_charset():
    for mark, name, codec in ((b"\xef\xbb\xbf", "UTF-8", "utf-8"), (b"\xff\xfe", "UTF-16LE", "utf-16-le"),
                              (b"\xfe\xff", "UTF-16BE", "utf-16-be")):
        text, chosen = decode(mark + page("é").encode(codec), "windows-1251")
        assert (chosen.encoding, chosen.source) == (name, BOM)
        assert text == page("é")  # the mark itself is not text


def test_it_takes_the_http_charset_over_the_meta_and_the_meta_over_the_detector():
    body = page(RUSSIAN, '<meta charset="koi8-r">').encode("koi8-r")
    assert (choose(body, "KOI8-R").source, choose(body).source) == (HTTP, META)
    assert choose(body).encoding == "KOI8-R"
    undeclared = page(RUSSIAN).encode("koi8-r")
    assert (decode(undeclared)[0], choose(undeclared).source) == (page(RUSSIAN), DETECTED)


def test_it_takes_utf16_from_http_without_a_mark():
    text, chosen = decode(page("Ελλάδα").encode("utf-16-le"), "utf-16")
    assert (text, chosen.encoding, chosen.source) == (page("Ελλάδα"), "UTF-16LE", HTTP)
    assert parse_html(page("Ελλάδα").encode("utf-16-le"), "http://h.test/", "utf-16").text == "Ελλάδα"


def test_it_reads_the_xml_declaration_of_xml_and_of_xhtml_served_as_html():
    body = '<?xml version="1.0" encoding="windows-1253"?><html><body><p>ΑΘΗΝΑ</p></body></html>'.encode("cp1253")
    assert (choose(body, kind="xml").encoding, choose(body, kind="xml").source) == ("windows-1253", XML)
    assert choose(body).source == XML
    assert choose(b"<?xml version='1.0'?><urlset/>", kind="xml") == decoding.Decision("UTF-8", DEFAULT)


def test_it_says_default_for_a_page_with_nothing_to_detect():
    assert choose(b"<html><body>plain ASCII</body></html>") == decoding.Decision("UTF-8", DEFAULT)
    assert choose(b"") == decoding.Decision("UTF-8", DEFAULT)


# --- labels as the Encoding Standard maps them

@pytest.mark.parametrize("label, name", [
    ("ISO-8859-1", "windows-1252"), ("latin1", "windows-1252"), ("US-ASCII", "windows-1252"),
    ("gb2312", "GBK"), ("GB_2312-80", "GBK"), ("shift_jis", "Shift_JIS"), ("windows-31j", "Shift_JIS"),
    ("euc-kr", "EUC-KR"), ("ks_c_5601-1987", "EUC-KR"), ("tis-620", "windows-874"), ("iso-8859-9", "windows-1254"),
    ("utf-16", "UTF-16LE"), ("unicode", "UTF-16LE"), ("x-user-defined", "x-user-defined"),
    ("hz-gb-2312", "replacement"), ("iso-2022-kr", "replacement"), (" UTF8 ", "UTF-8"), ('"big5"', "Big5"),
])
def test_it_maps_labels_as_browsers_do(label, name):
    assert encodings.name_of(label) == name


def test_it_decodes_each_encoding_as_the_standard_does():
    assert encodings.decode(b"\x80\x81", "windows-1252") == "€\x81"  # 0x81: the C1 control, not U+FFFD
    assert encodings.decode("①髙".encode("cp932"), "Shift_JIS") == "①髙"  # NEC/IBM extensions of Windows-31J
    assert encodings.decode("똠".encode("cp949"), "EUC-KR") == "똠"  # Unified Hangul Code
    assert encodings.decode("镕".encode("gb18030"), "GBK") == "镕"
    assert encodings.decode(b"a\xf0", "x-user-defined") == "a\uf7f0"
    assert encodings.decode(b"<p>anything</p>", "replacement") == "\ufffd"
    every = [name for name in encodings._LABELS if name not in (encodings.REPLACEMENT, encodings.X_USER_DEFINED)]
    assert all(encodings.codec_of(name) for name in every)


def test_it_ignores_an_unknown_label_and_falls_through():
    body = page(RUSSIAN, '<meta charset="x-no-such-thing"><meta charset="windows-1251">').encode("cp1251")
    assert (choose(body, "klingon-8").encoding, choose(body, "klingon-8").source) == ("windows-1251", META)
    undeclared = page(RUSSIAN, '<meta charset="x-no-such-thing">').encode("cp1251")
    assert (choose(undeclared, "klingon-8").encoding, choose(undeclared).source) == ("windows-1251", DETECTED)


# --- the meta prescan

@pytest.mark.parametrize("head, name", [
    ('<meta charset="shift_jis">', "Shift_JIS"),
    ("<meta charset=euc-jp>", "EUC-JP"),
    ('<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">', "Shift_JIS"),
    ("<META CONTENT='text/html; charset=\"euc-jp\"' HTTP-EQUIV='content-type'>", "EUC-JP"),
    ('<meta content="text/html; charset=shift_jis">', None),  # no http-equiv: the spec's need_pragma
    ('<!-- <meta charset="euc-jp"> --><meta charset="shift_jis">', "Shift_JIS"),  # a comment is skipped
    ('<meta name="x" content="a > b"><meta charset="shift_jis">', "Shift_JIS"),  # ">" in a quoted value
    ('<meta charset="utf-16">', "UTF-8"),  # a meta readable as ASCII is not UTF-16
    ('<meta charset="x-user-defined">', "windows-1252"),
])
def test_it_prescans_meta_as_the_html_standard_does(head, name):
    assert decoding.prescan(page("x", head).encode("ascii")) == name


def test_it_looks_past_1024_bytes_only_while_in_the_head():
    filler = "<script>var x = '" + "x" * 1100 + "';</script>"
    assert decoding.prescan(page("x", filler + '<meta charset="euc-jp">').encode()) == "EUC-JP"  # as Chromium
    late = "<html><head><title>t</title></head><body>" + "<p>x</p>" * 200 + '<meta charset="euc-jp">'
    assert decoding.prescan(late.encode()) is None  # in the body, past 1024 bytes
    scripted = "<head><script>" + "y" * 1100 + 'document.write("<meta charset=euc-jp>")</script>'
    assert decoding.prescan(scripted.encode()) is None  # in a script past the prescan's bytes


# --- detection

@pytest.mark.parametrize("text, codec, name", [
    (RUSSIAN, "cp1251", "windows-1251"), (RUSSIAN, "koi8-r", "KOI8-U"), (JAPANESE, "cp932", "Shift_JIS"),
    (JAPANESE, "euc-jp", "EUC-JP"), (GREEK, "cp1253", "windows-1253"),
    (THAI, "cp874", "windows-874"),  # chardetng-py names it "cp874", Python's name
])
def test_it_detects_the_encoding_of_a_page_that_declares_none(text, codec, name):
    # (Russian in KOI8-R is KOI8-U to chardetng: the two differ in Ukrainian letters only.)
    body = page(text).encode(codec)
    text_out, chosen = decode(body)
    assert (chosen.encoding, chosen.source) == (name, DETECTED)
    assert text_out == page(text)


def test_the_hosts_top_level_domain_is_the_detectors_hint():
    assert (decoding._tld_hint("www.example.co.jp"), decoding._tld_hint("h.RU")) == (b"jp", b"ru")
    assert decoding._tld_hint("127.0.0.1") is None and decoding._tld_hint("") is None
    assert decoding._tld_hint("example.com") is None  # a generic TLD says nothing


def test_the_pages_html_lang_stands_in_for_a_tld_that_says_nothing():
    assert decoding._lang_hint(b'<!DOCTYPE html><html class="x" lang="zh-Hant">') == b"tw"
    assert decoding._lang_hint(b"<html lang=ru>") == b"ru" and decoding._lang_hint(b'<html lang="en-GB">') is None
    assert decoding._lang_hint(b"<html><body lang=ja>") is None
    # Hungarian in windows-1250 without a hint reads as windows-1252 (only its ő and ű differ).
    hungarian = "Az árvíztűrő tükörfúrógép gyönyörű, de a főnök ősszel új kőbányát nyitott. " * 4
    body = f'<html lang="hu"><body><p>{hungarian}</p></body></html>'.encode("cp1250")
    assert decode(body, tld="example.com")[0] == body.decode("cp1250")


def test_it_detects_utf8_without_a_declaration():
    assert choose(page(JAPANESE).encode()) == decoding.Decision("UTF-8", DETECTED)


def test_the_parsed_page_says_how_it_was_decoded():
    parsed = parse_html(page(RUSSIAN, "<title>Москва</title>").encode("cp1251"), "http://ru.test/")
    assert (parsed.title, parsed.encoding, parsed.encoding_source) == ("Москва", "windows-1251", "detected")
    assert "Москва - столица России" in parsed.text


# --- bad input, bounded

def test_a_lying_charset_is_believed_as_browsers_do():
    # Declared ISO-8859-1 (windows-1252), bytes UTF-8: a browser shows mojibake, so do we.
    text, chosen = decode(page("café").encode(), "iso-8859-1")
    assert (chosen.encoding, chosen.source) == ("windows-1252", HTTP)
    assert "cafÃ©" in text


def test_a_page_declared_utf8_that_is_not_goes_to_the_detector():
    for where in ({"http_charset": "utf-8"}, {}):
        body = page(RUSSIAN, '<meta charset="utf-8">' if not where else "").encode("cp1251")
        text, chosen = decode(body, **where)
        assert (chosen.encoding, chosen.source) == ("windows-1251", DETECTED)
        assert RUSSIAN in text


def test_mixed_encodings_keep_the_declared_utf8_and_replace_the_strays():
    # A UTF-8 page whose footer was pasted in windows-1252: browsers keep UTF-8.
    body = page(GREEK).encode() + "<footer>© Société Générale</footer>".encode("cp1252")
    text, chosen = decode(body, "utf-8")
    assert (chosen.encoding, chosen.source) == ("UTF-8", HTTP)
    assert GREEK in text and "Soci\ufffdt\ufffd G\ufffdn\ufffdrale" in text


def test_binary_served_as_html_has_a_decision_and_no_text_worth_indexing():
    from indexer.service import parse_page

    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 64
    assert isinstance(choose(png), decoding.Decision)  # no exception, a bounded answer
    assert parse_page("http://h.test/x.png", "text/html", None, png) is None  # not a page


def test_a_10_mb_page_without_declaration_shows_the_detector_a_bounded_window(monkeypatch):
    fed = []

    real = decoding.chardetng_py.EncodingDetector

    class Spy:
        def __init__(self):
            self.detector = real()

        def feed(self, buffer, *, last):
            fed.append(len(buffer))
            return self.detector.feed(buffer, last=last)

        def guess(self, **hints):
            return self.detector.guess(**hints)

    monkeypatch.setattr(decoding.chardetng_py, "EncodingDetector", Spy)
    body = page(RUSSIAN * 21_000).encode("cp1251")
    assert len(body) > 10_000_000
    chosen = choose(body)
    assert (chosen.encoding, chosen.source) == ("windows-1251", DETECTED)
    assert fed and sum(fed) <= decoding.DETECT_BYTES


def test_an_ascii_preamble_does_not_hide_the_text_from_the_detector():
    body = page("<!-- " + "ascii " * 20_000 + " -->" + RUSSIAN).encode("cp1251")
    assert choose(body).encoding == "windows-1251"


# --- sitemaps, feeds and plain text get the same rules

def test_a_feed_is_read_in_the_encoding_a_browser_would_choose():
    from indexer.linksources import read_feed, read_sitemap

    rss = ('<?xml version="1.0" encoding="iso-8859-1"?><rss><channel><item><link>http://h.test/€uro</link>'
           "</item></channel></rss>").encode("cp1252")
    assert read_feed(rss).links == ["http://h.test/€uro"]  # ISO-8859-1 is windows-1252: 0x80 is €
    koi8 = ('<?xml version="1.0" encoding="utf-8"?><urlset><url><loc>http://h.test/Москва</loc></url>'
            "</urlset>").encode("koi8-r")
    assert read_sitemap(koi8, charset="koi8-r").links == ["http://h.test/Москва"]  # HTTP over the declaration
    assert read_sitemap("\ufeffhttp://h.test/Straße\n".encode("utf-16-le")).links == ["http://h.test/Straße"]


def test_plain_text_defaults_to_utf8_and_detects_what_plainly_is_not():
    from indexer.gemtext import decode_text

    assert decode_text("Grüße\n".encode())[1] == decoding.Decision("UTF-8", DEFAULT)
    text, chosen = decode_text(RUSSIAN.encode("cp1251"))
    assert (text, chosen.encoding, chosen.source) == (RUSSIAN, "windows-1251", DETECTED)


def test_an_ascii_body_parses_alike_whatever_ascii_compatible_encoding_it_declares():
    ascii_page = page("plain words", '<meta charset="iso-8859-1">').encode()
    parsed = parse_html(ascii_page, "http://h.test/")
    assert (parsed.text, parsed.encoding, parsed.encoding_source) == ("plain words", "windows-1252", "meta")
    # ISO-2022-JP is all 7-bit bytes, yet not ASCII text: it is decoded, not read as ASCII.
    jis = page("日本語のページ", '<meta charset="iso-2022-jp">').encode("iso2022_jp")
    assert jis.isascii() and parse_html(jis, "http://h.test/").text == "日本語のページ"
