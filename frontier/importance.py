"""Which pages first: a URL's importance score, its parts, and the bands dispatch draws from.

The score is kept in the URL's `score` column (higher goes first; url_host_queue serves a host's best
first). It is a sum of points, each part for a reason the crawl-ordering literature gives
(Cho, Garcia-Molina & Page 1998; Najork & Wiener 2001: breadth-first finds the pages with
many inlinks early; Baeza-Yates et al. 2005: in-link counts from other sites beat depth):

* depth: CRAWLER_SCORE_DEPTH (-10) points per link from the seed: near pages first;
* the home page (path "/", no query) CRAWLER_SCORE_HOME (+40), a section root (one path
  segment) CRAWLER_SCORE_SECTION (+10): sites put what matters at the top;
* links from other hosts: CRAWLER_SCORE_INLINK_HOST (+12) per distinct referring host, up
  to CRAWLER_SCORE_INLINK_HOSTS_MAX (5): the web's own vote, counted once per host so a
  site linking a page from every page does not count more than once;
* a sitemap hint (`hint`): listed in a sitemap, +10, and its <priority> × 20;
* an operator-trusted domain (TrustedDomain): its weight;
* when hosts compete (more sessions due than a crawling process has fetch threads), the
  host's standing too: CRAWLER_SCORE_SITE_INLINK_HOST (6) × log2(1 + distinct other hosts
  linking to any of its pages) (`Host.referring_hosts`, `site_points`): the pages that gather
  a site's rank are its home, sections and popular pages, which other sites rarely link
  one by one (Baeza-Yates et al. 2005: larger, better-linked sites first). Not stored on
  the URL (the host's standing grows after its URLs are admitted); added where sessions
  are ordered.

Kept up to date at admission with no query per link: a new URL gets its parts from the
candidate; a known URL found from a host not counted yet gains CRAWLER_SCORE_INLINK_HOST,
and a host linked from a host not counted yet gains it in its standing, both held in the
process and written a few batches at a time, one set-based UPDATE each (frontier/inlinks.py).
A per-process set of pairs keeps repeats away from the database; what counts a pair once
whichever process sees it is the database: a URL keeps a bit per referring host
(`Url.inlink_bits`, the host's hash among REFERRER_BITS bits: enough for the few hosts the
score counts; two hosts on one bit, about one pair in 60, count once), and a host two
sketches only ever OR-ed (`Host.referrer_bits`, `referrer_ranks`: `referring_hosts`, below;
its standing is not capped). Each part is stored or derivable (depth, inlink_hosts, hint,
the URL, the trusted list), so the admin shows why a URL ranks where it does (`parts`).

Bands: a host's band is that of the best URL it is known to have waiting (0 best); a
dispatch round draws hosts from the bands in CRAWLER_DISPATCH_SHARES (60/30/10), or
CRAWLER_DISPATCH_SHARES_LOADED (80/15/5) when the frontier is under load, handing a
band's unused share on, so no band starves.
"""

import math
import random
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from .sketches import (  # noqa: F401  (importance's interface: the sketches it scores with)
    LINEAR_COUNT_LIMIT, RANK_BITS, RANK_MAPS, REFERRER_BITS, referrer_key, referrer_mask, referrer_sketch, referring_hosts,
)

SITEMAP_LISTED = 10  # hint points for any URL a sitemap lists
SITEMAP_PRIORITY_POINTS = 20  # × the sitemap's <priority> (0.0–1.0; 0.5 when absent)
MAX_SCORE = 30_000  # the column is a smallint
_random = random.Random()


@dataclass(frozen=True)
class Parts:
    depth: int
    place: int  # home page / section root
    inlinks: int
    hint: int
    trusted: int

    @property
    def total(self) -> int:
        return max(-MAX_SCORE, min(MAX_SCORE, self.depth + self.place + self.inlinks + self.hint + self.trusted))


