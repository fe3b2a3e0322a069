"""The rotation protocol as a state machine driven by Hypothesis rules.

Each rule sends one event (arrive, tick, round result, cancel, or an illegal
one) to the kernel (``policy.apply_event``) and to the executable spec
(``oracle.spec.protocol.step``). A plain model beside them knows only what a
host knows: who arrived, who ended (from the outcomes), whether a model action
is in flight and how many actions this tick handed out. After every step:

- nothing lost, nothing duplicated: every request that arrived is live once or
  has ended, exactly once per arrival;
- the kernel's state, converted, equals the spec's;
- rotation.md's state invariants hold (``invariant_violations`` is empty);
- at most one model action per tick, and the model's view of the action in
  flight agrees with the state;
- inputs are never mutated: earlier kernel states still convert to what they
  converted to when they were current.
"""

from __future__ import annotations

import copy
from collections import Counter

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import event as note
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from pyrsistent.typing import PVector
from returns.result import Failure, Result, Success

import policy.rotation.protocol as kernel_protocol
from oracle.checks.convert import spec_error, spec_event, spec_outcome, spec_state
from oracle.spec import protocol as spec
from oracle.spec.invariants import invariant_violations
from oracle.strategies import lanes
from policy import (
    SKIP_CAP,
    Arrival,
    BacklogEntry,
    Cancel,
    Event,
    GrantBacklog,
    Lane,
    ModelAction,
    Outcome,
    ProtocolError,
    ProtocolErrorKind,
    RequestId,
    RotationState,
    RoundResult,
    Step,
    Tick,
    apply_event,
    initial_state,
    live_requests,
    next_grant_index,
)

budgets = st.integers(0, 4)
#: Most slices do not finish their request, so grants run out and jobs park.
finishes = st.sampled_from([False, False, False, True])

UNKNOWN = ProtocolErrorKind.UNKNOWN_REQUEST
NEGATIVE = ProtocolErrorKind.NEGATIVE_BUDGET
DUPLICATE = ProtocolErrorKind.DUPLICATE_REQUEST
NO_ACTION = ProtocolErrorKind.NO_ACTION_IN_FLIGHT
PENDING = ProtocolErrorKind.RESULT_PENDING

#: How many earlier states are kept and checked for mutation after every step.
KEPT = 6


