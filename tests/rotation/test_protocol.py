"""The tick protocol's named branches and illegal events, one by one."""

from __future__ import annotations

import pytest
from pyrsistent import pvector
from returns.result import Failure, Success

from policy import (
    Arrival,
    BacklogEntry,
    Branch,
    Cancel,
    Ended,
    Ending,
    Event,
    GrantBacklog,
    GrantEnd,
    Lane,
    ModelAction,
    Outcome,
    ProtocolErrorKind,
    RotationState,
    RoundResult,
    SliceKind,
    Step,
    Tick,
    TickUse,
    apply_event,
    initial_state,
    live_requests,
)
from policy.rotation.backlog import EntryKind

N, H = Lane.NORMAL, Lane.HIGH


def run(state: RotationState, *events: Event) -> Step:
    """Apply events in order; every one must be legal. Returns the last step."""
    step = Step(state, None)  # type: ignore[arg-type]  # replaced by the first event
    for event in events:
        step = apply_event(step.state, event).unwrap()
    return step


def holding_a_with_b_waiting(budget: int = 2) -> RotationState:
    return run(
        initial_state(),
        Arrival("A", N, budget),
        RoundResult(finished=False),
        Arrival("B", N, budget),
        Tick(budget),  # closes tick 0, whose model action was A's slice 0
    ).state


def test_direct_admission_runs_slice_0_and_takes_the_tick() -> None:
    step = run(initial_state(), Arrival("A", N, 2))
    assert step.outcome.branches == (Branch.DIRECT_ADMISSION,)
    assert step.outcome.action is not None
    assert step.outcome.action.kind is SliceKind.ADMISSION_SLICE0
    step = run(step.state, RoundResult(finished=False), Tick(2, classic_work=True))
    assert step.outcome.branches == (Branch.ADMISSION_TICK,)
    assert step.outcome.action is None


def test_admission_slice_0_is_not_checked_even_with_a_waiter() -> None:
    state = run(initial_state(), Arrival("A", N, 1), Arrival("B", N, 1)).state
    step = run(state, RoundResult(finished=False))
    assert step.outcome.branches == (Branch.CONTINUE,)
    assert step.state.active is not None
    assert step.state.active.slices_in_grant == 1


def test_job_finished_by_slice_0_completes_at_once() -> None:
    step = run(initial_state(), Arrival("A", N, 2), RoundResult(finished=True))
    assert step.outcome.ended == (Ended("A", Ending.COMPLETED),)
    assert step.outcome.grants == (GrantEnd("A", 1, parked=False),)
    assert step.state.active is None


def test_second_direct_admission_in_one_tick_is_refused() -> None:
    # A's slice 0 finished it, but it was this tick's model action: B must wait.
    state = run(initial_state(), Arrival("A", N, 2), RoundResult(finished=True)).state
    step = run(state, Arrival("B", N, 2))
    assert step.outcome.branches == (Branch.WAITING,)
    step = run(step.state, Tick(2))
    assert step.outcome.branches == (Branch.ADMISSION_TICK,)
    step = run(step.state, Tick(2))
    assert step.outcome.branches == (Branch.WAITER_SLICE0,)


def test_after_an_instant_finish_a_request_waits_whatever_the_budget() -> None:
    state = run(initial_state(), Arrival("A", N, 0), RoundResult(finished=True)).state
    step = run(state, Arrival("B", N, 0))
    assert step.outcome.branches == (Branch.WAITING,)  # budget 0 would send a concurrent one away
    step = run(step.state, Tick(0), Tick(0))
    assert step.outcome.branches == (Branch.WAITER_SLICE0,)
    step = run(state, Arrival("B", N, 0, may_wait=False))
    assert step.outcome.ended == (Ended("B", Ending.CLASSIC),)


def _a_parked_behind_b_and_c(cancel_b: bool) -> RotationState:
    events: list[Event] = [
        Arrival("A", N, 2),
        RoundResult(finished=False),
        Arrival("B", N, 2),
        Arrival("C", N, 2),
    ]
    if cancel_b:
        events.append(Cancel("B"))
    events += [Tick(2), Tick(2), RoundResult(finished=False)]  # A parks: [B, C, A]
    return run(initial_state(), *events).state


