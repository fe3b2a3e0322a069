"""``queue[i]`` answers as a deque would for the queue's iteration order (issue 17,
item 1: vLLM's tests read ``scheduler.waiting[i]``)."""

from __future__ import annotations

import collections
import random
from collections.abc import Callable
from typing import Any

import pytest

from policy.adapters.vllm import (
    WaitingRequestQueue,
    fcfs_queue,
    queue_from_policy,
    short_request_first_queue,
)
from policy.waiting import make_policy
from tests.adapters.stand_ins import QUEUE_MAKERS, FakeClock, Req

MAKERS: dict[str, Callable[[FakeClock], WaitingRequestQueue[Any]]] = {
    **QUEUE_MAKERS,
    "scan": lambda clock: queue_from_policy(
        make_policy(["prompt / (1 + waited)"], attributes=["prompt"]).unwrap(), clock=clock
    ),
}


def _filled(name: str, seed: int, size: int) -> tuple[WaitingRequestQueue[Any], FakeClock]:
    draw = random.Random(f"{name}-{seed}")
    clock = FakeClock()
    queue = MAKERS[name](clock)
    for k in range(size):
        clock.advance(draw.random() * 0.01)
        request = Req(
            f"r{k}",
            priority=draw.randint(0, 3),
            arrival_time=draw.random(),
            num_prompt_tokens=draw.choice([10, 300]),
            num_computed_tokens=16 if draw.random() < 0.05 else 0,
        )
        if draw.random() < 0.05:
            queue.prepend_request(request)
        else:
            queue.add_request(request)
        if draw.random() < 0.2 and queue:
            queue.remove_request(queue[draw.randrange(len(queue))])  # the middle: tombstones
        if draw.random() < 0.1 and queue:
            queue.pop_request()
    clock.advance(0.15)  # some long requests have aged
    return queue, clock


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("size", [1, 7, 300])
def test_indexing_answers_as_a_deque_of_the_iteration_order(name: str, size: int) -> None:
    queue, _ = _filled(name, size, size)
    model = collections.deque(queue)
    assert len(model) == len(queue)
    for index in range(-len(model), len(model)):
        assert queue[index] is model[index]
    for index in (len(model), -len(model) - 1, 10**30):
        with pytest.raises(IndexError, match="index out of range"):
            queue[index]
        with pytest.raises(IndexError):
            model[index]


def test_indexing_an_empty_queue_is_an_index_error() -> None:
    queue = fcfs_queue(clock=FakeClock())
    for index in (0, -1):
        with pytest.raises(IndexError, match="waiting queue index out of range"):
            queue[index]


@pytest.mark.parametrize("index", ["0", 1.0, slice(0, 1), None, (0,)])
def test_indexing_by_anything_but_an_integer_is_a_type_error(index: Any) -> None:
    queue = fcfs_queue(clock=FakeClock())
    queue.add_request(Req("a"))
    model = collections.deque(queue)
    with pytest.raises(TypeError, match="index must be an integer"):
        queue[index]
    with pytest.raises(TypeError):
        model[index]


def test_integers_by_index_are_taken_as_a_deque_takes_them() -> None:
    queue = fcfs_queue(clock=FakeClock())
    for name in "ab":
        queue.add_request(Req(name))
    assert queue[True].request_id == "b"  # a bool is an int, as for a deque

    class Two:
        def __index__(self) -> int:
            return 1

    assert queue[Two()].request_id == "b"  # type: ignore[index]


def test_indexing_follows_the_clock_as_iteration_does() -> None:
    clock = FakeClock()
    queue = short_request_first_queue(256, 100.0, clock=clock)
    queue.add_request(Req("long", num_prompt_tokens=1000))
    queue.add_request(Req("short"))
    assert [queue[0].request_id, queue[-1].request_id] == ["short", "long"]
    clock.advance(0.2)
    assert [queue[0].request_id, queue[-1].request_id] == ["long", "short"]
