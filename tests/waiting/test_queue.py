"""The immutable waiting queue: unit tests (its one model-based machine is
tests/waiting/test_queue_machine.py)."""

from __future__ import annotations

import gc
import math
import re
import sys
import weakref
from collections.abc import Callable
from types import FrameType

import pytest
from returns.maybe import Nothing, Some
from returns.result import Failure

from policy.waiting import (
    AttributeView,
    Moment,
    QueueError,
    QueuePolicy,
    WaitingEntry,
    WaitingQueue,
    ascend_fcfs_lanes,
    fifo,
    make_policy,
    select_waiting,
    static_priority,
)
from tests.waiting.one_per_path import ONE_POLICY_PER_PATH


def test_entries_are_stored_immutably_and_the_caller_keeps_its_mapping() -> None:
    attributes = {"priority": 3}
    queue = WaitingQueue().append(static_priority(), "a", attributes, serial=0, now=1.0).unwrap()
    attributes["priority"] = 9
    entry = queue.entries[0]
    assert isinstance(entry.attributes, AttributeView)  # read-only: no item assignment
    assert not hasattr(entry.attributes, "__setitem__")
    assert entry.attributes["priority"] == 3
    assert entry.enqueue_keys == (3.0,)
    assert attributes == {"priority": 9}


@pytest.mark.parametrize(
    ("given", "stored"),
    [(3, 3.0), (2**53 + 1, 2.0**53), (10**400, math.inf), (-(10**400), -math.inf)],
)
def test_integer_attributes_are_stored_as_floats_rounded_or_infinite(
    given: int, stored: float
) -> None:
    """As :func:`~policy.waiting.numbers.as_float` reads them, by append and by extend."""
    policy = static_priority()
    appended = WaitingQueue().append(policy, "a", {"priority": given}, serial=0, now=1.0)
    extended = WaitingQueue().extend(policy, [("a", {"priority": given}, 0, 1.0)])
    for made in (appended, extended):
        entry = made.unwrap().entries[0]
        assert entry.attributes["priority"] == stored
        assert type(entry.attributes["priority"]) is float


def test_enqueue_keys_are_stored_only_under_enqueue_timing() -> None:
    lanes = ascend_fcfs_lanes()
    queue = (
        WaitingQueue()
        .append(lanes, 1, {"prompt": 1, "immediate": False}, serial=1, now=0.0)
        .unwrap()
    )
    assert queue.entries[0].enqueue_keys is None


def test_refusals() -> None:
    lanes = ascend_fcfs_lanes()
    queue = WaitingQueue().append(lanes, 1, {"prompt": 1, "immediate": False}, serial=1, now=0.0)
    one = queue.unwrap()
    assert str(
        one.append(lanes, 1, {"prompt": 1, "immediate": 0}, serial=2, now=1.0).failure()
    ) == ("request 1: is already waiting")
    assert str(
        one.requeue_preempted(lanes, 1, {"prompt": 1, "immediate": 0}, serial=2, now=1.0).failure()
    ) == ("request 1: is already waiting")
    assert str(one.append(lanes, 2, {"prompt": 5}, serial=2, now=1.0).failure()) == (
        "request 2: lacks attribute 'immediate', which the queue policy's keys read"
    )
    bad_value = one.append(lanes, 2, {"prompt": "5", "immediate": 0}, serial=2, now=1.0)  # type: ignore[dict-item]
    assert str(bad_value.failure()) == "request 2: attribute 'prompt' must be a number or a boolean"
    too_big = one.append(
        lanes,
        "x",
        {"prompt": 10**6, "immediate": 0},
        serial=3,
        now=1.0,
        ever_fits=lambda entry: entry.attributes["prompt"] <= 4096,
    )
    assert str(too_big.failure()) == (
        "request 'x': could never fit, even in an empty pool; refused so that it cannot"
        " block the queue for ever"
    )
    assert str(one.remove(7).failure()) == "request 7: is not waiting"
    # an attribute the keys do not read may be missing; extra ones are kept
    assert isinstance(
        WaitingQueue().append(fifo(), 1, {"out": 3}, serial=0, now=0.0).unwrap(), WaitingQueue
    )


def test_a_request_that_fits_is_queued_and_the_test_sees_the_entry() -> None:
    seen: list[WaitingEntry] = []

    def ever_fits(entry: WaitingEntry) -> bool:
        seen.append(entry)
        return True

    queue = WaitingQueue().append(fifo(), 4, {"units": 2}, serial=4, now=1.5, ever_fits=ever_fits)
    assert [entry.identity for entry in queue.unwrap()] == [4]
    assert [(e.identity, e.enqueued_at, e.resumed) for e in seen] == [(4, 1.5, False)]


