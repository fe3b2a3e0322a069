"""The examples in docs/adapters.md run, and docs/waiting.md no longer calls
``static_priority()`` vLLM's priority queue."""

from __future__ import annotations

import doctest
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_adapter_docs_examples_run() -> None:
    result = doctest.testfile(
        str(DOCS / "adapters.md"), module_relative=False, optionflags=doctest.ELLIPSIS
    )
    assert result.attempted > 0
    assert result.failed == 0


def test_waiting_md_names_the_policy_that_matches_vllm() -> None:
    text = " ".join((DOCS / "waiting.md").read_text().split())
    assert "This is vLLM's priority queue." not in text
    assert "`vllm_priority()`" in text
