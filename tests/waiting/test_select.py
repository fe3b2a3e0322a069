"""select_waiting against a naive reference, and one admission attempt."""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import assume, event, example, given
from hypothesis import strategies as st
from returns.maybe import Maybe, Nothing
from returns.result import Success

from oracle.strategies import ATTRIBUTES, AWKWARD, CONSTANTS, STAGES, trees
from policy.waiting import (
    Admitted,
    Attr,
    Blocked,
    Expr,
    Moment,
    QueueEmpty,
    QueuePolicy,
    RequestId,
    Scope,
    Selection,
    Timing,
    WaitingEntry,
    WaitingQueue,
    admit_many,
    ascend_fcfs_lanes,
    attempt_admission,
    dispatch_order,
    evaluate,
    fifo,
    load_policy,
    make_entry,
    make_policy,
    same_entry,
    select_reference,
    select_waiting,
    static_priority,
)
from policy.waiting.evaluate import NO_BUDGETS
from policy.waiting.reference import entry_keys, keys_at_enqueue
from tests.waiting.one_per_path import ONE_POLICY_PER_PATH


def queue_of(
    policy: QueuePolicy, requests: Sequence[tuple[int, dict[str, float], float]]
) -> WaitingQueue:
    queue = WaitingQueue()
    for identity, attributes, now in requests:
        queue = queue.append(policy, identity, attributes, serial=identity, now=now).unwrap()
    return queue


def selected(
    queue: WaitingQueue, policy: QueuePolicy, now: float, **budget: float
) -> Maybe[RequestId]:
    return select_waiting(queue, policy, Moment(now, budget)).map(lambda s: s.entry.identity)


# --- the naive reference: evaluate everything, sort the whole queue ---------------------------


def reference_compare(a: float, b: float) -> int:
    """The total order of waiting.md, written out case by case."""
    a_nan, b_nan = math.isnan(a), math.isnan(b)
    if a_nan or b_nan:
        return int(a_nan) - int(b_nan)  # NaN after everything, NaNs equal
    return (a > b) - (a < b)  # -0.0 == 0.0 here already


def reference_select(
    queue: WaitingQueue, policy: QueuePolicy, moment: Moment
) -> tuple[int, tuple[float, ...]] | None:
    entries = list(queue)
    if not entries:
        return None
    if entries[0].resumed or not policy.keys:
        return (0, ())

    def keys(entry: WaitingEntry) -> tuple[float, ...]:
        at_enqueue = policy.timing == "enqueue"
        now = entry.enqueued_at if at_enqueue else moment.now
        scope = Scope(
            entry.attributes,
            entry.serial,
            now=now,
            waited=now - entry.enqueued_at,
            budget_left={} if at_enqueue else moment.budget_left,
            constants=policy.constants,
        )
        return tuple(evaluate(key, scope) for key in policy.keys)

    def compare(x: tuple[int, tuple[float, ...]], y: tuple[int, tuple[float, ...]]) -> int:
        for a, b in zip(x[1], y[1], strict=True):
            if verdict := reference_compare(a, b):
                return verdict
        return x[0] - y[0]

    ranked = sorted(
        ((index, keys(entry)) for index, entry in enumerate(entries)),
        key=functools.cmp_to_key(compare),
    )
    return ranked[0]


def same_values(a: Sequence[float], b: Sequence[float]) -> bool:
    return len(a) == len(b) and all(
        (math.isnan(x) and math.isnan(y)) or (x == y and math.copysign(1, x) == math.copysign(1, y))
        for x, y in zip(a, b, strict=True)
    )


values = st.sampled_from(AWKWARD)  # few distinct values: many ties


@dataclass(frozen=True)
class Case:
    policy: QueuePolicy
    queue: WaitingQueue
    moment: Moment


