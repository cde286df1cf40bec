r"""Text fingerprints for change detection: did a revisited page's TEXT change, beyond noise?

A revisit compares the extracted text (indexer.parse: title, headings, visible text), not
the bytes: markup, attributes (session tokens, cache busters), dates, times and counters
must not count as a change, and neither must a rotating one- or two-word ad. Two numbers:

* text_hash: blake2b-128 of the normalized text. Equal: "unchanged".
* simhash: a 64-bit SimHash (Charikar 2002, as used for near-duplicate detection by Manku,
  Jain & Das Sarma, WWW 2007) of the same text. When the text hash differs, the Hamming
  distance between the old and the new SimHash tells "noise" (at most the threshold) from
  "changed".

Normalization (normalized()), each step for a reason:

* Case folding (str.casefold, full Unicode folding: "Straße" == "STRASSE"): a template that
  switches a heading to capitals, or a changed title case, is not new content.
* Every run of digits becomes one "0" (Unicode digits too): dates, times, counters, view and
  comment counts, prices are the commonest noise; "Updated 2024-05-01 12:34, 17 comments"
  and "Updated 2025-11-30 09:07, 203 comments" normalize alike. The price: a page whose
  only change is a number (a score, a price) is not seen to change. ("1,000" is two numbers,
  "999" one: a counter growing a thousands separator is a small change, not none.)
* Words are runs of \w (Unicode-aware: letters, digits and underscore in any script);
  everything else (punctuation, symbols) only separates words, so straightened quotes, a
  changed bullet, dash or separator do not count.
* Whitespace: one space between words, the three fields on three lines, so re-wrapping and
  re-indenting count for nothing (a word moving between title and body does count).
* No Unicode normalization (NFC/NFKC): the hash is only compared with the same URL's
  earlier text, which a server sends in the same form; NFKC also has surprising corners
  ("™" becomes letters) and would cost time on every page.

The definition is re.findall(r"\w+", re.sub(r"\d+", "0", text.casefold())) (the tests check
the implementation against it on random Unicode). The implementation is several times
faster on the hot path: ASCII goes through one bytes.translate table; each DISTINCT
non-ASCII character on the page (usually a handful: curly quotes, dashes, no-break spaces,
accented letters) is replaced once with bytes.replace by its folding with non-word
characters as spaces and digits as "0", or left alone when that is itself; zeros are
squeezed and bytes.split() cuts the words. Pages with more than _REPLACE_AT_MOST characters
to replace (Cyrillic capitals...) use the regular expressions themselves.

SimHash features: word bigrams, each DISTINCT bigram once. Each word position gives the bigram
(previous word, word), with start and end markers, so a text of n words has at most n + 1
features and a one-word text still has a SimHash. Why bigrams and not single words, mean
Hamming distance over 100 seeded pages (the tests' generator, a Zipf-like vocabulary;
features weighted by their counts, as this module first did):

                                   words   words+bigrams   bigrams
    rotating 1-2 word ad, 300 w     1.0        1.4           2.4
    one word changed, 500 w         0.5        0.8           1.9
    one sentence replaced, 500 w    1.8        2.4           4.5
    1 of 3 paragraphs replaced      7.0        9.4          17.1
    rewrite, 500 w                 13.4       16.1          31.5
    1 of 30 paragraphs, 5000 w      0.8        1.0           4.5
    rewrite, 5000 w                 4.8        6.0          27.6

Weighted by their counts, single words make a long text's vector point where its most
frequent words point ("the", "of", "and"), and every text in the language shares those in
nearly the same proportions: two unrelated 5000-word texts come out 5 bits apart, as close
as a one-sentence edit. Bigrams alone rarely repeat in prose, so the SimHash measures the
FRACTION of the text that changed, whatever the page's length: E[distance] = 64 * angle /
pi, and replacing a fraction f of the bigrams gives cos(angle) ~ 1 - f: 1% -> ~3 bits, 2% ->
~4, 10% -> ~9, a third -> ~17.

Why each distinct bigram once: where bigrams DO repeat, a count-weighted vote follows the
repeated ones. Every run of digits is "0", so "3.11.2", "2024-05-01" and a table of figures
are runs of the bigram ("0", "0"); it was the most frequent bigram of 1,505 of the 2,822
pages of 50 words or more of `make bench-search`'s documentation corpus, and any two pages
it dominated had nearly the same SimHash: weighted by counts, 2,978 pairs of different
texts there were within 3 bits (a release-notes page next to the whole contents page of
another manual), and such a page's own edits barely moved its SimHash. Counted once each,
4 pairs are within 3 bits, all true near-duplicates (release notes of two versions that
differ in their version numbers, 4-9 % of their bigrams). On prose nothing changes (the
distances below were the same within 0.3 bits on average, weighted or not).

A bigram's 64-bit hash is L(a) XOR R(b), where L(w) || R(w) is the blake2b-128 of the word's
UTF-8 (never Python's hash(): the value is stored and compared across processes and
machines). Every feature bit is a fair coin and any two different bigrams' bits are
independent (they differ in a word, whose half is an independent coin); four bigrams
(a,b), (a,c), (d,b), (d,c) are not, which the measured distances show harmless (over 300
seeds, the mean distances of the edits below are within half a bit of those of a blake2b per
bigram; on the documentation corpus above, a blake2b per distinct bigram put 10 pairs
within 3 bits, this hash 4). The gain is speed: distinct words are hashed, not bigrams (a
bounded cache keeps them across pages), and the bits are counted over all features at
once with big integers (see _simhash_words).

Cost on the development VM (2 vCPUs, a noisy one: figures vary by 1.5x run to run), warm
word cache, `python` over the tests' prose: fingerprint() of a 5 KB text takes 0.28-0.30 ms,
of 30 KB 2.1-2.4 ms (3.5 with curly quotes, dashes, no-break spaces and accents), of 200 KB
27-38 ms; the count-weighted SimHash, measured beside it: 0.20, 1.3-1.6 (1.7-2.0), 9-10 ms.
The difference is cutting and deduplicating a 16-byte feature per word (~100-200 ns a word
on 500-5,000-word texts; more on longer ones, whose features outgrow the CPU's caches).

Threshold: DEFAULT_THRESHOLD = 4 bits. Distances over 500 seeded pages of the tests' edits:

    edit                                      median [5%-95%]  max   noise at 3 / 4 / 5 / 6
    changed timestamp (digits masked)            0                0   (same text hash)
    rotating 1-2 word ad line, 300-word page     2  [0-6]         9    73% / 88% / 94% / 97%
    one word changed, 500-word page              2  [0-4]         8    90% / 97% / 99% / 99.8%
    one sentence replaced, 500-word page         4  [1-8]        11    38% / 56% / 71% / 84%
    one of three paragraphs replaced            17 [11-22]        7 (min)    0 at every one
    rewrite (same vocabulary)                   32 [25-38]       20 (min)    0

Manku et al. took 3 bits for near-DUPLICATE documents (different pages saying the same);
here the question is whether one page's edit is noise. 4 calls ~88% of rotating one- or
two-word ads and ~97% of one-word edits noise, and every paragraph-sized change (a tenth of
the text or more) a change with a wide margin; a one-sentence edit of a 500-word page (2%
of the text) is a coin toss: at 2% the 64-bit estimate is too coarse to be sure. With 3, a
page that only rotates an ad looks changed on a quarter of the visits (and would be
revisited more); with 5 or 6 most sentence edits go unseen. A caller that compares with the
fingerprint of the copy it last STORED (not the last one seen) lets small edits add up
across visits until they cross the threshold, so its copy never drifts far behind.

The distance is an estimate, and a one-word rotation on a short page now and then lands
past any threshold (8 bits in the table above). words_moved() sees what the text lost and
gained (normalized words, counted with their repeats, per field) when the stored copy's
text is at hand: the writer asks it for the revisits the distance called changed
(indexer.service.small_changes, CRAWLER_CHANGE_NOISE_WORDS), so that a rotated sponsor
word (2 words moved) stays noise whatever its distance.
"""

