"""Resolve each host name once and remember the answer (the design study's DNS cache).

A crawler asks for the same few thousand names over and over; the system resolver is a
blocking call that can take seconds. Answers are kept CRAWLER_DNS_CACHE_SECONDS
(getaddrinfo does not report the record's TTL, so the TTL is a setting), failures
CRAWLER_DNS_NEGATIVE_SECONDS, in a bounded per-process LRU. IP literals skip the cache.

Failures keep their kind: a name that does not exist (EAI_NONAME) is the URL's problem
and is retried on the URL's back-off; a resolver that cannot answer right now
(EAI_AGAIN, EAI_FAIL, a timeout) is nobody's fault, so the caller pauses the host
without charging its URLs (see crawl.pipeline).
"""

import socket
import threading
import time
from collections import OrderedDict

from django.conf import settings

TEMPORARY_ERRORS = frozenset(
    code for code in (getattr(socket, "EAI_AGAIN", None), getattr(socket, "EAI_FAIL", None)) if code is not None
)

_lock = threading.Lock()
_clock = time.monotonic  # a seam for tests: expiry without sleeping
_cache: OrderedDict[tuple[str, int], tuple[float, object]] = OrderedDict()


def resolve(host: str, port: int) -> list[tuple]:
    """getaddrinfo(host, port, SOCK_STREAM), cached; raises socket.gaierror like it."""
    if _is_ip_literal(host):
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    key = (host.lower(), port)
    now = _clock()
    with _lock:
        entry = _cache.get(key)
        if entry is not None and entry[0] > now:
            _cache.move_to_end(key)
            answer = entry[1]
        else:
            answer = None
    if answer is None:
        try:
            answer = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            ttl = settings.CRAWLER_DNS_CACHE_SECONDS
        except socket.gaierror as exc:
            answer = exc
            ttl = settings.CRAWLER_DNS_NEGATIVE_SECONDS
        with _lock:
            _cache[key] = (now + ttl, answer)
            _cache.move_to_end(key)
            while len(_cache) > settings.CRAWLER_DNS_CACHE_SIZE:
                _cache.popitem(last=False)
    if isinstance(answer, socket.gaierror):
        raise answer
    return answer


def is_temporary(exc: BaseException) -> bool:
    """True when the resolver could not answer (as opposed to: the name does not exist)."""
    return isinstance(exc, socket.gaierror) and exc.errno in TEMPORARY_ERRORS


def clear() -> None:
    with _lock:
        _cache.clear()


def _is_ip_literal(host: str) -> bool:
    try:
        socket.inet_pton(socket.AF_INET6 if ":" in host else socket.AF_INET, host.strip("[]"))
        return True
    except OSError:
        return False
