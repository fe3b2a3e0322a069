"""The ``static`` path's per-class lines against the plain definition, after every step.

Under ``static`` keys the queue keeps one line per first key value (a priority
class), each in key order, and falls back to the general ranked index when an
entry arrives out of key order within its class or when there are more than
``MAX_STATIC_CLASSES`` classes. Random appends (in and out of order), requeues
and removals, with NaN, -0.0, 0.0 and infinite first keys, are compared with
``select_reference`` and a sort by the plain keys after each one; one test
shows a class line that ignores the within-class order is caught.
"""

from __future__ import annotations

import math
import random

import pytest

from policy.waiting import (
    Moment,
    QueuePolicy,
    WaitingQueue,
    compiled,
    dispatch_order,
    entry_keys,
    make_policy,
    path_static,
    select_reference,
    select_waiting,
    vllm_priority,
)
from policy.waiting.evaluate import key_list_order
from policy.waiting.path_static import StaticIndex

_MOMENT = Moment(1.0e6)


def _check(queue: WaitingQueue, policy: QueuePolicy) -> None:
    chosen = select_waiting(queue, policy, _MOMENT)
    reference = select_reference(queue, policy, _MOMENT)
    assert chosen.map(lambda s: s.entry.identity) == reference.map(lambda s: s.entry.identity)
    entries = list(queue)
    resumed = [entry for entry in entries if entry.resumed]
    rest = [entry for entry in entries if not entry.resumed]
    rest.sort(key=lambda entry: key_list_order(entry_keys(policy, entry, _MOMENT)))
    expected = [entry.identity for entry in resumed + rest]
    assert [s.entry.identity for s in dispatch_order(queue, policy, _MOMENT)] == expected


def _run(seed: int, classes: list[float], steps: int = 300) -> None:
    draw = random.Random(seed)
    policy = vllm_priority()
    queue = WaitingQueue()
    serial, clock = 0, 0.0
    for _ in range(steps):
        choice = draw.random()
        if choice < 0.6 or not len(queue):
            clock += draw.choice((1.0, 1.0, 1.0, 0.0, -3.0))  # mostly in order
            attributes = {"priority": draw.choice(classes), "arrival_time": clock}
            join = queue.requeue_preempted if draw.random() < 0.1 else queue.append
            queue = join(policy, serial, attributes, serial=serial, now=clock).unwrap()
            serial += 1
        elif choice < 0.8:
            outcome = select_waiting(queue, policy, _MOMENT).unwrap()
            queue = queue.without(outcome.entry)
        else:
            victim = draw.choice(list(queue))
            queue = queue.remove(victim.identity).unwrap()
        _check(queue, policy)


@pytest.mark.parametrize("seed", range(8))
def test_priority_classes_against_the_plain_definition(seed: int) -> None:
    _run(seed, [0.0, -0.0, 1.0, 2.0, 5.0, math.inf, -math.inf, math.nan])


def test_more_classes_than_kept_apart() -> None:
    _run(99, [float(value) for value in range(path_static.MAX_STATIC_CLASSES + 10)], 600)


def test_in_order_classes_stay_by_class() -> None:
    policy = vllm_priority()
    queue = WaitingQueue()
    for serial in range(50):
        attributes = {"priority": serial % 3, "arrival_time": float(serial)}
        queue = queue.append(policy, serial, attributes, serial=serial, now=0.0).unwrap()
    assert isinstance(queue._index, StaticIndex)
    assert queue._index.by_class
    late = {"priority": 1, "arrival_time": 0.5}  # before its class's last entry
    queue = queue.append(policy, "late", late, serial=50, now=0.0).unwrap()
    assert isinstance(queue._index, StaticIndex)
    assert not queue._index.by_class
    _check(queue, policy)


def test_single_key_static_policy() -> None:
    policy = make_policy(["-rank"], attributes=["rank"], timing="enqueue").unwrap()
    assert policy.path == "static"
    queue = WaitingQueue()
    draw = random.Random(3)
    for serial in range(200):
        attributes = {"rank": draw.choice((1, 2, 3, math.nan))}
        queue = queue.append(policy, serial, attributes, serial=serial, now=0.0).unwrap()
        _check(queue, policy)


def test_a_class_line_out_of_key_order_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A queue that never falls back when a class gets out of key order fails the check."""
    real = compiled.sort_key

    def no_fallback(values: tuple[float, ...]) -> tuple[float | int, ...]:
        return () if len(values) == 1 else real(values)  # every rest key ties

    monkeypatch.setattr(path_static, "sort_key", no_fallback)

    def every_seed() -> None:
        for seed in range(8):
            _run(seed, [0.0, 1.0, 2.0])

    with pytest.raises(AssertionError):
        every_seed()
