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
from dataclasses import dataclass, field
from enum import Enum
from operator import attrgetter
from typing import Any, Final, cast

from returns.result import Failure, Result, Success

from policy.identity import REQUEST_ID_RULE, RequestId, is_request_id
from policy.records import (
    FieldRule,
    check_fields,
    instance_of,
    record_builder,
    shape_of,
    value_setter,
)
from policy.rotation.backlog import (
    EntryKind,
    GrantBacklog,
    _backlog,
    _entry,
    take_grantee,
)
from policy.rotation.decisions import (
    SKIP_CAP,
    _admits,
    _expired,
    _takes_tick,
    at_least,
    is_flag,
    is_whole,
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
        # Built by hand only: the protocol's builder (_job) skips this.
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
        # Built by hand only: the protocol's builder (_state) skips this.
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
# The per-event cost (docs/performance.md). An event builds only the records that
# change; the rest of the state is shared with the state it came from, and an
# event that changes nothing returns the state it was given. Records are built by
# the builders at the end of this module (about 0.2 µs a record, against 0.5
# through slot setters and more through ``dataclasses.replace``),
# an event that changes the state ends in ``_next`` (the state, its ``Step`` and
# the ``Success`` in one frame), enum members are read once into the constants
# below (``Branch.FINISH`` goes through ``EnumType.__getattr__`` on Python 3.11,
# about the cost of building a small record), and outcomes that never vary are
# built once. Checks the event settled are not made again on the paths behind
# them, and a path builds no record it does not return.

_ADMISSION_SLICE0 = SliceKind.ADMISSION_SLICE0
_GRANT_SLICE0 = SliceKind.GRANT_SLICE0
_ROUND = SliceKind.ROUND
_WAITER = EntryKind.WAITER
_PARKED = EntryKind.PARKED
_SPECULATIVE = TickUse.SPECULATIVE
_CLASSIC = TickUse.CLASSIC
_IDLE = TickUse.IDLE
_COMPLETED = Ending.COMPLETED
_CANCELLED = Ending.CANCELLED
_ABORTED = Ending.ABORTED
_ROUTED_CLASSIC = Ending.ROUTED_CLASSIC
_CLASSIC_ENDING = Ending.CLASSIC
_NEGATIVE_BUDGET = ProtocolErrorKind.NEGATIVE_BUDGET
_DUPLICATE_REQUEST = ProtocolErrorKind.DUPLICATE_REQUEST
_UNKNOWN_REQUEST = ProtocolErrorKind.UNKNOWN_REQUEST
_RESULT_PENDING = ProtocolErrorKind.RESULT_PENDING
_NO_ACTION_IN_FLIGHT = ProtocolErrorKind.NO_ACTION_IN_FLIGHT
_NOT_A_STATE = ProtocolErrorKind.NOT_A_STATE
_NOT_AN_EVENT = ProtocolErrorKind.NOT_AN_EVENT
_NOT_A_BUDGET = ProtocolErrorKind.NOT_A_BUDGET
_NOT_A_LANE = ProtocolErrorKind.NOT_A_LANE
_UNHASHABLE_REQUEST = ProtocolErrorKind.UNHASHABLE_REQUEST
_NOT_A_FLAG = ProtocolErrorKind.NOT_A_FLAG
_NOT_A_SET = ProtocolErrorKind.NOT_A_SET

_DIRECT_ADMISSION = (Branch.DIRECT_ADMISSION,)
_CLASSIC_FALLBACK = (Branch.CLASSIC_FALLBACK,)
_ROUND_BRANCHES = (Branch.ROUND,)
_FINISH = (Branch.FINISH,)
_EXPIRY_PARK = (Branch.EXPIRY_PARK,)
_CANCELLED_WAITER = (Branch.CANCELLED_WAITER,)
_DECLINED_WAITER = (Branch.DECLINED_WAITER,)
_WAITER_SLICE0 = (Branch.WAITER_SLICE0,)
_PARKED_PROMOTION = (Branch.PARKED_PROMOTION,)
_CANCELLED_JOB = (Branch.CANCELLED_JOB,)
_CLASSIC_TICK = (Branch.CLASSIC_TICK,)
_IDLE_TICK = (Branch.IDLE_TICK,)
_EMPTY_PROMOTION = (Branch.EMPTY_PROMOTION,)
_SEED = RulesProfile.SEED
_WAITING_OUTCOME = Outcome((Branch.WAITING,))
_NOTED_OUTCOME = Outcome((Branch.CANCEL_NOTED,))
_ADMISSION_TICK_OUTCOME = Outcome((Branch.ADMISSION_TICK,), _SPECULATIVE)
_CLASSIC_TICK_OUTCOME = Outcome(_CLASSIC_TICK, _CLASSIC)
_IDLE_TICK_OUTCOME = Outcome(_IDLE_TICK, _IDLE)
_CONTINUE_OUTCOME = Outcome((Branch.CONTINUE,))


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
    if type(given) is not RotationState and not isinstance(given, RotationState):
        return _refuse(_NOT_A_STATE, event)
    # The two events of every tick by their exact types first, then by class patterns.
    if type(happened) is Tick:
        return _tick(state, happened)
    if type(happened) is RoundResult:
        return _round_result(state, happened)
    match happened:  # the most frequent events first
        case Tick():
            return _tick(state, happened)
        case RoundResult():
            return _round_result(state, happened)
        case Arrival():
            return _arrive(state, happened)
        case Cancel():
            return _cancel(state, happened)
        case _:
            return _refuse(_NOT_AN_EVENT, event)


def _refuse(kind: ProtocolErrorKind, event: object) -> Result[Step, ProtocolError]:
    return Failure(_error(kind, cast(Event, event)))


def _arrive(state: RotationState, event: Arrival) -> Result[Step, ProtocolError]:
    budget: object = event.budget
    if type(budget) is not int and not is_whole(budget):
        return _refuse(_NOT_A_BUDGET, event)
    if event.budget < 0:
        return _refuse(_NEGATIVE_BUDGET, event)
    lane: object = event.lane
    if type(lane) is not Lane:
        return _refuse(_NOT_A_LANE, event)
    may_wait: object = event.may_wait
    if may_wait is not True and may_wait is not False:
        return _refuse(_NOT_A_FLAG, event)
    request = event.request
    if type(request) is not str and type(request) is not int and not is_request_id(request):
        return _refuse(_UNHASHABLE_REQUEST, event)
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
        return _next(
            job,
            backlog,
            state.profile is _SEED,  # mlxcel's Prefill arm clears the flag after it
            True,
            state,
            _outcome(_DIRECT_ADMISSION, None, _action(request, _ADMISSION_SLICE0), (), ()),
        )
    # A free slot whose tick was spent by an instant finish contends with nobody:
    # the request waits one tick for it, whatever the budget.
    deferred = active is None and not entries
    if event.may_wait and (deferred or _admits(len(entries), event.budget)):
        waiter = _entry(request, event.lane, _WAITER, 0, False)
        waiting = _backlog(entries.append(waiter))  # a new entry: no skip count to reset
        return _next(active, waiting, state.yielded, state.acted, state, _WAITING_OUTCOME)
    fallback = _outcome(_CLASSIC_FALLBACK, None, None, (_ended(request, _CLASSIC_ENDING),), ())
    return _done(state, fallback)


def _cancel(state: RotationState, event: Cancel) -> Result[Step, ProtocolError]:
    request = event.request
    if type(request) is not str and type(request) is not int and not is_request_id(request):
        return _refuse(_UNHASHABLE_REQUEST, event)
    active = state.active
    if active is not None and active.request == request:
        if active.cancelled:  # cancelled twice: nothing changes
            return _done(state, _NOTED_OUTCOME)
        marked = _job(
            active.request, active.lane, active.slices_in_grant, active.budget,
            active.in_flight, True,
        )  # fmt: skip
        return _next(
            marked,
            state.backlog,
            state.yielded,
            state.acted,
            state,
            _NOTED_OUTCOME,
        )
    entries = state.backlog.entries
    for index, entry in enumerate(entries):
        if entry.request == request:
            if entry.cancelled:
                return _done(state, _NOTED_OUTCOME)
            marked_entry = _entry(entry.request, entry.lane, entry.kind, entry.skipped, True)
            backlog = _backlog(entries.set(index, marked_entry))
            return _next(
                active,
                backlog,
                state.yielded,
                state.acted,
                state,
                _NOTED_OUTCOME,
            )
    return _refuse(_UNKNOWN_REQUEST, event)


def _tick(state: RotationState, event: Tick) -> Result[Step, ProtocolError]:
    budget: object = event.budget
    if type(budget) is not int and not is_whole(budget):
        return _refuse(_NOT_A_BUDGET, event)
    if event.budget < 0:
        return _refuse(_NEGATIVE_BUDGET, event)
    classic_work: object = event.classic_work
    if classic_work is not True and classic_work is not False:
        return _refuse(_NOT_A_FLAG, event)
    declined: object = event.declined
    if type(declined) is not frozenset and not isinstance(declined, AbstractSet):
        return _refuse(_NOT_A_SET, event)
    active = state.active
    if active is not None and active.in_flight is not None:
        return _refuse(_RESULT_PENDING, event)
    if state.acted:
        # The direct admission's slice 0 was this tick's model action.
        return _next(
            active,
            state.backlog,
            state.yielded,
            False,
            state,
            _ADMISSION_TICK_OUTCOME,
        )
    if active is not None:
        if _takes_tick(state.yielded, event.classic_work):
            if active.cancelled:
                return _finish_cancelled(
                    state.backlog, state, active.request, active.slices_in_grant, (), ()
                )
            # The holder's round (the budget stays the one cached at the grant's start).
            request = active.request
            job = _job(request, active.lane, active.slices_in_grant, active.budget, _ROUND, False)
            return _next(
                job,
                state.backlog,
                True,
                False,
                state,
                _outcome(_ROUND_BRANCHES, _SPECULATIVE, _action(request, _ROUND), (), ()),
            )
    elif state.backlog.entries and _takes_tick(state.yielded, event.classic_work):
        return _promote(state, event)
    # No speculative model action this tick.
    if not event.classic_work:
        return _done(state, _IDLE_TICK_OUTCOME)
    if state.yielded:
        return _next(active, state.backlog, False, False, state, _CLASSIC_TICK_OUTCOME)
    return _done(state, _CLASSIC_TICK_OUTCOME)


def _promote(state: RotationState, event: Tick) -> Result[Step, ProtocolError]:
    """Grant the slot to the next entry that can take it, within this tick (the slot
    is free and no direct admission took the tick)."""
    branches: tuple[Branch, ...] = ()
    ended: tuple[Ended, ...] = ()
    backlog = state.backlog
    skip_cap = state.skip_cap
    while True:
        taken = take_grantee(backlog.entries, skip_cap)
        if taken is None:
            if state.profile is not _SEED:
                # mlxcel's speculative arm ran and set the flag: the tick is used up.
                return _next(
                    None,
                    backlog,
                    True,
                    False,
                    state,
                    _outcome(branches + _EMPTY_PROMOTION, _SPECULATIVE, None, ended, ()),
                )
            # Everyone granted was cancelled or declined: give the tick away
            # (no speculative model action ran, so ``yielded`` is not set).
            if event.classic_work:
                return _next(
                    None,
                    backlog,
                    False,
                    False,
                    state,
                    _outcome(branches + _CLASSIC_TICK, _CLASSIC, None, ended, ()),
                )
            return _next(
                None,
                backlog,
                state.yielded,
                False,
                state,
                _outcome(branches + _IDLE_TICK, _IDLE, None, ended, ()),
            )
        entry, backlog = taken
        request = entry.request
        if entry.kind is _WAITER:
            if entry.cancelled:
                branches += _CANCELLED_WAITER
                ended += (_ended(request, _ABORTED),)
                continue
            if request in event.declined:
                branches += _DECLINED_WAITER
                ended += (_ended(request, _ROUTED_CLASSIC),)
                continue
            kind, branch = _GRANT_SLICE0, _WAITER_SLICE0
        else:
            kind, branch = _ROUND, _PARKED_PROMOTION
            if entry.cancelled:
                # A cancelled parked job: its round sees the cancel at once.
                return _finish_cancelled(backlog, state, request, 0, branches + branch, ended)
        job = _job(request, entry.lane, 0, event.budget, kind, False)
        return _next(
            job,
            backlog,
            True,
            False,
            state,
            _outcome(
                branches + branch if branches else branch,
                _SPECULATIVE,
                _action(request, kind),
                ended,
                (),
            ),
        )


def _finish_cancelled(  # noqa: PLR0917
    backlog: GrantBacklog,
    rules: RotationState,
    request: RequestId,
    slices_in_grant: int,
    branches: tuple[Branch, ...],
    ended: tuple[Ended, ...],
) -> Result[Step, ProtocolError]:
    """A cancelled job's round: a counted no-op slice that finishes it (a speculative
    tick that no direct admission took)."""
    return _next(
        None,
        backlog,
        True,
        False,
        rules,
        _outcome(
            branches + _CANCELLED_JOB,
            _SPECULATIVE,
            None,
            (*ended, _ended(request, _CANCELLED)),
            (_grant_end(request, slices_in_grant + 1, False),),
        ),
    )


def _round_result(state: RotationState, event: RoundResult) -> Result[Step, ProtocolError]:
    finished: object = event.finished
    if finished is not True and finished is not False:
        return _refuse(_NOT_A_FLAG, event)
    job = state.active
    if job is None:
        return _refuse(_NO_ACTION_IN_FLIGHT, event)
    in_flight = job.in_flight
    if in_flight is None:
        return _refuse(_NO_ACTION_IN_FLIGHT, event)
    request = job.request
    slices = job.slices_in_grant + 1
    backlog = state.backlog
    if finished is True:
        finish = _outcome(
            _FINISH,
            None,
            None,
            (_ended(request, _COMPLETED),),
            (_grant_end(request, slices, False),),
        )
        return _next(None, backlog, state.yielded, state.acted, state, finish)
    entries = backlog.entries
    if in_flight is not _ADMISSION_SLICE0 and _expired(slices, job.budget, bool(entries)):
        parked = _backlog(entries.append(_entry(request, job.lane, _PARKED, 0, job.cancelled)))
        park = _outcome(_EXPIRY_PARK, None, None, (), (_grant_end(request, slices, True),))
        return _next(None, parked, state.yielded, state.acted, state, park)
    active = _job(request, job.lane, slices, job.budget, None, job.cancelled)
    return _next(active, backlog, state.yielded, state.acted, state, _CONTINUE_OUTCOME)


# ----------------------------------------------------------------- record builders
#
# The records of a transition are built as in policy.rotation.backlog: each
# builder stores the fields in a plain slotted shape of its record, which then
# becomes the record (policy.records.record_builder), equal to what the
# constructor gives, at about 0.2 µs a record (checked at import for each; the
# slot setters where that check fails). ``_done`` builds
# ``Success(Step(state, outcome))`` and ``_next`` the same with a new state, the
# ``Success`` through the one slot ``returns`` keeps its value in
# (policy.records.value_setter: checked at import against ``Success`` itself,
# which is called wherever that check fails).

_JOB = shape_of(ActiveJob)
_STATE = shape_of(RotationState)
_ACTION = shape_of(ModelAction)
_ENDED = shape_of(Ended)
_GRANT_END = shape_of(GrantEnd)
_OUTCOME = shape_of(Outcome)
_STEP = shape_of(Step)
_ERROR = shape_of(ProtocolError)


def _build_job(  # noqa: PLR0917
    request: RequestId,
    lane: Lane,
    slices_in_grant: int,
    budget: int,
    in_flight: SliceKind | None,
    cancelled: bool,
) -> ActiveJob:
    job: Any = _JOB()
    job.request = request
    job.lane = lane
    job.slices_in_grant = slices_in_grant
    job.budget = budget
    job.in_flight = in_flight
    job.cancelled = cancelled
    job.__class__ = ActiveJob
    built: ActiveJob = job
    return built


def _build_state(  # noqa: PLR0917
    active: ActiveJob | None,
    backlog: GrantBacklog,
    yielded: bool,
    acted: bool,
    skip_cap: int,
    profile: RulesProfile,
) -> RotationState:
    state: Any = _STATE()
    state.active = active
    state.backlog = backlog
    state.yielded = yielded
    state.acted = acted
    state.skip_cap = skip_cap
    state.profile = profile
    state.__class__ = RotationState
    built: RotationState = state
    return built


def _build_action(request: RequestId, kind: SliceKind) -> ModelAction:
    action: Any = _ACTION()
    action.request = request
    action.kind = kind
    action.__class__ = ModelAction
    built: ModelAction = action
    return built


def _build_ended(request: RequestId, ending: Ending) -> Ended:
    ended: Any = _ENDED()
    ended.request = request
    ended.ending = ending
    ended.__class__ = Ended
    built: Ended = ended
    return built


def _build_grant_end(request: RequestId, slices: int, parked: bool) -> GrantEnd:
    grant: Any = _GRANT_END()
    grant.request = request
    grant.slices = slices
    grant.parked = parked
    grant.__class__ = GrantEnd
    built: GrantEnd = grant
    return built


def _build_outcome(
    branches: tuple[Branch, ...],
    use: TickUse | None,
    action: ModelAction | None,
    ended: tuple[Ended, ...],
    grants: tuple[GrantEnd, ...],
) -> Outcome:
    outcome: Any = _OUTCOME()
    outcome.branches = branches
    outcome.use = use
    outcome.action = action
    outcome.ended = ended
    outcome.grants = grants
    outcome.__class__ = Outcome
    built: Outcome = outcome
    return built


def _build_step(state: RotationState, outcome: Outcome) -> Step:
    step: Any = _STEP()
    step.state = state
    step.outcome = outcome
    step.__class__ = Step
    built: Step = step
    return built


def _build_error(kind: ProtocolErrorKind, event: Event) -> ProtocolError:
    error: Any = _ERROR()
    error.kind = kind
    error.event = event
    error.__class__ = ProtocolError
    built: ProtocolError = error
    return built


_job = record_builder(ActiveJob, _build_job)
_state = record_builder(RotationState, _build_state)
_action = record_builder(ModelAction, _build_action)
_ended = record_builder(Ended, _build_ended)
_grant_end = record_builder(GrantEnd, _build_grant_end)
_outcome = record_builder(Outcome, _build_outcome)
_step = record_builder(Step, _build_step)
_error = record_builder(ProtocolError, _build_error)

_new = object.__new__
_set_success = value_setter(Success)


def _done(state: RotationState, outcome: Outcome) -> Result[Step, ProtocolError]:
    """``Success(Step(state, outcome))``."""
    step = _step(state, outcome)
    if _set_success is None:  # pragma: no cover - a returns whose Success differs
        return Success(step)
    result: Result[Step, ProtocolError] = _new(Success)
    _set_success(result, step)
    return result


def _next_by_builders(  # noqa: PLR0917
    active: ActiveJob | None,
    backlog: GrantBacklog,
    yielded: bool,
    acted: bool,
    rules: RotationState,
    outcome: Outcome,
) -> Result[Step, ProtocolError]:
    """``Success(Step(RotationState(active, backlog, yielded, acted, rules.skip_cap,
    rules.profile), outcome))``: ``rules`` is the state whose skip cap and rules
    profile every transition keeps."""
    state = _state(active, backlog, yielded, acted, rules.skip_cap, rules.profile)
    return _done(state, outcome)


def _next_in_shapes(  # noqa: PLR0917
    active: ActiveJob | None,
    backlog: GrantBacklog,
    yielded: bool,
    acted: bool,
    rules: RotationState,
    outcome: Outcome,
) -> Result[Step, ProtocolError]:
    """:func:`_next_by_builders` in one frame: the state and the step filled as
    ``_build_state`` and ``_build_step`` fill them (every event that changes the
    state ends here, so the two calls it saves are on every such event)."""
    if _set_success is None:  # pragma: no cover - not chosen then (see _next)
        return _next_by_builders(active, backlog, yielded, acted, rules, outcome)
    state: Any = _STATE()
    state.active = active
    state.backlog = backlog
    state.yielded = yielded
    state.acted = acted
    state.skip_cap = rules.skip_cap
    state.profile = rules.profile
    state.__class__ = RotationState
    step: Any = _STEP()
    step.state = state
    step.outcome = outcome
    step.__class__ = Step
    result: Any = _new(Success)
    _set_success(result, step)
    done: Result[Step, ProtocolError] = result
    return done


#: ``Success(Step(RotationState(active, backlog, yielded, acted, rules.skip_cap,
#: rules.profile), outcome))``:
#: in one frame where the builders it inlines are the shape-filling ones.
_next = (
    _next_in_shapes
    if _state is _build_state and _step is _build_step and _set_success is not None
    else _next_by_builders
)
