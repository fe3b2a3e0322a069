"""The tick protocol of speculative slot rotation: every transition rule.

Theory of operation
===================

A worker has one speculative slot. The host scheduler drives this module with
four kinds of event and gets back a new :class:`RotationState` and an
:class:`Outcome`; nothing here runs a model, reads a setting or keeps a clock.

Each scheduler tick is, in order:

1. any number of :class:`Arrival` and :class:`Cancel` events;
2. exactly one :class:`Tick`, which closes the tick: it says whether the tick
   goes to speculative or classic work and, for speculative work, which model
   action to run (a slice 0 or a round).

Every model action the kernel hands out (in ``Outcome.action``) is answered by
exactly one :class:`RoundResult` before the next :class:`Tick`: the kernel
cannot know whether a slice finished the request, the host can.

The slot's holder counts the slices of its current grant. A grant starts at 0
slices with the budget read from the event (the host's setting, parsed once)
and cached for the whole grant; every slice result adds one. After every slice
that does not finish the job, :func:`~policy.rotation.decisions.slice_grant_expired`
decides whether the job parks — except after the slice 0 of a *direct
admission*, which ran when nobody waited (that exception is what makes A hold
two slices at budget 1 in the spec's schedule).

Arrivals are admitted directly only when the slot is free, the backlog is
empty *and* this tick's model action is still unused: a request whose slice 0
finished it at once frees the slot, yet a second slice 0 in the same tick would
break the one-model-action-per-tick bound. A later arrival in that tick waits
for the next tick instead — whatever the budget, since it contends with nobody
— unless the host says it may not wait.

Granting takes the next grantee out of the backlog (:mod:`policy.rotation.backlog`
applies the skip accounting) until one is installed: cancelled waiters are
aborted and declined waiters routed to classic prefill on the way, in the
same tick. If that empties the backlog without a model action, the tick goes
to classic work when there is any, so no tick is wasted.

A cancel only marks the request. A waiter's mark is found when it would be
granted (aborted); a job's mark is found by its next round, which finishes it
at once as a counted no-op slice (cancelled).

Illegal events return a :class:`ProtocolError` and leave the state as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

from returns.maybe import Some
from returns.result import Failure, Result, Success

from policy.identity import RequestId
from policy.rotation.backlog import BacklogEntry, EntryKind, GrantBacklog, take_next_grantee
from policy.rotation.decisions import (
    SKIP_CAP,
    backlog_admits,
    slice_grant_expired,
    slice_takes_tick,
)
from policy.rotation.lanes import Lane

__all__ = [
    "ActiveJob",
    "Arrival",
    "Branch",
    "Cancel",
    "Ended",
    "Ending",
    "Event",
    "GrantEnd",
    "ModelAction",
    "Outcome",
    "ProtocolError",
    "ProtocolErrorKind",
    "RotationState",
    "RoundResult",
    "SliceKind",
    "Step",
    "Tick",
    "TickUse",
    "apply_event",
    "initial_state",
    "live_requests",
]


# --------------------------------------------------------------------------- state


class SliceKind(Enum):
    """The model action a job runs; it decides whether an expiry check follows."""

    ADMISSION_SLICE0 = "admission slice 0"  # direct admission: nobody waited, no check
    GRANT_SLICE0 = "grant slice 0"  # a promoted waiter: checked at once
    ROUND = "round"  # one speculative round: checked


@dataclass(frozen=True, slots=True)
class ActiveJob:
    """The job holding the slot."""

    request: RequestId
    lane: Lane
    slices_in_grant: int  # slices whose results came back in this grant
    budget: int  # read once when the grant started
    in_flight: SliceKind | None = None  # a model action awaiting its RoundResult
    cancelled: bool = False


@dataclass(frozen=True, slots=True)
class RotationState:
    """Everything the protocol remembers between events."""

    active: ActiveJob | None = None
    backlog: GrantBacklog = field(default_factory=GrantBacklog)
    yielded: bool = False  # the last tick went to speculation
    acted: bool = False  # a direct admission already took this tick's model action
    skip_cap: int = SKIP_CAP


def initial_state(skip_cap: int = SKIP_CAP) -> RotationState:
    """An idle worker: empty slot, empty backlog.

    >>> initial_state().active is None
    True
    """
    return RotationState(skip_cap=skip_cap)


def live_requests(state: RotationState) -> tuple[RequestId, ...]:
    """The speculative sessions alive: the holder first, then the backlog."""
    holder = () if state.active is None else (state.active.request,)
    return holder + tuple(entry.request for entry in state.backlog)


# -------------------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class Arrival:
    """A speculative-eligible request arrives; ``budget`` is the current setting."""

    request: RequestId
    lane: Lane
    budget: int
    may_wait: bool = True  # the host's verdict: may it wait for the slot?


@dataclass(frozen=True, slots=True)
class Tick:
    """The scheduler's decision for this tick, after its arrivals and cancels."""

    budget: int  # the current setting, cached by any grant this tick starts
    classic_work: bool = False  # other requests have classic prefill or decode to do
    declined: frozenset[RequestId] = frozenset()  # waiters the host now declines