def test_requeue_refuses_a_request_that_could_never_fit_like_append() -> None:
    seen: list[WaitingEntry] = []

    def ever_fits(entry: WaitingEntry) -> bool:
        seen.append(entry)
        return entry.attributes["units"] <= 4

    queue = WaitingQueue().append(fifo(), "a", {"units": 1}, serial=0, now=0.0).unwrap()
    refused = queue.requeue_preempted(
        fifo(), "b", {"units": 5}, serial=1, now=2.0, ever_fits=ever_fits
    )
    assert str(refused.failure()) == (
        "request 'b': could never fit, even in an empty pool; refused so that it cannot"
        " block the queue for ever"
    )
    fitting = queue.requeue_preempted(
        fifo(), "c", {"units": 4}, serial=2, now=3.0, ever_fits=ever_fits
    )
    assert [e.identity for e in fitting.unwrap()] == ["c", "a"]
    assert [(e.identity, e.resumed, e.enqueued_at) for e in seen] == [
        ("b", True, 2.0),
        ("c", True, 3.0),
    ]


def test_requeue_is_a_fresh_entry_at_the_front() -> None:
    queue = WaitingQueue()
    for identity in ("a", "b"):
        queue = queue.append(fifo(), identity, {}, serial=0, now=0.0).unwrap()
    queue = queue.remove("b").unwrap()
    queue = queue.requeue_preempted(fifo(), "b", {}, serial=0, now=5.0).unwrap()
    queue = queue.requeue_preempted(fifo(), "c", {}, serial=1, now=6.0).unwrap()
    assert [(e.identity, e.resumed, e.enqueued_at) for e in queue] == [
        ("c", True, 6.0),
        ("b", True, 5.0),
        ("a", False, 0.0),
    ]
    assert queue.index_of("a") == Some(2)
    assert queue.index_of("z") == Nothing


# --- letting go: a version holds nothing that left it (issue 27)


class Carried:
    """A host's object for a request, watched by a weak reference."""

    __slots__ = ("__weakref__",)


def _carrying(policy_name: str, count: int) -> tuple[WaitingQueue, list[weakref.ref[Carried]]]:
    policy = ONE_POLICY_PER_PATH[policy_name]
    queue, watched = WaitingQueue(), []
    for serial in range(count):
        carried = Carried()
        watched.append(weakref.ref(carried))
        attributes = {
            "priority": serial % 3,
            "arrival_time": float(serial),
            "prompt": serial,
            "immediate": False,
        }
        add = queue.requeue_preempted if serial % 5 == 0 else queue.append
        queue = add(
            policy, serial, attributes, serial=serial, now=float(serial), carried=carried
        ).unwrap()
    return queue, watched


@pytest.mark.parametrize("policy_name", sorted(ONE_POLICY_PER_PATH))
def test_every_way_out_lets_go_of_what_an_entry_carries(policy_name: str) -> None:
    """``without``, ``remove``, ``without_index`` and ``without_each``: once the
    versions that held an entry are dropped, what it carried is free at once (no
    sweep, no tombstone), while the versions still referenced keep theirs."""
    queue, watched = _carrying(policy_name, 300)
    policy = ONE_POLICY_PER_PATH[policy_name]
    kept = queue  # an old version keeps every entry it holds
    queue = queue.without(queue.entry_of(7))  # type: ignore[arg-type]
    queue = queue.remove(8).unwrap()
    queue = queue.without_index(0)  # the most recently resumed entry
    order = [entry for entry, _ in queue.dispatched(policy, Moment(500.0))]
    queue = queue.without_each(order[:40])  # a step's admissions, from the front
    queue = queue.without_each(order[100:110])
    gone = {7, 8, 295} | {entry.identity for entry in order[:40] + order[100:110]}
    gc.collect()
    assert all(ref() is not None for ref in watched)  # all in the kept version
    del kept, order
    gc.collect()
    for identity, ref in enumerate(watched):
        assert (ref() is None) == (identity in gone), identity
    assert {entry.identity for entry in queue} == set(range(300)) - gone


