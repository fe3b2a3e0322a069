"""Helpers shared by the command-line tests: run ``policy-kernel replay`` in-process,
write scenario files, and check the one-line refusal of a bad file."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from oracle.cli import main


def replay(*argv: str) -> tuple[int, str]:
    """``policy-kernel replay ARGV...``: the exit status and what it printed."""
    out = io.StringIO()
    status = main(["replay", *argv], out=out)
    return status, out.getvalue()


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
