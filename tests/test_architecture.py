"""The architecture contracts (import-linter, in pyproject.toml) hold and can fail.

``./dev test`` runs ``lint-imports`` on the tree. Here each contract is shown to
bite: a copy of the packages with one deliberate bad import breaks exactly
that contract, and the same copy without it keeps every contract.

No import rule sees names, so one more rule is checked here: no module of
``policy`` or ``oracle`` uses a private name (one leading underscore, not a
dunder) of another module of theirs, imported (``from m import _x``) or read
through the module (``m._x``). A helper two modules share is public, under a
name that says what it is. Tests may use private names.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

#: contract name -> (module to touch, the bad import appended to it)
VIOLATIONS = {
    "The kernel never imports the oracle": ("policy/identity.py", "import oracle.spec"),
    "The executable spec imports nothing from the kernel or the harness": (
        "oracle/spec/__init__.py",
        "from policy import Lane",
    ),
    "The kernel imports no I/O, clock, randomness or process modules": (
        "policy/rotation/lanes.py",
        "import time",
    ),
    "Only the oracle imports the adapters: the kernel stays below them": (
        "policy/waiting/select.py",
        "import policy.adapters.vllm",
    ),
    "The policy language and selection as defined import nothing from the fast layer": (
        "policy/waiting/reference.py",
        "import policy.waiting.fast.line",
    ),
}


def _lint(tmp_path: Path, violation: tuple[str, str] | None) -> str:
    for package in ("policy", "oracle"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    if violation is not None:
        module, line = violation
        with (tmp_path / module).open("a") as source:
            source.write(f"\n{line}  # deliberate violation\n")
    run = subprocess.run(
        [str(LINT_IMPORTS), "--config", "pyproject.toml", "--no-cache"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )
    return run.stdout + run.stderr


def test_the_copy_keeps_every_contract(tmp_path: Path) -> None:
    report = _lint(tmp_path, None)
    assert f"{len(VIOLATIONS)} kept, 0 broken" in report, report


@pytest.mark.parametrize("contract", sorted(VIOLATIONS))
def test_each_contract_fails_on_a_deliberate_bad_import(tmp_path: Path, contract: str) -> None:
    report = _lint(tmp_path, VIOLATIONS[contract])
    assert f"{contract} BROKEN" in report, report
    broken = [name for name in VIOLATIONS if f"{name} BROKEN" in report]
    # The purity rule is about the kernel's own imports; a kernel -> oracle
    # import also drags in the oracle's I/O, so that one may break two.
    assert contract in broken
    assert len(broken) == 1 or contract == "The kernel never imports the oracle"


# ----------------------------------------------------------------------------- private names

PACKAGES = ("policy", "oracle")

#: The private names still used across modules, each (using file, module, name): none.
#: Add nothing: a name another module needs is public in its own, under a name that
#: says what it is.
ALLOWED_PRIVATE_USES: frozenset[tuple[str, str, str]] = frozenset()


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_name(where: str) -> str:
    parts = Path(where).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(dotted: str) -> bool:
    where = ROOT.joinpath(*dotted.split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; None for anything but names and attributes."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def private_uses_in(where: str, text: str) -> list[tuple[str, int, str, str]]:
    """Every use in ``text`` (the module at ``where``, a path below ROOT) of another
    module's private name: (file, line, module, name)."""
    own = _module_name(where)
    in_package = own if where.endswith("/__init__.py") else own.rpartition(".")[0]
    tree = ast.parse(text, where)
    found: list[tuple[str, int, str, str]] = []
    modules: dict[str, str] = {}  # local name -> the module of ours it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES:
                    local = alias.asname or alias.name.split(".")[0]
                    modules[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = in_package.split(".")[: len(in_package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            if base.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                if _private(alias.name):
                    found.append((where, node.lineno, base, alias.name))
                elif _is_module(f"{base}.{alias.name}"):
                    modules[alias.asname or alias.name] = f"{base}.{alias.name}"
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _private(node.attr)):
            continue
        parts = _dotted(node.value)
        if parts is None or parts[0] not in modules:
            continue
        module = ".".join([modules[parts[0]], *parts[1:]])
        if module != own and _is_module(module):
            found.append((where, node.lineno, module, node.attr))
    return sorted(set(found))


@functools.cache
def private_uses() -> tuple[tuple[str, int, str, str], ...]:
    """:func:`private_uses_in` over every module of ``policy`` and ``oracle``."""
    return tuple(
        use
        for package in PACKAGES
        for source in sorted((ROOT / package).rglob("*.py"))
        for use in private_uses_in(
            source.relative_to(ROOT).as_posix(), source.read_text(encoding="utf-8")
        )
    )


def test_no_module_uses_another_modules_private_names() -> None:
    offenders = [
        f"{where}:{line}: {module}.{name}"
        for where, line, module, name in private_uses()
        if (where, module, name) not in ALLOWED_PRIVATE_USES
    ]
    assert not offenders, "private names used across modules:\n" + "\n".join(offenders)


#: The dependencies whose private attributes the kernel must not touch.
DEPENDENCIES = ("returns", "pyrsistent", "immutables")


def record_tricks_in(where: str, text: str) -> list[str]:
    """Every ``__class__`` assignment in ``text`` (the module at ``where``), and every
    private attribute of a dependency it imports or reads (``_inner_value``, ...)."""
    found = []
    tree = ast.parse(text, where)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        found += [
            f"{where}:{line}: __class__ assigned"
            for target in targets
            if isinstance(target, ast.Attribute) and target.attr == "__class__"
        ]
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in DEPENDENCIES:
            module_parts = (node.module or "").split(".")
            names = [alias.name for alias in node.names]
            found += [
                f"{where}:{line}: {node.module}.{name}"
                for name in [*module_parts[1:], *names]
                if _private(name)
            ]
        if isinstance(node, ast.Attribute) and node.attr == "_inner_value":
            found.append(f"{where}:{line}: _inner_value")
        if isinstance(node, ast.Constant) and node.value == "_inner_value":
            found.append(f"{where}:{line}: '_inner_value'")
    return found


def test_the_kernel_builds_records_in_the_open() -> None:
    """No record becomes another by ``__class__`` assignment, and no dependency is
    reached through its private attributes, anywhere in ``policy/``."""
    offenders = [
        found
        for source in sorted((ROOT / "policy").rglob("*.py"))
        for found in record_tricks_in(
            source.relative_to(ROOT).as_posix(), source.read_text(encoding="utf-8")
        )
    ]
    assert offenders == []


def test_the_record_trick_check_finds_each_trick() -> None:
    tricks = (
        "built.__class__ = Pair\n"
        "from returns.result import _Success\n"
        "from pyrsistent._pvector import pvector\n"
        "value = box._inner_value\n"
        "slot = vars(Success)['_inner_value']\n"
    )
    assert len(record_tricks_in("policy/example.py", tricks)) == 5


def test_every_allowed_private_use_still_occurs() -> None:
    """An entry whose use is gone is deleted from the allow-list (it only shrinks)."""
    used = {(where, module, name) for where, _, module, name in private_uses()}
    assert sorted(ALLOWED_PRIVATE_USES - used) == []


_PROBE = "policy/waiting/policies.py"  # the module the probes below append a line to


def _probe(line: str) -> set[tuple[str, str]]:
    """The private uses a line appended to _PROBE adds."""
    text = (ROOT / _PROBE).read_text(encoding="utf-8")
    before = private_uses_in(_PROBE, text)
    after = private_uses_in(_PROBE, f"{text}\n{line}\n")
    return {(module, name) for _, _, module, name in after} - {
        (module, name) for _, _, module, name in before
    }


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("from policy.text import _hidden", ("policy.text", "_hidden")),
        ("from policy import text\nx = text._hidden", ("policy.text", "_hidden")),
        ("from policy import text as t\nx = t._hidden", ("policy.text", "_hidden")),
        ("import policy.text\nx = policy.text._hidden", ("policy.text", "_hidden")),
        ("import policy.text as t\nx = t._hidden", ("policy.text", "_hidden")),
        ("from ..text import _hidden", ("policy.text", "_hidden")),
        ("from . import numbers\nx = numbers._hidden", ("policy.waiting.numbers", "_hidden")),
        (
            "from oracle.bench import waiting\nx = waiting._always",
            ("oracle.bench.waiting", "_always"),
        ),
    ],
)
def test_a_private_use_is_found(line: str, expected: tuple[str, str]) -> None:
    assert _probe(line) == {expected}


