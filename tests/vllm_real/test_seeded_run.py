"""Seeded random runs of vLLM's real scheduler, compared step by step: vLLM's own
queues against ``KernelScheduler``'s at the default settings (vLLM's semantics of
the configured policy), under FCFS and under priority.

Each step, the same random actions are applied to both schedulers: new requests
(prompts of 4 to 80 tokens, so chunked prefills; 1 to 24 output tokens;
priorities 0 to 3; distinct arrival times, so no two requests tie on vLLM's
priority keys), aborts of waiting or running requests, and now and then
``reset_prefix_cache(reset_running_requests=True)``; the KV cache is small, so
the scheduler preempts. Every step must schedule, admit, preempt and finish the
same requests in the same order, and leave both queues in the same order.
Two seeds run with async scheduling too (vLLM's ``AsyncScheduler`` against the
``KernelAsyncScheduler`` that ``KernelScheduler`` becomes then), stepped one
step at a time.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from oracle.bench.vllm_step import Vllm
from tests.vllm_real.engine import Driver, Setup, Spec, kernel_driver, native_driver

pytest.importorskip("vllm")

SEEDS = range(6)
#: Seeds also run with async scheduling (vLLM's AsyncScheduler and KernelAsyncScheduler).
ASYNC_SEEDS = range(2)
STEPS = 120


def _actions(rng: random.Random, serial: int, clock: float) -> tuple[list[Spec], int, float]:
    specs: list[Spec] = []
    for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
        clock += rng.uniform(0.001, 0.5)
        specs.append(
            Spec(
                f"q{serial}",
                prompt=rng.randint(4, 80),
                max_tokens=rng.randint(1, 24),
                priority=rng.randrange(4),
                arrival_time=clock,
                first_token=rng.choice((-1, 3)),  # some share a prefix
            )
        )
        serial += 1
    return specs, serial, clock


RUNS = [(seed, False) for seed in SEEDS] + [(seed, True) for seed in ASYNC_SEEDS]


@pytest.mark.parametrize("policy", ["fcfs", "priority"])
@pytest.mark.parametrize(("seed", "async_scheduling"), RUNS)
def test_a_seeded_run_agrees_with_vllms_own_queue_at_every_step(
    v: Vllm, folder: Path, policy: str, seed: int, async_scheduling: bool
) -> None:
    setup = Setup(
        policy=policy,
        max_num_seqs=4,
        max_num_batched_tokens=64,
        blocks=20,
        prefix_caching=True,
        async_scheduling=async_scheduling,  # AsyncScheduler against KernelAsyncScheduler
    )
    drivers: tuple[Driver, Driver] = (
        native_driver(v, folder, setup),
        kernel_driver(v, folder, setup),
    )
    native, kernel = drivers
    assert type(kernel.scheduler).__name__ == (
        "KernelAsyncScheduler" if async_scheduling else "KernelScheduler"
    )
    assert type(native.scheduler).__name__ == (
        "AsyncScheduler" if async_scheduling else "Scheduler"
    )
    rng = random.Random(f"vllm-real-{policy}-{seed}")
    serial, clock = 0, 0.0
    preempted = admitted = 0
    for step in range(STEPS):
        specs, serial, clock = _actions(rng, serial, clock)
        for driver in drivers:
            driver.add(*specs)
        roll = rng.random()
        if roll < 0.08 and native.scheduler.requests:
            victim = rng.choice(sorted(native.scheduler.requests))
            for driver in drivers:
                driver.abort(victim)
        elif roll < 0.1:
            resets = [d.scheduler.reset_prefix_cache(reset_running_requests=True) for d in drivers]
            assert resets[0] == resets[1]
        queues = [
            [
                tuple(r.request_id for r in q)
                for q in (d.scheduler.waiting, d.scheduler.kv_holding_waiting)
            ]
            for d in drivers
        ]
        assert queues[0] == queues[1], f"seed {seed}, before step {step}"
        native_step, kernel_step = native.step(), kernel.step()
        assert kernel_step == native_step, f"seed {seed}, step {step}"
        preempted += len(native_step.preempted)
        admitted += len(native_step.admitted)
    tail = native.run_until_idle(), kernel.run_until_idle()
    assert tail[1] == tail[0], f"seed {seed}, after the run"
    preempted += sum(len(step.preempted) for step in tail[0])
    admitted += sum(len(step.admitted) for step in tail[0])
    assert admitted >= serial // 2  # not a run that admits nothing
    assert preempted > 0  # every seed preempts (1 to 14 times at 120 steps)
