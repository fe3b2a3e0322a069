"""``policy.adapters.vllm_scheduler.KernelScheduler`` as vLLM builds it from ``scheduler_cls``:
a subclass of vLLM's ``Scheduler`` whose factory-built queues (``waiting`` and
``kv_holding_waiting``) are the kernel's, chosen by ``POLICY_KERNEL_QUEUE``,
logged, and refused at start-up in one line when the policy is bad."""

from __future__ import annotations

import json
import logging
import pickle
from dataclasses import replace
from pathlib import Path

import pytest

from oracle.bench.vllm_step import Vllm
from policy.adapters import vllm_scheduler as adapter
from policy.adapters.vllm import WaitingRequestQueue
from policy.adapters.vllm_scheduler import PolicyRefused
from policy.waiting import selection_path
from tests.vllm_real.engine import KERNEL_SCHEDULER, Setup, build, kernel_driver, queue_env

pytest.importorskip("vllm")


@pytest.mark.parametrize(("policy", "path"), [("fcfs", "fifo"), ("priority", "static")])
def test_vllm_builds_it_from_the_class_path_with_kernel_queues(
    v: Vllm, folder: Path, policy: str, path: str
) -> None:
    scheduler = kernel_driver(v, folder, Setup(policy=policy)).scheduler
    assert type(scheduler) is adapter.KernelScheduler
    assert isinstance(scheduler, v.Scheduler)
    assert type(scheduler).__mro__[1] is v.Scheduler
    for queue in (scheduler.waiting, scheduler.kv_holding_waiting):
        assert isinstance(queue, WaitingRequestQueue)
        assert selection_path(queue.policy) == path
    assert scheduler.waiting is not scheduler.kv_holding_waiting
    assert isinstance(scheduler.deferred_waiting, set)  # not a queue: vLLM's own


def test_the_class_pickles_by_its_public_name() -> None:
    made = adapter.KernelScheduler
    assert made.__module__ == "policy.adapters.vllm_scheduler"
    assert made.__qualname__ == "KernelScheduler"
    assert pickle.loads(pickle.dumps(made)) is made


@pytest.mark.parametrize("name", ["KernelScheduler", "KernelAsyncScheduler"])
def test_with_async_scheduling_it_is_vllms_async_scheduler_with_kernel_queues(
    v: Vllm, folder: Path, name: str
) -> None:
    setup = Setup(scheduler_cls=f"policy.adapters.vllm_scheduler.{name}", async_scheduling=True)
    with queue_env("short-first"):
        scheduler = build(v, folder, setup)
    made = adapter.KernelAsyncScheduler
    assert type(scheduler) is made
    assert isinstance(scheduler, adapter.KernelScheduler)
    async_scheduler = type(scheduler).__mro__[2]
    assert async_scheduler.__name__ == "AsyncScheduler"
    assert hasattr(scheduler, "decode_stagger")  # AsyncScheduler's __init__ ran
    assert selection_path(scheduler.waiting.policy) == "lanes"
    assert selection_path(scheduler.kv_holding_waiting.policy) == "lanes"
    assert pickle.loads(pickle.dumps(made)) is made


def test_without_async_scheduling_it_is_vllms_scheduler(v: Vllm, folder: Path) -> None:
    setup = Setup(scheduler_cls=KERNEL_SCHEDULER, async_scheduling=False)
    assert type(build(v, folder, setup)) is adapter.KernelScheduler


def test_it_logs_the_policy_and_the_selection_path(v: Vllm, folder: Path) -> None:
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    logger = logging.getLogger("vllm.policy_kernel")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)  # vLLM's own default; these tests run vLLM at WARNING
    try:
        kernel_driver(v, folder, Setup(), "short-first:threshold=64")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    [record] = [r for r in records if "policy-kernel queues" in r.getMessage()]
    message = record.getMessage()
    assert record.levelno == logging.INFO
    for needed in (
        "'short-first:threshold=64'",
        "selection path lanes",
        "waiting, kv_holding_waiting",
    ):
        assert needed in message, message


def test_vllms_additional_config_names_the_policy(v: Vllm, folder: Path) -> None:
    setup = Setup(config_queue="short-first:threshold=64")
    scheduler = kernel_driver(v, folder, setup).scheduler
    assert selection_path(scheduler.waiting.policy) == "lanes"
    assert scheduler.kernel_queue_choice.source.endswith(
        "(additional_config['policy_kernel_queue'])"
    )
    with pytest.raises(PolicyRefused, match=r"^additional_config\['policy_kernel_queue'\]='x'"):
        kernel_driver(v, folder, replace(setup, config_queue="x"))


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("fifo", "unknown policy name 'fifo'"),
        ("short-first:threshold=-1", "threshold must be a non-negative int"),
        ("short-first:limit=3", "short-first takes threshold, long_max_wait_ms"),
        ("/nonexistent/policy.json", "cannot read the policy file"),
    ],
)
def test_a_bad_policy_is_refused_at_start_up_in_one_line(
    v: Vllm, folder: Path, value: str, reason: str
) -> None:
    with queue_env(value), pytest.raises(PolicyRefused) as refused:
        build(v, folder, replace(Setup(), scheduler_cls=KERNEL_SCHEDULER))
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"POLICY_KERNEL_QUEUE={value!r}: ")
    assert reason in message


def test_an_invalid_policy_file_is_refused_with_the_kernels_reason(
    v: Vllm, folder: Path, tmp_path: Path
) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"keys": ["prmpt"]}))
    with queue_env(str(path)), pytest.raises(PolicyRefused) as refused:
        build(v, folder, replace(Setup(), scheduler_cls=KERNEL_SCHEDULER))
    message = str(refused.value)
    assert "\n" not in message
    assert "the policy file holds no valid policy: keys[0]: unknown name 'prmpt'" in message


def test_a_policy_file_orders_both_queues(v: Vllm, folder: Path, tmp_path: Path) -> None:
    path = tmp_path / "longest-first.json"
    path.write_text(json.dumps({"attributes": {"prompt": "visible"}, "keys": ["-prompt"]}))
    scheduler = kernel_driver(v, folder, Setup(), str(path)).scheduler
    assert selection_path(scheduler.waiting.policy) == "static"
    assert selection_path(scheduler.kv_holding_waiting.policy) == "static"
