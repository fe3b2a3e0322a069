"""Under a policy whose selection reads no moment (``fcfs_queue``,
``priority_queue``) ``pop_request`` defers: each pop reads the next entry of
one ``dispatch_entries`` iteration of the held version, and the next operation
that needs the queue itself removes every popped entry at once
(``WaitingQueue.without_first`` without keys, ``without_each`` with them).

That must be the queue one ``without`` of the selected entry per pop gives:
the same entries, each field the same, in the same order, whatever comes in
between (adds, prepends, removals, reads). Checked against the same adapter
with deferral turned off, driven by the same operations and compared after
every step (and, under FCFS, against a deque); a broken deferral (the taken
entries dropped by a remove, a pop read from a stale iteration) is caught by
the same check.
"""

from __future__ import annotations

import logging
import random
from collections import deque
from collections.abc import Callable
from typing import Any

import pytest

from policy.adapters.vllm import (
    WaitingRequestQueue,
    fcfs_queue,
    priority_queue,
    short_request_first_queue,
)
from policy.waiting import Moment, select_entry
from tests.adapters.stand_ins import FakeClock, Req, entry_fields

MAKERS: dict[str, Callable[..., WaitingRequestQueue[Any]]] = {
    "fcfs": fcfs_queue,
    "priority": priority_queue,
}


def _plain(queue: WaitingRequestQueue[Any]) -> WaitingRequestQueue[Any]:
    """A queue made as ``queue`` was, each pop selecting and removing at once."""
    made: WaitingRequestQueue[Any] = WaitingRequestQueue(
        queue.policy, clock=queue._clock, prepend_resumed=queue.prepend_resumed
    )
    made._deferred = False
    return made


def _run(seed: int, queue: WaitingRequestQueue[Any], steps: int = 900) -> None:
    """Seeded operations on ``queue``, on the same queue without deferral and (FCFS)
    on a deque, compared after each."""
    rng = random.Random(seed)
    plain = _plain(queue)
    fifo = queue.policy.is_fifo
    model: deque[Req] = deque()
    fresh = 0
    for step in range(steps):
        roll = rng.random()
        if roll < 0.35 or not model:
            for _ in range(rng.choice((1, 3, 70))):
                request = Req(f"r{fresh}", priority=rng.randrange(4))
                fresh += 1
                queue.add_request(request)
                plain.add_request(request)
                model.append(request)
        elif roll < 0.75:
            for _ in range(rng.choice((1, 2, 65, 130))):
                if not model:
                    for taking in (queue.peek_request, queue.pop_request):
                        with pytest.raises(IndexError):
                            taking()
                    break
                assert queue.peek_request() is plain.peek_request()
                taken = queue.pop_request()
                assert taken is plain.pop_request()
                if fifo:
                    assert taken is model[0]
                model.remove(taken)
        elif roll < 0.82:
            # popped, then put back (vLLM's preemption and its skipped requests)
            count = min(len(model), rng.choice((1, 2)))
            back = [queue.pop_request() for _ in range(count)]
            assert back == [plain.pop_request() for _ in range(count)]
            for request in back:
                model.remove(request)
            if rng.random() < 0.5:
                for request in back:
                    queue.prepend_request(request)
                    plain.prepend_request(request)
                    model.appendleft(request)
            else:
                queue.prepend_requests(back)
                plain.prepend_requests(back)
                model.extendleft(back)
        elif roll < 0.88:
            leaving = rng.choice(list(model))
            queue.remove_request(leaving)
            plain.remove_request(leaving)
            model.remove(leaving)
        elif roll < 0.92:
            gone = [*rng.sample(list(model), min(len(model), 3)), Req("never")]
            queue.remove_requests(gone)
            plain.remove_requests(gone)
            for request in gone[:-1]:
                model.remove(request)
        elif roll < 0.96:
            where = rng.randrange(len(model))
            assert queue[where] is plain[where]
            assert plain[where] in queue
        else:  # the settled version is the one-by-one version, field by field
            settled, expected = queue.snapshot, plain.snapshot
            assert list(map(entry_fields, settled)) == list(map(entry_fields, expected))
            assert queue.stats() == plain.stats()
        assert len(queue) == len(model) == len(plain)
        assert bool(queue) == bool(model)
        if step % 7 == 0:
            assert list(queue) == list(plain)
            if fifo:
                assert list(queue) == list(model)


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_deferred_pops_are_the_plain_pops(name: str) -> None:
    for seed in range(5):
        _run(seed, MAKERS[name](clock=FakeClock()))


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_the_settled_version_is_one_without_per_pop(name: str) -> None:
    """The version after deferred pops equals the kernel's own removals, field by field."""
    queue = MAKERS[name](clock=FakeClock())
    for serial in range(200):
        queue.add_request(Req(f"r{serial}", priority=serial % 3))
    queue.prepend_requests([Req("p0"), Req("p1")])  # resumed entries at the front
    start = queue.snapshot
    kernel = start
    policy = queue.policy
    for _ in range(150):  # past two read-aheads, across classes
        queue.peek_request()
        taken = queue.pop_request()
        chosen = select_entry(kernel, policy, Moment(0.0))
        assert chosen is not None
        assert chosen[0].carried is taken
        kernel = kernel.without(chosen[0])
    settled = queue.snapshot
    assert list(map(entry_fields, settled)) == list(map(entry_fields, kernel))
    assert len(settled) == len(kernel) == 52
    if queue.prepend_resumed:  # fcfs: resumed at the front (priority: by their keys)
        assert [entry.identity for entry in start][:2] == ["p1", "p0"]
        assert queue.stats().admissions["resumed"] == 2
    assert sum(queue.stats().admissions.values()) == 150


