"""indexer/gemtext.py: gemtext lines into title, headings, text and links, ASCII art left out.

No database, no network. The art and code examples are real ones: FIGlet banners
(pyfiglet 1.0.4's fonts), box drawing, braille, cowsay; a shell session, Python, C, a
table of numbers.
"""

import pytest

from indexer.gemtext import decode, looks_like_art, parse_gemtext

pytestmark = pytest.mark.backend_free  # a server and a parser: no database in them

URL = "gemini://capsule.example/log/index.gmi"


def _page(*lines: str, eol: str = "\n") -> bytes:
    return eol.join(lines).encode("utf-8")


def _parse(*lines: str, **kwargs):
    return parse_gemtext(_page(*lines), URL, **kwargs)


# ---------------------------------------------------------------- art and code examples

FIGLET_STANDARD = r"""
  ____                 _
 / ___| ___ _ __ ___  (_)_ __ (_)
| |  _ / _ \ '_ ` _ \ | | '_ \| |
| |_| |  __/ | | | | || | | | | |
 \____|\___|_| |_| |_||_|_| |_|_|
""".strip("\n").split("\n")

FIGLET_SLANT = r"""
                               __
  _________ _____  _______  __/ /__
 / ___/ __ `/ __ \/ ___/ / / / / _ \
/ /__/ /_/ / /_/ (__  ) /_/ / /  __/
\___/\__,_/ .___/____/\__,_/_/\___/
         /_/
""".strip("\n").split("\n")

# A font drawn with letters and digits: few symbols, so the symbol share alone misses it.
FIGLET_COLOSSAL = r"""
 .d8888b.                      888
d88P  Y88b                     888
888    888                     888
888        .d88b. 88888b.d88b. 888 .d88b.  .d88b.
888  88888d8P  Y8b888 "888 "88b888d88""88bd88P"88b
888    88888888888888  888  888888888  888888  888
Y88b  d88PY8b.    888  888  888888Y88..88PY88b 888
 "Y8888P88 "Y8888 888  888  888888 "Y88P"  "Y88888
                                               888
                                          Y8b d88P
                                           "Y88P"
""".strip("\n").split("\n")

FIGLET_DOH = r"""
HHHHHHHHH     HHHHHHHHH  iiii
H:::::::H     H:::::::H i::::i
H:::::::H     H:::::::H  iiii
HH::::::H     H::::::HH
  H:::::H     H:::::H  iiiiiii
  H:::::H     H:::::H  i:::::i
  H::::::HHHHH::::::H   i::::i
  H:::::::::::::::::H   i::::i
  H::::::HHHHH::::::H   i::::i
  H:::::H     H:::::H   i::::i
HH::::::H     H::::::HHi::::::i
H:::::::H     H:::::::Hi::::::i
HHHHHHHHH     HHHHHHHHHiiiiiiii
""".strip("\n").split("\n")

BOX_ART = """
╔══════════════════════════╗
║  ▄▄▄  ▄▄▄▄ ▄   ▄ ▄ ▄▄  ▄ ║
║ █   ▀ █▄▄  █▀▄▀█ █ █ ▀▄█ ║
║ ▀▄▄▄▀ █▄▄▄ █   █ █ █   █ ║
╚══════════════════════════╝
""".strip("\n").split("\n")

BRAILLE_ART = """
⠀⠀⠀⠀⠀⢀⣀⠤⠤⠤⠤⠤⠤⣀⡀
⠀⠀⠀⣠⠖⠉⠀⠀⠀⠀⠀⠀⠀⠀⠉⠲⣄
⠀⢀⡜⠁⠀⠀⠀⢀⣀⣀⣀⣀⡀⠀⠀⠀⠈⢣⡀
⠀⡜⠀⠀⠀⢀⡴⠋⠀⠀⠀⠀⠙⢦⡀⠀⠀⠀⢣
⠀⡇⠀⠀⠀⢸⠀⠀⠀⠀⠀⠀⠀⠀⡇⠀⠀⠀⢸
⠀⢣⠀⠀⠀⠈⠳⣄⠀⠀⠀⠀⣠⠞⠁⠀⠀⠀⡜
⠀⠀⠀⠙⠦⣀⠀⠀⠀⠀⠀⠀⠀⠀⣀⠴⠋
⠀⠀⠀⠀⠀⠈⠉⠒⠒⠒⠖⠒⠒⠉⠁
""".strip("\n").split("\n")

