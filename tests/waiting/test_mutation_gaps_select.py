"""What mutation testing of ``policy/waiting/select.py`` found untested (docs/mutation.md).

``select_entry`` is ``select_waiting`` without its records (its docstring): the
same entry, the very object waiting in the queue, with the same key values, on
every selection path, a resumed front included, and by the plain definition
for a queue built with another policy; None for an empty queue; and, like
every function of the module, a ``TypeError`` naming the first argument of the
wrong type. ``Moment`` keeps a float ``now`` as given and its default budgets.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from policy.waiting import (
    Admitted,
    Blocked,
    Moment,
    QueuePolicy,
    Selection,
    WaitingQueue,
    admit_many,
    attempt_admission,
    dispatch_entries,
    dispatch_order,
    fifo,
    make_policy,
    select_entry,
    select_reference,
    select_waiting,
)
from policy.waiting.plan import NO_BUDGETS
from tests.waiting.one_per_path import ONE_POLICY_PER_PATH

POLICIES = ONE_POLICY_PER_PATH


def _queue(policy: QueuePolicy, seed: int, *, resumed_front: bool = False) -> WaitingQueue:
    draw = random.Random(seed)
    queue = WaitingQueue()
    for serial in range(12):
        attributes = {
            "priority": draw.randrange(3),
            "arrival_time": float(serial),
            "prompt": draw.randrange(1, 300),
            "immediate": draw.random() < 0.2,
        }
        queue = queue.append(policy, serial, attributes, serial=serial, now=float(serial)).unwrap()
    if resumed_front:
        queue = queue.requeue_preempted(
            policy,
            "back",
            {"priority": 2, "arrival_time": 0.0, "prompt": 999, "immediate": False},
            serial=99,
            now=5.0,
        ).unwrap()
    return queue


@pytest.mark.parametrize("name", sorted(POLICIES))
@pytest.mark.parametrize("resumed_front", [False, True])
def test_select_entry_is_select_waiting_without_its_records(name: str, resumed_front: bool) -> None:
    policy = POLICIES[name]
    for seed in range(3):
        queue = _queue(policy, seed, resumed_front=resumed_front)
        for now in (12.0, 40.0):
            moment = Moment(now)
            chosen = select_entry(queue, policy, moment)
            selection = select_waiting(queue, policy, moment).unwrap()
            assert chosen is not None
            entry, keys = chosen
            assert entry is selection.entry
            assert keys == selection.keys
            assert (entry.identity == "back") == resumed_front
            assert len(queue.without(entry)) == len(queue) - 1  # this very queue's entry


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_select_entry_with_another_policy_is_the_plain_definition(name: str) -> None:
    built_with = POLICIES["scan" if name != "scan" else "static"]
    queue, policy, moment = _queue(built_with, 7), POLICIES[name], Moment(30.0)
    chosen = select_entry(queue, policy, moment)
    reference = select_reference(queue, policy, moment).unwrap()
    assert chosen is not None
    assert chosen[0] is reference.entry
    assert chosen[1] == reference.keys


def test_select_entry_of_an_empty_queue_is_none() -> None:
    for policy in POLICIES.values():
        assert select_entry(WaitingQueue(), policy, Moment(0.0)) is None


def test_select_entry_names_the_first_argument_of_the_wrong_type() -> None:
    queue, policy, moment = WaitingQueue(), fifo(), Moment(0.0)
    wrong: list[tuple[tuple[Any, Any, Any], str]] = [
        (([], policy, moment), "queue must be a WaitingQueue, not list"),
        ((queue, "fifo", moment), "policy must be a QueuePolicy, not str"),
        ((queue, policy, 0.0), "moment must be a Moment, not float"),
        (([], "fifo", 0.0), "queue must be a WaitingQueue, not list"),
    ]
    for arguments, message in wrong:
        with pytest.raises(TypeError) as raised:
            select_entry(*arguments)
        assert str(raised.value) == message
        with pytest.raises(TypeError) as raised:  # at the call, before any pair is read
            dispatch_entries(*arguments)
        assert str(raised.value) == message


def test_a_moment_keeps_a_float_clock_and_its_default_budgets() -> None:
    moment = Moment(2.5)
    assert moment.now == 2.5
    assert type(moment.now) is float
    assert moment.budget_left is NO_BUDGETS
    converted = Moment(3, {"engine": 7})
    assert converted.now == 3.0
    assert type(converted.now) is float
    assert dict(converted.budget_left) == {"engine": 7.0}
    assert type(converted.budget_left["engine"]) is float
    assert Moment(1.0, NO_BUDGETS).budget_left is NO_BUDGETS


def test_a_stage_name_that_is_not_text_is_refused_showing_it() -> None:
    with pytest.raises(TypeError) as raised:
        Moment(0.0, {7: 1.0})  # type: ignore[dict-item]
    assert str(raised.value) == "budget_left must be keyed by stage names (str), not 7"


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_admission_records_carry_the_selection_and_the_queues(name: str) -> None:
    """The records the hot paths build (``_selection``, ``_admitted``, ``_blocked``)
    are those the plain constructors build: the selected entry, its keys, the queue
    selected from, and the queue that remains."""
    policy = POLICIES[name]
    queue, moment = _queue(policy, 2), Moment(20.0)
    selection = select_waiting(queue, policy, moment).unwrap()
    expected = Selection(selection.entry, selection.keys, queue)
    admitted = attempt_admission(queue, policy, moment, lambda _: True)
    assert isinstance(admitted, Admitted)
    assert admitted.selection == expected
    assert admitted.selection.keys == selection.keys
    assert admitted.selection.queue is queue
    assert admitted.entry is selection.entry
    assert list(admitted.queue) == [e for e in queue if e is not selection.entry]
    blocked = attempt_admission(queue, policy, moment, lambda _: False)
    assert isinstance(blocked, Blocked)
    assert blocked.selection == expected
    assert blocked.selection.keys == selection.keys
    assert blocked.selection.queue is queue
    assert blocked.queue is queue
    order = list(dispatch_order(queue, policy, moment))
    assert order[0] == expected
    assert order[0].keys == selection.keys
    assert all(chosen.queue is queue for chosen in order)
    done = admit_many(queue, policy, moment, lambda entry: entry is not order[2].entry)
    assert [a.selection.entry for a in done.admitted] == [order[0].entry, order[1].entry]
    assert [a.selection.keys for a in done.admitted] == [order[0].keys, order[1].keys]
    assert done.admitted[0].selection.queue is queue
    assert done.admitted[1].selection.queue is done.admitted[0].queue
    assert isinstance(done.stopped, Blocked)
    assert done.stopped.selection.entry is order[2].entry
    assert done.stopped.selection.keys == order[2].keys
    assert done.stopped.queue is done.queue is done.admitted[1].queue


def test_select_entry_reads_the_moments_budgets() -> None:
    policy = make_policy(["budget_left(engine) >= prompt ? 0 : 1"], attributes=["prompt"]).unwrap()
    queue = WaitingQueue()
    for serial, prompt in enumerate([500, 50, 400]):
        queue = queue.append(policy, serial, {"prompt": prompt}, serial=serial, now=0.0).unwrap()
    for left, chosen in ((100.0, 1), (1000.0, 0), (10.0, 0)):
        moment = Moment(1.0, {"engine": left})
        picked = select_entry(queue, policy, moment)
        assert picked is not None
        assert picked[0].identity == chosen
        assert picked[1] == select_waiting(queue, policy, moment).unwrap().keys


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_an_admission_with_another_policy_is_the_plain_definition(name: str) -> None:
    built_with = POLICIES["scan" if name != "scan" else "static"]
    queue, policy, moment = _queue(built_with, 4), POLICIES[name], Moment(30.0)
    reference = select_reference(queue, policy, moment).unwrap()
    admitted = attempt_admission(queue, policy, moment, lambda _: True)
    assert isinstance(admitted, Admitted)
    assert admitted.selection == reference
    assert admitted.selection.keys == reference.keys
    assert admitted.entry is reference.entry
    blocked = attempt_admission(queue, policy, moment, lambda _: False)
    assert isinstance(blocked, Blocked)
    assert blocked.selection == reference
    assert blocked.queue is queue
