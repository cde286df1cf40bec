"""How many host sessions a process can pace at their hosts' delays.

A session asks for a fetch thread each time its host's delay has passed (crawl/engine.py).
When the process cannot serve as many requests a second as its sessions' delays allow (its
CPU, its parse processes, its writer are the limit), every due session waits for a thread,
and every host is paced at its share of the process instead of its delay: 300 small sites
at `Crawl-delay: 0.5` on a process that serves 100 pages a second get one request every
3 s each. The crawl takes as long either way (the process is the limit), but each host is
held three times longer than it needs to be, with a connection open all along.

So the engine takes only as many sessions as it can pace, and the runners lease no host
beyond that (the embedded loop reads engine.room(); a Celery task waits for room, which
holds back the worker's queue). The cap is found by measuring, the way TCP finds a
window: each step of a session whose host has a delay is late or on time (it started
more than LATE_SHARE_OF_DELAY of the delay, plus LATE_SLACK_SECONDS, after it was due);
every ADJUST_SECONDS, a cap in use grows by a quarter while under a fifth of the steps
are late (at most once in GROW_EVERY_SECONDS: the sessions a growth lets in start on
time and show their lateness only a few steps later), and shrinks to 90 % of itself (or
of the sessions open, if fewer) while over two fifths are; sessions over the cap end in
their own time (a session ended early costs its host a connection). The thresholds are
set by the gap a host sees: a step is late past about 1.17 times its delay, so a process
that keeps under two fifths of its steps late keeps the median gap under that (issue 50:
with "grow under 30 %, shrink over 50 %" and a growth every second, 300 small sites at
the default delay saw a median gap of 1.17 and a p90 of 3.1 times the delay).
It does not shrink to what the requests it served would pace: with fewer sessions it
serves fewer, and the cap spirals down (tried: one request a second after a minute).
A step of a host without a delay (due at once, served when a thread is free) is never
late: a process crawling such hosts is limited by its threads, not by pacing, and its
cap grows. The cap stays between a quarter of the fetch threads (at least 4) and
CRAWLER_SESSIONS_PER_PROCESS. Where the bottleneck is not the threads (a parse process,
the writer, the database), due sessions wait for threads held by pages waiting on it,
so lateness shows it too.
"""

from dataclasses import dataclass

ADJUST_SECONDS = 1.0  # how often the cap moves
MIN_STEPS = 10  # steps a period needs before it says anything
LATE_SHARE_OF_DELAY = 0.15  # a step this share of its host's delay past due is late...
LATE_SLACK_SECONDS = 0.02  # ...plus this (a thread's wake-up, the GIL)
SHRINK_WHEN_LATE = 0.4  # share of late steps above which the cap shrinks
GROW_WHEN_LATE = 0.2  # share of late steps below which a cap in use grows
SHRINK_FACTOR = 0.9
GROW_FACTOR = 1.25
GROW_AT_LEAST = 4
GROW_EVERY_SECONDS = 2.5  # at most one growth in this long: new sessions are late only after a few steps
START = 64  # the cap to begin with (at least twice the floor)
MIN_PACED_DELAY = 0.05  # seconds: a host with a shorter delay is not paced, only served


@dataclass
class SessionCap:
    floor: int  # never fewer (the engine gives a quarter of its fetch threads, at least 4)
    ceiling: int  # never more (CRAWLER_SESSIONS_PER_PROCESS)
    cap: int = 0  # sessions the process may hold now (0: START, or twice the floor)
    next_adjust: float = 0.0
    steps: int = 0  # steps this period
    late: int = 0  # of which late
    grown_at: float = 0.0  # when the cap last grew (monotonic; 0: never)

    def __post_init__(self):
        self.floor = max(1, min(self.floor, self.ceiling))
        self.cap = min(self.ceiling, max(self.floor, self.cap or max(START, 2 * self.floor)))

    def stepped(self, lateness: float, delay: float) -> None:
        """A session's step began `lateness` seconds after it was due; its host's delay."""
        self.steps += 1
        if delay >= MIN_PACED_DELAY and lateness > LATE_SHARE_OF_DELAY * delay + LATE_SLACK_SECONDS:
            self.late += 1

    def adjust(self, now: float, open_sessions: int) -> int:
        """Move the cap once a period, from the period's steps; returns the cap."""
        if now < self.next_adjust:
            return self.cap
        if self.next_adjust and self.steps >= MIN_STEPS:
            share = self.late / self.steps
            if share > SHRINK_WHEN_LATE:
                self.cap = max(self.floor, int(min(self.cap, open_sessions) * SHRINK_FACTOR))
            elif share < GROW_WHEN_LATE and open_sessions >= 0.9 * self.cap - 1:
                self._grow(now)
        elif self.next_adjust and open_sessions >= 0.9 * self.cap - 1:
            # Hardly a step: the hosts wait long. Pacing is not at stake; a cap in use grows.
            self._grow(now)
        self.steps = self.late = 0
        self.next_adjust = now + ADJUST_SECONDS
        return self.cap

    def _grow(self, now: float) -> None:
        if self.grown_at and now - self.grown_at < GROW_EVERY_SECONDS:
            return  # the sessions the last growth let in have not shown their lateness yet
        self.grown_at = now
        self.cap = min(self.ceiling, max(self.cap + GROW_AT_LEAST, int(self.cap * GROW_FACTOR)))
