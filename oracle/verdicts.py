"""Results of replays as data: the JSON objects and the verdict against ``expect``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from oracle.rotation_replay import RotationRun
from policy import RequestId

__all__ = ["Mismatch", "Result", "format_grant_log", "rotation_result"]

JsonObject = dict[str, object]


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One expected figure that the replay did not produce."""

    field: str
    expected: str
    actual: str


@dataclass(frozen=True, slots=True)
class Result:
    """A replayed scenario: its contract object and, with ``expect``, its verdict."""

    json: JsonObject
    mismatches: tuple[Mismatch, ...] | None  # None: the scenario expects nothing

    @property
    def passed(self) -> bool | None:
        return None if self.mismatches is None else not self.mismatches


def format_grant_log(grants: Sequence[tuple[RequestId, int]]) -> str:
    """A grant log as the spec writes it: ``[(A,2),(B,2)]``."""
    return "[" + ",".join(f"({request},{slices})" for request, slices in grants) + "]"


def rotation_result(run: RotationRun) -> Result:
    """The contract object of a rotation replay and its verdict."""
    scenario = run.scenario
    outcomes = {str(request.id): run.outcomes[request.id].value for request in scenario.requests}
    body: JsonObject = {
        "name": scenario.name,
        "kind": "rotation",
        "grants": [[request, slices] for request, slices in run.grant_log],
        "outcomes": outcomes,
    }
    if scenario.expect is None:
        return Result(body, None)
    mismatches: list[Mismatch] = []
    expected_grants = scenario.expect.grants
    if expected_grants is not None and tuple(expected_grants) != run.grant_log:
        mismatches.append(
            Mismatch("grants", format_grant_log(expected_grants), format_grant_log(run.grant_log))
        )
    for request, ending in (scenario.expect.outcomes or {}).items():
        actual = run.outcomes[request]
        if actual is not ending:
            mismatches.append(Mismatch(f"outcomes.{request}", ending.value, actual.value))
    body["passed"] = not mismatches
    return Result(body, tuple(mismatches))