def test_a_grant_decision_counts_even_for_a_cancelled_or_declined_grantee() -> None:
    for cancel_b, declined in ((True, frozenset[str]()), (False, frozenset({"B"}))):
        state = _a_parked_behind_b_and_c(cancel_b)
        assert [(e.request, e.skipped) for e in state.backlog] == [("B", 0), ("C", 0), ("A", 0)]
        step = run(state, Tick(2, declined=declined))
        assert step.state.active is not None
        assert step.state.active.request == "C"
        # Two decisions: one chose B (then passed over), one chose C; A was skipped by both.
        assert [(e.request, e.skipped) for e in step.state.backlog] == [("A", 2)]


def test_empty_slot_with_backlog_is_no_direct_admission() -> None:
    state = holding_a_with_b_waiting()
    state = run(state, Tick(2), RoundResult(finished=False)).state  # A parks
    assert state.active is None
    assert len(state.backlog) == 2
    step = run(state, Arrival("C", N, 2))
    assert step.outcome.branches == (Branch.CLASSIC_FALLBACK,)  # the backlog is full


def test_waiting_and_classic_fallback() -> None:
    state = holding_a_with_b_waiting()
    step = run(state, Arrival("C", H, 2))
    assert step.outcome.branches == (Branch.WAITING,)
    step = run(step.state, Arrival("D", H, 2))
    assert step.outcome.branches == (Branch.CLASSIC_FALLBACK,)
    assert step.outcome.ended == (Ended("D", Ending.CLASSIC),)
    step = run(state, Arrival("E", N, 2, may_wait=False))
    assert step.outcome.ended == (Ended("E", Ending.CLASSIC),)


def test_waiter_slice_0_checks_expiry_at_once() -> None:
    state = run(holding_a_with_b_waiting(budget=1), Tick(1), RoundResult(finished=False)).state
    step = run(state, Tick(1))
    assert step.outcome.branches == (Branch.WAITER_SLICE0,)
    step = run(step.state, RoundResult(finished=False))
    assert step.outcome.branches == (Branch.EXPIRY_PARK,)
    assert step.outcome.grants == (GrantEnd("B", 1, parked=True),)


def test_parked_promotion_runs_its_round_in_the_same_tick() -> None:
    state = run(holding_a_with_b_waiting(budget=1), Tick(1), RoundResult(finished=False)).state
    state = run(state, Tick(1), RoundResult(finished=False)).state  # B's slice 0, parks
    step = run(state, Tick(1))
    assert step.outcome.branches == (Branch.PARKED_PROMOTION,)
    assert step.outcome.action is not None
    assert (step.outcome.action.request, step.outcome.action.kind) == ("A", SliceKind.ROUND)


def test_cancelled_and_declined_waiters_are_passed_in_the_same_tick() -> None:
    state = run(
        initial_state(),
        Arrival("A", N, 2),
        RoundResult(finished=False),
        Arrival("B", H, 2),
        Arrival("C", H, 2),
        Cancel("B"),
        Tick(2),
        Tick(2),
        RoundResult(finished=False),  # A parks: backlog [B, C, A]
    ).state
    step = run(state, Tick(2, declined=frozenset({"C"})))
    assert step.outcome.branches == (
        Branch.CANCELLED_WAITER,
        Branch.DECLINED_WAITER,
        Branch.PARKED_PROMOTION,
    )
    assert step.outcome.ended == (Ended("B", Ending.ABORTED), Ended("C", Ending.ROUTED_CLASSIC))
    assert step.state.active is not None
    assert step.state.active.request == "A"


def test_declined_verdict_does_not_apply_to_parked_jobs() -> None:
    state = run(holding_a_with_b_waiting(), Tick(2), RoundResult(finished=False)).state
    state = run(state, Tick(2, declined=frozenset({"A"})), RoundResult(finished=False)).state
    state = run(state, Tick(2, declined=frozenset({"A"})), RoundResult(finished=False)).state
    step = run(state, Tick(2, declined=frozenset({"A"})))
    assert step.outcome.branches == (Branch.PARKED_PROMOTION,)


