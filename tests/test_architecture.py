"""The architecture contracts (import-linter, in pyproject.toml) hold and can fail.

``./dev test`` runs ``lint-imports`` on the tree. Here each contract is shown to
bite: a copy of the packages with one deliberate bad import breaks exactly
that contract, and the same copy without it keeps every contract.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

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
        "policy/waiting/policies.py",
        "import policy.adapters.vllm",
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
