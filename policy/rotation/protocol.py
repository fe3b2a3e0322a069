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

The state also names the rules it runs by (:class:`RulesProfile`, chosen in
:func:`initial_state` and kept by every transition): the seed's, above, or
mlxcel's tick accounting, which differs where the seed is silent in exactly two
places. A direct admission leaves ``yielded`` clear (mlxcel runs it inside its
Prefill action, whose arm clears the flag), so its slice 0 and the next round
run back to back while classic work waits; and a promotion that finds only
cancelled or declined waiters uses up the tick (mlxcel's speculative arm sets
the flag whatever it found: ``Branch.EMPTY_PROMOTION``, a speculative tick with
no model action) instead of giving it to classic work.

Illegal events return a :class:`ProtocolError` and leave the state as it was.
So do values of the wrong type, checked where they enter (in
:func:`apply_event`, before anything else): a state that is not a
:class:`RotationState`, an object that is not an event, a budget that is not an
``int`` (``nan``, ``2.5``, ``"3"``, ``None``, a bool), a lane that is not a
:class:`Lane` (header text goes through ``parse_lane``), a request id that
:func:`~policy.identity.is_request_id` refuses (unhashable, or not equal to
itself, as a float NaN is), a flag that is not ``True``/``False`` and a
``declined`` that is not a set.
Records built by hand (:class:`RotationState`, :class:`ActiveJob`) check their
fields in their constructors, with a ``TypeError``.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from enum import Enum
from operator import attrgetter
from typing import Final, cast

from returns.result import Failure, Result, Success

from policy.identity import REQUEST_ID_RULE, RequestId, is_request_id
from policy.records import FieldRule, check_fields, instance_of
from policy.rotation.backlog import BacklogEntry, EntryKind, GrantBacklog, take_grantee
from policy.rotation.decisions import (
    SKIP_CAP,
    at_least,
    backlog_has_room,
    grant_expired,
    is_flag,
    is_whole,
    takes_tick,
)
from policy.rotation.lanes import Lane
from policy.text import cut, record_repr, represent

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
    "RulesProfile",
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


class RulesProfile(Enum):
    """The tick accounting a state runs by (docs/rotation.md, "Rules profiles")."""

    SEED = "seed"  # the rules of the seed specification
    MLXCEL = "mlxcel"  # mlxcel's scheduler.rs, where the seed is silent


@dataclass(frozen=True, slots=True)
class ActiveJob:
    """The job holding the slot (its constructor checks each field's type)."""

    request: RequestId
    lane: Lane
    slices_in_grant: int  # slices whose results came back in this grant
    budget: int  # read once when the grant started
    in_flight: SliceKind | None = None  # a model action awaiting its RoundResult
    cancelled: bool = False

    __repr__ = record_repr  # a request id of any size or text

    def __post_init__(self) -> None:
        check_fields(self, _JOB_FIELDS)


@dataclass(frozen=True, slots=True)
class RotationState:
    """Everything the protocol remembers between events (its constructor checks
    each field's type, a ``TypeError``; :func:`initial_state` builds the first one)."""

    active: ActiveJob | None = None
    backlog: GrantBacklog = field(default_factory=GrantBacklog)
    yielded: bool = False  # the last tick went to speculation
    acted: bool = False  # a direct admission already took this tick's model action
    skip_cap: int = SKIP_CAP
    profile: RulesProfile = RulesProfile.SEED  # the tick accounting (docs/rotation.md)

    __repr__ = record_repr  # a skip cap of any size

    def __post_init__(self) -> None:
        check_fields(self, _STATE_FIELDS)
        at_least("RotationState.skip_cap", self.skip_cap, 1)


#: What the fields of a hand-built ActiveJob and RotationState must be.
_JOB_FIELDS: tuple[FieldRule, ...] = (
    ("request", is_request_id, REQUEST_ID_RULE),
    ("lane", instance_of(Lane), "a Lane (see parse_lane)"),
    ("slices_in_grant", is_whole, "an int"),
    ("budget", is_whole, "an int"),
    ("in_flight", instance_of(SliceKind, type(None)), "a SliceKind or None"),
    ("cancelled", is_flag, "True or False"),
)
_STATE_FIELDS: tuple[FieldRule, ...] = (
    ("active", instance_of(ActiveJob, type(None)), "an ActiveJob or None"),
    ("backlog", instance_of(GrantBacklog), "a GrantBacklog"),
    ("yielded", is_flag, "True or False"),
    ("acted", is_flag, "True or False"),
    ("skip_cap", is_whole, "an int"),
    ("profile", instance_of(RulesProfile), "a RulesProfile"),
)