def test_promotion_that_finds_nobody_gives_the_tick_to_classic_work() -> None:
    state = run(
        initial_state(),
        Arrival("A", N, 2),
        RoundResult(finished=False),
        Arrival("B", N, 2),
        Tick(2),
        Tick(2),
        RoundResult(finished=True),  # A completes; yielded is set
        Cancel("B"),
    ).state
    step = run(state, Tick(2, classic_work=True))
    assert step.outcome.branches == (Branch.CLASSIC_TICK,)  # alternation first
    step = run(step.state, Tick(2, classic_work=True))
    assert step.outcome.branches == (Branch.CANCELLED_WAITER, Branch.CLASSIC_TICK)
    assert step.outcome.use is TickUse.CLASSIC
    assert step.outcome.ended == (Ended("B", Ending.ABORTED),)


def test_cancelled_parked_job_is_a_counted_no_op_slice() -> None:
    state = run(holding_a_with_b_waiting(), Tick(2), RoundResult(finished=False)).state
    state = run(state, Cancel("A"), Tick(2), RoundResult(finished=False)).state  # B slice 0
    state = run(state, Tick(2), RoundResult(finished=False)).state  # B parks
    step = run(state, Tick(2))
    assert step.outcome.branches == (Branch.PARKED_PROMOTION, Branch.CANCELLED_JOB)
    assert step.outcome.grants == (GrantEnd("A", 1, parked=False),)
    assert step.outcome.ended == (Ended("A", Ending.CANCELLED),)
    assert step.outcome.action is None
    assert step.state.active is None


def test_budget_is_cached_per_grant() -> None:
    state = run(initial_state(), Arrival("A", N, 8), RoundResult(finished=False), Tick(8)).state
    # The setting drops to 1 mid-grant; A's grant keeps its cached 8.
    state = run(state, Arrival("B", N, 1), Tick(1), RoundResult(finished=False)).state
    assert state.active is not None
    assert (state.active.budget, state.active.slices_in_grant) == (8, 2)
    # The next grant reads the setting again.
    state = run(state, Cancel("A"), Tick(1), Tick(1)).state
    assert state.active is not None
    assert (state.active.request, state.active.budget) == ("B", 1)


def test_classic_alternation() -> None:
    state = run(initial_state(), Arrival("A", N, 2), RoundResult(finished=False), Tick(2)).state
    uses = []
    for _ in range(4):
        step = run(state, Tick(2, classic_work=True))
        uses.append(step.outcome.use)
        state = step.state
        if step.outcome.action is not None:
            state = run(state, RoundResult(finished=False)).state
    assert uses == [TickUse.CLASSIC, TickUse.SPECULATIVE, TickUse.CLASSIC, TickUse.SPECULATIVE]


def test_idle_tick() -> None:
    assert run(initial_state(), Tick(2)).outcome.use is TickUse.IDLE
    assert run(initial_state(), Tick(2, classic_work=True)).outcome.use is TickUse.CLASSIC


ILLEGAL: list[tuple[str, Event, ProtocolErrorKind]] = [
    ("idle", RoundResult(finished=False), ProtocolErrorKind.NO_ACTION_IN_FLIGHT),
    ("idle", Cancel("Z"), ProtocolErrorKind.UNKNOWN_REQUEST),
    ("idle", Arrival("A", N, -1), ProtocolErrorKind.NEGATIVE_BUDGET),
    ("idle", Tick(-1), ProtocolErrorKind.NEGATIVE_BUDGET),
    ("in flight", Tick(2), ProtocolErrorKind.RESULT_PENDING),
    ("in flight", Arrival("A", N, 2), ProtocolErrorKind.DUPLICATE_REQUEST),
    ("holding", RoundResult(finished=True), ProtocolErrorKind.NO_ACTION_IN_FLIGHT),
    ("holding", Arrival("B", N, 2), ProtocolErrorKind.DUPLICATE_REQUEST),
    ("holding", Cancel("C"), ProtocolErrorKind.UNKNOWN_REQUEST),
]


def _state(name: str) -> RotationState:
    if name == "idle":
        return initial_state()
    if name == "in flight":
        return run(initial_state(), Arrival("A", N, 2)).state
    return holding_a_with_b_waiting()


