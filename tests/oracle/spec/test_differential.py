"""Differential tests: the kernel against the executable spec (``oracle.spec``) on
large random inputs.

- rotation: runs of up to a few hundred random events applied to both
  ``policy.apply_event`` and ``oracle.spec.protocol.step``, equal states,
  outcomes and refusals at every step; the grant decision on random backlogs;
- waiting selection: random expression trees (``evaluate`` against the spec's
  ``interpret`` of their JSON trees), the key values of every entry, and
  ``select_waiting`` / ``attempt_admission`` against the spec's ``select`` /
  ``admit`` on queues of hundreds of entries under random policies.

Kernel values become spec values only through ``oracle.checks.convert``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeAlias

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from returns.maybe import Maybe, Nothing
from returns.result import Failure, Result, Success

from oracle.checks.convert import (
    spec_entry,
    spec_error,
    spec_event,
    spec_outcome,
    spec_policy,
    spec_queue_entry,
    spec_state,
)
from oracle.spec import grant_order as spec_order
from oracle.spec import protocol as spec
from oracle.spec import selection as spec_selection
from oracle.spec.expressions import Env, interpret, same_value
from oracle.spec.invariants import invariant_violations
from oracle.strategies import (
    ATTRIBUTES,
    AWKWARD,
    CONSTANTS,
    HIDDEN,
    STAGES,
    any_numbers,
    attribute_values,
    awkward_trees,
    backlogs,
    enqueue_times,
    event_sequences,
    huge_integers,
    key_trees,
    moments,
    queue_policies,
    serials,
    waiting_queues,
)
from policy import (
    Arrival,
    Event,
    GrantBacklog,
    Lane,
    ProtocolError,
    RotationState,
    RoundResult,
    Step,
    Tick,
    apply_event,
    initial_state,
    next_grant_index,
    take_next_grantee,
)
from policy.waiting import (
    Admitted,
    Blocked,
    Expr,
    Moment,
    QueueEmpty,
    QueuePolicy,
    RequestId,
    Scope,
    Selection,
    WaitingQueue,
    attempt_admission,
    entry_keys,
    evaluate,
    expr_to_json,
    make_policy,
    same_entry,
    select_waiting,
    unparse,
)
from policy.waiting.expr import walk


def scaled(fraction: float) -> int:
    """A share of the profile's examples (100 by default, 300 in CI), at least 10."""
    return max(10, int(settings().max_examples * fraction))


skip_caps = st.sampled_from([2, 2, 1, 3])

# ------------------------------------------------------------------------------ rotation

Kernel: TypeAlias = Callable[[RotationState, Event], Result[Step, ProtocolError]]


def run_lockstep(
    events: Sequence[Event],
    skip_cap: int,
    kernel: Kernel = apply_event,
    note: Callable[[str], None] = event,
) -> None:
    """Apply ``events`` to the kernel and to the spec side by side; fail at the first
    event where their states, outcomes or refusals differ. ``note`` records the
    branches taken (Hypothesis statistics)."""
    state, model = initial_state(skip_cap), spec.initial_state(skip_cap)
    for index, each in enumerate(events):
        assert spec_state(state) == model, f"before event {index}: the states differ"
        got = kernel(state, each)
        expected = spec.step(model, spec_event(each))
        where = f"event {index} ({each!r}) in state {model!r}"
        if isinstance(expected, str):
            assert isinstance(got, Failure), (
                f"{where}: the spec refuses ({expected}), not the kernel"
            )
            assert spec_error(got.failure()) == expected, where
            assert got.failure().event == each, where
            note(f"refused: {expected}")
            continue
        assert isinstance(got, Success), f"{where}: the kernel refuses ({got.failure()})"
        step = got.unwrap()
        expected_state, expected_outcome = expected
        assert spec_outcome(step.outcome) == expected_outcome, where
        assert spec_state(step.state) == expected_state, where
        assert invariant_violations(expected_state) == [], where
        for branch in expected_outcome.branches:
            note(f"branch: {branch}")
        state, model = step.state, expected_state


