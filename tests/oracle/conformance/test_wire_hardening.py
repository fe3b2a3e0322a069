"""Hostile lines from a process (issue 18): every line the kit reads goes through one
strict reader, and what it refuses ends the run with one line, exit 2, never a
traceback: numbers beyond the float range, deep nesting, ids and versions that are
not exact integers, decision names that are not text; and a timeout out of range."""

from __future__ import annotations

import contextlib
import io
import shlex
import sys
import time
from pathlib import Path

import pytest

from oracle.cli import main
from oracle.conformance import CommandImplementation, verify_against_command
from oracle.conformance.wire import MAX_DEPTH, WireError, read_line

ROOT = Path(__file__).resolve().parents[3]
HELLO = '{"id": 0, "answer": {"protocol": 1, "decisions": ["backlog_admits"]}}'


def canned(*lines: str) -> str:
    """A command answering each request with the next of ``lines``."""
    return shlex.join([sys.executable, "-m", "tests.oracle.conformance.canned_server", *lines])


def run(command: str) -> tuple[int, str]:
    err = io.StringIO()
    status = verify_against_command(
        command, level="quick", checks=("backlog cap",), timeout=10.0, out=io.StringIO(), err=err
    )
    return status, err.getvalue()


@pytest.fixture(autouse=True)
def _at_the_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize(
    ("lines", "said"),
    [
        (['{"id": 0, "answer": {"protocol": 1, "decisions": [1e400]}}'],
         "malformed answer to request 0 (hello): not a JSON line: 1e400 is beyond the float range"),
        (['{"id": 0, "answer": {"protocol": 1e400, "decisions": []}}'],
         "malformed answer to request 0 (hello): not a JSON line: 1e400 is beyond the float range"),
        (['{"id": 0, "answer": {"protocol": 1, "decisions": [["a"]]}}'],
         'malformed answer to hello: each decision name must be text, not ["a"]'),
        (['{"id": 0, "answer": {"protocol": 1, "decisions": [{"a": 1}]}}'],
         'malformed answer to hello: each decision name must be text, not {"a":1}'),
        (['{"id": 0, "answer": {"protocol": 1, "decisions": [null, "backlog_admits"]}}'],
         "malformed answer to hello: each decision name must be text, not null"),
        (['{"id": 0, "answer": {"protocol": true, "decisions": ["backlog_admits"]}}'],
         "the command speaks protocol true, this kit speaks 1"),
        (['{"id": 0, "answer": {"protocol": 1.0, "decisions": ["backlog_admits"]}}'],
         "the command speaks protocol 1.0, this kit speaks 1"),
        (['{"id": 0, "answer": ' + "[" * 5000 + "]" * 5000 + "}"],
         "malformed answer to request 0 (hello): not a JSON line: nested deeper than 64 levels"),
        ([HELLO, '{"id": 1, "answer": ' + "{\"a\":" * 5000 + "1" + "}" * 5000 + "}"],
         "malformed answer to request 1 (backlog_admits): not a JSON line:"
         " nested deeper than 64 levels"),
        ([HELLO, '{"id": 1.0, "answer": false}'],
         "malformed answer to request 1 (backlog_admits): its id is 1.0"
         " (answers come in the order of the requests)"),
        ([HELLO, '{"id": true, "answer": false}'],
         "malformed answer to request 1 (backlog_admits): its id is true"
         " (answers come in the order of the requests)"),
        ([HELLO, '{"id": 1, "answer": -1e999}'],
         "malformed answer to request 1 (backlog_admits): not a JSON line: -1e999 is beyond"
         " the float range"),
        ([HELLO, '{"id": 1, "answer": NaN}'],
         "malformed answer to request 1 (backlog_admits): not a JSON line: NaN is not JSON"
         " (numbers must be finite)"),
    ],
)  # fmt: skip
def test_a_hostile_line_is_one_line_exit_2(lines: list[str], said: str) -> None:
    assert run(canned(*lines)) == (2, f"policy-kernel verify: {said}\n")


def test_the_reader_refuses_only_by_its_own_error() -> None:
    assert read_line(b'{"a": ' + b"[" * (MAX_DEPTH - 1) + b"]" * (MAX_DEPTH - 1) + b"}")
    assert read_line(b'{"a": "' + b"[" * 10_000 + b'"}') == {"a": "[" * 10_000}
    for line in (b"[" * 100_000, b"\xff", b'{"a": 1' + b"0" * 5000 + b"}", b"[1]", b""):
        with pytest.raises(WireError):
            read_line(line)


def test_the_depth_check_takes_linear_time() -> None:
    """Open strings full of escaped quotes: a string pattern searched from every quote
    took quadratic time (10,000 pairs: 2 s; a 1 MiB line: hours)."""
    for line in (
        b"[" * (MAX_DEPTH + 1) + b'"' + b'\\"' * 300_000,
        b'{"a": "\\"' + b"[" * 100 + b'"}',  # an escaped quote: the brackets are text
        b"[]" * 300_000,
    ):
        started = time.perf_counter()
        with contextlib.suppress(WireError):
            read_line(line)
        assert time.perf_counter() - started < 1.0
    assert read_line(b'{"a": "\\"' + b"[" * 100 + b'"}') == {"a": '"' + "[" * 100}


@pytest.mark.parametrize("seconds", ["1e10", "0", "-1", "nan", "inf", "86400.5", "ten"])
def test_a_timeout_out_of_range_is_refused(
    seconds: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["verify", "--against-command", "true", "--timeout", seconds])
    assert exited.value.code == 2
    assert "argument --timeout: " in capsys.readouterr().err
    with pytest.raises(ValueError, match="the timeout must be"):
        CommandImplementation("true", timeout=1e10)
