"""The command line as a user meets it: golden replay, JSON, verdicts, bad files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from oracle.harness.scenarios import golden_paths
from tests.replay_helpers import assert_refused_in_one_line, replay, write

BUDGET_2 = "[(A,2),(B,2),(A,2),(B,1)]"
BUDGET_1 = "[(A,2),(B,1),(A,1),(B,1),(A,1),(B,1)]"


def test_replay_of_the_golden_scenarios() -> None:
    status, text = replay()
    assert status == 0
    assert f"grant log  {BUDGET_2}" in text
    assert f"grant log  {BUDGET_1}" in text
    assert "FAIL" not in text
    assert text.rstrip().endswith(
        f"replay: {len(golden_paths())} passed, 0 failed, 0 bad, 0 without expect"
    )


def test_every_golden_scenario_expects_something() -> None:
    for path in golden_paths():
        doc = json.loads(path.read_text())
        assert doc.get("expect"), path
        assert doc.get("derivation"), f"{path} has no hand derivation"


def test_json_objects_follow_the_contract() -> None:
    status, text = replay("--json")
    assert status == 0
    objects = [json.loads(line) for line in text.splitlines()]
    assert len(objects) == len(golden_paths())
    by_name = {obj["name"]: obj for obj in objects}
    rotation = by_name["budget-2"]
    assert rotation == {
        "name": "budget-2",
        "kind": "rotation",
        "grants": [["A", 2], ["B", 2], ["A", 2], ["B", 1]],
        "outcomes": {"A": "completed", "B": "completed"},
        "passed": True,
    }


def rotation_doc(**changes: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "kind": "rotation",
        "name": "t",
        "budget": 2,
        "requests": [{"id": "A", "slices": 4}, {"id": "B", "slices": 3}],
    }
    doc.update(changes)
    return doc


def test_wrong_expectation_exits_1(tmp_path: Path) -> None:
    path = write(
        tmp_path, rotation_doc(expect={"grants": [["A", 4]], "outcomes": {"B": "classic"}})
    )
    status, text = replay(str(path))
    assert status == 1
    assert f"FAIL grants: expected [(A,4)], got {BUDGET_2}" in text
    assert "FAIL outcomes.B: expected classic, got completed" in text
    status, text = replay("--json", str(path))
    assert status == 1
    assert json.loads(text)["passed"] is False


def test_no_expectation_has_no_passed_field(tmp_path: Path) -> None:
    status, text = replay("--json", str(write(tmp_path, rotation_doc())))
    assert status == 0
    assert "passed" not in json.loads(text)


BAD_FILES: list[tuple[object, str]] = [
    ([], "a scenario file must hold one JSON object"),
    ({"name": "x"}, "kind: is required"),
    (rotation_doc(kind="queue"), "kind: must be one of 'rotation'"),
    (rotation_doc(extra=1), "extra: unknown field"),
    (rotation_doc(name=3), "name: must be a string"),
    (rotation_doc(budget=-1), "budget: must be an integer >= 0"),
    (rotation_doc(budget=True), "budget: must be an integer >= 0"),
    (rotation_doc(budget_setting="4"), "give budget (an integer) or budget_setting"),
    (rotation_doc(skip_cap=0), "skip_cap: must be a positive integer"),
    (rotation_doc(classic_work="sometimes"), 'classic_work: must be "never", "always"'),
    (rotation_doc(classic_work=[1, -2]), "classic_work[1]: must be an integer >= 0"),
    (rotation_doc(requests=[]), "requests: must list at least one request"),
    (rotation_doc(requests={"A": 1}), "requests: must be an array"),
    (
        rotation_doc(requests=[{"id": "A", "slices": 1}, {"id": "B", "slices": 1}, {"id": "C"}]),
        "requests[2].slices: is required",
    ),
    (
        rotation_doc(
            requests=[{"id": "A", "slices": 1}, {"id": "B", "slices": 1}, {"id": "C", "slices": 0}]
        ),
        "requests[2].slices: must be a positive integer",
    ),
    (
        rotation_doc(requests=[{"id": "A", "slices": 1}, {"id": "A", "slices": 1}]),
        "requests[1].id: duplicate request id 'A' (requests[0] has the same id)",
    ),
    (
        rotation_doc(requests=[{"id": 1, "slices": 1}, {"id": "1", "slices": 1}]),
        "requests[1].id: duplicate request id '1'",
    ),
    (rotation_doc(requests=[{"id": "A", "slices": 1, "arrive": -1}]), "requests[0].arrive"),
    (rotation_doc(requests=[{"id": "", "slices": 1}]), "requests[0].id: must be a non-empty"),
    (rotation_doc(requests=[{"id": "A", "slices": 1, "lane": 2}]), "requests[0].lane: must be a"),
    (rotation_doc(requests=[{"id": "A", "slices": 1, "cancel": "now"}]), "requests[0].cancel:"),
    (
        rotation_doc(requests=[{"id": "A", "slices": 1, "cancel": {"after_park": 0}}]),
        "requests[0].cancel.after_park: must be a positive integer",
    ),
    (rotation_doc(expect={"grants": [["Z", 1]]}), "expect.grants[0][0]: names no request"),
    (rotation_doc(expect={"grants": [["A"]]}), "expect.grants[0]: must be a [request id"),
    (rotation_doc(expect={"outcomes": {"A": "done"}}), "expect.outcomes.A: must be one of"),
    (rotation_doc(expect={"outcomes": {"Z": "classic"}}), "expect.outcomes.Z: names no request"),
    (rotation_doc(expect={"order": []}), "expect.order: unknown field"),
]


@pytest.mark.parametrize(("doc", "message"), BAD_FILES)
def test_bad_files_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: object, message: str
) -> None:
    assert_refused_in_one_line(tmp_path, capsys, doc, message)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "line 1, column 2: expected a key in double quotes, found end of text"),
        ('{"kind": NaN}', "kind: line 1, column 10: NaN is not JSON"),
        ("\udcff", "not UTF-8 text: byte 0xff at byte offset 0"),
        (
            '{"kind": "rotation", "kind": "admission"}',
            'kind: line 1, column 22: duplicate key "kind"',
        ),
        ("[" * 100_000 + "]" * 100_000, "line 1, column 257: nested deeper than 256"),
    ],
)
def test_unreadable_files_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    path = tmp_path / "broken.json"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    status, _ = replay(str(path))
    assert status == 2
    assert message in capsys.readouterr().err


def test_missing_file_and_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert replay(str(tmp_path / "missing.json"))[0] == 2
    assert "cannot read" in capsys.readouterr().err
    assert replay(str(tmp_path))[0] == 2  # an empty folder holds no scenario
    assert capsys.readouterr().err == (
        f"policy-kernel: {tmp_path}: no *.json file in this folder or below it\n"
    )


def test_a_folder_replays_every_file_in_it(tmp_path: Path) -> None:
    write(tmp_path, rotation_doc(name="one"), "a.json")
    write(tmp_path, rotation_doc(name="two"), "b.json")
    status, text = replay("--json", str(tmp_path))
    assert status == 0
    assert [json.loads(line)["name"] for line in text.splitlines()] == ["one", "two"]


def test_console_command_has_no_traceback_for_bad_input(tmp_path: Path) -> None:
    path = write(tmp_path, rotation_doc(budget="two"))
    done = subprocess.run(
        [sys.executable, "-m", "oracle.cli", "replay", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.strip() == f"policy-kernel: {path}: budget: must be an integer >= 0"


def test_help_documents_replay() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "oracle.cli", "replay", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert "--json" in done.stdout
    assert "golden" in done.stdout


def test_an_unset_budget_setting_is_the_default(tmp_path: Path) -> None:
    doc = rotation_doc(requests=[{"id": "A", "slices": 10}, {"id": "B", "slices": 3}])
    del doc["budget"]
    status, text = replay("--json", str(write(tmp_path, doc)))
    assert status == 0
    assert json.loads(text)["grants"] == [["A", 8], ["B", 3], ["A", 2]]


def test_a_late_arrival_costs_no_idle_ticks(tmp_path: Path) -> None:
    doc = rotation_doc(
        requests=[{"id": "A", "slices": 2}, {"id": "B", "slices": 2, "arrive": 10**12}]
    )
    status, text = replay("--json", str(write(tmp_path, doc)))
    assert status == 0
    assert json.loads(text)["grants"] == [["A", 2], ["B", 2]]
