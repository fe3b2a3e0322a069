"""Results of replays as data: the JSON objects and the verdict against ``expect``."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from oracle.harness.admission_run import AdmissionRun
from oracle.harness.admission_scenario import key_json, same_keys
from oracle.harness.attempt_engine import AttemptRun
from oracle.harness.rotation_events import EventsRun, observation_text, same_observation
from oracle.harness.rotation_replay import RotationRun
from policy import Ending, RequestId
from policy.text import printable
from policy.waiting.numbers import shown

__all__ = [
    "Mismatch",
    "Verdict",
    "admission_result",
    "events_result",
    "format_grant_log",
    "format_keys",
    "format_number",
    "format_value",
    "json_line",
    "rotation_result",
]

JsonObject = dict[str, object]


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One expected figure that the replay did not produce."""

    field: str
    expected: str
    actual: str
    block: bool = False  # long values (whole observations): shown on a line each


@dataclass(frozen=True, slots=True)
class Verdict:
    """A replayed scenario: its contract object and, with ``expect``, its verdict."""

    json: JsonObject
    mismatches: tuple[Mismatch, ...] | None  # None: the scenario expects nothing

    @property
    def passed(self) -> bool | None:
        return None if self.mismatches is None else not self.mismatches


def format_value(value: object) -> str:
    """A value from a scenario (a request id, a name, a count) for a table or a
    message: text on one printable line (:func:`policy.text.printable`), an
    integer of any size (``str`` refuses more than 4300 digits), a time as
    :func:`format_number` writes it.

    >>> format_value("A"), format_value("a\\nb"), format_value(7), format_value(10**5000)
    ('A', 'a\\\\nb', '7', 'a 5001-digit integer')
    """
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, float):
        return format_number(value)
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return str(value)
        except ValueError:  # beyond sys.get_int_max_str_digits()
            return shown(value)
    return printable(shown(value))


def _member(request: RequestId) -> str:
    """A request id as a JSON object key: text as it is (JSON carries any text),
    an integer as its digits; never raising for a huge one, whose ``--json``
    object cannot be written anyway while its text table still can."""
    return request if isinstance(request, str) else format_value(request)


def json_line(document: object) -> str:
    """``document`` as one line of strict JSON: ASCII (so any text, lone surrogates
    included, survives any output encoding), and ``ValueError`` rather than a
    ``NaN`` or ``Infinity`` token, which are not JSON."""
    return json.dumps(document, allow_nan=False, ensure_ascii=True)


def format_grant_log(grants: Sequence[tuple[RequestId, int]]) -> str:
    """A grant log as the spec writes it: ``[(A,2),(B,2)]``."""
    return (
        "["
        + ",".join(
            f"({format_value(request)},{format_value(slices)})" for request, slices in grants
        )
        + "]"
    )


def rotation_result(run: RotationRun[Any]) -> Verdict:
    """The contract object of a rotation replay and its verdict."""
    scenario = run.scenario
    outcomes = {
        _member(request.id): run.outcomes[request.id].value for request in scenario.requests
    }
    body: JsonObject = {
        "name": scenario.name,
        "kind": "rotation",
        "grants": [[request, slices] for request, slices in run.grant_log],
        "outcomes": outcomes,
    }
    if scenario.expect is None:
        return Verdict(body, None)
    mismatches = _grant_mismatches(
        scenario.expect.grants, scenario.expect.outcomes, run.grant_log, run.outcomes
    )
    body["passed"] = not mismatches
    return Verdict(body, tuple(mismatches))


def _grant_mismatches(
    expected_grants: Sequence[tuple[RequestId, int]] | None,
    expected_outcomes: Mapping[RequestId, Ending] | None,
    grant_log: tuple[tuple[RequestId, int], ...],
    outcomes: Mapping[RequestId, Ending],
) -> list[Mismatch]:
    mismatches: list[Mismatch] = []
    if expected_grants is not None and tuple(expected_grants) != grant_log:
        mismatches.append(
            Mismatch("grants", format_grant_log(expected_grants), format_grant_log(grant_log))
        )
    for request, ending in (expected_outcomes or {}).items():
        actual = outcomes.get(request)
        if actual is not ending:
            got = "not ended" if actual is None else actual.value
            mismatches.append(Mismatch(f"outcomes.{format_value(request)}", ending.value, got))
    return mismatches


