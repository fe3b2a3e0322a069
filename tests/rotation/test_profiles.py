"""The rules profiles (docs/rotation.md, "Rules profiles"): mlxcel's tick accounting
differs from the seed's in exactly its two places, is kept by every transition,
is model-checked, is readable in scenario files and is checked by the kit
(``--profile``); each check shown to catch an implementation that runs the wrong
rules."""

from __future__ import annotations

import io
from dataclasses import replace
from typing import Any

import pytest
from returns.result import Result

from oracle.checks.rotation_model import explore
from oracle.cli import main
from oracle.conformance import ProtocolBounds, assert_conforms, assert_disagrees
from oracle.conformance import check_tick_protocol as kit_tick_protocol
from oracle.conformance.properties import property_check_tick_protocol
from oracle.harness.fields import FieldError
from oracle.harness.scenarios import read_scenario
from policy import (
    Arrival,
    Branch,
    Cancel,
    Lane,
    ProtocolError,
    RotationState,
    RoundResult,
    RulesProfile,
    Step,
    Tick,
    TickUse,
    apply_event,
    initial_state,
)
from policy.rotation import protocol

MLXCEL = RulesProfile.MLXCEL


def run(state: RotationState, *events: object) -> Step:
    step = None
    for event in events:
        step = apply_event(state, event).unwrap()  # type: ignore[arg-type]
        state = step.state
    assert step is not None
    return step


def test_a_direct_admission_leaves_yielded_clear_under_mlxcel_rules() -> None:
    admit = (Arrival("A", Lane.NORMAL, 8), RoundResult(finished=False), Tick(8, classic_work=True))
    seed = run(initial_state(), *admit)
    mlxcel = run(initial_state(profile=MLXCEL), *admit)
    assert (seed.state.yielded, mlxcel.state.yielded) == (True, False)
    # the next tick: classic work under the seed's rules, A's round at once under mlxcel's
    assert run(seed.state, Tick(8, classic_work=True)).outcome.use is TickUse.CLASSIC
    back_to_back = run(mlxcel.state, Tick(8, classic_work=True))
    assert back_to_back.outcome.branches == (Branch.ROUND,)
    assert back_to_back.state.profile is MLXCEL  # every transition keeps the rules


def test_an_empty_promotion_uses_up_the_tick_under_mlxcel_rules() -> None:
    events = (
        Arrival("A", Lane.NORMAL, 8),
        Arrival("B", Lane.NORMAL, 8),
        RoundResult(finished=True),  # A finished by its slice 0: B waits, alone
        Tick(8, classic_work=False),
        Cancel("B"),
    )
    promote = Tick(8, classic_work=False)  # speculation takes the tick under both rules
    seed = run(run(initial_state(), *events).state, promote)
    mlxcel = run(run(initial_state(profile=MLXCEL), *events).state, promote)
    assert seed.outcome.branches == (Branch.CANCELLED_WAITER, Branch.IDLE_TICK)
    assert seed.outcome.use is TickUse.IDLE
    assert mlxcel.outcome.branches == (Branch.CANCELLED_WAITER, Branch.EMPTY_PROMOTION)
    assert (mlxcel.outcome.use, mlxcel.state.yielded) == (TickUse.SPECULATIVE, True)
    assert mlxcel.outcome.action is None
    assert [e.request for e in mlxcel.outcome.ended] == ["B"]


def test_the_profile_is_checked_where_it_enters() -> None:
    with pytest.raises(TypeError, match="profile must be a RulesProfile"):
        initial_state(profile="mlxcel")  # type: ignore[arg-type]


def test_the_model_check_explores_the_mlxcel_rules() -> None:
    found = explore(2, 1, max_depth=5, profile=MLXCEL)
    assert found.disagreements == 0
    seed = explore(2, 1, max_depth=5)
    # other rules, other reachable states (the count's name alone would not show it)
    assert found.counts["states (skip cap 2, mlxcel rules)"] != seed.counts["states (skip cap 2)"]


def test_the_model_check_catches_a_transition_that_loses_the_profile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real: Any = protocol._stepped  # internal: the one seam every transition passes

    def losing(state: RotationState, outcome: Any) -> Any:
        if outcome is protocol._CONTINUE:  # one transition drops to the seed's rules
            state = replace(state, profile=RulesProfile.SEED)
        return real(state, outcome)

    monkeypatch.setattr(protocol, "_stepped", losing)
    assert explore(2, 1, max_depth=4, profile=MLXCEL).disagreements > 0


def _seed_rules_always(state: RotationState, event: object) -> Result[Step, ProtocolError]:
    """An implementation that ignores the state's profile: the seed's rules always."""
    return apply_event(replace(state, profile=RulesProfile.SEED), event)  # type: ignore[arg-type]


def _mlxcel_rules_always(state: RotationState, event: object) -> Result[Step, ProtocolError]:
    """An implementation with mlxcel's rules hard-coded."""
    return apply_event(replace(state, profile=MLXCEL), event)  # type: ignore[arg-type]


SMALL = ProtocolBounds(skip_caps=(2,), largest_budget=1, max_depth=4)
SMALL_MLXCEL = replace(SMALL, profile="mlxcel")


def test_the_kit_checks_the_tick_protocol_under_either_profile() -> None:
    assert_conforms(
        kit_tick_protocol(apply_event, bounds=SMALL),
        kit_tick_protocol(apply_event, bounds=SMALL_MLXCEL),
        kit_tick_protocol(_mlxcel_rules_always, bounds=SMALL_MLXCEL),
    )
    wrong = assert_disagrees(kit_tick_protocol(_seed_rules_always, bounds=SMALL_MLXCEL))
    assert "yielded" in wrong.problem or "yielded" in str(wrong.answered)
    assert_disagrees(kit_tick_protocol(_mlxcel_rules_always, bounds=SMALL))
    with pytest.raises(ValueError, match="rules profile is one of seed, mlxcel"):
        replace(SMALL, profile="vllm")


def test_scenario_files_name_their_profile() -> None:
    document = {
        "kind": "rotation",
        "name": "p",
        "profile": "mlxcel",
        "budget": 1,
        "requests": [{"id": "A", "slices": 1}],
    }
    scenario = read_scenario(document)
    assert scenario.profile is MLXCEL  # type: ignore[union-attr]
    with pytest.raises(FieldError, match=r"profile: must be one of 'seed', 'mlxcel'"):
        read_scenario({**document, "profile": "MLXCEL"})


def test_verify_profile_reaches_the_kit_and_needs_a_command(
    kit_options: dict[str, object],
) -> None:
    seen = kit_options
    arguments = ["verify", "--quick", "--against-command", "x", "--profile", "mlxcel"]
    assert main(arguments, out=io.StringIO(), err=io.StringIO()) == 0
    assert seen["profile"] == "mlxcel"
    err = io.StringIO()
    assert main(["verify", "--profile", "mlxcel"], out=io.StringIO(), err=err) == 2
    assert "--profile applies to --against-command" in err.getvalue()


def test_the_property_check_runs_by_either_profile() -> None:
    assert_conforms(
        property_check_tick_protocol(apply_event, examples=20, max_events=30, profile="mlxcel")
    )
    wrong = property_check_tick_protocol(
        _seed_rules_always, examples=50, max_events=30, profile="mlxcel"
    )
    assert "(mlxcel rules)" in assert_disagrees(wrong).where
