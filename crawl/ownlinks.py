"""A session's own pages' links to its host: taken at once, admitted by the writer.

A small site is read page by page, its next URL on the page just fetched. A session that
waited for the writer to store that page and read its links back (MoreUrlsWanted) held
its host for the database, not for its delay (issue 50). So the session takes them as
the page is parsed (frontier/ownlinks.py says which: what the frontier would admit as new,
judged without a query, and robots.txt allows) and fetches them under ids of its own
(negative: "taken, not yet in the frontier"). It tells the writer (LinksTaken, after the
page's result), which admits them before it stores anything fetched from them and then
stores those results under the frontier's ids (ProvisionalIds). Nothing is lost if the
process dies first: the page's result is lost with them, and it is fetched again.
"""

import dataclasses
import itertools
import logging
from collections import defaultdict
from dataclasses import dataclass

from frontier import service as frontier

from . import crawllog

log = logging.getLogger(__name__)

_temporary_ids = itertools.count(-1, -1)  # next() is atomic under the GIL: fetch threads share it


@dataclass
class LinksTaken:
    """What a session took from its pages: (its temporary id, the link as a candidate)."""

    host_id: int
    links: list[tuple[int, frontier.Candidate]]


class OwnLinks:
    """One session's side: which of its pages' links it may take."""

    def __init__(self, origin: str, keys: set[int] | None):
        self.origin = origin
        self.keys = keys  # the host's URL keys the frontier had at the lease, and those taken since; None: too big
        self._prefixes = (origin.lower(), "//" + origin.split("://", 1)[-1].lower())

    def take(self, pages: list, room: int, taken_urls: set[str], allows) -> list[tuple[frontier.QueuedUrl,
                                                                                       frontier.Candidate]]:
        """Up to `room` new URLs of this host that these pages (pipeline Results.pages) link
        to, in page order: not among `taken_urls`, allowed by `allows` (robots.txt)."""
        found = []
        if self.keys is None or room <= 0:
            return found
        for page, queued, _ in pages:
            if queued.kind != frontier.UrlKind.PAGE or page.parsed is None:
                continue  # a sitemap's or a feed's entries are hints the writer weighs
            found += self.take_candidates(
                [frontier.Candidate(link, queued.depth + 1, 0, queued.id, base=page.base, scopes=queued.scopes,
                                    via=self.origin) for link in page.links if not self._elsewhere(link)],
                room - len(found), taken_urls, allows)
        return found

    def take_candidates(self, candidates: list[frontier.Candidate], room: int, taken_urls: set[str],
                        allows) -> list[tuple[frontier.QueuedUrl, frontier.Candidate]]:
        """Those of these candidates (on this host, as the writer would admit them) it may
        take, up to `room`: as a queued URL to fetch, and the candidate in the frontier's form."""
        if self.keys is None or room <= 0:
            return []
        room = min(room, frontier.own_links_room(len(self.keys)))
        found = []
        for candidate in candidates:
            if len(found) >= room:
                break
            judged = frontier.judge_own_link(candidate.url, candidate.base, candidate.depth, candidate.scopes,
                                             self.origin, candidate.hint)
            if judged is None:
                continue
            norm, score = judged
            if norm.key in self.keys or norm.url in taken_urls or not allows(norm.url):
                continue
            self.keys.add(norm.key)
            found.append((frontier.QueuedUrl(next(_temporary_ids), norm.url, candidate.depth, 0, 0, candidate.scopes,
                                             kind=candidate.kind, score=score),
                          dataclasses.replace(candidate, url=norm.url, base=None)))
        return found

    def learn(self, urls: list[str]) -> None:
        """URLs of the host the frontier holds that the session learnt of since its lease
        (the writer's answers): they count toward the host's quota, and are not taken."""
        if self.keys is not None:
            self.keys.update(frontier.url_key(url) for url in urls)

    def _elsewhere(self, link: str) -> bool:
        """An absolute link to another site, told without parsing it (most cross-site links)."""
        head = link[:12].lower()
        if head.startswith("//"):
            return not link.lower().startswith(self._prefixes[1])
        if "://" in head:
            return not link.lower().startswith(self._prefixes[0])
        return False


