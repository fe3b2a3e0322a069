"""Helpers shared by the command-line tests: run ``policy-kernel replay`` in-process,
write scenario files, and check the one-line refusal of a bad file."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from oracle.cli import main


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
