"""Text fingerprints (indexer/fingerprint.py): normalization, the text hash, the SimHash and
what a revisit makes of them. Pure functions: no database, no network.

Pages are seeded pseudo-prose (a Zipf-like vocabulary, sentences, paragraphs; the same idea
as the sample web's generator, kept here so that these distances depend on nothing else),
so every distance asserted here is the same on every run."""

import hashlib
import itertools
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from indexer import fingerprint as fp
from indexer.fingerprint import (
    CHANGED,
    DEFAULT_THRESHOLD,
    FIRST,
    NOISE,
    UNCHANGED,
    Fingerprint,
    compare,
    fingerprint,
    hamming,
    normalized,
    simhash64,
    text_hash,
)


class Prose:
    """Made-up words of 1-4 syllables with Zipf-Mandelbrot frequencies (the word of rank r has
    weight 1/(r + 3); short words are the frequent ones, as in natural language), in
    sentences of 5-18 words."""

    ONSETS = "b c d f g h j k l m n p r s t v w y z br cr dr fl gr pl st tr sh th ch sl gl".split()
    VOWELS = "a e i o u a e o ai ea ou io".split()
    CODAS = ["", "", "", "", "n", "r", "s", "l", "m", "st", "nd", "rk"]

    def __init__(self, seed: int, size: int = 3000):
        rng = random.Random(f"fingerprint-prose:{seed}")
        words: set[str] = set()
        while len(words) < size:
            syllables = rng.choice((1, 1, 2, 2, 2, 3, 3, 4))
            words.add("".join(rng.choice(self.ONSETS) + rng.choice(self.VOWELS) + rng.choice(self.CODAS)
                              for _ in range(syllables)))
        ordered = sorted(words)
        rng.shuffle(ordered)
        ordered.sort(key=len)  # stable: random order within a length
        self.words = ordered
        self.cumulative = list(itertools.accumulate(1 / (rank + 3) for rank in range(size)))

    def pick(self, rng: random.Random, count: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self.cumulative, k=count)

    def sentence(self, rng: random.Random) -> str:
        words = self.pick(rng, rng.randint(5, 18))
        words[0] = words[0].capitalize()
        if len(words) > 8 and rng.random() < 0.5:
            words[rng.randint(3, len(words) - 3)] += ","
        return " ".join(words) + rng.choice(".....?!")


PROSE = Prose(7)
TITLE = "Harbour Office · Opening hours"
HEADINGS = "Opening hours · Contact"


# --- references: the definitions, written the slow and obvious way -------------------------

def reference_words(text: str) -> list[str]:
    return re.findall(r"\w+", re.sub(r"\d+", "0", text.casefold()))


def reference_simhash(words: list[str], distinct: bool = True) -> int:
    """Bigram SimHash, one feature per distinct bigram (or, with distinct=False, per word
    position, as this module first counted them), 64 Python additions per feature."""
    if not words:
        return 0

    def halves(word):
        digest = hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=16,
                                 person=b"crawlerweb-sh1").digest()
        return int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:], "little")

    sequence = [""] + words + [""]
    totals = [0] * 64
    bigrams = list(zip(sequence, sequence[1:]))
    for a, b in set(bigrams) if distinct else bigrams:
        feature = halves(a)[0] ^ halves(b)[1]
        for k in range(64):
            totals[k] += 1 if feature >> k & 1 else -1
    value = sum(1 << k for k in range(64) if totals[k] > 0)
    return value - (1 << 64) if value >= 1 << 63 else value


# --- deterministic pages and edits ---------------------------------------------------------

def sentences(rng: random.Random, words: int) -> list[str]:
    out, count = [], 0
    while count < words:
        sentence = PROSE.sentence(rng)
        out.append(sentence)
        count += len(sentence.split())
    return out


def paragraph(rng: random.Random, words: int) -> str:
    return " ".join(sentences(rng, words))


