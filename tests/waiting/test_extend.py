"""``WaitingQueue.extend`` is repeated ``append``: the same queue, the same refusals.

Random batches under every selection path, onto empty and non-empty queues
(after admissions and requeues, so slots past the live part are reused), are
compared with one ``append`` per request: entries, selection and dispatch
order. A refused batch changes nothing and gives append's first refusal.
"""

from __future__ import annotations

import random
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import pytest
from returns.result import Failure

from policy.waiting import (
    Moment,
    QueuePolicy,
    WaitingQueue,
    dispatch_order,
    fifo,
    make_policy,
    same_entry,
    select_waiting,
)
from tests.waiting.one_per_path import ONE_POLICY_PER_PATH

POLICIES = ONE_POLICY_PER_PATH

_MOMENT = Moment(50.0)


def _attributes(draw: random.Random, at: float) -> dict[str, Any]:
    return {
        "priority": draw.randrange(4),
        "arrival_time": at,
        "prompt": draw.randrange(1, 200),
        "immediate": draw.random() < 0.1,
    }


def _snapshot(queue: WaitingQueue, policy: QueuePolicy) -> tuple[object, ...]:
    return (
        [(e.identity, e.serial, e.enqueued_at, e.resumed, dict(e.attributes)) for e in queue],
        select_waiting(queue, policy, _MOMENT).map(lambda s: s.entry.identity),
        [s.entry.identity for s in dispatch_order(queue, policy, _MOMENT)],
    )


def _extended_as_appended(
    queue: WaitingQueue, policy: QueuePolicy, batch: list[Any]
) -> WaitingQueue:
    """``queue`` extended by ``batch``, checked against one ``append`` per request."""
    one_by_one = queue
    for identity, attributes, serial, now in batch:
        one_by_one = one_by_one.append(
            policy, identity, attributes, serial=serial, now=now
        ).unwrap()
    extended = queue.extend(policy, batch).unwrap()
    assert _snapshot(extended, policy) == _snapshot(one_by_one, policy)
    return extended


@pytest.mark.parametrize("name", sorted(POLICIES))
@pytest.mark.parametrize("seed", range(4))
def test_extend_is_repeated_append(name: str, seed: int) -> None:
    policy, draw = POLICIES[name], random.Random(seed)
    queue, serial, clock = WaitingQueue(), 0, 0.0
    for _ in range(12):
        if len(queue) and draw.random() < 0.4:  # admissions and a requeue between batches
            for _ in range(draw.randrange(1, 4)):
                if len(queue):
                    queue = queue.without(select_waiting(queue, policy, _MOMENT).unwrap().entry)
            queue = queue.requeue_preempted(
                policy, f"r{serial}", _attributes(draw, clock), serial=serial, now=clock
            ).unwrap()
            serial += 1
        batch = []
        for _ in range(draw.randrange(0, 9)):
            clock += draw.choice((0.5, 1.0, 0.0))
            batch.append((f"r{serial}", _attributes(draw, clock), serial, clock))
            serial += 1
        queue = _extended_as_appended(queue, policy, batch)


@pytest.mark.parametrize(
    ("batch", "message"),
    [
        (
            [("a", {}, 0, 0.0), ("b", {}, 1, "soon")],
            "request 'b': now must be a number, not 'soon'",
        ),
        ([("a", {}, 0, 0.0), ("a", {}, 1, 0.0)], "request 'a': is already waiting"),
        ([("w", {}, 0, 0.0)], "request 'w': is already waiting"),
        ([("a", {}, 0, 0.0), ["b", {}, 1, 0.0]], "is not a request"),
        ([("a", {}, 0)], "is not a request"),
        # requests the checked path takes (not a dict, a float serial), then a refusal
        (
            [("a", MappingProxyType({}), 0, 0.0), ("b", {}, 1.0, 0.0), ("w", {}, 2, 0.0)],
            "request 'w': is already waiting",
        ),
        (
            [("a", {}, 0, 0.0), ("b", {}, 1, 0.0), ("w", MappingProxyType({}), 2, 0.0)],
            "request 'w': is already waiting",
        ),
    ],
)
def test_a_refused_batch_changes_nothing(batch: list[Any], message: str) -> None:
    """Nothing of a refused batch stays: not in the queue, nor in what it answers
    by identity (a request of the batch is not waiting, joins and is refused
    removal as one that never came)."""
    policy = fifo()  # one object: the queue keeps its identity index for it
    queue = WaitingQueue().append(policy, "w", {}, serial=9, now=0.0).unwrap()
    refused = queue.extend(policy, batch)
    assert message in str(refused.failure())
    assert [entry.identity for entry in queue] == ["w"]
    for identity in ("a", "b"):
        assert queue.entry_of(identity) is None
        assert str(queue.remove(identity).failure()) == f"request '{identity}': is not waiting"
        joined = queue.append(policy, identity, {}, serial=10, now=0.0).unwrap()
        assert [entry.identity for entry in joined] == ["w", identity]