def test_illegal_events_fail_and_change_nothing() -> None:
    for name, event, kind in ILLEGAL:
        state = _state(name)
        result = apply_event(state, event)
        assert isinstance(result, Failure), (name, event)
        assert result.failure().kind is kind, (name, event)
        assert result.failure().event == event
        assert kind.value in str(result.failure())
        assert _state(name) == state  # the state it was applied to is unchanged


def test_cancel_twice_is_harmless() -> None:
    state = run(holding_a_with_b_waiting(), Cancel("B")).state
    assert run(state, Cancel("B")).state == state


def test_live_requests_in_every_shape() -> None:
    state = initial_state()
    assert live_requests(state) == ()
    state = apply_event(state, Arrival("A", Lane.NORMAL, 2)).unwrap().state
    assert live_requests(state) == ("A",)
    state = apply_event(state, Arrival("B", Lane.NORMAL, 2)).unwrap().state
    assert live_requests(state) == ("A", "B")
    state = apply_event(state, RoundResult(finished=True)).unwrap().state
    assert live_requests(state) == ("B",)


def test_a_step_shares_what_it_does_not_change() -> None:
    state = initial_state()
    for event in (Arrival("A", Lane.NORMAL, 2), RoundResult(False), Arrival("B", Lane.LOW, 2)):
        state = apply_event(state, event).unwrap().state  # A holds the slot, B waits
    admission = apply_event(state, Tick(2)).unwrap()  # the tick A's slice 0 took
    assert admission.state.active is state.active
    assert admission.state.backlog is state.backlog
    classic = apply_event(admission.state, Tick(2, classic_work=True)).unwrap()
    assert classic.outcome.branches == (Branch.CLASSIC_TICK,)  # alternation: classic's turn
    assert classic.state.active is state.active
    assert classic.state.backlog is state.backlog
    fallback = apply_event(classic.state, Arrival("C", Lane.HIGH, 0)).unwrap()
    assert fallback.outcome.branches == (Branch.CLASSIC_FALLBACK,)
    assert fallback.state is classic.state  # nothing changed: the very same state
    round_ = apply_event(classic.state, Tick(2, classic_work=True)).unwrap()
    assert round_.outcome.branches == (Branch.ROUND,)
    assert round_.state.backlog is state.backlog
    idle = initial_state()
    assert apply_event(idle, Tick(2)).unwrap().state is idle
    assert apply_event(idle, Tick(2, classic_work=True)).unwrap().state is idle


# --- found by mutation testing (docs/mutation.md)
# Rotation protocol rules that mutation testing found unasserted (docs/mutation.md).
#
# Each test states a rule of /work/shared/spec/rotation.md (or docs/rotation.md) and checks the
# whole outcome of the transition: branches, tick use, model action, endings and grant log.


N, H, L = Lane.NORMAL, Lane.HIGH, Lane.LOW


def a_holding_b_waiting(budget: int) -> RotationState:
    """A admitted directly (its slice 0 done, tick closed), B waiting."""
    return run(
        initial_state(),
        Arrival("A", N, budget),
        RoundResult(finished=False),
        Arrival("B", N, budget),
        Tick(budget),
    ).state


def a_parked_behind_b(budget: int = 1) -> RotationState:
    """A ran one round and parked behind the waiter B: backlog [B (waiter), A (parked)]."""
    step = run(a_holding_b_waiting(budget), Tick(budget), RoundResult(finished=False))
    assert step.outcome.branches == (Branch.EXPIRY_PARK,)
    return step.state


# --- a cancel that arrives while a slice is in flight --------------------------------------------