@pytest.mark.parametrize("policy_name", sorted(ONE_POLICY_PER_PATH))
def test_without_dispatched_is_without_each_of_the_first_dispatched(policy_name: str) -> None:
    """``without_dispatched(policy, moment, count)`` is ``without_each`` of the first
    ``count`` entries of ``dispatched(policy, moment)`` (all of them past the
    size), on every path: resumed entries lead, the ``fifo`` and ``static``
    paths take them at once, the others one by one. Made again and again from
    one version (a branch answers from its own map), each version made answers
    by identity for its own entries only, and lets go of what the others carried."""
    policy = ONE_POLICY_PER_PATH[policy_name]
    queue, watched = _carrying(policy_name, 60)  # every fifth entry resumed
    moment = Moment(500.0)
    order = [entry for entry, _ in queue.dispatched(policy, moment)]
    for count in (0, 1, 12, 13, 47, 59, 60, 61, 1000):
        made = queue.without_dispatched(policy, moment, count)
        expected = queue.without_each(order[:count])
        assert [tuple(entry) for entry in made] == [tuple(entry) for entry in expected]
        assert [(tuple(entry), keys) for entry, keys in made.dispatched(policy, moment)] == [
            (tuple(entry), keys) for entry, keys in expected.dispatched(policy, moment)
        ]
        assert len(made) == max(0, 60 - count)
        for position, entry in enumerate(order):
            assert (made.entry_of(entry.identity) is None) == (position < count)
    later = queue.without_dispatched(policy, moment, 13)
    later = later.without_dispatched(policy, moment, 13)  # a line: the index handed on
    assert [entry.identity for entry in later] == [
        entry.identity for entry in queue.without_each(order[:26])
    ]
    del queue, order, made, expected
    gc.collect()
    left = {entry.identity for entry in later}
    for identity, ref in enumerate(watched):
        assert (ref() is None) == (identity not in left), identity


@pytest.mark.parametrize("policy_name", sorted(ONE_POLICY_PER_PATH))
def test_the_entry_at_a_position_is_that_of_the_queue_as_a_list(policy_name: str) -> None:
    """``at`` and ``without_index`` against the same operation on ``list(queue)``, on
    every path's structure: resumed entries first, a class's lane, a line; enqueue
    times in order and not, entries removed from the middle; and the front, which
    a policy without keys selects (found by mutation testing: no test read a
    position past the first of a queue kept in lanes, nor the front of one kept
    in key order or in lanes)."""
    policy = ONE_POLICY_PER_PATH[policy_name]
    for out_of_order, resumed in ((False, True), (True, True), (False, False)):
        queue = WaitingQueue()
        for serial in range(41):
            attributes = {
                "priority": serial % 3,
                "arrival_time": float(serial),
                "prompt": (serial * 37) % 150,
                "immediate": serial % 4 == 0,
            }
            now = float((serial * 7) % 41 if out_of_order else serial)
            add = queue.requeue_preempted if resumed and serial % 9 == 0 else queue.append
            queue = add(policy, serial, attributes, serial=serial, now=now).unwrap()
        queue = queue.remove(20).unwrap().remove(3).unwrap()
        as_list = list(queue)
        assert len(as_list) == len(queue) == 39
        assert tuple(queue.first()) == tuple(as_list[0])
        in_front = queue.selected(fifo(), Moment(0.0))  # a policy without keys: the front
        assert in_front is not None
        assert tuple(in_front[0]) == tuple(as_list[0])
        for position, entry in enumerate(as_list):
            assert tuple(queue.at(position)) == tuple(entry)
        for position in (0, 1, 4, 5, 19, 38):
            left = queue.without_index(position)
            wanted = as_list[:position] + as_list[position + 1 :]
            assert [tuple(entry) for entry in left] == [tuple(entry) for entry in wanted]


class _Int(int):
    """An int of a subclass: an int wherever the queue takes one."""


def test_a_position_is_an_int_within_the_queue() -> None:
    # found by mutmut: no test asked for the position just past the last, nor gave an
    # int of a subclass (which is an int: taken as one)
    queue = _queue()
    assert queue.at(_Int(0)).identity == "a"
    for position in (1, -1):
        with pytest.raises(IndexError, match=rf"^index {position} of a queue of 1$"):
            queue.at(position)
    for wrong, name in ((True, "bool"), (0.0, "float")):
        with pytest.raises(TypeError, match=rf"^index must be an int, not {name}$"):
            queue.at(wrong)  # type: ignore[arg-type]
    with pytest.raises(IndexError, match=r"^index 1 of a queue of 1$"):
        queue.without_index(1)


def test_queues_are_equal_by_their_entries_in_queue_order_and_hash_alike() -> None:
    # found by branch coverage and mutmut: no test compared two queues, hashed or
    # wrote one, or asked an empty one for its truth
    one, again = _queue(), _queue()
    two = one.append(fifo(), "b", {}, serial=1, now=0.0).unwrap()
    assert (one == again, hash(one) == hash(again), one != two) == (True, True, True)
    assert two.without(two.first()) != one  # "b" alone is not "a" alone
    assert two.remove("b").unwrap() == one
    assert (one == list(one), one != list(one)) == (False, True)
    emptied = two.remove("a").unwrap().remove("b").unwrap()
    assert (bool(one), bool(WaitingQueue()), bool(emptied)) == (True, False, False)
    assert repr(one) == f"WaitingQueue([{one.first()!r}])"


