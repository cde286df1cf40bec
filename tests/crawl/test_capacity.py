"""crawl/capacity.py: the cap on the sessions a process holds, moved by how late due
sessions start. Table first: (cap, sessions open, paced steps, of which late) -> cap."""

import pytest

from crawl.capacity import ADJUST_SECONDS, GROW_EVERY_SECONDS, SessionCap

pytestmark = pytest.mark.backend_free

DELAY = 0.5  # a paced host: a step more than 0.095 s past due is late
ON_TIME, LATE = 0.01, 0.3


def capped(cap: int, floor: int = 32, ceiling: int = 1000) -> SessionCap:
    limiter = SessionCap(floor=floor, ceiling=ceiling, cap=cap)
    limiter.adjust(0.0, 0)  # the first period begins
    return limiter


def period(limiter: SessionCap, open_sessions: int, on_time: int, late: int, delay: float = DELAY,
           now: float = ADJUST_SECONDS) -> int:
    for _ in range(on_time):
        limiter.stepped(ON_TIME, delay)
    for _ in range(late):
        limiter.stepped(LATE, delay)
    return limiter.adjust(now, open_sessions)


@pytest.mark.parametrize("cap, open_sessions, on_time, late, after", [
    (100, 100, 100, 0, 125),  # in use, on time: grows by a quarter
    (40, 40, 100, 0, 50),
    (100, 60, 100, 0, 100),  # not in use: stays
    (100, 100, 40, 60, 90),  # mostly late: 90 %
    (100, 60, 40, 60, 54),  # of what is open, if less
    (112, 125, 40, 60, 100),  # of itself, while more are open (they end in their time)
    (100, 100, 55, 45, 90),  # more than 40 % late: shrinks
    (100, 100, 60, 40, 100),  # some late (20-40 %): holds
    (100, 100, 80, 20, 100),
    (100, 100, 85, 15, 125),  # under 20 %: grows
    (100, 100, 5, 0, 125),  # hardly a paced step (no delay, or long ones): pacing is not at stake
    (40, 40, 0, 100, 36),
    (34, 34, 0, 100, 32),  # never below its floor (a quarter of the fetch threads, at least 4)
    (990, 990, 100, 0, 1000),  # nor above CRAWLER_SESSIONS_PER_PROCESS
])
def test_the_cap_moves_with_how_late_due_sessions_start(cap, open_sessions, on_time, late, after):
    assert period(capped(cap), open_sessions, on_time, late) == after


def test_it_starts_at_64_sessions_or_twice_the_fetch_threads_within_its_bounds():
    assert SessionCap(floor=32, ceiling=1000).cap == 64
    assert SessionCap(floor=50, ceiling=1000).cap == 100
    assert SessionCap(floor=2, ceiling=10).cap == 10
    assert SessionCap(floor=1000, ceiling=1000).cap == 1000  # CRAWLER_SESSIONS_PACED off


def test_it_moves_once_a_period_whatever_is_asked_between():
    limiter = capped(100)
    for _ in range(100):
        limiter.stepped(LATE, DELAY)
    assert limiter.adjust(ADJUST_SECONDS / 2, 100) == 100
    assert limiter.adjust(ADJUST_SECONDS, 100) == 90
    assert limiter.adjust(ADJUST_SECONDS * 1.5, 100) == 90  # the next period has just begun


def test_a_step_of_a_host_without_a_delay_is_never_late():
    limiter = capped(100)
    for _ in range(500):
        limiter.stepped(5.0, 0.0)  # due at once and served when a thread is free
    for _ in range(100):
        limiter.stepped(LATE, DELAY)  # a few paced hosts among them wait too
    assert (limiter.steps, limiter.late) == (600, 100)
    assert limiter.adjust(ADJUST_SECONDS, 100) == 125  # the threads are the limit, not pacing


def test_lateness_is_judged_against_the_hosts_own_delay():
    limiter = capped(100)
    limiter.stepped(0.3, 5.0)  # 0.3 s late on a 5 s delay is on time
    limiter.stepped(0.3, 0.5)  # on a 0.5 s delay it is late
    assert (limiter.steps, limiter.late) == (2, 1)



def test_it_grows_at_most_once_in_grow_every_seconds():
    """The sessions a growth lets in show their lateness only after a few steps: a cap that
    grew every second on their first, on-time steps overshot to four times what the
    process could pace (300 small sites at the default delay), then took the late
    sessions' whole lives to come back."""
    limiter = capped(100)
    assert period(limiter, 100, 100, 0, now=ADJUST_SECONDS) == 125
    assert period(limiter, 125, 100, 0, now=2 * ADJUST_SECONDS) == 125
    assert period(limiter, 125, 100, 0, now=1 * ADJUST_SECONDS + GROW_EVERY_SECONDS) == 156
    assert period(limiter, 156, 40, 60, now=2 * ADJUST_SECONDS + GROW_EVERY_SECONDS) == 140  # shrinking never waits