def test_not_an_iterable_is_refused() -> None:
    assert "is not an iterable of requests" in str(WaitingQueue().extend(fifo(), 5).failure())  # type: ignore[arg-type]


def _one_by_one(queue: WaitingQueue, policy: QueuePolicy, batch: list[Any]) -> WaitingQueue | str:
    """The queue one ``append`` per request gives, or the first refusal's text."""
    for identity, attributes, serial, now in batch:
        made = queue.append(policy, identity, attributes, serial=serial, now=now)
        if not isinstance(made.value_or(None), WaitingQueue):
            return str(made.failure())
        queue = made.unwrap()
    return queue


@pytest.mark.parametrize("seed", range(6))
def test_a_batch_out_of_key_order_joins_as_appends_do(seed: int) -> None:
    # Arrivals of one priority class out of time order, in a batch and after it:
    # the static path keeps those apart from the class's in-order run.
    policy, draw = POLICIES["static"], random.Random(seed)
    queue, serial = WaitingQueue(), 0
    for _ in range(5):
        batch = []
        for _ in range(draw.randrange(1, 8)):
            attributes = {"priority": draw.randrange(2), "arrival_time": draw.uniform(0.0, 9.0)}
            batch.append((f"r{serial}", attributes, serial, 0.0))
            serial += 1
        queue = _extended_as_appended(queue, policy, batch)


@pytest.mark.parametrize("name", sorted(POLICIES))
@pytest.mark.parametrize("seed", range(6))
def test_extend_refuses_as_repeated_append_with_ids_used_again(name: str, seed: int) -> None:
    """Ids that wait, ids that left (still in the identity map until its sweep), ids
    twice in one batch and bad values, in random batches: extend refuses the first
    request one append per request refuses, and otherwise gives the same queue
    (duplicates are found by the identity map's size after the update)."""
    policy, draw = POLICIES[name], random.Random(seed)
    queue, serial, clock = WaitingQueue(), 0, 0.0
    used: list[str] = []
    for _ in range(40):
        if len(queue) and draw.random() < 0.5:
            for _ in range(draw.randrange(1, 5)):
                if len(queue):
                    queue = queue.without(select_waiting(queue, policy, _MOMENT).unwrap().entry)
        batch: list[Any] = []
        for _ in range(draw.randrange(0, 7)):
            clock += draw.choice((0.5, 1.0, 0.0))
            roll = draw.random()
            if used and roll < 0.3:
                identity = draw.choice(used)  # waiting now, or left before
            elif batch and roll < 0.35:
                identity = batch[draw.randrange(len(batch))][0]  # twice in this batch
            else:
                identity = f"r{serial}"
                used.append(identity)
            attributes = _attributes(draw, clock)
            if draw.random() < 0.05:
                attributes["prompt"] = "long"  # refused: not a number
            batch.append((identity, attributes, serial, clock))
            serial += 1
        expected = _one_by_one(queue, policy, batch)
        extended = queue.extend(policy, batch)
        if isinstance(expected, str):
            assert str(extended.failure()) == expected
            continue
        assert _snapshot(extended.unwrap(), policy) == _snapshot(expected, policy)
        queue = extended.unwrap()
        for entry in queue:  # every id maps to the entry that waits
            found = queue.entry_of(entry.identity)
            assert found is not None
            assert same_entry(found, entry)


def test_an_id_that_left_joins_again_in_a_batch() -> None:
    """An entry that left stays in the identity map until a sweep: a batch with its
    id again is taken, and the id then names the new entry."""
    policy = fifo()
    queue = WaitingQueue().extend(policy, [("a", {}, 0, 0.0), ("b", {}, 1, 0.0)]).unwrap()
    left = queue.without(queue.entry_of("a"))  # type: ignore[arg-type]
    again = left.extend(policy, [("c", {}, 2, 1.0), ("a", {}, 3, 1.0)]).unwrap()
    assert [entry.identity for entry in again] == ["b", "c", "a"]
    found = again.entry_of("a")
    assert found is not None
    assert same_entry(found, list(again)[-1])
    assert [entry.identity for entry in again.remove("a").unwrap()] == ["b", "c"]


