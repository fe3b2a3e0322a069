"""Under a policy without keys (``fcfs_queue``) ``pop_request`` defers: each pop
reads the next entry of one iteration of the held version, and the next
operation that needs the queue itself removes every popped entry with one
``WaitingQueue.without_first``.

That must be the queue one ``without`` of the selected entry per pop gives:
the same entries, each field the same, in the same order, whatever comes in
between (adds, prepends, removals, reads). Checked against a deque of the same
requests after every step, and the settled version against the kernel's own
one-by-one removals; a broken deferral (the taken count dropped by a remove,
a pop read from a stale iteration) is caught by the same check.
"""

from __future__ import annotations

import random
from collections import deque
from typing import Any

import pytest

from policy.adapters.vllm import WaitingRequestQueue, fcfs_queue
from policy.waiting import Moment, WaitingQueue, select_entry
from tests.adapters.stand_ins import FakeClock, Req, entry_fields


def _run(seed: int, queue: WaitingRequestQueue[Any], steps: int = 900) -> None:
    """Seeded operations on ``queue`` and on a deque, compared after each."""
    rng = random.Random(seed)
    model: deque[Req] = deque()
    fresh = 0
    for step in range(steps):
        roll = rng.random()
        if roll < 0.35 or not model:
            for _ in range(rng.choice((1, 3, 70))):
                request = Req(f"r{fresh}")
                fresh += 1
                queue.add_request(request)
                model.append(request)
        elif roll < 0.75:
            for _ in range(rng.choice((1, 2, 65, 130))):
                if not model:
                    with pytest.raises(IndexError):
                        queue.peek_request()
                    with pytest.raises(IndexError):
                        queue.pop_request()
                    break
                assert queue.peek_request() is model[0]
                assert queue.pop_request() is model.popleft()
        elif roll < 0.82:
            # popped, then put back (vLLM's preemption and its skipped requests)
            back = [queue.pop_request() for _ in range(min(len(model), rng.choice((1, 2))))]
            assert back == [model.popleft() for _ in back]
            if rng.random() < 0.5:
                for request in back:
                    queue.prepend_request(request)
                    model.appendleft(request)
            else:
                queue.prepend_requests(back)
                model.extendleft(back)
        elif roll < 0.88:
            leaving = rng.choice(list(model))
            queue.remove_request(leaving)
            model.remove(leaving)
        elif roll < 0.92:
            gone = rng.sample(list(model), min(len(model), 3))
            queue.remove_requests([*gone, Req("never")])
            for request in gone:
                model.remove(request)
        elif roll < 0.96:
            where = rng.randrange(len(model))
            assert queue[where] is model[where]
            assert model[where] in queue
        else:  # the settled version holds the model's requests, in order
            assert [entry.carried for entry in queue.snapshot] == list(model)
            assert queue.stats().waiting == len(model)
        assert len(queue) == len(model)
        assert bool(queue) == bool(model)
        if step % 7 == 0:
            assert list(queue) == list(model)


def test_deferred_pops_keep_the_deque_order() -> None:
    for seed in range(6):
        _run(seed, fcfs_queue(clock=FakeClock()))


def test_the_settled_version_is_one_without_per_pop() -> None:
    """The version after deferred pops equals the kernel's own removals, field by field."""
    queue = fcfs_queue(clock=FakeClock())
    for name in range(200):
        queue.add_request(Req(f"r{name}"))
    queue.prepend_requests([Req("p0"), Req("p1")])  # resumed entries at the front
    start = queue.snapshot
    kernel = start
    policy = queue.policy
    for _ in range(150):  # past two read-aheads
        queue.peek_request()
        queue.pop_request()
        chosen = select_entry(kernel, policy, Moment(0.0))
        assert chosen is not None
        kernel = kernel.without(chosen[0])
    settled = queue.snapshot
    assert [entry_fields(entry) for entry in settled] == [entry_fields(entry) for entry in kernel]
    assert len(settled) == len(kernel) == 52
    assert [entry.identity for entry in start][:2] == ["p1", "p0"]
    assert queue.stats().admissions == {"resumed": 2, "fifo": 148}


class _ForgetsTakenOnRemove(WaitingRequestQueue[Any]):
    """Settles a remove by dropping the taken pops instead of removing them."""

    __slots__ = ()

    def remove_request(self, request: Any) -> None:
        self._taken = 0
        super().remove_request(request)


class _StaleIteration(WaitingRequestQueue[Any]):
    """Keeps reading the iteration of a version that a prepend replaced."""

    __slots__ = ()

    def prepend_request(self, request: Any) -> None:
        rest, ahead, start = self._rest, self._ahead, self._ahead_from
        super().prepend_request(request)
        self._rest, self._ahead, self._ahead_from = rest, ahead, start


@pytest.mark.parametrize("broken", [_ForgetsTakenOnRemove, _StaleIteration])
def test_a_broken_deferral_is_caught(broken: type[WaitingRequestQueue[Any]]) -> None:
    policy = fcfs_queue().policy

    def every_seed() -> None:
        for seed in range(6):
            _run(seed, broken(policy, clock=FakeClock()))

    with pytest.raises(AssertionError):
        every_seed()


def test_a_policy_with_keys_pops_at_once() -> None:
    """Only a policy without keys defers: a priority pop removes its entry at once."""
    from policy.adapters.vllm import priority_queue  # noqa: PLC0415 - only here

    queue = priority_queue(clock=FakeClock())
    for name in range(3):
        queue.add_request(Req(f"r{name}", priority=2 - name))
    assert queue.pop_request().request_id == "r2"
    assert queue._taken == 0
    assert [entry.identity for entry in queue._queue] == ["r0", "r1"]  # enqueue order
    assert isinstance(queue._queue, WaitingQueue)