def initial_state(
    skip_cap: int = SKIP_CAP, profile: RulesProfile = RulesProfile.SEED
) -> RotationState:
    """An idle worker: empty slot, empty backlog, running by the rules of ``profile``.

    ``skip_cap`` must be an int (not a bool) and ``profile`` a :class:`RulesProfile`:
    a ``TypeError`` otherwise; and ``skip_cap`` at least 1, as the scenario loader
    reads it (a ``ValueError``: a cap of 0 would make every waiting entry overdue at
    once).

    >>> initial_state().active is None
    True
    >>> initial_state(profile=RulesProfile.MLXCEL).profile
    <RulesProfile.MLXCEL: 'mlxcel'>
    >>> initial_state("2")
    Traceback (most recent call last):
    ...
    TypeError: RotationState.skip_cap must be an int, not str
    >>> initial_state(0)
    Traceback (most recent call last):
    ...
    ValueError: RotationState.skip_cap must be at least 1, not 0
    """
    return RotationState(skip_cap=skip_cap, profile=profile)


def live_requests(state: RotationState) -> tuple[RequestId, ...]:
    """The speculative sessions alive: the holder first, then the backlog.

    ``state`` must be a :class:`RotationState` (a ``TypeError`` otherwise).

    >>> live_requests(None)
    Traceback (most recent call last):
    ...
    TypeError: live_requests takes a RotationState, not NoneType
    """
    if not isinstance(state, RotationState):
        raise TypeError(f"live_requests takes a RotationState, not {type(state).__name__}")
    active = state.active
    entries = state.backlog.entries
    if not entries:
        return () if active is None else (active.request,)
    if active is None:
        return tuple(map(_request_of, entries))
    return (active.request, *map(_request_of, entries))


_request_of = attrgetter("request")


# -------------------------------------------------------------------------- events


# Events are built by the host at every tick, so their constructors check nothing:
# apply_event checks each field's type when the event enters the protocol, and
# refuses a wrong one with a ProtocolError (the state unchanged).


@dataclass(frozen=True, slots=True)
class Arrival:
    """A speculative-eligible request arrives; ``budget`` is the current setting."""

    request: RequestId
    lane: Lane
    budget: int
    may_wait: bool = True  # the host's verdict: may it wait for the slot?

    __repr__ = record_repr


@dataclass(frozen=True, slots=True)
class Tick:
    """The scheduler's decision for this tick, after its arrivals and cancels."""

    budget: int  # the current setting, cached by any grant this tick starts
    classic_work: bool = False  # other requests have classic prefill or decode to do
    declined: frozenset[RequestId] = frozenset()  # waiters the host now declines

    __repr__ = record_repr


@dataclass(frozen=True, slots=True)
class RoundResult:
    """The result of the model action the kernel handed out."""

    finished: bool

    __repr__ = record_repr


@dataclass(frozen=True, slots=True)
class Cancel:
    """The client of ``request`` cancelled it."""

    request: RequestId

    __repr__ = record_repr


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
    EMPTY_PROMOTION = "empty promotion"  # RulesProfile.MLXCEL: nobody granted, tick used


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

    __repr__ = record_repr


@dataclass(frozen=True, slots=True)
class Ended:
    """A request left the speculative path."""

    request: RequestId
    ending: Ending

    __repr__ = record_repr


@dataclass(frozen=True, slots=True)
class GrantEnd:
    """A grant ended (a line of the grant log)."""

    request: RequestId
    slices: int
    parked: bool  # False: the job finished (completed or cancelled)

    __repr__ = record_repr


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
    # Values of the wrong type, refused where they enter (apply_event):
    NOT_A_STATE = "the state is not a RotationState (start from initial_state())"
    NOT_AN_EVENT = "not an event (an Arrival, Tick, RoundResult or Cancel)"
    NOT_A_BUDGET = "a grant budget must be an int (not a bool, a float, text or None)"
    NOT_A_LANE = "a lane must be a Lane (read a header's text with parse_lane)"
    # A request id that is_request_id refuses: unhashable, or not equal to itself (NaN).
    UNHASHABLE_REQUEST = "a request id must be hashable and equal to itself"
    NOT_A_FLAG = "may_wait, classic_work and finished must be True or False"
    NOT_A_SET = "declined must be a set (frozenset) of request ids"


#: How many characters of the event a :class:`ProtocolError`'s message shows.
EVENT_SHOWN: Final = 200