def edits(seed: int) -> dict[str, tuple[str, str]]:
    """Kinds of revisit, each an (old text, new text) pair."""
    rng = random.Random(f"fingerprint-test:{seed}")
    out = {}
    page = paragraph(rng, 300)
    out["timestamp"] = (f"Updated 2024-05-01 12:34, 17 comments. {page}",
                        f"Updated 2025-11-30 09:07, 203 comments. {page}")
    cut = page.index(". ", len(page) // 3) + 2  # an ad line in the middle of a 300-word page

    def ad():
        return "Sponsored: " + " ".join(w.capitalize() for w in PROSE.pick(rng, rng.randint(1, 2))) + ". "

    out["ad"] = (page[:cut] + ad() + page[cut:], page[:cut] + ad() + page[cut:])
    text = sentences(rng, 500)
    words = " ".join(text).split()
    i = rng.randrange(len(words))
    changed = list(words)
    while changed[i] == words[i]:
        changed[i] = PROSE.pick(rng, 1)[0]
    out["word"] = (" ".join(words), " ".join(changed))
    j = rng.randrange(len(text))
    out["sentence"] = (" ".join(text), " ".join(text[:j] + [PROSE.sentence(rng)] + text[j + 1:]))
    paragraphs = [paragraph(rng, 170) for _ in range(3)]
    k = rng.randrange(3)
    out["paragraph"] = ("\n".join(paragraphs),
                        "\n".join(paragraphs[:k] + [paragraph(rng, 170)] + paragraphs[k + 1:]))
    out["rewrite"] = (" ".join(text), paragraph(rng, 500))
    return out


def distance(old: str, new: str) -> int:
    return hamming(fingerprint(TITLE, HEADINGS, old).simhash, fingerprint(TITLE, HEADINGS, new).simhash)


SEEDS = range(12)


@pytest.fixture(scope="module")
def distances() -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for seed in SEEDS:
        for kind, (old, new) in edits(seed).items():
            out.setdefault(kind, []).append(distance(old, new))
    return out


# --- normalization -------------------------------------------------------------------------

def test_digits_only_changes_give_the_same_text_hash():
    old = fingerprint("Scores 2024", "Round 3", "Updated 2024-05-01 12:34:56 UTC. 17 comments, 4.5 stars, $1299.")
    new = fingerprint("Scores 2025", "Round 12", "Updated 2025-11-30 09:07:00 UTC. 203 comments, 3.9 stars, $999.")
    assert old == new
    assert compare(old.text_hash, old.simhash, new) == (UNCHANGED, 0)
    # Unicode digits too (Arabic-Indic, fullwidth), and a run is one "0" however long.
    assert normalized("", "", "page ٣٤ of ١٢٠") == normalized("", "", "page 7 of 99999999") == "\n\npage 0 of 0"
    assert normalized("", "", "v１２ item42b") == "\n\nv0 item0b"


def test_case_whitespace_and_punctuation_do_not_count():
    a = fingerprint("Opening Hours", "MONDAY · Tuesday", "We open at nine.\n\n   Straße  closed!")
    b = fingerprint("opening hours", "monday - tuesday", "we OPEN at nine -- STRASSE closed")
    assert a == b
    assert normalized("A  B", "", "“Don’t” — stop…") == normalized("a b", "", '"don\'t" - stop...') == "a b\n\ndon t stop"


def test_normalized_text_layout():
    assert normalized("Title here", "One · Two", "Body,  text.") == "title here\none two\nbody text"
    # A word moving between title and body is a change of the text.
    assert text_hash(normalized("a b", "", "")) != text_hash(normalized("a", "", "b"))
    # A changed title or heading is a change.
    assert fingerprint("Old title", "", "body").text_hash != fingerprint("New title", "", "body").text_hash


_ALPHABET = (list("abcXYZ_019 .,;:-'\"\t\n\r\x00<>=&") + list("\u00a0·’‘“”–—…«»©") + [
    "é", "É", "e\u0301", "ß", "ẞ", "İ", "ı", "\u0345", "Σ", "ς", "ﬁ", "™", "Ⅻ", "²", "½", "٣", "０", "१",
    "\u0338", "中", "文", "ا", "\u200b", "\u2003", "\u3000", "\u2028", "\ufeff", "\U0001f600", "\ud800", "\ufffd",
])


def test_normalized_matches_its_definition_on_random_unicode():
    """The fast path (ASCII in bytes, separators replaced, odd words through regexes) gives
    exactly re.findall(r"\\w+", re.sub(r"\\d+", "0", text.casefold()))."""
    rng = random.Random("fingerprint-unicode")
    for _ in range(4000):
        text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 40)))
        assert normalized("", "", text) == "\n\n" + " ".join(reference_words(text)), repr(text)
    for text in edits(0).values():  # long ASCII prose takes the all-ASCII path
        assert normalized("", "", text[0]) == "\n\n" + " ".join(reference_words(text[0]))