COW = r"""
        \   ^__^
         \  (oo)\_______
            (__)\       )\/\
                ||----w |
                ||     ||
""".strip("\n").split("\n")

SHELL_SESSION = """
$ openssl s_client -connect example.org:1965 -servername example.org </dev/null 2>/dev/null | head -3
CONNECTED(00000003)
depth=0 CN = example.org
verify error:num=18:self-signed certificate
$ printf 'gemini://example.org/\\r\\n' | ncat --ssl example.org 1965 | head -1
20 text/gemini; lang=en
""".strip("\n").split("\n")

PYTHON_SNIPPET = """
import socket, ssl

def fetch(host: str, path: str = "/") -> bytes:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection((host, 1965), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname=host) as tls:
            tls.sendall(f"gemini://{host}{path}\\r\\n".encode())
            return b"".join(iter(lambda: tls.recv(4096), b""))
""".strip("\n").split("\n")

C_SNIPPET = """
static size_t count_lines(const char *buf, size_t n)
{
    size_t lines = 0;
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\\n')
            lines++;
    }
    return lines;
}
""".strip("\n").split("\n")

C_ONE_LINER = ["for (i = 0; i < n; i++) { x[i] = y; }"]

NUMBER_TABLE = """
month     requests   capsules   median ms
2024-01     18,203        412        88.5
2024-02     19,877        431        91.2
2024-03     23,114        455        79.9
2024-04     22,950        470        84.0
""".strip("\n").split("\n")

# A rule of dashes in a comment is many symbols; squeezed to one it is code again.
COMMENTED_C = """
/*--------------------------------------------------------------------*/
/*--- The request line: the URL and CRLF, at most 1024 bytes        ---*/
/*--------------------------------------------------------------------*/
#define MAX_REQUEST 1024
""".strip("\n").split("\n")

ART = {"figlet standard": FIGLET_STANDARD, "figlet slant": FIGLET_SLANT, "figlet colossal": FIGLET_COLOSSAL,
       "figlet doh": FIGLET_DOH, "box and block": BOX_ART, "braille": BRAILLE_ART, "cow": COW}
CODE = {"shell session": SHELL_SESSION, "python": PYTHON_SNIPPET, "c": C_SNIPPET, "c one-liner": C_ONE_LINER,
        "table of numbers": NUMBER_TABLE, "c with comment rules": COMMENTED_C}


@pytest.mark.parametrize("name", ART)
def test_it_recognises_ascii_art(name):
    assert looks_like_art(ART[name])


@pytest.mark.parametrize("name", CODE)
def test_it_recognises_code_and_data(name):
    assert not looks_like_art(CODE[name])


def test_it_keeps_a_drawing_whose_letters_are_mostly_words():
    # cowsay's bubble, a framed notice: the words in the frame are the content.
    bubble = [" _______________", "< moo, gemini! >", " ---------------", *COW]
    framed = ["+------------------------------+", "|  Welcome to my capsule!      |",
              "+------------------------------+"]
    assert not looks_like_art(bubble)
    assert not looks_like_art(framed)


def test_it_does_not_take_an_empty_block_for_art():
    assert not looks_like_art([])
    assert not looks_like_art(["", "   "])


@pytest.mark.parametrize("name", ART)
def test_it_leaves_art_in_the_middle_of_a_page_out_of_the_text_and_keeps_its_alt_text(name):
    page = _parse("# Notes", "Some words first.", f"```{name} drawing", *ART[name], "```", "Words after.")
    assert page.text == f"Notes\nSome words first.\n{name} drawing\nWords after."
    start = page.text.index(f"{name} drawing")
    assert page.boilerplate == [(start, start + len(f"{name} drawing"))]