def test_cancel_during_a_round_that_parks_the_job_is_kept_until_its_promotion() -> None:
    # "A cancel only marks the request ... a job's mark is found by its next round": a cancel
    # that arrives while the round is in flight must survive that round parking the job.
    state = run(a_holding_b_waiting(1), Tick(1)).state
    assert state.active is not None
    assert state.active.in_flight is SliceKind.ROUND
    noted = run(state, Cancel("A"))
    assert noted.outcome == Outcome((Branch.CANCEL_NOTED,))
    parked = run(noted.state, RoundResult(finished=False))
    assert parked.outcome.branches == (Branch.EXPIRY_PARK,)
    assert parked.outcome.ended == ()  # nothing ends at the park itself
    assert parked.outcome.grants == (GrantEnd("A", 2, parked=True),)
    assert [(e.request, e.kind, e.cancelled) for e in parked.state.backlog] == [
        ("B", EntryKind.WAITER, False),
        ("A", EntryKind.PARKED, True),
    ]
    # B's grant: slice 0, checked at once, parks at budget 1 behind A.
    state = run(parked.state, Tick(1), RoundResult(finished=False)).state
    step = run(state, Tick(1))
    assert step.outcome == Outcome(
        (Branch.PARKED_PROMOTION, Branch.CANCELLED_JOB),
        use=TickUse.SPECULATIVE,
        action=None,
        ended=(Ended("A", Ending.CANCELLED),),
        grants=(GrantEnd("A", 1, parked=False),),
    )
    assert step.state.active is None
    assert [e.request for e in step.state.backlog] == ["B"]


def test_cancel_during_a_round_that_continues_finishes_the_job_at_its_next_round() -> None:
    state = run(a_holding_b_waiting(8), Tick(8), Cancel("A")).state
    step = run(state, RoundResult(finished=False))
    assert step.outcome == Outcome((Branch.CONTINUE,))
    step = run(step.state, Tick(8))
    assert step.outcome == Outcome(
        (Branch.CANCELLED_JOB,),
        use=TickUse.SPECULATIVE,
        ended=(Ended("A", Ending.CANCELLED),),
        grants=(GrantEnd("A", 3, parked=False),),  # slice 0, one round, the no-op slice
    )
    assert step.state.active is None
    assert step.state.yielded


# --- a promotion that passes waiters over, then meets a cancelled parked job ----------------------


def test_aborted_waiter_and_cancelled_parked_job_both_end_in_one_promotion() -> None:
    state = run(a_parked_behind_b(), Cancel("B"), Cancel("A")).state
    step = run(state, Tick(1))
    assert step.outcome == Outcome(
        (Branch.CANCELLED_WAITER, Branch.PARKED_PROMOTION, Branch.CANCELLED_JOB),
        use=TickUse.SPECULATIVE,
        action=None,
        ended=(Ended("B", Ending.ABORTED), Ended("A", Ending.CANCELLED)),
        grants=(GrantEnd("A", 1, parked=False),),
    )
    assert step.state.active is None
    assert len(step.state.backlog) == 0


def test_declined_waiter_and_cancelled_parked_job_both_end_in_one_promotion() -> None:
    state = run(a_parked_behind_b(), Cancel("A")).state
    step = run(state, Tick(1, declined=frozenset({"B"})))
    assert step.outcome == Outcome(
        (Branch.DECLINED_WAITER, Branch.PARKED_PROMOTION, Branch.CANCELLED_JOB),
        use=TickUse.SPECULATIVE,
        ended=(Ended("B", Ending.ROUTED_CLASSIC), Ended("A", Ending.CANCELLED)),
        grants=(GrantEnd("A", 1, parked=False),),
    )
    assert step.state.active is None
    assert len(step.state.backlog) == 0


def test_waiters_passed_over_before_a_grant_keep_their_endings() -> None:
    state = run(
        initial_state(),
        Arrival("A", N, 2),
        RoundResult(finished=False),
        Arrival("B", N, 2),
        Arrival("C", N, 2),
        Cancel("B"),
        Tick(2),
    ).state
    step = run(state, Tick(2))  # A's round: 2 slices, B and C wait, A parks
    state = run(step.state, RoundResult(finished=False)).state
    step = run(state, Tick(2))
    assert step.outcome == Outcome(
        (Branch.CANCELLED_WAITER, Branch.WAITER_SLICE0),
        use=TickUse.SPECULATIVE,
        action=ModelAction("C", SliceKind.GRANT_SLICE0),
        ended=(Ended("B", Ending.ABORTED),),
    )


# --- every tick says what it was used for and which action runs ----------------------------------