@st.composite
def cases(draw: st.DrawFn) -> Case:
    plain_keys = st.sampled_from([Attr(name) for name in ATTRIBUTES])
    fifo_policy = draw(st.integers(0, 9)) == 0
    keys: list[Expr] | None = (
        None if fifo_policy else draw(st.lists(trees | plain_keys, min_size=1, max_size=3))
    )
    timing: Timing = draw(st.sampled_from(["selection", "enqueue"]))
    made = make_policy(
        keys,
        constants={name: draw(st.sampled_from([-0.0, 0.0, 1.0, 3.0])) for name in CONSTANTS},
        attributes=dict.fromkeys(ATTRIBUTES, "visible"),
        timing=timing,
    )
    assume(isinstance(made, Success))
    policy = made.unwrap()
    queue = WaitingQueue()
    preemptions = draw(st.booleans())  # a resumed front settles everything: keep it rarer
    for identity in range(draw(st.integers(0, 8))):
        attributes = {name: draw(values) for name in ATTRIBUTES}
        now = draw(st.sampled_from([0.0, 1.0, 2.5, 3.0]))
        if preemptions and draw(st.integers(0, 4)) == 0:
            queue = queue.requeue_preempted(
                policy, identity, attributes, serial=identity, now=now
            ).unwrap()
        else:
            queue = queue.append(policy, identity, attributes, serial=identity, now=now).unwrap()
    budget = {name: draw(values) for name in STAGES if draw(st.booleans())}
    return Case(policy, queue, Moment(draw(st.sampled_from([3.0, 5.0, math.inf])), budget))


@given(cases())
def test_select_waiting_agrees_with_sorting_the_whole_queue(case: Case) -> None:
    expected = reference_select(case.queue, case.policy, case.moment)
    event("keys compared" if expected and expected[1] else "front taken or empty")
    got = select_waiting(case.queue, case.policy, case.moment)
    if expected is None:
        assert got == Nothing
        return
    selection = got.unwrap()
    assert selection.index == expected[0]
    assert same_entry(selection.entry, case.queue.entries[expected[0]])
    assert same_values(selection.keys, expected[1])


@given(cases())
def test_selecting_changes_nothing(case: Case) -> None:
    before = list(case.queue)
    first = select_waiting(case.queue, case.policy, case.moment).map(lambda s: s.index)
    assert list(case.queue) == before
    assert select_waiting(case.queue, case.policy, case.moment).map(lambda s: s.index) == first


# --- the rules of waiting.md, one by one -----------------------------------------------------

LANES = ascend_fcfs_lanes(short_tokens=128, max_wait=3)


def test_empty_queue_selects_nothing() -> None:
    assert select_waiting(WaitingQueue(), LANES, Moment(0.0)) == Nothing
    assert attempt_admission(WaitingQueue(), LANES, Moment(0.0), capacity_1(0)) == QueueEmpty()


def test_a_resumed_front_wins_whatever_the_keys_say() -> None:
    queue = queue_of(LANES, [(1, {"prompt": 64, "immediate": True}, 0.0)])
    queue = queue.requeue_preempted(
        LANES, 2, {"prompt": 999, "immediate": False}, serial=2, now=1.0
    ).unwrap()
    selection = select_waiting(queue, LANES, Moment(9.0)).unwrap()
    assert (selection.index, selection.entry.identity, selection.keys) == (0, 2, ())


def test_fifo_selects_the_front_without_keys() -> None:
    queue = queue_of(fifo(), [(5, {}, 3.0), (4, {}, 1.0)])
    selection = select_waiting(queue, fifo(), Moment(9.0)).unwrap()
    assert (selection.index, selection.entry.identity, selection.keys) == (0, 5, ())


def test_equal_keys_keep_enqueue_order() -> None:
    policy = make_policy(["0", "serial == 2 ? 0 : 1"]).unwrap()
    queue = queue_of(policy, [(1, {}, 0.0), (2, {}, 0.0), (3, {}, 0.0)])
    order = []
    while len(queue):
        selection = select_waiting(queue, policy, Moment(0.0)).unwrap()
        order.append(selection.entry.identity)
        queue = queue.without_index(selection.index)
    assert order == [2, 1, 3]


def test_nan_keys_rank_after_infinity_and_signed_zeros_tie() -> None:
    policy = make_policy(["a"], attributes=["a"]).unwrap()
    queue = queue_of(policy, [(1, {"a": math.nan}, 0.0), (2, {"a": math.inf}, 0.0)])
    assert selected(queue, policy, 0.0).unwrap() == 2
    queue = queue_of(policy, [(1, {"a": 0.0}, 0.0), (2, {"a": -0.0}, 0.0)])
    assert selected(queue, policy, 0.0).unwrap() == 1