@pytest.mark.parametrize("name", CODE)
def test_it_keeps_code_in_the_middle_of_a_page_line_by_line(name):
    page = _parse("# Notes", "Before.", "```sh", *CODE[name], "```", "After.")
    assert page.text == "\n".join(["Notes", "Before.", "sh", *[line.rstrip() for line in CODE[name] if line.strip()],
                                   "After."])
    assert page.boilerplate == []


def test_it_leaves_any_block_at_the_very_top_out_as_a_banner():
    page = _parse("", "", "```Welcome to my capsule", *C_SNIPPET, "```", "# Home", "Hello.")
    assert page.text == "Welcome to my capsule\nHome\nHello."
    assert page.boilerplate == [(0, len("Welcome to my capsule"))]
    assert page.title == "Home"


def test_it_keeps_a_second_block_that_is_code_after_a_top_banner():
    page = _parse("```", *FIGLET_STANDARD, "```", "# Home", "```", *C_ONE_LINER, "```")
    assert page.text == "Home\n" + C_ONE_LINER[0]
    assert page.boilerplate == []  # the banner had no alt text


def test_it_knows_a_block_after_a_line_of_text_is_not_at_the_top():
    page = _parse("Hello.", "```", *C_SNIPPET, "```")
    assert "count_lines" in page.text


def test_it_keeps_a_page_of_only_art_down_to_its_alt_texts():
    page = _parse("```A cat", *BRAILLE_ART, "```", "", "```a cow", *COW, "```")
    assert page.text == "A cat\na cow"
    assert page.boilerplate == [(0, 5), (6, 11)]
    assert page.title == "" and page.headings == "" and page.links == []


def test_it_runs_an_unterminated_block_to_the_end_of_the_page():
    page = _parse("# Code", "```c", *C_SNIPPET, "=> gemini://not.a.link/ inside the block")
    assert page.links == []
    assert page.text.endswith("=> gemini://not.a.link/ inside the block")
    art = _parse("# Art", "```", *FIGLET_SLANT)
    assert art.text == "Art"


def test_it_takes_the_alt_text_from_the_opening_toggle_only():
    page = _parse("Intro.", "```python  ", "x = 1", "``` this is ignored", "Outro.")
    assert page.text == "Intro.\npython\nx = 1\nOutro."


# ---------------------------------------------------------------- headings and title

def test_it_takes_the_title_from_the_first_level_one_heading():
    page = _parse("## Gemlog", "# Capsule home", "# Another one", "### Small")
    assert page.title == "Capsule home"
    assert page.headings == "Gemlog\nCapsule home\nAnother one\nSmall"


def test_it_takes_the_first_heading_of_any_level_without_a_level_one():
    assert _parse("Text.", "### Third", "## Second").title == "Third"


def test_it_has_an_empty_title_without_headings():
    page = _parse("Just text.", "* and a list")
    assert page.title == "" and page.headings == ""


def test_it_reads_heading_levels_and_whitespace():
    page = _parse("#No space", "##\tTabbed", "####Four", "#", "#   ")
    assert page.headings == "No space\nTabbed\n#Four"
    assert page.text == "No space\nTabbed\n#Four"


# ---------------------------------------------------------------- links

def test_it_reads_link_lines_as_written_with_their_labels_as_text():
    page = _parse("=> gemini://other.example/ Another capsule", "=> ../about.gmi About me",
                  "=> /feed.xml", "=>https://example.org/ the web", "=> mailto:me@example.org Mail")
    assert page.links == ["gemini://other.example/", "../about.gmi", "/feed.xml", "https://example.org/",
                          "mailto:me@example.org"]
    assert page.text == "Another capsule\nAbout me\nthe web\nMail"
    assert page.base == URL


