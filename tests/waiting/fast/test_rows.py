"""Rows: the queue stores plain tuples the collector lets be, and gives records.

The collector checks count tracked objects with ``gc.get_objects()``: what the
queue adds to every full collection is the point of rows (docs/performance.md,
"Designed for the collector").
"""

from __future__ import annotations

import gc

import pytest

from policy.waiting import (
    QueuePolicy,
    WaitingEntry,
    WaitingQueue,
    ascend_fcfs_lanes,
    fifo,
    make_policy,
    same_entry,
    vllm_priority,
)
from policy.waiting.fast import rows

POLICIES = {
    "fifo": fifo(),
    "vllm priority": vllm_priority(),
    "ascend lanes": ascend_fcfs_lanes(),
    "scan": make_policy(["priority - waited"], attributes=["priority"]).unwrap(),
}


def test_each_position_is_the_named_field() -> None:
    for name in WaitingEntry._fields:
        assert getattr(rows, name.upper()) == WaitingEntry._fields.index(name)


def _attributes(serial: int) -> dict[str, float | bool]:
    return {
        "priority": float(serial % 7),
        "arrival_time": float(serial),
        "prompt": float(serial % 300),
        "immediate": serial % 5 == 0,
    }


def _tracked_per_entry(policy: QueuePolicy, size: int, requeued: int) -> float:
    """Tracked objects a queue of ``size`` appended and ``requeued`` preempted entries
    adds, per entry (the policy's plan, made once, made beforehand)."""
    WaitingQueue().extend(policy, [("warm", _attributes(0), 0, 0.0)])
    gc.collect()
    before = len(gc.get_objects())
    queue = WaitingQueue()
    # the attributes the keys read, as a host gives them (extend's usual path)...
    read = sorted(policy.attributes_read)
    requests = [
        (f"r{k}", {name: _attributes(k)[name] for name in read}, k, float(k)) for k in range(size)
    ]
    queue = queue.extend(policy, requests).unwrap()
    for k in range(requeued):  # ...and every attribute, checked one by one (append's path)
        joined = queue.requeue_preempted(policy, f"p{k}", _attributes(k), serial=k, now=0.5)
        queue = joined.unwrap()
    del requests
    # a row goes untracked at the first collection that finds its parts (names,
    # values) untracked: the same collection, or the next one
    gc.collect()
    gc.collect()
    grown = len(gc.get_objects()) - before
    assert len(queue) == size + requeued
    return grown / (size + requeued)


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_the_collector_stops_tracking_what_the_queue_keeps(name: str) -> None:
    # a WaitingEntry per entry would be 1.0 or more; what is left is the identity
    # index's 64 dicts and a few objects per version and per class
    assert _tracked_per_entry(POLICIES[name], 4_000, 200) < 0.05


def test_a_record_read_again_is_the_entry_that_waits() -> None:
    queue = WaitingQueue().extend(fifo(), [("a", {}, 0, 0.0), ("b", {}, 1, 0.0)]).unwrap()
    first, again = queue.entry_of("a"), queue.entry_of("a")
    assert first is not None
    assert again is not None
    assert first is not again  # made as read
    assert same_entry(first, again)
    assert [e.identity for e in queue.without(again)] == ["b"]
    assert [e.identity for e in queue.without_each([first, queue.entries[1]])] == []


def test_an_entry_of_another_branch_does_not_wait_here() -> None:
    """Two versions made from one give ``"c"`` the same ticket; their records differ
    in serial, so neither removes the other's."""
    base = WaitingQueue().append(fifo(), "a", {}, serial=0, now=0.0).unwrap()
    one = base.append(fifo(), "c", {}, serial=1, now=0.0).unwrap()
    other = base.append(fifo(), "c", {}, serial=2, now=0.0).unwrap()
    mine, theirs = one.entry_of("c"), other.entry_of("c")
    assert mine is not None
    assert theirs is not None
    assert mine.ticket == theirs.ticket
    assert not same_entry(mine, theirs)
    with pytest.raises(KeyError):
        one.without(theirs)
    with pytest.raises(KeyError):
        one.without_each([theirs])
    assert len(one.without(mine)) == 1


def test_a_carried_object_is_compared_by_identity() -> None:
    carried, twin = [1], [1]
    queue = WaitingQueue().append(fifo(), "a", {}, serial=0, now=0.0, carried=carried).unwrap()
    entry = queue.entry_of("a")
    assert entry is not None
    assert entry.carried is carried
    assert same_entry(entry, entry._replace())
    assert not same_entry(entry, entry._replace(carried=twin))
    with pytest.raises(KeyError):
        queue.without(entry._replace(carried=twin))
