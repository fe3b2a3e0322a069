"""The rotation driver: plays a scenario through the kernel, tick by tick.

This is the imperative shell of the tick protocol: it owns the clock (tick
numbers), the model (each request's remaining slices) and the host's verdicts
(lanes, may-wait, decline, cancels), and lets :func:`policy.apply_event` make
every decision. It records every event and step so that tests can check the
specification's invariants after each one.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Generic, Protocol, TypeVar

from returns.result import Failure

from oracle.harness.rotation_scenario import (
    CancelAfterPark,
    CancelAtTick,
    RotationRequest,
    RotationScenario,
)
from policy import (
    Arrival,
    Branch,
    Cancel,
    Ended,
    Ending,
    Event,
    GrantEnd,
    Outcome,
    RequestId,
    RotationState,
    RoundResult,
    RulesProfile,
    Tick,
    apply_event,
    initial_state,
    live_requests,
)

__all__ = [
    "KERNEL_ENGINE",
    "RotationEngine",
    "RotationRun",
    "TickRecord",
    "Transition",
    "counted_for",
    "drive_rotation",
    "replay_rotation",
]

S = TypeVar("S")
S_co = TypeVar("S_co", covariant=True)


class Transition(Protocol[S_co]):
    """What one accepted event gave: the new state and the outcome (a kernel ``Step``)."""

    @property
    def state(self) -> S_co: ...

    @property
    def outcome(self) -> Outcome: ...


@dataclass(frozen=True, slots=True)
class RotationEngine(Generic[S]):
    """A rotation protocol the driver can play: the kernel, or the executable spec
    seen through :mod:`oracle.checks` (which converts its outcomes)."""

    initial: Callable[[int, RulesProfile], S]
    apply: Callable[[S, Event], Transition[S] | str]  # str: why the event was refused
    live: Callable[[S], tuple[RequestId, ...]]


def _kernel_apply(state: RotationState, event: Event) -> Transition[RotationState] | str:
    result = apply_event(state, event)
    if isinstance(result, Failure):
        return str(result.failure())
    return result.unwrap()


KERNEL_ENGINE: RotationEngine[RotationState] = RotationEngine(
    initial_state, _kernel_apply, live_requests
)


def counted_for(outcome: Outcome) -> RequestId | None:
    """Whom a step's model action counted for: the action's request, or, for a
    cancelled no-op round (a promoted job whose round sees its cancel: no action,
    its grant ended at once), that grant's request; None when no slice was run."""
    if outcome.action is not None:
        return outcome.action.request
    if Branch.CANCELLED_JOB in outcome.branches and outcome.grants:
        return outcome.grants[0].request
    return None


@dataclass(frozen=True, slots=True)
class TickRecord(Generic[S]):
    """Every event applied during one tick, with what it gave."""

    tick: int
    steps: tuple[tuple[Event, Transition[S]], ...]

    @property
    def model_actions(self) -> int:
        """Model actions run in this tick: slices 0, rounds and cancelled no-op rounds."""
        return sum(1 for _, step in self.steps if counted_for(step.outcome) is not None)


@dataclass(frozen=True, slots=True)
class RotationRun(Generic[S]):
    """What happened when a scenario was replayed. ``outcomes`` is each ended
    request's ending, built once from ``endings`` (a report reads it per request:
    rebuilt per read, 10,000 requests cost 10,000 rebuilds, docs/performance.md)."""

    scenario: RotationScenario
    grants: tuple[GrantEnd, ...]
    endings: tuple[Ended, ...]  # in the order they happened
    ticks: tuple[TickRecord[S], ...]
    outcomes: Mapping[RequestId, Ending]

    @property
    def grant_log(self) -> tuple[tuple[RequestId, int], ...]:
        return tuple((grant.request, grant.slices) for grant in self.grants)


