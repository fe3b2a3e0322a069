"""The std-only Rust template server (docs/examples/conformance_server.rs) builds with
plain ``rustc``, conforms at quick bounds, and its deliberately broken build
(``--cfg broken``) is caught; skipped where ``rustc`` is absent. Its budget setting
reader is mlxcel's own rule (``trim().parse::<u64>()``), which the kit checks on its
whole domain."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest

from oracle.conformance import verify_against_command

SOURCE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "conformance_server.rs"
ROTATION_CHECKS = (
    "grant expiry",
    "backlog cap",
    "alternation",
    "budget setting",
    "lane header",
    "grant order",
)

rustc = shutil.which("rustc")
pytestmark = pytest.mark.skipif(rustc is None, reason="rustc is not installed")


def build(folder: Path, *flags: str) -> Path:
    assert rustc is not None
    binary = folder / "conformance_server"
    command = [rustc, "-O", "--edition", "2021", *flags]  # flags every rustc >= 1.56 takes
    built = subprocess.run(
        [*command, str(SOURCE), "-o", str(binary)],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    assert "warning" not in built.stderr, built.stderr  # the template builds clean
    return binary


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("rust"))


def test_the_template_conforms(server: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    status = verify_against_command(
        str(server), level="quick", checks=ROTATION_CHECKS, out=out, err=err
    )
    assert (status, err.getvalue()) == (0, ""), out.getvalue()
    assert "(8 of 11 decisions answered)" in out.getvalue()
    assert out.getvalue().count(": PASS (") == len(ROTATION_CHECKS)


def test_the_broken_template_is_caught(tmp_path: Path) -> None:
    broken = build(tmp_path, "--cfg", "broken")
    out = io.StringIO()
    status = verify_against_command(
        str(broken), level="quick", checks=("grant expiry",), out=out, err=io.StringIO()
    )
    assert status == 1, out.getvalue()
    assert (
        "slices_in_grant 1, budget 1, backlog_pending true: expected true, answered false"
        in out.getvalue()
    )


def test_the_template_answers_bad_lines_with_errors(server: Path) -> None:
    lines = [
        b"not json",
        b"[1, 2]",
        b'{"id": 4, "decision": "no such thing", "inputs": {}}',
        b'{"id": 5, "decision": "backlog_admits", "inputs": {"backlog_len": -1, "budget": 3}}',
        b'{"id": 6, "decision": "backlog_admits", "inputs": ' + b"[" * 100 + b"]" * 100 + b"}",
        b'{"id": "\\ud83d\\ude00", "decision": "backlog_admits", '
        b'"inputs": {"backlog_len": 18446744073709551615, "budget": 1}}',
    ]
    answered = subprocess.run(
        [str(server)], check=False, input=b"\n".join(lines) + b"\n", capture_output=True, timeout=30
    )
    assert answered.returncode == 0
    assert answered.stdout.decode().splitlines() == [
        '{"id":null,"error":"the request is not a JSON line: unexpected text at byte 0"}',
        '{"id":null,"error":"the request is not a JSON object"}',
        '{"id":4,"error":"unknown decision: no such thing"}',
        '{"id":5,"error":"backlog_len is not a count"}',
        '{"id":null,"error":"the request is not a JSON line: nested too deeply"}',
        '{"id":"\U0001f600","answer":false}',
    ]
