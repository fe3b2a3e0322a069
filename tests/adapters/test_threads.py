"""The drop-in queue under concurrent use (issue 18): nothing lost, nothing twice,
never corrupted, whichever threads add, prepend, peek, pop and remove."""

from __future__ import annotations

import collections
import contextlib
import itertools
import random
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from policy.adapters.vllm import WaitingRequestQueue, fcfs_queue
from tests.adapters.stand_ins import QUEUE_MAKERS, FakeClock, Req


def _made(name: str) -> WaitingRequestQueue[Any]:
    return QUEUE_MAKERS[name](FakeClock())


@pytest.fixture(autouse=True)
def _switch_often() -> Iterator[None]:
    """Threads switch every few bytecodes, so that a race shows within a short run."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def _in_threads(*work: Callable[[], None]) -> None:
    failures: list[BaseException] = []

    def run(job: Callable[[], None]) -> None:
        try:
            job()
        except BaseException as error:  # every failure, reported below
            failures.append(error)

    threads = [threading.Thread(target=run, args=(job,)) for job in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures


@pytest.mark.parametrize("name", sorted(QUEUE_MAKERS))
def test_two_threads_adding_lose_nothing(name: str) -> None:
    # The red team's case (20k each; 5k each shows it on the old queue as well).
    queue = _made(name)
    count = 5_000

    def adds(prefix: str) -> Callable[[], None]:
        def run() -> None:
            for k in range(count):
                queue.add_request(Req(f"{prefix}{k}", priority=k % 3, arrival_time=float(k)))

        return run

    _in_threads(adds("a"), adds("b"))
    assert len(queue) == 2 * count
    popped = [queue.pop_request().request_id for _ in range(2 * count)]
    assert sorted(popped) == sorted(f"{p}{k}" for p in "ab" for k in range(count))
    assert not queue


@pytest.mark.parametrize("name", sorted(QUEUE_MAKERS))
def test_adding_and_popping_at_once_lose_nothing(name: str) -> None:
    queue = _made(name)
    count = 4_000
    popped: list[str] = []

    def adds() -> None:
        for k in range(count):
            queue.add_request(Req(f"r{k}", priority=k % 2))

    def pops() -> None:
        while len(popped) < count:
            try:
                queue.peek_request()
                popped.append(queue.pop_request().request_id)
            except IndexError:  # empty for now: the adder is behind
                continue

    _in_threads(adds, pops)
    assert not queue
    assert sorted(popped) == sorted(f"r{k}" for k in range(count))


class _Ledger:
    """The model: what each thread did, in one list under one lock. Every queued
    request must leave exactly once (a pop or a remove) or still be waiting."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[str, str]] = []

    def note(self, kind: str, identity: str) -> None:
        with self.lock:
            self.events.append((kind, identity))

    def balance(self) -> collections.Counter[str]:
        """Per request id: how many times it was queued minus how many it left."""
        counts: collections.Counter[str] = collections.Counter()
        for kind, identity in self.events:
            counts[identity] += 1 if kind == "queued" else -1
        return counts


