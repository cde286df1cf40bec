"""The WHATWG Encoding Standard's encodings: labels to names, names to Python codecs.

A label is what a page writes (`charset=latin1`, `<meta charset="gb2312">`); browsers map
every label to one of about 40 encodings by the standard's label table
(https://encoding.spec.whatwg.org/#names-and-labels), so "iso-8859-1" and "ascii" are
windows-1252 and "gb2312" is GBK. A label not in the table means nothing (the caller falls
through to its next rule). Pure Python, no Django.
"""

import codecs

REPLACEMENT, X_USER_DEFINED = "replacement", "x-user-defined"
UTF8, UTF16LE, UTF16BE, WINDOWS_1252 = "UTF-8", "UTF-16LE", "UTF-16BE", "windows-1252"

# Encoding name -> its labels (the standard's table, ASCII-lowercased).
_LABELS = {
    UTF8: "unicode-1-1-utf-8 unicode11utf8 unicode20utf8 utf-8 utf8 x-unicode20utf8",
    "IBM866": "866 cp866 csibm866 ibm866",
    "ISO-8859-2": "csisolatin2 iso-8859-2 iso-ir-101 iso8859-2 iso88592 iso_8859-2 iso_8859-2:1987 l2 latin2",
    "ISO-8859-3": "csisolatin3 iso-8859-3 iso-ir-109 iso8859-3 iso88593 iso_8859-3 iso_8859-3:1988 l3 latin3",
    "ISO-8859-4": "csisolatin4 iso-8859-4 iso-ir-110 iso8859-4 iso88594 iso_8859-4 iso_8859-4:1988 l4 latin4",
    "ISO-8859-5": "csisolatincyrillic cyrillic iso-8859-5 iso-ir-144 iso8859-5 iso88595 iso_8859-5 iso_8859-5:1988",
    "ISO-8859-6": "arabic asmo-708 csiso88596e csiso88596i csisolatinarabic ecma-114 iso-8859-6 iso-8859-6-e "
                  "iso-8859-6-i iso-ir-127 iso8859-6 iso88596 iso_8859-6 iso_8859-6:1987",
    "ISO-8859-7": "csisolatingreek ecma-118 elot_928 greek greek8 iso-8859-7 iso-ir-126 iso8859-7 iso88597 "
                  "iso_8859-7 iso_8859-7:1987 sun_eu_greek",
    "ISO-8859-8": "csiso88598e csisolatinhebrew hebrew iso-8859-8 iso-8859-8-e iso-ir-138 iso8859-8 iso88598 "
                  "iso_8859-8 iso_8859-8:1988 visual",
    "ISO-8859-8-I": "csiso88598i iso-8859-8-i logical",
    "ISO-8859-10": "csisolatin6 iso-8859-10 iso-ir-157 iso8859-10 iso885910 l6 latin6",
    "ISO-8859-13": "iso-8859-13 iso8859-13 iso885913",
    "ISO-8859-14": "iso-8859-14 iso8859-14 iso885914",
    "ISO-8859-15": "csisolatin9 iso-8859-15 iso8859-15 iso885915 iso_8859-15 l9",
    "ISO-8859-16": "iso-8859-16",
    "KOI8-R": "cskoi8r koi koi8 koi8-r koi8_r",
    "KOI8-U": "koi8-ru koi8-u",
    "macintosh": "csmacintosh mac macintosh x-mac-roman",
    "windows-874": "dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874",
    "windows-1250": "cp1250 windows-1250 x-cp1250",
    "windows-1251": "cp1251 windows-1251 x-cp1251",
    WINDOWS_1252: "ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100 iso8859-1 "
                  "iso88591 iso_8859-1 iso_8859-1:1987 l1 latin1 us-ascii windows-1252 x-cp1252",
    "windows-1253": "cp1253 windows-1253 x-cp1253",
    "windows-1254": "cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9 iso_8859-9:1989 "
                    "l5 latin5 windows-1254 x-cp1254",
    "windows-1255": "cp1255 windows-1255 x-cp1255",
    "windows-1256": "cp1256 windows-1256 x-cp1256",
    "windows-1257": "cp1257 windows-1257 x-cp1257",
    "windows-1258": "cp1258 windows-1258 x-cp1258",
    "x-mac-cyrillic": "x-mac-cyrillic x-mac-ukrainian",
    "GBK": "chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 x-gbk",
    "gb18030": "gb18030",
    "Big5": "big5 big5-hkscs cn-big5 csbig5 x-x-big5",
    "EUC-JP": "cseucpkdfmtjapanese euc-jp x-euc-jp",
    "ISO-2022-JP": "csiso2022jp iso-2022-jp",
    "Shift_JIS": "csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j x-sjis",
    "EUC-KR": "cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 ksc5601 ksc_5601 "
              "windows-949",
    REPLACEMENT: "csiso2022kr hz-gb-2312 iso-2022-cn iso-2022-cn-ext iso-2022-kr replacement",
    UTF16BE: "unicodefffe utf-16be",
    UTF16LE: "csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff utf-16 utf-16le",
    X_USER_DEFINED: "x-user-defined",
}
_BY_LABEL = {label: name for name, labels in _LABELS.items() for label in labels.split()}