def events_result(run: EventsRun) -> Verdict:
    """The contract object of an event-list replay and its verdict: each step is
    compared whole, as JSON, with the expected observation."""
    scenario = run.scenario
    body: JsonObject = {
        "name": scenario.name,
        "kind": "rotation",
        "steps": list(run.steps),
        "grants": [[request, slices] for request, slices in run.grant_log],
        "outcomes": {_member(request): ending.value for request, ending in run.outcomes.items()},
    }
    expect = scenario.expect
    if expect is None:
        return Verdict(body, None)
    mismatches: list[Mismatch] = []
    for index, (expected, actual) in enumerate(zip(expect.steps or (), run.steps, strict=False)):
        if not same_observation(expected, actual):
            mismatches.append(
                Mismatch(
                    f"steps[{index}]",
                    observation_text(expected),
                    observation_text(actual),
                    block=True,
                )
            )
    mismatches += _grant_mismatches(expect.grants, expect.outcomes, run.grant_log, run.outcomes)
    body["passed"] = not mismatches
    return Verdict(body, tuple(mismatches))


def format_number(value: float) -> str:
    """A time as people write it: ``4`` rather than ``4.0``."""
    return str(json_number(value))


def json_number(value: float) -> float | int:
    """A time for people and JSON: rounded to 1e-12 s, so that sums of float costs
    print as written (9 x 0.001 is 0.009); integral times as integers (``4``)."""
    value = round(value, 12)
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def _format_list(values: Sequence[object]) -> str:
    return "[" + ", ".join(map(format_value, values)) + "]"


def _same_times(expected: Sequence[float], actual: Sequence[float]) -> bool:
    # Times are sums of float costs (0.001 s iterations): compare to a nanosecond.
    return len(expected) == len(actual) and all(
        math.isclose(e, a, rel_tol=1e-9, abs_tol=1e-9)
        for e, a in zip(expected, actual, strict=True)
    )


def _optional_number(value: float | None) -> float | int | None:
    return None if value is None else json_number(value)


def format_keys(keys: Sequence[float]) -> str:
    """Key values as the contract writes them: ``[1, 0.5, NaN, -0.0]``."""
    return "[" + ", ".join(str(key_json(key)) for key in keys) + "]"


def admission_result(run: AdmissionRun) -> Verdict:
    """The contract object of an admission replay and its verdict (``keys`` for the
    attempt engine only: JSON numbers, or the strings of ``KEY_STRINGS``)."""
    scenario = run.scenario
    body: JsonObject = {
        "name": scenario.name,
        "kind": "admission",
        "selected": list(run.selected),
        "admitted_at": [json_number(t) for t in run.admitted_at],
    }
    if isinstance(run, AttemptRun):
        body["keys"] = [key_json(key) for key in run.keys]
    body |= {
        "requests": [
            {
                "id": record.id,
                "serial": record.serial,
                "enqueued_at": json_number(record.enqueued_at),
                "admitted_at": [json_number(t) for t in record.admitted_at],
                "first_token_at": _optional_number(record.first_token_at),
                "finished_at": _optional_number(record.finished_at),
                "preemptions": record.preemptions,
            }
            for record in run.records
        ]
    }
    if scenario.expect is None:
        return Verdict(body, None)
    mismatches: list[Mismatch] = []
    if scenario.expect.selected is not None and scenario.expect.selected != run.selected:
        mismatches.append(
            Mismatch("selected", _format_list(scenario.expect.selected), _format_list(run.selected))
        )
    expected_times = scenario.expect.admitted_at
    if expected_times is not None and not _same_times(expected_times, run.admitted_at):
        mismatches.append(
            Mismatch("admitted_at", _format_list(expected_times), _format_list(run.admitted_at))
        )
    expected_keys = scenario.expect.keys
    actual_keys = run.keys if isinstance(run, AttemptRun) else ()
    if expected_keys is not None and not same_keys(expected_keys, actual_keys):
        mismatches.append(Mismatch("keys", format_keys(expected_keys), format_keys(actual_keys)))
    body["passed"] = not mismatches
    return Verdict(body, tuple(mismatches))
