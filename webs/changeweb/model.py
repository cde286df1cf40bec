"""The pure, deterministic description of the changing web (no I/O).

Why: a freshness benchmark needs ground truth (which version of every page is live at any
moment) and the server must serve exactly that, so both derive from ChangeConfig alone.
Rates, change times and text come from random.Random instances seeded with strings
(sha512-based, identical in every process), never from hash() or the clock.  The only
inputs from outside are a request's wall time, the epoch (the wall time of simulated day 0,
chosen when the server starts) and, for noise pages, a per-response token.

Time is accelerated: a simulated day lasts `day_seconds` real seconds.  Each page changes
as a Poisson process with a known rate per simulated day; its change times over
[0, horizon_days] are drawn once (exponential gaps) and cached, and its version at a moment
is the number of changes up to then.  After the horizon no page changes any more.

Every version of a page carries one marker word encoding (host, page, version), so a
benchmark can tell from the text a crawler stored which version it holds.  Markers are
"qv" + code + "qz"; prose words never contain "q" (see sampleweb/text.py), and the code is
two-letter syllables without "q" or "w" with "w" between the three numbers, so a marker can
be neither confused with a word nor found inside one.
"""
from __future__ import annotations

import math
import random
import re
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from email.utils import formatdate, parsedate_to_datetime
from html import escape
from urllib.parse import urlsplit

from ..sampleweb.text import Prose

HTML_UTF8 = "text/html; charset=utf-8"
TEXT_UTF8 = "text/plain; charset=utf-8"
MAX_HOSTS = 250 * 20                  # 127.0.3.x .. 127.0.22.x
MAX_HORIZON_DAYS = 10_000             # bounds the events drawn: <= ~500,000 for a 48-a-day page
SIM_START = datetime(2026, 1, 1, tzinfo=timezone.utc)   # calendar date of simulated day 0

# The spread of change rates (per simulated day): a tenth never change, a tenth change
# many times between two visits of a polite crawler, the rest are log-uniform from yearly to 8 a day.
NEVER_FRACTION = 0.1
FAST_FRACTION = 0.1
SLOW_RATES = (1 / 365, 8.0)
FAST_RATES = (24.0, 48.0)
# The "realtime" profile (issue 51), for a web served on the real clock (day_seconds 86400):
# of all pages 10 % noise-only (noise_fraction), 15 % never change, and 75 % Poisson,
# log-uniform from one change per 12 minutes to one per 2 seconds, many of them faster than
# any revisit interval a crawler may use (hopeless to keep fresh at any budget).
REALTIME_NEVER_SHARE = 0.15            # of all pages; drawn among the pages that are not noise
REALTIME_RATES = (86400 / 720, 86400 / 2)
PROFILES = ("days", "realtime")
PAGE_WORDS = (300, 800)
STABLE_SHARE = 0.4                    # of a page's words, the part no version changes

PAGE_RE = re.compile(r"/page/(0|[1-9][0-9]*)")
MARKER_RE = re.compile(r"\bqv([a-pr-z]+)qz\b")
_SYLLABLES = tuple(c + v for c in "bdfgklmnprstvz" for v in "aeiou")
_SYLLABLE_INDEX = {s: i for i, s in enumerate(_SYLLABLES)}


def host_address(index: int) -> str:
    """IP address of host `index`: 127.0.3.1 .. 127.0.3.250, 127.0.4.1, ...  The sample web
    starts at 127.0.1.1 and reaches 127.0.3.x only beyond 500 hosts, so both can run at once."""
    return f"127.0.{3 + index // 250}.{index % 250 + 1}"