import hashlib
import re
from collections import Counter
from functools import partial
from io import BytesIO
from itertools import chain
from typing import NamedTuple

from common import stagetime

__all__ = [
    "CHANGED", "DEFAULT_THRESHOLD", "FIRST", "NOISE", "UNCHANGED", "Fingerprint", "compare",
    "fingerprint", "hamming", "normalized", "simhash64", "text_hash", "words_moved",
]

# What compare() observed (plain strings; callers map them onto their own types).
FIRST = "first"  # no previous text to compare with
UNCHANGED = "unchanged"  # the normalized text is identical
NOISE = "noise"  # the text differs, by at most the threshold in SimHash bits
CHANGED = "changed"  # the text differs by more than the threshold

DEFAULT_THRESHOLD = 4

_MASK64 = (1 << 64) - 1


class Fingerprint(NamedTuple):
    text_hash: str  # 32 hex characters
    simhash: int  # signed 64-bit (fits a database BIGINT)
    words: int = 0  # of the normalized text (the near-duplicate test skips short texts)


# --- normalization -------------------------------------------------------------------------

# ASCII in bytes: letters fold to lower case, word characters stay, every digit becomes "0"
# (runs are then squeezed to one "0"), every other ASCII byte separates words. Bytes >= 0x80
# (UTF-8 sequences) are left alone for the replacements.
_ASCII = bytes(
    (b + 32 if 65 <= b <= 90 else 48 if 48 <= b <= 57 else b if 97 <= b <= 122 or b == 95 or b >= 128 else 32)
    for b in range(256)
)
_ASCII_BYTES = bytes(range(128))
_DIGITS = re.compile(r"\d+")
_WORD = re.compile(r"\w+")
_REPLACE_AT_MOST = 32  # distinct non-ASCII characters to replace; beyond, the regexes are faster


