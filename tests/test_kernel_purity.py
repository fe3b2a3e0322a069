"""The kernel imports nothing that does I/O or reads hidden inputs."""

from __future__ import annotations

import ast
from pathlib import Path

import policy

KERNEL = Path(policy.__file__).parent
FORBIDDEN_MODULES = {
    "asyncio", "datetime", "io", "logging", "os", "pathlib", "random", "secrets",
    "shutil", "socket", "subprocess", "sys", "tempfile", "threading", "time", "uuid",
}  # fmt: skip
FORBIDDEN_CALLS = {"print", "open", "input", "exec", "eval", "__import__"}


def _kernel_modules() -> list[Path]:
    return sorted(KERNEL.rglob("*.py"))


def test_kernel_modules_import_no_io() -> None:
    offenders = []
    for path in _kernel_modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [
                f"{path.name}: import {name}"
                for name in names
                if name.split(".")[0] in FORBIDDEN_MODULES
            ]
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
    assert any("import re" in path.read_text() for path in _kernel_modules())