def test_direct_admission_outcome_and_state() -> None:
    step = run(initial_state(), Arrival("A", H, 3))
    assert step.outcome == Outcome(
        (Branch.DIRECT_ADMISSION,), use=None, action=ModelAction("A", SliceKind.ADMISSION_SLICE0)
    )
    job = step.state.active
    assert job is not None
    assert (job.request, job.lane, job.slices_in_grant, job.budget) == ("A", H, 0, 3)
    assert job.in_flight is SliceKind.ADMISSION_SLICE0
    assert not job.cancelled
    assert step.state.yielded
    assert step.state.acted
    closed = run(step.state, RoundResult(finished=False), Tick(3, classic_work=True))
    assert closed.outcome == Outcome((Branch.ADMISSION_TICK,), use=TickUse.SPECULATIVE)
    assert not closed.state.acted
    assert closed.state.yielded  # the tick went to speculation: classic work goes next


def test_round_tick_outcome() -> None:
    state = run(initial_state(), Arrival("A", N, 2), RoundResult(finished=False), Tick(2)).state
    step = run(state, Tick(2))
    assert step.outcome == Outcome(
        (Branch.ROUND,), use=TickUse.SPECULATIVE, action=ModelAction("A", SliceKind.ROUND)
    )
    assert step.state.yielded


def test_waiter_and_parked_promotions_name_their_action() -> None:
    state = run(a_holding_b_waiting(1), Tick(1), RoundResult(finished=False)).state
    step = run(state, Tick(1))
    assert step.outcome == Outcome(
        (Branch.WAITER_SLICE0,),
        use=TickUse.SPECULATIVE,
        action=ModelAction("B", SliceKind.GRANT_SLICE0),
    )
    job = step.state.active
    assert job is not None
    assert (job.request, job.slices_in_grant, job.budget, job.cancelled) == ("B", 0, 1, False)
    step = run(step.state, RoundResult(finished=False), Tick(1))
    assert step.outcome == Outcome(
        (Branch.PARKED_PROMOTION,),
        use=TickUse.SPECULATIVE,
        action=ModelAction("A", SliceKind.ROUND),
    )
    job = step.state.active
    assert job is not None
    assert (job.request, job.slices_in_grant, job.in_flight) == ("A", 0, SliceKind.ROUND)


def test_classic_and_idle_ticks() -> None:
    state = run(initial_state(), Arrival("A", N, 2), RoundResult(finished=False), Tick(2)).state
    assert state.yielded
    classic = run(state, Tick(2, classic_work=True))
    assert classic.outcome == Outcome((Branch.CLASSIC_TICK,), use=TickUse.CLASSIC)
    assert not classic.state.yielded
    assert classic.state.active == state.active  # the holder waits for the next tick
    idle = run(initial_state(), Tick(2))
    assert idle.outcome == Outcome((Branch.IDLE_TICK,), use=TickUse.IDLE)
    assert idle.state == initial_state()


def test_finish_and_continue_outcomes() -> None:
    state = run(initial_state(), Arrival("A", N, 2), RoundResult(finished=False), Tick(2)).state
    step = run(state, Tick(2), RoundResult(finished=True))
    assert step.outcome == Outcome(
        (Branch.FINISH,),
        ended=(Ended("A", Ending.COMPLETED),),
        grants=(GrantEnd("A", 2, parked=False),),
    )
    assert step.state.active is None
    cont = run(state, Tick(2), RoundResult(finished=False))
    assert cont.outcome == Outcome((Branch.CONTINUE,))
    assert cont.state.active is not None
    assert (cont.state.active.slices_in_grant, cont.state.active.in_flight) == (2, None)


def test_waiting_and_fallback_outcomes() -> None:
    state = a_holding_b_waiting(2)
    step = run(state, Arrival("C", L, 2))
    assert step.outcome == Outcome((Branch.WAITING,))
    assert [(e.request, e.lane, e.kind, e.skipped) for e in step.state.backlog] == [
        ("B", N, EntryKind.WAITER, 0),
        ("C", L, EntryKind.WAITER, 0),
    ]
    full = run(step.state, Arrival("D", H, 2))
    assert full.outcome == Outcome((Branch.CLASSIC_FALLBACK,), ended=(Ended("D", Ending.CLASSIC),))
    assert full.state == step.state


