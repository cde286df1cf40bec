"""Duplicates across URLs by their text: a page whose normalized text is within
CRAWLER_NEAR_DUPLICATE_BITS (3, the default) SimHash bits of an indexed page's is stored as
a duplicate of it and not indexed, so search shows one result for one text (a mirror, a
printer-friendly copy, the same article under two paths, whatever their markup). 0 takes
the same normalized text only. Exact duplicates (the same bytes) are caught before, by the
content hash.

The SimHash (indexer/fingerprint.py) measures the fraction of a text's distinct word bigrams
that differ: 3 bits is about 1 % of them, Manku, Jain & Das Sarma's threshold for
near-duplicate web pages (WWW 2007). On the 2,822 pages of 50 words or more of `make
bench-search`'s documentation corpus, 4 pairs of different texts are within 3 bits, all
true near-duplicates (release notes of two versions differing in their version numbers).
Texts shorter than CRAWLER_NEAR_DUPLICATE_MIN_WORDS are not compared: a few words say too
little, and a shared template would make short pages look alike.

Lookup: k + 1 blocks of the 64 bits (SimhashBlock; Manku et al.'s word, and not to be
confused with the frontier's score bands); two SimHashes at most k bits apart agree on one
block at least, so one indexed lookup of a batch's blocks finds every candidate, and
the Hamming distance decides. Within a batch the first page (lowest document id) is the
original. Two workers storing near-duplicates in the same instant may both index theirs
(the exact-duplicate test has the primary key to decide; this test is best effort).
"""

from django.conf import settings
from django.db import connection

from common.bulksql import in_chunks, marks

from .fingerprint import hamming
from .models import SimhashBlock

_BLOCKS = SimhashBlock._meta.db_table
_KEY = SimhashBlock._meta.get_field("block").column  # the column keeps its first name, `band`
_MASK64 = (1 << 64) - 1


def enabled() -> bool:
    return settings.CRAWLER_NEAR_DUPLICATE_BITS >= 0


def blocks(simhash: int, bits: int) -> list[int]:
    """The bits + 1 block keys of a SimHash: block i's number in the high half, its bits below;
    with 0 bits the one key is the SimHash itself (equal texts have equal SimHashes)."""
    if bits == 0:
        return [simhash]
    count = bits + 1
    value = simhash & _MASK64
    keys, start = [], 0
    for i in range(count):
        width = 64 // count + (1 if i < 64 % count else 0)
        keys.append(i << 32 | (value >> start) & ((1 << width) - 1))
        start += width
    return keys


def _same(bits: int, simhash: int, text_hash: str, other_hash: int, other_text: str) -> bool:
    return text_hash == other_text if bits == 0 else hamming(simhash, other_hash) <= bits


def originals(pages: dict[int, tuple[int, str]]) -> dict[int, int]:
    """For {document id: (SimHash, text hash)} of pages about to be indexed: {document id: the
    id of the indexed (or earlier in the batch) document whose text it repeats}."""
    bits = settings.CRAWLER_NEAR_DUPLICATE_BITS
    if not pages or not enabled():
        return {}
    keys = {document_id: blocks(simhash, bits) for document_id, (simhash, _) in pages.items()}
    stored: dict[int, list[tuple[int, int, str]]] = {}  # block key -> (document id, SimHash, text hash)
    with connection.cursor() as cursor:
        for chunk in in_chunks(sorted({key for page_keys in keys.values() for key in page_keys})):
            cursor.execute(f"SELECT {_KEY}, document_id, simhash, text_hash FROM {_BLOCKS} "
                           f"WHERE {_KEY} IN ({marks(len(chunk))})", chunk)
            for key, document_id, simhash, text_hash in cursor.fetchall():
                stored.setdefault(key, []).append((document_id, simhash, text_hash))
    found = {}
    for document_id in sorted(pages):  # the batch's own pages join the lookup in id order
        simhash, text_hash = pages[document_id]
        best = min((other for key in keys[document_id] for other, other_hash, other_text in stored.get(key, ())
                    if other != document_id and _same(bits, simhash, text_hash, other_hash, other_text)),
                   default=None)
        if best is not None:
            found[document_id] = best
            continue
        for key in keys[document_id]:
            stored.setdefault(key, []).append((document_id, simhash, text_hash))
    return found


def remember(pages: dict[int, tuple[int, str]]) -> None:
    """Index the blocks of {document id: (SimHash, text hash)} of pages just indexed."""
    if not pages or not enabled():
        return
    bits = settings.CRAWLER_NEAR_DUPLICATE_BITS
    rows = sorted((key, simhash, text_hash, document_id) for document_id, (simhash, text_hash) in pages.items()
                  for key in blocks(simhash, bits))
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":  # one statement for the batch
            cursor.execute(f"INSERT INTO {_BLOCKS} ({_KEY}, simhash, text_hash, document_id) "
                           "SELECT * FROM unnest(%b::bigint[], %b::bigint[], %b::varchar(32)[], %b::bigint[])",
                           [list(column) for column in zip(*rows)])
        else:
            cursor.executemany(f"INSERT INTO {_BLOCKS} ({_KEY}, simhash, text_hash, document_id) "
                               "VALUES (%s, %s, %s, %s)", rows)


def forget(document_ids: list[int]) -> None:
    """Drop the blocks of documents that leave the index (or are replaced by a recrawl)."""
    with connection.cursor() as cursor:
        for chunk in in_chunks(sorted(document_ids)):
            cursor.execute(f"DELETE FROM {_BLOCKS} WHERE document_id IN ({marks(len(chunk))})", chunk)


def rebuild(batch: int = 5000) -> int:
    """Blocks for every indexed document, from its URL's SimHash (`manage.py reindex`: after
    CRAWLER_NEAR_DUPLICATE_BITS changed, or for pages indexed before the blocks existed;
    those are taken whatever their length). Returns how many documents have blocks."""
    from .models import Document

    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {_BLOCKS}")
    if not enabled():
        return 0
    rows = (Document.objects.filter(indexed=True).exclude(url__simhash=None).order_by("id")
            .values_list("id", "url__simhash", "url__text_hash"))
    done, last = 0, 0
    while True:
        chunk = list(rows.filter(id__gt=last)[:batch])
        if not chunk:
            return done
        remember({document_id: (simhash, text_hash) for document_id, simhash, text_hash in chunk})
        done += len(chunk)
        last = chunk[-1][0]
