"""Fixtures of the tests against vLLM's real scheduler: vLLM's names and the tiny
model's folder, made once per session. Importing this file needs no vLLM (the
project's own suite collects tests/vllm_real and skips every module there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracle.bench.vllm_step import Vllm, model_folder


@pytest.fixture(scope="session")
def v() -> Vllm:
    pytest.importorskip("vllm")
    return Vllm()


@pytest.fixture(scope="session")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return model_folder(tmp_path_factory.mktemp("model"))
