"""The command line as a user meets it: golden replay, JSON, verdicts, bad files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import oracle.cli
import oracle.harness.render
import oracle.harness.replay_files
import oracle.harness.scenarios
from oracle.harness.rotation_replay import replay_rotation
from oracle.harness.rotation_scenario import RotationScenario
from oracle.harness.scenarios import golden_paths
from tests.replay_helpers import (
    PASSING,
    assert_refused_in_one_line,
    one_line,
    replay,
    replay_captured,
    rotation_doc,
    write,
)

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
    (rotation_doc(kind=None), "kind: must be one of 'rotation', 'admission'"),  # null: given
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


# --- found by hardening (issue 9)


def _raising_for(name: str, error: BaseException) -> object:
    real = replay_rotation

    def raising(scenario: RotationScenario) -> object:
        if scenario.name == name:
            raise error
        return real(scenario)

    return raising


def test_a_crash_in_one_scenario_is_its_one_line_and_the_rest_still_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, rotation_doc("one"), "a.json")
    boom = write(tmp_path, rotation_doc("boom"), "b.json")
    write(tmp_path, rotation_doc("three"), "c.json")
    error = RuntimeError("boom\npolicy-kernel: forged")
    monkeypatch.setattr(oracle.harness.render, "replay_rotation", _raising_for("boom", error))
    status, out, err = replay_captured(str(tmp_path))
    assert status == 2  # not 1: a file the harness cannot replay is a bad file
    assert one_line(err) == (
        f"policy-kernel: {boom}: cannot replay: internal error: "
        "RuntimeError: boom\\npolicy-kernel: forged"
    )
    assert "one (rotation)" in out
    assert "three (rotation)" in out
    assert out.endswith("replay: 0 passed, 0 failed, 1 bad, 2 without expect\n")


def test_a_crash_while_loading_is_isolated_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, rotation_doc())

    def read_scenario(_doc: object) -> object:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(oracle.harness.scenarios, "read_scenario", read_scenario)
    status, _, err = replay_captured(str(path))
    assert status == 2
    assert one_line(err).endswith(
        "cannot replay: internal error: ZeroDivisionError: division by zero"
    )


def test_a_crash_half_way_through_a_table_prints_no_part_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, rotation_doc("half"))

    def format_grant_log(_grants: object) -> str:  # called after the table's first line
        raise KeyError("grants")

    monkeypatch.setattr(oracle.harness.render, "format_grant_log", format_grant_log)
    status, out, err = replay_captured(str(path))
    assert status == 2
    assert "half" not in out
    assert out == "replay: 0 passed, 0 failed, 1 bad, 0 without expect\n"
    one_line(err)


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise ValueError("no text")


def test_an_error_that_cannot_be_shown_is_named_by_its_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, rotation_doc("boom"))
    monkeypatch.setattr(
        oracle.harness.render, "replay_rotation", _raising_for("boom", _Unprintable())
    )
    status, _, err = replay_captured(str(path))
    assert status == 2
    assert one_line(err).endswith("cannot replay: internal error: _Unprintable")


def test_a_long_error_text_is_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, rotation_doc("boom"))
    error = RuntimeError("x" * 10_000)
    monkeypatch.setattr(oracle.harness.render, "replay_rotation", _raising_for("boom", error))
    status, _, err = replay_captured(str(path))
    assert status == 2
    assert one_line(err).endswith("x... (10,014 characters)")  # policy.text.cut's rule
    assert len(err) < len(str(path)) + 300


def test_an_interrupt_is_not_swallowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, rotation_doc("boom"))
    monkeypatch.setattr(
        oracle.harness.render, "replay_rotation", _raising_for("boom", KeyboardInterrupt())
    )
    with pytest.raises(KeyboardInterrupt):
        replay_captured(str(path))


def test_the_summary_counts_every_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, rotation_doc("passes", expect=PASSING), "1.json")
    write(tmp_path, rotation_doc("fails", expect={"grants": []}), "2.json")
    write(tmp_path, rotation_doc("unchecked"), "3.json")
    write(tmp_path, rotation_doc(budget=-1), "4.json")
    write(tmp_path, rotation_doc("boom"), "5.json")
    monkeypatch.setattr(
        oracle.harness.render, "replay_rotation", _raising_for("boom", RuntimeError())
    )
    status, out, err = replay_captured(str(tmp_path))
    assert status == 2  # a bad file outranks a failed expectation
    assert err.count("\n") == 2
    assert out.endswith("replay: 1 passed, 1 failed, 2 bad, 1 without expect\n")
    status, out, _ = replay_captured("--json", str(tmp_path))
    assert status == 2
    # --json: the scenario objects only, no summary object (the exit status sums up)
    assert [json.loads(line)["name"] for line in out.splitlines()] == [
        "passes",
        "fails",
        "unchecked",
    ]


def test_output_grows_with_grants_not_with_the_length_of_ids(tmp_path: Path) -> None:
    # A 100 KB id granted 10,000 times printed 500 MB (text and --json alike): ids
    # are at most 200 characters, so each grant costs about that much, whole.
    def doc(a: str, b: str) -> dict[str, object]:
        requests = [{"id": a, "slices": 5_000}, {"id": b, "slices": 5_000}]
        return rotation_doc(budget=1, requests=requests)

    status, _, err = replay_captured(str(write(tmp_path, doc("x" * 100_000, "B"))))
    assert status == 2
    assert "requests[0].id: 'xxx" in one_line(err)
    assert len(err) < 400
    # At the limit, ids that escape to 6 characters each: 1,200 characters a grant.
    path = write(tmp_path, doc("\u2028" * 200, "\u2029" * 200), "at-the-limit.json")
    status, out, _ = replay_captured("--json", str(path))
    grants = len(json.loads(out)["grants"])
    assert (status, grants > 9_000) == (0, True)
    assert len(out) < 1_300 * grants + 10_000
    status, out, _ = replay_captured(str(path))
    assert status == 0
    assert 1_200 * grants < len(out) < 1_300 * grants + 10_000
