"""Admission scenarios through the harness: golden policies, round trips, bad files."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest

from oracle.cli import main
from oracle.harness.admission_replay import replay_admission
from oracle.harness.admission_scenario import AdmissionScenario
from oracle.harness.scenarios import golden_paths, load_scenario
from policy.waiting import dump_policy, load_policy

ADMISSION_GOLDENS = [
    path for path in golden_paths() if json.loads(path.read_text())["kind"] == "admission"
]


def _load(path: Path) -> AdmissionScenario:
    scenario = load_scenario(path).unwrap()
    assert isinstance(scenario, AdmissionScenario)
    return scenario


@pytest.mark.parametrize("path", ADMISSION_GOLDENS, ids=lambda path: path.stem)
def test_golden_policy_json_round_trip(path: Path) -> None:
    scenario = _load(path)
    dumped = dump_policy(scenario.policy)
    reloaded = load_policy(json.loads(json.dumps(dumped))).unwrap()
    assert reloaded == scenario.policy
    assert dump_policy(reloaded) == dumped
    # The same scenario gives the same order after the round trip.
    again = replay_admission(replace(scenario, policy=reloaded))
    first = replay_admission(scenario)
    assert (again.selected, again.admitted_at) == (first.selected, first.admitted_at)


def test_aging_regression_orders() -> None:
    out = io.StringIO()
    golden = Path(str(ADMISSION_GOLDENS[0])).parent
    status = main(
        [
            "replay",
            "--json",
            str(golden / "aging-selection.json"),
            str(golden / "aging-enqueue.json"),
        ],
        out=out,
    )
    assert status == 0
    selection, enqueue = (json.loads(line) for line in out.getvalue().splitlines())
    assert selection["selected"] == [0, 4, 1, 5, 2, 3]
    assert enqueue["selected"] == [0, 4, 2, 3, 1, 5]
    assert selection["admitted_at"] == enqueue["admitted_at"] == [0, 4, 5, 6, 7, 8]
    assert set(selection) >= {"name", "kind", "selected", "admitted_at", "passed"}
    assert selection["kind"] == "admission"


def admission_doc(**changes: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "kind": "admission",
        "name": "t",
        "engine": "pool",
        "pool": {"cap": 1},
        "policy": {"attributes": {"prompt": "visible"}, "keys": ["prompt"]},
        "requests": [
            {"id": 0, "hold": 1, "attrs": {"prompt": 5}},
            {"id": 1, "hold": 1, "attrs": {"prompt": 3}},
        ],
    }
    doc.update(changes)
    return {key: value for key, value in doc.items() if value is not None}


STEP = {
    "budget": 8,
    "chunk": 8,
    "iteration_cost": 1,
    "max_running": 2,
    "blocks": 8,
    "block_size": 4,
}


def policy(**fields: object) -> dict[str, object]:
    return admission_doc(policy=fields)


BAD_FILES: list[tuple[dict[str, object], str]] = [
    (
        policy(attributes={"prompt": "visible", "out": "hidden"}, keys=["out"]),
        "policy.keys[0]: attribute 'out' is hidden",
    ),
    (
        policy(attributes={"prompt": "visible"}, keys=["prompt + foo"]),
        "policy.keys[0]: unknown name 'foo'",
    ),
    (policy(keys=["waited"], timing="enqueue"), "policy.keys[0]: 'waited' cannot be read"),
    (policy(keys=[]), "policy.keys: a queue policy needs at least one key"),
    (
        policy(version=2, keys=["serial"]),
        "policy.version: this library reads queue-policy version 1",
    ),
    (policy(keys=["serial", "1 +"]), "policy.keys[1]: line 1, column 4: expected an operand"),
    (policy(keys=["serial"], timing="later"), "policy.timing: must be"),
    (admission_doc(engine="batch"), 'engine: must be "pool" or "step"'),
    (admission_doc(pool={"cap": 0}), "pool.cap: must be a positive integer"),
    (admission_doc(step={}), 'step: belongs to engine "step"'),
    (
        admission_doc(requests=[{"id": 0, "hold": 1, "units": 2, "attrs": {"prompt": 1}}]),
        "requests[0].units: 2 units can never fit in a pool of capacity 1",
    ),
    (
        admission_doc(requests=[{"id": 0, "hold": 1}]),
        "requests[0].attrs: lacks attribute 'prompt'",
    ),
    (
        admission_doc(
            requests=[{"id": 0, "hold": 1, "attrs": {"prompt": 1}}] * 2,
        ),
        "requests[1].id: duplicate request id 0 (requests[0] has the same id)",
    ),
    (
        admission_doc(requests=[{"id": 0, "hold": -1, "attrs": {"prompt": 1}}]),
        "requests[0].hold: must be a number >= 0",
    ),
    (
        admission_doc(requests=[{"id": 0, "hold": 1, "enqueue": -2, "attrs": {"prompt": 1}}]),
        "requests[0].enqueue: must be a number >= 0",
    ),
    (
        admission_doc(requests=[{"id": 0, "hold": 1, "attrs": {"prompt": "long"}}]),
        "requests[0].attrs.prompt: must be a number or true/false",
    ),
    (admission_doc(expect={"selected": [7]}), "expect.selected[0]: names no request: 7"),
    (
        admission_doc(engine="step", pool=None, step={**STEP, "stage": "now"}),
        "step.stage: must be a name keys can write in budget_left(...)",
    ),
    (
        admission_doc(engine="step", pool=None, step={**STEP, "stage": "étape"}),
        "step.stage: must be a name",
    ),
]


@pytest.mark.parametrize(("doc", "message"), BAD_FILES)
def test_bad_admission_files_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict[str, object], message: str
) -> None:
    path = tmp_path / "case.json"
    path.write_text(json.dumps(doc))
    assert main(["replay", str(path)], out=io.StringIO()) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1, error
    assert message in error, error


def test_wrong_admission_expectation_exits_1(tmp_path: Path) -> None:
    path = tmp_path / "case.json"
    path.write_text(json.dumps(admission_doc(expect={"selected": [0, 1], "admitted_at": [0, 1]})))
    out = io.StringIO()
    assert main(["replay", str(path)], out=out) == 1
    assert "FAIL selected: expected [0, 1], got [1, 0]" in out.getvalue()