class ProvisionalIds:
    """The writer's side: temporary ids -> the frontier's, from LinksTaken admitted in order.

    An id is kept until its session's end is written (all its results come before it)."""

    def __init__(self):
        self._ids: dict[int, int | None] = {}  # None: refused by the frontier after all
        self._by_host: dict[int, list[int]] = defaultdict(list)
        self.dropped = 0  # results of taken URLs the frontier refused (a quota reached meanwhile)

    def admit(self, items: list[LinksTaken]) -> bool:
        """Admit what sessions took, a level at a time: a link found on a page taken too
        names that page's id as its referrer once it is known."""
        pending = [(item.host_id, temporary, candidate) for item in items for temporary, candidate in item.links]
        while pending:
            ready = [entry for entry in pending if not _temporary(entry[2].referrer_id)
                     or entry[2].referrer_id in self._ids]
            if not ready:  # a referrer whose LinksTaken never came (a failed write): none then
                ready = pending
            ready_ids = {id(entry) for entry in ready}
            pending = [entry for entry in pending if id(entry) not in ready_ids]
            candidates = [dataclasses.replace(candidate, referrer_id=self.url_id(candidate.referrer_id))
                          for _, _, candidate in ready]
            found = frontier.admit_taken(candidates)
            for (host_id, temporary, candidate) in ready:
                self._ids[temporary] = found.get(candidate.url)
                self._by_host[host_id].append(temporary)
        return True

    def url_id(self, url_id: int | None) -> int | None:
        """The frontier's id for an id a session used (itself when it is one already)."""
        return self._ids.get(url_id) if _temporary(url_id) else url_id

    def logged_id(self, url_id: int):
        """url_id() for the crawl log: PENDING while the URL's LinksTaken has not been admitted."""
        return self._ids.get(url_id, crawllog.PENDING)

    def refuse(self, items: list[LinksTaken]) -> None:
        """Their admission failed (the database away): what was fetched from them is dropped."""
        for item in items:
            for temporary, _ in item.links:
                self._ids.setdefault(temporary, None)
                self._by_host[item.host_id].append(temporary)

    def resolve(self, results):
        """The results (pipeline.Results) under the frontier's ids, in place; the result of
        a URL the frontier refused is dropped (and counted)."""
        if not any(_temporary(url_id) for url_id in results.url_ids()):
            return results
        reports = []
        for report, attempts in results.reports:
            url_id = self.url_id(report.url_id)
            if self._kept(report.url_id, url_id):
                reports.append((dataclasses.replace(report, url_id=url_id), attempts))
        pages = []
        for page, queued, visit in results.pages:
            url_id = self.url_id(page.url_id)
            if self._kept(page.url_id, url_id):
                page.url_id = url_id
                pages.append((page, queued._replace(id=url_id), visit))
        redirects = []
        for redirect in results.redirects:
            url_id = self.url_id(redirect.url_id)
            if self._kept(redirect.url_id, url_id):
                target = redirect.target and dataclasses.replace(redirect.target, referrer_id=url_id)
                redirects.append(dataclasses.replace(redirect, url_id=url_id, target=target))
        results.reports, results.pages, results.redirects = reports, pages, redirects
        return results

    def _kept(self, asked: int, url_id: int | None) -> bool:
        if url_id is not None:
            return True
        self.dropped += 1
        log.info("a URL taken from its page (temporary id %s) was refused by the frontier: its result is dropped",
                 asked)
        return False

    def forget(self, host_ids) -> None:
        """Sessions' ends were written: their temporary ids are not used again."""
        for host_id in host_ids:
            for temporary in self._by_host.pop(host_id, ()):
                self._ids.pop(temporary, None)


def _temporary(url_id: int | None) -> bool:
    return url_id is not None and url_id < 0