AGING: dict[int, dict[str, float]] = {
    1: {"prompt": 256, "immediate": False},
    2: {"prompt": 64, "immediate": False},
    3: {"prompt": 64, "immediate": False},
    5: {"prompt": 256, "immediate": False},
}
ENQUEUED = {1: 0.0, 2: 1.0, 3: 2.0, 5: 3.0}


def aging_queue(policy: QueuePolicy, waiting: Sequence[int]) -> WaitingQueue:
    """The requests of the aging regression; ``queued`` is each one's enqueue time."""
    return queue_of(policy, [(i, AGING[i] | {"queued": ENQUEUED[i]}, ENQUEUED[i]) for i in waiting])


def test_aging_at_the_key_moments_with_selection_timing() -> None:
    # t=5: long 1 has waited 5 (class 1); long 5 only 2 (class 3); shorts are class 2
    queue = aging_queue(LANES, [1, 2, 3, 5])
    selection = select_waiting(queue, LANES, Moment(5.0)).unwrap()
    assert (selection.entry.identity, selection.keys) == (1, (1.0,))
    # t=6: long 5 has waited 3: aged, it beats the shorts
    selection = select_waiting(aging_queue(LANES, [2, 3, 5]), LANES, Moment(6.0)).unwrap()
    assert (selection.entry.identity, selection.keys) == (5, (1.0,))
    # a moment earlier long 5 is not aged yet
    assert selected(aging_queue(LANES, [2, 3, 5]), LANES, 5.999).unwrap() == 2


#: waiting.md's aging rule as the older engine wrote it: ``waited`` is refused under
#: enqueue timing, so the key reads ``now - queued``, ``queued`` being the enqueue time
#: (oracle/golden/admission/aging-enqueue.json). Its value depends on *when* it is
#: computed: at enqueue ``now == queued`` and the term is false; at a later
#: selection it holds once the request has waited 3.
AGING_BY_QUEUED = (
    "immediate ? 0 : prompt > short_tokens && now - queued >= 3 ? 1"
    " : prompt <= short_tokens ? 2 : 3"
)


def aging_by_queued(timing: Timing) -> QueuePolicy:
    return load_policy(
        {
            "let": {"short_tokens": 128},
            "attributes": {"prompt": "visible", "immediate": "visible", "queued": "visible"},
            "keys": [AGING_BY_QUEUED],
            "timing": timing,
        }
    ).unwrap()


def test_aging_never_happens_with_keys_fixed_at_enqueue() -> None:
    frozen = aging_by_queued("enqueue")
    # keys computed at enqueue: the longs stay class 3 for ever, the shorts win
    assert selected(aging_queue(frozen, [1, 2, 3, 5]), frozen, 5.0).unwrap() == 2
    assert selected(aging_queue(frozen, [1, 3, 5]), frozen, 100.0).unwrap() == 3
    # the same key computed at selection ages long 1: the timing is what makes the difference
    live = aging_by_queued("selection")
    assert selected(aging_queue(live, [1, 2, 3, 5]), live, 5.0).unwrap() == 1
    assert selected(aging_queue(live, [1, 3, 5]), live, 100.0).unwrap() == 1


def capacity_1(used: int) -> Callable[[WaitingEntry], bool]:
    """The fit test of a capacity-1 pool where every request takes one unit."""

    def fits(entry: WaitingEntry) -> bool:
        del entry  # every request takes one unit
        return used + 1 <= 1

    return fits


