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

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from operator import attrgetter
from typing import cast

from returns.result import Failure, Result, Success

from policy.identity import RequestId
from policy.records import slot_setters
from policy.rotation.backlog import (
    EntryKind,
    GrantBacklog,
    _backlog,
    _entry,
    take_next_grantee,
)
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
    active = state.active
    entries = state.backlog.entries
    if not entries:
        return () if active is None else (active.request,)
    if active is None:
        return tuple(map(_request_of, entries))
    return (active.request, *map(_request_of, entries))


_request_of = attrgetter("request")


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
#
# The per-event cost. An event builds only the records that change; the rest of
# the state is shared with the state it came from, and an event that changes
# nothing returns the state it was given. Records are built by the builders at
# the end of this module (``dataclasses.replace`` walks every field and costs
# about three times as much), enum members are read once into the constants below
# (``Branch.FINISH`` goes through ``EnumType.__getattr__`` on Python 3.11, about
# the cost of building a small record), and outcomes that never vary are built
# once. Checks the event settled are not made again on the paths behind them.

_ADMISSION_SLICE0 = SliceKind.ADMISSION_SLICE0
_GRANT_SLICE0 = SliceKind.GRANT_SLICE0
_ROUND = SliceKind.ROUND
_WAITER = EntryKind.WAITER
_PARKED = EntryKind.PARKED
_SPECULATIVE = TickUse.SPECULATIVE
_CLASSIC = TickUse.CLASSIC
_IDLE = TickUse.IDLE
_COMPLETED = Ending.COMPLETED
_CLASSIC_ENDING = Ending.CLASSIC
_WAITER_SLICE0 = Branch.WAITER_SLICE0
_PARKED_PROMOTION = Branch.PARKED_PROMOTION
_CANCELLED_JOB = Branch.CANCELLED_JOB
_CLASSIC_TICK = Branch.CLASSIC_TICK
_IDLE_TICK = Branch.IDLE_TICK
_NEGATIVE_BUDGET = ProtocolErrorKind.NEGATIVE_BUDGET
_DUPLICATE_REQUEST = ProtocolErrorKind.DUPLICATE_REQUEST
_UNKNOWN_REQUEST = ProtocolErrorKind.UNKNOWN_REQUEST
_RESULT_PENDING = ProtocolErrorKind.RESULT_PENDING
_NO_ACTION_IN_FLIGHT = ProtocolErrorKind.NO_ACTION_IN_FLIGHT

_DIRECT_ADMISSION = (Branch.DIRECT_ADMISSION,)
_CLASSIC_FALLBACK = (Branch.CLASSIC_FALLBACK,)
_ROUND_BRANCHES = (Branch.ROUND,)
_FINISH = (Branch.FINISH,)
_EXPIRY_PARK = (Branch.EXPIRY_PARK,)
_WAITING_OUTCOME = Outcome((Branch.WAITING,))
_NOTED_OUTCOME = Outcome((Branch.CANCEL_NOTED,))
_ADMISSION_TICK_OUTCOME = Outcome((Branch.ADMISSION_TICK,), _SPECULATIVE)
_CLASSIC_TICK_OUTCOME = Outcome((_CLASSIC_TICK,), _CLASSIC)
_IDLE_TICK_OUTCOME = Outcome((_IDLE_TICK,), _IDLE)
_CONTINUE_OUTCOME = Outcome((Branch.CONTINUE,))


def apply_event(state: RotationState, event: Event) -> Result[Step, ProtocolError]:
    """Apply one event: the new state and what was decided, or why it is illegal.

    >>> state = initial_state()
    >>> step = apply_event(state, Arrival("A", Lane.NORMAL, budget=2)).unwrap()
    >>> [branch.name for branch in step.outcome.branches], step.outcome.action.kind.name
    (['DIRECT_ADMISSION'], 'ADMISSION_SLICE0')
    >>> apply_event(state, RoundResult(finished=True)).failure().kind.name
    'NO_ACTION_IN_FLIGHT'
    """
    match event:  # the most frequent events first
        case Tick():
            return _tick(state, event)
        case RoundResult():
            return _round_result(state, event)
        case Arrival():
            return _arrive(state, event)
        case Cancel():
            return _cancel(state, event)


def _refuse(kind: ProtocolErrorKind, event: Event) -> Result[Step, ProtocolError]:
    return Failure(_error(kind, event))


