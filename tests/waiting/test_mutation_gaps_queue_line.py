"""What mutation testing of ``policy/waiting/queue.py`` found untested (docs/mutation.md).

``WaitingQueue.extend`` is "the queue that one ``append`` per request gives"
(its docstring): not only the same entries and selections (tests/waiting/
test_extend.py) but the same version, tickets, counters and path index, so
that the fast path the policy allows stays in use after a batch (an index
that lost track of time order, or no index at all, would still select the
same entries, by a slower path). A refused batch names the item it refuses.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest
from returns.result import Failure

from policy.waiting import (
    QueuePolicy,
    WaitingQueue,
    fifo,
)
from policy.waiting.line import Line
from policy.waiting.ordered import OrderedMap
from tests.waiting.one_per_path import ONE_POLICY_PER_PATH

POLICIES = ONE_POLICY_PER_PATH


def _shown(value: object) -> object:
    """A field of a queue or index, comparable across versions (lines by content)."""
    if isinstance(value, Line):
        return [(entry.identity, entry.ticket) for entry in value]
    if isinstance(value, OrderedMap):
        return [(key, entry.identity) for key, entry in value.items()]
    if hasattr(value, "items") and not isinstance(value, dict):
        return {key: _shown(item) for key, item in value.items()}
    return value


def _state(queue: WaitingQueue) -> dict[str, object]:
    index = queue._index
    fields: dict[str, object] = {
        "order": _shown(queue._order),
        "front": queue._front,
        "back": queue._back,
        "index": type(index).__name__,
    }
    if index is not None:
        for field in dataclasses.fields(index):  # type: ignore[arg-type]
            if field.name != "policy":
                fields[field.name] = _shown(getattr(index, field.name))
    return fields


def _request(draw: random.Random, serial: int, at: float) -> tuple[Any, dict[str, Any], int, float]:
    attributes = {
        "priority": draw.randrange(3),
        "arrival_time": at,
        "prompt": draw.randrange(1, 300),
        "immediate": draw.random() < 0.2,
    }
    return serial, attributes, serial, at


def _appended(policy: QueuePolicy, queue: WaitingQueue, batch: list[Any]) -> WaitingQueue:
    for identity, attributes, serial, now in batch:
        queue = queue.append(policy, identity, attributes, serial=serial, now=now).unwrap()
    return queue


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_extend_gives_the_version_repeated_appends_give(name: str) -> None:
    policy = POLICIES[name]
    for seed in range(4):
        draw = random.Random(seed)
        start = [_request(draw, serial, float(serial)) for serial in range(5)]
        base = WaitingQueue().extend(policy, start).unwrap()
        if seed % 2:  # a resumed front, and an admission: the batch follows either
            base = base.requeue_preempted(
                policy, "resumed", start[0][1], serial=50, now=5.0
            ).unwrap()
            base = base.without(base.entry_of(2))  # type: ignore[arg-type]
        batch = [_request(draw, serial, 5.0 + serial) for serial in range(5, 12)]
        extended = base.extend(policy, batch).unwrap()
        assert _state(extended) == _state(_appended(policy, base, batch))
        after = [_request(draw, 12, 30.0)]
        assert _state(_appended(policy, extended, after)) == _state(
            _appended(policy, base, batch + after)
        )


@pytest.mark.parametrize("name", ["static", "lanes", "scan"])
def test_extend_under_another_policy_rebinds_as_append_does(name: str) -> None:
    draw = random.Random(11)
    base = WaitingQueue().extend(fifo(), [_request(draw, s, float(s)) for s in range(4)]).unwrap()
    batch = [_request(draw, s, float(s)) for s in range(4, 9)]
    policy = POLICIES[name]
    assert _state(base.extend(policy, batch).unwrap()) == _state(_appended(policy, base, batch))


def test_a_batch_that_could_never_fit_is_refused() -> None:
    draw = random.Random(5)
    batch = [_request(draw, s, float(s)) for s in range(3)]
    refused = WaitingQueue().extend(fifo(), batch, ever_fits=lambda entry: entry.identity != 1)
    assert isinstance(refused, Failure)
    assert refused.failure().identity == 1
    assert refused.failure().message.startswith("could never fit, even in an empty pool")


def test_without_names_what_is_not_an_entry() -> None:
    with pytest.raises(TypeError) as raised:
        WaitingQueue().without("a")  # type: ignore[arg-type]
    assert str(raised.value) == "entry must be a WaitingEntry, not str"


def test_a_batch_under_lanes_keeps_the_time_ordered_fast_path() -> None:
    policy = POLICIES["lanes"]
    draw = random.Random(3)
    queue = WaitingQueue().extend(policy, [_request(draw, s, float(s)) for s in range(4)])
    queue = queue.unwrap().extend(policy, [_request(draw, s, float(s)) for s in range(4, 9)])
    index = queue.unwrap()._index
    assert getattr(index, "in_time_order", None) is True


def test_a_refused_batch_names_what_it_refuses() -> None:
    policy = POLICIES["fifo"]
    refused = WaitingQueue().extend(policy, 7)  # type: ignore[arg-type]
    assert isinstance(refused, Failure)
    assert refused.failure().identity == 7
    item: tuple[object, ...] = ("a", {}, 0)
    refused = WaitingQueue().extend(policy, [("b", {}, 0, 0.0), item])  # type: ignore[list-item]
    assert isinstance(refused, Failure)
    assert refused.failure().identity == item
    assert refused.failure().message.startswith("is not a request")


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_the_identity_map_is_swept_exactly_past_twice_the_waiting_entries(name: str) -> None:
    """The lazy identity map (the module's theory of operation): a leaving entry stays
    in it until it holds more than twice the waiting entries plus the slack; every
    waiting entry is found, no entry that left is, and the path index is kept."""
    policy, draw = POLICIES[name], random.Random(1)
    requests = [_request(draw, s, float(s)) for s in range(300)]
    queue = WaitingQueue().extend(policy, requests).unwrap()
    index_type = type(queue._index)
    mapped = len(queue._by_identity)
    waiting = list(range(300))
    for step in range(299):
        leaving = waiting.pop(0 if step % 3 else len(waiting) // 2)
        queue = queue.without(queue.entry_of(leaving))  # type: ignore[arg-type]
        mapped = len(waiting) if mapped > 2 * len(waiting) + 64 else mapped
        assert len(queue._by_identity) == mapped
        assert queue.entry_of(leaving) is None
        assert type(queue._index) is index_type
        if step % 37 == 0:
            assert all(queue.entry_of(identity) is not None for identity in waiting)
            assert _without_counters(queue) == _without_counters(_rebuilt(policy, queue))
    assert [entry.identity for entry in queue] == waiting
    assert len(queue.without(queue.entry_of(waiting[0]))._by_identity) == 0  # type: ignore[arg-type]


def _rebuilt(policy: QueuePolicy, queue: WaitingQueue) -> WaitingQueue:
    """The same entries appended afresh, with the same tickets and counters."""
    fresh = WaitingQueue()._bound(policy)
    for entry in queue:
        fresh = fresh._with(entry, keep_counters=True)
    return fresh


def _without_counters(queue: WaitingQueue) -> dict[str, object]:
    return {key: value for key, value in _state(queue).items() if key not in {"front", "back"}}
