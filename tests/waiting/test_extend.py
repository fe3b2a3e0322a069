"""``WaitingQueue.extend`` is repeated ``append``: the same queue, the same refusals.

Random batches under every selection path, onto empty and non-empty queues
(after admissions and requeues, so slots past the live part are reused), are
compared with one ``append`` per request: entries, selection and dispatch
order. A refused batch changes nothing and gives append's first refusal.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from policy.waiting import (
    Moment,
    QueuePolicy,
    WaitingQueue,
    dispatch_order,
    fifo,
    select_waiting,
)
from tests.waiting.one_per_path import ONE_POLICY_PER_PATH

POLICIES = ONE_POLICY_PER_PATH

_MOMENT = Moment(50.0)


def _attributes(draw: random.Random, at: float) -> dict[str, Any]:
    return {
        "priority": draw.randrange(4),
        "arrival_time": at,
        "prompt": draw.randrange(1, 200),
        "immediate": draw.random() < 0.1,
    }


def _snapshot(queue: WaitingQueue, policy: QueuePolicy) -> tuple[object, ...]:
    return (
        [(e.identity, e.serial, e.enqueued_at, e.resumed, dict(e.attributes)) for e in queue],
        select_waiting(queue, policy, _MOMENT).map(lambda s: s.entry.identity),
        [s.entry.identity for s in dispatch_order(queue, policy, _MOMENT)],
    )


@pytest.mark.parametrize("name", sorted(POLICIES))
@pytest.mark.parametrize("seed", range(4))
def test_extend_is_repeated_append(name: str, seed: int) -> None:
    policy, draw = POLICIES[name], random.Random(seed)
    queue, serial, clock = WaitingQueue(), 0, 0.0
    for _ in range(12):
        if len(queue) and draw.random() < 0.4:  # admissions and a requeue between batches
            for _ in range(draw.randrange(1, 4)):
                if len(queue):
                    queue = queue.without(select_waiting(queue, policy, _MOMENT).unwrap().entry)
            queue = queue.requeue_preempted(
                policy, f"r{serial}", _attributes(draw, clock), serial=serial, now=clock
            ).unwrap()
            serial += 1
        batch = []
        for _ in range(draw.randrange(0, 9)):
            clock += draw.choice((0.5, 1.0, 0.0))
            batch.append((f"r{serial}", _attributes(draw, clock), serial, clock))
            serial += 1
        one_by_one = queue
        for identity, attributes, at_serial, now in batch:
            one_by_one = one_by_one.append(
                policy, identity, attributes, serial=at_serial, now=now
            ).unwrap()
        extended = queue.extend(policy, batch).unwrap()
        assert _snapshot(extended, policy) == _snapshot(one_by_one, policy)
        queue = extended


@pytest.mark.parametrize(
    ("batch", "message"),
    [
        (
            [("a", {}, 0, 0.0), ("b", {}, 1, "soon")],
            "request 'b': now must be a number, not 'soon'",
        ),
        ([("a", {}, 0, 0.0), ("a", {}, 1, 0.0)], "request 'a': is already waiting"),
        ([("w", {}, 0, 0.0)], "request 'w': is already waiting"),
        ([("a", {}, 0, 0.0), ["b", {}, 1, 0.0]], "is not a request"),
        ([("a", {}, 0)], "is not a request"),
    ],
)
def test_a_refused_batch_changes_nothing(batch: list[Any], message: str) -> None:
    queue = WaitingQueue().append(fifo(), "w", {}, serial=9, now=0.0).unwrap()
    refused = queue.extend(fifo(), batch)
    assert message in str(refused.failure())
    assert [entry.identity for entry in queue] == ["w"]


def test_not_an_iterable_is_refused() -> None:
    assert "is not an iterable of requests" in str(WaitingQueue().extend(fifo(), 5).failure())  # type: ignore[arg-type]
