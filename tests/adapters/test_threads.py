"""The drop-in queue under concurrent use (issue 18): nothing lost, nothing twice,
never corrupted, whichever threads add, prepend, peek, pop and remove."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from policy.adapters.vllm import (
    WaitingRequestQueue,
    fcfs_queue,
    priority_queue,
    short_request_first_queue,
)
from tests.adapters.stand_ins import FakeClock, Req

MAKERS: dict[str, Callable[[], WaitingRequestQueue[Any]]] = {
    "fcfs": lambda: fcfs_queue(clock=FakeClock()),
    "priority": lambda: priority_queue(clock=FakeClock()),
    "short first": lambda: short_request_first_queue(256, 100.0, clock=FakeClock()),
}


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


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_two_threads_adding_lose_nothing(name: str) -> None:
    # The red team's case (20k each; 5k each shows it on the old queue as well).
    queue = MAKERS[name]()
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


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_adding_and_popping_at_once_lose_nothing(name: str) -> None:
    queue = MAKERS[name]()
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
