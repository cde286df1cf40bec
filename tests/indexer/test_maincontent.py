"""A page's main content apart from its site's furniture (indexer/maincontent.py): templates as
real sites write them (menus without <nav>, footers as <div>s, cookie banners, related-links
lists, comment forms), what is main and what is not, the title, what the index and the
export get, and a search on the suite's backend where furniture words rank below content."""

import pytest

from frontier.models import Host, Url
from indexer import service as indexer
from indexer.backends import get_search_backend
from indexer.maincontent import choose_title, main_text
from indexer.models import Document
from indexer.parse import parse_html

ARTICLE = " ".join(["The keeper climbed the spiral stair at dusk to light the great lamp of the lighthouse.",
                    "Its lens, a beehive of glass prisms, threw the beam twenty miles over the sea,",
                    "and ships on the reef-strewn coast steered by its white flash every ten seconds.",
                    "In winter storms the keeper wound the clockwork twice a night and trimmed the wick."])

# A WordPress-like blog: its menu a <div class="menu-main-container"> list, a sidebar of
# widgets, a related-posts list, a comment form, a cookie notice, a <div id="footer">.
BLOG = f"""<!doctype html><html><head><title>How a lighthouse works | Coastal Notes</title>
<meta property="og:title" content="How a lighthouse works"></head><body>
<div id="cookie-notice">We use cookies to improve your experience. <button>Accept</button></div>
<div class="site-branding"><a href="/">Coastal Notes</a></div>
<div class="menu-main-container"><ul><li><a href="/">Home</a></li><li><a href="/about">About</a></li>
<li><a href="/tides">Tides</a></li><li><a href="/shop">Shop</a></li><li><a href="/contact">Contact</a></li></ul></div>
<div class="wrap"><div class="content-area"><h1>How a lighthouse works</h1><p>{ARTICLE}</p><p>{ARTICLE}</p>
<div class="related-posts"><h3>You may also like</h3><ul><li><a href="/buoys">Buoys explained</a></li>
<li><a href="/foghorns">Foghorn history</a></li></ul></div>
<div id="respond" class="comment-respond"><form><label>Comment</label><textarea></textarea>
<button>Post comment</button></form></div></div>
<div id="secondary" class="sidebar widget-area"><h2>Archives</h2><a href="/2025">2025</a> <a href="/2024">2024</a>
<p>Subscribe to the newsletter for weekly harbour gossip.</p></div></div>
<div id="footer">© 2026 Coastal Notes · <a href="/privacy">Privacy policy</a> · <a href="/imprint">Imprint</a></div>
</body></html>"""


def parts(html: str) -> tuple[str, str]:
    """(main text, furniture text) of a page."""
    page = parse_html(html.encode(), "http://coast.test/how")
    main = main_text(page.text, page.boilerplate)
    return main, " ".join(page.text[a:b] for a, b in page.boilerplate)


def test_it_keeps_the_article_and_leaves_out_a_blogs_furniture():
    main, furniture = parts(BLOG)
    assert main.startswith("How a lighthouse works The keeper climbed") and main.count("trimmed the wick") == 2
    for words in ("We use cookies", "Accept", "Home About Tides Shop Contact", "Buoys explained", "Post comment",
                  "Archives", "weekly harbour gossip", "Privacy policy", "Coastal Notes"):
        assert words not in main, words
        assert words in furniture, words


# A shop template of bare <div>s: no class says anything; the menu and the footer are lists
# of short links, found by their link density.
BARE = f"""<html><head><title>Lamp oil</title></head><body>
<div><div><a href="/">Lampshop</a></div><div><a href="/a">Oils</a> <a href="/b">Wicks</a> <a href="/c">Lenses</a>
<a href="/d">Sale</a> <a href="/e">Help</a></div></div>
<div><h1>Lamp oil, one litre</h1><p>{ARTICLE}</p><p>Paraffin oil that burns clean and without smoke, for
lamps of every size; see <a href="/care">how to care for a wick</a> before the first use.</p></div>
<div><div><a href="/terms">Terms</a></div><div><a href="/ship">Shipping</a></div>
<div><a href="/ret">Returns</a></div></div>
</body></html>"""


def test_it_finds_menus_and_footers_of_bare_divs_by_their_links():
    main, furniture = parts(BARE)
    assert "Paraffin oil that burns clean" in main and "how to care for a wick" in main  # a link in prose stays
    for words in ("Oils Wicks Lenses Sale Help", "Terms", "Shipping", "Returns"):
        assert words not in main and words in furniture, words


# A forum thread: the posts are siblings alike, every one content, though the first is long.
FORUM = """<html><head><title>Best lamp oil? - Keepers Forum</title></head><body>
<div class="navbar"><a href="/">Forum</a> <a href="/new">New posts</a> <a href="/login">Log in</a></div>
<div class="thread"><h1>Best lamp oil?</h1>
<div class="post"><span class="author">anna</span><p>{long}</p></div>
<div class="post"><span class="author">bert</span><p>Colza oil, as the old keepers used.</p></div>
<div class="post"><span class="author">cleo</span><p>Kerosene, trimmed wicks and patience.</p></div></div>
<div class="pagination"><a href="?p=1">1</a> <a href="?p=2">2</a> <a href="?p=3">Next</a></div>
</body></html>""".format(long=ARTICLE * 3)


def test_it_keeps_every_post_of_a_thread():
    main, furniture = parts(FORUM)
    assert "Colza oil, as the old keepers used." in main and "Kerosene, trimmed wicks and patience." in main
    assert "New posts" in furniture and "Log in" in furniture and "Next" in furniture