class RotationMachine(RuleBasedStateMachine):
    """Kernel, spec and a host's model, event by event."""

    def __init__(self) -> None:
        super().__init__()
        self.state: RotationState = initial_state()
        self.model: spec.State = spec.initial_state()
        self.arrivals: Counter[RequestId] = Counter()
        self.endings: Counter[RequestId] = Counter()
        self.in_flight: ModelAction | None = None  # the host's view of the action out
        self.actions_this_tick = 0
        self.fresh = 0
        # earlier kernel states with their spec conversion and a deep copy, taken
        # when they were current: a later step must not change them
        self.earlier: list[tuple[RotationState, spec.State, RotationState]] = []

    def kernel(self, state: RotationState, event: Event) -> Result[Step, ProtocolError]:
        """The kernel under test (a test of the harness overrides it)."""
        return apply_event(state, event)

    # ------------------------------------------------------------------ driving

    def send(self, event: Event) -> Outcome | ProtocolError:
        """Send ``event`` to the kernel and to the spec; they must agree."""
        before, before_spec = self.state, spec_state(self.state)
        self.earlier = [*self.earlier[-(KEPT - 1) :], (before, before_spec, copy.deepcopy(before))]
        got = self.kernel(before, event)
        expected = spec.step(self.model, spec_event(event))
        assert spec_state(before) == before_spec, "the step mutated the state it was given"
        if isinstance(expected, str):
            assert isinstance(got, Failure), f"{event!r}: the spec refuses ({expected})"
            error: ProtocolError = got.failure()
            assert spec_error(error) == expected
            assert error.event == event
            return error
        assert isinstance(got, Success), f"{event!r}: the kernel refuses ({got.failure()})"
        step: Step = got.unwrap()
        expected_state, expected_outcome = expected
        assert spec_outcome(step.outcome) == expected_outcome, event
        assert spec_state(step.state) == expected_state, event
        self.state, self.model = step.state, expected_state
        self.observe(event, step.outcome)
        return step.outcome

    def observe(self, event: Event, outcome: Outcome) -> None:
        """What a host learns from one outcome."""
        for branch in outcome.branches:
            note(f"branch: {branch.value}")
        for ended in outcome.ended:
            self.endings[ended.request] += 1
        if isinstance(event, RoundResult):
            self.in_flight = None
        if outcome.action is not None:
            assert self.in_flight is None, "a second model action while one is in flight"
            self.in_flight = outcome.action
            self.actions_this_tick += 1
        if isinstance(event, Tick):
            assert self.actions_this_tick <= 1, "two model actions in one tick"
            self.actions_this_tick = 0

    def refused(self, event: Event, kind: ProtocolErrorKind) -> None:
        """``event`` must be refused for ``kind``, and the state kept as it was."""
        before = self.state
        result = self.send(event)
        assert isinstance(result, ProtocolError), f"{event!r} was accepted"
        assert result.kind is kind, f"{event!r}: refused for {result.kind}, not {kind}"
        assert self.state is before

    def live(self) -> tuple[RequestId, ...]:
        return live_requests(self.state)

    def gone(self) -> list[RequestId]:
        """Requests that arrived and are no longer live, in a stable order."""
        live = set(self.live())
        return sorted((r for r in self.arrivals if r not in live), key=str)

    # ------------------------------------------------------------------ legal events

    @initialize(
        skip_cap=st.sampled_from([2, 2, 1, 3]),
        first=st.lists(st.tuples(lanes, st.integers(1, 4)), max_size=3),
    )
    def start(self, skip_cap: int, first: list[tuple[Lane, int]]) -> None:
        """A fresh worker (with ``skip_cap``), and up to three arrivals to contend."""
        self.state, self.model = initial_state(skip_cap), spec.initial_state(skip_cap)
        for index, (lane, budget) in enumerate(first):
            self.arrive_as(f"F{index}", lane, budget, may_wait=True)

    @rule(data=st.data(), lane=lanes, budget=budgets, may_wait=st.booleans() | st.just(True))
    def arrive(self, data: st.DataObject, lane: Lane, budget: int, may_wait: bool) -> None:
        """A new request arrives; or, one time in four, one that ended comes back
        (a fresh arrival under the same id)."""
        if self.gone() and data.draw(st.integers(0, 3)) == 0:
            request: RequestId = data.draw(st.sampled_from(self.gone()))
        else:
            request = f"R{self.fresh}"
            self.fresh += 1
        self.arrive_as(request, lane, budget, may_wait)

    def arrive_as(self, request: RequestId, lane: Lane, budget: int, may_wait: bool) -> None:
        self.arrivals[request] += 1
        assert not isinstance(self.send(Arrival(request, lane, budget, may_wait)), ProtocolError)

    @precondition(lambda self: self.in_flight is None)
    @rule(data=st.data(), budget=budgets, classic_work=st.booleans())
    def tick(self, data: st.DataObject, budget: int, classic_work: bool) -> None:
        candidates = sorted({*self.live(), *self.arrivals, "nobody"}, key=str)
        declined = data.draw(st.frozensets(st.sampled_from(candidates)) | st.just(frozenset()))
        assert not isinstance(self.send(Tick(budget, classic_work, declined)), ProtocolError)

    @precondition(lambda self: self.in_flight is not None)
    @rule(finished=finishes)
    def round_result(self, finished: bool) -> None:
        assert not isinstance(self.send(RoundResult(finished)), ProtocolError)

    @precondition(lambda self: self.in_flight is None)
    @rule(data=st.data(), budget=budgets, classic_work=st.booleans(), finished=finishes)
    def tick_and_answer(
        self, data: st.DataObject, budget: int, classic_work: bool, finished: bool
    ) -> None:
        """A whole tick: the tick, then the answer to its model action if it had one."""
        declined: frozenset[RequestId] = frozenset()
        if self.live() and data.draw(st.integers(0, 4)) == 0:
            declined = frozenset({data.draw(st.sampled_from(self.live()))})
        assert not isinstance(self.send(Tick(budget, classic_work, declined)), ProtocolError)
        if self.in_flight is not None:
            assert not isinstance(self.send(RoundResult(finished)), ProtocolError)

    # ------------------------------------------------------------------ illegal events

    @rule(data=st.data(), lane=lanes, budget=budgets)
    def cancel_or_illegal_event(self, data: st.DataObject, lane: Lane, budget: int) -> None:
        """A client cancels a live request (half the time, when there is one), or the
        host sends one of the events docs/rotation.md calls illegal, among those
        possible now. (One rule for both: cancels end jobs, so they are kept rarer
        than the events that make progress.)"""
        cancels = data.draw(st.booleans())
        if cancels and self.live():
            request = data.draw(st.sampled_from(self.live()))
            assert not isinstance(self.send(Cancel(request)), ProtocolError)
            return
        illegal: list[tuple[Event, ProtocolErrorKind]] = [
            (Cancel(data.draw(st.sampled_from(["nobody", *self.gone()]))), UNKNOWN),
            (Tick(-1), NEGATIVE),
            (Arrival(f"N{self.fresh}", lane, -1), NEGATIVE),
        ]
        if self.live():
            duplicate = data.draw(st.sampled_from(self.live()))
            illegal.append((Arrival(duplicate, lane, budget), DUPLICATE))
        if self.in_flight is None:
            illegal.append((RoundResult(data.draw(st.booleans())), NO_ACTION))
        else:
            illegal.append((Tick(budget), PENDING))
        event, kind = data.draw(st.sampled_from(illegal))
        self.refused(event, kind)

    # ------------------------------------------------------------------ invariants

    @invariant()
    def kernel_state_is_the_spec_state(self) -> None:
        assert spec_state(self.state) == self.model

    @invariant()
    def the_state_invariants_hold(self) -> None:
        assert invariant_violations(self.model) == []

    @invariant()
    def nothing_lost_nothing_duplicated(self) -> None:
        live = Counter(self.live())
        assert all(count == 1 for count in live.values()), f"live twice: {live}"
        assert set(live) <= set(self.arrivals), "a request is live that never arrived"
        for request, arrived in self.arrivals.items():
            assert self.endings[request] + live[request] == arrived, (
                f"{request!r}: arrived {arrived}, ended {self.endings[request]},"
                f" live {live[request]}"
            )
        assert set(self.endings) <= set(self.arrivals), "a request ended that never arrived"

    @invariant()
    def the_action_in_flight_is_the_holders(self) -> None:
        active = self.state.active
        pending = None if active is None or active.in_flight is None else active
        if self.in_flight is None:
            assert pending is None, "the state awaits a result the host was never asked for"
        else:
            assert pending is not None, "the host awaits a result the state forgot"
            assert (pending.request, pending.in_flight) == (
                self.in_flight.request,
                self.in_flight.kind,
            )
        assert self.actions_this_tick <= 1

    @invariant()
    def earlier_states_are_unchanged(self) -> None:
        for state, converted, snapshot in self.earlier:
            assert spec_state(state) == converted, "an earlier state changed"
            assert state == snapshot, "an earlier state changed"