def simulate_pool(policy: QueuePolicy) -> tuple[list[int], list[float]]:
    """waiting.md's aging regression on a capacity-1 pool (event driven)."""
    requests = [  # id, enqueue, hold, prompt, immediate
        (0, 0.0, 4.0, 64, False),
        (1, 0.0, 1.0, 256, False),
        (2, 1.0, 1.0, 64, False),
        (3, 2.0, 1.0, 64, False),
        (4, 3.0, 1.0, 64, True),
        (5, 3.0, 1.0, 256, False),
    ]
    queue = WaitingQueue()
    used = 0
    releases: list[float] = []
    order: list[int] = []
    times: list[float] = []
    pending = list(requests)
    while pending or releases or len(queue):
        now = min([r[1] for r in pending] + releases)
        used -= len([t for t in releases if t == now])
        releases = [t for t in releases if t != now]
        for identity, _, _, prompt, immediate in [r for r in pending if r[1] == now]:
            attributes = {"prompt": prompt, "immediate": immediate, "queued": now}
            queue = queue.append(policy, identity, attributes, serial=identity, now=now).unwrap()
        pending = [r for r in pending if r[1] != now]
        while isinstance(
            outcome := attempt_admission(queue, policy, Moment(now), capacity_1(used)),
            Admitted,
        ):
            queue, used = outcome.queue, used + 1
            order.append(int(outcome.entry.identity))
            times.append(now)
            releases.append(now + requests[int(outcome.entry.identity)][2])
    return order, times


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (LANES, [0, 4, 1, 5, 2, 3]),
        (ascend_fcfs_lanes(short_tokens=128, max_wait=0), [0, 4, 2, 3, 1, 5]),
    ],
)
def test_the_aging_regression_on_a_tiny_pool(policy: QueuePolicy, expected: list[int]) -> None:
    assert simulate_pool(policy) == (expected, [0, 4, 5, 6, 7, 8])


def test_the_lanes_with_aging_cannot_be_computed_at_enqueue() -> None:
    made = make_policy(
        [LANES.keys[0]], constants=LANES.constants, attributes=LANES.attributes, timing="enqueue"
    )
    assert "'waited' cannot be read when keys are computed at enqueue" in str(made.failure())


@pytest.mark.parametrize(
    ("timing", "expected"),
    [("enqueue", [0, 4, 2, 3, 1, 5]), ("selection", [0, 4, 1, 5, 2, 3])],
)
def test_the_aging_regression_with_enqueue_keys(timing: Timing, expected: list[int]) -> None:
    # waiting.md's table: the same rule, fixed at enqueue or re-evaluated at selection
    assert simulate_pool(aging_by_queued(timing)) == (expected, [0, 4, 5, 6, 7, 8])


def test_budget_left_is_read_at_each_selection() -> None:
    policy = make_policy(
        ["budget_left(engine) >= prompt ? 0 : 1", "-prompt"], attributes=["prompt"]
    ).unwrap()
    queue = queue_of(policy, [(1, {"prompt": 50}, 0.0), (2, {"prompt": 100}, 0.0)])
    assert selected(queue, policy, 0.0, engine=128.0).unwrap() == 2  # both fit: larger first
    assert selected(queue, policy, 0.0, engine=60.0).unwrap() == 1  # budget shrank
    assert selected(queue, policy, 0.0).unwrap() == 2  # unknown budget: NaN >= x is false


def test_a_selected_entry_that_does_not_fit_blocks_the_queue() -> None:
    policy = static_priority()
    queue = queue_of(policy, [(1, {"priority": 2}, 0.0), (2, {"priority": 1}, 0.0)])
    tested: list[WaitingEntry] = []

    def fits_only_1(entry: WaitingEntry) -> bool:
        tested.append(entry)
        return entry.identity == 1

    outcome = attempt_admission(queue, policy, Moment(1.0), fits_only_1)
    assert isinstance(outcome, Blocked)
    assert outcome.selection.entry.identity == 2
    assert [entry.identity for entry in tested] == [2]  # no other entry is tried
    # like Admitted, Blocked carries the queue to go on with: here the same one
    assert outcome.queue is queue
    assert same_entry(outcome.entry, outcome.selection.entry)


def test_an_admission_removes_only_the_selected_entry() -> None:
    policy = static_priority()
    queue = queue_of(policy, [(i, {"priority": p}, 0.0) for i, p in enumerate([3, 1, 2, 1])])
    outcome = attempt_admission(queue, policy, Moment(0.0), capacity_1(0))
    assert isinstance(outcome, Admitted)
    assert (outcome.entry.identity, outcome.selection.index) == (1, 1)
    assert [entry.identity for entry in outcome.queue] == [0, 2, 3]
    assert [entry.identity for entry in queue] == [0, 1, 2, 3]  # the old queue is untouched


