"""Explicit-state model checking of the rotation protocol, kernel against spec.

Breadth-first search over every state reachable from the initial state. In
every state, every event of the domain below is applied, legal or not; on
every transition the kernel's new state and outcome (or its refusal) must equal
the spec's, and the invariants of rotation.md must hold.

Two rules keep the state space finite; neither changes a decision:

- **Canonical names.** A request's identity is only compared for equality, so
  after every transition the live requests are renamed ``R0``, ``R1``, ... in
  the order holder, then backlog; equal states up to renaming are visited once.
- **Clamped grant counter.** A holder's slices-in-grant counter is read only by
  ``slices >= budget`` with a cached budget of at most ``B`` (the largest budget
  explored) and by the grant log's slice count, which is reported, not decided
  upon. So counters ``>= B + 1`` decide alike, and a counter is stored as
  ``min(counter, B + 1)``. Kernel and spec are compared from the same clamped
  state, so their agreement is still checked on every transition; only the
  slice counts of grant-log lines of uncontended holders are not exact.

Events applied in every state (``B`` the largest budget):
an arrival of a fresh request in each lane, with ``may_wait`` true and false,
at every budget ``0..B``; an arrival with budget -1; an arrival of a live
request (a duplicate); a tick at every budget ``0..B``, with and without
classic work, with each subset of the backlog declined (parked jobs
included: the verdict must not touch them); a tick with budget -1; a round
result finished and not finished; a cancel of each live request and of an
unknown one.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

from pyrsistent import pvector
from returns.result import Failure

from oracle.checks.convert import spec_error, spec_event, spec_outcome, spec_state
from oracle.checks.framework import Check, Counterexample, Level, PaperBound, Partial
from oracle.checks.observe import events_scenario
from oracle.harness.rotation_replay import counted_for
from oracle.spec import invariants as spec_invariants
from oracle.spec import protocol as spec
from policy import (
    BACKLOG_CAP,
    Arrival,
    Branch,
    Cancel,
    Event,
    GrantBacklog,
    Lane,
    RequestId,
    RotationState,
    RoundResult,
    RulesProfile,
    Step,
    Tick,
    apply_event,
    initial_state,
    live_requests,
)

__all__ = [
    "DOMAIN",
    "ROTATION_MODEL",
    "canonical_state",
    "events_in",
    "explore",
    "path_to",
    "stable_events",
    "state_key",
]

#: level -> (skip caps, largest budget, deepest state explored: None for every reachable one)
DOMAIN: Mapping[Level, tuple[tuple[int, ...], int, int | None]] = {
    "quick": ((1, 2), 1, 10),
    "default": ((1, 2), 1, None),
    "deep": ((1, 2, 3, 4), 3, None),
}
UNKNOWN = "X"  # a request never on the speculative path


@dataclass(frozen=True, slots=True)
class _Node:
    """A visited state and the one model-action count the checker keeps itself."""

    state: RotationState
    actions_this_tick: int  # model actions handed out since the last Tick
    live: tuple[RequestId, ...]  # live_requests(state), computed once per state


_CANONICAL_NAMES = tuple(f"R{index}" for index in range(8))


def canonical_state(state: RotationState, clamp: int) -> tuple[RotationState, dict[RequestId, str]]:
    """``state`` with live requests renamed R0, R1, ... and the counter clamped."""
    live = live_requests(state)
    active = state.active
    counter_ok = active is None or active.slices_in_grant <= clamp
    if counter_ok and live == _CANONICAL_NAMES[: len(live)]:
        return state, {name: str(name) for name in live}  # already canonical: the common case
    names = {request: _CANONICAL_NAMES[index] for index, request in enumerate(live)}
    if active is not None:
        active = replace(
            active,
            request=names[active.request],
            slices_in_grant=min(active.slices_in_grant, clamp),
        )
    renamed = GrantBacklog(pvector(replace(e, request=names[e.request]) for e in state.backlog))
    return replace(state, active=active, backlog=renamed), names


def events_in(state: RotationState, budgets: range) -> Iterator[Event]:
    """Every event the check tries in ``state``, at the budgets ``budgets``."""
    live = live_requests(state)
    fresh = f"R{len(live)}"
    for lane, budget, may_wait in itertools.product(Lane, budgets, (True, False)):
        yield Arrival(fresh, lane, budget, may_wait)
    yield Arrival(fresh, Lane.NORMAL, -1)
    if live:
        yield Arrival(live[0], Lane.NORMAL, budgets.stop - 1)
    waiting = [entry.request for entry in state.backlog]
    if state.active is None and not state.acted:
        # A tick here may promote: every subset of the backlog may be declined.
        subsets = [
            frozenset(chosen)
            for size in range(len(waiting) + 1)
            for chosen in itertools.combinations(waiting, size)
        ]
    else:
        # No promotion can happen in this tick: the verdict must be ignored, so
        # declining nobody and declining everyone suffice to show it is.
        subsets = [frozenset(), frozenset(waiting)] if waiting else [frozenset()]
    for budget, classic, declined in itertools.product(budgets, (False, True), subsets):
        yield Tick(budget, classic, declined)
    yield Tick(-1)
    yield RoundResult(finished=True)
    yield RoundResult(finished=False)
    for request in live:
        yield Cancel(request)
    yield Cancel(UNKNOWN)


def _model_actions(step: Step) -> int:
    return int(counted_for(step.outcome) is not None)


def _transition_violations(node: _Node, event: Event, step: Step) -> list[str]:
    """The per-transition invariants of rotation.md."""
    broken: list[str] = []
    outcome = step.outcome
    if isinstance(event, Arrival | Tick):
        actions = node.actions_this_tick + _model_actions(step)
        if actions > 1:
            broken.append(f"{actions} model actions in one tick")
    if any(grant.parked for grant in outcome.grants) and not node.state.backlog:
        broken.append("an uncontended job parked")
    before = node.live
    after = live_requests(step.state)
    if not outcome.ended and not isinstance(event, Arrival) and before == after:
        return broken  # the common case: nobody came or went
    if Branch.WAITING in outcome.branches and len(step.state.backlog) > BACKLOG_CAP:
        broken.append(f"the backlog holds {len(step.state.backlog)} entries after an admission")
    arrived = (event.request,) if isinstance(event, Arrival) else ()
    ended = [record.request for record in outcome.ended]
    if len(set(ended)) != len(ended):
        broken.append(f"a request ended twice in one step: {ended}")
    entered = set(before) | set(arrived)
    for request in ended:
        if request not in entered:
            broken.append(f"request {request!r} ended but was not on the speculative path")
    if set(after) != entered - set(ended):
        broken.append(
            f"requests lost or duplicated: live before {list(before)}, arrived {list(arrived)},"
            f" ended {ended}, live after {list(after)}"
        )
    return broken


_Key = tuple[object, ...]


def _spec_after(state: RotationState, before: RotationState, spec_before: spec.State) -> spec.State:
    """``spec_state(state)``, reusing the conversion of what a step left as it was
    (the kernel keeps unchanged parts as the same objects; this is the hot path)."""
    if state is before:
        return spec_before
    if state.backlog is before.backlog:
        active = state.active
        job = spec_before.active if active is before.active else spec_state(state).active
        return spec.State(
            job, spec_before.backlog, state.yielded, state.acted, state.skip_cap,
            state.profile.value,  # the kernel's own: a transition that lost it disagrees
        )  # fmt: skip
    return spec_state(state)


def state_key(state: RotationState, actions: int) -> _Key:
    """A compact, cheaply hashed identity of a canonical state (names are implied by
    position in a canonical state, so only the other fields are kept)."""
    active = state.active
    job = (
        None
        if active is None
        else (
            int(active.lane), active.slices_in_grant, active.budget,
            None if active.in_flight is None else active.in_flight.name, active.cancelled,
        )
    )  # fmt: skip
    entries = tuple(
        (int(e.lane), e.kind.name, e.skipped, e.cancelled) for e in state.backlog.entries
    )
    return (job, entries, state.yielded, state.acted, actions)


def explore(
    skip_cap: int,
    largest_budget: int,
    max_depth: int | None = None,
    profile: RulesProfile = RulesProfile.SEED,
) -> Partial:
    """Explore every reachable state at ``skip_cap`` under the rules of ``profile``
    (or those within ``max_depth`` events of the initial state); compare kernel and
    spec on every transition (see the module docstring for the event domain and the
    abstraction)."""
    budgets = range(largest_budget + 1)
    clamp = largest_budget + 1
    found = Partial()
    states = transitions = refused = deepest = 0
    start = _Node(initial_state(skip_cap, profile), 0, ())
    unit = _unit_name(skip_cap, profile)
    start_key = state_key(start.state, 0)
    # parent pointers: state -> (parent, event in the parent's names, renaming after it)
    parents: dict[_Key, tuple[_Key, Event, dict[RequestId, str]] | None] = {start_key: None}
    frontier: deque[tuple[_Node, _Key, int]] = deque([(start, start_key, 0)])
    events_by_shape: dict[object, list[tuple[Event, object]]] = {}
    while frontier:
        node, key, depth = frontier.popleft()
        states += 1
        deepest = max(deepest, depth)
        spec_before = spec_state(node.state)
        shape = (len(node.state.backlog), node.state.active is None, node.state.acted)
        events = events_by_shape.get(shape)
        if events is None:  # events depend only on how many are live and where
            events = [(event, spec_event(event)) for event in events_in(node.state, budgets)]
            events_by_shape[shape] = events
        for event, as_spec in events:
            transitions += 1
            expected = spec.step(spec_before, as_spec)  # type: ignore[arg-type]
            try:
                kernel = apply_event(node.state, event)
            except Exception as error:  # the kernel never raises: that is a finding too
                reason = f"kernel raised {type(error).__name__}: {error}"
                found.disagree(
                    partial(_counterexample, parents, key, event, reason, skip_cap, profile),
                    depth + 1,
                )
                continue
            if isinstance(kernel, Failure):
                refused += 1
                if spec_error(kernel.failure()) != expected:
                    found.disagree(
                        partial(_counterexample, parents, key, event, _DISAGREE, skip_cap, profile),
                        depth + 1,
                    )
                continue
            step = kernel.unwrap()
            after = _spec_after(step.state, node.state, spec_before)
            got = (after, spec_outcome(step.outcome))
            broken = _transition_violations(node, event, step)
            if got != expected or broken:
                reason = "; ".join(broken) if got == expected else _DISAGREE
                found.disagree(
                    partial(_counterexample, parents, key, event, reason, skip_cap, profile),
                    depth + 1,
                )
            canonical, names = canonical_state(step.state, clamp)
            actions = (
                0 if isinstance(event, Tick) else node.actions_this_tick + _model_actions(step)
            )
            successor_key = state_key(canonical, actions)
            if successor_key not in parents and (max_depth is None or depth < max_depth):
                # State properties do not depend on names: measure and check each state once.
                found.observe("largest backlog", len(canonical.backlog))
                live = live_requests(canonical)
                found.observe("most live sessions", len(live))
                found.observe(
                    f"largest skip count (skip cap {skip_cap})",
                    max((e.skipped for e in canonical.backlog), default=0),
                )
                for sentence in spec_invariants.invariant_violations(spec_state(canonical)):
                    found.disagree(
                        partial(_counterexample, parents, key, event, sentence, skip_cap, profile),
                        depth + 1,
                    )
                parents[successor_key] = (key, event, names)
                frontier.append((_Node(canonical, actions, live), successor_key, depth + 1))
    found.count(f"states ({unit})", states)
    found.count("states", states)
    found.count("transitions", transitions)
    found.count("refused events", refused)
    found.observe("depth", deepest)
    return found


_DISAGREE = "kernel and spec disagree"


def path_to(
    parents: Mapping[_Key, tuple[_Key, Event, dict[RequestId, str]] | None], key: _Key
) -> list[tuple[Event, dict[RequestId, str]]]:
    """The events (with the renaming after each) from the initial state to ``key``."""
    steps: list[tuple[Event, dict[RequestId, str]]] = []
    link = parents[key]
    while link is not None:
        parent, event, names = link
        steps.append((event, names))
        link = parents[parent]
    steps.reverse()
    return steps


def stable_events(path: Sequence[tuple[Event, dict[RequestId, str]]], last: Event) -> list[Event]:
    """The path's events with one stable name per request (canonical names are reused)."""
    real: dict[RequestId, RequestId] = {}  # canonical name in the current state -> stable name
    issued = 0

    def stable(name: RequestId, fresh: bool) -> RequestId:
        nonlocal issued
        if name not in real and fresh:
            real[name] = f"R{issued}"
            issued += 1
        return real.get(name, name)

    events: list[Event] = []
    for event, names in [*path, (last, None)]:
        match event:
            case Arrival(request, lane, budget, may_wait):
                renamed: Event = Arrival(stable(request, True), lane, budget, may_wait)
            case Cancel(request):
                renamed = Cancel(stable(request, False))
            case Tick(budget, classic, declined):
                renamed = Tick(budget, classic, frozenset(stable(r, False) for r in declined))
            case _:
                renamed = event
        events.append(renamed)
        if names is not None:
            real = {new: real[old] for old, new in names.items() if old in real}
    return events


