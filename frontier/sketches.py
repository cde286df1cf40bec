"""A host's standing as two sketches on its row (Host.referrer_bits, referrer_ranks): how
many distinct other hosts link to it, estimated without a row per pair; and a URL's bits
per referring host (Url.inlink_bits). Pure arithmetic: frontier/importance.py scores with
it, the Host model reads its estimate with it."""

import hashlib
import math

# A bigint's bits but its sign: the same numbers in PostgreSQL, SQLite and Python.
REFERRER_BITS = 63


def referrer_key(origin: str) -> int:
    """A referring origin's 63-bit hash: the same in every process (unlike hash())."""
    digest = hashlib.blake2b(origin.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def referrer_mask(origins) -> int:
    """The bits of these referring origins in a URL's `inlink_bits`."""
    mask = 0
    for origin in origins:
        mask |= 1 << (referrer_key(origin) % REFERRER_BITS)
    return mask


# A host's standing counts the distinct other hosts seen linking to it in two 63-bit
# sketches on its row, each only ever OR-ed with new bits, so any process may add to them
# in one UPDATE and a pair counted twice changes nothing (a row per pair cost an insert, a
# foreign-key check and an index entry per edge of the host graph). `referrer_bits`: one
# bit per referring host, counted by linear counting (Whang et al. 1990), close to exact
# for the first few dozen hosts, where the standing's logarithm moves most. Past
# LINEAR_COUNT_LIMIT bits set, `referrer_ranks`: RANK_MAPS bitmaps of RANK_BITS bits, each
# host setting bit r of one of them, r its hash's trailing zeros (Flajolet & Martin 1985,
# PCSA): about ±40 % from a hundred hosts to a hundred thousand, a few points of the
# standing's 6 × log2 (within 8 of the exact count's in tests of up to 100,000 hosts).
LINEAR_COUNT_LIMIT = 51  # of REFERRER_BITS set: about 100 hosts
RANK_MAPS, RANK_BITS = 4, 15
_PCSA_PHI = 0.77351


def referrer_sketch(origins) -> tuple[int, int]:
    """(referrer_bits, referrer_ranks) of these referring origins."""
    bits = ranks = 0
    for key in map(referrer_key, origins):
        bits |= 1 << (key % REFERRER_BITS)
        rest = key >> 2
        rank = min((rest & -rest).bit_length() - 1 if rest else RANK_BITS - 1, RANK_BITS - 1)
        ranks |= 1 << ((key & (RANK_MAPS - 1)) * RANK_BITS + rank)
    return bits, ranks


def referring_hosts(bits: int, ranks: int) -> int:
    """The distinct other hosts a host's sketches have seen linking to it (an estimate)."""
    set_bits = bits.bit_count()
    if set_bits <= LINEAR_COUNT_LIMIT:
        return round(-REFERRER_BITS * math.log(1 - set_bits / REFERRER_BITS))
    lowest_unset = 0
    for n in range(RANK_MAPS):
        bitmap = (ranks >> (n * RANK_BITS)) & ((1 << RANK_BITS) - 1)
        lowest_unset += (~bitmap & (bitmap + 1)).bit_length() - 1
    linear_most = round(-REFERRER_BITS * math.log(1 - LINEAR_COUNT_LIMIT / REFERRER_BITS))
    return max(linear_most, round(RANK_MAPS / _PCSA_PHI * 2 ** (lowest_unset / RANK_MAPS)))