@dataclass(frozen=True)
class ChangeConfig:
    """Every knob of the changing web; the web is a pure function of these (and the epoch)."""
    hosts: int = 8
    pages_per_host: int = 25
    port: int = 8400
    seed: int = 1
    day_seconds: float = 2.0          # real seconds per simulated day: 43200x at 2.0
    horizon_days: float = 400.0       # simulated days the change schedule covers
    crawl_delay: float = 0.02         # robots.txt Crawl-delay, real seconds
    validators_fraction: float = 0.75 # hosts sending ETag/Last-Modified and answering 304
    noise_fraction: float = 0.1       # pages whose bytes differ on every response
    latency: float = 0.0              # real seconds before every response
    profile: str = "days"             # the spread of rates: "days" (above) or "realtime"

    def __post_init__(self):
        problems = []
        if not 1 <= self.hosts <= MAX_HOSTS:
            problems.append(f"hosts must be in 1..{MAX_HOSTS}")
        if self.pages_per_host < 1:
            problems.append("pages_per_host must be >= 1")
        if not 0 <= self.port <= 65535:
            problems.append("port must be in 0..65535")
        if self.day_seconds <= 0 or not 0 < self.horizon_days <= MAX_HORIZON_DAYS:
            problems.append(f"day_seconds must be > 0 and horizon_days in (0, {MAX_HORIZON_DAYS}]")
        if self.crawl_delay < 0 or self.latency < 0:
            problems.append("crawl_delay and latency must be >= 0")
        if not (0 <= self.validators_fraction <= 1 and 0 <= self.noise_fraction <= 1):
            problems.append("fractions must be in [0, 1]")
        if self.profile not in PROFILES:
            problems.append(f"profile must be one of {', '.join(PROFILES)}")
        if problems:
            raise ValueError("; ".join(problems))

    def netloc(self, index: int) -> str:
        return f"{host_address(index)}:{self.port}"

    def to_argv(self) -> list[str]:
        """The `serve` CLI flags describing this config (the port included)."""
        return ["--port", str(self.port), "--hosts", str(self.hosts), "--pages", str(self.pages_per_host),
                "--seed", str(self.seed), "--day-seconds", repr(float(self.day_seconds)),
                "--horizon-days", repr(float(self.horizon_days)), "--crawl-delay", repr(float(self.crawl_delay)),
                "--validators-fraction", repr(float(self.validators_fraction)),
                "--noise-fraction", repr(float(self.noise_fraction)), "--latency", repr(float(self.latency)),
                "--profile", self.profile]

    def sim_day(self, wall_time: float, epoch: float) -> float:
        return (wall_time - epoch) / self.day_seconds

    def wall_time(self, sim_day: float, epoch: float) -> float:
        return epoch + sim_day * self.day_seconds


def draw_rate(key: str, profile: str = "days", noise_fraction: float = 0.0) -> float:
    """A change rate (per simulated day) from the profile's spread, fixed by `key`; for the
    realtime profile, the never-changing share is of all pages, `noise_fraction` of which
    are noise (drawn apart)."""
    rng = random.Random(key)
    draw = rng.random()
    if profile == "realtime":
        if draw < REALTIME_NEVER_SHARE / max(1e-9, 1.0 - noise_fraction):
            return 0.0
        low, high = (math.log(r) for r in REALTIME_RATES)
        return math.exp(rng.uniform(low, high))
    if draw < NEVER_FRACTION:
        return 0.0
    if draw < NEVER_FRACTION + FAST_FRACTION:
        return rng.uniform(*FAST_RATES)
    low, high = (math.log(r) for r in SLOW_RATES)
    return math.exp(rng.uniform(low, high))


def poisson_events(rate: float, horizon_days: float, key: str) -> tuple[float, ...]:
    """Event times in (0, horizon_days] of a Poisson process of `rate` per day, fixed by `key`."""
    if rate <= 0:
        return ()
    rng = random.Random(key)
    times = []
    t = rng.expovariate(rate)
    while t <= horizon_days:
        times.append(t)
        t += rng.expovariate(rate)
    return tuple(times)


def _encode(number: int) -> str:
    digits = []
    while True:
        number, rest = divmod(number, len(_SYLLABLES))
        digits.append(_SYLLABLES[rest])
        if number == 0:
            return "".join(reversed(digits))


def _decode(code: str) -> int | None:
    if not code or len(code) % 2:
        return None
    number = 0
    for i in range(0, len(code), 2):
        digit = _SYLLABLE_INDEX.get(code[i:i + 2])
        if digit is None:
            return None
        number = number * len(_SYLLABLES) + digit
    return number if _encode(number) == code else None   # no leading zeros: one spelling each


def marker(host: int, page: int, version: int) -> str:
    """The word only version `version` of page (host, page) contains."""
    return f"qv{_encode(host)}w{_encode(page)}w{_encode(version)}qz"


def version_in_text(text: str) -> tuple[int, int, int] | None:
    """(host, page, version) of the single marker in `text`; None if there is none, or
    several different ones (then the text is not one page's)."""
    codes = set(MARKER_RE.findall(text))
    if len(codes) != 1:
        return None
    parts = [_decode(part) for part in codes.pop().split("w")]
    if len(parts) != 3 or None in parts:
        return None
    return tuple(parts)


# A noise page's one-word sponsor line rotates through these on every response.
SPONSORS = ("acme", "globex", "initech", "umbrella", "hooli", "vandelay", "stark", "wayne", "tyrell",
            "cyberdyne", "soylent", "oscorp")


def sponsor(token: str) -> str:
    """The sponsor word a response with this token shows (the same token, the same word)."""
    return SPONSORS[random.Random(f"changeweb-sponsor:{token}").randrange(len(SPONSORS))]


