"""The command line against hostile input (issue 9): one crash is one file's line,
paths and streams never block or trace back, every text stays on one printable
line, ``--json`` is strict JSON, and the summary counts every file."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest
from returns.result import Success

import oracle.cli
import oracle.harness.render
import oracle.harness.replay_files
import oracle.harness.scenarios
from oracle.cli import EXIT_BROKEN_PIPE, main
from oracle.harness.rotation_replay import replay_rotation
from oracle.harness.rotation_scenario import RotationScenario
from oracle.harness.scenarios import MAX_SCENARIO_BYTES, ScenarioError, golden_paths, load_scenario
from oracle.harness.verdicts import Verdict, format_value
from tests.replay_helpers import write

GOLDEN = Path(str(golden_paths()[0])).parents[1]
#: Seconds a subprocess may take: a regression (a blocking FIFO) fails, never hangs.
TIMEOUT = 60


def rotation_doc(name: str = "t", **changes: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "kind": "rotation",
        "name": name,
        "budget": 2,
        "requests": [{"id": "A", "slices": 4}, {"id": "B", "slices": 3}],
    }
    doc.update(changes)
    return doc


PASSING = {"grants": [["A", 2], ["B", 2], ["A", 2], ["B", 1]]}


def replay(*argv: str) -> tuple[int, str, str]:
    """``policy-kernel replay ARGV...`` in-process: status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    status = main(["replay", *argv], out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def one_line(err: str) -> str:
    """The one line ``err`` holds, checked printable."""
    assert err.count("\n") == 1, err
    assert err.endswith("\n"), err
    assert err[:-1].isprintable(), err
    return err[:-1]


def cli(
    *argv: str, stdout: IO[bytes] | int = subprocess.PIPE, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``policy-kernel ARGV...`` as a process (``run()``, the console entry point)."""
    return subprocess.run(
        [sys.executable, "-m", "oracle.cli", *argv],
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=env,
        timeout=TIMEOUT,
        check=False,
    )


# ------------------------------------------------- 1. one crash, one file's line


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
    status, out, err = replay(str(tmp_path))
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
    status, _, err = replay(str(path))
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
    status, out, err = replay(str(path))
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
    status, _, err = replay(str(path))
    assert status == 2
    assert one_line(err).endswith("cannot replay: internal error: _Unprintable")


def test_a_long_error_text_is_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, rotation_doc("boom"))
    error = RuntimeError("x" * 10_000)
    monkeypatch.setattr(oracle.harness.render, "replay_rotation", _raising_for("boom", error))
    status, _, err = replay(str(path))
    assert status == 2
    assert one_line(err).endswith("x... (10,014 characters)")  # policy.text.cut's rule
    assert len(err) < len(str(path)) + 300


def test_an_interrupt_is_not_swallowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, rotation_doc("boom"))
    monkeypatch.setattr(
        oracle.harness.render, "replay_rotation", _raising_for("boom", KeyboardInterrupt())
    )
    with pytest.raises(KeyboardInterrupt):
        replay(str(path))


# ------------------------------------------------------- 4. strict JSON, numbers


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
    status, out, err = replay("--json", str(path))
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
    status, out, err = replay(str(path))
    assert (status, err) == (0, "")
    assert "(a 5001-digit integer,2)" in out
    assert "  a 5001-digit integer normal" in out
    status, out, err = replay("--json", str(path))  # JSON must carry it exactly: it cannot
    assert (status, out) == (2, "")
    assert "Exceeds the limit (4300 digits)" in one_line(err)


def test_format_value_shows_any_value_on_one_line() -> None:
    assert format_value(10**5000) == "a 5001-digit integer"
    assert format_value(-(10**5000)) == "a negative 5001-digit integer"
    assert format_value("a\nb\x1b[2J\ud800") == "a\\nb\\x1b[2J\\ud800"
    assert format_value(4.0) == "4"
    assert format_value(["x\n"]).isprintable()


# ------------------------------------------------------------- 2. paths, streams


def test_an_empty_argument_is_refused(tmp_path: Path) -> None:
    status, out, err = replay("")
    assert status == 2
    assert one_line(err) == 'policy-kernel: "": an empty argument names no file or folder'
    assert out == "replay: 0 passed, 0 failed, 1 bad, 0 without expect\n"  # not the working folder
    status, out, err = replay("", str(write(tmp_path, rotation_doc("kept"))))
    assert status == 2
    assert "kept (rotation)" in out
    one_line(err)


def test_a_missing_path_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    status, _, err = replay(str(missing))
    assert status == 2
    assert one_line(err) == f"policy-kernel: {missing}: cannot read: No such file or directory"


@pytest.mark.parametrize("shape", ["long name", "long path"])
def test_a_name_too_long_is_one_line(tmp_path: Path, shape: str) -> None:
    name = (
        str(tmp_path / ("n" * 300 + ".json"))
        if shape == "long name"
        else str(tmp_path) + "/d" * 3000 + ".json"
    )
    status, _, err = replay(name)
    assert status == 2
    assert one_line(err) == f"policy-kernel: {name}: cannot read: File name too long"


def test_a_folder_without_scenarios_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("{}")
    (tmp_path / "sub").mkdir()
    status, _, err = replay(str(tmp_path))
    assert status == 2
    assert one_line(err) == f"policy-kernel: {tmp_path}: no *.json file in this folder or below it"


def test_a_folder_named_json_is_searched_not_read(tmp_path: Path) -> None:
    (tmp_path / "sub.json").mkdir()
    write(tmp_path / "sub.json", rotation_doc("inside", expect=PASSING))
    status, out, err = replay(str(tmp_path))
    assert (status, err) == (0, "")
    assert "inside (rotation)" in out


@contextmanager
def folder_chain(top: Path, depth: int, name: str) -> Iterator[int]:
    """A chain of ``depth`` folders ``top/name/name/...``, yielding the bottom
    one's descriptor. Made and removed through descriptors, one open at a time:
    no path need reach the bottom, and nothing recurses per level (Path.mkdir
    with parents and shutil.rmtree do, and pytest's clean-up would fail on it)."""
    folder = os.open(top, os.O_RDONLY)
    made = 0
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=folder)
            made += 1
            below = os.open(name, os.O_RDONLY, dir_fd=folder)
            os.close(folder)
            folder = below
        yield folder
    finally:
        for level in range(made, 0, -1):
            if level == made:  # files are at the bottom; the folders above hold only the chain
                for entry in os.scandir(folder):
                    os.unlink(entry.name, dir_fd=folder)
            above = os.open("..", os.O_RDONLY, dir_fd=folder)
            os.close(folder)
            folder = above
            os.rmdir(name, dir_fd=folder)
        os.close(folder)


def test_a_tree_deeper_than_the_recursion_limit_is_walked(tmp_path: Path) -> None:
    depth = sys.getrecursionlimit() + 200  # Path.rglob recursed once per level
    with folder_chain(tmp_path, depth, "d") as bottom:
        scenario = json.dumps(rotation_doc("deep", expect=PASSING)).encode()
        descriptor = os.open("case.json", os.O_WRONLY | os.O_CREAT, dir_fd=bottom)
        os.write(descriptor, scenario)
        os.close(descriptor)
        status, out, err = replay(str(tmp_path))
    assert (status, err) == (0, "")
    assert "deep (rotation)" in out


@pytest.fixture
def beyond_path_max(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path/top`` holding a scenario and a chain of folders whose full path is
    longer than PATH_MAX."""
    top = tmp_path / "top"
    top.mkdir()
    write(top, rotation_doc("reachable", expect=PASSING))
    with folder_chain(top, 1500, "ddd"):  # 1500 x "/ddd" = 6000 characters
        yield top


def test_a_folder_that_cannot_be_listed_is_one_line(beyond_path_max: Path) -> None:
    status, out, err = replay(str(beyond_path_max))
    assert status == 2
    line = one_line(err)
    assert line.startswith(f"policy-kernel: {beyond_path_max}/ddd/ddd/")
    assert line.endswith(": cannot read folder: File name too long")
    assert "reachable (rotation)" in out
    assert out.endswith("replay: 1 passed, 0 failed, 1 bad, 0 without expect\n")


def test_a_symlink_loop_is_not_followed(tmp_path: Path) -> None:
    write(tmp_path, rotation_doc("once", expect=PASSING))
    (tmp_path / "loop").symlink_to(tmp_path)
    status, out, err = replay(str(tmp_path))
    assert (status, err) == (0, "")
    assert out.count("once (rotation)") == 1


def test_a_device_named_json_is_refused_unopened(tmp_path: Path) -> None:
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")  # endless: read, it would never end
    status, _, err = replay(str(zero))
    assert status == 2
    assert one_line(err) == f"policy-kernel: {zero}: not a regular file (a character device)"


def test_a_fifo_named_json_is_refused_without_blocking(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    fifo = folder / "pipe.json"
    os.mkfifo(fifo)
    write(folder, rotation_doc("beside", expect=PASSING), "ok.json")
    for argument in (fifo, folder):  # named, and found in a folder
        done = cli("replay", str(argument))  # no writer ever comes: a blocking read hangs
        assert done.returncode == 2
        assert one_line(done.stderr.decode()) == (
            f"policy-kernel: {fifo}: not a regular file (a FIFO)"
        )
    assert b"beside (rotation)" in done.stdout


_SWAPPED = """
import os, sys
from oracle.cli import main
fifo, regular = sys.argv[1], os.stat(sys.argv[2])
real = os.stat
os.stat = lambda path, *a, **k: regular if str(path) == fifo else real(path, *a, **k)
sys.exit(main(["replay", fifo]))
"""


def test_a_fifo_swapped_in_after_the_check_does_not_block(tmp_path: Path) -> None:
    # The stat says "regular file"; what is opened is a FIFO: the open must not wait
    # for a writer, and the check on the opened file refuses it.
    fifo = tmp_path / "swapped.json"
    os.mkfifo(fifo)
    regular = write(tmp_path, rotation_doc(), "regular.json")
    done = subprocess.run(
        [sys.executable, "-c", _SWAPPED, str(fifo), str(regular)],
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 2
    assert one_line(done.stderr.decode()) == f"policy-kernel: {fifo}: not a regular file (a FIFO)"


def test_the_size_cap(tmp_path: Path) -> None:
    text = json.dumps(rotation_doc("at the cap", expect=PASSING))
    at_cap = tmp_path / "at-cap.json"
    at_cap.write_text(text + " " * (MAX_SCENARIO_BYTES - len(text)))
    status, out, _ = replay(str(at_cap))
    assert status == 0
    assert "at the cap (rotation)" in out
    beyond = tmp_path / "beyond.json"
    beyond.write_text(text + " " * (MAX_SCENARIO_BYTES + 1 - len(text)))
    status, _, err = replay(str(beyond))
    assert status == 2
    assert one_line(err) == (
        f"policy-kernel: {beyond}: larger than the 4 MiB limit for a scenario file"
    )


def test_bytes_that_are_not_utf8_are_named_by_offset(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"kind": "rotation", "name": "caf\xe9"}')
    status, _, err = replay(str(path))
    assert status == 2
    assert one_line(err) == f"policy-kernel: {path}: not UTF-8 text: byte 0xe9 at byte offset 33"


def _closed_pipe() -> int:
    """The write end of a pipe whose reader is gone."""
    read, written = os.pipe()
    os.close(read)
    return written


def test_a_closed_pipe_ends_quietly() -> None:
    written = _closed_pipe()
    try:
        done = cli("replay", stdout=written)
    finally:
        os.close(written)
    assert done.returncode == EXIT_BROKEN_PIPE == 141
    assert done.stderr == b""


def test_head_1_ends_the_replay_quietly() -> None:
    # `policy-kernel replay ... | head -1`: far more output than a pipe buffers.
    process = subprocess.Popen(
        [sys.executable, "-m", "oracle.cli", "replay", *[str(GOLDEN)] * 30],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()
    try:
        status = process.wait(timeout=TIMEOUT)
    finally:
        process.kill()
    assert first.endswith(b"(admission): pool engine, cap 1, keys at selection\n")
    assert status == EXIT_BROKEN_PIPE
    assert process.stderr.read() == b""
    process.stderr.close()


_FAKE_COMMANDS = """
import sys
import oracle.cli
def noisy(*arguments, **options):
    out = options.get("out") or arguments[2]
    for _ in range(100_000):
        out.write("a line of a long report\\n")
    return 0
oracle.cli.verify = oracle.cli.bench = noisy
sys.argv = ["policy-kernel", *sys.argv[1:]]
oracle.cli.run()
"""


@pytest.mark.parametrize(
    ("command", "status"),
    [
        (["verify", "--quick"], EXIT_BROKEN_PIPE),
        (["bench", "--quick"], EXIT_BROKEN_PIPE),
        (["--help"], EXIT_BROKEN_PIPE),  # help too: its failed write is not ignored
    ],
)
def test_every_command_ends_quietly_on_a_closed_pipe(command: list[str], status: int) -> None:
    # verify and bench replaced by stand-ins that print a lot: the handling is run()'s.
    written = _closed_pipe()
    try:
        done = subprocess.run(
            [sys.executable, "-c", _FAKE_COMMANDS, *command],
            stdout=written,
            stderr=subprocess.PIPE,
            timeout=TIMEOUT,
            check=False,
        )
    finally:
        os.close(written)
    assert (done.returncode, done.stderr) == (status, b"")


def _with_closed(stream: str, *argv: str) -> subprocess.CompletedProcess[bytes]:
    """``policy-kernel ARGV`` started with standard output (1) or error (2) closed."""
    return subprocess.run(
        ["sh", "-c", f'exec "$0" -m oracle.cli "$@" {stream}>&-', sys.executable, *argv],
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )


def test_a_closed_stdout_still_tells_by_the_exit_status(tmp_path: Path) -> None:
    done = _with_closed("1", "replay")
    assert (done.returncode, done.stderr) == (0, b"")
    failing = write(tmp_path, rotation_doc(expect={"grants": []}))
    assert _with_closed("1", "replay", str(failing)).returncode == 1
    bad = write(tmp_path, rotation_doc(budget=-1), "bad.json")
    done = _with_closed("1", "replay", str(bad))
    assert done.returncode == 2
    one_line(done.stderr.decode())


def test_a_closed_stderr_does_not_crash(tmp_path: Path) -> None:
    bad = write(tmp_path, rotation_doc(budget=-1))
    done = _with_closed("2", "replay", str(bad))
    assert done.returncode == 2
    assert done.stdout == b"replay: 0 passed, 0 failed, 1 bad, 0 without expect\n"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_is_one_line() -> None:
    with open("/dev/full", "wb") as full:
        done = cli("replay", stdout=full)
    assert done.returncode == 2
    assert one_line(done.stderr.decode()) == (
        "policy-kernel: cannot write the output: [Errno 28] No space left on device"
    )


# ------------------------------------------------------- 3. one printable line


def test_a_key_with_a_newline_cannot_forge_a_line(tmp_path: Path) -> None:
    doc = rotation_doc()
    doc["x\npolicy-kernel: forged"] = 1
    path = write(tmp_path, doc)
    status, _, err = replay(str(path))
    assert status == 2
    line = one_line(err)
    assert line.startswith(f"policy-kernel: {path}: ")
    assert "\\npolicy-kernel: forged" in line


def test_a_file_name_with_controls_is_escaped(tmp_path: Path) -> None:
    path = write(tmp_path, rotation_doc(budget=-1), "a\nb\x1b[2J.json")
    status, _, err = replay(str(path))
    assert status == 2
    assert one_line(err).startswith(f"policy-kernel: {tmp_path}/a\\nb\\x1b[2J.json: budget:")


HOSTILE = "\ud800\x1b[2J\u00e9\u2028\n"


def test_names_and_ids_in_tables_are_escaped(tmp_path: Path) -> None:
    doc = rotation_doc(
        HOSTILE,
        requests=[{"id": HOSTILE, "slices": 2, "lane": "\nhigh"}, {"id": "B", "slices": 1}],
        expect={"outcomes": {HOSTILE: "classic"}},
    )
    status, out, err = replay(str(write(tmp_path, doc)))
    assert (status, err) == (1, "")
    assert all(line.isprintable() for line in out.splitlines()), out
    escaped = "\\ud800\\x1b[2Jé\\u2028\\n"
    assert f"{escaped} (rotation)" in out
    assert f"grant log  [({escaped},2)" in out
    assert f"FAIL outcomes.{escaped}: expected classic, got completed" in out
    status, out, _ = replay("--json", str(tmp_path / "case.json"))
    assert json.loads(out)["name"] == HOSTILE  # JSON carries the text exactly


def test_event_lists_are_escaped(tmp_path: Path) -> None:
    doc = {
        "kind": "rotation",
        "name": "events",
        "events": [{"arrival": {"request": HOSTILE, "budget": 2}}, {"cancel": {"request": "\n"}}],
    }
    status, out, err = replay(str(write(tmp_path, doc)))
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
    status, _, err = replay(str(path))
    assert status == 2
    assert one_line(err).startswith(f"policy-kernel: {path}: {where}"), err


def test_scenario_errors_are_one_printable_line() -> None:
    error = ScenarioError("a\nb.json", "x", "must be\x1b[2J", 2, 5)
    assert str(error) == "a\\nb.json: x: line 2, column 5: must be\\x1b[2J"
    assert str(ScenarioError("f.json", "", "reason")) == "f.json: reason"


# ---------------------------------------------------------------- 5. the summary


def test_the_summary_counts_every_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, rotation_doc("passes", expect=PASSING), "1.json")
    write(tmp_path, rotation_doc("fails", expect={"grants": []}), "2.json")
    write(tmp_path, rotation_doc("unchecked"), "3.json")
    write(tmp_path, rotation_doc(budget=-1), "4.json")
    write(tmp_path, rotation_doc("boom"), "5.json")
    monkeypatch.setattr(
        oracle.harness.render, "replay_rotation", _raising_for("boom", RuntimeError())
    )
    status, out, err = replay(str(tmp_path))
    assert status == 2  # a bad file outranks a failed expectation
    assert err.count("\n") == 2
    assert out.endswith("replay: 1 passed, 1 failed, 2 bad, 1 without expect\n")
    status, out, _ = replay("--json", str(tmp_path))
    assert status == 2
    # --json: the scenario objects only, no summary object (the exit status sums up)
    assert [json.loads(line)["name"] for line in out.splitlines()] == [
        "passes",
        "fails",
        "unchecked",
    ]


# ------------------------------------------------- output bounded by what it names


def test_output_grows_with_grants_not_with_the_length_of_ids(tmp_path: Path) -> None:
    # A 100 KB id granted 10,000 times printed 500 MB (text and --json alike): ids
    # are at most 200 characters, so each grant costs about that much, whole.
    def doc(a: str, b: str) -> dict[str, object]:
        requests = [{"id": a, "slices": 5_000}, {"id": b, "slices": 5_000}]
        return rotation_doc(budget=1, requests=requests)

    status, _, err = replay(str(write(tmp_path, doc("x" * 100_000, "B"))))
    assert status == 2
    assert "requests[0].id: 'xxx" in one_line(err)
    assert len(err) < 400
    # At the limit, ids that escape to 6 characters each: 1,200 characters a grant.
    path = write(tmp_path, doc("\u2028" * 200, "\u2029" * 200), "at-the-limit.json")
    status, out, _ = replay("--json", str(path))
    grants = len(json.loads(out)["grants"])
    assert (status, grants > 9_000) == (0, True)
    assert len(out) < 1_300 * grants + 10_000
    status, out, _ = replay(str(path))
    assert status == 0
    assert 1_200 * grants < len(out) < 1_300 * grants + 10_000