@pytest.mark.parametrize(
    ("batch", "message"),
    [
        (  # twice in the batch, then a bad value: the repeated id is refused first
            [("a", {}, 0, 0.0), ("a", {}, 1, 0.0), ("b", {}, 2, "soon")],
            "request 'a': is already waiting",
        ),
        (  # waiting already, then an item that is not a request
            [("c", {}, 0, 0.0), ("w", {}, 1, 0.0), ("d", {}, 2)],
            "request 'w': is already waiting",
        ),
        (  # a bad value before the repeated id: the bad value first
            [("a", {}, 0, "soon"), ("w", {}, 1, 0.0)],
            "request 'a': now must be a number, not 'soon'",
        ),
    ],
)
def test_the_first_refusal_of_a_batch_is_given(batch: list[Any], message: str) -> None:
    queue = WaitingQueue().append(fifo(), "w", {}, serial=9, now=0.0).unwrap()
    assert str(queue.extend(fifo(), batch).failure()) == message


def test_extend_refuses_a_policy_and_a_request_append_refuses() -> None:
    """The checked path, for what the usual request's fast path does not take: a
    policy that is not a QueuePolicy, a request lacking an attribute the keys
    read; and a request given without ``carried`` carries None."""
    refused = WaitingQueue().extend("fifo", [("a", {}, 0, 0.0)])  # type: ignore[arg-type]
    assert str(refused.failure()) == (
        "request 'a': the policy must be a QueuePolicy (from make_policy or load_policy),"
        " not 'fifo'"
    )
    policy = POLICIES["static"]
    lacking = WaitingQueue().extend(policy, [("a", {"priority": 1}, 0, 0.0)])
    expected = WaitingQueue().append(policy, "a", {"priority": 1}, serial=0, now=0.0)
    assert str(lacking.failure()) == str(expected.failure())
    assert "lacks attribute" in str(lacking.failure())
    queue = WaitingQueue().extend(fifo(), [("a", {}, 0, 0.0), ("b", {}, 1, 0.0, "req")])
    assert [entry.carried for entry in queue.unwrap()] == [None, "req"]


@pytest.mark.parametrize(
    "request_parts",
    [
        ([1], {}, 0, 0.0),  # an id that is not hashable
        (float("nan"), {}, 0, 0.0),  # an id not equal to itself
        ("a", [], 0, 0.0),  # attributes that are not a mapping
        ("a", {}, "first", 0.0),  # a serial that is not a number
        ("a", {}, 0, "now"),  # a now that is not a number
    ],
    ids=["unhashable id", "NaN id", "attributes list", "serial text", "now text"],
)
@pytest.mark.parametrize("name", sorted(POLICIES))
def test_a_request_append_refuses_is_refused_in_a_batch(
    name: str, request_parts: tuple[Any, ...]
) -> None:
    """Every request the usual request's fast path must not take is refused as
    append refuses it, behind a usual request."""
    policy = POLICIES[name]
    identity, attributes, serial, now = request_parts
    if attributes == {} and policy.attributes_read:
        attributes = dict.fromkeys(policy.attributes_read, 1.0)
    expected = WaitingQueue().append(policy, identity, attributes, serial=serial, now=now)
    usual = ("u", dict.fromkeys(policy.attributes_read, 1.0), 0, 0.0)
    refused = WaitingQueue().extend(policy, [usual, (identity, attributes, serial, now)])
    assert str(refused.failure()) == str(expected.failure())


