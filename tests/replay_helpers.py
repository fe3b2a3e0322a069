"""Helpers shared by the command-line tests: run ``policy-kernel replay`` in-process
(its output, or its output and its errors) or ``policy-kernel`` as a process, write
scenario files, and check the one-line refusal of a bad file."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import pytest

from oracle.cli import main
from oracle.harness.scenarios import golden_paths

GOLDEN = Path(str(golden_paths()[0])).parents[1]
#: Seconds a subprocess may take: a regression (a blocking FIFO) fails, never hangs.
TIMEOUT = 60


def ctrl_c_heard() -> None:
    """For ``preexec_fn``: the child hears Ctrl-C as a terminal's process does. A
    shell without job control (a script, ``sh -c '... &'``, a CI runner) starts a
    background job with SIGINT ignored, and Python then sets up no
    ``KeyboardInterrupt``: a suite started that way would see Ctrl-C do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def rotation_doc(name: object = "t", **changes: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "kind": "rotation",
        "name": name,
        "budget": 2,
        "requests": [{"id": "A", "slices": 4}, {"id": "B", "slices": 3}],
    }
    doc.update(changes)
    return doc


PASSING = {"grants": [["A", 2], ["B", 2], ["A", 2], ["B", 1]]}


def replay_captured(*argv: str) -> tuple[int, str, str]:
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


def printed_by(program: str, *arguments: str, env: Mapping[str, str] | None = None) -> str:
    """What the Python ``program`` prints, run as a process with ``arguments`` (and
    ``env``, when given): an open that blocks (a FIFO) fails the test after
    :data:`TIMEOUT`, never hangs it."""
    done = subprocess.run(
        [sys.executable, "-c", program, *arguments],
        capture_output=True,
        timeout=TIMEOUT,
        check=True,
        env=env,
    )
    return done.stdout.decode()


def replay(*argv: str) -> tuple[int, str]:
    """``policy-kernel replay ARGV...``: the exit status and what it printed."""
    out = io.StringIO()
    status = main(["replay", *argv], out=out)
    return status, out.getvalue()


def step_document(
    *, blocks: int = 8, prompt: int = 2, out: int = 2, request: str = "A", **policy: object
) -> dict[str, Any]:
    """A one-request step-engine scenario: budget and chunk 4, 1 s iterations, two
    residents, ``blocks`` KV blocks of 2 tokens; ``policy`` is its policy document."""
    return {
        "kind": "admission",
        "name": "step",
        "engine": "step",
        "step": {
            "budget": 4,
            "chunk": 4,
            "iteration_cost": 1,
            "max_running": 2,
            "blocks": blocks,
            "block_size": 2,
        },
        "policy": policy,
        "requests": [{"id": request, "prompt": prompt, "out": out}],
    }


def write(tmp_path: Path, doc: object, name: str = "case.json") -> Path:
    """``doc`` as a JSON file in ``tmp_path``."""
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def assert_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: object, message: str
) -> None:
    """Replaying ``doc`` exits 2 with one line naming the file and saying ``message``."""
    path = write(tmp_path, doc)
    status, _ = replay(str(path))
    error = capsys.readouterr().err
    assert status == 2
    assert error.count("\n") == 1, error
    assert error.startswith(f"policy-kernel: {path}: ")
    assert message in error, error