def _replacement(char: str) -> bytes | None:
    r"""What a non-ASCII character becomes: its case folding, each resulting character kept
    if a word character (\w), "0" if a digit (\d), a space if neither; None when that is
    the character itself (most letters)."""
    folded = char.casefold()
    out = "".join("0" if c.isdecimal() else c if c.isalnum() or c == "_" else " " for c in folded)
    return None if out == char else out.encode("utf-8", "surrogatepass")


_replacements: dict[str, bytes | None] = {}  # a cache of _replacement(), per process
_UNKNOWN = b"not cached"


def _words(text: str) -> list[bytes]:
    """The normalized words of one field, UTF-8 encoded.

    Exactly the definition's words (module doc): str.casefold works character by character,
    so folding each distinct character once is folding the text (the tests check that no
    word character of a folding folds further, so a replacement is never replaced again);
    and in UTF-8 no character's bytes occur inside another's, so bytes.replace replaces
    whole characters only.
    """
    global _replacements
    if not text:
        return []
    data = text.encode("utf-8", "surrogatepass").translate(_ASCII)
    if not text.isascii():
        known = _replacements  # replaced, not cleared, when full: another thread may use it
        if len(known) > 20_000:
            known = _replacements = {}
        todo = []
        for char in set(data.translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")):
            replacement = known.get(char, _UNKNOWN)
            if replacement is _UNKNOWN:
                replacement = known[char] = _replacement(char)
            if replacement is not None:
                todo.append((char.encode("utf-8", "surrogatepass"), replacement))
        if len(todo) > _REPLACE_AT_MOST:  # one pass each would cost more than the definition
            words = _WORD.findall(_DIGITS.sub("0", text.casefold()))
            return " ".join(words).encode("utf-8", "surrogatepass").split()
        for char, replacement in todo:
            data = data.replace(char, replacement)
    while b"00" in data:  # each pass halves every run of zeros (all digits are "0" by now)
        data = data.replace(b"00", b"0")
    return data.split()


def _field_words(title: str, headings: str, text: str) -> tuple[list[bytes], list[bytes], list[bytes]]:
    return _words(title), _words(headings), _words(text)


def _joined(fields) -> bytes:
    return b"\n".join(b" ".join(words) for words in fields)


def normalized(title: str, headings: str, text: str) -> str:
    """The text that counts: title, headings and text, one line each (see the module doc)."""
    return _joined(_field_words(title, headings, text)).decode("utf-8", "surrogatepass")


def text_hash(normalized_text: str) -> str:
    """32 hex characters: blake2b-128 of the normalized text."""
    return _hash(normalized_text.encode("utf-8", "surrogatepass"))


def _hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


# --- SimHash -------------------------------------------------------------------------------

_PERSON = b"crawlerweb-sh1"  # blake2b personalization: these word hashes are ours alone
_MARKER = b""  # start and end of the text; no word is empty
_CACHE_LIMIT = 50_000  # words (~8 MB); the cache is replaced, not evicted, when full


class _WordHashes(dict):
    """word -> R(word) || L(word): the blake2b-128 of its UTF-8 with its halves swapped,
    computed on first use. Swapped so that in the words' hashes laid end to end, the 16 bytes
    that straddle two words a, b are L(a) || R(b): the feature of the bigram (a, b)."""

    def __missing__(self, word: bytes) -> bytes:
        digest = hashlib.blake2b(word, digest_size=16, person=_PERSON).digest()
        value = self[word] = digest[8:] + digest[:8]
        return value


_word_hashes = _WordHashes()


def _masks(size: int) -> tuple[int, ...]:
    """Eight ints of at least `size` bytes, int b with bit b of every byte set (an AND with a
    longer int is as long as the shorter one, so they are built once and grown rarely)."""
    global _bit_masks
    length, masks = _bit_masks
    if length < size:
        length = max(size, 2 * length)
        ones = int.from_bytes(b"\x01" * length, "little")
        masks = tuple(ones << b for b in range(8))
        _bit_masks = length, masks
    return masks


_bit_masks: tuple[int, tuple[int, ...]] = (0, ())


def _signed(value: int) -> int:
    return value - (1 << 64) if value >> 63 else value


def _simhash_words(words: list[bytes]) -> int:
    """The SimHash of the distinct bigram features of these words (see the module doc), signed.

    Bit k of the SimHash is set when more than half the distinct bigrams have bit k set. The
    words' swapped hashes laid end to end (with the markers) hold every bigram's feature
    bytes L(a) || R(b) at 16-byte steps from byte 8; they are cut there and deduplicated as
    bytes (one set; bytes, unlike tuples, are not tracked by the garbage collector), and
    joined again. Byte p of every feature's hash is then (byte p of L(a)) XOR (byte 8 + p:
    R(b)'s), each column read with a strided slice into one big integer, and bit b's count
    is a popcount of that integer masked with bit b of every byte. That is 16 slices and 64
    AND + bit_count over n bytes, all in C, instead of 64 Python operations per feature.
    """
    global _word_hashes
    if not words:
        return 0
    cache = _word_hashes  # another thread may replace the global when it is full; this one stays whole
    row = b"".join(map(cache.__getitem__, chain((_MARKER,), words, (_MARKER,))))
    if len(cache) > _CACHE_LIMIT:
        _word_hashes = _WordHashes()
    features = set(iter(partial(BytesIO(row[8:-8]).read, 16), b""))
    distinct = b"".join(features)
    count = len(features)
    masks = _masks(count)
    result = 0
    for p in range(8):
        column = int.from_bytes(distinct[p::16], "little") ^ int.from_bytes(distinct[8 + p::16], "little")
        for b, mask in enumerate(masks):
            if 2 * (column & mask).bit_count() > count:
                result |= 1 << (8 * p + b)
    return _signed(result)


def simhash64(normalized_text: str) -> int:
    """64-bit SimHash of a normalized text (its whitespace-separated words), signed."""
    return _simhash_words(normalized_text.encode("utf-8", "surrogatepass").split())


def hamming(a: int, b: int) -> int:
    """Bits in which two 64-bit SimHashes differ (signed or unsigned)."""
    return ((a ^ b) & _MASK64).bit_count()


def words_moved(old: tuple[str, str, str], new: tuple[str, str, str], most: int) -> int:
    """Words the new text (title, headings, text) lost plus the words it gained against the
    old, normalized as above and counted with their repeats, field by field (a word moving
    from the text into the title counts twice); past `most` the count stops at most + 1.
    What a change test sees that a distance cannot: a rotating one-word sponsor line moves
    2 words whatever the page's length, and a replaced paragraph of a long page moves
    dozens though its SimHash may barely move."""
    fields = list(zip(_field_words(*old), _field_words(*new)))
    moved = sum(abs(len(before) - len(after)) for before, after in fields)  # a lower bound, cheap
    if moved > most:
        return most + 1
    for before, after in fields:
        if before == after:
            continue
        lost, gained = Counter(before), Counter(after)
        lost.subtract(gained)
        moved_here = sum(abs(n) for n in lost.values())
        moved += moved_here - abs(len(before) - len(after))  # the length difference is counted already
        if moved > most:
            return most + 1
    return moved


# --- the whole thing -----------------------------------------------------------------------

@stagetime.timed("fingerprint")
def fingerprint(title: str, headings: str, text: str) -> Fingerprint:
    """Fingerprint(text_hash(normalized(...)), simhash64(normalized(...))), normalizing once."""
    fields = _field_words(title, headings, text)
    words = list(chain.from_iterable(fields))
    return Fingerprint(_hash(_joined(fields)), _simhash_words(words), len(words))


def compare(old_hash: str | None, old_simhash: int | None, new: Fingerprint,
            threshold: int = DEFAULT_THRESHOLD) -> tuple[str, int | None]:
    """What a revisit observed, and the SimHash distance (None when unknown):

    FIRST when there is no old text hash; UNCHANGED (distance 0) when the text hashes are
    equal; otherwise NOISE when the Hamming distance is at most `threshold`, else CHANGED
    (also CHANGED, with distance None, when only the old text hash is known).
    """
    if not old_hash:
        return FIRST, None
    if old_hash == new.text_hash:
        return UNCHANGED, 0
    if old_simhash is None:
        return CHANGED, None
    distance = hamming(old_simhash, new.simhash)
    return (NOISE if distance <= threshold else CHANGED), distance
