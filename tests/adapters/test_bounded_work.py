"""No call of the drop-in does work that grows with the number waiting.

A server's step must never stall behind one queue call that sweeps, compacts
or rebuilds a structure of all N waiting requests (issue 27 found calls of
0.2 to 0.6 s at 100,000 waiting). The work of a call is counted here as the
Python and C function calls it makes (``sys.setprofile``: deterministic, no
clock), over a steady state of arrivals, admissions and preemptions at N and
at 16 N waiting. The most any call makes may grow with the depth of the
kernel's trees (log N), not with N. The check is shown to catch a queue that
compacts its line once every 100 admissions.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import pytest

from policy.adapters.vllm import (
    WaitingRequestQueue,
    fcfs_queue,
)
from policy.waiting.fast import line as line_module
from tests.adapters.stand_ins import READY_MADE, SerialRequest

#: The most calls one call may grow by from N to 16 N: the trees are one or two
#: levels deeper, and every level is a bounded number of calls.
GROWTH = 1.7


def most_calls_per_call(make: Callable[[], WaitingRequestQueue[Any]], n: int) -> dict[str, int]:
    """The most function calls any one call of each method made, over 30 steps of 256
    arrivals and 256 admissions (peek, then pop) at ``n`` waiting, every fifth step
    also putting an admitted request back (a preemption)."""
    queue, serial = make(), 0
    for _ in range(n):
        queue.add_request(SerialRequest(serial))
        serial += 1
    queue.peek_request()  # the first fill joined: not a steady-state call
    counted = [0]
    most: dict[str, int] = {}

    def count(_frame: FrameType, event: str, _arg: object) -> None:
        if event in ("call", "c_call"):
            counted[0] += 1

    def call(name: str, *arguments: Any) -> Any:
        counted[0] = 0
        previous = sys.getprofile()
        sys.setprofile(count)
        try:
            return getattr(queue, name)(*arguments)
        finally:
            sys.setprofile(previous)
            most[name] = max(most.get(name, 0), counted[0])

    for step in range(30):
        for _ in range(256):
            call("add_request", SerialRequest(serial))
            serial += 1
        for _ in range(256):
            call("__bool__")
            call("peek_request")
            taken = call("pop_request")
        if step % 5 == 0:
            call("prepend_request", taken)
            call("remove_requests", [taken, SerialRequest(-1)])
    return most


@pytest.mark.parametrize("name", sorted(READY_MADE))
def test_the_most_work_of_a_call_grows_with_log_n_only(name: str) -> None:
    small = most_calls_per_call(READY_MADE[name], 1_000)
    large = most_calls_per_call(READY_MADE[name], 16_000)
    for method, calls in large.items():
        assert calls <= GROWTH * small[method] + 50, (method, small[method], calls)


@contextmanager
def _compacting_lines() -> Iterator[None]:
    """A broken kernel: every 100th cut at a line's front rebuilds the whole line
    (the compaction a tombstoned structure needs)."""
    real = line_module.Line.without_first
    cuts = [0]

    def without_first(self: Any, count: int) -> Any:
        cuts[0] += 1
        if cuts[0] % 100 == 0:
            items = list(self)
            rebuilt = line_module.EMPTY_LINE
            for item in items:
                rebuilt = rebuilt.joined(item[7], item)  # a row: its ticket (fast.rows.TICKET)
            self = rebuilt
        return real(self, count)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(line_module.Line, "without_first", without_first)
        yield


def test_the_check_catches_a_queue_that_compacts() -> None:
    with _compacting_lines():
        small = most_calls_per_call(fcfs_queue, 1_000)
        large = most_calls_per_call(fcfs_queue, 16_000)
    assert any(calls > GROWTH * small[method] + 50 for method, calls in large.items())
