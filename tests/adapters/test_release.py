"""The drop-in lets go of a request the moment it leaves.

Once ``pop_request``, ``remove_request``, ``remove_requests`` or an abort (vLLM
removes an aborted waiting request with ``remove_requests``) returns, the queue
holds no reference to that request: a weak reference to it is dead after the
caller drops its own. Issue 27 found every popped request of ``fcfs_queue()``
alive until the next sweep of the identity map (5,120 of 5,120 in the scenario
below).
"""

from __future__ import annotations

import gc
import weakref

import pytest

from policy.adapters.vllm import (
    fcfs_queue,
)
from tests.adapters.stand_ins import READY_MADE, SerialRequest


@pytest.mark.parametrize("name", sorted(READY_MADE))
def test_popped_requests_are_let_go_at_once(name: str) -> None:
    """Issue 27's scenario: 10,000 waiting, then twenty times 256 pops and 256 adds."""
    queue = READY_MADE[name]()
    serial = 0
    for _ in range(10_000):
        queue.add_request(SerialRequest(serial))
        serial += 1
    popped: list[weakref.ref[SerialRequest]] = []
    for _ in range(20):
        for _ in range(256):
            queue.peek_request()
            popped.append(weakref.ref(queue.pop_request()))
        for _ in range(256):
            queue.add_request(SerialRequest(serial))
            serial += 1
    gc.collect()
    alive = sum(ref() is not None for ref in popped)
    assert alive == 0, f"{alive} of {len(popped)} popped requests are still alive"
    assert len(queue) == 10_000


@pytest.mark.parametrize("name", sorted(READY_MADE))
def test_removed_and_aborted_requests_are_let_go_at_once(name: str) -> None:
    queue = READY_MADE[name]()
    requests = [SerialRequest(serial) for serial in range(500)]
    for request in requests:
        queue.add_request(request)
    queue.peek_request()  # the queue held, with its arrivals joined
    watched = [weakref.ref(request) for request in requests]
    removed = requests[10:20]
    aborted = requests[100:300:2]  # vLLM: remove_requests of the aborted ones
    for request in removed:
        queue.remove_request(request)
    queue.remove_requests(aborted)
    with pytest.raises(ValueError, match="is already waiting"):
        queue.prepend_request(requests[400])  # a refusal keeps nothing either
    gone = {id(request) for request in removed + aborted}
    del requests, removed, aborted, request
    gc.collect()
    alive = [ref for ref in watched if ref() is not None]
    assert len(alive) == 500 - 110
    assert all(id(ref()) not in gone for ref in alive)


def test_a_queue_dropped_lets_go_of_everything() -> None:
    queue = fcfs_queue()
    requests = [SerialRequest(serial) for serial in range(100)]
    for request in requests:
        queue.add_request(request)
    watched = [weakref.ref(request) for request in requests]
    del requests, request, queue
    gc.collect()
    assert all(ref() is None for ref in watched)
