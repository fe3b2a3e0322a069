"""The kernel calls nothing that does I/O or runs code from text.

Two exceptions, by design. ``policy/adapters/regular_files.py`` opens the files
the project reads and writes (``os.open``: the one file rule, regular files
only). And ``policy/waiting/fast/compiled.py`` compiles key trees into Python
functions (``compile``, never ``exec`` or ``eval``). The source it compiles is
generated from a validated tree and never contains text from a
policy: attributes are read by position, stage names and non-finite numbers
are names bound in the function's globals, and the function gets no builtins
(tests/waiting/test_compiled.py checks the generated code against the tree
evaluator).

Its imports are checked by import-linter (tests/test_architecture.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

import policy
from policy.waiting.fast.compiled import generated_source
from policy.waiting.parse import parse_expression

KERNEL = Path(policy.__file__).parent
OPENS = {"open", "os.open", "os.fdopen"}
FORBIDDEN_CALLS = {"print", "input", "exec", "eval", "compile", "__import__", *OPENS}
#: Modules allowed to call ``compile`` (see the docstring).
COMPILES_KEYS = {"compiled.py"}
#: Modules allowed to open files: the one file rule (policy/adapters/regular_files.py),
#: which the policy file's reader uses.
OPENS_FILES = {"regular_files.py"}


def _kernel_modules() -> list[Path]:
    return sorted(KERNEL.rglob("*.py"))


def _calls(path: Path) -> list[tuple[int, str]]:
    """The line and the name of each call in ``path`` to a name or to ``module.name``
    (``os.open`` too: only the file rule may import os, and this keeps it to it)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name):
            found.append((node.lineno, node.func.id))
        elif isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
            found.append((node.lineno, f"{node.func.value.id}.{node.func.attr}"))
    return found


def test_kernel_modules_call_no_io() -> None:
    offenders = [
        f"{path.name}:{line}: {name}()"
        for path in _kernel_modules()
        for line, name in _calls(path)
        if name in FORBIDDEN_CALLS
        and not (name == "compile" and path.name in COMPILES_KEYS)
        and not (name in OPENS and path.name in OPENS_FILES)
    ]
    assert offenders == []


def test_only_the_file_rule_opens_files() -> None:
    opening = {path.name for path in _kernel_modules() for _, name in _calls(path) if name in OPENS}
    assert opening == OPENS_FILES


def test_the_check_finds_something_when_it_should() -> None:
    # The scan above must be able to fail: it sees the modules it claims to check.
    assert len(_kernel_modules()) >= 5
    assert any("is_true(" in path.read_text() for path in _kernel_modules())


def test_only_the_key_compiler_compiles() -> None:
    calls = {
        path.name
        for path in _kernel_modules()
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "compile"
    }
    assert calls == COMPILES_KEYS


def test_generated_key_code_holds_no_policy_text() -> None:
    key = parse_expression("budget_left(evil_stage) > secret_name ? 1 : 2", ["secret_name"])
    source = generated_source([key.unwrap()], {"secret_name": 1.0}, ["other"], "keys")
    assert "evil_stage" not in source
    assert "secret_name" not in source
