"""The Scrapy peer's spider: crawls the sample web with Scrapy, stores nothing.

Runs inside its own virtualenv (var/scrapy-venv, made by bench/scrapy_peer.py) with that
venv's python, never imported by the project: it knows nothing of Django or crawlerweb.

    var/scrapy-venv/bin/python bench/scrapy_spider.py --seeds-file seeds.txt --timeout 600

Prints one JSON line at the end (see `summary`). The settings and why are in `settings()`
and in bench/scrapy_peer.py's docstring. Stock Scrapy with settings only, except what
our politeness rules need and Scrapy does not do, in the HostPacing middleware:
- robots.txt Crawl-delay: Scrapy parses it (Protego) but never applies it;
- the delay counted from the end of the previous response: Scrapy counts its download
  delay from the previous request's *start*, so a 200 ms Crawl-delay on a host that
  takes 20 ms to answer would leave 180 ms gaps;
- Retry-After on 429/503: Scrapy's retry re-queues at once.
"""

import argparse
import ipaddress
import json
import sys
import time
from urllib.parse import urldefrag, urlsplit

import scrapy
from scrapy import signals
from scrapy.crawler import CrawlerProcess
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse

LOOPBACK = ipaddress.ip_network("127.0.0.0/8")
RETRY_STATUSES = (429, 503)
_loopback_hosts: dict[str, bool] = {}


def on_loopback(url: str) -> bool:
    """http(s) URL whose host is an IPv4 literal in 127.0.0.0/8: the only traffic allowed."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return False
    host = parts.hostname or ""
    allowed = _loopback_hosts.get(host)
    if allowed is None:
        try:
            allowed = ipaddress.ip_address(host) in LOOPBACK
        except ValueError:
            allowed = False
        _loopback_hosts[host] = allowed
    return allowed


def retry_after_seconds(response) -> float:
    value = (response.headers.get(b"Retry-After") or b"").decode("latin-1").strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        return 0.0  # an HTTP-date: the sample web sends none, and this peer does not parse it


class HostPacing:
    """Downloader middleware (after RobotsTxtMiddleware): loopback only, Crawl-delay and
    Retry-After applied to the host's download slot.

    Scrapy keys download slots by hostname; every sample-web host has its own address,
    so a slot is a host. The slot's `delay` is set from the robots.txt Crawl-delay when
    Scrapy has parsed it (robots_parsed signal, before the first page request of that
    host reaches the downloader), with no jitter. Scrapy measures the delay from
    `slot.lastseen`, the time the previous request was sent; on every response we move
    lastseen to the moment the response was read (response_downloaded fires before the
    slot picks its next request), so the delay is the gap between requests. A 429/503
    with Retry-After raises the slot's delay to it until the next response.
    """

    def __init__(self, crawler):
        self.crawler = crawler
        self.crawl_delay: dict[str, float] = {}  # slot key (hostname) -> Crawl-delay
        # Bench instrumentation, not crawl state: URLs answered (robots.txt excluded), so
        # that a 429/503 and its retry count once, as the audit counts them.
        self.answered: set[str] = set()
        self.by_status: dict[int, int] = {}

    @classmethod
    def from_crawler(cls, crawler):
        middleware = cls(crawler)
        crawler.signals.connect(middleware.robots_parsed, signal=signals.robots_parsed)
        crawler.signals.connect(middleware.response_downloaded, signal=signals.response_downloaded)
        return middleware

    def process_request(self, request):
        # Redirect targets come through here too: nothing leaves loopback.
        if not on_loopback(request.url):
            raise IgnoreRequest("off loopback")

    @property
    def downloader(self):
        return self.crawler.engine.downloader

    def robots_parsed(self, robotparser, request):
        settings = self.crawler.settings
        delay = robotparser.crawl_delay(settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT") or "*")
        if not delay:
            return
        key = self.downloader.get_slot_key(request)
        self.crawl_delay[key] = delay
        # A slot idle for 60 s is dropped and made again from DOWNLOAD_SLOTS: keep it there.
        self.downloader.per_slot_settings[key] = {"delay": delay, "jitter": 0.0}
        slot = self.downloader.slots.get(key)  # made by the robots.txt request itself
        if slot is not None:
            slot.delay, slot.jitter = delay, 0.0

    def response_downloaded(self, response, request):
        if urlsplit(request.url).path != "/robots.txt":
            self.answered.add(request.url)
            self.by_status[response.status] = self.by_status.get(response.status, 0) + 1
        key = request.meta.get("download_slot")
        slot = self.downloader.slots.get(key) if key is not None else None
        if slot is None:
            return
        slot.lastseen = time.monotonic()
        delay = self.crawl_delay.get(key, 0.0)
        if response.status in RETRY_STATUSES:
            delay = max(delay, retry_after_seconds(response))
        slot.delay, slot.jitter = delay, 0.0


class SampleWebSpider(scrapy.Spider):
    """Follows a[href] on HTML pages: not rel=nofollow, not from pages whose meta robots
    says nofollow, fragments dropped, <base href> honoured (response.urljoin), loopback
    only. Duplicates are Scrapy's dupefilter's business; depth is DepthMiddleware's."""

    name = "sampleweb"

    def __init__(self, seeds: list[str], **kwargs):
        super().__init__(**kwargs)
        self.seeds = seeds
        self.html_pages = 0
        self.stats: dict = {}
        self.reactor = ""

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.closed_with_stats, signal=signals.spider_closed)
        return spider

    async def start(self):
        for url in self.seeds:
            yield scrapy.Request(url, callback=self.parse)

    def parse(self, response):
        if response.status != 200 or not isinstance(response, HtmlResponse):
            return
        self.html_pages += 1
        for content in response.xpath("//meta[translate(@name,'ROBTS','robts')='robots']/@content").getall():
            if "nofollow" in content.lower():
                return
        for anchor in response.css("a[href]"):
            if "nofollow" in (anchor.attrib.get("rel") or "").lower().split():
                continue
            url = urldefrag(response.urljoin(anchor.attrib["href"].strip()))[0]
            if on_loopback(url):
                yield scrapy.Request(url, callback=self.parse)

    def closed_with_stats(self, spider, reason):
        self.stats = dict(self.crawler.stats.get_stats()) | {"finish_reason": reason}
        # Imported here: at the top it would install Twisted's default reactor first.
        from twisted.internet import reactor

        self.reactor = f"{type(reactor).__module__}.{type(reactor).__name__}"