def test_a_long_noscript_is_the_page_a_short_one_is_furniture():
    html = (f"<html><body><noscript>Please enable JavaScript.</noscript><div id=app></div>"
            f"<noscript><div class=topic><h1>Lamp care</h1><p>{ARTICLE} {ARTICLE}</p></div></noscript></body></html>")
    main, furniture = parts(html)
    assert "The keeper climbed" in main and "enable JavaScript" in furniture and "enable JavaScript" not in main


def test_a_page_where_no_main_content_is_found_keeps_all_its_text():
    html = "<html><body><div class=menu><a href=/a>Oils</a> <a href=/b>Wicks</a></div></body></html>"
    page = parse_html(html.encode(), "http://coast.test/")
    assert main_text(page.text, page.boilerplate) == page.text == "Oils Wicks"  # a menu that is the page is the page
    menu = "Home About Tides Shop Contact " * 10
    assert main_text(menu + "Hi", [(0, len(menu))]) == menu + "Hi"  # 2 characters left: none found
    assert main_text(menu + ARTICLE, [(0, len(menu))]) == ARTICLE


def test_the_title_is_the_h1_the_pages_title_names_else_the_titles_longest_part():
    assert parse_html(BLOG.encode(), "http://coast.test/how").title == "How a lighthouse works"
    assert choose_title("Best lamp oil? - Keepers Forum", "", "Best lamp oil?") == "Best lamp oil?"
    assert choose_title("os.path — Common pathname manipulations — Python 3.11 docs", "",
                        "os.path — Common pathname manipulations¶") == "os.path — Common pathname manipulations"
    assert choose_title("Coastal Notes | Tides and currents explained", "", "Welcome!") == \
        "Tides and currents explained"  # an <h1> the title does not name is the site's, not the page's
    assert choose_title("Tides", "Tides and currents, explained by a keeper", "") == \
        "Tides and currents, explained by a keeper"
    assert choose_title("", "", "Only a heading") == "Only a heading"


# -- what is stored, indexed and exported --------------------------------------------------

def store(n: int, address: str, html: str) -> Document:
    host, _ = Host.objects.get_or_create(origin="/".join(address.split("/")[:3]))
    url = Url.objects.create(url_key=n, url=address, host=host)
    page = indexer.prepare_page(url.id, url.url, 200, "text/html", "utf-8", html.encode())
    assert indexer.store_pages([page]) == {url.id: "indexed"}
    return Document.objects.get(url=url)


@pytest.mark.django_db
def test_furniture_words_rank_below_main_content_words():
    backend = get_search_backend()
    # "foghorn" is in the first site's related-links list and in the second's article.
    store(1, "http://coast.test/how", BLOG)
    article = ARTICLE + " The foghorn of the point sounded twice a minute in fog, and the keepers hated it."
    other = store(2, "http://harbour.test/fog", f"<html><head><title>Fog at the point</title></head><body>"
                  f"<div class=menu><a href=/>Harbour</a> <a href=/a>Boats</a> <a href=/b>Tides</a></div>"
                  f"<div class=entry-content><p>{article}</p></div></body></html>")
    hits = backend.search("foghorn")
    assert [hit.url for hit in hits] == [other.page_url]  # the page whose content has it, and it alone
    assert [hit.url for hit in backend.search("harbour gossip")] == []  # sidebar words are not indexed
    # A phrase of the main content finds its page first, with a snippet from the content.
    hit = backend.search('"wound the clockwork twice a night"')[0]
    assert hit.url == "http://coast.test/how" and "clockwork" in hit.snippet_text
    assert "cookies" not in backend.search("keeper lamp")[0].snippet_text


@pytest.mark.django_db
def test_the_export_has_the_text_and_its_main_text():
    document = store(3, "http://coast.test/how", BLOG)
    row = next(row for row in indexer.document_rows() if row["id"] == document.id)
    assert "We use cookies" in row["text"] and "We use cookies" not in row["main_text"]
    assert row["main_text"].startswith("How a lighthouse works The keeper climbed")
    assert list(row).index("main_text") == list(row).index("text") + 1


@pytest.mark.django_db
def test_a_recrawl_takes_the_old_main_text_out_of_the_index():
    backend = get_search_backend()
    store(4, "http://coast.test/how", BLOG)
    assert len(backend.search("clockwork")) == 1
    url = Url.objects.get(url_key=4)
    page = indexer.prepare_page(url.id, url.url, 200, "text/html", "utf-8",
                                BLOG.replace("clockwork", "mechanism").encode())
    assert indexer.store_pages([page]) == {url.id: "indexed"}
    assert len(backend.search("clockwork")) == 0 and len(backend.search("mechanism")) == 1


@pytest.mark.django_db
def test_a_gemtext_pages_art_alt_text_stays_indexed():
    backend = get_search_backend()
    host = Host.objects.create(origin="gemini://capsule.test")
    url = Url.objects.create(url_key=5, url="gemini://capsule.test/", host=host)
    body = "# Lamps\n```lighthouse drawing\n  /\\\n /__\\\n |[]|\n```\nA page about lamps and their keepers.\n"
    page = indexer.prepare_page(url.id, url.url, 200, "text/gemini", "utf-8", body.encode())
    assert page.parsed.boilerplate  # the art's alt text is furniture for the snippet …
    assert indexer.store_pages([page]) == {url.id: "indexed"}
    assert [hit.url for hit in backend.search("drawing")] == [url.url]  # … and indexed, as before
