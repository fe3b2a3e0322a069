"""Hypothesis profiles: ``default`` is quick for local runs; ``ci`` (chosen when the
CI environment variable is set, or with HYPOTHESIS_PROFILE=ci) explores more;
``fuzz`` is the long run of tests/cli/test_fuzz.py (HYPOTHESIS_PROFILE=fuzz)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

import oracle.cli

settings.register_profile("default", max_examples=100, deadline=None)
settings.register_profile(
    "ci",
    max_examples=300,
    deadline=None,
    derandomize=True,  # a red CI run must be reproducible
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
# Mutation testing (docs/mutation.md): fixed examples, so a survivor is one every run agrees on.
settings.register_profile("mutation", derandomize=True, max_examples=50, deadline=None)
# The long fuzz run (tests/cli/test_fuzz.py's docstring): many examples, fresh seeds each run.
settings.register_profile(
    "fuzz",
    max_examples=20_000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "default")
)


@pytest.fixture
def kit_options(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """What ``policy-kernel verify --against-command`` hands the kit: the options of its
    call (and ``command``), with the kit itself replaced by a stand-in that exits 0."""
    seen: dict[str, object] = {}

    def stand_in(command: str, **options: object) -> int:
        seen.update(options, command=command)
        return 0

    monkeypatch.setattr(oracle.cli, "verify_against_command", stand_in)
    return seen