def test_normalized_on_random_code_points():
    """Any character at all, in runs and next to ASCII words and digits."""
    rng = random.Random("fingerprint-code-points")
    for _ in range(300):
        chars = [chr(rng.randrange(0x80, 0x110000)) for _ in range(rng.randint(1, 40))]
        text = "".join(rng.choice(("", " ", "a", "Z", "7", "-")) + c for c in chars)
        assert normalized("", "", text) == "\n\n" + " ".join(reference_words(text)), repr(text)


def test_many_distinct_characters_take_the_regex_path():
    text = "".join(chr(0x410 + i) + "x " for i in range(64)) + "Ⅻ ٣4 ΣΑΣ"  # Cyrillic capitals, and more
    assert normalized("", "", text) == "\n\n" + " ".join(reference_words(text))


def test_case_folding_is_idempotent_on_word_characters():
    """Each distinct non-ASCII character is replaced once by its (per-character) folding; that
    is the definition only if no word character in a folding would itself fold further."""
    for code in range(0x80, sys.maxunicode + 1):
        for c in chr(code).casefold():
            assert not (c.isalnum() and c.casefold() != c), hex(code)


def test_text_hash_is_32_hex_blake2b():
    value = text_hash("hello world")
    assert value == hashlib.blake2b(b"hello world", digest_size=16).hexdigest()
    assert re.fullmatch(r"[0-9a-f]{32}", value)


# --- SimHash -------------------------------------------------------------------------------

def test_simhash_equals_the_reference_implementation():
    rng = random.Random("fingerprint-reference")
    for n in (1, 2, 3, 7, 64, 300):
        for _ in range(5):
            words = PROSE.pick(rng, n)
            assert simhash64(" ".join(words)) == reference_simhash(words), (n, words[:5])
    words = reference_words("".join(rng.choice(_ALPHABET) for _ in range(400)))
    assert simhash64(" ".join(words)) == reference_simhash(words)


def test_known_answers():
    """Pinned values: an accidental change of the algorithm (features, hash, bit order,
    normalization) changes every stored fingerprint, so it must be deliberate."""
    assert simhash64("the quick brown fox jumps over the lazy dog") == KNOWN_SIMHASH
    assert fingerprint("Fox", "", "The quick brown fox jumps over the lazy dog, 3 times.") == KNOWN_FINGERPRINT


KNOWN_SIMHASH = 1469902187296703917
KNOWN_FINGERPRINT = Fingerprint("b765e1c6b0027cd6a02fcc311342b9bf", 1508393660870485437, 12)


def test_identical_inputs_identical_outputs():
    old, new = edits(3)["paragraph"]
    assert fingerprint(TITLE, HEADINGS, old) == fingerprint(TITLE, HEADINGS, old)
    assert simhash64(normalized(TITLE, HEADINGS, new)) == simhash64(normalized(TITLE, HEADINGS, new))


def test_fingerprint_is_text_hash_and_simhash_of_normalized():
    for old, new in edits(5).values():
        for title, headings, text in ((TITLE, HEADINGS, old), ("", "", new), ("Ünïcode Tïtle", "", "ΣΊΣΥΦΟΣ " + new)):
            norm = normalized(title, headings, text)
            assert fingerprint(title, headings, text) == Fingerprint(text_hash(norm), simhash64(norm), len(norm.split()))


def test_stable_across_processes():
    """Never Python's hash(): another process, with another hash seed, gets the same values."""
    old, _ = edits(1)["sentence"]
    code = ("import sys; from indexer.fingerprint import fingerprint; "
            "print(tuple(fingerprint('T', 'H', sys.stdin.read())))")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], input=old, capture_output=True, text=True, env=env,
                         cwd=Path(__file__).resolve().parents[2], check=True, timeout=60).stdout
    assert out.strip() == str(tuple(fingerprint("T", "H", old)))


def test_simhash_is_a_signed_64_bit_integer():
    rng = random.Random("fingerprint-signed")
    values = [simhash64(" ".join(PROSE.pick(rng, 40))) for _ in range(64)]
    assert all(-(1 << 63) <= v < 1 << 63 for v in values)
    assert any(v < 0 for v in values) and any(v > 0 for v in values)  # the top bit is used