def test_the_first_entry_of_an_empty_queue_is_an_index_error() -> None:
    for queue in (WaitingQueue(), _queue().remove("a").unwrap()):
        with pytest.raises(IndexError, match=r"^the first entry of an empty queue$"):
            queue.first()


def test_without_dispatched_refuses_what_is_not_a_policy_a_moment_and_a_count() -> None:
    queue = WaitingQueue().append(fifo(), "a", {}, serial=0, now=0.0).unwrap()
    with pytest.raises(TypeError, match="count must be an int, not float"):
        queue.without_dispatched(fifo(), Moment(0.0), 1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="count must be an int, not bool"):
        queue.without_dispatched(fifo(), Moment(0.0), True)
    with pytest.raises(ValueError, match="count must be at least 0, not -1"):
        queue.without_dispatched(fifo(), Moment(0.0), -1)
    with pytest.raises(TypeError, match="policy must be a QueuePolicy, not str"):
        queue.without_dispatched("fifo", Moment(0.0), 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="moment must be a Moment, not NoneType"):
        queue.without_dispatched(fifo(), None, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^moment must be a Moment, not float$"):
        queue.without_dispatched(fifo(), 0.0, 1)  # type: ignore[arg-type]
    assert queue.without_dispatched(fifo(), Moment(0.0), 0) is queue

    assert not queue.without_dispatched(fifo(), Moment(0.0), _Int(1))  # (found by mutmut)


@pytest.mark.parametrize("policy_name", sorted(ONE_POLICY_PER_PATH))
def test_an_old_version_keeps_alive_only_what_it_holds(policy_name: str) -> None:
    """The identity index goes from each version to the one made from it: a version
    kept while later ones come and go keeps its own entries, not theirs."""
    queue, watched = _carrying(policy_name, 50)
    policy = ONE_POLICY_PER_PATH[policy_name]
    later, joined = queue, []
    for serial in range(50, 60):
        carried = Carried()
        joined.append(weakref.ref(carried))
        attributes = {"priority": 1, "arrival_time": 0.0, "prompt": 1, "immediate": False}
        later = later.append(
            policy, serial, attributes, serial=serial, now=0.0, carried=carried
        ).unwrap()
    assert queue.entry_of(55) is None
    assert later.entry_of(55) is not None
    del later, carried
    gc.collect()
    assert all(ref() is None for ref in joined)
    assert all(ref() is not None for ref in watched)


def _calls_of(make: Callable[[], object]) -> int:
    """The Python and C function calls ``make()`` makes (deterministic, no clock)."""
    counted = [0]

    def count(_frame: FrameType, event: str, _arg: object) -> None:
        if event in ("call", "c_call"):
            counted[0] += 1

    previous = sys.getprofile()
    sys.setprofile(count)
    try:
        make()
    finally:
        sys.setprofile(previous)
    return counted[0]


def _most_calls_of_a_branch(policy: QueuePolicy, size: int) -> int:
    """The most calls one version made from a version of ``size`` entries costs, once
    that version handed its identity index on and made its own dict."""
    attributes = {"priority": 1, "arrival_time": 0.0, "prompt": 1, "immediate": False}
    requests = [(i, attributes, i, float(i)) for i in range(size)]
    queue = WaitingQueue().extend(policy, requests).unwrap()
    queue.append(policy, -1, attributes, serial=-1, now=0.0).unwrap()  # hands the index on
    first = queue.entry_of(0)  # and a look-up: its own dict, made once
    assert first is not None
    return max(
        _calls_of(lambda: queue.append(policy, -2, attributes, serial=-2, now=0.0)),
        _calls_of(lambda: queue.without(first)),
        _calls_of(lambda: queue.extend(policy, [(-3, attributes, -3, 0.0)])),
    )


@pytest.mark.parametrize("policy_name", sorted(ONE_POLICY_PER_PATH))
def test_versions_made_again_and_again_from_one_version_copy_nothing(policy_name: str) -> None:
    """A host trying alternatives makes many versions from one: each costs no copy of
    the N entries, the same work at N and at 16 N."""
    policy = ONE_POLICY_PER_PATH[policy_name]
    small, large = (_most_calls_of_a_branch(policy, size) for size in (500, 8_000))
    assert large <= 1.7 * small + 50, (small, large)


def test_a_version_made_while_another_is_being_made_from_it_is_its_own() -> None:
    """Two threads making versions from one version at once, made deterministic: the
    first has claimed the identity index (the private step the race interleaves)
    when the second appends; the second must not share what the first changes."""
    policy = fifo()
    queue = WaitingQueue().extend(policy, [(i, {}, i, 0.0) for i in range(3)]).unwrap()
    ids, _ = queue._claimed()  # internal: the first thread, between claim and update
    later = queue.append(policy, 9, {}, serial=9, now=0.0).unwrap()
    ids.entries.pop(0)  # the first thread's update: its entry 0 leaves
    assert later.entry_of(0) is not None
    assert later.entry_of(9) is not None
    assert queue.entry_of(0) is not None
    assert queue.entry_of(9) is None


# --- found by mutation testing (docs/mutation.md)
# The waiting queue and selection: rules mutation testing found unasserted (docs/mutation.md).
#
# From docs/waiting.md: the queue refuses what it cannot order, with a QueueError naming the
# request; booleans stay booleans and ``serial`` is kept as given; under enqueue timing the keys
# stored by the policy that queued an entry are used, and an entry without stored keys gets them
# computed as at enqueue (``now = enqueued_at``, ``waited = 0``).


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


# --- found by hardening (issue 9)


def _queue() -> WaitingQueue:
    return WaitingQueue().append(fifo(), "a", {"n": 1}, serial=0, now=0.0).unwrap()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"policy": None},
            "request 'b': the policy must be a QueuePolicy (from make_policy or load_policy),"
            " not None",
        ),
        ({"identity": ["b"]}, "request ['b']: an identity must be hashable and equal to itself"),
        ({"identity": math.nan}, "request nan: an identity must be hashable and equal to itself"),
        ({"attributes": {5: 1}}, "request 'b': an attribute name must be text, not 5"),
        ({"attributes": {"n": "1"}}, "request 'b': attribute 'n' must be a number or a boolean"),
        ({"ever_fits": 3}, "request 'b': ever_fits must be a function or None, not 3"),
        ({"now": "0"}, "request 'b': now must be a number, not '0'"),
    ],
)
def test_the_queue_refuses_a_wrong_type_with_a_queue_error(
    arguments: dict[str, object], message: str
) -> None:
    given: dict[str, object] = {
        "policy": fifo(),
        "identity": "b",
        "attributes": {"n": 1},
        "serial": 1,
        "now": 1.0,
    }
    given.update(arguments)
    policy, identity = given.pop("policy"), given.pop("identity")
    attributes = given.pop("attributes")
    for operation in (_queue().append, _queue().requeue_preempted):
        refused = operation(policy, identity, attributes, **given)  # type: ignore[arg-type]
        assert isinstance(refused, Failure)
        assert isinstance(refused.failure(), QueueError)
        # the whole message, the request named (found by mutmut: it could be lost)
        assert str(refused.failure()) == message