@settings(max_examples=scaled(0.5))
@given(skip_caps, event_sequences(max_size=300, min_size=50))
def test_long_rotation_runs_agree_with_the_spec(skip_cap: int, events: list[Event]) -> None:
    run_lockstep(events, skip_cap)


@given(skip_caps, event_sequences(max_size=40))
def test_short_rotation_runs_agree_with_the_spec(skip_cap: int, events: list[Event]) -> None:
    run_lockstep(events, skip_cap)


@given(backlogs(), skip_caps)
def test_the_grant_decision_agrees_with_the_spec(backlog: GrantBacklog, skip_cap: int) -> None:
    entries = tuple(spec_entry(entry) for entry in backlog)
    expected = spec_order.take_next_grantee(entries, skip_cap)
    index = spec_order.next_grant_index([(e.lane, e.skipped) for e in entries], skip_cap)
    assert next_grant_index([(e.lane, e.skipped) for e in backlog], skip_cap).value_or(None) == (
        index
    )
    taken = take_next_grantee(backlog, skip_cap)
    if expected is None:
        assert taken == Nothing
        return
    chosen, rest = taken.unwrap()
    assert (spec_entry(chosen), tuple(spec_entry(e) for e in rest)) == expected


# --------------------------------------------------------------------- waiting: expressions


@dataclass(frozen=True)
class Reading:
    """What one evaluation may read, as raw run-time numbers (each side converts them)."""

    attributes: dict[str, float | bool]
    serial: int
    now: float
    waited: float
    budget_left: dict[str, float]
    constants: dict[str, float]

    def scope(self) -> Scope:
        return Scope(
            self.attributes, self.serial, self.now, self.waited, self.budget_left, self.constants
        )

    def env(self) -> Env:
        return Env(
            self.attributes, self.serial, self.now, self.waited, self.budget_left, self.constants
        )


def _some_of(
    names: Sequence[str], values: st.SearchStrategy[float]
) -> st.SearchStrategy[dict[str, float]]:
    """Maps over some of ``names`` (a name left out reads NaN)."""
    return st.fixed_dictionaries({}, optional=dict.fromkeys(names, values))


def check_every_subtree(tree: Expr, reading: Reading) -> None:
    """Kernel and spec agree on the value of ``tree`` and of each of its subtrees
    (so a wrong signed zero or NaN is seen where it arises, even if an operator
    above it would hide it)."""
    scope, env = reading.scope(), reading.env()
    for node in walk(tree):
        got = evaluate(node, scope)
        expected = interpret(expr_to_json(node), env)
        assert same_value(got, expected), f"{unparse(node)}: kernel {got!r}, spec {expected!r}"


readings = st.builds(
    Reading,
    _some_of([*ATTRIBUTES, HIDDEN], any_numbers),
    st.integers(-3, 3) | st.integers() | huge_integers,
    any_numbers,
    any_numbers,
    _some_of(STAGES, any_numbers),
    _some_of(CONSTANTS, st.floats()),
)


@settings(max_examples=scaled(3))
@given(key_trees(max_leaves=40), readings)
def test_evaluation_agrees_with_the_spec_interpreter(tree: Expr, reading: Reading) -> None:
    check_every_subtree(tree, reading)


awkward_readings = st.builds(
    Reading,
    _some_of([*ATTRIBUTES, HIDDEN], st.sampled_from(AWKWARD)),
    st.sampled_from([0, 1, -1]),
    st.sampled_from(AWKWARD),
    st.sampled_from(AWKWARD),
    _some_of(STAGES, st.sampled_from(AWKWARD)),
    _some_of(CONSTANTS, st.sampled_from(AWKWARD)),
)


@settings(max_examples=scaled(3))
@given(awkward_trees, awkward_readings)
def test_evaluation_agrees_with_the_spec_on_zeros_infinities_and_nan(
    tree: Expr, reading: Reading
) -> None:
    check_every_subtree(tree, reading)


