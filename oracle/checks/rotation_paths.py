"""Every small rotation scenario, replayed through kernel and spec: path properties.

The harness's rotation driver (:func:`oracle.harness.rotation_replay.drive_rotation`)
plays each scenario twice, through the kernel and through the executable spec,
and the two runs must give the same grant log and the same outcomes. On the
kernel's run: every request ends exactly once, and every completed job ran as
many slices as it would alone (stream parity). The worst cases met are
measured and set beside their paper bounds (docs/oracle.md).

Domain (``n`` requests, ``L`` the level's largest slice count):

- ``n`` = 1..3 requests, each of lane low / normal / high, ``1..L`` slices,
  arriving at tick 0..2. Requests are listed by arrival tick; requests of one
  tick are offered in file order, so every order within a tick is its own
  scenario, while an order across ticks only renames requests.
- budget 0..3, classic work never or always;
- variants: none, or one request with one of: cancel while waiting, cancel
  after its first park, cancel at its arrival tick + 0, 1 or 2, declined at
  promotion, may not wait. The level says for which ``n`` the variants run.
- both rules profiles (``RulesProfile``): the seed's and mlxcel's.

With classic work on every tick, the longest run of ticks classic work waits
through (ticks whose use is not classic) is measured per profile: the cost of
mlxcel's tick accounting, whose direct admission runs its slice 0 and the next
round back to back.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

from oracle.checks.convert import kernel_outcome, spec_event
from oracle.checks.framework import Check, Counterexample, Level, PaperBound, Partial
from oracle.harness.rotation_replay import (
    KERNEL_ENGINE,
    RotationEngine,
    RotationRun,
    Transition,
    drive_rotation,
)
from oracle.harness.rotation_scenario import (
    CancelAfterPark,
    CancelAtTick,
    RotationRequest,
    RotationScenario,
)
from oracle.spec import protocol as spec
from policy import (
    BACKLOG_CAP,
    Branch,
    Ending,
    Event,
    Lane,
    Outcome,
    RequestId,
    RotationState,
    RulesProfile,
    SliceKind,
    Tick,
    TickUse,
)

__all__ = ["ROTATION_PATHS", "SPEC_ENGINE", "scenario_document", "scenarios"]


@dataclass(frozen=True, slots=True)
class _SpecTransition:
    state: spec.State
    outcome: Outcome


def _spec_apply(state: spec.State, event: Event) -> Transition[spec.State] | str:
    result = spec.step(state, spec_event(event))
    if isinstance(result, str):
        return result
    return _SpecTransition(result[0], kernel_outcome(result[1]))


#: The executable spec as a rotation engine the harness's driver can play.
def _spec_initial(skip_cap: int, profile: RulesProfile) -> spec.State:
    return spec.initial_state(skip_cap, profile.value)


SPEC_ENGINE: RotationEngine[spec.State] = RotationEngine(
    _spec_initial, _spec_apply, spec.live_requests
)


@dataclass(frozen=True, slots=True)
class _Domain:
    requests: int  # at most this many requests
    slices: int  # 1..slices each
    variants_up_to: int  # variants for scenarios of at most this many requests
    budgets: tuple[int, ...] = (0, 1, 2, 3)
    #: budgets for scenarios of the most requests, where the default level saves time:
    #: budget 0 makes nobody wait but a request deferred by an instant finish, and a
    #: budget of 3 or more never parks a promoted job of at most 3 slices (both shown
    #: by two requests; the deep level runs every budget for three)
    largest_budgets: tuple[int, ...] | None = None

    def budgets_for(self, count: int) -> tuple[int, ...]:
        if count == self.requests and self.largest_budgets is not None:
            return self.largest_budgets
        return self.budgets


_DOMAIN: Mapping[Level, _Domain] = {
    "quick": _Domain(requests=2, slices=2, variants_up_to=2, budgets=(1, 2)),
    "default": _Domain(requests=3, slices=3, variants_up_to=2, largest_budgets=(1, 2)),
    "deep": _Domain(requests=3, slices=3, variants_up_to=3),
}
_ARRIVALS = (0, 1, 2)
_CLASSIC = ("never", "always")


def _variants(request: RotationRequest) -> Iterator[RotationRequest]:
    yield replace(request, cancel="waiting")
    yield replace(request, cancel=CancelAfterPark(1))
    for later in (0, 1, 2):
        yield replace(request, cancel=CancelAtTick(request.arrive + later))
    yield replace(request, declined_at_promotion=True)
    yield replace(request, may_wait=False)


def _request_lists(domain: _Domain, count: int) -> Iterator[tuple[RotationRequest, ...]]:
    shapes = list(itertools.product(Lane, range(1, domain.slices + 1)))
    for arrivals in itertools.combinations_with_replacement(_ARRIVALS, count):
        for chosen in itertools.product(shapes, repeat=count):
            yield tuple(
                RotationRequest(f"R{i}", lane, slices, arrive)
                for i, ((lane, slices), arrive) in enumerate(zip(chosen, arrivals, strict=True))
            )


def scenarios(
    level: Level, count: int, budget: int, profile: RulesProfile = RulesProfile.SEED
) -> Iterator[RotationScenario]:
    """Every scenario of ``count`` requests at ``budget`` in the level's domain, run
    by the rules of ``profile``."""
    domain = _DOMAIN[level]
    for requests in _request_lists(domain, count):
        plain = [requests]
        if count <= domain.variants_up_to:
            for index, request in enumerate(requests):
                plain += [
                    (*requests[:index], variant, *requests[index + 1 :])
                    for variant in _variants(request)
                ]
        for listed, classic in itertools.product(plain, _CLASSIC):
            yield RotationScenario(
                name=f"paths-{count}-{budget}",
                description="",
                budget=budget,
                skip_cap=2,
                classic_work=classic,  # type: ignore[arg-type]
                requests=listed,
                expect=None,
                profile=profile,
            )


def _bounds(level: Level) -> Mapping[str, str]:
    domain = _DOMAIN[level]
    return {
        "requests": f"1..{domain.requests}, lanes low/normal/high, slices 1..{domain.slices},"
        " arrival ticks 0..2",
        "budgets": ", ".join(map(str, domain.budgets))
        + (
            ""
            if domain.largest_budgets is None
            else f" ({', '.join(map(str, domain.largest_budgets))} for {domain.requests} requests)"
        ),
        "classic work": "never, always",
        "variants": f"for up to {domain.variants_up_to} requests: cancel while waiting, after"
        " the first park, at arrival + 0/1/2 ticks; declined at promotion; may not wait",
        "skip cap": "2",
        "rules profiles": ", ".join(profile.value for profile in RulesProfile),
    }


def _units(level: Level) -> Sequence[object]:
    domain = _DOMAIN[level]
    # The largest units first, so that workers finish together.
    return [
        (count, budget, profile.value)
        for count in range(domain.requests, 0, -1)
        for budget in domain.budgets_for(count)
        for profile in RulesProfile
    ]


def _first_slices(run: RotationRun[RotationState]) -> dict[RequestId, int]:
    first: dict[RequestId, int] = {}
    for record in run.ticks:
        for _, step in record.steps:
            action = step.outcome.action
            if action is not None and action.kind is not SliceKind.ROUND:
                first.setdefault(action.request, record.tick)
    return first


def _chosen(outcome: Outcome) -> list[RequestId]:
    """The grantee of each grant decision a step made, in order (from its outcome: the
    waiters it ended on the way, then the one installed)."""
    chosen = [
        ended.request
        for ended in outcome.ended
        if ended.ending in (Ending.ABORTED, Ending.ROUTED_CLASSIC)
    ]
    if Branch.PARKED_PROMOTION in outcome.branches and Branch.CANCELLED_JOB in outcome.branches:
        chosen += [e.request for e in outcome.ended if e.ending is Ending.CANCELLED]
    elif outcome.action is not None and (
        Branch.WAITER_SLICE0 in outcome.branches or Branch.PARKED_PROMOTION in outcome.branches
    ):
        chosen.append(outcome.action.request)
    return chosen


def _most_passed_over(run: RotationRun[RotationState]) -> int:
    """The most grant decisions any backlog entry was passed over, counted from the
    decisions themselves (who was waiting, who was chosen), not from the kernel's own
    skip counters."""
    passed: dict[RequestId, int] = {}  # entries waiting now -> decisions passed over
    most = 0
    waiting: tuple[RequestId, ...] = ()
    for record in run.ticks:
        for _, step in record.steps:
            for grantee in _chosen(step.outcome):
                for request in waiting:
                    if request != grantee and request in passed:
                        passed[request] += 1
                most = max([most, *passed.values()])
                passed.pop(grantee, None)
            waiting = tuple(entry.request for entry in step.state.backlog)
            for request in waiting:
                passed.setdefault(request, 0)  # a new entry (or a job parked again) starts at 0
            for request in list(passed):
                if request not in waiting:
                    del passed[request]
    return most


def _measure(run: RotationRun[RotationState], found: Partial) -> list[str]:
    """Record the worst cases of one kernel run; return broken path properties."""
    broken: list[str] = []
    scenario = run.scenario
    ended = [record.request for record in run.endings]
    for request in scenario.requests:
        times = ended.count(request.id)
        if times != 1:
            broken.append(f"request {request.id} ended {times} times")
    for record in run.ticks:
        for _, step in record.steps:
            state = step.state
            found.observe("largest backlog", len(state.backlog))
            found.observe("most live sessions", len(state.backlog) + (state.active is not None))
    found.observe("most decisions passed over", _most_passed_over(run))
    if scenario.classic_work == "always":
        found.observe(
            f"longest classic wait, ticks ({scenario.profile.value} rules)", _classic_wait(run)
        )
    outcomes = run.outcomes
    for request in scenario.requests:
        if outcomes.get(request.id) is Ending.COMPLETED:
            ran = sum(grant.slices for grant in run.grants if grant.request == request.id)
            if ran != request.slices:
                broken.append(f"request {request.id} ran {ran} slices, {request.slices} alone")
    first = _first_slices(run)
    for request in scenario.requests:
        if request.id in first:
            wait = first[request.id] - request.arrive
            key = "classic" if scenario.classic_work == "always" else "no classic"
            found.observe(f"longest wait to first slice, ticks ({key}, budget {scenario.budget})",
                          wait)  # fmt: skip
    return broken


def _classic_wait(run: RotationRun[RotationState]) -> int:
    """The most ticks in a row that did not go to classic work (run with classic work
    on every tick)."""
    longest = streak = 0
    for record in run.ticks:
        for event, step in record.steps:
            if isinstance(event, Tick):
                streak = 0 if step.outcome.use is TickUse.CLASSIC else streak + 1
                longest = max(longest, streak)
    return longest


def _run(level: Level, unit: object) -> Partial:
    assert isinstance(unit, tuple)
    count, budget, profile = unit
    found = Partial()
    for scenario in scenarios(level, count, budget, RulesProfile(profile)):
        found.count("scenarios")
        expected = drive_rotation(scenario, SPEC_ENGINE)
        try:
            kernel = drive_rotation(scenario, KERNEL_ENGINE)
        except Exception as error:  # a refusal, or a crash: never right for these scenarios
            reason = f"the kernel's run failed: {type(error).__name__}: {error}"
            found.disagree(
                partial(_counterexample, scenario, expected.grant_log, expected.outcomes, reason),
                len(scenario.requests) * 10 + sum(r.slices for r in scenario.requests),
            )
            continue
        broken = _measure(kernel, found)
        same = kernel.grant_log == expected.grant_log and kernel.outcomes == expected.outcomes
        if not same or broken:
            reason = "; ".join(broken) if same else "kernel and spec disagree"
            found.disagree(
                partial(_counterexample, scenario, expected.grant_log, expected.outcomes, reason),
                len(scenario.requests) * 10 + sum(r.slices for r in scenario.requests),
            )
    return found


def scenario_document(
    scenario: RotationScenario,
    grants: Sequence[tuple[RequestId, int]],
    outcomes: Mapping[RequestId, Ending],
) -> dict[str, object]:
    """``scenario`` as a rotation scenario file expecting ``grants`` and ``outcomes``."""
    requests: list[dict[str, object]] = []
    for request in scenario.requests:
        fields: dict[str, object] = {
            "id": request.id,
            "lane": request.lane.label,
            "slices": request.slices,
            "arrive": request.arrive,
        }
        if not request.may_wait:
            fields["may_wait"] = False
        if request.declined_at_promotion:
            fields["declined_at_promotion"] = True
        match request.cancel:
            case "waiting":
                fields["cancel"] = "waiting"
            case CancelAfterPark(parks):
                fields["cancel"] = {"after_park": parks}
            case CancelAtTick(tick):
                fields["cancel"] = {"tick": tick}
        requests.append(fields)
    classic = scenario.classic_work
    return {
        "kind": "rotation",
        "name": scenario.name,
        "description": scenario.description,
        "budget": scenario.budget,
        "skip_cap": scenario.skip_cap,
        "classic_work": classic if isinstance(classic, str) else sorted(classic),
        **({} if scenario.profile is RulesProfile.SEED else {"profile": scenario.profile.value}),
        "requests": requests,
        "expect": {
            "grants": [[request, slices] for request, slices in grants],
            "outcomes": {str(request): ending.value for request, ending in outcomes.items()},
        },
    }


def _counterexample(
    scenario: RotationScenario,
    grants: Sequence[tuple[RequestId, int]],
    outcomes: Mapping[RequestId, Ending],
    reason: str,
) -> Counterexample:
    described = replace(
        scenario,
        name=f"counterexample-rotation-paths-{len(scenario.requests)}-requests",
        description=f"rotation path check: {reason}; expect is the executable spec's answer.",
    )
    if reason.startswith("request "):  # a path property, with kernel and spec agreeing
        reason += " (kernel and spec agree, so the file replays the run and passes)"
    shown = ", ".join(
        f"{r.id} {r.lane.label} {r.slices} slices at {r.arrive}"
        + (f" cancel {r.cancel}" if r.cancel else "")
        + (" declined" if r.declined_at_promotion else "")
        + ("" if r.may_wait else " may not wait")
        for r in scenario.requests
    )
    return Counterexample(
        "rotation paths",
        len(scenario.requests) * 10 + sum(r.slices for r in scenario.requests),
        f"rotation paths: {reason}: budget {scenario.budget}, classic {scenario.classic_work},"
        f" {scenario.profile.value} rules: {shown}",
        scenario_document(described, grants, outcomes),
    )


def _paper_bounds(level: Level) -> Mapping[str, PaperBound]:
    bounds = {
        "largest backlog": PaperBound(BACKLOG_CAP + 1, "BACKLOG_CAP, plus one parked job"),
        "most live sessions": PaperBound(BACKLOG_CAP + 1, "the holder and BACKLOG_CAP entries"),
        "most decisions passed over": PaperBound(
            2 + 1, "SKIP_CAP + 1: at most one entry stands ahead with as many skips"
        ),
    }
    # slice_takes_tick never governs a direct admission's tick, so with n requests
    # each arriving to a free slot, n ticks in a row can miss classic work; under
    # mlxcel's rules each such admission leaves yielded clear and its next round
    # follows at once: 2 per request.
    most = _DOMAIN[level].requests
    bounds["longest classic wait, ticks (seed rules)"] = PaperBound(
        most,
        f"{most} requests: a direct admission per request (each takes its tick whatever"
        " yielded says), every other speculative tick sets yielded",
    )
    bounds["longest classic wait, ticks (mlxcel rules)"] = PaperBound(
        2 * most,
        f"{most} requests: a direct admission leaves yielded clear, so its slice 0 and the"
        " next round take two ticks in a row, per request",
    )
    for budget in _DOMAIN[level].budgets:
        grant = max(budget, 2)
        for key, per_slice in (("no classic", 1), ("classic", 2)):
            bounds[f"longest wait to first slice, ticks ({key}, budget {budget})"] = PaperBound(
                per_slice if budget == 0 else per_slice * (2 + 2) * grant,
                "budget 0: one slice (a deferred waiter); else ticks per slice x"
                " (SKIP_CAP + 2) grants x max(budget, 2) slices",
            )
    return bounds


ROTATION_PATHS = Check(
    name="rotation paths",
    description="every small rotation scenario through kernel and spec: grant logs, outcomes,"
    " each request ends once, stream parity, worst cases",
    bounds=_bounds,
    units=_units,
    run=_run,
    paper_bounds=_paper_bounds,
    weight=1,
)