# --- found by mutation testing of select.py (docs/mutation.md): records, refusals,
# the moment, and queues held for another policy

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
def test_the_selected_entry_is_the_very_entry_waiting(name: str, resumed_front: bool) -> None:
    policy = POLICIES[name]
    for seed in range(3):
        queue = _queue(policy, seed, resumed_front=resumed_front)
        for now in (12.0, 40.0):
            moment = Moment(now)
            selection = select_waiting(queue, policy, moment).unwrap()
            reference = select_reference(queue, policy, moment).unwrap()
            assert same_entry(selection.entry, reference.entry)
            assert [repr(key) for key in selection.keys] == [repr(key) for key in reference.keys]
            assert (selection.entry.identity == "back") == resumed_front
            assert len(queue.without(selection.entry)) == len(queue) - 1  # this queue's entry


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_selection_with_another_policy_is_the_plain_definition(name: str) -> None:
    built_with = POLICIES["scan" if name != "scan" else "static"]
    queue, policy, moment = _queue(built_with, 7), POLICIES[name], Moment(30.0)
    chosen = select_waiting(queue, policy, moment).unwrap()
    reference = select_reference(queue, policy, moment).unwrap()
    assert same_entry(chosen.entry, reference.entry)
    assert chosen.keys == reference.keys
    assert len(queue.without(chosen.entry)) == len(queue) - 1  # this very queue's entry


def test_an_empty_queue_selects_nothing_on_every_path() -> None:
    for policy in POLICIES.values():
        assert select_waiting(WaitingQueue(), policy, Moment(0.0)) == Nothing


def test_selection_names_the_first_argument_of_the_wrong_type() -> None:
    queue, policy, moment = WaitingQueue(), fifo(), Moment(0.0)
    wrong: list[tuple[tuple[Any, Any, Any], str]] = [
        (([], policy, moment), "queue must be a WaitingQueue, not list"),
        ((queue, "fifo", moment), "policy must be a QueuePolicy, not str"),
        ((queue, policy, 0.0), "moment must be a Moment, not float"),
        (([], "fifo", 0.0), "queue must be a WaitingQueue, not list"),
    ]
    for arguments, message in wrong:
        with pytest.raises(TypeError) as raised:
            select_waiting(*arguments)
        assert str(raised.value) == message
        with pytest.raises(TypeError) as raised:  # at the call, before any selection is read
            dispatch_order(*arguments)
        assert str(raised.value) == message


def test_the_plain_definition_names_an_argument_of_the_wrong_type() -> None:
    entry, moment = make_entry("a", {}, 0, 0.0), Moment(0.0)
    stray: Any = ("b",)
    wrong: list[tuple[Callable[[], object], str]] = [
        (lambda: select_reference(7, fifo(), moment), "queue must be a WaitingQueue, not int"),  # type: ignore[arg-type]
        (
            lambda: select_reference([entry, stray], fifo(), moment),
            "entry must be a WaitingEntry, not tuple",
        ),
        (lambda: entry_keys(fifo(), "a", moment), "entry must be a WaitingEntry, not str"),  # type: ignore[arg-type]
        (lambda: entry_keys(fifo(), entry, 0.0), "moment must be a Moment, not float"),  # type: ignore[arg-type]
        (lambda: keys_at_enqueue("fifo", entry), "policy must be a QueuePolicy, not str"),  # type: ignore[arg-type]
    ]
    for call, message in wrong:
        with pytest.raises(TypeError) as raised:
            call()
        assert str(raised.value) == message


