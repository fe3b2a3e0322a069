"""The console entry point (``oracle.console``): every command ends quietly on a
closed pipe or a full disk, and still tells by its exit status."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from oracle.cli import EXIT_BROKEN_PIPE
from tests.replay_helpers import (
    GOLDEN,
    TIMEOUT,
    cli,
    one_line,
    rotation_doc,
    write,
)

# --- found by hardening (issue 9)


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