def _arrive(state: RotationState, event: Arrival) -> Result[Step, ProtocolError]:
    if event.budget < 0:
        return _refuse(_NEGATIVE_BUDGET, event)
    request = event.request
    active = state.active
    backlog = state.backlog
    entries = backlog.entries
    # ``request in live_requests(state)``, without building the tuple
    if active is not None and active.request == request:
        return _refuse(_DUPLICATE_REQUEST, event)
    for entry in entries:
        if entry.request == request:
            return _refuse(_DUPLICATE_REQUEST, event)
    if active is None and not entries and not state.acted:
        job = _job(request, event.lane, 0, event.budget, _ADMISSION_SLICE0, False)
        return _success(
            _step(
                _state(job, backlog, True, True, state.skip_cap),
                _outcome(_DIRECT_ADMISSION, None, _action(request, _ADMISSION_SLICE0), (), ()),
            )
        )
    # A free slot whose tick was spent by an instant finish contends with nobody:
    # the request waits one tick for it, whatever the budget.
    deferred = active is None and not entries
    if event.may_wait and (deferred or backlog_admits(len(entries), event.budget)):
        waiter = _entry(request, event.lane, _WAITER, 0, False)
        waiting = _backlog(entries.append(waiter))  # a new entry: no skip count to reset
        return _success(
            _step(
                _state(active, waiting, state.yielded, state.acted, state.skip_cap),
                _WAITING_OUTCOME,
            )
        )
    fallback = _outcome(_CLASSIC_FALLBACK, None, None, (_ended(request, _CLASSIC_ENDING),), ())
    return _success(_step(state, fallback))


def _cancel(state: RotationState, event: Cancel) -> Result[Step, ProtocolError]:
    request = event.request
    active = state.active
    if active is not None and active.request == request:
        if active.cancelled:  # cancelled twice: nothing changes
            return _success(_step(state, _NOTED_OUTCOME))
        marked = _job(
            active.request, active.lane, active.slices_in_grant, active.budget,
            active.in_flight, True,
        )  # fmt: skip
        return _success(
            _step(
                _state(marked, state.backlog, state.yielded, state.acted, state.skip_cap),
                _NOTED_OUTCOME,
            )
        )
    entries = state.backlog.entries
    for index, entry in enumerate(entries):
        if entry.request == request:
            if entry.cancelled:
                return _success(_step(state, _NOTED_OUTCOME))
            marked_entry = _entry(entry.request, entry.lane, entry.kind, entry.skipped, True)
            backlog = _backlog(entries.set(index, marked_entry))
            return _success(
                _step(
                    _state(active, backlog, state.yielded, state.acted, state.skip_cap),
                    _NOTED_OUTCOME,
                )
            )
    return _refuse(_UNKNOWN_REQUEST, event)


def _tick(state: RotationState, event: Tick) -> Result[Step, ProtocolError]:
    if event.budget < 0:
        return _refuse(_NEGATIVE_BUDGET, event)
    active = state.active
    if active is not None and active.in_flight is not None:
        return _refuse(_RESULT_PENDING, event)
    if state.acted:
        # The direct admission's slice 0 was this tick's model action.
        return _success(
            _step(
                _state(active, state.backlog, state.yielded, False, state.skip_cap),
                _ADMISSION_TICK_OUTCOME,
            )
        )
    if active is not None:
        if slice_takes_tick(state.yielded, event.classic_work):
            if active.cancelled:
                return _success(_finish_cancelled(state.backlog, state.skip_cap, active, (), ()))
            # The holder's round (the budget stays the one cached at the grant's start).
            request = active.request
            job = _job(request, active.lane, active.slices_in_grant, active.budget, _ROUND, False)
            return _success(
                _step(
                    _state(job, state.backlog, True, False, state.skip_cap),
                    _outcome(_ROUND_BRANCHES, _SPECULATIVE, _action(request, _ROUND), (), ()),
                )
            )
    elif state.backlog.entries and slice_takes_tick(state.yielded, event.classic_work):
        return _success(_promote(state, event))
    # No speculative model action this tick.
    if not event.classic_work:
        return _success(_step(state, _IDLE_TICK_OUTCOME))
    if state.yielded:
        state = _state(active, state.backlog, False, False, state.skip_cap)
    return _success(_step(state, _CLASSIC_TICK_OUTCOME))