class _Replay(Generic[S]):
    """Mutable bookkeeping of one replay; the protocol state itself stays immutable."""

    def __init__(self, scenario: RotationScenario, engine: RotationEngine[S]) -> None:
        self.scenario = scenario
        self.engine = engine
        self.state = engine.initial(scenario.skip_cap, scenario.profile)
        self.remaining = {request.id: request.slices for request in scenario.requests}
        self.parks = dict.fromkeys(self.remaining, 0)
        self.cancels = {request.id: request.cancel for request in scenario.requests}
        self.grants: list[GrantEnd] = []
        self.endings: list[Ended] = []
        self.steps: list[tuple[Event, Transition[S]]] = []
        self.last_arrival = max(request.arrive for request in scenario.requests)

    def live(self) -> tuple[RequestId, ...]:
        return self.engine.live(self.state)

    def apply(self, event: Event) -> Transition[S]:
        step = self.engine.apply(self.state, event)
        if isinstance(step, str):
            raise RuntimeError(f"the protocol refused a driver event: {step}")
        self.state = step.state
        self.steps.append((event, step))
        self.grants.extend(step.outcome.grants)
        self.endings.extend(step.outcome.ended)
        for grant in step.outcome.grants:
            if grant.parked:
                self.parks[grant.request] += 1
                if self.cancels[grant.request] == CancelAfterPark(self.parks[grant.request]):
                    self.apply(Cancel(grant.request))
        action = step.outcome.action
        if action is not None:
            # The model runs the slice; the host reports whether it finished the job.
            self.remaining[action.request] -= 1
            self.apply(RoundResult(finished=self.remaining[action.request] == 0))
        return step

    def settled(self, tick: int) -> bool:
        return tick > self.last_arrival and len(self.endings) == len(self.scenario.requests)


def replay_rotation(scenario: RotationScenario) -> RotationRun[RotationState]:
    """Play ``scenario`` through the kernel until every request has ended; record everything."""
    return drive_rotation(scenario, KERNEL_ENGINE)


def drive_rotation(scenario: RotationScenario, engine: RotationEngine[S]) -> RotationRun[S]:
    """Play ``scenario`` through ``engine`` until every request has ended; record everything."""
    replay = _Replay(scenario, engine)
    declined = frozenset(r.id for r in scenario.requests if r.declined_at_promotion)
    # The requests each tick names, in file order: a tick costs the requests it
    # names, not a pass over all of them (the total work stays linear in the ticks).
    arriving: dict[int, list[RotationRequest]] = {}
    cancelling: dict[int, list[RotationRequest]] = {}
    for request in scenario.requests:
        arriving.setdefault(request.arrive, []).append(request)
        if isinstance(request.cancel, CancelAtTick):
            cancelling.setdefault(request.cancel.tick, []).append(request)
    arrival_ticks = sorted(arriving)
    total_slices = sum(request.slices for request in scenario.requests)
    tick_limit = arrival_ticks[-1] + 2 * (total_slices + 2 * len(scenario.requests)) + 10
    ticks: list[TickRecord[S]] = []
    tick = 0
    while not replay.settled(tick):
        if not replay.live():
            # Nothing speculative is alive: jump to the next arrival, so a late
            # arrival costs no idle ticks (an empty worker admits directly).
            later = bisect_left(arrival_ticks, tick)
            tick = arrival_ticks[later] if later < len(arrival_ticks) else tick
        if tick > tick_limit:
            raise RuntimeError(f"scenario {scenario.name!r} did not settle in {tick_limit} ticks")
        first = len(replay.steps)
        for request in arriving.get(tick, ()):
            step = replay.apply(
                Arrival(request.id, request.lane, scenario.budget, may_wait=request.may_wait)
            )
            entered_backlog = request.id in replay.live() and (step.outcome.action is None)
            if request.cancel == "waiting" and entered_backlog:
                replay.apply(Cancel(request.id))
        for request in cancelling.get(tick, ()):
            if request.id in replay.live():
                replay.apply(Cancel(request.id))
        replay.apply(Tick(scenario.budget, scenario.has_classic_work(tick), declined))
        ticks.append(TickRecord(tick, tuple(replay.steps[first:])))
        tick += 1
    return RotationRun(
        scenario=scenario,
        grants=tuple(replay.grants),
        endings=tuple(replay.endings),
        ticks=tuple(ticks),
        outcomes=MappingProxyType({ended.request: ended.ending for ended in replay.endings}),
    )
