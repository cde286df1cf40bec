"""The seen test's first half, in the crawling process: URLs this process knows are in
the frontier, so that links to them never reach the database (BUbiNG's sieve, Heritrix's
already-seen filter, StormCrawler's status cache).

Exact, never probabilistic: an entry is an 8-byte URL key (frontier.normalize.url_key)
mixed with the scopes the URL is known under, mapped to the shallowest depth it is known
at. A link is dropped here only if its URL is known under the same scopes at the same or
a smaller depth, when admitting it would change nothing. Anything else goes to the
database, which stays the record: a deeper link's depth or a new scope is still applied
there, and a URL this cache does not know (another process found it, or the cache was
full) is simply looked up. A false "known" would lose a URL for good, so there is none:
no Bloom filter, and a key collision among 64-bit keys is the database's too (url_key).

The crawler never deletes URLs; a row deleted by hand stays known to a running process
until its cache starts again (a deleted host is noticed: its links fail to insert and the
caches are emptied).

Bounded: at CRAWLER_SEEN_CACHE_SIZE entries (~80 bytes each) it starts again from empty;
that costs database lookups, never URLs. Cleared when the process's database connection
was lost: rows committed asynchronously (synchronous_commit off, DESIGN: what a crash can
lose) may not have survived a database crash, and links to them must reach it again.
"""

import sys
import threading
import zlib

from django.conf import settings

_lock = threading.Lock()
_known: dict[int, int] = {}
_peak = (0, 0)
_KEY_BYTES = sys.getsizeof(2**63 - 1)


def _entry(url_key: int, scopes: str) -> int:
    # The scopes key ("3", "3,7") moves the key by a stable 32-bit checksum: the same URL
    # under other scopes is another entry (the database widens its scopes).
    return url_key ^ zlib.crc32(scopes.encode()) if scopes else url_key


def unknown(items: list[tuple[int, str, int]]) -> list[bool]:
    """For (url key, scopes, depth) items: True where the database must see it."""
    known = _known
    out = []
    for url_key, scopes, depth in items:
        at = known.get(_entry(url_key, scopes))
        out.append(at is None or depth < at)
    return out


def remember(items: list[tuple[int, str, int]]) -> None:
    """(url key, scopes, depth) items the database now holds at that depth or shallower."""
    global _known
    limit = settings.CRAWLER_SEEN_CACHE_SIZE
    if not limit:  # 0: off, every link is looked up
        return
    with _lock:
        if len(_known) + len(items) > limit:
            _known = {}  # replaced, not cleared: a reader holding the old one stays consistent
            items = items[-limit:]
        known = _known
        for url_key, scopes, depth in items:
            entry = _entry(url_key, scopes)
            at = known.get(entry)
            if at is None or depth < at:
                known[entry] = depth
        _note_peak(known)


def forget() -> None:
    """Start again from empty (the database connection was lost, or tests)."""
    global _known
    with _lock:
        _known = {}


def size() -> int:
    return len(_known)


def peak() -> tuple[int, int]:
    """The most entries the cache has held in this process, and their memory then: the dict
    and its keys (a key of 64 bits is a 36-byte int; depths are small ints, shared)."""
    return _peak


def _note_peak(known: dict) -> None:
    global _peak
    if len(known) > _peak[0]:
        _peak = (len(known), sys.getsizeof(known) + _KEY_BYTES * len(known))