def _fuzzer(
    queue: WaitingRequestQueue[Any], ledger: _Ledger, name: str, seed: int, steps: int
) -> Callable[[], None]:
    def run() -> None:
        draw = random.Random(seed)
        fresh = (f"{name}{k}" for k in itertools.count())
        mine: list[Req] = []  # queued by this thread, maybe taken by the other since
        taken: list[Req] = []  # popped by this thread: may be prepended back

        def new() -> Req:
            return Req(
                next(fresh), priority=draw.randint(0, 2), num_prompt_tokens=draw.choice([9, 999])
            )

        for _ in range(steps):
            operation = draw.choice(OPERATIONS)
            if operation == "add":
                request = new()
                queue.add_request(request)
                ledger.note("queued", request.request_id)
                mine.append(request)
            elif operation == "prepend":
                request = taken.pop() if taken and draw.random() < 0.7 else new()
                queue.prepend_request(request)
                ledger.note("queued", request.request_id)
                mine.append(request)
            elif operation == "prepend_requests":
                batch = [new() for _ in range(draw.randint(0, 3))]
                queue.prepend_requests(batch)
                for request in batch:
                    ledger.note("queued", request.request_id)
                mine.extend(batch)
            elif operation in ("pop", "peek+pop"):
                try:
                    if operation == "peek+pop":
                        queue.peek_request()
                    request = queue.pop_request()
                except IndexError:  # empty now
                    continue
                ledger.note("left", request.request_id)
                taken.append(request)
            elif operation == "remove" and mine:
                request = mine.pop(draw.randrange(len(mine)))
                try:
                    queue.remove_request(request)
                except ValueError:  # popped (by either thread) meanwhile
                    continue
                ledger.note("left", request.request_id)
            elif operation == "peek":
                with contextlib.suppress(IndexError):  # empty now
                    assert queue.peek_request().request_id  # a request queued by either
            elif operation == "len":
                assert len(queue) >= 0
                assert bool(queue) in (True, False)
            elif operation == "iter":
                seen = [request.request_id for request in queue]
                assert len(seen) == len(set(seen)), "a request twice in one iteration"
            elif operation == "contains" and mine:
                found = draw.choice(mine) in queue  # either answer: it must not raise
                assert found in (True, False)
            elif operation == "index" and queue:
                with contextlib.suppress(IndexError):  # emptied meanwhile
                    queue[draw.randrange(-1, 1)]

    return run


OPERATIONS = (
    "add",
    "add",
    "add",
    "prepend",
    "prepend_requests",
    "pop",
    "peek",
    "peek+pop",
    "remove",
    "len",
    "iter",
    "contains",
    "index",
)


@pytest.mark.parametrize("name", sorted(QUEUE_MAKERS))
@pytest.mark.parametrize("seed", [1, 2])
def test_random_operations_from_two_threads_against_a_ledger(name: str, seed: int) -> None:
    # Plain seeded random (the threads' interleaving is not reproducible anyway):
    # each thread adds, prepends, pops, peeks, removes, counts, iterates, asks
    # membership and indexes; the ledger must balance and the queue hold exactly
    # the requests that never left, once each.
    queue, ledger = _made(name), _Ledger()
    steps = 2_500
    _in_threads(
        _fuzzer(queue, ledger, "a", seed, steps), _fuzzer(queue, ledger, "b", seed + 100, steps)
    )
    balance = ledger.balance()
    assert all(count in (0, 1) for count in balance.values()), "a request left twice"
    waiting = sorted(request.request_id for request in queue)
    assert waiting == sorted(identity for identity, count in balance.items() if count == 1)
    assert len(queue) == len(waiting)
    order = [request.request_id for request in queue]
    assert [queue.pop_request().request_id for _ in range(len(order))] == order
    assert not queue


def test_prepend_requests_may_read_this_very_queue() -> None:
    # The iterable is read whole before the lock is taken: no deadlock, and the
    # batch is refused whole (each request is already waiting).
    queue = _made("fcfs")
    queue.add_request(Req("a"))
    before = queue.snapshot
    with pytest.raises(ValueError, match="is already waiting"):
        queue.prepend_requests(queue)
    assert queue.snapshot is before


def test_a_getter_may_read_the_queue() -> None:
    # Getters run outside the lock: one that asks the queue does not deadlock.
    holder: list[WaitingRequestQueue[Any]] = []
    attributes = {"request_id": lambda r: f"{r.request_id}-{len(holder[0])}"}
    queue = fcfs_queue(attributes=attributes, clock=FakeClock())
    holder.append(queue)
    queue.add_request(Req("a"))
    queue.add_request(Req("b"))
    assert [r.request_id for r in queue] == ["a", "b"]
    assert queue.snapshot.entry_of("b-1") is not None
    with pytest.raises(ValueError, match="'a-2': is not waiting"):
        queue.remove_request(Req("a"))  # its id now reads 'a-2'