@pytest.mark.parametrize(
    "value",
    ["3", None, [1.0], True, 2**53, 2**53 + 1, -(2**60), 10**400, Fraction(1, 3)],
    ids=["text", "None", "list", "bool", "2**53", "2**53+1", "-2**60", "10**400", "fraction"],
)
@pytest.mark.parametrize("name", sorted(name for name, p in POLICIES.items() if p.attributes_read))
def test_an_attribute_value_is_refused_or_converted_in_a_batch_as_append_does(
    name: str, value: object
) -> None:
    # found by mutmut: with the usual request's check of an integer's range made an
    # "or", a text or None attribute raised TypeError from extend, and no test saw it
    policy = POLICIES[name]
    attributes: Any = dict.fromkeys(policy.attributes_read, value)
    expected = WaitingQueue().append(policy, "a", attributes, serial=1, now=0.0)
    usual = ("u", dict.fromkeys(policy.attributes_read, 1.0), 0, 0.0)
    made = WaitingQueue().extend(policy, [usual, ("a", attributes, 1, 0.0)])
    if isinstance(expected, Failure):
        assert str(made.failure()) == str(expected.failure())
    else:
        (appended,) = _entries(expected.unwrap())
        assert _entries(made.unwrap())[1][:-2] == appended[:-2]  # all but ticket and carried


def _entries(queue: WaitingQueue) -> list[tuple[object, ...]]:
    return [
        (
            e.identity,
            dict(e.attributes),
            e.serial,
            e.enqueued_at,
            e.resumed,
            e.enqueue_keys,
            e.ticket,
            e.carried,
        )
        for e in queue
    ]


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_requests_the_checked_path_takes_join_as_appends_do(name: str) -> None:
    """Requests that are not the usual one (attributes in another mapping, a float
    serial, an int now) take append's checked path inside a batch: the same
    entries, field by field (not resumed, their tickets, what they carry)."""
    policy = POLICIES[name]
    draw = random.Random(7)
    batch: list[Any] = []
    for serial in range(6):
        attributes: Any = _attributes(draw, float(serial))
        at_serial: Any = serial
        now: Any = float(serial)
        if serial % 3 == 0:
            attributes = MappingProxyType(attributes)
        elif serial % 3 == 1:
            at_serial = float(serial)
        else:
            now = serial
        batch.append((f"r{serial}", attributes, at_serial, now, f"carried {serial}"))
    waiting = _attributes(draw, 0.0)
    one_by_one = WaitingQueue().append(policy, "w", waiting, serial=99, now=0.0).unwrap()
    base = one_by_one
    for identity, attributes, at_serial, now, carried in batch:
        one_by_one = one_by_one.append(
            policy, identity, attributes, serial=at_serial, now=now, carried=carried
        ).unwrap()
    extended = base.extend(policy, batch).unwrap()
    assert _entries(extended) == _entries(one_by_one)
    assert _snapshot(extended, policy) == _snapshot(one_by_one, policy)


def test_keys_at_enqueue_read_the_batch_requests_serial_and_now() -> None:
    policy = make_policy(["now - serial", "prompt"], attributes=["prompt"], timing="enqueue")
    rules = policy.unwrap()
    batch = [(f"r{k}", {"prompt": 10 - k}, k * 3, float(k * k)) for k in range(5)]
    one_by_one = WaitingQueue()
    for identity, attributes, serial, now in batch:
        one_by_one = one_by_one.append(rules, identity, attributes, serial=serial, now=now).unwrap()
    extended = WaitingQueue().extend(rules, batch).unwrap()
    assert _entries(extended) == _entries(one_by_one)
    assert [e.enqueue_keys for e in extended] == [
        (float(k * k - k * 3), float(10 - k)) for k in range(5)
    ]


def test_a_request_without_the_attributes_the_keys_read_is_refused_in_a_batch() -> None:
    policy = POLICIES["static"]
    expected = WaitingQueue().append(policy, "a", {}, serial=0, now=0.0)
    refused = WaitingQueue().extend(policy, [("a", {}, 0, 0.0)])
    assert str(refused.failure()) == str(expected.failure())
    assert "lacks attribute" in str(refused.failure())


def test_a_policy_that_is_not_one_is_refused_before_a_waiting_id() -> None:
    queue = WaitingQueue().append(fifo(), "w", {}, serial=0, now=0.0).unwrap()
    refused = queue.extend("fifo", [("w", {}, 1, 0.0)])  # type: ignore[arg-type]
    assert "the policy must be a QueuePolicy" in str(refused.failure())


# --- found by mutation testing of queue.py (docs/mutation.md): not only the same
# entries but the same version, so that the policy's fast path stays in use


