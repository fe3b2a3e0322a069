"""The ordering cases of vLLM's priority-scheduling tests, against the drop-in queue,
and where the kernel's ``static_priority`` differs from vLLM's order."""

from __future__ import annotations

import pytest

from policy.adapters.vllm import fcfs_queue, priority_queue, queue_from_policy
from policy.waiting import static_priority, vllm_priority
from tests.adapters.stand_ins import FakeClock, Req, drain, ids, requests_with

# (priorities, arrival times, expected pop order), from vLLM's tests/v1/core/test_scheduler.py
VLLM_CASES = [
    ([2, 0, 1], [1.0, 2.0, 3.0], ["1", "2", "0"]),
    ([1, 1, 1], [3.0, 1.0, 2.0], ["1", "2", "0"]),
    ([2, 1, 1, 0], [1.0, 3.0, 2.0, 4.0], ["3", "2", "1", "0"]),
    ([1, 1, 1, 1], [4.0, 1.0, 3.0, 2.0], ["1", "3", "2", "0"]),
    (
        [5, 1, 8, 3, 2, 7, 4, 6],
        [float(i) for i in range(8)],
        # sorted by priority: 1, 2, 3, 4, 5, 6, 7, 8
        ["1", "4", "3", "6", "0", "7", "5", "2"],
    ),
]


@pytest.mark.parametrize("preempted_first", [True, False])
@pytest.mark.parametrize(("priorities", "arrivals", "expected"), VLLM_CASES)
def test_vllm_priority_cases_pop_in_vllm_order(
    priorities: list[int], arrivals: list[float], expected: list[str], preempted_first: bool
) -> None:
    queue = priority_queue(preempted_first, clock=FakeClock())
    for request in requests_with(priorities, arrivals):
        queue.add_request(request)
    assert ids(queue) == expected  # iteration is dispatch order, as vLLM's heap copy is
    assert drain(queue) == expected


def test_the_heap_property_case_pops_in_sorted_priority() -> None:
    priorities = [5, 1, 8, 3, 2, 7, 4, 6]
    queue = priority_queue(clock=FakeClock())
    made = requests_with(priorities, [float(i) for i in range(8)])
    for request in made:
        queue.add_request(request)
    order = [queue.pop_request().priority for _ in range(len(made))]
    assert order == sorted(priorities)


def test_the_limited_slots_case_leaves_the_waiting_order_of_vllm() -> None:
    # vLLM: priorities [3, 1, 2, 0], two admitted ("3", "1"), waiting ["2", "0"]
    queue = priority_queue(clock=FakeClock())
    for request in requests_with([3, 1, 2, 0], [1.0, 2.0, 3.0, 4.0]):
        queue.add_request(request)
    assert [queue.pop_request().request_id for _ in range(2)] == ["3", "1"]
    assert ids(queue) == ["2", "0"]
    assert [request.priority for request in queue] == [2, 3]


def test_static_priority_is_not_vllms_order() -> None:
    # The correction in docs/waiting.md: ties go by queue order, not arrival_time.
    priorities, arrivals, vllm_order = VLLM_CASES[1]
    static = queue_from_policy(static_priority(), clock=FakeClock())
    named = queue_from_policy(vllm_priority(), clock=FakeClock())
    for queue in (static, named):
        for request in requests_with(priorities, arrivals):
            queue.add_request(request)
    assert drain(static) == ["0", "1", "2"]
    assert drain(named) == vllm_order


def test_equal_priority_and_arrival_go_by_queue_order_not_request_id() -> None:
    # vLLM compares request ids as text here ("a" < "b"); this queue keeps queue order.
    queue = priority_queue(clock=FakeClock())
    queue.add_request(Req("b", priority=1, arrival_time=5.0))
    queue.add_request(Req("a", priority=1, arrival_time=5.0))
    assert drain(queue) == ["b", "a"]


def test_a_preempted_request_never_passes_a_better_priority() -> None:
    # vLLM's worker-slot case (issue 17): on 7a23c81 the default preempted_first=True
    # admitted the preempted request at priority 10 before the new one at priority 0.
    for preempted_first in (False, True):
        queue = priority_queue(preempted_first, clock=FakeClock())
        running = Req("low", priority=10, arrival_time=1.0)
        queue.add_request(running)
        assert queue.pop_request() is running  # admitted, then a better one arrives
        queue.add_request(Req("high", priority=0, arrival_time=2.0))
        queue.prepend_request(running)  # preempted
        assert drain(queue) == ["high", "low"]


def test_by_default_a_preempted_request_is_re_inserted_by_its_keys_as_vllm_does() -> None:
    # vLLM 0.33's PriorityRequestQueue.prepend_request is add_request: a heap push
    # by (priority, arrival_time); a request of the same priority that arrived
    # earlier goes first.
    queue = priority_queue(clock=FakeClock())
    preempted = Req("preempted", priority=1, arrival_time=5.0)
    queue.add_request(preempted)
    assert queue.pop_request() is preempted
    queue.add_request(Req("earlier", priority=1, arrival_time=2.0))
    queue.add_request(Req("later", priority=1, arrival_time=9.0))
    queue.prepend_request(preempted)
    assert ids(queue) == ["earlier", "preempted", "later"]
    assert drain(queue) == ["earlier", "preempted", "later"]


def test_preempted_first_means_first_within_its_priority() -> None:
    queue = priority_queue(True, clock=FakeClock())
    for name, priority, arrival in (("p0", 0, 9.0), ("p1 early", 1, 1.0), ("p2", 2, 0.0)):
        queue.add_request(Req(name, priority=priority, arrival_time=arrival))
    queue.prepend_requests(
        [
            Req("back p1 late", priority=1, arrival_time=8.0),
            Req("back p1", priority=1, arrival_time=3.0),
        ]
    )
    queue.prepend_request(Req("back p2", priority=2, arrival_time=7.0))
    # within priority 1 the prepended ones first, among them by arrival_time
    expected = ["p0", "back p1", "back p1 late", "p1 early", "back p2", "p2"]
    assert ids(queue) == expected
    assert drain(queue) == expected


def test_fcfs_is_vllms_deque() -> None:
    queue = fcfs_queue(clock=FakeClock())
    for name in "abc":
        queue.add_request(Req(name))
    queue.prepend_request(Req("p"))
    assert drain(queue) == ["p", "a", "b", "c"]
