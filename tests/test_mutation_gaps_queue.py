"""The waiting queue and selection: rules mutation testing found unasserted (docs/mutation.md).

From docs/waiting.md: the queue refuses what it cannot order, with a QueueError naming the
request; booleans stay booleans and ``serial`` is kept as given; under enqueue timing the keys
stored by the policy that queued an entry are used, and an entry without stored keys gets them
computed as at enqueue (``now = enqueued_at``, ``waited = 0``).
"""

from __future__ import annotations

import re

import pytest
from returns.result import Failure

from policy.waiting import (
    Moment,
    QueueError,
    WaitingQueue,
    make_policy,
    select_waiting,
)

ENQUEUE_PROMPT = make_policy(["prompt"], attributes=["prompt"], timing="enqueue").unwrap()


def test_attributes_that_are_not_a_mapping_are_refused_naming_the_request() -> None:
    result = WaitingQueue().append(ENQUEUE_PROMPT, "a", [1], serial=0, now=0.0)  # type: ignore[arg-type]
    assert isinstance(result, Failure)
    assert result.failure() == QueueError("a", "attributes must map names to values, not [1]")
    result = WaitingQueue().requeue_preempted(ENQUEUE_PROMPT, 7, "prompt", serial=0, now=0.0)  # type: ignore[arg-type]
    assert isinstance(result, Failure)
    assert str(result.failure()) == "request 7: attributes must map names to values, not 'prompt'"


def test_a_clock_that_is_not_a_number_is_refused_showing_it() -> None:
    result = WaitingQueue().append(ENQUEUE_PROMPT, "a", {"prompt": 1}, serial=0, now="3")  # type: ignore[arg-type]
    assert isinstance(result, Failure)
    assert result.failure() == QueueError("a", "now must be a number, not '3'")


def test_booleans_stay_booleans_and_serial_is_kept_as_given() -> None:
    policy = make_policy(
        ["immediate ? 0 : prompt"], attributes=["immediate", "prompt"], timing="enqueue"
    ).unwrap()
    queue = (
        WaitingQueue()
        .append(policy, "a", {"immediate": True, "prompt": 3}, serial=7, now=1)
        .unwrap()
        .requeue_preempted(policy, "b", {"immediate": False, "prompt": 5}, serial=8, now=2)
        .unwrap()
    )
    b, a = queue.entries
    assert a.attributes["immediate"] is True
    assert b.attributes["immediate"] is False
    assert type(a.attributes["prompt"]) is float
    assert (a.serial, b.serial) == (7, 8)
    assert (a.enqueued_at, b.enqueued_at) == (1.0, 2.0)
    assert (a.enqueue_keys, b.enqueue_keys) == ((0.0,), (5.0,))


def test_enqueue_keys_come_from_the_policy_that_queued_the_entry() -> None:
    queue = WaitingQueue()
    for identity, prompt in (("a", 1), ("b", 5)):
        queue = queue.append(
            ENQUEUE_PROMPT, identity, {"prompt": prompt}, serial=0, now=0.0
        ).unwrap()
    reversed_order = make_policy(["-prompt"], attributes=["prompt"], timing="enqueue").unwrap()
    chosen = select_waiting(queue, reversed_order, Moment(9.0)).unwrap()
    assert (chosen.entry.identity, chosen.keys) == ("a", (1.0,))  # the stored keys, not -prompt


def test_an_entry_without_stored_keys_gets_them_as_at_enqueue() -> None:
    selection_policy = make_policy(["prompt"], attributes=["prompt"]).unwrap()
    queue = WaitingQueue()
    for identity, prompt, at in (("a", 5, 0.0), ("b", 1, 2.0)):
        queue = queue.append(
            selection_policy, identity, {"prompt": prompt}, serial=0, now=at
        ).unwrap()
    assert queue.entries[0].enqueue_keys is None
    at_enqueue = make_policy(
        ["now + prompt", "serial"], attributes=["prompt"], timing="enqueue"
    ).unwrap()
    chosen = select_waiting(queue, at_enqueue, Moment(100.0)).unwrap()
    assert (chosen.index, chosen.entry.identity, chosen.keys) == (1, "b", (3.0, 0.0))


@pytest.mark.parametrize(
    ("now", "budgets", "message"),
    [
        ("3", {}, "now must be a number, not '3'"),
        (1, [1], "budget_left must map stages to numbers, not [1]"),
        (1, {"engine": "5"}, "budget_left['engine'] must be a number, not '5'"),
    ],
)
def test_a_moment_refuses_what_is_not_a_number_showing_it(
    now: object, budgets: object, message: str
) -> None:
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        Moment(now, budgets)  # type: ignore[arg-type]
