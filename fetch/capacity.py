"""How many host sessions a process can pace at their hosts' delays.

A session asks for a fetch thread each time its host's delay has passed (fetch/engine.py).
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
every ADJUST_SECONDS, a cap in use grows by a quarter while few steps are late, and
shrinks to 90 % of the sessions open while many are. It never goes below the fetch threads (a
process whose hosts have no delay is limited by its threads, not by pacing) nor above
CRAWLER_SESSIONS_PER_PROCESS. Steps of hosts without a delay say nothing: they are due
at once, so a wait for a thread is not a pacing error.
"""

from dataclasses import dataclass

ADJUST_SECONDS = 1.0  # how often the cap moves
MIN_STEPS = 10  # paced steps a period needs before it says anything
LATE_SHARE_OF_DELAY = 0.15  # a step this share of its host's delay past due is late...
LATE_SLACK_SECONDS = 0.02  # ...plus this (a thread's wake-up, the GIL)
SHRINK_WHEN_LATE = 0.5  # share of late steps above which the cap shrinks
GROW_WHEN_LATE = 0.3  # share of late steps below which a cap in use grows
SHRINK_FACTOR = 0.9
GROW_FACTOR = 1.25
GROW_AT_LEAST = 4
START = 64  # the cap to begin with (at least twice the floor)
MIN_PACED_DELAY = 0.05  # seconds: a host with a shorter delay is not paced, only served


@dataclass
class SessionCap:
    floor: int  # never fewer (the fetch threads)
    ceiling: int  # never more (CRAWLER_SESSIONS_PER_PROCESS)
    cap: int = 0  # sessions the process may hold now (0: START, or twice the floor)
    next_adjust: float = 0.0
    steps: int = 0  # paced steps this period
    late: int = 0  # of which late

    def __post_init__(self):
        self.floor = max(1, min(self.floor, self.ceiling))
        self.cap = min(self.ceiling, max(self.floor, self.cap or max(START, 2 * self.floor)))

    def stepped(self, lateness: float, delay: float) -> None:
        """A session's step began `lateness` seconds after it was due; its host's delay."""
        if delay < MIN_PACED_DELAY:
            return
        self.steps += 1
        if lateness > LATE_SHARE_OF_DELAY * delay + LATE_SLACK_SECONDS:
            self.late += 1

    def adjust(self, now: float, open_sessions: int) -> int:
        """Move the cap once a period, from the period's steps; returns the cap."""
        if now < self.next_adjust:
            return self.cap
        if self.next_adjust and self.steps >= MIN_STEPS:
            share = self.late / self.steps
            if share > SHRINK_WHEN_LATE:
                self.cap = max(self.floor, min(self.cap, int(open_sessions * SHRINK_FACTOR)))
            elif share < GROW_WHEN_LATE and open_sessions >= 0.9 * self.cap - 1:
                self._grow()
        elif self.next_adjust and open_sessions >= 0.9 * self.cap - 1:
            # Hardly any paced step: the hosts have no delay, or wait long. Pacing is not
            # at stake, so a cap in use grows.
            self._grow()
        self.steps = self.late = 0
        self.next_adjust = now + ADJUST_SECONDS
        return self.cap

    def _grow(self) -> None:
        self.cap = min(self.ceiling, max(self.cap + GROW_AT_LEAST, int(self.cap * GROW_FACTOR)))