def not_modified(request_headers: Mapping[str, str], etag: str, last_modified: float) -> bool:
    """RFC 9110 13.2.2 for GET/HEAD: If-None-Match (weak comparison) wins; only without it
    does a valid If-Modified-Since count.  Header names are lower-case."""
    tags = request_headers.get("if-none-match")
    if tags is not None:
        listed = {tag.strip().removeprefix("W/") for tag in tags.split(",")}
        return "*" in listed or etag in listed
    since = request_headers.get("if-modified-since")
    if since is None:
        return False
    try:
        moment = parsedate_to_datetime(since)
    except (TypeError, ValueError):
        return False
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return math.floor(last_modified) <= moment.timestamp()


@dataclass(frozen=True)
class Response:
    status: int
    headers: tuple[tuple[str, str], ...]   # without Date and Connection (the server's)
    body: bytes
    version: int = -1                      # the page version served (or confirmed by a 304)


def _html_response(html: str, version: int = -1, validators=(), status: int = 200) -> Response:
    body = html.encode("utf-8")
    headers = (("Content-Type", HTML_UTF8), ("Content-Length", str(len(body)))) + tuple(validators)
    return Response(status, headers, body, version)


NOT_FOUND = _html_response("<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>"
                           "<body><h1>Not Found</h1></body></html>\n", status=404)


@dataclass(frozen=True)
class Layout:
    """What no version of a page changes, and the size of the part that does."""
    title: str
    stable: tuple[str, ...]
    versioned_words: int


