"""What ``policy-kernel replay`` prints (``oracle.harness.render``): strict JSON,
every text on one printable line, whatever the ids, names and output encoding."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import pytest
from returns.result import Success

import oracle.cli
import oracle.harness.render
import oracle.harness.replay_files
import oracle.harness.scenarios
from oracle.harness.rotation_scenario import RotationScenario
from oracle.harness.scenarios import ScenarioError, load_scenario, read_scenario
from oracle.harness.verdicts import Verdict, format_value
from tests.replay_helpers import (
    cli,
    one_line,
    replay_captured,
    rotation_doc,
    write,
)

if TYPE_CHECKING:
    from _typeshed import TraceFunction

# --- found by hardening (issue 9)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (math.inf, "ValueError: Out of range float values are not JSON compliant"),
        (math.nan, "ValueError: Out of range float values are not JSON compliant"),
        (10**5000, "ValueError: Exceeds the limit (4300 digits)"),
    ],
    ids=["inf", "nan", "5001 digits"],  # pytest's own ids would str() the integer
)
def test_a_result_that_is_not_json_is_a_bug_reported_on_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: object, reason: str
) -> None:
    path = write(tmp_path, rotation_doc())

    def rotation_result(_run: object) -> Verdict:
        return Verdict({"name": "t", "kind": "rotation", "finished_at": value}, None)

    monkeypatch.setattr(oracle.harness.render, "rotation_result", rotation_result)
    status, out, err = replay_captured("--json", str(path))
    assert status == 2
    assert out == ""  # never "Infinity", "NaN" or part of a line on stdout
    assert reason in one_line(err)


def test_an_id_of_5001_digits_prints_in_a_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Files cannot hold such a number (the JSON reader stops at the float range);
    # a scenario built in code can, and text output must still work.
    path = write(tmp_path, rotation_doc())
    scenario = load_scenario(path).unwrap()
    assert isinstance(scenario, RotationScenario)
    huge = dataclasses.replace(scenario.requests[0], id=10**5000)
    built = dataclasses.replace(scenario, requests=(huge, *scenario.requests[1:]))
    monkeypatch.setattr(oracle.harness.replay_files, "load_scenario", lambda _path: Success(built))
    status, out, err = replay_captured(str(path))
    assert (status, err) == (0, "")
    assert "(a 5001-digit integer,2)" in out
    assert "  a 5001-digit integer normal" in out
    status, out, err = replay_captured("--json", str(path))  # JSON must carry it exactly: it cannot
    assert (status, out) == (2, "")
    assert "Exceeds the limit (4300 digits)" in one_line(err)


def test_format_value_shows_any_value_on_one_line() -> None:
    assert format_value(10**5000) == "a 5001-digit integer"
    assert format_value(-(10**5000)) == "a negative 5001-digit integer"
    assert format_value("a\nb\x1b[2J\ud800") == "a\\nb\\x1b[2J\\ud800"
    assert format_value(4.0) == "4"
    assert format_value(["x\n"]).isprintable()


def test_a_key_with_a_newline_cannot_forge_a_line(tmp_path: Path) -> None:
    doc = rotation_doc()
    doc["x\npolicy-kernel: forged"] = 1
    path = write(tmp_path, doc)
    status, _, err = replay_captured(str(path))
    assert status == 2
    line = one_line(err)
    assert line.startswith(f"policy-kernel: {path}: ")
    assert "\\npolicy-kernel: forged" in line


def test_a_file_name_with_controls_is_escaped(tmp_path: Path) -> None:
    path = write(tmp_path, rotation_doc(budget=-1), "a\nb\x1b[2J.json")
    status, _, err = replay_captured(str(path))
    assert status == 2
    assert one_line(err).startswith(f"policy-kernel: {tmp_path}/a\\nb\\x1b[2J.json: budget:")


HOSTILE = "\ud800\x1b[2J\u00e9\u2028\n"


def test_names_and_ids_in_tables_are_escaped(tmp_path: Path) -> None:
    doc = rotation_doc(
        HOSTILE,
        requests=[{"id": HOSTILE, "slices": 2, "lane": "\nhigh"}, {"id": "B", "slices": 1}],
        expect={"outcomes": {HOSTILE: "classic"}},
    )
    status, out, err = replay_captured(str(write(tmp_path, doc)))
    assert (status, err) == (1, "")
    assert all(line.isprintable() for line in out.splitlines()), out
    escaped = "\\ud800\\x1b[2Jé\\u2028\\n"
    assert f"{escaped} (rotation)" in out
    assert f"grant log  [({escaped},2)" in out
    assert f"FAIL outcomes.{escaped}: expected classic, got completed" in out
    status, out, _ = replay_captured("--json", str(tmp_path / "case.json"))
    assert json.loads(out)["name"] == HOSTILE  # JSON carries the text exactly


def test_event_lists_are_escaped(tmp_path: Path) -> None:
    doc = {
        "kind": "rotation",
        "name": "events",
        "events": [{"arrival": {"request": HOSTILE, "budget": 2}}, {"cancel": {"request": "\n"}}],
    }
    status, out, err = replay_captured(str(write(tmp_path, doc)))
    assert (status, err) == (0, "")
    assert all(line.isprintable() for line in out.splitlines()), out
    assert "arrival \\ud800\\x1b[2Jé\\u2028\\n normal budget 2" in out


def test_text_output_survives_any_output_encoding(tmp_path: Path) -> None:
    path = write(tmp_path, rotation_doc(HOSTILE))
    done = cli("replay", str(path), env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout.startswith(b"\\ud800\\x1b[2J\\xe9\\u2028\\n (rotation)")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"kind": "rotation", "requests": [{"id": "A", "id": "B"}]}', "requests[0].id: line 1"),
        ('{"kind": "rotation",\n "budget": NaN}', "budget: line 2, column 12: NaN is not JSON"),
        ('{"budget": 1' + "0" * 400 + "}", "budget: line 1, column 12: number out of range"),
        ('{"kind": "rotation",\n\n  "name": "x" "y"}', "line 3, column 15: expected ',' or '}'"),
        ("", "line 1, column 1: expected a value, found end of text"),
    ],
)
def test_every_refusal_names_its_place(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "case.json"
    path.write_text(text)
    status, _, err = replay_captured(str(path))
    assert status == 2
    assert one_line(err).startswith(f"policy-kernel: {path}: {where}"), err


def test_scenario_errors_are_one_printable_line() -> None:
    error = ScenarioError("a\nb.json", "x", "must be\x1b[2J", 2, 5)
    assert str(error) == "a\\nb.json: x: line 2, column 5: must be\\x1b[2J"
    assert str(ScenarioError("f.json", "", "reason")) == "f.json: reason"


def _lines_run(work: Callable[[], object]) -> int:
    """The lines of Python ``work()`` executes, loop iterations included
    (``sys.settrace``: deterministic, no clock)."""
    counted = [0]

    def count(_frame: FrameType, event: str, _arg: object) -> TraceFunction:
        if event == "line":
            counted[0] += 1
        return count

    previous = sys.gettrace()  # a coverage run's tracer, put back after
    sys.settrace(count)
    try:
        work()
    finally:
        sys.settrace(previous)
    return counted[0]


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "table"])
def test_replaying_a_rotation_scenario_is_linear_in_its_requests(as_json: bool) -> None:
    # Issue 30: every request's row rebuilt every outcome (10,000 requests at one
    # tick took seconds); the work at 4 N must stay about 4 times the work at N.
    def replayed(size: int) -> int:
        requests = [{"id": f"r{k}", "slices": 1} for k in range(size)]
        scenario = read_scenario(rotation_doc(requests=requests))
        return _lines_run(
            lambda: oracle.harness.render.replay_scenario(scenario, io.StringIO(), as_json)
        )

    small, large = replayed(150), replayed(600)
    assert large <= 5 * small, (small, large)