def _promote(state: RotationState, event: Tick) -> Step:
    """Grant the slot to the next entry that can take it, within this tick (the slot
    is free and no direct admission took the tick)."""
    branches: list[Branch] = []
    ended: list[Ended] = []
    backlog = state.backlog
    skip_cap = state.skip_cap
    while True:
        taken = take_next_grantee(backlog, skip_cap).value_or(None)
        if taken is None:
            # Everyone granted was cancelled or declined: give the tick away
            # (no speculative model action ran, so ``yielded`` is not set).
            if event.classic_work:
                return _step(
                    _state(None, backlog, False, False, skip_cap),
                    _outcome((*branches, _CLASSIC_TICK), _CLASSIC, None, tuple(ended), ()),
                )
            return _step(
                _state(None, backlog, state.yielded, False, skip_cap),
                _outcome((*branches, _IDLE_TICK), _IDLE, None, tuple(ended), ()),
            )
        entry, backlog = taken
        waiter = entry.kind is _WAITER
        if waiter and entry.cancelled:
            branches.append(Branch.CANCELLED_WAITER)
            ended.append(Ended(entry.request, Ending.ABORTED))
            continue
        if waiter and entry.request in event.declined:
            branches.append(Branch.DECLINED_WAITER)
            ended.append(Ended(entry.request, Ending.ROUTED_CLASSIC))
            continue
        kind, branch = (_GRANT_SLICE0, _WAITER_SLICE0) if waiter else (_ROUND, _PARKED_PROMOTION)
        job = _job(entry.request, entry.lane, 0, event.budget, kind, entry.cancelled)
        if job.cancelled:
            # A cancelled parked job: its round sees the cancel at once.
            return _finish_cancelled(backlog, skip_cap, job, (*branches, branch), tuple(ended))
        return _step(
            _state(job, backlog, True, False, skip_cap),
            _outcome(
                (*branches, branch), _SPECULATIVE, _action(job.request, kind), tuple(ended), ()
            ),
        )


def _finish_cancelled(
    backlog: GrantBacklog,
    skip_cap: int,
    job: ActiveJob,
    branches: tuple[Branch, ...],
    ended: tuple[Ended, ...],
) -> Step:
    """A cancelled job's round: a counted no-op slice that finishes it (a speculative
    tick that no direct admission took)."""
    return _step(
        _state(None, backlog, True, False, skip_cap),
        _outcome(
            (*branches, _CANCELLED_JOB),
            _SPECULATIVE,
            None,
            (*ended, Ended(job.request, Ending.CANCELLED)),
            (GrantEnd(job.request, job.slices_in_grant + 1, parked=False),),
        ),
    )


def _round_result(state: RotationState, event: RoundResult) -> Result[Step, ProtocolError]:
    job = state.active
    if job is None or job.in_flight is None:
        return _refuse(_NO_ACTION_IN_FLIGHT, event)
    slices = job.slices_in_grant + 1
    backlog = state.backlog
    if event.finished:
        finish = _outcome(
            _FINISH,
            None,
            None,
            (_ended(job.request, _COMPLETED),),
            (_grant_end(job.request, slices, False),),
        )
        return _success(
            _step(_state(None, backlog, state.yielded, state.acted, state.skip_cap), finish)
        )
    entries = backlog.entries
    checked = job.in_flight is not _ADMISSION_SLICE0
    if checked and slice_grant_expired(slices, job.budget, bool(entries)):
        parked = _backlog(entries.append(_entry(job.request, job.lane, _PARKED, 0, job.cancelled)))
        park = _outcome(_EXPIRY_PARK, None, None, (), (_grant_end(job.request, slices, True),))
        return _success(
            _step(_state(None, parked, state.yielded, state.acted, state.skip_cap), park)
        )
    active = _job(job.request, job.lane, slices, job.budget, None, job.cancelled)
    return _success(
        _step(
            _state(active, backlog, state.yielded, state.acted, state.skip_cap), _CONTINUE_OUTCOME
        )
    )


# ----------------------------------------------------------------- record builders
#
# The records of a transition, built as in policy.rotation.backlog: object.__new__
# and the slots' own setters, every field set, equal to what the constructor
# gives, at about half its cost. ``_success`` builds ``Success(step)`` the same
# way, through the one slot ``returns`` keeps its value in; it is checked at
# import against ``Success`` itself and is ``Success`` wherever that check fails.

