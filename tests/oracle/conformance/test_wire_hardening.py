"""Hostile lines from a process (issues 18 and 30): every line the kit reads goes through
one strict reader, then one reading of the answer, total on what the reader lets
through, and what either refuses ends the run with one line, exit 2, never a
traceback: numbers beyond the float range (integers too), deep nesting, ids and
versions that are not exact integers, decision names that are not text, a hello
answered "not applicable"; and a timeout out of range."""

from __future__ import annotations

import contextlib
import io
import shlex
import sys
import time
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from oracle.cli import main
from oracle.conformance import CommandImplementation, verify_against_command
from oracle.conformance.checks import BATCH
from oracle.conformance.decisions import DECISIONS, normal_answer
from oracle.conformance.decisions import HELLO as HELLO_NAME
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
        (['{"id": 0, "not_applicable": "no hello here"}'],
         "malformed answer to hello: it must be an answer, not 'not_applicable' (no hello here)"),
    ],
)  # fmt: skip
def test_a_hostile_line_is_one_line_exit_2(lines: list[str], said: str) -> None:
    assert run(canned(*lines)) == (2, f"policy-kernel verify: {said}\n")


def test_a_key_value_beyond_the_float_range_is_one_line_exit_2() -> None:
    hello = '{"id": 0, "answer": {"protocol": 1, "decisions": ["select_waiting"]}}'
    huge = [
        f'{{"id": {i}, "answer": {{"index": 0, "keys": [1{"0" * 400}]}}}}'
        for i in range(1, BATCH + 1)
    ]
    err = io.StringIO()
    status = verify_against_command(  # a whole batch answered: the kit reads it, then judges
        canned(hello, *huge), level="quick", checks=("selection",), out=io.StringIO(), err=err
    )
    assert (status, err.getvalue()) == (
        2,
        "policy-kernel verify: malformed answer to select_waiting: keys[0]: a number within"
        " the float range, not a 401-digit integer\n",
    )


#: Every JSON value the line reader lets through: integers up to its 4,300 digits.
_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**4299), max_value=10**4299),
    st.integers(min_value=300, max_value=4299).map(lambda digits: 3 * 10**digits),  # no float
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(["NaN", "Infinity", "-0.0", "low", "admitted", "empty", "waiting"]),
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def _answers(draw: st.DrawFn) -> object:
    """Any JSON value, or one in the shape of an answer with any value in a field."""
    value = draw(_VALUES)
    return draw(
        st.sampled_from(
            [
                value,
                {"index": 0, "keys": [value]},
                {"outcome": "admitted", "index": 0, "keys": [1, value], "queue": []},
                {"protocol": 1, "decisions": [value]},
                {"protocol": value, "decisions": []},
                {"chosen": value, "backlog": []},
                {"refused": value},
            ]
        )
    )


@settings(max_examples=300, deadline=None)
@given(decision=st.sampled_from([HELLO_NAME, *DECISIONS]), answer=_answers())
@example(decision="select_waiting", answer={"index": 0, "keys": [10**400]})
def test_reading_an_answer_is_total_on_every_json_value(decision: str, answer: object) -> None:
    try:
        said = str(normal_answer(decision, answer) is None)
    except WireError as error:  # the only exception: one line the command line prints
        said = str(error)
    assert "\n" not in said


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
