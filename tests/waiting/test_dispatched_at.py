"""``dispatched_at``: one position of ``dispatch_order``, its refusals, and a queue
asked with a policy it was not built with (the order is then walked)."""

from __future__ import annotations

import pytest

from policy.waiting import (
    Moment,
    QueuePolicy,
    WaitingQueue,
    ascend_fcfs_lanes,
    dispatch_order,
    dispatched_at,
    entry_keys,
    fifo,
    make_policy,
    selection_path,
    vllm_priority,
)
from tests.waiting.one_per_path import ONE_POLICY_PER_PATH

#: Every attribute any path's policy reads.
ATTRIBUTES = {"priority": 1, "arrival_time": 0.0, "prompt": 3, "immediate": False}


def _queue() -> WaitingQueue:
    policy = vllm_priority()
    queue = WaitingQueue()
    for serial, (priority, arrival) in enumerate([(2, 0.0), (0, 1.0), (1, 2.0), (0, 0.5)]):
        attributes = {"priority": priority, "arrival_time": arrival, "prompt": 10 * serial}
        queue = queue.append(policy, f"r{serial}", attributes, serial=serial, now=0.0).unwrap()
    return queue.requeue_preempted(
        policy, "back", {"priority": 9, "arrival_time": 9.0, "prompt": 1}, serial=9, now=1.0
    ).unwrap()


@pytest.mark.parametrize(
    "policy",
    [vllm_priority(), fifo(), ascend_fcfs_lanes(short_tokens=15, max_wait=1.0)],
    ids=["the queue's own", "fifo", "lanes"],
)
def test_every_position_is_the_dispatch_orders(policy: QueuePolicy) -> None:
    queue, moment = _queue(), Moment(5.0)
    order = [selection.entry for selection in dispatch_order(queue, policy, moment)]
    assert [dispatched_at(queue, policy, moment, at) for at in range(len(queue))] == order


def test_a_position_out_of_range_or_not_an_int_is_refused() -> None:
    queue, policy, moment = _queue(), vllm_priority(), Moment(0.0)
    for position in (-1, len(queue), 10**30):
        with pytest.raises(IndexError, match="position"):
            dispatched_at(queue, policy, moment, position)
    wrong: tuple[object, ...] = (1.0, True, "0")
    for given in wrong:
        wanted = f"position must be an int, not {type(given).__name__}"
        with pytest.raises(TypeError, match=wanted):
            dispatched_at(queue, policy, moment, given)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        dispatched_at(queue, "policy", moment, 0)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(ONE_POLICY_PER_PATH))
def test_the_queues_own_dispatched_at_refuses_a_position_out_of_range_on_every_path(
    name: str,
) -> None:
    # found by review: past the end, the lanes and scan paths' walk leaked a bare
    # StopIteration and the static path an IndexError of an inner position
    policy, moment = ONE_POLICY_PER_PATH[name], Moment(0.0)
    queue = WaitingQueue().extend(policy, [("a", ATTRIBUTES, 0, 0.0)]).unwrap()
    for position in (1, -1, 10**20):
        with pytest.raises(IndexError, match=rf"^position {position} of a queue of 1$"):
            queue.dispatched_at(policy, moment, position)
    for wrong in (True, 0.0):
        with pytest.raises(
            TypeError, match=rf"^position must be an int, not {type(wrong).__name__}$"
        ):
            queue.dispatched_at(policy, moment, wrong)  # type: ignore[arg-type]
    assert queue.dispatched_at(policy, moment, 0).identity == "a"


def test_a_position_of_any_size_out_of_range_is_an_index_error_that_prints() -> None:
    # Issue 30: "position {position}" of 5001 digits raised Python's ValueError instead.
    queue, policy, moment = _queue(), vllm_priority(), Moment(0.0)
    for position, shown in ((10**5000, "a 5001-digit"), (-(10**5000), "a negative 5001-digit")):
        with pytest.raises(IndexError) as refused:
            dispatched_at(queue, policy, moment, position)
        assert str(refused.value) == f"position {shown} integer of a queue of 5"


def test_lanes_positions_read_the_moment_and_serial() -> None:
    """Past the walked front and before it, the lanes bisection evaluates keys at
    the moment given (``now``, ``budget_left``) and with each entry's ``serial``
    (found by mutation testing: a key of the Ascend lanes reads none of them)."""
    keys = [
        "(serial < 60 ? 0 : 1) * budget_left(prefill) + (prompt < 128 ? 0 : 1) - now / 1000",
        "0 - waited",
    ]
    policy = make_policy(keys, attributes=["prompt"]).unwrap()
    assert selection_path(policy) == "lanes"
    queue = WaitingQueue().extend(
        policy,
        [(n, {"prompt": 16.0 if n % 3 else 4096.0}, n, float(n)) for n in range(200)],
    )
    built = queue.unwrap()
    moment = Moment(500.0, {"prefill": 2.0})
    order = [selection.entry for selection in dispatch_order(built, policy, moment)]
    assert [dispatched_at(built, policy, moment, at) for at in range(200)] == order


@pytest.mark.parametrize(
    "policy",
    [
        vllm_priority(),
        fifo(),
        ascend_fcfs_lanes(short_tokens=15, max_wait=1.0),
        make_policy(["prompt - budget_left(engine)", "-waited"], attributes=["prompt"]).unwrap(),
    ],
    ids=["the queue's own", "fifo", "lanes", "scan, reading budgets"],
)
@pytest.mark.parametrize("built_with", ["the policy", "vllm_priority"])
def test_dispatch_order_carries_each_entrys_keys_by_the_definition(
    policy: QueuePolicy, built_with: str
) -> None:
    """``dispatch_order``: each selection's key values (``()`` without keys, and for
    the resumed prefix) are the plain definition's, for a queue held for the
    policy and for one built with another, at a moment with a budget the keys read."""
    queue = _queue()
    if built_with == "the policy":
        rebuilt = WaitingQueue()
        for entry in queue:
            rebuilt = rebuilt.append(
                policy,
                entry.identity,
                {**dict.fromkeys(policy.attributes_read, 0.0), **entry.attributes},
                serial=entry.serial,
                now=0.0,
            ).unwrap()
        queue = rebuilt
    moment = Moment(5.0, {"engine": 7.0})
    for selection in dispatch_order(queue, policy, moment):
        if selection.entry.resumed or not policy.keys:
            assert selection.keys == ()
        else:
            wanted = entry_keys(policy, selection.entry, moment)
            assert [repr(key) for key in selection.keys] == [repr(key) for key in wanted]


def test_every_position_of_a_class_with_late_arrivals_is_the_dispatch_orders() -> None:
    # one priority class: arrivals 0..3 join its run in key order, 0.5, 1.5 and 2.5
    # come late (out of key order: the class's rest), then 4 and 5 join the run
    # again; each position merges run and rest by bisection
    policy = vllm_priority()
    queue = WaitingQueue()
    arrivals = [0.0, 1.0, 2.0, 3.0, 0.5, 1.5, 2.5, 4.0, 5.0, 0.25, 3.5]
    for serial, arrival in enumerate(arrivals):
        attributes = {"priority": 0, "arrival_time": arrival}
        queue = queue.append(policy, serial, attributes, serial=serial, now=0.0).unwrap()
    moment = Moment(0.0)
    order = [selection.entry.identity for selection in dispatch_order(queue, policy, moment)]
    assert [arrivals[int(identity)] for identity in order] == sorted(arrivals)
    assert [
        dispatched_at(queue, policy, moment, position).identity for position in range(len(order))
    ] == order