def settings(concurrency: int, timeout: float, depth_limit: int, max_redirects: int) -> dict:
    return {
        "LOG_LEVEL": "WARNING",
        # Twisted's epoll reactor, not Scrapy 2.19's default asyncio one: on asyncio the
        # downloader starts a slot's transfers as tasks that mark themselves
        # "transferring" only when they first run, so a host whose slot has no delay gets
        # its whole queue at once (seen: 22 requests in flight to one host), whatever
        # CONCURRENT_REQUESTS_PER_DOMAIN says. On Twisted a transfer is marked at once.
        "TWISTED_REACTOR": "twisted.internet.epollreactor.EPollReactor",
        "TELNETCONSOLE_ENABLED": False,        # no listening port of its own,
        "REMOTE_CONTROL_ENABLED": False,       # nor this one's (it needs asyncio anyway)
        # Output of a callback is processed CONCURRENT_ITEMS at a time (default 100
        # coroutines per response); this spider yields requests only, which enqueue
        # synchronously, so one at a time loses nothing and saves CPU.
        "CONCURRENT_ITEMS": 1,
        "ROBOTSTXT_OBEY": True,
        "CONCURRENT_REQUESTS": concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,   # one request in flight per host
        "DOWNLOAD_DELAY": 0,                   # hosts without Crawl-delay: none, as ours
        "DOWNLOAD_DELAY_JITTER": 0,            # Crawl-delay exact (RANDOMIZE_DOWNLOAD_DELAY's successor)
        "DEPTH_LIMIT": depth_limit,
        "REDIRECT_MAX_TIMES": max_redirects,
        # Breadth-first, as the ground truth counts: every URL is first met at its
        # smallest depth, so the depth limit cuts where the truth's does.
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "RETRY_HTTP_CODES": [500, 502, 503, 504, 522, 524, 408, 429],  # Scrapy's default
        "CLOSESPIDER_TIMEOUT": timeout,
        "DOWNLOADER_MIDDLEWARES": {HostPacing: 110},  # after robots.txt (100)
    }


def summary(spider: SampleWebSpider, pacing: HostPacing, elapsed: float) -> dict:
    """pages: distinct URLs answered, any status, robots.txt excluded (what the audit
    calls fetched, and what crawlerweb counts as fetched URLs); html_pages: 200 HTML
    responses parsed; urls: distinct URLs scheduled (past the dupefilter: a retry
    re-schedules its URL)."""
    stats = spider.stats
    retries = stats.get("retry/count", 0)
    return {
        "scrapy": scrapy.__version__,
        "reactor": spider.reactor,
        "finish_reason": stats.get("finish_reason"),
        "pages": len(pacing.answered),
        "html_pages": spider.html_pages,
        "urls": stats.get("scheduler/enqueued", 0) - retries,
        "requests": stats.get("downloader/request_count", 0),
        "responses_by_status": {str(k): v for k, v in sorted(pacing.by_status.items())},
        "robots_responses": stats.get("robotstxt/response_count", 0),
        "robots_forbidden": stats.get("robotstxt/forbidden", 0),
        "retries": retries,
        "dupefilter_filtered": stats.get("dupefilter/filtered", 0),
        "max_depth": stats.get("request_depth_max", 0),
        "crawl_delay_hosts": len(pacing.crawl_delay),
        "elapsed_seconds": round(elapsed, 3),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds-file", help="one seed URL a line")
    parser.add_argument("seeds", nargs="*")
    parser.add_argument("--concurrency", type=int, default=256, help="CONCURRENT_REQUESTS (all hosts)")
    parser.add_argument("--timeout", type=float, default=1800, help="CLOSESPIDER_TIMEOUT, seconds")
    parser.add_argument("--depth-limit", type=int, default=20)
    parser.add_argument("--max-redirects", type=int, default=3)
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a Scrapy setting (value parsed as JSON if it can be)")
    args = parser.parse_args(argv)
    seeds = list(args.seeds)
    if args.seeds_file:
        with open(args.seeds_file, encoding="utf-8") as handle:
            seeds += [line.strip() for line in handle if line.strip()]
    if not seeds or not all(on_loopback(url) for url in seeds):
        parser.error("give seeds, all on loopback (127.0.0.0/8)")
    chosen = settings(args.concurrency, args.timeout, args.depth_limit, args.max_redirects)
    for override in args.set:
        name, _, value = override.partition("=")
        try:
            chosen[name] = json.loads(value)
        except ValueError:
            chosen[name] = value
    process = CrawlerProcess(chosen)
    crawler = process.create_crawler(SampleWebSpider)
    started = time.monotonic()
    process.crawl(crawler, seeds=seeds)
    process.start()
    pacing = crawler.get_downloader_middleware(HostPacing)
    print(json.dumps(summary(crawler.spider, pacing, time.monotonic() - started)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