def _unit_name(skip_cap: int, profile: RulesProfile) -> str:
    rules = "" if profile is RulesProfile.SEED else f", {profile.value} rules"
    return f"skip cap {skip_cap}{rules}"


def _counterexample(  # noqa: PLR0917
    parents: Mapping[_Key, tuple[_Key, Event, dict[RequestId, str]] | None],
    key: _Key,
    event: Event,
    reason: str,
    skip_cap: int,
    profile: RulesProfile,
) -> Counterexample:
    events = stable_events(path_to(parents, key), event)
    both = (
        ""
        if reason == _DISAGREE
        else " (kernel and spec agree: the invariant breaks in both, so the file replays the"
        " run and passes)"
    )
    unit = _unit_name(skip_cap, profile)
    scenario = events_scenario(
        f"counterexample-rotation-model-{len(events)}-events",
        f"rotation model check, {unit}: {reason} at event {len(events) - 1}{both}.",
        skip_cap,
        events,
        profile,
    )
    return Counterexample(
        "rotation protocol",
        len(events),
        f"rotation protocol: {reason} after {len(events)} events ({unit}), last {event}{both}",
        scenario,
    )


def _bounds(level: Level) -> Mapping[str, str]:
    caps, largest, depth = DOMAIN[level]
    return {
        "states": "every reachable state" if depth is None else f"within {depth} events",
        "skip caps": ", ".join(map(str, caps)),
        "rules profiles": ", ".join(profile.value for profile in RulesProfile),
        "budgets on every event": f"0..{largest} (and -1, refused)",
        "grant counter": f"clamped at {largest + 1} (decides like any larger count)",
        "events per state": "arrivals (lane x may_wait x budget, duplicate), ticks (budget x"
        " classic x declined subset), round results, cancels (each live, one unknown)",
    }


