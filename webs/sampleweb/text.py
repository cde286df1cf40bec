"""Deterministic pseudo-prose and HTML rendering for the sample web.

Why this module exists: page bodies must look like real text (a Zipf-like
word distribution, sentences, paragraphs, headings) so that a crawler's
parsing, hashing and indexing are exercised realistically, yet every byte
must be reproducible in any process from the seed alone.  Generating prose
per request would be far too slow for a benchmark server, so a vocabulary
and a pool of paragraphs are built once per seed; a page body is then just a
cheap join of pool paragraphs picked by a page-specific RNG.

Unique words: every served page carries one word that occurs on no other
page.  Vocabulary words never contain the letter "q"; a unique word is
"qu" + code + "qz" where the code never contains "q" either.  Since the only
"q"s on any page belong to its unique word, no unique word can occur (even as
a substring) on another page, and the code is an injective encoding of
(host index, page index).
"""
from __future__ import annotations

import itertools
import random
from html import escape

_ONSETS = ("b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r",
           "s", "t", "v", "w", "y", "z", "br", "cr", "dr", "fl", "gr", "pl",
           "st", "tr", "sh", "th", "ch", "sl", "gl")
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o", "ai", "ea", "ou", "io")
_CODAS = ("", "", "", "", "n", "r", "s", "l", "m", "st", "nd", "rk")

# Digits of the unique-word code: no "q" (see module doc) and no "w"
# (used as the separator between host code and page code).
_CODE_SYLLABLES = tuple(c + v for c in "bdfgklmnprstvz" for v in "aeiou")


def _encode(number: int) -> str:
    """Injective base-70 encoding of a non-negative int into syllables."""
    if number < 0:
        raise ValueError("negative code")
    base = len(_CODE_SYLLABLES)
    digits = []
    while True:
        number, rest = divmod(number, base)
        digits.append(_CODE_SYLLABLES[rest])
        if number == 0:
            return "".join(reversed(digits))


def unique_word(host_index: int, local_index: int) -> str:
    """The word that only the page (host_index, local_index) contains."""
    return "qu" + _encode(host_index) + "w" + _encode(local_index) + "qz"


class Prose:
    """Vocabulary, paragraph pool and headings derived from one seed."""

    def __init__(self, seed: int, vocab_size: int = 3000, pool_size: int = 400):
        rng = random.Random(f"sampleweb-prose:{seed}")
        seen: set[str] = set()
        words: list[str] = []
        while len(words) < vocab_size:
            count = rng.choice((1, 1, 2, 2, 2, 3, 3, 4))
            word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
                           for _ in range(count))
            if 2 <= len(word) <= 14 and word not in seen:
                seen.add(word)
                words.append(word)
        # Frequent words are short, as in natural language (stable sort keeps
        # the seed-determined order within one length).
        words.sort(key=len)
        self.words = tuple(words)
        # Zipf-Mandelbrot weights: natural-looking, without one dominating word.
        self._cum = tuple(itertools.accumulate(1.0 / (rank + 3) for rank in range(len(words))))
        self.paragraphs = tuple(self._paragraph(rng) for _ in range(pool_size))
        self.headings = tuple(self.phrase(rng, rng.randint(2, 5)) for _ in range(pool_size // 4))

    def pick(self, rng: random.Random, count: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self._cum, k=count)

    def phrase(self, rng: random.Random, count: int) -> str:
        """Title-cased words, for headings, link texts and names."""
        return " ".join(w.capitalize() for w in self.pick(rng, count))

    def sentence(self, rng: random.Random) -> str:
        words = self.pick(rng, rng.randint(5, 18))
        words[0] = words[0].capitalize()
        if len(words) > 8 and rng.random() < 0.5:
            cut = rng.randint(3, len(words) - 3)
            words[cut] += ","
        return " ".join(words) + rng.choice((".", ".", ".", ".", "?", "!"))

    def _paragraph(self, rng: random.Random) -> str:
        return " ".join(self.sentence(rng) for _ in range(rng.randint(2, 7)))


def _link_html(link) -> str:
    rel = f' rel="{escape(link.rel)}"' if link.rel else ""
    return f'<li><a{rel} href="{escape(link.href)}">{escape(link.text)}</a></li>\n'


def render_html(prose: Prose, rng: random.Random, *, title: str, heading: str,
                unique: str, links, target_size: int, meta_robots: str = "",
                base_href: str = "", charset: str = "utf-8",
                extra_html: str = "") -> str:
    """Render an HTML5 page of exactly target_size characters.

    All characters are ASCII except those in extra_html, so for utf-8 pages
    without extra_html (and for any latin-1 page) characters == bytes.  If the
    fixed parts (head, links, footer) are longer than target_size the page is
    simply that long.
    """
    top = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n',
        f'<meta charset="{charset}">\n',
        f'<meta name="robots" content="{meta_robots}">\n' if meta_robots else "",
        f'<base href="{escape(base_href)}">\n' if base_href else "",
        f"<title>{escape(title)}</title>\n</head>\n<body id=\"top\">\n",
        f"<header><h1>{escape(heading)}</h1>\n",
        f'<p class="lead">{unique} {prose.sentence(rng)}</p></header>\n',
        extra_html,
    ]
    if links:
        top.append("<nav><ul>\n")
        top.extend(_link_html(link) for link in links)
        top.append("</ul></nav>\n")
    top.append("<main>\n")
    head = "".join(top)
    tail = f"</main>\n<footer><p>{prose.sentence(rng)}</p></footer>\n</body>\n</html>\n"
    budget = target_size - len(head) - len(tail)
    parts = [head]
    paragraphs, headings = prose.paragraphs, prose.headings
    count = 0
    while budget > 0:
        if count % 5 == 0:
            piece = f"<h2>{rng.choice(headings)}</h2>\n"
        else:
            piece = f"<p>{rng.choice(paragraphs)}</p>\n"
        if len(piece) > budget:
            # len("<p>") + len("</p>\n") == 8; cut a paragraph to fit exactly.
            if budget >= 9:
                text = rng.choice(paragraphs).ljust(budget - 8)[:budget - 8]
                piece = f"<p>{text}</p>\n"
            else:
                piece = "\n" * budget
        parts.append(piece)
        budget -= len(piece)
        count += 1
    parts.append(tail)
    return "".join(parts)
