"""``policy-kernel verify --against-command``: the command line reaches the kit
(the kit itself is tested in test_command.py, with its own smaller bounds)."""

from __future__ import annotations

import io
import sys

import pytest

import oracle.cli
from oracle.cli import main


def test_the_options_reach_the_kit(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}

    def fake(command: str, **options: object) -> int:
        seen.update(options, command=command)
        return 1

    monkeypatch.setattr(oracle.cli, "verify_against_command", fake)
    status = main(
        [
            "verify",
            "--quick",
            "--against-command",
            "my-scheduler --conform",
            "--timeout",
            "2.5",
            "--json",
        ],
        out=io.StringIO(),
        err=io.StringIO(),
    )
    assert status == 1
    assert seen["command"] == "my-scheduler --conform"
    assert (seen["timeout"], seen["as_json"]) == (2.5, True)
    assert seen["level"] == "quick"


def test_a_process_that_dies_at_once_is_one_line_and_status_2() -> None:
    err = io.StringIO()
    command = f'"{sys.executable}" -c "import sys; sys.exit(3)"'
    status = main(["verify", "--quick", "--against-command", command], out=io.StringIO(), err=err)
    assert status == 2
    assert err.getvalue().count("\n") == 1
    assert "exited with status 3" in err.getvalue()


def test_jobs_and_shards_do_not_apply() -> None:
    err = io.StringIO()
    status = main(["verify", "--against-command", "x", "--jobs", "2"], out=io.StringIO(), err=err)
    assert status == 2
    assert err.getvalue() == "policy-kernel: --jobs and --shard do not apply to --against-command\n"
