"""Public Hypothesis strategies for the kernel's inputs, for this project's tests and
for other schedulers' test suites (needs ``hypothesis``, a test dependency).

Every strategy below is public API and none needs a running scheduler. The
waiting-selection strategies draw only values the kernel accepts (policies it
validates, requests it queues); the rotation event strategies draw illegal
events too, on purpose (a refusal is part of the protocol).

Rotation (:mod:`policy.rotation`):

- :data:`lanes`: a :class:`~policy.Lane`.
- :data:`cancel_rules`, :func:`rotation_scenarios`: harness scenarios (requests
  with lanes, sizes, arrivals, cancels, declines; budget, skip cap, classic work).
- :data:`REQUESTS`: the small pool of request ids the event strategies draw from,
  so that duplicates, unknown cancels and re-arrivals happen often;
  :data:`budgets`: grant budgets -1..4.
- :func:`backlogs`: a :class:`~policy.GrantBacklog` of up to 3 entries with
  distinct requests, lanes, kinds (waiter or parked), skip counts 0..4 and
  cancel marks.
- :func:`rotation_events`: one kernel event (:class:`~policy.Arrival`,
  :class:`~policy.Tick`, :class:`~policy.RoundResult`, :class:`~policy.Cancel`)
  over :data:`REQUESTS`, budgets -1..4 (-1 is refused), ``may_wait``, classic
  work and declined subsets; legal or not in any given state.
- :func:`event_sequences`: lists of such events, for long runs.

Waiting selection (:mod:`policy.waiting`):

- :data:`leaves` and :data:`trees`: key expression trees over the names
  :data:`ATTRIBUTES`, :data:`CONSTANTS`, :data:`STAGES`;
  :data:`enqueue_leaves` and :data:`enqueue_trees`: the same without ``waited``
  and ``budget_left`` (legal under enqueue timing); :func:`key_trees` chooses;
  :data:`awkward_leaves` and :data:`awkward_trees`: numbers only ties and signed
  zeros, for the IEEE corners (``min(0, -0)``, ``1 / -0``, NaN);
  :data:`dynamic_leaves` and :data:`dynamic_keys`: keys that surely read
  ``now``, ``waited`` or ``budget_left`` (selection timing only).
- :data:`finite_numbers`, :data:`awkward_numbers` (ties, signed zeros,
  infinities, NaN), :data:`huge_integers`, :data:`any_numbers`.
- :func:`queue_policies`: valid :class:`~policy.waiting.QueuePolicy` values
  built with ``make_policy``: 1..3 keys from :func:`key_trees` (or plain
  attributes, or under selection timing :data:`dynamic_keys`), every constant
  of :data:`CONSTANTS` declared (values from :data:`constant_values`), the
  attributes :data:`ATTRIBUTES` visible and :data:`HIDDEN` hidden, both
  timings where legal, and FIFO (no keys) one time in ten.
- :func:`waiting_queues`: a :class:`~policy.waiting.WaitingQueue` for a given
  policy, built by ``append`` and ``requeue_preempted`` with distinct ids,
  attributes from :data:`attribute_values`, enqueue times from
  :data:`enqueue_times` and :data:`serials` (within the float range); with no,
  few or many preemptions; hundreds of entries are cheap.
- :func:`moments`: a :class:`~policy.waiting.Moment`, ``now`` from
  :data:`moment_times`, each stage's ``budget_left`` present or absent
  (sometimes a stage no key reads).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Literal

from hypothesis import strategies as st
from pyrsistent import pvector
from returns.result import Success

from oracle.harness.rotation_scenario import (
    CancelAfterPark,
    CancelAtTick,
    CancelRule,
    RotationRequest,
    RotationScenario,
)
from policy import (
    Arrival,
    BacklogEntry,
    Cancel,
    EntryKind,
    Event,
    GrantBacklog,
    Lane,
    RequestId,
    RoundResult,
    Tick,
)
from policy.waiting import (
    Attr,
    Binary,
    Bool,
    BudgetLeft,
    Call,
    Cond,
    Const,
    Expr,
    Moment,
    Num,
    QueuePolicy,
    Timing,
    Unary,
    Var,
    WaitingQueue,
    make_policy,
)

# ---------------------------------------------------------------------- rotation

lanes = st.sampled_from(list(Lane))

cancel_rules: st.SearchStrategy[CancelRule | None] = st.one_of(
    st.none(),
    st.none(),
    st.just("waiting"),
    st.builds(CancelAfterPark, st.integers(1, 3)),
    st.builds(CancelAtTick, st.integers(0, 12)),
)


@st.composite
def rotation_scenarios(draw: st.DrawFn, max_requests: int = 5) -> RotationScenario:
    """Random rotation scenarios: lanes, sizes, budgets 0..4, arrivals, cancels,
    declines and classic work."""
    count = draw(st.integers(1, max_requests))
    requests = tuple(
        RotationRequest(
            id=f"R{index}",
            lane=draw(lanes),
            slices=draw(st.integers(1, 6)),
            arrive=draw(st.integers(0, 4)),
            may_wait=draw(st.booleans() | st.just(True)),
            declined_at_promotion=draw(st.sampled_from([False, False, False, True])),
            cancel=draw(cancel_rules),
        )
        for index in range(count)
    )
    classic: Literal["never", "always"] | frozenset[int] = draw(
        st.one_of(
            st.sampled_from(["never", "always"]),
            st.frozensets(st.integers(0, 15), max_size=8),
        )
    )
    return RotationScenario(
        name="random",
        description="",
        budget=draw(st.integers(0, 4)),
        skip_cap=draw(st.sampled_from([2, 2, 1, 3])),
        classic_work=classic,
        requests=requests,
        expect=None,
    )


#: The request ids the event strategies draw from: few, so that duplicate
#: arrivals, cancels of unknown requests and re-arrivals after an ending are common.
REQUESTS: tuple[RequestId, ...] = ("A", "B", "C", "D", 4)

#: Grant budgets as the host passes them: -1 is refused, 0 turns rotation off.
budgets = st.integers(-1, 4)


@st.composite
def backlogs(
    draw: st.DrawFn, max_size: int = 3, requests: Sequence[RequestId] = REQUESTS
) -> GrantBacklog:
    """A grant backlog of up to ``max_size`` entries for distinct requests, each with
    a lane, a kind (waiter or parked), a skip count 0..4 and a cancel mark.

    Built directly (``GrantBacklog.append`` resets skip counts), so any combination
    appears, including ones the protocol never reaches."""
    chosen = draw(st.lists(st.sampled_from(list(requests)), max_size=max_size, unique=True))
    entries = [
        BacklogEntry(
            request,
            draw(lanes),
            draw(st.sampled_from(list(EntryKind))),
            draw(st.integers(0, 4)),
            draw(st.booleans()),
        )
        for request in chosen
    ]
    return GrantBacklog(pvector(entries))


def rotation_events(requests: Sequence[RequestId] = REQUESTS) -> st.SearchStrategy[Event]:
    """One kernel rotation event over ``requests``: an arrival (lane, budget -1..4,
    ``may_wait``), a tick (budget -1..4, classic work, a declined subset of the
    requests), a round result or a cancel. Legal or not: whether it is depends on
    the state it meets. Ticks and round results are drawn twice as often as the
    others, so that runs make progress."""
    pool = st.sampled_from(list(requests))
    arrivals = st.builds(Arrival, pool, lanes, budgets, st.booleans() | st.just(True))
    ticks = st.builds(
        Tick,
        budgets,
        st.booleans(),
        st.frozensets(pool, max_size=len(requests)) | st.just(frozenset()),
    )
    results = st.builds(RoundResult, st.booleans())
    cancels = st.builds(Cancel, pool)
    return st.one_of(arrivals, ticks, ticks, results, results, cancels)


@st.composite
def event_sequences(
    draw: st.DrawFn,
    max_size: int = 50,
    min_size: int = 0,
    requests: Sequence[RequestId] = REQUESTS,
) -> list[Event]:
    """Lists of ``min_size``..``max_size`` :func:`rotation_events`, for long runs.

    The length is drawn uniformly (``st.lists`` favours short lists), so runs of a
    few hundred events are common when ``max_size`` allows them."""
    event = rotation_events(requests)
    return [draw(event) for _ in range(draw(st.integers(min_size, max_size)))]


# ------------------------------------------------------------ waiting selection

ATTRIBUTES = ("a", "b", "prompt")
CONSTANTS = ("k", "short_tokens")
STAGES = ("engine", "prefill")
BINARY = ("+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!=", "&&", "||")

#: Values that make the total order work: ties, signed zeros, infinities, NaN.
AWKWARD = (0.0, -0.0, 1.0, -1.0, 2.0, math.inf, -math.inf, math.nan)

finite_numbers = st.floats(allow_nan=False, allow_infinity=False)
awkward_numbers = st.one_of(st.sampled_from(AWKWARD), st.floats())

leaves: st.SearchStrategy[Expr] = st.one_of(
    finite_numbers.map(Num),
    st.sampled_from([0.0, -0.0, 1.0, 3.0, -2.5, 1e20]).map(Num),
    st.booleans().map(Bool),
    st.sampled_from(ATTRIBUTES).map(Attr),
    st.sampled_from(CONSTANTS).map(Const),
    st.sampled_from([Var("serial"), Var("now"), Var("waited")]),
    st.sampled_from(STAGES).map(BudgetLeft),
)


def _extend(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    return st.one_of(
        st.builds(Unary, st.sampled_from(["-", "!"]), children),
        st.builds(Binary, st.sampled_from(BINARY), children, children),
        st.builds(Cond, children, children, children),
        st.builds(
            Call,
            st.sampled_from(["min", "max"]),
            st.lists(children, min_size=1, max_size=3).map(tuple),
        ),
    )


trees: st.SearchStrategy[Expr] = st.recursive(leaves, _extend, max_leaves=12)

#: Leaves legal under enqueue timing: no ``waited``, no ``budget_left(stage)``.
enqueue_leaves: st.SearchStrategy[Expr] = st.one_of(
    finite_numbers.map(Num),
    st.sampled_from([0.0, -0.0, 1.0, 3.0, -2.5, 1e20]).map(Num),
    st.booleans().map(Bool),
    st.sampled_from(ATTRIBUTES).map(Attr),
    st.sampled_from(CONSTANTS).map(Const),
    st.sampled_from([Var("serial"), Var("now")]),
)

#: Trees legal under enqueue timing (built from :data:`enqueue_leaves`).
enqueue_trees: st.SearchStrategy[Expr] = st.recursive(enqueue_leaves, _extend, max_leaves=12)


#: Leaves whose numbers are only ties and signed zeros: with :data:`AWKWARD` values
#: in the scope they make ``min(0, -0)``, ``1 / -0``, ``inf - inf`` and NaN common.
awkward_leaves: st.SearchStrategy[Expr] = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0]).map(Num),
    st.booleans().map(Bool),
    st.sampled_from(ATTRIBUTES).map(Attr),
    st.sampled_from(CONSTANTS).map(Const),
    st.sampled_from([Var("serial"), Var("now"), Var("waited")]),
    st.sampled_from(STAGES).map(BudgetLeft),
)

#: Trees built from :data:`awkward_leaves`.
awkward_trees: st.SearchStrategy[Expr] = st.recursive(awkward_leaves, _extend, max_leaves=12)


#: What only a selection-time key can read: the clock, the wait, the budgets left.
dynamic_leaves: st.SearchStrategy[Expr] = st.sampled_from(
    [Var("now"), Var("waited"), BudgetLeft("engine"), BudgetLeft("prefill")]
)

#: Keys that surely read :data:`dynamic_leaves` (legal under selection timing only):
#: a dynamic leaf, an operator applied to one and a tree, or aging-like rules
#: ``waited >= x ? a : b``. They tell keys evaluated at selection from cached ones.
dynamic_keys: st.SearchStrategy[Expr] = st.one_of(
    dynamic_leaves,
    st.builds(Binary, st.sampled_from(BINARY), dynamic_leaves, trees),
    st.builds(Binary, st.sampled_from(BINARY), trees, dynamic_leaves),
    st.builds(
        Cond,
        st.builds(Binary, st.sampled_from(["<", "<=", ">", ">="]), dynamic_leaves, leaves),
        trees,
        trees,
    ),
)


@functools.cache
def key_trees(timing: Timing = "selection", max_leaves: int = 12) -> st.SearchStrategy[Expr]:
    """Key trees legal under ``timing``, with up to ``max_leaves`` leaves.

    With a larger ``max_leaves`` the trees grow deeper; past 50 levels of nesting
    (``MAX_DEPTH``) ``make_policy`` refuses them, ``evaluate`` does not care.
    Cached: a new recursive strategy is costly to validate."""
    base = enqueue_leaves if timing == "enqueue" else leaves
    return st.recursive(base, _extend, max_leaves=max_leaves)


def _power_of_ten(exponent: int) -> int:
    magnitude: int = 10 ** abs(exponent)
    return magnitude if exponent > 0 else -magnitude


#: Integers beyond the float range, some beyond what Python prints (over 4300 digits).
#: Built lazily: Hypothesis shows a strategy's arguments, and such a literal cannot be shown.
huge_integers: st.SearchStrategy[int] = st.sampled_from([309, -309, 400, -400, 5000, -5000]).map(
    _power_of_ten
)

#: Everything that is a number at run time: ints of any size, bools, floats with
#: infinities and NaN.
any_numbers: st.SearchStrategy[float] = st.one_of(
    st.sampled_from(AWKWARD), st.integers(), huge_integers, st.booleans(), st.floats()
)


# ------------------------------------------------------- policies, queues, moments

#: An attribute every :func:`queue_policies` policy declares hidden: entries may
#: carry it, keys never read it.
HIDDEN = "out"

#: Values of ``let`` constants: finite floats, signed zeros and ties.
constant_values: st.SearchStrategy[float] = st.one_of(
    st.sampled_from([-0.0, 0.0, 1.0, 3.0, 128.0]), finite_numbers
)


@st.composite
def queue_policies(
    draw: st.DrawFn,
    max_keys: int = 3,
    timings: Sequence[Timing] = ("selection", "enqueue"),
    allow_fifo: bool = True,
) -> QueuePolicy:
    """A valid queue policy, built with ``make_policy``.

    1..``max_keys`` keys, each a tree legal under the drawn timing
    (:func:`key_trees`), a plain attribute (many ties) or, under selection
    timing, one of :data:`dynamic_keys`; every name of
    :data:`CONSTANTS` declared with a value of :data:`constant_values`; the
    attributes :data:`ATTRIBUTES` visible and :data:`HIDDEN` hidden. One policy
    in ten is FIFO (no keys) when ``allow_fifo``."""
    timing: Timing = draw(st.sampled_from(list(timings)))
    keys: list[Expr] | None = None
    if not (allow_fifo and draw(st.integers(0, 9)) == 0):
        plain = st.sampled_from([Attr(name) for name in ATTRIBUTES])
        key = key_trees(timing) | plain
        if timing == "selection":
            key = key | dynamic_keys
        keys = draw(st.lists(key, min_size=1, max_size=max_keys))
    made = make_policy(
        keys,
        constants={name: draw(constant_values) for name in CONSTANTS},
        attributes={**dict.fromkeys(ATTRIBUTES, "visible"), HIDDEN: "hidden"},
        timing=timing,
    )
    if not isinstance(made, Success):
        raise AssertionError(f"queue_policies drew a policy make_policy refuses: {made}")
    policy: QueuePolicy = made.unwrap()
    return policy


#: Attribute values at run time: awkward floats most often (ties, signed zeros,
#: infinities, NaN), also booleans, small integers and integers beyond the float range.
attribute_values: st.SearchStrategy[float] = st.one_of(
    st.sampled_from(AWKWARD),
    st.sampled_from(AWKWARD),
    awkward_numbers,
    st.booleans(),
    st.integers(-3, 3),
    huge_integers,
)

#: Enqueue times: a few repeated instants (ties of ``waited``), any float, an integer.
enqueue_times: st.SearchStrategy[float] = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, 2.5, 3.0]),
    st.sampled_from([0.0, 1.0, 2.5]),
    awkward_numbers,
    st.integers(-5, 5),
)

#: Serial numbers within the float range (ties, negatives, beyond 2**53). The queue
#: accepts larger ones (read as ±inf), but ``oracle.checks.convert.spec_queue_entry``
#: converts a serial with ``float()``, which raises OverflowError for them.
serials: st.SearchStrategy[int] = st.one_of(st.integers(-3, 10), st.integers(-(2**63), 2**63))


def _attributes(
    draw: st.DrawFn, values: st.SearchStrategy[float] | None = None
) -> dict[str, float | bool]:
    drawn = attribute_values if values is None else values
    attributes: dict[str, float | bool] = {name: draw(drawn) for name in ATTRIBUTES}
    if draw(st.integers(0, 4)) == 0:
        attributes[HIDDEN] = draw(drawn)
    return attributes


@st.composite
def waiting_queues(
    draw: st.DrawFn, policy: QueuePolicy, min_size: int = 0, max_size: int = 8
) -> WaitingQueue:
    """A waiting queue for ``policy``, built by ``append`` and ``requeue_preempted``.

    Distinct ids (all ints, or all strings); every attribute of
    :data:`ATTRIBUTES` (and sometimes :data:`HIDDEN`) from
    :data:`attribute_values`; enqueue times from :data:`enqueue_times`; serials
    from :data:`serials` or the entry's position. Hypothesis draws small palettes
    of attribute maps (up to 12), times and serials; each entry takes its values
    from them by a seeded ``Random`` (so a queue of hundreds costs a few dozen
    draws) and is full of equal keys. Preemptions are none (half the queues), rare
    (one request in 50), few (one in ten) or many (one in two): a resumed front
    entry is selected without keys, so queues without one are common."""
    size = draw(st.integers(min_size, max_size))
    base = draw(st.integers(0, 1000))
    as_text = draw(st.booleans())
    preempt_one_in = draw(st.sampled_from([0, 0, 0, 50, 10, 2]))
    palette = [_attributes(draw) for _ in range(draw(st.integers(1, min(12, max(size, 1)))))]
    times = draw(st.lists(enqueue_times, min_size=1, max_size=4))
    some_serials = draw(st.lists(serials, min_size=1, max_size=3))
    pick = draw(st.randoms(use_true_random=True))
    queue = WaitingQueue()
    for position in range(size):
        number = base + position
        identity: RequestId = f"r{number}" if as_text else number
        attributes = palette[0] if position == 0 else pick.choice(palette)
        serial = pick.choice([position, position, *some_serials])
        now = pick.choice(times)
        preempted = preempt_one_in > 0 and pick.randrange(preempt_one_in) == 0
        operation = queue.requeue_preempted if preempted else queue.append
        made = operation(policy, identity, attributes, serial=serial, now=now)
        if not isinstance(made, Success):
            raise AssertionError(f"waiting_queues drew a request the queue refuses: {made}")
        queue = made.unwrap()
    return queue


#: The admission clock: repeated instants, infinities and NaN, ints of any size, booleans.
moment_times: st.SearchStrategy[float] = st.one_of(
    st.sampled_from([0.0, 3.0, 5.0, 2.5, 1e9, math.inf]), any_numbers
)


@st.composite
def moments(draw: st.DrawFn) -> Moment:
    """A moment: ``now`` from :data:`moment_times`, and ``budget_left`` either absent
    (the default) or a map in which each stage of :data:`STAGES` is present or
    absent (absent reads NaN), sometimes with a stage no key reads."""
    now = draw(moment_times)
    if draw(st.integers(0, 3)) == 0:
        return Moment(now)
    budget = {stage: draw(any_numbers) for stage in STAGES if draw(st.booleans())}
    if draw(st.integers(0, 5)) == 0:
        budget["unread"] = draw(any_numbers)
    return Moment(now, budget)