@dataclass(frozen=True, slots=True)
class ProtocolError:
    """An illegal event; the state it was applied to is unchanged.

    ``event`` is the event as given (for ``NOT_AN_EVENT``, the object given). Its
    ``str`` is one printable line, whatever the event holds, showing at most
    :data:`EVENT_SHOWN` characters of the event (:func:`policy.text.cut`: a 10 MB
    request id makes a message of a line).

    >>> str(ProtocolError(ProtocolErrorKind.UNKNOWN_REQUEST, Cancel("a\\nb")))
    "the request is not on the speculative path: Cancel(request='a\\\\nb')"
    """

    kind: ProtocolErrorKind
    event: Event

    __repr__ = record_repr

    def __str__(self) -> str:
        return f"{self.kind.value}: {cut(represent(self.event), EVENT_SHOWN)}"


# ---------------------------------------------------------------------- transitions
#
# Each transition builds the records that change, with their constructors by
# keyword or with ``replace``; the rest of the state is shared with the state it
# came from, and an event that changes nothing returns the state it was given.
# Every record a transition builds checks its fields as a hand-built one does: a
# Tick + RoundResult pair costs a few microseconds, where a model round costs
# milliseconds (docs/performance.md, "Rotation").

#: The outcomes that never vary.
_WAITING = Outcome(branches=(Branch.WAITING,))
_CANCEL_NOTED = Outcome(branches=(Branch.CANCEL_NOTED,))
_ADMISSION_TICK = Outcome(branches=(Branch.ADMISSION_TICK,), use=TickUse.SPECULATIVE)
_CLASSIC_TICK = Outcome(branches=(Branch.CLASSIC_TICK,), use=TickUse.CLASSIC)
_IDLE_TICK = Outcome(branches=(Branch.IDLE_TICK,), use=TickUse.IDLE)
_CONTINUE = Outcome(branches=(Branch.CONTINUE,))


def apply_event(state: RotationState, event: Event) -> Result[Step, ProtocolError]:
    """Apply one event: the new state and what was decided, or why it is illegal.

    >>> state = initial_state()
    >>> step = apply_event(state, Arrival("A", Lane.NORMAL, budget=2)).unwrap()
    >>> [branch.name for branch in step.outcome.branches], step.outcome.action.kind.name
    (['DIRECT_ADMISSION'], 'ADMISSION_SLICE0')
    >>> apply_event(state, RoundResult(finished=True)).failure().kind.name
    'NO_ACTION_IN_FLIGHT'

    Values of the wrong type are refused here, at once (see the module's theory
    of operation), never later in an unrelated event:

    >>> apply_event(state, Arrival("A", Lane.NORMAL, budget=float("nan"))).failure().kind.name
    'NOT_A_BUDGET'
    >>> apply_event(state, "tick").failure().kind.name
    'NOT_AN_EVENT'
    """
    # Typed object here: the annotations say what is right, not what a host may pass.
    given: object = state
    happened: object = event
    if not isinstance(given, RotationState):
        return _refused(ProtocolErrorKind.NOT_A_STATE, event)
    match happened:
        case Tick():
            return _tick(state, happened)
        case RoundResult():
            return _round_result(state, happened)
        case Arrival():
            return _arrive(state, happened)
        case Cancel():
            return _cancel(state, happened)
        case _:
            return _refused(ProtocolErrorKind.NOT_AN_EVENT, event)


def _stepped(state: RotationState, outcome: Outcome) -> Result[Step, ProtocolError]:
    """The new state and what was decided."""
    return Success(Step(state=state, outcome=outcome))


def _refused(kind: ProtocolErrorKind, event: object) -> Result[Step, ProtocolError]:
    """The event is illegal: the state stays as it was."""
    return Failure(ProtocolError(kind=kind, event=cast(Event, event)))


