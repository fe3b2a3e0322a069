"""The command's processes (issue 18): the kit starts the command in its own process
group and ends the whole group on every exit path (the end of a run, a protocol
error, a timeout, a signal that ends verify itself), within about a second and a
half even when the process ignores SIGTERM; and it keeps only a bounded tail of
stderr.

Each server here is started through ``sh -c`` and forks a grandchild
(``sleep 1000 &``) whose pid it writes to a file: after the run, nothing of the
group may be running.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from oracle.conformance import CommandImplementation, ImplementationBroken, verify_against_command
from tests.replay_helpers import ctrl_c_heard

ROOT = Path(__file__).resolve().parents[3]
PYTHON = shlex.quote(sys.executable)
HELLO = '{"id": 0, "answer": {"protocol": 1, "decisions": ["backlog_admits"]}}'


def alive(pid: int) -> bool:
    """Whether ``pid`` is running (a zombie no reaper collected is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def gone(pid: int, within: float = 2.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture
def pid_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(ROOT)  # python -m tests.oracle.conformance...
    path = tmp_path / "grandchild.pid"
    yield path
    if path.exists():  # whatever the verdict, leave nothing behind
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(path.read_text()), signal.SIGKILL)


def forking(pid_file: Path, then: str) -> str:
    """``sh -c``: fork a sleeping grandchild, write its pid, then run ``then``."""
    script = f"sleep 1000 & echo $! > {shlex.quote(str(pid_file))}; {then}"
    return f"sh -c {shlex.quote(script)}"


def grandchild(pid_file: Path) -> int:
    deadline = time.monotonic() + 10
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline, "the server never started its grandchild"
        time.sleep(0.02)
    return int(pid_file.read_text())


def run(command: str, timeout: float = 10.0) -> tuple[int, str]:
    err = io.StringIO()
    status = verify_against_command(
        command, level="quick", checks=("backlog cap",), timeout=timeout, out=io.StringIO(), err=err
    )
    return status, err.getvalue()


@pytest.mark.parametrize(
    ("then", "timeout", "status"),
    [
        (f"exec {PYTHON} -m oracle.conformance.kernel_server", 10.0, 0),  # a normal end
        ("exec sleep 1000", 1.0, 2),  # no answer within the timeout
        ("echo this is no hello; exec cat", 10.0, 2),  # a bad hello
        ("exit 3", 3.0, 2),  # the server itself dies at once
    ],
)
def test_no_process_of_the_group_survives_a_run(
    pid_file: Path, then: str, timeout: float, status: int
) -> None:
    started = time.monotonic()
    assert run(forking(pid_file, then), timeout)[0] == status
    assert gone(grandchild(pid_file))
    assert time.monotonic() - started < timeout + 5


def test_an_exit_is_told_while_a_process_it_started_holds_its_stdout(pid_file: Path) -> None:
    # the sleeping grandchild keeps the pipe open, so its end never comes: no answer
    # in time, and the kit says that the command had exited too
    status, err = run(forking(pid_file, "exit 3"), timeout=3.0)
    assert status == 2
    assert err == (
        "policy-kernel verify: no answer within 3 s to request 0 (hello); the command had"
        " exited with status 3 (a process it started holds its stdout)\n"
    )
    assert gone(grandchild(pid_file))


def test_a_command_may_hand_over_to_a_process_it_starts(pid_file: Path) -> None:
    # a launcher: the server starts late and answers on the stdin and stdout it
    # inherited after the command exited (a background job's stdin would be /dev/null)
    server = f"exec {PYTHON} -m oracle.conformance.kernel_server"
    launcher = f"exec 3<&0; (sleep 2.5; {server}) <&3 & exit 0"
    assert run(forking(pid_file, launcher), timeout=10.0) == (0, "")
    assert gone(grandchild(pid_file))


def test_shutdown_is_quick_even_when_sigterm_is_ignored(pid_file: Path) -> None:
    implementation = CommandImplementation(
        forking(pid_file, "trap '' TERM; exec sleep 1000")  # the sleeps ignore SIGTERM
    )
    pid = grandchild(pid_file)
    started = time.monotonic()
    assert implementation.close() == -signal.SIGKILL
    assert time.monotonic() - started < 3.0  # 1 s to exit, 0.5 s after SIGTERM, then SIGKILL
    assert gone(pid)


@pytest.mark.parametrize(
    ("number", "status"),
    [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129), (signal.SIGQUIT, 131)],
    ids=["SIGTERM", "Ctrl-C", "SIGHUP", "SIGQUIT"],
)
def test_a_signal_to_verify_ends_the_group(pid_file: Path, number: int, status: int) -> None:
    server = forking(
        pid_file, f"exec {PYTHON} -m tests.oracle.conformance.canned_server {shlex.quote(HELLO)}"
    )
    verify = subprocess.Popen(
        [sys.executable, "-m", "oracle.cli", "verify", "--quick", "--against-command", server],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        preexec_fn=ctrl_c_heard,  # noqa: PLW1509 - one sigaction, no lock taken
    )
    pid = grandchild(pid_file)
    time.sleep(0.5)  # the hello answered, the first check waiting for its answer
    verify.send_signal(number)
    _, err = verify.communicate(timeout=20)
    assert verify.returncode == status, err
    assert b"Traceback" not in err
    assert gone(pid)


def test_stderr_kept_is_bounded_and_a_lone_carriage_return_ends_a_line(tmp_path: Path) -> None:
    script = tmp_path / "noisy.py"
    script.write_text(
        "import sys\n"
        "for _ in range(2000):\n"
        "    sys.stderr.write('x' * 5000 + '\\r')\n"  # 10 MB, and not one newline
        "sys.stderr.write('the end\\r')\n"
        "sys.stderr.flush()\n"
        "sys.exit(3)\n"
    )
    implementation = CommandImplementation([sys.executable, str(script)])
    last = r"its last stderr line: the end$"
    with implementation, pytest.raises(ImplementationBroken, match=last):
        implementation.decisions()
    kept = list(implementation._stderr)  # the tail the kit keeps
    assert len(kept) <= 5
    assert all(len(line) <= 400 for line in kept)