def place_points(url: str) -> int:
    parts = urlsplit(url)
    if parts.query:
        return 0
    segments = [s for s in parts.path.split("/") if s]
    if not segments:
        return settings.CRAWLER_SCORE_HOME
    if len(segments) == 1 and ("." not in segments[0] or parts.path.endswith("/")):
        return settings.CRAWLER_SCORE_SECTION
    return 0


def inlink_points(inlink_hosts: int) -> int:
    return settings.CRAWLER_SCORE_INLINK_HOST * min(inlink_hosts, settings.CRAWLER_SCORE_INLINK_HOSTS_MAX)


def site_points(host_inlink_hosts: int) -> int:
    """A host's standing (the sessions' draw in crawl/engine.py): CRAWLER_SCORE_SITE_INLINK_HOST
    × log2(1 + the distinct other hosts seen linking to its pages). Logarithmic: the first
    hosts that link a site say most; a site linked from the whole web does not drown every
    other part of the score."""
    return round(settings.CRAWLER_SCORE_SITE_INLINK_HOST * math.log2(1 + max(0, host_inlink_hosts)))


def sitemap_hint(priority: float | None) -> int:
    """Hint points for a URL a sitemap lists with this <priority> (None: not given)."""
    value = 0.5 if priority is None else min(max(priority, 0.0), 1.0)
    return SITEMAP_LISTED + round(SITEMAP_PRIORITY_POINTS * value)


def parts(url: str, host: str, depth: int, inlink_hosts: int = 0, hint: int = 0) -> Parts:
    return Parts(settings.CRAWLER_SCORE_DEPTH * depth, place_points(url), inlink_points(inlink_hosts), hint,
                 trusted_weight(host))


def score(url: str, host: str, depth: int, inlink_hosts: int = 0, hint: int = 0) -> int:
    return parts(url, host, depth, inlink_hosts, hint).total


LOWEST_BAND = 2
IDLE_BAND = 3  # a host with no URL waiting: dispatch never reads it (frontier/idle.py)


def score_band(score: int) -> int:
    """0 (best), 1 or 2: where CRAWLER_SCORE_BANDS (two thresholds) put a score."""
    high, low = settings.CRAWLER_SCORE_BANDS
    return 0 if score >= high else 1 if score >= low else 2


def band_shares(loaded: bool) -> tuple[float, float, float]:
    values = settings.CRAWLER_DISPATCH_SHARES_LOADED if loaded else settings.CRAWLER_DISPATCH_SHARES
    total = sum(values) or 1.0
    return tuple(v / total for v in values)


def quotas(max_hosts: int, loaded: bool, rng: random.Random = _random) -> list[int]:
    """Hosts per band for a round of max_hosts: each slot drawn with the bands' shares (a
    draw, not a rounding: a small round must still reach the 10 % band now and then)."""
    counts = [0, 0, 0]
    for band in rng.choices(range(3), weights=band_shares(loaded), k=max_hosts):
        counts[band] += 1
    return counts


# --- trusted domains: read from the table, cached for a few seconds --------------------------

_trusted_lock = threading.Lock()
_trusted: tuple[float, dict[str, int]] = (0.0, {})
TRUSTED_RECHECK_SECONDS = 5.0


def trusted_weight(host: str) -> int:
    """The weight of the most specific trusted domain the host is or is under (0: none)."""
    domains = _trusted_domains()
    if not domains:
        return 0
    name = host.split(":", 1)[0] if not host.startswith("[") else host
    while True:
        weight = domains.get(name)
        if weight is not None:
            return weight
        if "." not in name:
            return 0
        name = name.split(".", 1)[1]


def _trusted_domains() -> dict[str, int]:
    global _trusted
    loaded_at, domains = _trusted
    if time.monotonic() - loaded_at < TRUSTED_RECHECK_SECONDS:
        return domains
    from .models import TrustedDomain

    with _trusted_lock:
        domains = dict(TrustedDomain.objects.values_list("domain", "weight"))
        _trusted = (time.monotonic(), domains)
    return domains


def forget_trusted() -> None:
    global _trusted
    _trusted = (0.0, {})
