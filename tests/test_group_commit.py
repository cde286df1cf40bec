"""Group commit (fetch.group_commit): batches handed in while a write runs are written
together by the next leader; a failed group falls back to each batch alone."""

import threading

import pytest

from fetch.group_commit import GroupCommitter, groups


class Recorder:
    """write_many that records each call; the first call can be held until released."""

    def __init__(self, fail_on=()):
        self.calls: list[list] = []
        self.first_started = threading.Event()
        self.release_first = threading.Event()
        self.fail_on = set(fail_on)
        self._lock = threading.Lock()

    def __call__(self, items):
        with self._lock:
            self.calls.append(list(items))
            first = len(self.calls) == 1
        if first:
            self.first_started.set()
            assert self.release_first.wait(10)
        if self.fail_on & set(items):
            raise ValueError(f"cannot write {sorted(self.fail_on & set(items))}")


def _commit_in_thread(committer, item, errors):
    def run():
        try:
            committer.commit(item)
        except Exception as exc:  # noqa: BLE001 - recorded for the assertion
            errors[item] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _commit_during_a_write(committer, write, items) -> dict:
    """Commit "first" and hold its write; commit `items` from other threads meanwhile;
    once all of them wait, let the first write finish. Returns item -> error raised."""
    errors = {}
    first = _commit_in_thread(committer, "first", errors)
    assert write.first_started.wait(10)
    others = [_commit_in_thread(committer, item, errors) for item in items]
    _wait_until_waiting(committer, len(items))
    write.release_first.set()
    for thread in [first, *others]:
        thread.join(10)
    return errors


def _wait_until_waiting(committer, n):
    for _ in range(1000):
        with committer._cond:
            if len(committer._waiting) == n:
                return
        threading.Event().wait(0.005)
    raise AssertionError(f"never saw {n} batches waiting")


def test_a_lone_batch_is_written_at_once_alone():
    write = Recorder()
    write.release_first.set()
    GroupCommitter(write, max_weight=16).commit("a")
    assert write.calls == [["a"]]


def test_batches_handed_in_during_a_write_are_written_together_by_the_next_leader():
    write = Recorder()
    errors = _commit_during_a_write(GroupCommitter(write, max_weight=16), write, [f"b{i}" for i in range(5)])
    assert errors == {}
    assert write.calls[0] == ["first"]
    assert len(write.calls) == 2
    assert sorted(write.calls[1]) == [f"b{i}" for i in range(5)]


def test_groups_keep_order_and_weight_and_a_heavy_item_goes_alone():
    weights = {"a": 2, "b": 2, "c": 1, "huge": 9, "d": 3}
    assert list(groups("a b c huge d".split(), 5, weights.get)) == [["a", "b", "c"], ["huge"], ["d"]]
    assert list(groups([], 5, weights.get)) == []


def test_a_group_weighs_at_most_max_weight_and_takes_the_oldest_first():
    write = Recorder()
    weights = {"first": 1, "b0": 2, "b1": 2, "b2": 2, "b3": 1}
    committer = GroupCommitter(write, max_weight=4, weight=weights.get)
    errors = {}
    first = _commit_in_thread(committer, "first", errors)
    assert write.first_started.wait(10)
    others = []
    for i, item in enumerate(["b0", "b1", "b2", "b3"]):  # one at a time: a known order
        others.append(_commit_in_thread(committer, item, errors))
        _wait_until_waiting(committer, i + 1)
    write.release_first.set()
    for thread in [first, *others]:
        thread.join(10)
    assert errors == {}
    # The second leader is whichever waiting thread woke first; it goes first, then the
    # oldest others, as many as weigh 4 in all.
    assert write.calls[0] == ["first"]
    assert all(sum(weights[i] for i in call) <= 4 for call in write.calls)
    assert sorted(i for call in write.calls[1:] for i in call) == ["b0", "b1", "b2", "b3"]
    assert len(write.calls) == 3


def test_a_group_never_exceeds_max_weight():
    write = Recorder()
    errors = _commit_during_a_write(GroupCommitter(write, max_weight=3), write, [f"b{i}" for i in range(7)])
    assert errors == {}
    sizes = [len(call) for call in write.calls]
    assert sizes[0] == 1 and max(sizes) == 3 and sum(sizes) == 8
    assert sorted(item for call in write.calls[1:] for item in call) == sorted(f"b{i}" for i in range(7))


def test_a_failed_group_is_written_again_one_by_one_and_only_the_bad_batch_fails():
    write = Recorder(fail_on={"bad"})
    errors = _commit_during_a_write(GroupCommitter(write, max_weight=16), write, ["good1", "bad", "good2"])
    assert list(errors) == ["bad"]
    assert isinstance(errors["bad"], ValueError)
    assert sorted(write.calls[1]) == ["bad", "good1", "good2"]  # the group, which failed
    assert sorted(map(tuple, write.calls[2:])) == [("bad",), ("good1",), ("good2",)]


def test_a_lone_batch_that_cannot_be_written_raises_to_its_caller():
    write = Recorder(fail_on={"bad"})
    write.release_first.set()
    with pytest.raises(ValueError, match="cannot write"):
        GroupCommitter(write, max_weight=16).commit("bad")
    assert write.calls == [["bad"]]