TestRotationMachine = RotationMachine.TestCase
TestRotationMachine.settings = settings(
    settings(), stateful_step_count=60, suppress_health_check=[HealthCheck.too_slow]
)


# ------------------------------------------------------------ the harness catches a bad kernel


class LosesClassicFallbacks(RotationMachine):
    """A wrong kernel: a classic fallback reports no ending (the request is lost)."""

    def kernel(self, state: RotationState, event: Event) -> Result[Step, ProtocolError]:
        def drop_endings(step: Step) -> Step:
            outcome = step.outcome
            if outcome.ended and isinstance(event, Arrival):
                outcome = Outcome(outcome.branches, outcome.use, outcome.action, (), outcome.grants)
            return Step(step.state, outcome)

        return apply_event(state, event).map(drop_endings)


def test_the_machine_catches_a_wrong_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    quick = settings(
        max_examples=200,
        stateful_step_count=30,
        phases=[Phase.generate],
        database=None,
        derandomize=True,
        deadline=None,
    )
    with pytest.raises(AssertionError):
        run_state_machine_as_test(LosesClassicFallbacks, settings=quick)

    # and a kernel that never counts a skip (the spec's state differs on a promotion)
    def no_skips(
        entries: PVector[BacklogEntry], skip_cap: int = SKIP_CAP
    ) -> tuple[BacklogEntry, GrantBacklog] | None:
        index = next_grant_index([(entry.lane, entry.skipped) for entry in entries], skip_cap)
        taken = index.map(lambda i: (entries[i], GrantBacklog(entries.delete(i))))
        return taken.value_or(None)

    # the protocol's hot path takes the grantee by take_next_grantee's unchecked body
    monkeypatch.setattr(kernel_protocol, "take_grantee", no_skips)
    with pytest.raises(AssertionError):
        run_state_machine_as_test(RotationMachine, settings=quick)
