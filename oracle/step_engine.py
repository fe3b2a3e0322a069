"""The step engine (issue 4): not built yet."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oracle.admission_run import AdmissionRun
    from oracle.admission_scenario import AdmissionScenario


def run_step(scenario: AdmissionScenario) -> AdmissionRun:
    raise NotImplementedError("the step engine is not built yet")
