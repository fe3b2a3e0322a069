"""Stand-ins for vLLM's objects: a request with the attributes the adapter reads, a
clock the test moves by hand, a scheduler with a ``waiting`` queue, and vLLM's
FCFS queue (a deque) as the scheduler's skipped-request queue; every field of a
kernel entry, to compare versions."""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from policy.adapters.vllm import (
    WaitingRequestQueue,
    fcfs_queue,
    priority_queue,
    short_request_first_queue,
)


@dataclass(eq=False)  # compared by identity, as vLLM's Request is
class Req:
    """A vLLM-like request."""

    request_id: str
    priority: int = 0
    arrival_time: float = 0.0
    num_prompt_tokens: int = 10
    status: str = "WAITING"
    num_computed_tokens: int = 0
    num_output_tokens: int = 0


class FakeClock:
    """A monotonic clock moved by hand."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class DequeQueue(collections.deque[Any]):
    """vLLM's FCFSRequestQueue, as far as the scheduler's skip-and-restore uses it."""

    def prepend_request(self, request: Any) -> None:
        self.appendleft(request)


#: Every ready-made queue, at the settings the tests use, on a given clock.
QUEUE_MAKERS: dict[str, Callable[[FakeClock], WaitingRequestQueue[Any]]] = {
    "fcfs": lambda clock: fcfs_queue(clock=clock),
    "priority": lambda clock: priority_queue(clock=clock),
    "priority, preempted first": lambda clock: priority_queue(True, clock=clock),
    "short first": lambda clock: short_request_first_queue(256, 100.0, clock=clock),
}


def ids(requests: Any) -> list[str]:
    """The request ids of ``requests``, in order."""
    return [request.request_id for request in requests]


def drain(queue: Any) -> list[str]:
    """Pop every request; their ids in pop order."""
    popped = []
    while queue:
        popped.append(queue.pop_request().request_id)
    return popped


def requests_with(priorities: list[int], arrivals: list[float]) -> list[Req]:
    """vLLM's ``create_requests_with_priority``: request i is named ``str(i)``."""
    return [
        Req(str(i), priority=priority, arrival_time=arrival)
        for i, (priority, arrival) in enumerate(zip(priorities, arrivals, strict=True))
    ]


#: The ready-made drop-in queues, by name.
READY_MADE: dict[str, Callable[[], WaitingRequestQueue[Any]]] = {
    "fcfs": fcfs_queue,
    "priority": priority_queue,
    "priority, preempted first": lambda: priority_queue(preempted_first=True),
    "short first": lambda: short_request_first_queue(threshold=100, long_max_wait_ms=5.0),
}


class SerialRequest:
    """A slotted stand-in made from a serial, with what the default attributes read
    (seven priorities, rising arrivals, varied prompts); weakly referenceable."""

    __slots__ = (
        "__weakref__",
        "arrival_time",
        "num_computed_tokens",
        "num_output_tokens",
        "num_prompt_tokens",
        "priority",
        "request_id",
        "status",
    )

    def __init__(self, serial: int) -> None:
        self.request_id = f"req-{serial}"
        self.priority = serial % 7
        self.arrival_time = float(serial)
        self.num_prompt_tokens = 50 + serial % 200
        self.status = "WAITING"
        self.num_computed_tokens = 0
        self.num_output_tokens = 0