@pytest.mark.parametrize(
    "line",
    [
        "from policy.text import __all__",  # a dunder is not private
        "import policy.text\nx = policy.text.__doc__",
        "from os import _exit",  # not a module of ours
        "import policy.waiting.policies as me\nx = me._K",  # the module itself
        "from policy import text\nx = text.cut._private",  # not a module: cut is a function
    ],
)
def test_other_names_are_not_private_uses(line: str) -> None:
    assert _probe(line) == set()


# ----------------------------------------------------------------------------- import cycles


def import_cycles(imports: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or not (strongly
    connected components of more than one module, or a module importing itself).

    >>> import_cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}})
    [['a', 'b']]
    """
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(imports):
        if start in order:
            continue
        work = [(start, iter(sorted(imports[start])))]  # no recursion: any depth
        order[start] = low[start] = len(order)
        stack.append(start)
        on_stack.add(start)
        while work:
            module, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in imports:
                    continue
                if target not in order:
                    order[target] = low[target] = len(order)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(imports[target]))))
                elif target in on_stack:
                    low[module] = min(low[module], order[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == order[module]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == module:
                        break
                if len(group) > 1 or module in imports[module]:
                    found.append(sorted(group))
    return found


def test_the_kernel_has_no_import_cycle() -> None:
    import grimp  # noqa: PLC0415 - import-linter's own graph builder

    graph = grimp.build_graph("policy")
    imports = {
        module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules
    }
    assert import_cycles(imports) == []
    assert len(imports) > 30  # the graph holds the kernel's modules


def test_an_import_cycle_is_found() -> None:
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}}) == [
        ["a", "b", "c"],
        ["d"],
    ]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def _modules_loaded_by(statement: str) -> list[str]:
    """The modules of ``policy`` a fresh interpreter holds after ``statement``."""
    probe = (
        f"{statement}\nimport sys\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] == 'policy')))"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
    )
    return run.stdout.split()


def test_each_half_loads_without_the_other_and_the_face_loads_neither() -> None:
    # no test checked that "import policy.waiting" loads no rotation module (issue 28)
    waiting = _modules_loaded_by("import policy.waiting")
    rotation = _modules_loaded_by("import policy.rotation")
    face = _modules_loaded_by("import policy")
    assert "policy.waiting.queue" in waiting
    assert not [name for name in waiting if name.startswith("policy.rotation")]
    assert "policy.rotation.protocol" in rotation
    assert not [name for name in rotation if name.startswith("policy.waiting")]
    assert not [name for name in face if name.startswith(("policy.rotation", "policy.waiting"))]


def test_the_face_exports_both_halves_names_when_asked() -> None:
    # found by branch coverage: no test read the face's __all__ or a name it lacks
    import policy  # noqa: PLC0415 - the face itself, as a user imports it
    import policy.rotation  # noqa: PLC0415
    import policy.waiting  # noqa: PLC0415

    face: Any = policy  # its names come from __getattr__, which a type checker does not run
    names = set(face.__all__)
    assert {"RequestId", *policy.rotation.__all__, *policy.waiting.__all__} == names
    star: dict[str, object] = {}
    exec("from policy import *", star)
    assert star["WaitingQueue"] is policy.waiting.WaitingQueue
    assert star["take_next_grantee"] is policy.rotation.take_next_grantee
    with pytest.raises(AttributeError, match="module 'policy' has no attribute 'nothing'"):
        face.nothing  # noqa: B018


def _unnamed_modules(doc: str) -> list[str]:
    """The modules of ``policy`` and ``oracle`` that no row of ``doc``'s tables names: a
    row names a module by its path, or by its file name or stem relative to the
    folder of the row's first path (``policy/adapters/batches.py``, ``stats.py``;
    ``oracle/bench/`` ... ``vllm_loop.py``; ``policy/waiting/`` ... ``expr``)."""
    named: set[str] = set()
    for row in re.findall(r"^\| `.*$", doc, flags=re.MULTILINE):
        words = [
            word
            for quoted in re.findall(r"`([^`]+)`", row)
            for word in re.split(r"[\s,()]+", quoted)
            if word
        ]
        first = next((word for word in words if "/" in word), None)
        if first is None:
            continue
        folder = first if first.endswith("/") else first.rsplit("/", 1)[0] + "/"
        for word in words:
            if "/" in word:
                named.add(word)
            elif word.endswith(".py"):
                named.add(folder + word)
            elif word.isidentifier():
                named.add(f"{folder}{word}.py")
    return [
        relative
        for package in ("policy", "oracle")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path.name != "__init__.py"
        and (relative := path.relative_to(ROOT).as_posix()) not in named
    ]


def test_the_architecture_doc_names_every_module() -> None:
    # an outside review found modules the table had lost; a reader meets each here
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert _unnamed_modules(doc) == []
    assert _unnamed_modules(doc.replace("`settings.py`", "")) == ["policy/adapters/settings.py"]
    # a name counts only in its row's folder: the fast layer's `lanes` is not the check's
    row = doc.split("\n| `oracle/checks/fast.py`", 1)[1].split("\n", 1)[1]
    without = doc.split("\n| `oracle/checks/fast.py`", 1)[0] + "\n" + row
    assert "oracle/checks/lanes.py" in _unnamed_modules(without)
