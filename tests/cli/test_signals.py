"""The command line under Ctrl-C and failed writes of help: one line, never a
traceback (``run()``, the console entry point, in a process of its own)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

from oracle.exits import EXIT_BAD_INPUT, EXIT_INTERRUPTED
from tests.replay_helpers import ctrl_c_heard

TIMEOUT = 60


@pytest.mark.parametrize("argv", [["--help"], ["replay", "--help"], ["verify", "--help"]])
def test_help_to_a_full_disk_is_one_line(argv: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "oracle.cli", *argv],
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=TIMEOUT,
            check=False,
        )
    assert done.returncode == EXIT_BAD_INPUT
    assert done.stderr.decode() == (
        "policy-kernel: cannot write the output: [Errno 28] No space left on device\n"
    )


def test_ctrl_c_is_one_line_and_status_130() -> None:
    """Ctrl-C reaches the whole process group, verify's workers included: the
    parent reports it on one line, and the workers neither print nor hang it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "oracle.cli", "verify", "--quick", "--jobs", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # a process group of its own, as a terminal gives
        preexec_fn=ctrl_c_heard,  # noqa: PLW1509 - one sigaction, no lock taken
    )
    time.sleep(4)  # past the imports, inside the checks
    os.killpg(process.pid, signal.SIGINT)
    try:
        _, errors = process.communicate(timeout=TIMEOUT)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == EXIT_INTERRUPTED
    assert errors.decode() == "policy-kernel: interrupted\n"
