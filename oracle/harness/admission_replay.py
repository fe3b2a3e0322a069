"""Admission replays: each engine admits through the kernel's one selection
function (:func:`policy.waiting.attempt_admission`)."""

from __future__ import annotations

from oracle.harness.admission_run import AdmissionRun
from oracle.harness.admission_scenario import AdmissionScenario, AttemptEngine, PoolEngine
from oracle.harness.attempt_engine import run_attempt
from oracle.harness.pool_engine import run_pool
from oracle.harness.step_engine import run_step

__all__ = ["replay_admission"]


def replay_admission(scenario: AdmissionScenario) -> AdmissionRun:
    """Replay ``scenario`` with the engine it names (an attempt gives an ``AttemptRun``)."""
    if isinstance(scenario.engine, PoolEngine):
        return run_pool(scenario)
    if isinstance(scenario.engine, AttemptEngine):
        return run_attempt(scenario)
    return run_step(scenario)
