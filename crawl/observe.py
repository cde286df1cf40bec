"""One record per request, handed to whoever listens: the crawl log (crawl/crawllog.py,
registered in FetchConfig.ready()) and the Prometheus counters (crawl/instruments.py,
registered in ConsoleConfig.ready()).

A host session calls request_made() after every request it sends (robots.txt and pages),
on the fetch thread that sent it: listeners must be quick, touch no database and never
raise into the fetch path (a listener that fails is logged and skipped).
"""

import logging
import time
from dataclasses import dataclass

from frontier.vocabulary import FetchError, RequestOutcome

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RequestRecord:
    at: float  # wall clock when the request started, seconds since the epoch
    kind: str  # "page" or "robots"
    url: str
    url_id: int | None  # None for robots.txt
    host_id: int
    origin: str
    status: int | None  # None: no response
    error: str  # "" or a FetchError
    outcome: str  # what the response means for the crawl: see outcome_of()
    bytes: int  # body bytes received (decompressed)
    duration: float  # seconds, request start to end of body
    attempt: int  # 1 for a URL's first try in a row, 2+ for retries
    retry_after: float | None  # seconds the server asked for (429/503), capped
    address: str  # the server address connected to
    content_type: str
    worker: str  # the engine (process) that sent it
    lease: str  # the lease token of the session


def outcome_of(status: int | None, error: str) -> str:
    """A short, stable name for what a request brought: the error's kind, or the class of
    the status (ok, not_modified, redirect, gone, denied, throttled, server_error,
    http_error)."""
    if error:
        return str(error)
    if status is None:
        return str(FetchError.NO_RESPONSE)
    if status == 304:
        return RequestOutcome.NOT_MODIFIED
    if 200 <= status < 300:
        return RequestOutcome.OK
    if 300 <= status < 400:
        return RequestOutcome.REDIRECT
    if status in (404, 410):
        return RequestOutcome.GONE
    if status in (401, 403):
        return RequestOutcome.DENIED
    if status in (429, 503):
        return RequestOutcome.THROTTLED
    if status >= 500:
        return RequestOutcome.SERVER_ERROR
    return RequestOutcome.HTTP_ERROR


_listeners: list = []


def listen(listener) -> None:
    """Call `listener(record)` for every request from now on (idempotent)."""
    if listener not in _listeners:
        _listeners.append(listener)


def request_made(result, *, kind: str, url_id: int | None, host_id: int, origin: str, attempt: int,
                 retry_after: float | None, worker: str, lease: str) -> RequestRecord | None:
    """Build the record of a request (an http.FetchResult) and hand it to the listeners."""
    if not _listeners:
        return None
    record = RequestRecord(
        at=result.started_at or time.time(), kind=kind, url=result.url, url_id=url_id, host_id=host_id,
        origin=origin, status=result.status, error=str(result.error or ""),
        outcome=outcome_of(result.status, result.error), bytes=len(result.body), duration=result.elapsed,
        attempt=attempt, retry_after=retry_after, address=result.address, content_type=result.content_type,
        worker=worker, lease=lease,
    )
    for listener in list(_listeners):
        try:
            listener(record)
        except Exception:  # a listener must never break a fetch
            log.exception("request listener %r failed", listener)
    return record
