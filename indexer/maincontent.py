"""A page's main content apart from its site's furniture, on the lxml tree the parser already has.

Most real templates mark nothing: their menus are lists of links in a <div>, their footers
a <div class="footer">, their cookie banners and newsletter boxes a <div> with a name that
says so. An element is furniture (the outermost one found is taken whole; nothing inside
it is looked at) when:

1. it is a landmark the parser found (<nav>, <aside>, a page-level <header>/<footer>, ARIA
   roles: indexer/parse.py), or its class or id names furniture (menu, sidebar,
   breadcrumb, cookie, share, related…) and none names content (content, article, post,
   main…); either way holding less than half the page's text (a <header> left unclosed,
   a <div class="page-wrapper-menu-open"> around everything is the page);
2. it is a form control (<select>, <label>, a short <button>), a <form> holding less than a
   fifth of the text (search boxes, sign-up forms; ASP.NET wraps whole pages in one), or
   a short <noscript> ("enable JavaScript");
3. it lies beside the main block: from the body down, while one child holds MAIN_SHARE of
   its parent's prose (text outside links and outside furniture), that child is the way
   on, and its siblings are furniture unless they are headings or alike (same tag and
   class: a thread's posts, a listing's items);
4. outside the main block, it is a block of mostly link text in short links: a menu, a
   tag cloud, a footer's columns of links. Inside the main block such a list is content
   (a list page, a table of contents), and a listing's links are headlines, longer.

These are Readability's "unlikely candidates" and top candidate, Boilerpipe's link density
and jusText's short blocks, applied to elements; measured on WCXB's real pages in
bench/maincontent.py against trafilatura, resiliparse, readability-lxml and justext
(docs/content.md has the table). Per element one bottom-up pass sums two numbers (text and
link-text characters); the rules are top-down walks that stop at what they take.
"""

import re
from functools import lru_cache

# Names of furniture in class and id attributes, as words or parts of words (BEM's
# "site-header__menu", Bootstrap's "navbar", WordPress's "widget-area").
_FURNITURE_NAME = re.compile(
    r"(?i)(?:^|[\s_-])(?:nav|navbar|navigation|menu|menubar|submenu|breadcrumbs?|sidebar|side-bar|"
    r"footer|masthead|topbar|toolbar|cookies?|consent|gdpr|newsletter|subscribe|subscription|signup|"
    r"social|share|sharing|related|recommended|promo|advert|advertisement|ads|sponsor(?:ed)?|"
    r"pagination|pager|skip-link|skiplink|modal|popup|disclaimer|copyright|login|"
    r"minicart|search-form|searchform|site-header|global-header|header-nav|"
    r"outbrain|taboola)(?:$|[\s_-])")
_CONTENT_NAME = re.compile(r"(?i)(?:^|[^a-z])(?:content|article|post|entry|main|body|story|text|prose|"
                           r"blog|thread|message|topic|question|answer|product|description|docs?|layout|"
                           r"with-sidebar|has-sidebar)(?:$|[^a-z])")
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_NEVER = frozenset({"html", "body", "main", "article"})
_CONTROLS = frozenset({"select", "label", "option", "input", "textarea"})
SHORT_BUTTON_CHARS = 40  # "Add to cart", "Sign up": a longer button is an accordion's question
SHORT_NOSCRIPT_CHARS = 300  # "This site needs JavaScript"; a longer <noscript> is the page for readers without scripts
_LINK_BLOCKS = frozenset({"ul", "ol", "dl", "div", "table", "tbody", "tr", "td", "section", "p", "li", "span",
                          "menu", "center", "font"})

MAX_FURNITURE_SHARE = 0.5  # an element holding this share of the text or more is never furniture (broken markup)
FORM_SHARE = 0.2
LINK_DENSITY = 0.6  # a block whose text is at least this share of link text …
SHORT_LINK_CHARS = 30  # … in links of at most this many characters on average is a list of links
MAIN_SHARE = 0.85  # a child holding this share of its parent's prose is the way to the main block


