"""The kernel calls nothing that does I/O or runs code from text.

Its imports are checked by import-linter (tests/test_architecture.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

import policy

KERNEL = Path(policy.__file__).parent
FORBIDDEN_CALLS = {"print", "open", "input", "exec", "eval", "__import__"}


def _kernel_modules() -> list[Path]:
    return sorted(KERNEL.rglob("*.py"))


def test_kernel_modules_call_no_io() -> None:
    offenders = []
    for path in _kernel_modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in FORBIDDEN_CALLS
            ):
                offenders.append(f"{path.name}:{node.lineno}: {node.func.id}()")
    assert offenders == []


def test_the_check_finds_something_when_it_should() -> None:
    # The scan above must be able to fail: it sees the modules it claims to check.
    assert len(_kernel_modules()) >= 5
    assert any("is_true(" in path.read_text() for path in _kernel_modules())
