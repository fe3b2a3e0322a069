"""The drop-in's two batches, each against one kernel call per request.

- ``Arrivals``: joining the batch is the version one ``append`` per add gives;
- ``Admissions``: under a policy whose selection reads no moment, the entries
  taken are those repeated selections, each followed by its removal, take;
  removing them is the version one ``without`` per taken entry gives.

Each check is shown to catch a broken batch.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from policy.adapters.batches import ANY_MOMENT, Admissions, Arrivals
from policy.waiting import (
    QueuePolicy,
    WaitingQueue,
    fifo,
    same_entry,
    static_priority,
    vllm_priority,
)

POLICIES: dict[str, QueuePolicy] = {
    "fifo": fifo(),
    "static": static_priority(),
    "vLLM priority": vllm_priority(),
    "vLLM priority, preempted first": vllm_priority(preempted_first=True),
}


def _attributes(draw: random.Random) -> dict[str, Any]:
    return {
        "priority": draw.randrange(4),
        "arrival_time": float(draw.randrange(50)),
        "prepended": draw.random() < 0.2,
    }


def _queue(draw: random.Random, policy: QueuePolicy, size: int) -> WaitingQueue:
    queue = WaitingQueue()
    for serial in range(size):
        attributes = {name: _attributes(draw)[name] for name in policy.attributes_read}
        add = queue.requeue_preempted if draw.random() < 0.1 else queue.append
        queue = add(policy, f"w{serial}", attributes, serial=serial, now=float(serial)).unwrap()
    return queue


def _shown(queue: WaitingQueue, policy: QueuePolicy) -> list[tuple[Any, ...]]:
    return [
        (entry.identity, entry.resumed, entry.values, entry.serial, entry.enqueued_at, keys)
        for entry, keys in queue.dispatched(policy, ANY_MOMENT)
    ]


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_joined_arrivals_are_one_append_each(name: str) -> None:
    policy, draw = POLICIES[name], random.Random(name)
    for size in (0, 5, 70):
        queue = _queue(draw, policy, size)
        arrivals, one_by_one = Arrivals(), queue
        for serial in range(100, 100 + draw.randrange(1, 80)):
            attributes = {name: _attributes(draw)[name] for name in policy.attributes_read}
            now = float(serial)
            assert arrivals.add(f"a{serial}", attributes, serial, now) == serial - 99
            one_by_one = one_by_one.append(
                policy, f"a{serial}", attributes, serial=serial, now=now
            ).unwrap()
        joined = arrivals.joined(queue, policy)
        assert arrivals.count == 0
        assert _shown(joined, policy) == _shown(one_by_one, policy)


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_admissions_are_repeated_selections_and_removals(name: str) -> None:
    policy, draw = POLICIES[name], random.Random(name)
    for size in (1, 20, 150):
        queue = _queue(draw, policy, size)
        admissions, one_by_one, took = Admissions(queue, policy), queue, []
        for count in range(1, draw.randrange(1, size + 1) + 1):
            ahead = admissions.next()
            taken = admissions.take()
            selected = one_by_one.selected(policy, ANY_MOMENT)
            assert ahead is taken
            assert taken is not None
            assert selected is not None
            assert same_entry(taken[0], selected[0])
            assert taken[1] == selected[1]
            one_by_one = one_by_one.without(selected[0])
            took.append(taken)
            assert admissions.count == count
        assert len(admissions.taken()) == len(took)
        assert all(kept is chosen for kept, chosen in zip(admissions.taken(), took, strict=True))
        assert _shown(admissions.removed(queue), policy) == _shown(one_by_one, policy)
    empty = Admissions(WaitingQueue(), policy)
    assert empty.next() is None
    assert empty.take() is None
    assert empty.count == 0


class _TakesTwice(Admissions):
    """A broken batch: the entry taken is not moved past."""

    __slots__ = ()

    def take(self) -> Any:
        chosen = super().take()
        self._ahead = chosen  # the batch's own read-ahead: what this breaks
        return chosen


class _JoinsReversed(Arrivals):
    """A broken batch: the arrivals joined last first."""

    __slots__ = ()

    def joined(self, queue: WaitingQueue, policy: QueuePolicy) -> WaitingQueue:
        self._waiting.reverse()  # the batch's own list: what this breaks
        return super().joined(queue, policy)


def test_the_checks_catch_broken_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    module = __import__(__name__, fromlist=["Admissions", "Arrivals"])
    monkeypatch.setattr(module, "Admissions", _TakesTwice)
    with pytest.raises(AssertionError):
        test_admissions_are_repeated_selections_and_removals("fifo")
    monkeypatch.setattr(module, "Arrivals", _JoinsReversed)
    with pytest.raises(AssertionError):
        test_joined_arrivals_are_one_append_each("fifo")


def test_an_arrival_the_kernel_refuses_is_a_runtime_error_with_its_reason() -> None:
    # found by mutation testing: the drop-in checks what the kernel checks before it
    # adds an arrival, so a refusal here is a broken drop-in, said with the kernel's reason
    arrivals = Arrivals()
    arrivals.add("a", {}, 0, 0.0)
    arrivals.add("a", {}, 1, 0.0)
    with pytest.raises(
        RuntimeError, match="refused an arrival it had taken: request 'a': is already waiting"
    ):
        arrivals.joined(WaitingQueue(), fifo())
    assert arrivals.count == 0  # nothing is left to join again