# Encoding name -> the Python codec that decodes it as browsers do, or the nearest one:
# GBK is decoded as gb18030 (its superset, as the standard's GBK decoder is); Big5 as
# big5hkscs (the standard's Big5 is Big5-HKSCS); Shift_JIS as cp932 (Windows-31J, the
# standard's Shift_JIS with NEC and IBM extensions); EUC-KR as cp949 (the standard's EUC-KR
# is Windows-949, Unified Hangul Code).
_CODECS = {
    UTF8: "utf-8", "IBM866": "cp866", "ISO-8859-8-I": "iso8859-8", "KOI8-R": "koi8-r", "KOI8-U": "koi8-u",
    "macintosh": "mac-roman", "windows-874": "cp874", "x-mac-cyrillic": "mac-cyrillic", "GBK": "gb18030",
    "gb18030": "gb18030", "Big5": "big5hkscs", "EUC-JP": "euc-jp", "ISO-2022-JP": "iso2022-jp",
    "Shift_JIS": "cp932", "EUC-KR": "cp949", UTF16BE: "utf-16-be", UTF16LE: "utf-16-le",
    "UTF-32LE": "utf-32-le", "UTF-32BE": "utf-32-be",
}
_CODECS.update({f"ISO-8859-{n}": f"iso8859-{n}" for n in (2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15, 16)})
_CODECS.update({f"windows-{n}": f"cp{n}" for n in range(1250, 1259)})
# Python codec -> encoding name, for detectors that answer in Python's names (the first name
# a codec serves wins; labels are looked up first, so "gb18030" stays gb18030).
_BY_CODEC = {codecs.lookup(codec).name: name for name, codec in reversed(list(_CODECS.items()))}
_BY_CODEC[codecs.lookup("gbk").name] = "GBK"
_BY_CODEC[codecs.lookup("big5").name] = "Big5"
_BY_CODEC[codecs.lookup("shift_jis").name] = "Shift_JIS"
_BY_CODEC[codecs.lookup("euc_kr").name] = "EUC-KR"


def name_of(label: str | None) -> str | None:
    """The encoding a label names (the standard's "get an encoding": ASCII whitespace
    trimmed, case-insensitive), or None for a label the standard does not know."""
    if not label:
        return None
    return _BY_LABEL.get(label.strip("\t\n\f\r \"'").lower())


def name_of_codec(codec: str) -> str | None:
    """The encoding a Python codec name stands for (chardetng-py answers "cp874" for
    windows-874, which Python does not know by that name), or None."""
    try:
        return _BY_CODEC.get(codecs.lookup(codec).name)
    except LookupError:
        return None


def codec_of(name: str) -> str | None:
    """The Python codec for an encoding name (None for replacement and x-user-defined,
    which decode() handles itself)."""
    return _CODECS.get(name)


def _whatwg_1252_errors(error: UnicodeDecodeError):
    # Python's cp1252 leaves 0x81 0x8D 0x8F 0x90 0x9D undefined; the standard's
    # windows-1252 maps each to the C1 control of the same number.
    return "".join(chr(b) for b in error.object[error.start:error.end]), error.end


codecs.register_error("crawlerweb-windows-1252", _whatwg_1252_errors)
_X_USER_DEFINED = {b: 0xF780 + b - 0x80 for b in range(0x80, 0x100)}


def decode(body: bytes, name: str) -> str:
    """`body` decoded in encoding `name`; bytes it cannot decode become U+FFFD, as in a
    browser (never an exception)."""
    if name == REPLACEMENT:
        # The standard's guard against encodings used for cross-site scripting (ISO-2022-KR,
        # HZ...): the whole input is one U+FFFD.
        return "\ufffd" if body else ""
    if name == X_USER_DEFINED:
        return body.decode("latin-1").translate(_X_USER_DEFINED)
    if name == WINDOWS_1252:
        return body.decode("cp1252", errors="crawlerweb-windows-1252")
    return body.decode(_CODECS.get(name, "utf-8"), errors="replace")