def _units(level: Level) -> Sequence[object]:
    return [(cap, profile.value) for profile in RulesProfile for cap in DOMAIN[level][0]]


def _run(level: Level, unit: object) -> Partial:
    assert isinstance(unit, tuple)
    cap, profile = unit
    _, largest, depth = DOMAIN[level]
    return explore(cap, largest, depth, RulesProfile(profile))


def _paper_bounds(level: Level) -> Mapping[str, PaperBound]:
    caps, _, _ = DOMAIN[level]
    bounds = {
        "largest backlog": PaperBound(
            BACKLOG_CAP + 1, "BACKLOG_CAP admitted, plus the holder parking before a promotion"
        ),
        "most live sessions": PaperBound(BACKLOG_CAP + 1, "the holder and BACKLOG_CAP entries"),
    }
    for cap in caps:
        bounds[f"largest skip count (skip cap {cap})"] = PaperBound(
            cap + 1, "skip_cap + 1: at most one entry ahead with as many skips (docs/oracle.md)"
        )
    return bounds


ROTATION_MODEL = Check(
    name="rotation protocol",
    description="every reachable state of the tick protocol, every event, kernel vs spec",
    bounds=_bounds,
    units=_units,
    run=_run,
    paper_bounds=_paper_bounds,
    weight=2,
)
