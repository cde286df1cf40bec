"""Group commit: batches that threads of one process finish together are written together.

Writing a batch costs mostly per statement, not per row, and a lease often carries only a
few pages. So a thread that has collected a batch hands it to commit(): if no write is
running it writes at once (nobody waits for company), taking along every batch that other
threads handed in meanwhile, at most `max_group` leases (it is the leader); otherwise it
waits, and the next leader writes its batch with the others. Databases call this group
commit.

If a group's write fails, each thread writes its own batch again alone, so a batch that
cannot be written fails only its own task, as it would without grouping. The Celery
threads pool is where groups form; a prefork child runs one task at a time and simply
writes alone.
"""

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class _Entry:
    item: Any
    done: bool = False
    failed: bool = False  # the group's write failed: write this item alone


class GroupCommitter:
    def __init__(self, write_many: Callable[[list], object], max_group: int):
        self._write_many = write_many
        self._max_group = max(1, max_group)
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
                group = [entry, *self._waiting[: self._max_group - 1]]
                del self._waiting[: self._max_group - 1]
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