def test_budget_zero_sends_a_concurrent_request_to_classic_decode() -> None:
    # backlog_admits(len, 0) is false: rotation disabled, the pre-rotation behaviour.
    state = run(initial_state(), Arrival("A", N, 0), RoundResult(finished=False), Tick(0)).state
    step = run(state, Arrival("B", N, 0))
    assert step.outcome == Outcome((Branch.CLASSIC_FALLBACK,), ended=(Ended("B", Ending.CLASSIC),))


def test_a_request_that_may_not_wait_falls_back_even_when_the_slot_is_free() -> None:
    # Slot free but this tick's action spent by an instant finish: waiting is the only way in.
    state = run(initial_state(), Arrival("A", N, 2), RoundResult(finished=True)).state
    step = run(state, Arrival("B", N, 2, may_wait=False))
    assert step.outcome == Outcome((Branch.CLASSIC_FALLBACK,), ended=(Ended("B", Ending.CLASSIC),))


# --- illegal events, and their texts -------------------------------------------------------------


def test_negative_budget_is_refused_before_anything_else() -> None:
    in_flight = run(initial_state(), Arrival("A", N, 2)).state
    # A duplicate arrival with a negative budget: the budget is reported first.
    refused = apply_event(in_flight, Arrival("A", N, -1))
    assert isinstance(refused, Failure)
    assert refused.failure().kind is ProtocolErrorKind.NEGATIVE_BUDGET
    # A tick with a negative budget while a result is pending: the budget again.
    refused = apply_event(in_flight, Tick(-1))
    assert isinstance(refused, Failure)
    assert refused.failure().kind is ProtocolErrorKind.NEGATIVE_BUDGET
    # Budget 0 is legal.
    assert run(initial_state(), Arrival("A", N, 0)).outcome.branches == (Branch.DIRECT_ADMISSION,)
    assert run(initial_state(), Tick(0)).outcome.branches == (Branch.IDLE_TICK,)


def test_protocol_error_texts() -> None:
    kinds = ProtocolErrorKind
    texts = {kind: kind.value for kind in kinds}
    assert texts == {
        kinds.NO_ACTION_IN_FLIGHT: "a round result arrived with no model action in flight",
        kinds.RESULT_PENDING: "the previous model action's result has not arrived",
        kinds.UNKNOWN_REQUEST: "the request is not on the speculative path",
        kinds.DUPLICATE_REQUEST: "the request is already on the speculative path",
        kinds.NEGATIVE_BUDGET: "a grant budget must be >= 0",
        kinds.NOT_A_STATE: "the state is not a RotationState (start from initial_state())",
        kinds.NOT_AN_EVENT: "not an event (an Arrival, Tick, RoundResult or Cancel)",
        kinds.NOT_A_BUDGET: "a grant budget must be an int (not a bool, a float, text or None)",
        kinds.NOT_A_LANE: "a lane must be a Lane (read a header's text with parse_lane)",
        kinds.UNHASHABLE_REQUEST: "a request id must be hashable and equal to itself",
        kinds.NOT_A_FLAG: "may_wait, classic_work and finished must be True or False",
        kinds.NOT_A_SET: "declined must be a set (frozenset) of request ids",
    }
    refused = apply_event(initial_state(), Cancel("Z"))
    assert isinstance(refused, Failure)
    assert str(refused.failure()) == (
        "the request is not on the speculative path: Cancel(request='Z')"
    )


def test_cancel_of_a_waiter_marks_only_that_waiter() -> None:
    state = run(a_holding_b_waiting(2), Arrival("C", N, 2)).state
    step = run(state, Cancel("C"))
    assert step.outcome == Outcome((Branch.CANCEL_NOTED,))
    assert [(e.request, e.cancelled) for e in step.state.backlog] == [("B", False), ("C", True)]
    assert step.state.active == state.active


