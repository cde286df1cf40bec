"""robots.txt as RFC 9309 reads it: which group applies to us is decided here, how a
path matches a rule is protego's job.

Why a layer of our own: protego picks the group whose user-agent text appears, at the
start of a word, *inside* the string it is given: with our full User-Agent, groups for
`github`, `com` or `0.1` applied to us, and with the bare token a group for `crawler` did;
and it misses a group whose user-agent line carries more than a name (`User-agent:
crawlerweb bar`). It also keeps a byte-order mark as part of the first line. RFC
9309 section 2.2.1: a crawler matches its *product token* case-insensitively against the
name in each user-agent line. So we read the file ourselves (following Google's reference
parser, robotstxt, where the RFC leaves room), keep the rules of the groups meant for us
(or of `*` when none is), and hand protego a file of that single group to match paths with
(longest match wins, Allow wins a tie, `*` and `$`, percent-encoding: section 2.2.2).

Reading rules:
- a byte-order mark is ignored; lines end at CR, LF or CRLF; `#` starts a comment;
- a line is `key: value`; a key may be followed by whitespace instead of a colon, and the
  common misspellings Google accepts are read as the key they mean;
- a group is one or more user-agent lines followed by rules; a user-agent line after a rule
  starts a new group; other lines (Sitemap, unknown keys) do not end a group;
- a user-agent line names a product: its leading letters, `_` and `-` (`Foo Bar` and
  `Foo/1.2` both name `foo`); `*` names every crawler;
- all groups naming us are merged, and only if none does, all `*` groups are;
- rules before any user-agent line belong to no group and are ignored;
- Crawl-delay (not in the RFC, widely used) is read from the chosen groups: a number of
  seconds, the first valid one wins;
- Sitemap lines are collected wherever they are (they belong to no group).

Gemini (the robots.txt companion specification, gemini://geminiprotocol.net/docs/companion/robots.gmi):
a bot obeys the groups for `*` and for its own name, and *also* those for each *virtual
user-agent* that describes what it does (`indexer`, `archiver`, `researcher`,
`webproxy`): `also` names them (CRAWLER_GEMINI_ROBOTS_AGENTS). Their rules are merged into
one set, as RFC 9309 merges the groups that name one crawler, so the most specific rule
wins wherever it came from: `User-agent: crawlerweb / Allow: /open/` still opens `/open/`
under a `User-agent: * / Disallow: /`. The longest Crawl-delay among them counts.
"""

import re
from dataclasses import dataclass

from django.conf import settings
from protego import Protego

_LINE_END = re.compile(r"\r\n|\r|\n")
_KEY_VALUE = re.compile(r"^\s*([A-Za-z_-]+(?:[ \t]+agent)?)\s*(?::\s*|\s+)(.*?)\s*$")
_PRODUCT = re.compile(r"[A-Za-z_-]+")
_KEYS = {
    "user-agent": "user-agent", "useragent": "user-agent", "user agent": "user-agent",
    "allow": "allow",
    "disallow": "disallow", "dissallow": "disallow", "dissalow": "disallow", "disalow": "disallow",
    "diasllow": "disallow", "disallaw": "disallow",
    "crawl-delay": "crawl-delay", "crawldelay": "crawl-delay",
    "sitemap": "sitemap", "site-map": "sitemap",
}


def crawler_token() -> str:
    """The product token the robots.txt groups are matched against: CRAWLER_ROBOTS_TOKEN, or
    the one in CRAWLER_USER_AGENT."""
    return (settings.CRAWLER_ROBOTS_TOKEN or product_token(settings.CRAWLER_USER_AGENT)).lower()


def product_token(user_agent: str) -> str:
    """The name in a User-Agent string: `crawlerweb/0.1 (+https://…)` -> `crawlerweb`."""
    match = _PRODUCT.match(user_agent.strip())
    return match.group(0).lower() if match else ""


@dataclass
class _Group:
    agents: list[str]
    rules: list[tuple[str, str]]  # ("allow" | "disallow", path)
    crawl_delay: float | None = None


@dataclass(frozen=True)
class RobotsFile:
    """The part of a robots.txt that applies to one crawler."""

    rules: tuple[tuple[str, str], ...]
    crawl_delay: float | None
    sitemaps: tuple[str, ...]
    matcher: Protego

    def allows(self, url: str) -> bool:
        return self.matcher.can_fetch(url, "*")


def parse(text: str, token: str, also: tuple[str, ...] = ()) -> RobotsFile:
    """Read a robots.txt for the crawler whose product token is `token` (and, for Gemini,
    the virtual user-agents `also`)."""
    groups, sitemaps = _read(text.removeprefix("\ufeff"))
    token = token.lower()
    if also:
        names = {token, "*", *(agent.lower() for agent in also)}
        mine = [g for g in groups if names.intersection(g.agents)]
        delays = [g.crawl_delay for g in mine if g.crawl_delay is not None]
        delay = max(delays) if delays else None
    else:
        mine = [g for g in groups if token and token in g.agents] or [g for g in groups if "*" in g.agents]
        delay = next((g.crawl_delay for g in mine if g.crawl_delay is not None), None)
    rules = tuple(rule for g in mine for rule in g.rules)
    return RobotsFile(rules, delay, tuple(sitemaps), _matcher(rules))


def _matcher(rules: tuple[tuple[str, str], ...]) -> Protego:
    # One anonymous group with exactly these rules: protego only matches paths.
    return Protego.parse("User-agent: *\n" + "".join(f"{kind.capitalize()}: {path}\n" for kind, path in rules if path))


def _read(text: str) -> tuple[list[_Group], list[str]]:
    groups: list[_Group] = []
    sitemaps: list[str] = []
    current: _Group | None = None
    in_agents = False  # the previous group line was a user-agent line
    for line in _LINE_END.split(text):
        match = _KEY_VALUE.match(line.split("#", 1)[0])
        if not match:
            continue
        key = _KEYS.get(match.group(1).lower())
        value = match.group(2)
        if key == "user-agent":
            agent = "*" if value.startswith("*") else _product(value)
            if not agent:
                continue
            if not in_agents:
                current = _Group([], [])
                groups.append(current)
            current.agents.append(agent)
            in_agents = True
        elif key in ("allow", "disallow"):
            in_agents = False
            if current is not None:
                current.rules.append((key, value))
        elif key == "crawl-delay":
            in_agents = False
            if current is not None and current.crawl_delay is None:
                current.crawl_delay = _seconds(value)
        elif key == "sitemap" and value:
            sitemaps.append(value)
    return groups, sitemaps


def _product(value: str) -> str:
    match = _PRODUCT.match(value)
    return match.group(0).lower() if match else ""


def _seconds(value: str) -> float | None:
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 and seconds == seconds and seconds != float("inf") else None