@dataclass(frozen=True, slots=True)
class RoundResult:
    """The result of the model action the kernel handed out."""

    finished: bool


@dataclass(frozen=True, slots=True)
class Cancel:
    """The client of ``request`` cancelled it."""

    request: RequestId


Event = Arrival | Tick | RoundResult | Cancel


# ------------------------------------------------------------------------- outcomes


class Branch(Enum):
    """The named case of the protocol a transition took (in the spec's words)."""

    DIRECT_ADMISSION = "direct admission"
    WAITING = "waiting"
    CLASSIC_FALLBACK = "classic fallback"
    CANCEL_NOTED = "cancel noted"
    ADMISSION_TICK = "tick taken by a direct admission"
    CLASSIC_TICK = "classic tick"
    IDLE_TICK = "idle tick"
    CANCELLED_WAITER = "cancelled waiter"
    DECLINED_WAITER = "declined waiter"
    WAITER_SLICE0 = "waiter slice 0"
    PARKED_PROMOTION = "parked-job promotion"
    ROUND = "round"
    CANCELLED_JOB = "cancelled job"
    CONTINUE = "continue"
    EXPIRY_PARK = "park"
    FINISH = "finish"


class TickUse(Enum):
    """What a tick's one model action went to."""

    SPECULATIVE = "speculative"
    CLASSIC = "classic"
    IDLE = "idle"


class Ending(Enum):
    """How a request left the speculative path; each request ends exactly once."""

    COMPLETED = "completed"
    CANCELLED = "cancelled"  # cancelled after its job started
    ABORTED = "aborted"  # cancelled while waiting
    ROUTED_CLASSIC = "routed_classic"  # declined at promotion: classic prefill
    CLASSIC = "classic"  # fell back to classic decode at arrival


@dataclass(frozen=True, slots=True)
class ModelAction:
    """The one model action to run now; answer it with a :class:`RoundResult`."""

    request: RequestId
    kind: SliceKind


@dataclass(frozen=True, slots=True)
class Ended:
    """A request left the speculative path."""

    request: RequestId
    ending: Ending


@dataclass(frozen=True, slots=True)
class GrantEnd:
    """A grant ended (a line of the grant log)."""

    request: RequestId
    slices: int
    parked: bool  # False: the job finished (completed or cancelled)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a transition decided, besides the new state."""

    branches: tuple[Branch, ...]
    use: TickUse | None = None  # set for Tick events
    action: ModelAction | None = None
    ended: tuple[Ended, ...] = ()
    grants: tuple[GrantEnd, ...] = ()


@dataclass(frozen=True, slots=True)
class Step:
    """A transition's result."""

    state: RotationState
    outcome: Outcome


class ProtocolErrorKind(Enum):
    """Why an event is illegal in the current state."""

    NO_ACTION_IN_FLIGHT = "a round result arrived with no model action in flight"
    RESULT_PENDING = "the previous model action's result has not arrived"
    UNKNOWN_REQUEST = "the request is not on the speculative path"
    DUPLICATE_REQUEST = "the request is already on the speculative path"
    NEGATIVE_BUDGET = "a grant budget must be >= 0"


@dataclass(frozen=True, slots=True)
class ProtocolError:
    """An illegal event; the state it was applied to is unchanged."""

    kind: ProtocolErrorKind
    event: Event

    def __str__(self) -> str:
        return f"{self.kind.value}: {self.event!r}"


# ---------------------------------------------------------------------- transitions