class ChangeWeb:
    """The changing web for one ChangeConfig: hosts, rates, change times, pages, responses."""

    def __init__(self, config: ChangeConfig | None = None, **overrides):
        config = config or ChangeConfig()
        if overrides:
            config = replace(config, **overrides)
        self.config = config
        seed, count, per_host = config.seed, config.hosts, config.pages_per_host
        self.hosts = [config.netloc(i) for i in range(count)]
        self._index = {netloc: i for i, netloc in enumerate(self.hosts)}
        # Exact shares (not per-item coin flips), so small webs still have some of each.
        self.validator_hosts = frozenset(random.Random(f"changeweb-validators:{seed}").sample(
            range(count), round(config.validators_fraction * count)))
        flat = random.Random(f"changeweb-noise:{seed}").sample(
            range(count * per_host), round(config.noise_fraction * count * per_host))
        self.noise_pages = frozenset(divmod(i, per_host) for i in flat)
        self.prose = Prose(seed)
        self._pool_words = tuple(len(p.split()) for p in self.prose.paragraphs)
        self._events: dict[tuple[int, int], tuple[float, ...]] = {}
        self._layouts: dict[tuple[int, int], Layout] = {}

    # ----------------------------------------------------------- identity
    def host_index(self, netloc: str) -> int | None:
        return self._index.get(netloc)

    def url(self, host: int, page: int) -> str:
        return f"http://{self.hosts[host]}/page/{page}"

    def locate(self, url: str) -> tuple[int, int] | None:
        """(host, page) of a page URL, None for any other URL."""
        parts = urlsplit(url)
        host = self._index.get(parts.netloc)
        match = PAGE_RE.fullmatch(parts.path)
        if host is None or match is None or parts.query or int(match[1]) >= self.config.pages_per_host:
            return None
        return host, int(match[1])

    def has_validators(self, host: int) -> bool:
        return host in self.validator_hosts

    def is_noise(self, host: int, page: int) -> bool:
        return (host, page) in self.noise_pages

    # ----------------------------------------------------------- change schedule
    def rate(self, host: int, page: int) -> float:
        """Changes per simulated day (0 for noise pages: their real content never changes)."""
        if self.is_noise(host, page):
            return 0.0
        return draw_rate(f"changeweb-rate:{self.config.seed}:{host}:{page}", self.config.profile,
                         self.config.noise_fraction)

    def events(self, host: int, page: int) -> tuple[float, ...]:
        """Simulated days at which the page changes, ascending (computed once)."""
        key = (host, page)
        times = self._events.get(key)
        if times is None:
            times = self._events[key] = poisson_events(
                self.rate(host, page), self.config.horizon_days,
                f"changeweb-events:{self.config.seed}:{host}:{page}")
        return times

    def version(self, host: int, page: int, sim_day: float) -> int:
        """The number of changes up to and including `sim_day`."""
        return bisect_right(self.events(host, page), sim_day)

    def last_change_day(self, host: int, page: int, sim_day: float) -> float:
        """The simulated day of the latest change up to `sim_day` (0.0 if none)."""
        version = self.version(host, page, sim_day)
        return self.events(host, page)[version - 1] if version else 0.0

    # ----------------------------------------------------------- content
    def robots_txt(self) -> str:
        return f"User-agent: *\nAllow: /\nCrawl-delay: {self.config.crawl_delay:g}\n"

    def site_name(self, host: int) -> str:
        return self.prose.phrase(random.Random(f"changeweb-site:{self.config.seed}:{host}"), 2)

    def layout(self, host: int, page: int) -> Layout:
        key = (host, page)
        layout = self._layouts.get(key)
        if layout is None:
            rng = random.Random(f"changeweb-page:{self.config.seed}:{host}:{page}")
            words = rng.randint(*PAGE_WORDS)
            stable_words = round(words * STABLE_SHARE)
            title = f"{self.prose.phrase(rng, 3)} - {self.site_name(host)}"
            layout = self._layouts[key] = Layout(title, self._paragraphs(rng, stable_words),
                                                 words - stable_words)
        return layout

    def _paragraphs(self, rng: random.Random, words: int) -> tuple[str, ...]:
        """Pool paragraphs, picked by `rng`, totalling at least `words` words."""
        chosen = []
        while words > 0:
            i = rng.randrange(len(self._pool_words))
            chosen.append(self.prose.paragraphs[i])
            words -= self._pool_words[i]
        return tuple(chosen)

    def index_html(self, host: int) -> str:
        """The host's "/": links every page and never changes."""
        site = escape(self.site_name(host))
        items = "".join(f'<li><a href="/page/{k}">{escape(self.layout(host, k).title)}</a></li>\n'
                        for k in range(self.config.pages_per_host))
        return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
                f"<title>{site}</title>\n</head>\n<body>\n<h1>{site}</h1>\n"
                f"<nav><ul>\n{items}</ul></nav>\n</body>\n</html>\n")

    def page_html(self, host: int, page: int, version: int, sim_day: float = 0.0,
                  token: str = "") -> str:
        """Version `version` of the page.  The versioned paragraphs are new words each
        version (the crawler masks digits when it compares text, so changing numbers
        would not count) and start with the version marker.  A noise page also shows the
        simulated time of the response, hides `token` in a meta tag and names a sponsor
        chosen by `token` (a one-word ad rotation), so its bytes differ on every response
        and its words by one in most responses, while its content never changes."""
        layout = self.layout(host, page)
        rng = random.Random(f"changeweb-version:{self.config.seed}:{host}:{page}:{version}")
        versioned = list(self._paragraphs(rng, layout.versioned_words))
        versioned[0] = f"{marker(host, page, version)} {versioned[0]}"
        noise = self.is_noise(host, page)
        title = escape(layout.title)
        parts = ['<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
                 f"<title>{title}</title>\n"]
        if noise:
            parts.append(f'<meta name="csrf-token" content="{escape(token)}">\n')
        parts.append(f'</head>\n<body>\n<header><h1>{title}</h1>\n'
                     f'<nav><a href="/">{escape(self.site_name(host))}</a></nav></header>\n<main>\n')
        parts += [f"<p>{p}</p>\n" for p in layout.stable]
        parts.append('<section class="news">\n')
        parts += [f"<p>{p}</p>\n" for p in versioned]
        parts.append("</section>\n")
        if noise:
            stamp = (SIM_START + timedelta(days=sim_day)).strftime("%Y-%m-%d %H:%M:%S")
            parts.append(f'<p class="generated">Generated {stamp}</p>\n')
            parts.append(f'<p class="sponsor">Sponsored by {sponsor(token)}</p>\n')
        parts.append("</main>\n</body>\n</html>\n")
        return "".join(parts)

    # ----------------------------------------------------------- HTTP
    def respond(self, host: int, path: str, request_headers: Mapping[str, str],
                wall_time: float, epoch: float, token: str = "") -> Response:
        """The answer to GET `path` on host `host` at `wall_time` (header names lower-case).

        Validator hosts send ETag "<host>-<page>-<version>" and Last-Modified (the wall
        time of the last change, the epoch before any) and answer a matching conditional
        request with 304; the index page is "<host>-index-0" since the epoch.  Other hosts
        send neither and always 200.  robots.txt and 404s carry no validators."""
        if path == "/robots.txt":
            body = self.robots_txt().encode("utf-8")
            return Response(200, (("Content-Type", TEXT_UTF8), ("Content-Length", str(len(body)))), body)
        day = self.config.sim_day(wall_time, epoch)
        if path == "/":
            page, version, etag, changed = None, -1, f'"{host}-index-0"', epoch
        else:
            match = PAGE_RE.fullmatch(path)
            if match is None or int(match[1]) >= self.config.pages_per_host:
                return NOT_FOUND
            page = int(match[1])
            version = self.version(host, page, day)
            etag = f'"{host}-{page}-{version}"'
            changed = self.config.wall_time(self.last_change_day(host, page, day), epoch)
        if self.has_validators(host):
            validators = (("ETag", etag), ("Last-Modified", formatdate(changed, usegmt=True)))
            if not_modified(request_headers, etag, changed):
                return Response(304, validators, b"", version)
        else:
            validators = ()
        html = self.index_html(host) if page is None else self.page_html(host, page, version, day, token)
        return _html_response(html, version, validators)