def test_empty_text():
    empty = fingerprint("", "", "")
    assert normalized("", "", "") == "\n\n"
    assert empty == Fingerprint(text_hash("\n\n"), 0)
    assert simhash64("") == 0
    # Only punctuation and spaces is empty text, too.
    assert fingerprint("  ", "·", " -- ... \n ") == empty
    assert compare(empty.text_hash, empty.simhash, empty) == (UNCHANGED, 0)
    # Text appearing on an empty page is a change.
    full = fingerprint("", "", edits(0)["word"][0])
    assert compare(empty.text_hash, empty.simhash, full)[0] == CHANGED


def test_word_cache_does_not_change_results(monkeypatch):
    old, new = edits(2)["sentence"]
    expected = [fingerprint(TITLE, HEADINGS, old), fingerprint(TITLE, HEADINGS, new)]
    monkeypatch.setattr(fp, "_CACHE_LIMIT", 10)  # the cache is replaced at nearly every call
    monkeypatch.setattr(fp, "_word_hashes", fp._WordHashes())
    assert [fingerprint(TITLE, HEADINGS, old), fingerprint(TITLE, HEADINGS, new)] == expected
    assert len(fp._word_hashes) <= 10


# --- distances -----------------------------------------------------------------------------

def test_masked_timestamps_are_unchanged(distances):
    assert distances["timestamp"] == [0] * len(SEEDS)
    for seed in SEEDS:
        old, new = edits(seed)["timestamp"]
        assert fingerprint(TITLE, HEADINGS, old).text_hash == fingerprint(TITLE, HEADINGS, new).text_hash


def mean(values: list[int]) -> float:
    return sum(values) / len(values)


# The per-page bounds below hold for these 12 seeds; over 500 seeds a one-word edit is at
# most 8 bits (99.8% at most 6), an ad line at most 9, a replaced third of the page at least 7
# (97% at least 10), a rewrite at least 20. The means are the robust part.

def test_small_edits_are_close(distances):
    """A one-word change in a 500-word page, a rotating one- or two-word ad line in a
    300-word page: a few bits."""
    assert max(distances["word"]) <= 6, distances["word"]
    assert max(distances["ad"]) <= 8, distances["ad"]
    assert mean(distances["word"]) <= 2.5 and mean(distances["ad"]) <= 3.5, distances


def test_large_edits_are_far(distances):
    """Replacing one of three paragraphs, or rewriting the page: many bits."""
    assert min(distances["paragraph"]) >= 10, distances["paragraph"]
    assert min(distances["rewrite"]) >= 20, distances["rewrite"]
    assert mean(distances["paragraph"]) >= 14 and mean(distances["rewrite"]) >= 26, distances
    assert min(distances["paragraph"]) > max(distances["word"] + distances["ad"]) + 3


def test_distance_grows_with_the_edit(distances):
    """The SimHash measures the fraction of the text that changed."""
    assert (mean(distances["word"]) < mean(distances["sentence"]) < mean(distances["paragraph"])
            < mean(distances["rewrite"])), distances
    assert 2.5 <= mean(distances["sentence"]) <= 7, distances["sentence"]


def test_a_rewrite_of_a_long_page_is_far():
    """The reason for bigram features: word counts of two long texts in one language are
    nearly proportional, so a word-count SimHash barely moves when a long page is rewritten
    (~5 bits for 5000 words); bigrams move ~28."""
    rng = random.Random("fingerprint-long")
    old, new = paragraph(rng, 5000), paragraph(rng, 5000)
    assert distance(old, new) >= 20


def _with_figures(rng: random.Random, prose_words: int, figures: int) -> str:
    """Prose above a table of version numbers and dates: every figure normalizes to runs of
    "0", so the page's most frequent bigram by far is ("0", "0")."""
    table = " ".join(f"{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 20)} "
                     f"2026-{rng.randint(1, 12):02}-{rng.randint(1, 28):02}" for _ in range(figures))
    return paragraph(rng, prose_words) + "\n" + table


def test_repeated_bigrams_count_once():
    """Two unrelated pages over tables of figures are far apart, and rewriting such a page's
    prose is a change: a SimHash weighted by bigram counts followed ("0", "0") and put both
    within a bit or two (the count-weighted reference below shows it)."""
    rng = random.Random("fingerprint-figures")
    one, two = _with_figures(rng, 150, 200), _with_figures(rng, 150, 200)
    assert distance(one, two) >= 16
    rewritten = paragraph(rng, 150) + one[one.index("\n"):]
    assert distance(one, rewritten) > DEFAULT_THRESHOLD + 8

    def weighted(text):  # one feature per position, as this module first did
        return reference_simhash(normalized(TITLE, HEADINGS, text).split(), distinct=False)

    assert hamming(weighted(one), weighted(two)) <= DEFAULT_THRESHOLD
    assert hamming(weighted(one), weighted(rewritten)) <= DEFAULT_THRESHOLD
    # A page's own repeats: the same text twice over is the same set of bigrams but one.
    page = paragraph(rng, 300)
    assert hamming(simhash64(normalized("", "", page)), simhash64(normalized("", "", page + " " + page))) <= 2