def _arrive(state: RotationState, event: Arrival) -> Result[Step, ProtocolError]:
    if not is_whole(event.budget):
        return _refused(ProtocolErrorKind.NOT_A_BUDGET, event)
    if event.budget < 0:
        return _refused(ProtocolErrorKind.NEGATIVE_BUDGET, event)
    lane: object = event.lane
    if not isinstance(lane, Lane):
        return _refused(ProtocolErrorKind.NOT_A_LANE, event)
    if not is_flag(event.may_wait):
        return _refused(ProtocolErrorKind.NOT_A_FLAG, event)
    request = event.request
    if not is_request_id(request):
        return _refused(ProtocolErrorKind.UNHASHABLE_REQUEST, event)
    if request in live_requests(state):
        return _refused(ProtocolErrorKind.DUPLICATE_REQUEST, event)
    active, backlog = state.active, state.backlog
    if active is None and not backlog.entries and not state.acted:
        kind = SliceKind.ADMISSION_SLICE0
        job = ActiveJob(
            request=request, lane=event.lane, slices_in_grant=0, budget=event.budget, in_flight=kind
        )
        admitted = replace(
            state,
            active=job,
            yielded=state.profile is RulesProfile.SEED,  # mlxcel's Prefill arm clears it
            acted=True,
        )
        action = ModelAction(request=request, kind=kind)
        return _stepped(admitted, Outcome(branches=(Branch.DIRECT_ADMISSION,), action=action))
    # A free slot whose tick was spent by an instant finish contends with nobody:
    # the request waits one tick for it, whatever the budget.
    deferred = active is None and not backlog.entries
    if event.may_wait and (deferred or backlog_has_room(len(backlog), event.budget)):
        waiter = BacklogEntry(request=request, lane=event.lane, kind=EntryKind.WAITER)
        return _stepped(replace(state, backlog=backlog.append(waiter)), _WAITING)
    fallback = Ended(request=request, ending=Ending.CLASSIC)
    return _stepped(state, Outcome(branches=(Branch.CLASSIC_FALLBACK,), ended=(fallback,)))


def _cancel(state: RotationState, event: Cancel) -> Result[Step, ProtocolError]:
    request = event.request
    if not is_request_id(request):
        return _refused(ProtocolErrorKind.UNHASHABLE_REQUEST, event)
    active = state.active
    if active is not None and active.request == request:
        if active.cancelled:  # cancelled twice: nothing changes
            return _stepped(state, _CANCEL_NOTED)
        return _stepped(replace(state, active=replace(active, cancelled=True)), _CANCEL_NOTED)
    for index, entry in enumerate(state.backlog.entries):
        if entry.request == request:
            if entry.cancelled:
                return _stepped(state, _CANCEL_NOTED)
            marked = state.backlog.mark_cancelled(index)
            return _stepped(replace(state, backlog=marked), _CANCEL_NOTED)
    return _refused(ProtocolErrorKind.UNKNOWN_REQUEST, event)


def _tick(state: RotationState, event: Tick) -> Result[Step, ProtocolError]:
    if not is_whole(event.budget):
        return _refused(ProtocolErrorKind.NOT_A_BUDGET, event)
    if event.budget < 0:
        return _refused(ProtocolErrorKind.NEGATIVE_BUDGET, event)
    if not is_flag(event.classic_work):
        return _refused(ProtocolErrorKind.NOT_A_FLAG, event)
    declined: object = event.declined
    if not isinstance(declined, AbstractSet):
        return _refused(ProtocolErrorKind.NOT_A_SET, event)
    active = state.active
    if active is not None and active.in_flight is not None:
        return _refused(ProtocolErrorKind.RESULT_PENDING, event)
    if state.acted:
        # The direct admission's slice 0 was this tick's model action.
        return _stepped(replace(state, acted=False), _ADMISSION_TICK)
    if active is not None:
        if takes_tick(state.yielded, event.classic_work):
            if active.cancelled:
                return _finish_cancelled(
                    state,
                    active.request,
                    slices_in_grant=active.slices_in_grant,
                    branches=(),
                    ended=(),
                )
            # The holder's round (the budget stays the one cached at the grant's start).
            job = replace(active, in_flight=SliceKind.ROUND)
            action = ModelAction(request=active.request, kind=SliceKind.ROUND)
            outcome = Outcome(branches=(Branch.ROUND,), use=TickUse.SPECULATIVE, action=action)
            return _stepped(replace(state, active=job, yielded=True), outcome)
    elif state.backlog.entries and takes_tick(state.yielded, event.classic_work):
        return _promote(state, event)
    # No speculative model action this tick.
    if not event.classic_work:
        return _stepped(state, _IDLE_TICK)
    if state.yielded:
        return _stepped(replace(state, yielded=False), _CLASSIC_TICK)
    return _stepped(state, _CLASSIC_TICK)


