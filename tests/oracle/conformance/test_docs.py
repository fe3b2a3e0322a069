"""The examples of docs/conformance.md run as written: the pytest example passes, and
the foreign implementation (a standalone script) conforms and, broken, is caught."""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from oracle.conformance import (
    CommandImplementation,
    GrantOrderBounds,
    assert_conforms,
    check_grant_order,
    verify_against_command,
)

DOC = Path(__file__).resolve().parents[3] / "docs" / "conformance.md"


def example(name: str) -> str:
    """The code block that follows ``<!-- example: name -->`` in the document."""
    found = re.search(
        rf"<!-- example: {re.escape(name)} -->\n```python\n(.*?)\n```", DOC.read_text(), re.S
    )
    assert found is not None, f"docs/conformance.md has no example {name}"
    return found.group(1) + "\n"


def test_the_pytest_example_passes() -> None:
    namespace: dict[str, object] = {}
    code = compile(example("test_my_scheduler.py"), "test_my_scheduler.py", "exec")
    exec(code, namespace)  # the document's own example
    tests = [value for name, value in namespace.items() if name.startswith("test_")]
    assert len(tests) == 3
    for test in tests:
        assert callable(test)
        run: Callable[[], None] = test
        run()


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "grant_rules.py"
    path.write_text(example("grant_rules.py"))
    return path


def test_the_foreign_example_conforms(script: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    command = f"{sys.executable} {script}"
    status = verify_against_command(
        command, level="quick", checks=("grant expiry", "backlog cap"), out=out, err=err
    )
    assert (status, err.getvalue()) == (0, ""), out.getvalue()
    assert "(5 of 11 decisions answered)" in out.getvalue()
    with CommandImplementation(command) as implementation:
        assert_conforms(check_grant_order(implementation, bounds=GrantOrderBounds(2, 4)))


def test_the_broken_foreign_example_is_caught(script: Path) -> None:
    source = script.read_text()
    assert source.count("slices_in_grant >= budget") == 1
    script.write_text(source.replace("slices_in_grant >= budget", "slices_in_grant > budget"))
    out = io.StringIO()
    status = verify_against_command(
        f"{sys.executable} {script}",
        level="quick",
        checks=("grant expiry",),
        out=out,
        err=io.StringIO(),
    )
    assert status == 1
    assert (
        "slices_in_grant 1, budget 1, backlog_pending true: expected true, answered false"
        in out.getvalue()
    )