class _ForgetsTakenOnRemove(WaitingRequestQueue[Any]):
    """Settles a remove by dropping the taken pops instead of removing them."""

    __slots__ = ()

    def remove_request(self, request: Any) -> None:
        self._taken = []
        super().remove_request(request)


class _StaleIteration(WaitingRequestQueue[Any]):
    """Keeps reading the iteration of a version that a prepend replaced."""

    __slots__ = ()

    def prepend_request(self, request: Any) -> None:
        rest, ahead, start = self._rest, self._ahead, self._ahead_from
        super().prepend_request(request)
        self._rest, self._ahead, self._ahead_from = rest, ahead, start


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("broken", [_ForgetsTakenOnRemove, _StaleIteration])
def test_a_broken_deferral_is_caught(name: str, broken: type[WaitingRequestQueue[Any]]) -> None:
    policy = MAKERS[name]().policy

    def every_seed() -> None:
        for seed in range(5):
            _run(seed, broken(policy, clock=FakeClock()))

    with pytest.raises(AssertionError):
        every_seed()


def test_a_policy_that_reads_the_moment_pops_at_once() -> None:
    """Only a policy whose selection reads no moment defers: under the Ascend lanes
    (waited ages a request) a pop selects at the clock's now and removes at once."""
    queue = short_request_first_queue(clock=FakeClock())
    for name in range(3):
        queue.add_request(Req(f"r{name}"))
    assert queue.pop_request().request_id == "r0"
    assert queue._taken == []
    assert [entry.identity for entry in queue._queue] == ["r1", "r2"]


def test_deferred_pops_count_at_once_and_warn_at_the_pop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Deferred pops are counted when they are removed, all at once, when no run is
    watched; with a watched class each pop is counted as it is taken, so the
    run's warning comes at the third consecutive pop of that class, before any
    operation settles the queue."""
    counted_later = priority_queue(clock=FakeClock())
    watched: WaitingRequestQueue[Any] = WaitingRequestQueue(
        counted_later.policy, clock=FakeClock(), run_class=1
    )
    for queue in (counted_later, watched):
        for k in range(4):
            queue.add_request(Req(f"r{k}", priority=1, arrival_time=float(k)))
        queue.add_request(Req("r9", priority=2, arrival_time=9.0))
    with caplog.at_level(logging.WARNING, logger="policy.adapters.vllm"):
        for _ in range(3):
            watched.pop_request()
        assert len(caplog.records) == 1  # at the third pop, nothing settled yet
        assert watched._taken
    assert "3 consecutive admissions of class 1" in caplog.records[0].getMessage()
    for _ in range(4):
        counted_later.pop_request()
    assert counted_later._admissions == {}  # not yet: taken, not removed
    assert counted_later.stats().admissions == {"1": 4}
    assert watched.stats().admissions == {"1": 3}
