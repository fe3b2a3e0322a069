"""Fixtures of the tests against SGLang's real objects (``./dev test-sglang``): SGLang's
names, imported once per session with its server arguments published (its
``calc_priority`` reads them). Importing this file needs no SGLang: the project's own
suite collects tests/sglang_real and skips every test there."""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

import pytest


@pytest.fixture(scope="session")
def sg() -> Any:
    """SGLang's ``Req``, ``SamplingParams``, ``SchedulePolicy``, ``PrefillAdder`` (with
    ``AddReqResult`` and a token allocator) and ``RadixCache``."""
    pytest.importorskip("sglang")
    server_args: Any = importlib.import_module("sglang.srt.server_args")
    server_args.set_global_server_args_for_scheduler(
        server_args.ServerArgs(model_path="dummy", device="cpu")
    )
    batch: Any = importlib.import_module("sglang.srt.managers.schedule_batch")
    sampling: Any = importlib.import_module("sglang.srt.sampling.sampling_params")
    policy: Any = importlib.import_module("sglang.srt.managers.schedule_policy")
    radix: Any = importlib.import_module("sglang.srt.mem_cache.radix_cache")
    allocator: Any = importlib.import_module("sglang.srt.mem_cache.allocator.token")
    return SimpleNamespace(
        Req=batch.Req,
        SamplingParams=sampling.SamplingParams,
        SchedulePolicy=policy.SchedulePolicy,
        PrefillAdder=policy.PrefillAdder,
        AddReqResult=policy.AddReqResult,
        TokenToKVPoolAllocator=allocator.TokenToKVPoolAllocator,
        float16=importlib.import_module("torch").float16,
        RadixCache=radix.RadixCache,
        version=importlib.import_module("sglang").__version__,
    )
