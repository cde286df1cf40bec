"""Ground truth for a freshness benchmark on the changing web (pure, no I/O).

Why: freshness (is the stored copy the live one?) and age (for how long has it not been?)
are measured against the very schedule the server serves, given the same config and epoch
(read them from the server's info file with server.read_info).  A benchmark samples these
over time with what the crawler stored per URL: the version recovered from the stored text
with model.version_in_text, or None for a page it does not hold.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import NamedTuple

from .model import ChangeConfig, ChangeWeb


class TruthPage(NamedTuple):
    url: str
    host: int
    page: int
    rate_per_day: float
    validators: bool
    noise: bool


class Truth:
    """The live state of every page of ChangeWeb(config) served from `epoch`."""

    def __init__(self, config: ChangeConfig, epoch: float):
        self.web = ChangeWeb(config)
        self.config = config
        self.epoch = epoch

    def pages(self) -> Iterator[TruthPage]:
        web = self.web
        for host in range(self.config.hosts):
            for page in range(self.config.pages_per_host):
                yield TruthPage(web.url(host, page), host, page, web.rate(host, page),
                                web.has_validators(host), web.is_noise(host, page))

    def _locate(self, url: str) -> tuple[int, int]:
        where = self.web.locate(url)
        if where is None:
            raise KeyError(f"not a page of this changing web: {url}")
        return where

    def live_version(self, url: str, wall_time: float) -> int:
        host, page = self._locate(url)
        return self.web.version(host, page, self.config.sim_day(wall_time, self.epoch))

    def page_age(self, url: str, stored: int | None, wall_time: float) -> float:
        """Seconds since the live page first differed from the stored version: 0 while they
        are equal, now - (wall time of change number stored+1) after; for a page not stored
        (None), now - epoch (it has been missing since the web began)."""
        host, page = self._locate(url)
        live = self.live_version(url, wall_time)
        if stored is None:
            return max(0.0, wall_time - self.epoch)
        if stored > live:
            raise ValueError(f"{url}: stored version {stored} is newer than the live {live}"
                             " (wall_time earlier than the fetch?)")
        if stored == live:
            return 0.0
        return wall_time - self.config.wall_time(self.web.events(host, page)[stored], self.epoch)

    def freshness(self, stored: Mapping[str, int | None], wall_time: float) -> float:
        """The fraction of ALL pages of the web whose stored version is live (a page missing
        from `stored`, or None, is not fresh; URLs that are not pages are ignored)."""
        pages = list(self.pages())
        fresh = sum(1 for p in pages
                    if stored.get(p.url) is not None and stored[p.url] == self.live_version(p.url, wall_time))
        return fresh / len(pages)

    def age(self, stored: Mapping[str, int | None], wall_time: float) -> float:
        """The mean page_age over ALL pages of the web (missing = None), in seconds."""
        pages = list(self.pages())
        return sum(self.page_age(p.url, stored.get(p.url), wall_time) for p in pages) / len(pages)
