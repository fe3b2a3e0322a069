"""Every deliberate mutant of tests/mutants.py still applies: its original text
stands exactly once in its file (a mutant whose text is gone would break nothing
and check nothing)."""

from __future__ import annotations

import pytest

from tests.mutants import MUTANTS, ROOT, Mutant


@pytest.mark.parametrize("mutant", MUTANTS, ids=[mutant.name for mutant in MUTANTS])
def test_each_mutant_applies_to_the_code_as_it_is(mutant: Mutant) -> None:
    text = (ROOT / mutant.file).read_text(encoding="utf-8")
    assert text.count(mutant.original) == 1
    assert mutant.broken != mutant.original
