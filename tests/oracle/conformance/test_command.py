"""The JSON-lines protocol: the kernel's own server agrees, a broken foreign process is
caught, and a process that breaks the protocol ends the run with one line, exit 2.

The foreign processes are ``tests/oracle/conformance/foreign_server.py`` (the kernel with
one fault); each test starts one or two (about half a second each).
"""

from __future__ import annotations

import io
import json
import shlex
import sys
from pathlib import Path

import pytest

from oracle.conformance import (
    CommandImplementation,
    GrantOrderBounds,
    ImplementationBroken,
    ProtocolBounds,
    SelectionBounds,
    assert_conforms,
    assert_disagrees,
    check_admission_attempt,
    check_grant_order,
    check_selection,
    check_tick_protocol,
    verify_against_command,
)
from oracle.conformance.properties import property_check_tick_protocol

ROOT = Path(__file__).resolve().parents[3]
PYTHON = shlex.quote(sys.executable)
KERNEL_SERVER = f"{PYTHON} -m oracle.conformance.kernel_server"
FAST = ("grant expiry", "backlog cap")


def foreign(fault: str) -> str:
    return f"{PYTHON} -m tests.oracle.conformance.foreign_server {fault}"


def run(
    command: str,
    *,
    checks: tuple[str, ...] = FAST,
    timeout: float = 10.0,
    as_json: bool = False,
) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = verify_against_command(
        command, level="quick", checks=checks, timeout=timeout, as_json=as_json, out=out, err=err
    )
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def _at_the_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # python -m tests.oracle.conformance.foreign_server


def test_the_kernel_server_agrees_on_every_decision() -> None:
    with CommandImplementation(KERNEL_SERVER) as kernel:
        assert len(kernel.decisions()) == 11
        assert_conforms(
            check_grant_order(kernel, bounds=GrantOrderBounds(2, 2)),
            check_tick_protocol(kernel, bounds=ProtocolBounds((1, 2), 1, 3)),
            check_selection(kernel, bounds=SelectionBounds(2, 1)),
            check_admission_attempt(kernel, bounds=SelectionBounds(1, 1)),
            property_check_tick_protocol(kernel, examples=10, max_events=30),
        )
    assert kernel.close() == 0  # it exits when its stdin closes


def test_verify_against_the_kernel_server_exits_0() -> None:
    status, out, err = run(KERNEL_SERVER)
    assert (status, err) == (0, "")
    assert "11 of 11 decisions answered" in out
    assert "grant expiry: PASS (578 cases" in out
    assert "backlog cap: PASS" in out
    assert (
        out.rstrip()
        .splitlines()[-1]
        .startswith("verify --against-command: 2 passed, 0 failed, 0 skipped in")
    )


def test_a_broken_foreign_process_is_caught_exit_1() -> None:
    status, out, err = run(foreign("expiry-strict"), checks=FAST)
    assert (status, err) == (1, "")
    assert "grant expiry: FAIL" in out
    assert (
        "grant expiry: slice_grant_expired, slices_in_grant 1, budget 1, backlog_pending true:"
        " expected true, answered false" in out
    )
    assert (
        '  request:  {"decision":"slice_grant_expired","inputs":{"backlog_pending":true,'
        '"budget":1,"slices_in_grant":1}}' in out
    )
    assert "1 passed, 1 failed, 0 skipped" in out


def test_a_broken_tick_protocol_through_the_command() -> None:
    with CommandImplementation(foreign("declined-ignored")) as implementation:
        smallest = assert_disagrees(
            check_tick_protocol(implementation, bounds=ProtocolBounds((2,), 1, 4))
        )
    assert "declined waiter" in json.dumps(smallest.expected)
    assert smallest.events


def test_json_report() -> None:
    status, out, _ = run(foreign("expiry-strict"), checks=("grant expiry",), as_json=True)
    assert status == 1
    document = json.loads(out)
    (report,) = document["checks"]
    assert (report["check"], report["verdict"], document["passed"]) == (
        "grant expiry",
        "FAIL",
        False,
    )
    assert report["counterexamples"][0]["request"]["decision"] == "slice_grant_expired"
    assert report["cases"] == 578


@pytest.mark.parametrize(
    ("fault", "line"),
    [
        ("not-json:2", "malformed answer to request 2 (slice_grant_expired): not a JSON line:"
         " this is not JSON"),
        ("wrong-id:1", "malformed answer to request 1 (slice_grant_expired): its id is 2"
         " (answers come in the order of the requests)"),
        ("malformed:3", 'malformed answer to slice_grant_expired: slice_grant_expired: true or'
         ' false, not "yes"'),
        ("exit:5", "the command exited with status 3 before answering request 5"
         " (slice_grant_expired); its last stderr line: foreign: out of patience"),
        ("no-decisions", "the command answers none of the decisions (slice_grant_expired,"
         " backlog_admits, slice_takes_tick, parse_grant_rounds, parse_lane, next_grant_index,"
         " take_next_grantee, backlog_append, apply_event, select_waiting, attempt_admission)"),
        ("protocol-2", "the command speaks protocol 2, this kit speaks 1"),
        ("misspelt", "the hello names a decision this kit does not know: slice_grant_expried"
         " (the decisions: slice_grant_expired, backlog_admits, slice_takes_tick,"
         " parse_grant_rounds, parse_lane, next_grant_index, take_next_grantee, backlog_append,"
         " apply_event, select_waiting, attempt_admission)"),
    ],
)  # fmt: skip
def test_a_process_breaking_the_protocol_is_one_line_exit_2(fault: str, line: str) -> None:
    status, _, err = run(foreign(fault))
    assert status == 2
    assert err == f"policy-kernel verify: {line}\n"


def test_a_process_that_stops_answering_times_out() -> None:
    # 2 s, not less: the hello's answer includes the server's start-up, which took
    # over 0.5 s on a loaded 2-core machine
    status, _, err = run(foreign("hang:4"), timeout=2.0)
    assert status == 2
    assert err == (
        "policy-kernel verify: no answer within 2 s to request 4 (slice_grant_expired)\n"
    )


def test_a_command_that_cannot_start() -> None:
    status, _, err = run("/nonexistent/scheduler --serve")
    assert status == 2
    assert err == (
        "policy-kernel verify: cannot start /nonexistent/scheduler --serve:"
        " No such file or directory\n"
    )
    assert run("", timeout=1.0)[0] == 2
    assert run(KERNEL_SERVER, timeout=0.0)[2].startswith("policy-kernel verify: the timeout")


def test_a_dead_process_ends_a_library_run_too() -> None:
    with CommandImplementation(foreign("exit:3")) as implementation:
        with pytest.raises(ImplementationBroken, match="exited with status 3"):
            check_tick_protocol(implementation, bounds=ProtocolBounds((2,), 1, 2))
        with pytest.raises(ImplementationBroken, match="exited with status 3"):
            property_check_tick_protocol(implementation, examples=5)