def apply_event(state: RotationState, event: Event) -> Result[Step, ProtocolError]:
    """Apply one event: the new state and what was decided, or why it is illegal.

    >>> state = initial_state()
    >>> step = apply_event(state, Arrival("A", Lane.NORMAL, budget=2)).unwrap()
    >>> [branch.name for branch in step.outcome.branches], step.outcome.action.kind.name
    (['DIRECT_ADMISSION'], 'ADMISSION_SLICE0')
    >>> apply_event(state, RoundResult(finished=True)).failure().kind.name
    'NO_ACTION_IN_FLIGHT'
    """
    match event:
        case Arrival():
            return _arrive(state, event)
        case Tick():
            return _tick(state, event)
        case RoundResult():
            return _round_result(state, event)
        case Cancel():
            return _cancel(state, event)


def _arrive(state: RotationState, event: Arrival) -> Result[Step, ProtocolError]:
    if event.budget < 0:
        return Failure(ProtocolError(ProtocolErrorKind.NEGATIVE_BUDGET, event))
    if event.request in live_requests(state):
        return Failure(ProtocolError(ProtocolErrorKind.DUPLICATE_REQUEST, event))
    if state.active is None and not state.backlog and not state.acted:
        job = ActiveJob(
            event.request, event.lane, 0, event.budget, in_flight=SliceKind.ADMISSION_SLICE0
        )
        return Success(
            Step(
                replace(state, active=job, yielded=True, acted=True),
                Outcome(
                    (Branch.DIRECT_ADMISSION,),
                    action=ModelAction(event.request, SliceKind.ADMISSION_SLICE0),
                ),
            )
        )
    # A free slot whose tick was spent by an instant finish contends with nobody:
    # the request waits one tick for it, whatever the budget.
    deferred = state.active is None and not state.backlog
    if event.may_wait and (deferred or backlog_admits(len(state.backlog), event.budget)):
        waiter = BacklogEntry(event.request, event.lane, EntryKind.WAITER)
        return Success(
            Step(replace(state, backlog=state.backlog.append(waiter)), Outcome((Branch.WAITING,)))
        )
    return Success(
        Step(
            state,
            Outcome((Branch.CLASSIC_FALLBACK,), ended=(Ended(event.request, Ending.CLASSIC),)),
        )
    )


def _cancel(state: RotationState, event: Cancel) -> Result[Step, ProtocolError]:
    noted = Outcome((Branch.CANCEL_NOTED,))
    if state.active is not None and state.active.request == event.request:
        active = replace(state.active, cancelled=True)
        return Success(Step(replace(state, active=active), noted))
    match state.backlog.position(event.request):
        case Some(index):
            return Success(Step(replace(state, backlog=state.backlog.mark_cancelled(index)), noted))
        case _:
            return Failure(ProtocolError(ProtocolErrorKind.UNKNOWN_REQUEST, event))


def _tick(state: RotationState, event: Tick) -> Result[Step, ProtocolError]:
    if event.budget < 0:
        return Failure(ProtocolError(ProtocolErrorKind.NEGATIVE_BUDGET, event))
    if state.active is not None and state.active.in_flight is not None:
        return Failure(ProtocolError(ProtocolErrorKind.RESULT_PENDING, event))
    if state.acted:
        # The direct admission's slice 0 was this tick's model action.
        return Success(
            Step(
                replace(state, acted=False),
                Outcome((Branch.ADMISSION_TICK,), use=TickUse.SPECULATIVE),
            )
        )
    speculative_pending = state.active is not None or bool(state.backlog)
    if speculative_pending and slice_takes_tick(state.yielded, event.classic_work):
        return Success(_speculative_tick(state, event))
    return Success(_other_tick(state, event.classic_work))


def _other_tick(
    state: RotationState,
    classic_work: bool,
    branches: tuple[Branch, ...] = (),
    ended: tuple[Ended, ...] = (),
) -> Step:
    """A tick that runs no speculative model action (after ``branches``, if any)."""
    if classic_work:
        return Step(
            replace(state, yielded=False),
            Outcome((*branches, Branch.CLASSIC_TICK), use=TickUse.CLASSIC, ended=ended),
        )
    return Step(state, Outcome((*branches, Branch.IDLE_TICK), use=TickUse.IDLE, ended=ended))


