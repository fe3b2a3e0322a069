"""vLLM's real scheduler with ``KernelScheduler``'s queues against the same scheduler
with vLLM's own queues: every scenario runs on both, and every step (what was
scheduled and in which order, what was admitted, preempted and finished, both
queues' order after the step) must be the same at the default settings; each
test also checks the behaviour itself (the order, the preemption, ...)."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracle.bench.vllm_step import Vllm
from tests.vllm_real.engine import (
    Driver,
    Setup,
    Spec,
    Step,
    admissions,
    both,
    kernel_driver,
)

pytest.importorskip("vllm")


def _arrivals(count: int, max_tokens: int) -> list[Spec]:
    return [Spec(f"r{k}", max_tokens=max_tokens, arrival_time=float(k)) for k in range(count)]


def test_fcfs_admits_in_arrival_order(v: Vllm, folder: Path) -> None:
    def scenario(driver: Driver) -> list[Step]:
        driver.add(*_arrivals(6, max_tokens=3))
        return driver.run_until_idle()

    native, kernel = both(v, folder, Setup(max_num_seqs=2), scenario)
    assert kernel == native
    assert admissions(kernel) == [f"r{k}" for k in range(6)]


PRIORITIES = (3, 0, 2, 0, 1, 3, 1, 2)


def test_priority_admits_the_lowest_priority_then_the_earliest(v: Vllm, folder: Path) -> None:
    specs = [
        Spec(f"r{k}", max_tokens=3, priority=p, arrival_time=float(k))
        for k, p in enumerate(PRIORITIES)
    ]

    def scenario(driver: Driver) -> list[Step]:
        driver.add(*specs)
        return driver.run_until_idle()

    native, kernel = both(v, folder, Setup(policy="priority", max_num_seqs=2), scenario)
    assert kernel == native
    expected = sorted(specs, key=lambda s: (s.priority, s.arrival_time))
    assert admissions(kernel) == [s.request_id for s in expected]


#: Three requests of 32 prompt tokens growing by 40 (2 blocks to 5 each), on 8
#: blocks of 16 tokens: the KV cache runs out, the scheduler preempts and re-admits.
PRESSURE = Setup(max_num_seqs=3, blocks=8)


@pytest.mark.parametrize("policy", ["fcfs", "priority"])
def test_preemption_under_kv_pressure_and_re_admission(v: Vllm, folder: Path, policy: str) -> None:
    specs = [
        Spec(f"r{k}", prompt=32, max_tokens=40, priority=p, arrival_time=float(k))
        for k, p in enumerate((2, 0, 1))
    ]

    def scenario(driver: Driver) -> list[Step]:
        driver.add(*specs)
        return driver.run_until_idle()

    native, kernel = both(v, folder, Setup(policy=policy, max_num_seqs=3, blocks=8), scenario)
    assert kernel == native
    preempted = [name for step in kernel for name in step.preempted]
    assert preempted, "the scenario must preempt"
    admitted = admissions(kernel)
    for name in preempted:
        assert admitted.count(name) >= 2, (name, admitted)  # admitted, preempted, re-admitted
    assert sorted(name for step in kernel for name in step.finished) == ["r0", "r1", "r2"]
    # the victim: FCFS preempts the last running one; priority the worst (r0, priority 2)
    assert preempted[0] == ("r2" if policy == "fcfs" else "r0")


def test_a_preempted_request_is_re_admitted_before_newer_ones_under_fcfs(
    v: Vllm, folder: Path
) -> None:
    def scenario(driver: Driver) -> list[Step]:
        driver.add(*(Spec(f"r{k}", prompt=32, max_tokens=40) for k in range(3)))
        steps = driver.run(12)
        driver.add(Spec("late", prompt=16, max_tokens=2))
        return steps + driver.run_until_idle()

    native, kernel = both(v, folder, PRESSURE, scenario)
    assert kernel == native
    [first] = [step for step in kernel if step.preempted][:1]
    victim = first.preempted[0]
    admitted = admissions(kernel)
    assert admitted.index("late") > [k for k, name in enumerate(admitted) if name == victim][1]


def test_a_preempted_request_never_overtakes_a_better_priority_under_priority(
    v: Vllm, folder: Path
) -> None:
    """vLLM's order (issue 17): a request preempted at priority 2 is re-admitted
    after a waiting one at priority 0, never before (no preemption inversion)."""

    def scenario(driver: Driver) -> list[Step]:
        driver.add(
            *(
                Spec(f"r{k}", prompt=32, max_tokens=40, priority=p, arrival_time=float(k))
                for k, p in enumerate((2, 1, 1))
            )
        )
        steps = driver.run(2)
        driver.add(Spec("urgent", prompt=16, max_tokens=4, priority=0, arrival_time=9.0))
        return steps + driver.run_until_idle()

    native, kernel = both(v, folder, Setup(policy="priority", max_num_seqs=3, blocks=8), scenario)
    assert kernel == native
    first = next(step for step in kernel if step.preempted)
    assert first.preempted == ("r0",)
    admitted = admissions(kernel)
    assert admitted.index("urgent") < len(admitted) - 1 - admitted[::-1].index("r0")


@pytest.mark.parametrize("policy", ["fcfs", "priority"])
def test_reset_prefix_cache_preempts_every_running_request_and_re_admits_them(
    v: Vllm, folder: Path, policy: str
) -> None:
    specs = [
        Spec(f"r{k}", prompt=32, max_tokens=8, first_token=5, priority=k % 2, arrival_time=k)
        for k in range(4)
    ]

    def scenario(driver: Driver) -> list[Step]:
        driver.add(*specs)
        steps = driver.run(3)
        scheduler = driver.scheduler
        assert len(scheduler.running) == 3
        assert scheduler.reset_prefix_cache(reset_running_requests=True)
        assert not scheduler.running
        waiting = tuple(request.request_id for request in scheduler.waiting)
        return [*steps, Step((), (), (), (), waiting, ()), *driver.run_until_idle()]

    setup = Setup(policy=policy, max_num_seqs=3, prefix_caching=True)
    native, kernel = both(v, folder, setup, scenario)
    assert kernel == native
    after_reset = kernel[3].waiting
    assert sorted(after_reset) == ["r0", "r1", "r2", "r3"]
    if policy == "fcfs":
        assert after_reset == ("r0", "r1", "r2", "r3")  # preempted in reverse, prepended
    assert kernel[4].admitted == after_reset[:3]


def test_aborts_while_waiting(v: Vllm, folder: Path) -> None:
    def scenario(driver: Driver) -> list[Step]:
        driver.add(*_arrivals(6, max_tokens=3))
        steps = [driver.step()]
        driver.abort("r2", "r4", "never-added")
        steps += driver.run(1)
        driver.abort("r5")
        return steps + driver.run_until_idle()

    native, kernel = both(v, folder, Setup(max_num_seqs=1), scenario)
    assert kernel == native
    assert admissions(kernel) == ["r0", "r1", "r3"]
    assert kernel[0].waiting == ("r1", "r2", "r3", "r4", "r5")
    assert kernel[1].waiting == ("r1", "r3", "r5")
    assert kernel[2].waiting == ("r1", "r3")


def test_an_abort_of_a_preempted_waiting_request(v: Vllm, folder: Path) -> None:
    def scenario(driver: Driver) -> list[Step]:
        driver.add(*(Spec(f"r{k}", prompt=32, max_tokens=40) for k in range(3)))
        steps: list[Step] = []
        while not any(step.preempted for step in steps):
            steps.append(driver.step())
        driver.abort(*steps[-1].preempted)
        return steps + driver.run_until_idle()

    native, kernel = both(v, folder, PRESSURE, scenario)
    assert kernel == native
    victim = next(step for step in kernel if step.preempted).preempted[0]
    assert victim not in [name for step in kernel for name in step.finished]


def _sessions(driver: Driver) -> list[Step]:
    """Two streaming sessions pause holding their KV blocks, so they wait in
    ``kv_holding_waiting`` (and keep two of three running slots); plain requests
    wait in ``waiting``. When the sessions' next chunks arrive (s2's first), the
    scheduler drains ``kv_holding_waiting`` before ``waiting``."""
    driver.add(
        Spec("s1", prompt=16, max_tokens=2, arrival_time=0.0, resumable=True),
        Spec("s2", prompt=16, max_tokens=2, arrival_time=1.0, resumable=True),
    )
    steps = driver.run(3)
    driver.add(*(Spec(f"w{k}", prompt=16, max_tokens=6, arrival_time=2.0 + k) for k in range(3)))
    steps += driver.run(1)
    driver.add(Spec("s2", prompt=8, max_tokens=2, arrival_time=6.0, resumable=True))
    driver.add(Spec("s1", prompt=8, max_tokens=2, arrival_time=7.0, resumable=True))
    steps += driver.run(3)
    return steps


@pytest.mark.parametrize("policy", ["fcfs", "priority"])
def test_the_second_queue_kv_holding_waiting(v: Vllm, folder: Path, policy: str) -> None:
    native, kernel = both(v, folder, Setup(policy=policy, max_num_seqs=3), _sessions)
    assert kernel == native
    paused = kernel[3]  # the sessions wait holding KV, w0 was admitted, w1 and w2 wait
    assert (paused.admitted, paused.kv_holding, paused.waiting) == (
        ("w0",),
        ("s1", "s2"),
        ("w1", "w2"),
    )
    assert kernel[4].admitted == ("s1", "s2")  # block holders first, in their queue's order
    assert kernel[4].waiting == ("w1", "w2")


def test_the_ascend_short_first_policy(v: Vllm, folder: Path) -> None:
    long_prompt, short_prompt = 64, 16
    specs = [
        Spec(
            f"{'long' if long else 'short'}{k}",
            prompt=long_prompt if long else short_prompt,
            max_tokens=2,
            arrival_time=float(k),
        )
        for k, long in enumerate((True, False, True, False, False, True))
    ]
    driver = kernel_driver(v, folder, Setup(max_num_seqs=1), "short-first:threshold=32")
    driver.add(*specs)
    steps = driver.run_until_idle()
    assert admissions(steps) == ["short1", "short3", "short4", "long0", "long2", "long5"]
    assert driver.scheduler.waiting.stats().admissions == {"short": 3, "long": 3}


def test_short_first_puts_a_preempted_request_first(v: Vllm, folder: Path) -> None:
    driver = kernel_driver(v, folder, PRESSURE, "short-first:threshold=32")
    driver.add(*(Spec(f"r{k}", prompt=32, max_tokens=40, arrival_time=k) for k in range(3)))
    steps: list[Step] = []
    while not any(step.preempted for step in steps):
        steps.append(driver.step())
    victim = steps[-1].preempted[0]
    driver.add(Spec("short", prompt=16, max_tokens=2, arrival_time=9.0))
    later = driver.run_until_idle()
    admitted = admissions(later)
    assert admitted.index(victim) < admitted.index("short")
    assert driver.scheduler.waiting.stats().admissions["resumed"] >= 1