def test_selections_are_equal_by_entry_and_keys_and_hash_alike() -> None:
    queue = queue_of(fifo(), [(0, {}, 0.0), (1, {}, 0.0)])
    first, second = list(queue)
    one = Selection(first, (1.0,), queue)
    assert one == Selection(first, (1.0,), queue.without(second))  # the queue is not compared
    assert hash(one) == hash(Selection(first, (1.0,), queue.without(second)))
    assert (one != Selection(first, (2.0,), queue), one != Selection(second, (1.0,), queue)) == (
        True,
        True,
    )
    assert (one == first, one != first) == (False, True)


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
    """The records carry the selected entry, its keys, the queue selected from, and
    the queue that remains."""
    policy = POLICIES[name]
    queue, moment = _queue(policy, 2), Moment(20.0)
    selection = select_waiting(queue, policy, moment).unwrap()
    expected = Selection(selection.entry, selection.keys, queue)
    admitted = attempt_admission(queue, policy, moment, lambda _: True)
    assert isinstance(admitted, Admitted)
    assert admitted.selection == expected
    assert admitted.selection.keys == selection.keys
    assert admitted.selection.queue is queue
    assert same_entry(admitted.entry, selection.entry)
    assert list(admitted.queue) == [e for e in queue if not same_entry(e, selection.entry)]
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
    done = admit_many(queue, policy, moment, lambda entry: not same_entry(entry, order[2].entry))
    assert [a.selection.entry for a in done.admitted] == [order[0].entry, order[1].entry]
    assert [a.selection.keys for a in done.admitted] == [order[0].keys, order[1].keys]
    assert done.admitted[0].selection.queue is queue
    assert done.admitted[1].selection.queue is done.admitted[0].queue
    assert isinstance(done.stopped, Blocked)
    assert same_entry(done.stopped.selection.entry, order[2].entry)
    assert done.stopped.selection.keys == order[2].keys
    assert done.stopped.queue is done.queue is done.admitted[1].queue


def test_selection_reads_the_moments_budgets() -> None:
    policy = make_policy(["budget_left(engine) >= prompt ? 0 : 1"], attributes=["prompt"]).unwrap()
    queue = WaitingQueue()
    for serial, prompt in enumerate([500, 50, 400]):
        queue = queue.append(policy, serial, {"prompt": prompt}, serial=serial, now=0.0).unwrap()
    for left, chosen in ((100.0, 1), (1000.0, 0), (10.0, 0)):
        moment = Moment(1.0, {"engine": left})
        picked = select_waiting(queue, policy, moment).unwrap()
        assert picked.entry.identity == chosen
        assert picked.keys == select_reference(queue, policy, moment).unwrap().keys


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_an_admission_with_another_policy_is_the_plain_definition(name: str) -> None:
    built_with = POLICIES["scan" if name != "scan" else "static"]
    queue, policy, moment = _queue(built_with, 4), POLICIES[name], Moment(30.0)
    reference = select_reference(queue, policy, moment).unwrap()
    admitted = attempt_admission(queue, policy, moment, lambda _: True)
    assert isinstance(admitted, Admitted)
    assert admitted.selection == reference
    assert admitted.selection.keys == reference.keys
    assert same_entry(admitted.entry, reference.entry)
    blocked = attempt_admission(queue, policy, moment, lambda _: False)
    assert isinstance(blocked, Blocked)
    assert blocked.selection == reference
    assert blocked.queue is queue


#: Every path's policy, and one whose keys read the budgets (admit_many selects again
#: after each admission under it, instead of walking one dispatch order).
PASS_POLICIES = {
    **POLICIES,
    "budget": make_policy(
        ["budget_left(engine) >= prompt ? 0 : 1", "arrival_time"],
        attributes=["prompt", "arrival_time"],
    ).unwrap(),
}


def _spent(entry: WaitingEntry, moment: Moment) -> Moment:
    """The moment after admitting ``entry``: its prompt spent from the engine's budget."""
    left = moment.budget_left["engine"] - float(entry.attributes["prompt"])
    return Moment(moment.now, {"engine": left})


def _attempts(
    queue: WaitingQueue,
    policy: QueuePolicy,
    moment: Moment,
    fits: Callable[[WaitingEntry], bool],
    *,
    limit: int | None,
    next_moment: Callable[[WaitingEntry, Moment], Moment] | None,
) -> tuple[list[Admitted], WaitingQueue, Blocked | QueueEmpty | None]:
    """admit_many's definition: attempt_admission again and again."""
    admitted: list[Admitted] = []
    while limit is None or len(admitted) < limit:
        outcome = attempt_admission(queue, policy, moment, fits)
        if not isinstance(outcome, Admitted):
            return admitted, queue, outcome
        admitted.append(outcome)
        queue = outcome.queue
        if next_moment is not None:
            moment = next_moment(outcome.entry, moment)
    return admitted, queue, None