# ------------------------------------------------------------------------ waiting: queues


def spec_queue(queue: WaitingQueue) -> tuple[spec_selection.SpecEntry, ...]:
    return tuple(spec_queue_entry(entry) for entry in queue)


def same_values(a: Sequence[float], b: Sequence[float]) -> bool:
    return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))


def budgets_of(moment: Moment) -> dict[str, float]:
    return dict(moment.budget_left)


def check_selection(
    queue: WaitingQueue,
    policy: QueuePolicy,
    moment: Moment,
    select: Callable[[WaitingQueue, QueuePolicy, Moment], Maybe[Selection]] = select_waiting,
    note: Callable[[str], None] = event,
) -> None:
    """``select`` (``select_waiting`` unless a test breaks it) against the spec's ``select``."""
    expected = spec_selection.select(
        spec_queue(queue), spec_policy(policy), moment.now, budgets_of(moment)
    )
    got = select(queue, policy, moment)
    if expected is None:
        assert got == Nothing
        return
    index, keys = expected
    note("keys compared" if keys else "front taken without keys")
    selection = got.unwrap()
    assert selection.index == index, f"kernel selects {selection.index}, the spec {index}"
    assert same_entry(selection.entry, queue.entries[index])
    assert same_values(selection.keys, keys), f"kernel {selection.keys}, spec {keys}"


@st.composite
def big_cases(draw: st.DrawFn, max_size: int = 300) -> tuple[QueuePolicy, WaitingQueue, Moment]:
    policy = draw(queue_policies())
    return policy, draw(waiting_queues(policy, min_size=1, max_size=max_size)), draw(moments())


@given(big_cases())
def test_select_waiting_agrees_with_the_spec_on_big_queues(
    case: tuple[QueuePolicy, WaitingQueue, Moment],
) -> None:
    policy, queue, moment = case
    check_selection(queue, policy, moment)


@settings(max_examples=scaled(0.5))
@given(big_cases())
def test_the_keys_of_every_entry_agree_with_the_spec(
    case: tuple[QueuePolicy, WaitingQueue, Moment],
) -> None:
    policy, queue, moment = case
    converted = spec_policy(policy)
    for entry in queue:
        expected = spec_selection.keys_of(
            converted, spec_queue_entry(entry), moment.now, budgets_of(moment)
        )
        assert same_values(entry_keys(policy, entry, moment), expected), entry
        if policy.timing == "enqueue" and not policy.is_fifo:
            assert entry.enqueue_keys is not None
            assert same_values(entry.enqueue_keys, expected), entry
        else:
            assert entry.enqueue_keys is None


@dataclass(frozen=True)
class Arrive:
    """A request joins both queues (at the back, or at the front when preempted)."""

    identity: RequestId
    attributes: dict[str, float | bool]
    serial: int
    now: float
    preempted: bool


@dataclass(frozen=True)
class Attempt:
    """One admission attempt; ``fits`` is the host's verdict on the selected entry."""

    moment: Moment
    fits: bool


def operations(count: int) -> st.SearchStrategy[list[Arrive | Attempt]]:
    fresh = st.integers(10_000, 10_050) | st.sampled_from(["x", "y", "z"])
    arrivals = st.builds(
        Arrive,
        fresh,
        st.fixed_dictionaries(dict.fromkeys(ATTRIBUTES, attribute_values)),
        serials,
        enqueue_times,
        st.booleans(),
    )
    attempts = st.builds(Attempt, moments(), st.booleans() | st.just(True))
    return st.integers(1, count).flatmap(
        lambda size: st.lists(attempts | attempts | arrivals, min_size=size, max_size=size)
    )


def _tested(log: list[RequestId], verdict: bool) -> Callable[[object], bool]:
    def fits(entry: object) -> bool:
        log.append(entry.identity)  # type: ignore[attr-defined]
        return verdict

    return fits