def test_a_promotion_that_finds_nobody_leaves_an_empty_backlog() -> None:
    # Both waiters are passed over (aborted, routed to classic); each ends exactly once, and the
    # empty slot with an empty backlog admits the next arrival directly.
    state = run(
        initial_state(),
        Arrival("A", N, 2),
        RoundResult(finished=False),
        Arrival("B", N, 2),
        Arrival("C", N, 2),
        Tick(2),
        Tick(2),
        RoundResult(finished=True),  # A completes: the slot is free, B and C wait
        Cancel("B"),
    ).state
    step = run(state, Tick(2, declined=frozenset({"C"})))
    assert step.outcome == Outcome(
        (Branch.CANCELLED_WAITER, Branch.DECLINED_WAITER, Branch.IDLE_TICK),
        use=TickUse.IDLE,
        ended=(Ended("B", Ending.ABORTED), Ended("C", Ending.ROUTED_CLASSIC)),
    )
    assert len(step.state.backlog) == 0
    assert step.state.active is None
    again = run(step.state, Tick(2))
    assert again.outcome == Outcome((Branch.IDLE_TICK,), use=TickUse.IDLE)
    admitted = run(step.state, Arrival("D", N, 2))
    assert admitted.outcome.branches == (Branch.DIRECT_ADMISSION,)


# --- found by hardening (issue 9)


def one_printable_line(text: str) -> bool:
    return text.isprintable()


@pytest.mark.parametrize(
    ("event", "kind"),
    [
        (Arrival("A", "high", 2), ProtocolErrorKind.NOT_A_LANE),  # type: ignore[arg-type]
        (Arrival("A", 2, 2), ProtocolErrorKind.NOT_A_LANE),  # type: ignore[arg-type]
        (Arrival(["A"], Lane.HIGH, 2), ProtocolErrorKind.UNHASHABLE_REQUEST),  # type: ignore[arg-type]
        (Cancel({"A": 1}), ProtocolErrorKind.UNHASHABLE_REQUEST),  # type: ignore[arg-type]
        (Arrival("A", Lane.HIGH, 2, may_wait="no"), ProtocolErrorKind.NOT_A_FLAG),  # type: ignore[arg-type]
        (Tick(2, classic_work=1), ProtocolErrorKind.NOT_A_FLAG),  # type: ignore[arg-type]
        (RoundResult(finished=None), ProtocolErrorKind.NOT_A_FLAG),  # type: ignore[arg-type]
        (Tick(2, declined=["A"]), ProtocolErrorKind.NOT_A_SET),  # type: ignore[arg-type]
        ("tick", ProtocolErrorKind.NOT_AN_EVENT),
        (None, ProtocolErrorKind.NOT_AN_EVENT),
    ],
)
def test_an_event_of_the_wrong_shape_is_refused_with_its_kind(event: object, kind: object) -> None:
    refused = apply_event(initial_state(), event)  # type: ignore[arg-type]
    assert isinstance(refused, Failure)
    assert refused.failure().kind is kind
    assert one_printable_line(str(refused.failure()))


def test_a_state_that_is_not_a_rotation_state_is_refused() -> None:
    refused = apply_event(None, Tick(2))  # type: ignore[arg-type]
    assert refused.failure().kind is ProtocolErrorKind.NOT_A_STATE


def test_a_set_of_any_kind_is_a_declined_set() -> None:
    assert isinstance(apply_event(initial_state(), Tick(2, declined={"A"})), Success)  # type: ignore[arg-type]


def test_records_built_by_hand_check_their_fields() -> None:
    with pytest.raises(TypeError, match=r"RotationState\.skip_cap must be an int, not str"):
        initial_state("2")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"RotationState\.skip_cap must be an int, not bool"):
        initial_state(True)
    with pytest.raises(TypeError, match=r"BacklogEntry\.lane must be a Lane"):
        BacklogEntry("A", "high", EntryKind.WAITER)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"BacklogEntry\.request must be hashable"):
        BacklogEntry(["A"], Lane.HIGH, EntryKind.WAITER)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"GrantBacklog\.entries"):
        GrantBacklog([BacklogEntry("A", Lane.HIGH, EntryKind.WAITER)])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"GrantBacklog\.entries"):
        GrantBacklog(pvector(["A"]))  # type: ignore[list-item]
    with pytest.raises(TypeError, match="a backlog holds BacklogEntry records"):
        GrantBacklog().append(("A", Lane.HIGH))  # type: ignore[arg-type]