@example(name="budget", seed=0, misfits=frozenset(), limit=None, spending=True)  # empties
@example(name="budget", seed=0, misfits=frozenset(range(12)), limit=None, spending=True)
@example(name="budget", seed=0, misfits=frozenset(), limit=3, spending=True)
@example(name="static", seed=0, misfits=frozenset({5}), limit=None, spending=True)
@given(
    name=st.sampled_from(sorted(PASS_POLICIES)),
    seed=st.integers(0, 50),
    misfits=st.frozensets(st.integers(0, 11), max_size=3),
    limit=st.none() | st.integers(0, 13),
    spending=st.booleans(),
)
def test_admit_many_is_attempt_admission_repeated(
    name: str, seed: int, misfits: frozenset[int], limit: int | None, spending: bool
) -> None:
    """The whole outcome of a pass (found by mutation testing: the pass that selects
    again after each admission could lose its admissions, its queue or why it
    stopped, and no test looked)."""
    policy = PASS_POLICIES[name]
    queue, moment = _queue(policy, seed), Moment(20.0, {"engine": 400.0})
    next_moment = _spent if spending else None

    def fits(entry: WaitingEntry) -> bool:
        return entry.identity not in misfits

    done = admit_many(queue, policy, moment, fits, limit=limit, next_moment=next_moment)
    admitted, rest, stopped = _attempts(
        queue, policy, moment, fits, limit=limit, next_moment=next_moment
    )
    event(f"{name}, stopped {type(stopped).__name__}")
    assert isinstance(done.admitted, tuple)
    assert [a.entry.identity for a in done.admitted] == [a.entry.identity for a in admitted]
    assert [a.selection.keys for a in done.admitted] == [a.selection.keys for a in admitted]
    before = queue
    for made, wanted in zip(done.admitted, admitted, strict=True):
        assert made.selection.queue is before  # selected from the queue the last one left
        assert list(made.queue) == list(wanted.queue)
        before = made.queue
    assert done.queue is before
    assert list(done.queue) == list(rest)
    assert type(done.stopped) is type(stopped)
    if isinstance(stopped, Blocked):
        assert isinstance(done.stopped, Blocked)
        assert same_entry(done.stopped.entry, stopped.entry)
        assert done.stopped.selection.keys == stopped.selection.keys
        assert done.stopped.queue is done.queue


def test_a_pass_refuses_a_next_moment_that_is_not_a_moment_or_moves_now() -> None:
    # found by mutation testing: the messages, and a NaN clock on one side only
    policy = PASS_POLICIES["budget"]
    queue, start = _queue(policy, 1), Moment(0.0, {"engine": 400.0})
    with pytest.raises(TypeError, match="next_moment must return a Moment, not 5"):
        admit_many(queue, policy, start, bool, next_moment=lambda _entry, _moment: 5)  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match=r"must keep now \(0\.0\) within one pass, not nan"):
        admit_many(queue, policy, start, bool, next_moment=lambda _entry, _moment: Moment(math.nan))
    unknown = Moment(math.nan, {"engine": 400.0})  # a NaN clock stays one: a pass goes on
    with pytest.raises(ValueError, match=r"must keep now \(nan\) within one pass, not 0\.0"):
        admit_many(queue, policy, unknown, bool, next_moment=lambda _entry, _moment: Moment(0.0))
    done = admit_many(queue, policy, unknown, bool, limit=2, next_moment=_spent)
    assert len(done.admitted) == 2