def _speculative_tick(state: RotationState, event: Tick) -> Step:
    if state.active is not None:
        if state.active.cancelled:
            return _finish_cancelled(replace(state, yielded=True), state.active)
        active = replace(state.active, in_flight=SliceKind.ROUND)
        return Step(
            replace(state, active=active, yielded=True),
            Outcome(
                (Branch.ROUND,),
                use=TickUse.SPECULATIVE,
                action=ModelAction(active.request, SliceKind.ROUND),
            ),
        )
    return _promote(state, event)


def _promote(state: RotationState, event: Tick) -> Step:
    """Grant the slot to the next entry that can take it, within this tick."""
    branches: list[Branch] = []
    ended: list[Ended] = []
    backlog = state.backlog
    while True:
        match take_next_grantee(backlog, state.skip_cap):
            case Some((entry, backlog)):
                pass
            case _:
                # Everyone granted was cancelled or declined: give the tick away
                # (no speculative model action ran, so ``yielded`` is not set).
                return _other_tick(
                    replace(state, backlog=backlog),
                    event.classic_work,
                    tuple(branches),
                    tuple(ended),
                )
        if entry.kind is EntryKind.WAITER and entry.cancelled:
            branches.append(Branch.CANCELLED_WAITER)
            ended.append(Ended(entry.request, Ending.ABORTED))
            continue
        if entry.kind is EntryKind.WAITER and entry.request in event.declined:
            branches.append(Branch.DECLINED_WAITER)
            ended.append(Ended(entry.request, Ending.ROUTED_CLASSIC))
            continue
        kind = SliceKind.GRANT_SLICE0 if entry.kind is EntryKind.WAITER else SliceKind.ROUND
        job = ActiveJob(
            entry.request, entry.lane, 0, event.budget, in_flight=kind, cancelled=entry.cancelled
        )
        promoted = replace(state, active=job, backlog=backlog, yielded=True)
        if job.cancelled:
            # A cancelled parked job: its round sees the cancel at once.
            return _finish_cancelled(
                promoted, job, (*branches, Branch.PARKED_PROMOTION), tuple(ended)
            )
        branch = Branch.WAITER_SLICE0 if kind is SliceKind.GRANT_SLICE0 else Branch.PARKED_PROMOTION
        return Step(
            promoted,
            Outcome(
                (*branches, branch),
                use=TickUse.SPECULATIVE,
                action=ModelAction(job.request, kind),
                ended=tuple(ended),
            ),
        )


def _finish_cancelled(
    state: RotationState,
    job: ActiveJob,
    branches: tuple[Branch, ...] = (),
    ended: tuple[Ended, ...] = (),
) -> Step:
    """A cancelled job's round: a counted no-op slice that finishes it."""
    return Step(
        replace(state, active=None),
        Outcome(
            (*branches, Branch.CANCELLED_JOB),
            use=TickUse.SPECULATIVE,
            ended=(*ended, Ended(job.request, Ending.CANCELLED)),
            grants=(GrantEnd(job.request, job.slices_in_grant + 1, parked=False),),
        ),
    )


def _round_result(state: RotationState, event: RoundResult) -> Result[Step, ProtocolError]:
    job = state.active
    if job is None or job.in_flight is None:
        return Failure(ProtocolError(ProtocolErrorKind.NO_ACTION_IN_FLIGHT, event))
    slices = job.slices_in_grant + 1
    if event.finished:
        return Success(
            Step(
                replace(state, active=None),
                Outcome(
                    (Branch.FINISH,),
                    ended=(Ended(job.request, Ending.COMPLETED),),
                    grants=(GrantEnd(job.request, slices, parked=False),),
                ),
            )
        )
    checked = job.in_flight is not SliceKind.ADMISSION_SLICE0
    if checked and slice_grant_expired(slices, job.budget, bool(state.backlog)):
        parked = BacklogEntry(job.request, job.lane, EntryKind.PARKED, cancelled=job.cancelled)
        return Success(
            Step(
                replace(state, active=None, backlog=state.backlog.append(parked)),
                Outcome(
                    (Branch.EXPIRY_PARK,),
                    grants=(GrantEnd(job.request, slices, parked=True),),
                ),
            )
        )
    active = replace(job, slices_in_grant=slices, in_flight=None)
    return Success(Step(replace(state, active=active), Outcome((Branch.CONTINUE,))))
