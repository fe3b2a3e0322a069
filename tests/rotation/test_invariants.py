"""Random scenarios through the driver, checked against rotation.md's invariants
after every event of every tick."""

from __future__ import annotations

from collections import Counter

from hypothesis import given

from oracle.harness.rotation_replay import RotationRun, replay_rotation
from oracle.harness.rotation_scenario import RotationScenario
from oracle.strategies import rotation_scenarios
from policy import (
    BACKLOG_CAP,
    Arrival,
    Branch,
    Ending,
    RotationState,
    initial_state,
    live_requests,
)


def check_invariants(run: RotationRun[RotationState]) -> None:
    scenario = run.scenario
    previous: RotationState = initial_state(scenario.skip_cap)
    for record in run.ticks:
        assert record.model_actions <= 1, f"tick {record.tick}: two model actions"
        for event, step in record.steps:
            state = step.state
            live = live_requests(state)
            assert len(live) == len(set(live)), "a request holds two places"
            assert len(live) <= BACKLOG_CAP + 1, "more than 3 live speculative sessions"
            assert len(state.backlog) <= BACKLOG_CAP + 1
            if isinstance(event, Arrival) and Branch.WAITING in step.outcome.branches:
                assert len(state.backlog) <= BACKLOG_CAP, "an admission overfilled the backlog"
            if Branch.EXPIRY_PARK in step.outcome.branches:
                assert len(previous.backlog) > 0, "an uncontended job parked"
            previous = state

    # Every request ends exactly once.
    ended = Counter(ended.request for ended in run.endings)
    assert ended == Counter(request.id for request in scenario.requests)

    # Stream parity: rotation never changes what a job produces.
    slices = Counter[object]()
    for grant in run.grants:
        slices[grant.request] += grant.slices
    for request in scenario.requests:
        ending = run.outcomes[request.id]
        if ending is Ending.COMPLETED:
            assert slices[request.id] == request.slices
        elif ending is Ending.CANCELLED:
            # what it had produced, plus the counted no-op slice that saw the cancel
            assert 1 <= slices[request.id] <= request.slices
        else:
            assert slices[request.id] == 0

    # An uncontended job never parks: alone on the speculative path, one grant.
    for request in scenario.requests:
        if run.outcomes[request.id] is Ending.COMPLETED and _alone(run, request.id):
            assert sum(1 for g in run.grants if g.request == request.id) == 1


def _alone(run: RotationRun[RotationState], request: object) -> bool:
    """Whether ``request`` never shared the speculative path with another request."""
    return all(
        live_requests(step.state) in ((), (request,))
        for record in run.ticks
        for _, step in record.steps
    )


@given(rotation_scenarios())
def test_random_scenarios_keep_the_invariants(scenario: RotationScenario) -> None:
    check_invariants(replay_rotation(scenario))


@given(rotation_scenarios())
def test_replay_is_deterministic(scenario: RotationScenario) -> None:
    first, second = replay_rotation(scenario), replay_rotation(scenario)
    assert (first.grants, first.endings) == (second.grants, second.endings)
