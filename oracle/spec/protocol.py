"""The tick protocol of rotation.md, written a second time: one function per case.

A literal reading of rotation.md's section "The protocol (what the tick state
machine must do)" together with every decision of docs/rotation.md ("Where the
spec is silent, the kernel decides"). Plain stdlib; nothing from ``policy``.

The host's interface. A scheduler tick is any number of ``Arrival`` and ``Cancel``
events, then exactly one ``Tick``. Every model action handed out (a slice 0 or a
round) is answered by exactly one ``RoundResult`` before the next ``Tick``. A direct
admission hands out its slice 0 at the ``Arrival`` itself; that is the tick's one
model action, and the ``Tick`` that closes the tick is then an admission tick.

Counting (docs/rotation.md): 'The slices-in-grant counter starts at 0 when a grant
starts, with the budget cached from the event that started it, and every slice
result adds one. So a direct admission's slice 0, a waiter's slice 0 and a promoted
parked job's round all leave the counter at 1, as the spec says.'

Rules profiles (docs/rotation.md, "Rules profiles"). The state names the rules it
runs by: ``"seed"``, the rules above, or ``"mlxcel"``, the tick accounting of
mlxcel's scheduler (read from its ``scheduler.rs``) where the seed is silent. They
differ in exactly two places, each marked ``MLXCEL_RULES`` below:

- a direct admission runs inside mlxcel's Prefill action, whose arm clears the
  alternation flag afterwards: ``yielded`` is False after it, so slice 0 and the
  next round run back to back while classic work waits;
- a promotion that finds only cancelled or declined waiters ran in mlxcel's
  speculative arm, which sets the flag: it uses up the tick (``use`` speculative,
  ``yielded`` True, branch "empty promotion") instead of giving it away.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TypeAlias

from oracle.spec.grant_order import (
    SKIP_CAP,
    SpecEntry,
    backlog_admits,
    slice_grant_expired,
    slice_takes_tick,
    take_next_grantee,
)

Request: TypeAlias = str | int

# The kinds of model action (Outcome.action[1], Job.in_flight).
ADMISSION_SLICE0 = "admission slice 0"
GRANT_SLICE0 = "grant slice 0"
ROUND = "round"

# The tick's use (Outcome.use, Tick events only).
SPECULATIVE = "speculative"
CLASSIC = "classic"
IDLE = "idle"

# The endings (Outcome.ended): "every request ends exactly once: completed,
# cancelled, aborted, routed to classic, or classic fallback".
COMPLETED = "completed"
CANCELLED = "cancelled"
ABORTED = "aborted"
ROUTED_CLASSIC = "routed_classic"
CLASSIC_ENDING = "classic"

# The branches (docs/rotation.md's table of events and branches).
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
ROUND_BRANCH = "round"
CANCELLED_JOB = "cancelled job"
CONTINUE = "continue"
PARK = "park"
FINISH = "finish"

# The rules profiles (State.profile).
SEED_RULES = "seed"
MLXCEL_RULES = "mlxcel"
PROFILES = (SEED_RULES, MLXCEL_RULES)
# The branch only the mlxcel rules take: a promotion that found nobody used the tick.
EMPTY_PROMOTION = "empty promotion"

# The illegal events (docs/rotation.md: 'a RoundResult with no action in flight, a Tick
# while a result is pending, a duplicate arrival, a cancel of an unknown request, a
# negative budget — return Failure(ProtocolError) and the caller keeps its old state').
NO_ACTION_IN_FLIGHT = "no action in flight"
RESULT_PENDING = "result pending"
UNKNOWN_REQUEST = "unknown request"
DUPLICATE_REQUEST = "duplicate request"
NEGATIVE_BUDGET = "negative budget"


# ---------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class Arrival:
    """A speculative-eligible request arrives (the host decided eligibility)."""

    request: Request
    lane: int
    budget: int  # the current budget setting, already parsed
    may_wait: bool = True  # the host's verdict: may this request wait for the slot?


@dataclass(frozen=True, slots=True)
class Tick:
    """The one event that closes a scheduler tick."""

    budget: int  # the current budget setting, cached by a grant this tick starts
    classic_work: bool = False  # whether classic prefill/decode work is waiting
    declined: frozenset[Request] = field(default_factory=frozenset)  # waiters now declined


@dataclass(frozen=True, slots=True)
class RoundResult:
    """The answer to the model action in flight."""

    finished: bool  # did this slice finish the job?


@dataclass(frozen=True, slots=True)
class Cancel:
    """The client of a request on the speculative path cancels it."""

    request: Request


Event: TypeAlias = Arrival | Tick | RoundResult | Cancel


# ---------------------------------------------------------------- state


@dataclass(frozen=True, slots=True)
class Job:
    """The job that holds the slot."""

    request: Request
    lane: int
    slices: int  # slices whose results came back in this grant (the counter)
    budget: int  # cached when the grant started
    in_flight: str | None  # None, or the kind of the action awaiting its RoundResult
    cancelled: bool = False


@dataclass(frozen=True, slots=True)
class State:
    """'State: the active job (at most one) with its slices-in-this-grant counter and
    cached budget; the backlog (entries in order: waiters that never ran, parked
    jobs); the yielded flag.'"""

    active: Job | None = None
    backlog: tuple[SpecEntry, ...] = ()
    yielded: bool = False  # the last decided tick went to speculation
    acted: bool = False  # a direct admission already used this tick's model action
    skip_cap: int = SKIP_CAP
    profile: str = SEED_RULES  # the rules: SEED_RULES or MLXCEL_RULES


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one event did."""

    branches: tuple[str, ...]
    use: str | None = None  # "speculative" | "classic" | "idle", for Tick events only
    action: tuple[Request, str] | None = None  # (request, kind): the model action to run now
    ended: tuple[tuple[Request, str], ...] = ()  # (request, ending)
    grants: tuple[tuple[Request, int, bool], ...] = ()  # (request, slices, ended by a park)


Step: TypeAlias = tuple[State, Outcome]


def initial_state(skip_cap: int = SKIP_CAP, profile: str = SEED_RULES) -> State:
    """The state before any event: an empty slot, an empty backlog, nothing yielded.

    >>> initial_state()
    State(active=None, backlog=(), yielded=False, acted=False, skip_cap=2, profile='seed')
    >>> initial_state(skip_cap=99, profile=MLXCEL_RULES).skip_cap
    99
    """
    return State(skip_cap=skip_cap, profile=profile)


def live_requests(state: State) -> tuple[Request, ...]:
    """The requests on the speculative path: the holder first, then the backlog in order.

    >>> s = State(active=Job("A", 1, 1, 2, None), backlog=(SpecEntry("B", 1, parked=False),))
    >>> live_requests(s)
    ('A', 'B')
    >>> live_requests(initial_state())
    ()
    """
    holder = () if state.active is None else (state.active.request,)
    return holder + tuple(entry.request for entry in state.backlog)


def step(state: State, event: Event) -> Step | str:
    """Apply one event: the new state and what happened, or the kind of error (state kept).

    rotation.md's acceptance harness at budget 2 (A: 4 slices, B: 3 slices):

    >>> s = initial_state()
    >>> log = []
    >>> def run(s, event):
    ...     result = step(s, event)
    ...     assert not isinstance(result, str), result
    ...     s, out = result
    ...     log.extend((request, slices) for request, slices, _ in out.grants)
    ...     return s, out
    >>> s, out = run(s, Arrival("A", 1, budget=2))
    >>> out.branches, out.action
    (('direct admission',), ('A', 'admission slice 0'))
    >>> s, out = run(s, RoundResult(finished=False))
    >>> s, out = run(s, Arrival("B", 1, budget=2))
    >>> out.branches
    ('waiting',)
    >>> s, out = run(s, Tick(budget=2))
    >>> out.branches, out.use
    (('tick taken by a direct admission',), 'speculative')
    >>> remaining = {"A": 3, "B": 3}
    >>> while live_requests(s):
    ...     s, out = run(s, Tick(budget=2))
    ...     request, _ = out.action
    ...     remaining[request] -= 1
    ...     s, out = run(s, RoundResult(finished=remaining[request] == 0))
    >>> log
    [('A', 2), ('B', 2), ('A', 2), ('B', 1)]

    Illegal events leave the state to the caller:

    >>> step(s, RoundResult(finished=True))
    'no action in flight'
    >>> step(s, Cancel("Z"))
    'unknown request'
    >>> step(s, Tick(budget=-1))
    'negative budget'
    """
    if isinstance(event, Arrival):
        return on_arrival(state, event)
    if isinstance(event, Tick):
        return on_tick(state, event)
    if isinstance(event, RoundResult):
        return on_round_result(state, event)
    return on_cancel(state, event)


# ---------------------------------------------------------------- Arrival


def on_arrival(state: State, arrival: Arrival) -> Step | str:
    """'Arrival of a speculative-eligible request (the host decides eligibility)'.

    >>> s, out = on_arrival(initial_state(), Arrival("A", 1, budget=8))
    >>> out.branches, s.active.slices, s.active.budget, s.yielded, s.acted
    (('direct admission',), 0, 8, True, True)
    >>> on_arrival(initial_state(profile=MLXCEL_RULES), Arrival("A", 1, budget=8))[0].yielded
    False
    >>> on_arrival(s, Arrival("A", 1, budget=8))
    'duplicate request'
    >>> on_arrival(s, Arrival("A", 1, budget=-1))
    'negative budget'
    """
    # Check order: a negative budget first, then a duplicate.
    if arrival.budget < 0:
        return NEGATIVE_BUDGET
    if arrival.request in live_requests(state):
        return DUPLICATE_REQUEST
    slot_empty = state.active is None
    backlog_empty = len(state.backlog) == 0
    # "slot empty AND backlog empty -> direct admission"; docs/rotation.md adds: 'a
    # further arrival in that tick is not admitted directly (that would be a second
    # model action)'. "An empty slot with a non-empty backlog does NOT allow direct
    # admission."
    if slot_empty and backlog_empty and not state.acted:
        return direct_admission(state, arrival)
    # "otherwise, if the request may wait (host verdict) and backlog_admits(len, current
    # budget) -> appended to the backlog as a waiter with skipped = 0";
    # docs/rotation.md: 'It waits in the backlog for the next tick — whatever the budget,
    # even 0, since it contends with nobody — unless the host's verdict says it may not
    # wait (then classic fallback).'
    room_in_backlog = backlog_admits(len(state.backlog), arrival.budget)
    free_but_tick_spent = slot_empty and backlog_empty and state.acted
    if arrival.may_wait and (room_in_backlog or free_but_tick_spent):
        return waiting(state, arrival)
    # "otherwise -> classic fallback (the request is handed back to classic decode;
    # nothing is lost)."
    return classic_fallback(state, arrival)


def direct_admission(state: State, arrival: Arrival) -> Step:
    """'direct admission: slice 0 runs now (it is the model action of that tick);
    counter := 1; budget cached; no expiry check (the backlog is empty).'

    The counter reaches 1 when the slice's result comes back (docs/rotation.md).

    >>> s, out = direct_admission(initial_state(), Arrival("A", 2, budget=4))
    >>> s.active
    Job(request='A', lane=2, slices=0, budget=4, in_flight='admission slice 0', cancelled=False)
    """
    job = Job(
        request=arrival.request,
        lane=arrival.lane,
        slices=0,
        budget=arrival.budget,  # "budget cached"
        in_flight=ADMISSION_SLICE0,  # "slice 0 runs now"
    )
    # "(it is the model action of that tick)": speculation used the tick (yielded) and
    # the tick's one model action is spent (acted). MLXCEL_RULES: the slice 0 ran in
    # mlxcel's Prefill arm, which clears the flag after it: not yielded.
    new_state = replace(state, active=job, yielded=state.profile != MLXCEL_RULES, acted=True)
    return new_state, Outcome(
        branches=(DIRECT_ADMISSION,), action=(arrival.request, ADMISSION_SLICE0)
    )


def waiting(state: State, arrival: Arrival) -> Step:
    """'appended to the backlog as a waiter with skipped = 0'.

    >>> s, out = waiting(initial_state(), Arrival("B", 1, budget=2))
    >>> s.backlog
    (SpecEntry(request='B', lane=1, parked=False, skipped=0, cancelled=False),)
    """
    waiter = SpecEntry(request=arrival.request, lane=arrival.lane, parked=False, skipped=0)
    new_state = replace(state, backlog=(*state.backlog, waiter))
    return new_state, Outcome(branches=(WAITING,))


def classic_fallback(state: State, arrival: Arrival) -> Step:
    """'classic fallback (the request is handed back to classic decode; nothing is lost)'.

    >>> s, out = classic_fallback(initial_state(), Arrival("D", 1, budget=2))
    >>> out.branches, out.ended, s == initial_state()
    (('classic fallback',), (('D', 'classic'),), True)
    """
    return state, Outcome(branches=(CLASSIC_FALLBACK,), ended=((arrival.request, CLASSIC_ENDING),))


# ---------------------------------------------------------------- Cancel


def on_cancel(state: State, cancel: Cancel) -> Step | str:
    """docs/rotation.md: 'Cancels are marks. ... Cancelling twice is harmless;
    cancelling a request that is not on the speculative path is a ProtocolError.'

    >>> s = State(backlog=(SpecEntry("B", 1, parked=False),))
    >>> s, out = on_cancel(s, Cancel("B"))
    >>> out.branches, s.backlog[0].cancelled
    (('cancel noted',), True)
    >>> on_cancel(s, Cancel("B"))[0] == s  # twice is harmless
    True
    >>> on_cancel(s, Cancel("C"))
    'unknown request'
    """
    holder = state.active
    if holder is not None and holder.request == cancel.request:
        # "a job's mark is found by its next round" (and a slice in flight keeps its result)
        new_state = replace(state, active=replace(holder, cancelled=True))
        return new_state, Outcome(branches=(CANCEL_NOTED,))
    if any(entry.request == cancel.request for entry in state.backlog):
        # "A waiter's mark is found when it is granted"; a parked job's by its next round.
        marked = tuple(
            replace(entry, cancelled=True) if entry.request == cancel.request else entry
            for entry in state.backlog
        )
        return replace(state, backlog=marked), Outcome(branches=(CANCEL_NOTED,))
    return UNKNOWN_REQUEST


# ---------------------------------------------------------------- RoundResult


def on_round_result(state: State, result: RoundResult) -> Step | str:
    """The result of the slice in flight: finish, park or continue.

    rotation.md: 'Finished -> the job completes, the slot is empty. Otherwise
    counter += 1; if slice_grant_expired(counter, cached, backlog non-empty) the job
    is parked: appended to the backlog with skipped = 0, counter := 0.'
    docs/rotation.md: 'After every slice that does not finish the job,
    slice_grant_expired decides whether it parks — except after a direct admission's
    slice 0'.

    >>> s = State(active=Job("A", 1, 1, 2, ROUND), backlog=(SpecEntry("B", 1, parked=False),))
    >>> s, out = on_round_result(s, RoundResult(finished=False))
    >>> out.branches, out.grants, live_requests(s)
    (('park',), (('A', 2, True),), ('B', 'A'))
    >>> on_round_result(s, RoundResult(finished=False))
    'no action in flight'
    """
    job = state.active
    if job is None or job.in_flight is None:
        return NO_ACTION_IN_FLIGHT
    # "every slice result adds one" (docs/rotation.md)
    counter = job.slices + 1
    if result.finished:
        # docs/rotation.md: 'A job cancelled while its slice is in flight keeps that
        # slice's result: if the slice finished it, it completed.'
        return finish(state, job, counter)
    # "except after a direct admission's slice 0: nobody waited when it started"
    checked = job.in_flight != ADMISSION_SLICE0
    if checked and slice_grant_expired(counter, job.budget, len(state.backlog) > 0):
        return park(state, job, counter)
    return continue_grant(state, job, counter)


def finish(state: State, job: Job, counter: int) -> Step:
    """'Finished -> the job completes, the slot is empty.'  The grant ends (not a park).

    >>> s, out = finish(State(active=Job("A", 1, 3, 2, ROUND)), Job("A", 1, 3, 2, ROUND), 4)
    >>> out.ended, out.grants, s.active
    ((('A', 'completed'),), (('A', 4, False),), None)
    """
    return replace(state, active=None), Outcome(
        branches=(FINISH,),
        ended=((job.request, COMPLETED),),
        grants=((job.request, counter, False),),
    )


def park(state: State, job: Job, counter: int) -> Step:
    """'the job is parked: appended to the backlog with skipped = 0, counter := 0.'

    The parked entry carries the job's cancel mark (found by its next round).

    >>> job = Job("A", 1, 1, 2, ROUND, cancelled=True)
    >>> s, out = park(State(active=job), job, 2)
    >>> s.backlog, out.grants
    ((SpecEntry(request='A', lane=1, parked=True, skipped=0, cancelled=True),), (('A', 2, True),))
    """
    parked = SpecEntry(
        request=job.request, lane=job.lane, parked=True, skipped=0, cancelled=job.cancelled
    )
    new_state = replace(state, active=None, backlog=(*state.backlog, parked))
    return new_state, Outcome(branches=(PARK,), grants=((job.request, counter, True),))


def continue_grant(state: State, job: Job, counter: int) -> Step:
    """Neither finished nor expired: the job keeps the slot with its counter.

    >>> job = Job("A", 1, 0, 2, ADMISSION_SLICE0)
    >>> continue_grant(State(active=job), job, 1)[0].active
    Job(request='A', lane=1, slices=1, budget=2, in_flight=None, cancelled=False)
    """
    return replace(state, active=replace(job, slices=counter, in_flight=None)), Outcome(
        branches=(CONTINUE,)
    )


# ---------------------------------------------------------------- Tick


def on_tick(state: State, tick: Tick) -> Step | str:
    """The event that closes a tick: decides its use and, for speculation, its action.

    >>> s, out = on_tick(initial_state(), Tick(budget=8))
    >>> out.branches, out.use
    (('idle tick',), 'idle')
    >>> on_tick(State(active=Job("A", 1, 0, 8, ROUND)), Tick(budget=8))
    'result pending'
    """
    # Check order: a negative budget first, then a pending result.
    if tick.budget < 0:
        return NEGATIVE_BUDGET
    if state.active is not None and state.active.in_flight is not None:
        return RESULT_PENDING
    if state.acted:
        return admission_tick(state)
    # "Speculative work is pending when a job holds the slot or the backlog is non-empty."
    speculative_work_pending = state.active is not None or len(state.backlog) > 0
    # "Speculative tick (taken per slice_takes_tick)"; the other work is classic work.
    if speculative_work_pending and slice_takes_tick(state.yielded, tick.classic_work):
        return speculative_tick(state, tick)
    return not_speculative_tick(state, tick, earlier_branches=(), ended=())


def admission_tick(state: State) -> Step:
    """The tick's model action was a direct admission's slice 0: nothing more to run.

    docs/rotation.md: 'slice_takes_tick governs only the ticks the Tick event decides.'

    >>> s, out = admission_tick(State(yielded=True, acted=True))
    >>> out.branches, out.use, s.acted, s.yielded
    (('tick taken by a direct admission',), 'speculative', False, True)
    """
    return replace(state, acted=False), Outcome(branches=(ADMISSION_TICK,), use=SPECULATIVE)


def not_speculative_tick(
    state: State,
    tick: Tick,
    earlier_branches: tuple[str, ...],
    ended: tuple[tuple[Request, str], ...],
) -> Step:
    """The tick goes to classic work if there is any, else it is idle.

    rotation.md: 'a classic prefill or decode tick clears it [yielded]'; an idle tick
    leaves it.  Also the end of a promotion that found only cancelled or declined
    waiters (docs/rotation.md: 'ends them all in that tick and then gives the tick to
    classic work when there is any (else the tick is idle)').

    >>> s, out = not_speculative_tick(State(yielded=True), Tick(8, classic_work=True), (), ())
    >>> out.branches, out.use, s.yielded
    (('classic tick',), 'classic', False)
    >>> not_speculative_tick(State(yielded=True), Tick(8), (), ())[0].yielded
    True
    """
    if tick.classic_work:
        return replace(state, yielded=False), Outcome(
            branches=(*earlier_branches, CLASSIC_TICK), use=CLASSIC, ended=ended
        )
    return state, Outcome(branches=(*earlier_branches, IDLE_TICK), use=IDLE, ended=ended)


def speculative_tick(state: State, tick: Tick) -> Step:
    """'Active job -> run exactly ONE round'; 'No active job -> promote'.

    >>> s, out = speculative_tick(State(active=Job("A", 1, 1, 2, None)), Tick(2))
    >>> out.branches, out.action, out.use, s.yielded
    (('round',), ('A', 'round'), 'speculative', True)
    """
    holder = state.active
    if holder is None:
        return promote(state, tick)
    if holder.cancelled:
        return cancelled_job(state, holder, branches=(CANCELLED_JOB,))
    return holder_round(state, holder)


def holder_round(state: State, holder: Job) -> Step:
    """'Active job -> run exactly ONE round.'  (Its result comes as a RoundResult.)

    >>> holder_round(State(active=Job("A", 1, 1, 2, None)), Job("A", 1, 1, 2, None))[0].active
    Job(request='A', lane=1, slices=1, budget=2, in_flight='round', cancelled=False)
    """
    new_state = replace(state, active=replace(holder, in_flight=ROUND), yielded=True)
    return new_state, Outcome(
        branches=(ROUND_BRANCH,), use=SPECULATIVE, action=(holder.request, ROUND)
    )


def cancelled_job(
    state: State,
    job: Job,
    branches: tuple[str, ...],
    ended: tuple[tuple[Request, str], ...] = (),
) -> Step:
    """A cancelled job's round 'sees the cancel and finishes it at once with what it had
    produced (a no-op slice, counted)' — the holder's, or a promoted parked job's.

    >>> job = Job("A", 1, 2, 2, None, cancelled=True)
    >>> s, out = cancelled_job(State(active=job), job, ("cancelled job",))
    >>> out.grants, out.ended, out.action, s.active
    ((('A', 3, False),), (('A', 'cancelled'),), None, None)
    """
    no_op_slice_counted = job.slices + 1
    new_state = replace(state, active=None, yielded=True)
    return new_state, Outcome(
        branches=branches,
        use=SPECULATIVE,
        ended=(*ended, (job.request, CANCELLED)),
        grants=((job.request, no_op_slice_counted, False),),
    )


def promote(state: State, tick: Tick) -> Step:
    """'No active job -> promote: repeatedly take the next grantee (skip accounting
    above) until one is installed or the backlog is empty'.

    The cancelled-waiter golden, t2: B is found cancelled, A (parked) is promoted.

    >>> b = SpecEntry("B", 1, parked=False, cancelled=True)
    >>> a = SpecEntry("A", 1, parked=True)
    >>> s, out = promote(State(backlog=(b, a)), Tick(2))
    >>> out.branches, out.ended, out.action
    (('cancelled waiter', 'parked-job promotion'), (('B', 'aborted'),), ('A', 'round'))

    Only a cancelled waiter: the seed gives the tick to classic work, mlxcel uses it up.

    >>> promote(State(backlog=(b,)), Tick(2, classic_work=True))[1].use
    'classic'
    >>> s, out = promote(State(backlog=(b,), profile=MLXCEL_RULES), Tick(2, classic_work=True))
    >>> out.branches, out.use, s.yielded
    (('cancelled waiter', 'empty promotion'), 'speculative', True)
    """
    backlog = state.backlog
    branches: tuple[str, ...] = ()
    ended: tuple[tuple[Request, str], ...] = ()
    while True:
        taken = take_next_grantee(backlog, state.skip_cap)
        if taken is None:
            break  # "or the backlog is empty"
        entry, backlog = taken
        after_taking = replace(state, backlog=backlog)
        if not entry.parked and entry.cancelled:
            # "cancelled waiter -> aborted ...; try the next one in the same tick"
            branches = (*branches, CANCELLED_WAITER)
            ended = (*ended, (entry.request, ABORTED))
            continue
        if not entry.parked and entry.request in tick.declined:
            # "waiter whose host verdict now declines speculation -> routed back to
            # classic prefill, not aborted; try the next one"
            branches = (*branches, DECLINED_WAITER)
            ended = (*ended, (entry.request, ROUTED_CLASSIC))
            continue
        if not entry.parked:
            return waiter_slice0(after_taking, entry, tick, branches, ended)
        return parked_job_promotion(after_taking, entry, tick, branches, ended)
    # docs/rotation.md: 'A promotion that finds only cancelled or declined waiters ends
    # them all in that tick and then gives the tick to classic work when there is any
    # (else the tick is idle), rather than wasting it.'
    if state.profile == MLXCEL_RULES:
        # MLXCEL_RULES: the promotion ran in mlxcel's speculative arm, which sets the
        # flag whatever it found: the tick is used up.
        used_up = replace(state, backlog=backlog, yielded=True)
        return used_up, Outcome(branches=(*branches, EMPTY_PROMOTION), use=SPECULATIVE, ended=ended)
    return not_speculative_tick(replace(state, backlog=backlog), tick, branches, ended)


def waiter_slice0(
    state: State,
    entry: SpecEntry,
    tick: Tick,
    branches: tuple[str, ...],
    ended: tuple[tuple[Request, str], ...],
) -> Step:
    """'waiter -> its slice 0 runs (this tick's one model action); counter := 1; budget
    read and cached; then the expiry check runs at once'.

    The check runs when the slice's result comes back (on_round_result).

    >>> s, out = waiter_slice0(State(), SpecEntry("B", 1, parked=False), Tick(3), (), ())
    >>> s.active
    Job(request='B', lane=1, slices=0, budget=3, in_flight='grant slice 0', cancelled=False)
    >>> out.action
    ('B', 'grant slice 0')
    """
    job = Job(
        request=entry.request,
        lane=entry.lane,
        slices=0,  # the counter reaches 1 when the slice's result comes back
        budget=tick.budget,  # "budget read and cached"
        in_flight=GRANT_SLICE0,  # "its slice 0 runs (this tick's one model action)"
    )
    new_state = replace(state, active=job, yielded=True)
    return new_state, Outcome(
        branches=(*branches, WAITER_SLICE0),
        use=SPECULATIVE,
        action=(entry.request, GRANT_SLICE0),
        ended=ended,
    )


def parked_job_promotion(
    state: State,
    entry: SpecEntry,
    tick: Tick,
    branches: tuple[str, ...],
    ended: tuple[tuple[Request, str], ...],
) -> Step:
    """'parked job -> installed with counter := 0 and budget read and cached; its round
    runs in this same tick (promotion is bookkeeping).'  'A cancelled parked job is
    promoted normally; its round sees the cancel and finishes it at once'.

    >>> s, out = parked_job_promotion(State(), SpecEntry("A", 1, parked=True), Tick(5), (), ())
    >>> s.active
    Job(request='A', lane=1, slices=0, budget=5, in_flight='round', cancelled=False)
    >>> out.action
    ('A', 'round')
    >>> entry = SpecEntry("A", 1, parked=True, cancelled=True)
    >>> s, out = parked_job_promotion(State(), entry, Tick(5), (), ())
    >>> out.branches, out.grants, out.ended
    (('parked-job promotion', 'cancelled job'), (('A', 1, False),), (('A', 'cancelled'),))
    """
    job = Job(
        request=entry.request,
        lane=entry.lane,
        slices=0,  # "installed with counter := 0"
        budget=tick.budget,  # "budget read and cached"
        in_flight=None,
        cancelled=entry.cancelled,
    )
    promoted_branches = (*branches, PARKED_PROMOTION)
    if job.cancelled:
        return cancelled_job(
            replace(state, active=job), job, (*promoted_branches, CANCELLED_JOB), ended
        )
    new_state = replace(state, active=replace(job, in_flight=ROUND), yielded=True)
    return new_state, Outcome(
        branches=promoted_branches,
        use=SPECULATIVE,
        action=(entry.request, ROUND),
        ended=ended,
    )
