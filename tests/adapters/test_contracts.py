"""The kernel-pure exception for the adapter is exactly as narrow as pyproject.toml says.

tests/test_architecture.py shows each contract failing once (a kernel module
importing the adapter breaks ``adapters-above-kernel``); here, the exception
itself: the adapter may import ``time``, ``logging`` and ``threading`` (its lock)
and nothing else the kernel may not; KernelScheduler's module
(``policy.adapters.vllm_scheduler``) ``os`` and ``logging``, and nothing else.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_architecture import _lint

PURE = "The kernel imports no I/O, clock, randomness or process modules"
ABOVE = "Only the oracle imports the adapters: the kernel stays below them"


@pytest.mark.parametrize("module", ["os", "random", "subprocess", "asyncio"])
def test_the_adapter_may_not_import_other_impure_modules(tmp_path: Path, module: str) -> None:
    report = _lint(tmp_path, ("policy/adapters/vllm.py", f"import {module}"))
    assert f"{PURE} BROKEN" in report, report
    assert f"{ABOVE} KEPT" in report, report


def test_the_adapters_package_may_not_import_the_clock(tmp_path: Path) -> None:
    report = _lint(tmp_path, ("policy/adapters/__init__.py", "import time"))
    assert f"{PURE} BROKEN" in report, report


@pytest.mark.parametrize("module", ["time", "random", "pathlib", "subprocess"])
def test_the_scheduler_module_may_not_import_other_impure_modules(
    tmp_path: Path, module: str
) -> None:
    report = _lint(tmp_path, ("policy/adapters/vllm_scheduler.py", f"import {module}"))
    assert f"{PURE} BROKEN" in report, report
    assert f"{ABOVE} KEPT" in report, report


def test_no_other_kernel_module_may_import_threading(tmp_path: Path) -> None:
    report = _lint(tmp_path, ("policy/waiting/queue.py", "import threading"))
    assert f"{PURE} BROKEN" in report, report
