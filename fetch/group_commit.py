"""Group commit: batches that threads of one process finish together are written together.

Writing a batch costs mostly per statement, not per row, and a lease often carries only a
few pages. So a thread that has collected a batch hands it to commit(): if no write is
running it writes at once (nobody waits for company), taking along the batches other
threads handed in meanwhile, oldest first, up to a weight (pages: what a write holds in
memory); it is the leader. Otherwise it waits, and the next leader writes its batch with
the others. Databases call this group commit.

If a group's write fails, each thread writes its own batch again alone, so a batch that
cannot be written fails only its own task, as it would without grouping. The Celery
threads pool is where groups form; a prefork child runs one task at a time and simply
writes alone.
"""

import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any


def groups(items: Iterable, max_weight: int, weight: Callable[[Any], int]) -> Iterator[list]:
    """Consecutive runs of `items` weighing at most max_weight; an item heavier than
    that on its own makes a group of one."""
    group, total = [], 0
    for item in items:
        w = weight(item)
        if group and total + w > max_weight:
            yield group
            group, total = [], 0
        group.append(item)
        total += w
    if group:
        yield group


@dataclass
class _Entry:
    item: Any
    done: bool = False
    failed: bool = False  # the group's write failed: write this item alone


class GroupCommitter:
    def __init__(self, write_many: Callable[[list], object], max_weight: int,
                 weight: Callable[[Any], int] = lambda item: 1):
        self._write_many = write_many
        self._max_weight = max(1, max_weight)
        self._weight = weight
        self._cond = threading.Condition()
        self._waiting: list[_Entry] = []
        self._writing = False

    def commit(self, item) -> None:
        """Return once `item` is written; raise what its write raised."""
        entry = _Entry(item)
        with self._cond:
            self._waiting.append(entry)
            while self._writing and not entry.done:
                self._cond.wait()
            if not entry.done:  # no write running: lead one, this entry first
                self._waiting.remove(entry)
                group = next(groups([entry, *self._waiting], self._max_weight, lambda e: self._weight(e.item)))
                del self._waiting[: len(group) - 1]
                self._writing = True
        if not entry.done:
            self._lead(group)
        if entry.failed:
            self._write_many([entry.item])  # alone: its own error, if any, is raised here

    def _lead(self, group: list[_Entry]) -> None:
        failed = False
        try:
            self._write_many([e.item for e in group])
        except BaseException:
            if len(group) == 1:
                raise
            failed = True
        finally:
            with self._cond:
                for e in group:
                    e.done, e.failed = True, failed
                self._writing = False
                self._cond.notify_all()