def test_an_attribute_named_by_a_subclass_of_str_is_named_by_text() -> None:
    class Name(str):
        __slots__ = ()

    reads_prompt = make_policy(["prompt"], attributes=["prompt"]).unwrap()
    made = WaitingQueue().append(reads_prompt, "a", {Name("prompt"): 2}, serial=0, now=0.0)
    attributes = made.unwrap().first().attributes
    assert dict(attributes) == {"prompt": 2.0}
    assert [type(name) for name in attributes] == [str]  # the policy's own name


def test_an_entry_given_twice_or_gone_is_a_key_error_of_its_ticket() -> None:
    # found by mutmut: no test read which entry a KeyError named
    queue = WaitingQueue().extend(fifo(), [("a", {}, 0, 0.0), ("b", {}, 1, 0.0)]).unwrap()
    first = queue.first()
    gone = queue.without(first)
    refusals: list[Callable[[], object]] = [
        lambda: queue.without_each([first, first]),
        lambda: gone.without(first),
        lambda: gone.without_each([first]),
    ]
    for refused in refusals:
        with pytest.raises(KeyError) as raised:
            refused()
        assert raised.value.args == (first.ticket,)


def test_removing_an_unhashable_identity_says_so() -> None:
    assert _queue().remove(["a"]).failure().message == (  # type: ignore[arg-type]
        "an identity must be hashable and equal to itself"
    )
    # and names it (found by mutmut: the refusal could have lost it)
    assert str(_queue().remove(math.nan).failure()) == (  # type: ignore[arg-type]
        "request nan: an identity must be hashable and equal to itself"
    )