def test_it_splits_link_lines_on_tabs_and_runs_of_whitespace():
    page = _parse("=>\tgemini://a.example/x.gmi\tTabbed label", "=> \t  b.gmi \t  Spaced   label  ")
    assert page.links == ["gemini://a.example/x.gmi", "b.gmi"]
    assert page.text == "Tabbed label\nSpaced   label"


def test_it_ignores_link_lines_without_a_url():
    page = _parse("=>", "=>   ", "=>\t", "Text.")
    assert page.links == [] and page.text == "Text."


def test_it_keeps_each_link_once_and_drops_fragment_only_links():
    page = _parse("=> a.gmi One", "=> #top Top", "=> a.gmi One again", "=> b.gmi#part Part")
    assert page.links == ["a.gmi", "b.gmi#part"]


def test_it_caps_the_links_but_keeps_their_labels():
    page = _parse(*[f"=> {n}.gmi Post {n}" for n in range(20)], max_links=5)
    assert page.links == [f"{n}.gmi" for n in range(5)]
    assert page.text.count("Post") == 20


def test_it_needs_the_arrow_at_the_start_of_the_line():
    page = _parse(" => a.gmi indented", "= > b.gmi spaced")
    assert page.links == []


# ---------------------------------------------------------------- text lines

def test_it_reads_list_items_and_quotes_as_text_without_their_markers():
    page = _parse("* first item", "*bold, not a list item*", ">quoted", ">  spaced quote", "  indented text  ")
    assert page.text == "first item\n*bold, not a list item*\nquoted\nspaced quote\nindented text"


def test_it_drops_blank_lines():
    assert _parse("One.", "", "   ", "\t", "Two.").text == "One.\nTwo."


# ---------------------------------------------------------------- decoding

def test_it_reads_crlf_and_lf_alike():
    lines = ("# Title", "=> a.gmi Label", "Text.")
    assert parse_gemtext(_page(*lines, eol="\r\n"), URL) == parse_gemtext(_page(*lines), URL)


def test_it_ends_lines_only_at_line_feeds():
    page = _parse("one\x0btwo\x1cthree\u2028four")
    assert page.text == "one\x0btwo\x1cthree\u2028four"


def test_it_decodes_the_declared_charset():
    body = "# Café crème\nÜber naïve façade.\n".encode("iso-8859-1")
    page = parse_gemtext(body, URL, "iso-8859-1")
    assert page.title == "Café crème"
    assert page.text == "Café crème\nÜber naïve façade."


def test_it_falls_back_to_utf8_on_an_unknown_charset_and_replaces_bad_bytes():
    page = parse_gemtext("# Zoë\n".encode() + b"bad \xff byte\n", URL, "x-no-such-charset")
    assert page.title == "Zoë"
    assert page.text == "Zoë\nbad \ufffd byte"


def test_it_drops_the_byte_order_mark_and_nuls():
    assert decode(b"\xef\xbb\xbf# Title\x00") == "# Title"
    page = parse_gemtext(b"\xef\xbb\xbf```\n" + "\n".join(FIGLET_STANDARD).encode() + b"\n```\n# Home", URL)
    assert page.text == "Home"  # the BOM did not hide the banner at the top


def test_it_accepts_a_quoted_charset():
    assert decode("é".encode("latin-1"), '"ISO-8859-1"') == "é"


# ---------------------------------------------------------------- caps

def test_it_caps_the_text_and_its_boilerplate_ranges_but_reads_every_link():
    page = _parse("A" * 50, "```long alt text of a banner", *FIGLET_STANDARD, "```", "B" * 50,
                  "=> late.gmi Late link", max_chars=60)
    assert len(page.text) == 60
    assert page.boilerplate == [(51, 60)]
    assert page.links == ["late.gmi"]


def test_it_gives_an_empty_page_for_an_empty_body():
    page = parse_gemtext(b"", URL)
    assert (page.title, page.headings, page.text, page.links, page.boilerplate) == ("", "", "", [], [])
    assert page.base == URL