def _promote(state: RotationState, event: Tick) -> Result[Step, ProtocolError]:
    """Grant the slot to the next entry that can take it, within this tick (the slot
    is free and no direct admission took the tick)."""
    branches: tuple[Branch, ...] = ()
    ended: tuple[Ended, ...] = ()
    backlog = state.backlog
    while True:
        taken = take_grantee(backlog.entries, state.skip_cap)
        if taken is None:
            if state.profile is not RulesProfile.SEED:
                # mlxcel's speculative arm ran and set the flag: the tick is used up.
                branches += (Branch.EMPTY_PROMOTION,)
                used = Outcome(branches=branches, use=TickUse.SPECULATIVE, ended=ended)
                return _stepped(replace(state, backlog=backlog, yielded=True), used)
            # Everyone granted was cancelled or declined: give the tick away
            # (no speculative model action ran, so ``yielded`` is not set).
            if event.classic_work:
                branches += (Branch.CLASSIC_TICK,)
                given = Outcome(branches=branches, use=TickUse.CLASSIC, ended=ended)
                return _stepped(replace(state, backlog=backlog, yielded=False), given)
            branches += (Branch.IDLE_TICK,)
            idle = Outcome(branches=branches, use=TickUse.IDLE, ended=ended)
            return _stepped(replace(state, backlog=backlog), idle)
        entry, backlog = taken
        request = entry.request
        if entry.kind is EntryKind.WAITER:
            if entry.cancelled:
                branches += (Branch.CANCELLED_WAITER,)
                ended += (Ended(request=request, ending=Ending.ABORTED),)
                continue
            if request in event.declined:
                branches += (Branch.DECLINED_WAITER,)
                ended += (Ended(request=request, ending=Ending.ROUTED_CLASSIC),)
                continue
            kind, branch = SliceKind.GRANT_SLICE0, Branch.WAITER_SLICE0
        else:
            kind, branch = SliceKind.ROUND, Branch.PARKED_PROMOTION
            if entry.cancelled:
                # A cancelled parked job: its round sees the cancel at once.
                return _finish_cancelled(
                    replace(state, backlog=backlog),
                    request,
                    slices_in_grant=0,
                    branches=(*branches, branch),
                    ended=ended,
                )
        job = ActiveJob(
            request=request, lane=entry.lane, slices_in_grant=0, budget=event.budget, in_flight=kind
        )
        granted = Outcome(
            branches=(*branches, branch),
            use=TickUse.SPECULATIVE,
            action=ModelAction(request=request, kind=kind),
            ended=ended,
        )
        return _stepped(replace(state, active=job, backlog=backlog, yielded=True), granted)


def _finish_cancelled(
    state: RotationState,
    request: RequestId,
    *,
    slices_in_grant: int,
    branches: tuple[Branch, ...],
    ended: tuple[Ended, ...],
) -> Result[Step, ProtocolError]:
    """A cancelled job's round: a counted no-op slice that finishes it (a speculative
    tick that no direct admission took); ``state`` holds the backlog it leaves."""
    outcome = Outcome(
        branches=(*branches, Branch.CANCELLED_JOB),
        use=TickUse.SPECULATIVE,
        ended=(*ended, Ended(request=request, ending=Ending.CANCELLED)),
        grants=(GrantEnd(request=request, slices=slices_in_grant + 1, parked=False),),
    )
    return _stepped(replace(state, active=None, yielded=True), outcome)


def _round_result(state: RotationState, event: RoundResult) -> Result[Step, ProtocolError]:
    if not is_flag(event.finished):
        return _refused(ProtocolErrorKind.NOT_A_FLAG, event)
    job = state.active
    if job is None or job.in_flight is None:
        return _refused(ProtocolErrorKind.NO_ACTION_IN_FLIGHT, event)
    request = job.request
    slices = job.slices_in_grant + 1
    if event.finished:
        finished = Outcome(
            branches=(Branch.FINISH,),
            ended=(Ended(request=request, ending=Ending.COMPLETED),),
            grants=(GrantEnd(request=request, slices=slices, parked=False),),
        )
        return _stepped(replace(state, active=None), finished)
    expired = grant_expired(slices, job.budget, bool(state.backlog.entries))
    if job.in_flight is not SliceKind.ADMISSION_SLICE0 and expired:
        parked = BacklogEntry(
            request=request, lane=job.lane, kind=EntryKind.PARKED, cancelled=job.cancelled
        )
        park = Outcome(
            branches=(Branch.EXPIRY_PARK,),
            grants=(GrantEnd(request=request, slices=slices, parked=True),),
        )
        return _stepped(replace(state, active=None, backlog=state.backlog.append(parked)), park)
    holder = replace(job, slices_in_grant=slices, in_flight=None)
    return _stepped(replace(state, active=holder), _CONTINUE)