@settings(max_examples=scaled(0.5))
@given(big_cases(max_size=250), operations(40))
def test_admission_runs_agree_with_the_spec(
    case: tuple[QueuePolicy, WaitingQueue, Moment], steps: list[Arrive | Attempt]
) -> None:
    """Attempts and arrivals on big queues. The spec's queue is converted once at the
    start; arrivals enter it through the spec's own ``append`` / ``requeue_preempted``
    from the raw numbers, so each side converts them its own way."""
    policy, queue, _ = case
    converted = spec_policy(policy)
    model = spec_queue(queue)
    for step in steps:
        if isinstance(step, Arrive):
            made = (queue.requeue_preempted if step.preempted else queue.append)(
                policy, step.identity, step.attributes, serial=step.serial, now=step.now
            )
            duplicate = any(entry.identity == step.identity for entry in model)
            assert isinstance(made, Failure) == duplicate, step
            if duplicate:
                continue
            queue = made.unwrap()
            fresh = spec_selection.SpecEntry(
                step.identity, step.attributes, step.serial, step.now, resumed=False
            )
            model = (
                spec_selection.requeue_preempted(model, fresh, step.now)
                if step.preempted
                else spec_selection.append(model, fresh)
            )
            continue
        tested: list[RequestId] = []
        spec_tested: list[RequestId] = []
        outcome = attempt_admission(queue, policy, step.moment, _tested(tested, step.fits))
        verdict, index, rest = spec_selection.admit(
            model,
            converted,
            step.moment.now,
            budgets_of(step.moment),
            _tested(spec_tested, step.fits),
        )
        assert tested == spec_tested, "a different entry was tested for fit"
        event(verdict)
        if verdict == "empty":
            assert outcome == QueueEmpty()
            continue
        assert isinstance(outcome, Admitted if verdict == "admitted" else Blocked)
        assert outcome.selection.index == index
        if isinstance(outcome, Blocked):
            assert outcome.queue is queue
        queue, model = outcome.queue, rest
        assert [entry.identity for entry in queue] == [entry.identity for entry in model]


# -------------------------------------------------------- the harness catches a wrong kernel


def _yielded_flipped(state: RotationState, each: Event) -> Result[Step, ProtocolError]:
    """A wrong kernel: a tick that goes to classic work leaves ``yielded`` set."""
    result = apply_event(state, each)
    if isinstance(each, Tick):
        return result.map(lambda step: replace(step, state=replace(step.state, yielded=True)))
    return result


def _last_of_equals(queue: WaitingQueue, policy: QueuePolicy, moment: Moment) -> Maybe[Selection]:
    """A wrong selection: among equal key lists the later entry wins."""
    del moment
    if not len(queue):
        return Nothing
    back = len(queue) - 1
    return select_waiting(queue, policy, Moment(0.0)).map(
        lambda s: s._replace(entry=queue.entries[back])
    )


def test_the_harness_catches_a_wrong_kernel() -> None:
    run: list[Event] = [
        Arrival("A", Lane.NORMAL, 2),
        RoundResult(False),
        Tick(2),
        Tick(2, classic_work=True),
    ]
    run_lockstep(run, 2, note=_ignore)
    with pytest.raises(AssertionError):
        run_lockstep(run, 2, kernel=_yielded_flipped, note=_ignore)

    policy = make_policy(["a"], attributes=["a"]).unwrap()
    queue = WaitingQueue()
    for identity in ("a", "b"):
        queue = queue.append(policy, identity, {"a": 1.0}, serial=0, now=0.0).unwrap()
    check_selection(queue, policy, Moment(0.0), note=_ignore)
    with pytest.raises(AssertionError):
        check_selection(queue, policy, Moment(0.0), select=_last_of_equals, note=_ignore)


def _ignore(_: str) -> None:
    """Statistics are not recorded outside a Hypothesis test."""