def _state(queue: WaitingQueue, policy: QueuePolicy) -> dict[str, object]:
    """What a version shows: its entries as stored, and the index it holds for
    ``policy`` (a lanes index that lost its time order selects by scanning)."""
    index = queue.index_for(policy)
    return {
        "entries": [
            (e.identity, e.ticket, e.resumed, e.names, e.values, e.enqueued_at, e.enqueue_keys)
            for e in queue
        ],
        "index": type(index).__name__,
        "in time order": getattr(index, "in_time_order", None),
        "dispatch": [(s.entry.identity, s.keys) for s in dispatch_order(queue, policy, _MOMENT)],
    }


def _gaps_request(
    draw: random.Random, serial: int, at: float
) -> tuple[Any, dict[str, Any], int, float]:
    attributes = {
        "priority": draw.randrange(3),
        "arrival_time": at,
        "prompt": draw.randrange(1, 300),
        "immediate": draw.random() < 0.2,
    }
    return serial, attributes, serial, at


def _appended(policy: QueuePolicy, queue: WaitingQueue, batch: list[Any]) -> WaitingQueue:
    for identity, attributes, serial, now in batch:
        queue = queue.append(policy, identity, attributes, serial=serial, now=now).unwrap()
    return queue


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_extend_gives_the_version_repeated_appends_give(name: str) -> None:
    policy = POLICIES[name]
    for seed in range(4):
        draw = random.Random(seed)
        start = [_gaps_request(draw, serial, float(serial)) for serial in range(5)]
        base = WaitingQueue().extend(policy, start).unwrap()
        if seed % 2:  # a resumed front, and an admission: the batch follows either
            base = base.requeue_preempted(
                policy, "resumed", start[0][1], serial=50, now=5.0
            ).unwrap()
            base = base.without(base.entry_of(2))  # type: ignore[arg-type]
        batch = [_gaps_request(draw, serial, 5.0 + serial) for serial in range(5, 12)]
        extended = base.extend(policy, batch).unwrap()
        assert _state(extended, policy) == _state(_appended(policy, base, batch), policy)
        after = [_gaps_request(draw, 12, 30.0)]
        assert _state(_appended(policy, extended, after), policy) == _state(
            _appended(policy, base, batch + after), policy
        )


@pytest.mark.parametrize("name", ["static", "lanes", "scan"])
def test_extend_under_another_policy_lays_out_as_append_does(name: str) -> None:
    draw = random.Random(11)
    start = [_gaps_request(draw, s, float(s)) for s in range(4)]
    base = WaitingQueue().extend(fifo(), start).unwrap()
    batch = [_gaps_request(draw, s, float(s)) for s in range(4, 9)]
    policy = POLICIES[name]
    extended = base.extend(policy, batch).unwrap()
    assert _state(extended, policy) == _state(_appended(policy, base, batch), policy)


def test_a_batch_that_could_never_fit_is_refused() -> None:
    draw = random.Random(5)
    batch = [_gaps_request(draw, s, float(s)) for s in range(3)]
    refused = WaitingQueue().extend(fifo(), batch, ever_fits=lambda entry: entry.identity != 1)
    assert isinstance(refused, Failure)
    assert refused.failure().identity == 1
    assert refused.failure().message.startswith("could never fit, even in an empty pool")


def test_without_names_what_is_not_an_entry() -> None:
    with pytest.raises(TypeError) as raised:
        WaitingQueue().without("a")  # type: ignore[arg-type]
    assert str(raised.value) == "entry must be a WaitingEntry, not str"


def test_a_batch_under_lanes_keeps_the_time_ordered_fast_path() -> None:
    policy = POLICIES["lanes"]
    draw = random.Random(3)
    queue = WaitingQueue().extend(policy, [_gaps_request(draw, s, float(s)) for s in range(4)])
    queue = queue.unwrap().extend(policy, [_gaps_request(draw, s, float(s)) for s in range(4, 9)])
    assert getattr(queue.unwrap().index_for(policy), "in_time_order", None) is True


def test_a_refused_batch_names_what_it_refuses() -> None:
    policy = POLICIES["fifo"]
    refused = WaitingQueue().extend(policy, 7)  # type: ignore[arg-type]
    assert isinstance(refused, Failure)
    assert refused.failure().identity == 7
    item: tuple[object, ...] = ("a", {}, 0)
    refused = WaitingQueue().extend(policy, [("b", {}, 0, 0.0), item])  # type: ignore[list-item]
    assert isinstance(refused, Failure)
    assert refused.failure().identity == item
    assert refused.failure().message.startswith("is not a request")