def test_default_threshold_separates_noise_from_changes(distances):
    noise = [d <= DEFAULT_THRESHOLD for d in distances["word"] + distances["ad"]]
    assert sum(noise) >= 0.75 * len(noise), distances
    assert all(d > DEFAULT_THRESHOLD for d in distances["paragraph"] + distances["rewrite"])


# --- hamming and compare -------------------------------------------------------------------

def test_hamming_of_signed_values():
    assert hamming(0, 0) == 0
    assert hamming(-1, 0) == hamming(0, -1) == 64
    assert hamming(-1, (1 << 63) - 1) == 1  # only the sign bit
    assert hamming(-(1 << 63), 0) == 1
    assert hamming(-(1 << 63), (1 << 63) - 1) == 64
    assert hamming(-2, -1) == 1
    assert hamming(-1, (1 << 64) - 1) == 0  # the unsigned spelling of the same bits
    rng = random.Random("fingerprint-hamming")
    for _ in range(200):
        a, b = rng.randrange(-(1 << 63), 1 << 63), rng.randrange(-(1 << 63), 1 << 63)
        assert hamming(a, b) == hamming(b, a) == bin((a ^ b) & ((1 << 64) - 1)).count("1")
        assert hamming(a, a) == 0


def test_compare_observations():
    old_text, new_text = edits(4)["paragraph"]
    old = fingerprint(TITLE, HEADINGS, old_text)
    new = fingerprint(TITLE, HEADINGS, new_text)
    gap = hamming(old.simhash, new.simhash)
    assert gap > 0
    assert compare("", None, new) == (FIRST, None)
    assert compare(None, 5, new) == (FIRST, None)
    assert compare(new.text_hash, new.simhash, new) == (UNCHANGED, 0)
    assert compare(old.text_hash, old.simhash, new, gap) == (NOISE, gap)
    assert compare(old.text_hash, old.simhash, new, gap - 1) == (CHANGED, gap)
    assert compare(old.text_hash, None, new, 64) == (CHANGED, None)  # no SimHash to compare
    # Text hash differs but the SimHash happens to be equal: noise at distance 0.
    assert compare(old.text_hash, new.simhash, new, 0) == (NOISE, 0)
    assert compare(old.text_hash, old.simhash, new) == (CHANGED if gap > DEFAULT_THRESHOLD else NOISE, gap)
    assert {FIRST, UNCHANGED, NOISE, CHANGED} == {"first", "unchanged", "noise", "changed"}


def test_words_moved_counts_what_the_text_lost_and_gained():
    body = "The harbour keeps its boats in winter under long sheds of tarred timber. " * 20
    old = ("Harbour news", "Winter", body + "Sponsored by Acme.")
    assert fp.words_moved(old, old, 4) == 0
    assert fp.words_moved(old, ("Harbour news", "Winter", body + "Sponsored by Globex!"), 4) == 2  # one rotated
    assert fp.words_moved(old, ("Harbour News", "WINTER", body + "sponsored  by acme"), 4) == 0  # as normalized
    assert fp.words_moved(old, ("Harbour news", "Winter", body + "Sponsored by Acme. Updated 2026-11-26"), 4) == 4  # 0-0-0
    # a new sentence of twelve words: past the limit, counted no further than limit + 1
    sentence = " The ferry to the northern islands now leaves an hour earlier on Sundays."
    assert fp.words_moved(old, ("Harbour news", "Winter", body + sentence + " Sponsored by Acme."), 4) == 5
    assert fp.words_moved(old, ("Harbour news", "Winter", body + sentence + " Sponsored by Acme."), 100) == 13
    # per field: a word moving from the text into the title counts twice
    assert fp.words_moved(("a", "", "b c"), ("a c", "", "b"), 4) == 2
    # a reordering of the same words moves nothing (what a distance would count is the order)
    assert fp.words_moved(("", "", "one two three"), ("", "", "three two one"), 4) == 0