def furniture(body, landmarks: list = ()) -> list:
    """The outermost elements under `body` (an lxml element, scripts and styles already
    gone) that are furniture: the landmarks given (the parser's <nav>, <header>, roles…)
    that hold less than half the page's text (a <header> left unclosed holds the whole
    page), and those the rules above find."""
    # Characters of text (a text's length without its outer whitespace: indentation is not
    # text), of link text, and links, per element with its descendants.
    chars: dict = {}
    links: dict = {}
    counts: dict = {}
    get = chars.get
    elements = list(body.iter())
    elements.reverse()  # children before parents: the sums flow up
    for el in elements:
        text = el.text
        own = get(el, 0) + (len(text.strip()) if text else 0)
        chars[el] = own
        if el is body:
            continue
        parent = el.getparent()
        tail = el.tail
        chars[parent] = get(parent, 0) + own + (len(tail.strip()) if tail else 0)
        if el.tag == "a":
            links[el] = own
            counts[el] = counts.get(el, 0) + 1
        if el in links:
            links[parent] = links.get(parent, 0) + links[el]
            counts[parent] = counts.get(parent, 0) + counts[el]
    total = chars.get(body, 0)
    if not total:
        return []
    landmarks = set(landmarks)

    def named(el, size):
        return (el in landmarks and size < MAX_FURNITURE_SHARE * total) or _is_furniture(el, size, total)

    def link_list(el, size):
        return el.tag in _LINK_BLOCKS and size < MAX_FURNITURE_SHARE * total and \
            _is_link_list(size, links.get(el, 0), counts.get(el, 0))

    found = _walk(body, chars, named, set())
    block, beside = _main_block(body, chars, links, found)
    # Lists of short links inside the main block are its content (a list page, a table of
    # contents); outside it they are menus.
    skip = set(found).union(beside)
    if block is not body:
        skip.add(block)
    return found + beside + _walk(body, chars, link_list, skip)


def _walk(body, chars: dict, test, skip: set) -> list:
    """The outermost elements under body for which test(element, its size) holds, not
    looking into those in skip."""
    found = []
    stack = list(reversed(body))
    while stack:
        el = stack.pop()
        size = chars.get(el, 0)
        if not size or el in skip or not isinstance(el.tag, str):
            continue
        if test(el, size):
            found.append(el)
        else:
            stack.extend(reversed(el))
    return found


def _main_block(body, chars: dict, links: dict, found: list) -> tuple:
    """The page's main block and what lies beside it: from the body down, while one child
    holds MAIN_SHARE of its parent's prose (text outside links and outside furniture), that
    child is the way on; its text-bearing siblings on the way are furniture."""
    prose = {el: chars.get(el, 0) - links.get(el, 0) for el in chars}
    for el in found:
        lost = prose.get(el, 0)
        if lost:
            for ancestor in el.iterancestors():
                if ancestor in prose:
                    prose[ancestor] -= lost
        prose[el] = 0
    beside = []
    el = body
    while True:
        here = prose.get(el, 0)
        if here <= 0:
            break
        way = None
        for child in el:
            if prose.get(child, 0) >= MAIN_SHARE * here:
                way = child
                break
        if way is None:
            break
        kind = _kind(way)
        # A post's or an item's like are content too, and so is a heading (an article's <h1>
        # often stands outside the block of its text).
        beside.extend(child for child in el if child is not way and chars.get(child, 0) > 0
                      and _kind(child) != kind and child.tag not in _HEADINGS)
        el = way
    return el, beside


def _is_furniture(el, size: int, total: int) -> bool:
    tag = el.tag
    if tag in _NEVER:
        return False
    if tag in _CONTROLS:
        return True
    if tag == "noscript":
        return size < SHORT_NOSCRIPT_CHARS
    if tag == "button":
        return size <= SHORT_BUTTON_CHARS
    if tag == "form":
        return size < FORM_SHARE * total
    names = (el.get("class") or "") + " " + (el.get("id") or "")
    return len(names) > 1 and size < MAX_FURNITURE_SHARE * total and _names_furniture(names)


@lru_cache(maxsize=4096)  # a page repeats its class names ("item", "card"), and a site its pages'
def _names_furniture(names: str) -> bool:
    return _FURNITURE_NAME.search(names) is not None and _CONTENT_NAME.search(names) is None