_new = object.__new__
_job_request, _job_lane, _job_slices, _job_budget, _job_in_flight, _job_cancelled = slot_setters(
    ActiveJob, ("request", "lane", "slices_in_grant", "budget", "in_flight", "cancelled")
)
_state_active, _state_backlog, _state_yielded, _state_acted, _state_skip_cap = slot_setters(
    RotationState, ("active", "backlog", "yielded", "acted", "skip_cap")
)
_action_request, _action_kind = slot_setters(ModelAction, ("request", "kind"))
_ended_request, _ended_ending = slot_setters(Ended, ("request", "ending"))
_grant_request, _grant_slices, _grant_parked = slot_setters(
    GrantEnd, ("request", "slices", "parked")
)
_outcome_branches, _outcome_use, _outcome_action, _outcome_ended, _outcome_grants = slot_setters(
    Outcome, ("branches", "use", "action", "ended", "grants")
)
_step_state, _step_outcome = slot_setters(Step, ("state", "outcome"))
_error_kind, _error_event = slot_setters(ProtocolError, ("kind", "event"))


def _job(  # noqa: PLR0917
    request: RequestId,
    lane: Lane,
    slices_in_grant: int,
    budget: int,
    in_flight: SliceKind | None,
    cancelled: bool,
) -> ActiveJob:
    job = _new(ActiveJob)
    _job_request(job, request)
    _job_lane(job, lane)
    _job_slices(job, slices_in_grant)
    _job_budget(job, budget)
    _job_in_flight(job, in_flight)
    _job_cancelled(job, cancelled)
    return job


def _state(
    active: ActiveJob | None, backlog: GrantBacklog, yielded: bool, acted: bool, skip_cap: int
) -> RotationState:
    state = _new(RotationState)
    _state_active(state, active)
    _state_backlog(state, backlog)
    _state_yielded(state, yielded)
    _state_acted(state, acted)
    _state_skip_cap(state, skip_cap)
    return state


def _action(request: RequestId, kind: SliceKind) -> ModelAction:
    action = _new(ModelAction)
    _action_request(action, request)
    _action_kind(action, kind)
    return action


def _ended(request: RequestId, ending: Ending) -> Ended:
    ended = _new(Ended)
    _ended_request(ended, request)
    _ended_ending(ended, ending)
    return ended


def _grant_end(request: RequestId, slices: int, parked: bool) -> GrantEnd:
    grant = _new(GrantEnd)
    _grant_request(grant, request)
    _grant_slices(grant, slices)
    _grant_parked(grant, parked)
    return grant


def _outcome(
    branches: tuple[Branch, ...],
    use: TickUse | None,
    action: ModelAction | None,
    ended: tuple[Ended, ...],
    grants: tuple[GrantEnd, ...],
) -> Outcome:
    outcome = _new(Outcome)
    _outcome_branches(outcome, branches)
    _outcome_use(outcome, use)
    _outcome_action(outcome, action)
    _outcome_ended(outcome, ended)
    _outcome_grants(outcome, grants)
    return outcome


def _step(state: RotationState, outcome: Outcome) -> Step:
    step = _new(Step)
    _step_state(step, state)
    _step_outcome(step, outcome)
    return step


def _error(kind: ProtocolErrorKind, event: Event) -> ProtocolError:
    error = _new(ProtocolError)
    _error_kind(error, kind)
    _error_event(error, event)
    return error


def _success_builder(container: type = Success) -> Callable[[Step], Result[Step, ProtocolError]]:
    """``container`` (``Success``) itself, or a builder of the same objects through
    the one slot that holds their value, when that builds a container equal to the
    constructor's (checked here, once; anything unexpected keeps the constructor)."""
    constructor = cast(Callable[[Step], Result[Step, ProtocolError]], container)
    slots = [vars(k)["_inner_value"] for k in container.__mro__ if "_inner_value" in vars(k)]
    if len(slots) != 1 or not hasattr(slots[0], "__set__"):
        return constructor
    set_value = slots[0].__set__

    def success(step: Step) -> Result[Step, ProtocolError]:
        result: object = _new(container)
        set_value(result, step)
        return cast(Result[Step, ProtocolError], result)

    probe = _step(initial_state(), _CONTINUE_OUTCOME)
    try:
        built, made = success(probe), constructor(probe)
        same = (
            type(built) is type(made) is container
            and built == made
            and repr(built) == repr(made)
            and hash(built) == hash(made)
            and built.unwrap() is probe
        )
    except Exception:  # another layout of the container: keep the constructor
        return constructor
    return success if same else constructor


_success = _success_builder()