@pytest.mark.parametrize("name", sorted(PASS_POLICIES))
def test_a_pass_asks_next_moment_after_each_admission_on_every_path(name: str) -> None:
    # found by mutation testing: a pass whose keys read no budget never asked
    policy, asked = PASS_POLICIES[name], []
    queue, start = _queue(policy, 2), Moment(0.0, {"engine": 400.0})

    def spent(entry: WaitingEntry, moment: Moment) -> Moment:
        asked.append((entry.identity, moment))
        return _spent(entry, moment)

    done = admit_many(queue, policy, start, bool, limit=3, next_moment=spent)
    assert len(done.admitted) == 3
    moments = [start]
    for admitted in done.admitted:
        moments.append(_spent(admitted.entry, moments[-1]))
    assert asked == [(a.entry.identity, m) for a, m in zip(done.admitted, moments, strict=False)]
    with pytest.raises(ValueError, match="keep now"):
        admit_many(queue, policy, start, bool, next_moment=lambda _entry, _moment: Moment(1.0))


# --- found by hardening (issue 9)


def _one_waiting() -> WaitingQueue:
    return WaitingQueue().append(fifo(), "a", {"n": 1}, serial=0, now=0.0).unwrap()


SELECTIONS: list[Callable[..., object]] = [
    select_waiting,
    select_reference,
    dispatch_order,
    lambda q, p, m: attempt_admission(q, p, m, bool),
    lambda q, p, m: admit_many(q, p, m, bool),
]


SELECTION_NAMES = [
    "select_waiting",
    "select_reference",
    "dispatch_order",
    "attempt_admission",
    "admit_many",
]


@pytest.mark.parametrize("call", SELECTIONS, ids=SELECTION_NAMES)
@pytest.mark.parametrize(
    ("position", "wrong", "message"),
    [
        (0, 0, "queue must be a WaitingQueue, not int"),
        (1, None, "policy must be a QueuePolicy, not NoneType"),
        (2, 0.0, "moment must be a Moment, not float"),
    ],
)
def test_selection_refuses_a_wrong_type_at_the_call(
    call: Callable[..., object],
    position: int,
    wrong: object,
    message: str,
) -> None:
    arguments: list[object] = [_one_waiting(), fifo(), Moment(0.0)]
    arguments[position] = wrong
    with pytest.raises(TypeError, match=message):
        call(*arguments)  # dispatch_order too: at the call, not at the first next()


class _LaterMoment(Moment):
    """A Moment of a subtype: a Moment still, though not of the exact type."""

    __slots__ = ()


def test_a_moment_of_a_subtype_is_a_moment() -> None:
    # found by mutation testing: the check's long way (past its one-test usual call)
    queue, policy, moment = _one_waiting(), fifo(), _LaterMoment(0.0)
    assert isinstance(attempt_admission(queue, policy, moment, bool), Admitted)
    assert len(admit_many(queue, policy, moment, bool).admitted) == 1
    assert select_waiting(queue, policy, moment).unwrap().entry.identity == "a"


def test_the_admission_callbacks_and_limit_are_checked() -> None:
    queue, policy, moment = _one_waiting(), fifo(), Moment(0.0)
    with pytest.raises(TypeError, match="fits must be a function of an entry, not NoneType"):
        attempt_admission(queue, policy, moment, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="fits must be a function of an entry, not int"):
        admit_many(queue, policy, moment, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="next_moment must be a function or None, not int"):
        admit_many(queue, policy, moment, bool, next_moment=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="limit must be an int or None, not str"):
        admit_many(queue, policy, moment, bool, limit="3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="limit must be at least 0, not -1"):
        admit_many(queue, policy, moment, bool, limit=-1)
    with pytest.raises(TypeError, match="index must be an int, not str"):
        queue.without_index("0")  # type: ignore[arg-type]
    with pytest.raises(IndexError) as beyond:  # issue 30: str() of it was a ValueError
        queue.without_index(-(10**5000))
    assert str(beyond.value) == "index a negative 5001-digit integer of a queue of 1"
    with pytest.raises(TypeError, match="budget_left must be keyed by stage names"):
        Moment(0.0, {5: 1.0})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match=r"WaitingEntry\.identity must be hashable"):
        make_entry(["a"], {}, 0, 0.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"WaitingEntry\.attributes"):
        make_entry("a", {"n": "1"}, 0, 0.0)  # type: ignore[dict-item]