def _is_link_list(size: int, link_chars: int, link_count: int) -> bool:
    return link_chars >= LINK_DENSITY * size and link_chars <= SHORT_LINK_CHARS * link_count


def _kind(el) -> tuple:
    """An element's tag and class: the posts of a thread, the items of a list share them."""
    return el.tag, el.get("class")


# -- the title

# What separates a title's parts: "Page — Site", "Site | Page", "Section :: Page".
_TITLE_PARTS = re.compile(r"\s+[—–|·•:-]\s+|\s*::\s*|\s+[»›]\s+")
_WORD = re.compile(r"\w+")
_AFTER_HEADING = " ¶#§"  # Sphinx's and others' anchor marks after a heading


def choose_title(title: str, og_title: str, h1: str) -> str:
    """The page's own title, from its <title>, its og:title and its first <h1>: the <h1>
    when the <title> or og:title names it too (the page confirms it: "Page | Site" and
    <h1>Page</h1>); else og:title's longest part, else <title>'s (the site's name is the
    shorter part as a rule). Measured against WCXB's ground-truth titles in
    bench/maincontent.py: <title> as it is 20 % exact, og:title 41 %, <h1> 63 %, this 74 %."""
    h1 = h1.rstrip(_AFTER_HEADING)
    words = _words(h1)
    if words.strip() and (words in _words(title) or words in _words(og_title)):
        return h1
    for candidate in (og_title, title):
        parts = [part for part in _TITLE_PARTS.split(candidate) if _WORD.search(part)]
        if parts:
            return max(parts, key=len)
    return title or og_title or h1


def is_part_of(chosen: str, title: str) -> bool:
    """Whether `chosen` is whole parts of `title` ("Page" of "Page | Site"), so what the
    title has beside it is other parts (a site's name), not words of the page's title
    ("Page (2024)")."""
    parts = [part for part in _TITLE_PARTS.split(title) if _WORD.search(part)]
    wanted = _words(chosen)
    return any(_words(" ".join(parts[i:j])) == wanted for i in range(len(parts)) for j in range(i + 1, len(parts) + 1))


def _words(text: str) -> str:
    return " " + " ".join(_WORD.findall(text.casefold())) + " "


# -- the stored form: Document.body holds the whole visible text, Document.boilerplate the
# ranges of it that are furniture ("start-end", space-separated).

MIN_MAIN_CHARS = 200  # less main text than this, and less than MIN_MAIN_SHARE of the page: none was found
MIN_MAIN_SHARE = 0.1


def encode_spans(spans: list[tuple[int, int]]) -> str:
    """(start, end) ranges as Document.boilerplate keeps them: "12-340 900-1200"."""
    return " ".join(f"{a}-{b}" for a, b in spans)


def decode_spans(value: str) -> list[tuple[int, int]]:
    spans = []
    for item in (value or "").split():
        a, _, b = item.partition("-")
        if a.isdigit() and b.isdigit():
            spans.append((int(a), int(b)))
    return spans


def without_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """text with these ranges left out (a space where each was)."""
    pieces, position = [], 0
    for a, b in sorted(spans):
        if a >= len(text):
            break
        if a > position:
            pieces.append(text[position:a])
        position = max(position, b)
    pieces.append(text[position:])
    return " ".join(" ".join(pieces).split())


GEMTEXT_TYPE = "text/gemini"


def indexed_text(body: str, boilerplate, content_type: str = "") -> str:
    """What the index holds of a document's text: an HTML page's main text; a gemtext
    page's whole text (its art blocks' alt text is furniture for snippets only, as it
    always was)."""
    return body if content_type == GEMTEXT_TYPE else main_text(body, boilerplate)


def main_text(body: str, boilerplate) -> str:
    """The page's main text: its visible text without the furniture ranges (boilerplate: a
    list of (start, end) or Document.boilerplate's string). A page where no main content
    was found (less than MIN_MAIN_CHARS and less than MIN_MAIN_SHARE of the text is left)
    keeps all its text."""
    spans = decode_spans(boilerplate) if isinstance(boilerplate, str) else boilerplate
    if not spans or not body:
        return body
    main = without_spans(body, spans)
    if len(main) < MIN_MAIN_CHARS and len(main) < MIN_MAIN_SHARE * len(body):
        return body
    return main
