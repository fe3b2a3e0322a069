"""The serving-loop benchmarks' runs on vLLM's real scheduler, briefly (nothing
timed is judged): each side and the floor (oracle/bench/vllm_floor.py) admit the
same requests in the same order, and the floor's queue is the one the run used."""

from __future__ import annotations

from typing import Any

import pytest

from oracle.bench import vllm_loop
from oracle.bench.vllm_floor import FloorQueue, install_floor
from oracle.bench.vllm_loop import Plan

pytest.importorskip("vllm")

#: A short run: 300 waiting, 2 warm-up and 5 timed steps.
SHORT = Plan(sizes=(300,), steps=5, runs=1, probe_steps=0, warmup=2)


@pytest.mark.parametrize("policy_name", ["fcfs", "priority"])
def test_the_floor_and_the_drop_in_admit_as_vllms_own_queue(policy_name: str) -> None:
    used: list[type] = []

    def floor(scheduler: Any) -> None:
        install_floor(scheduler)
        used.append(type(scheduler.waiting))

    runs = [
        vllm_loop.run_child("native", policy_name, 300, 0, SHORT, probe=False),
        vllm_loop.run_child("native", policy_name, 300, 0, SHORT, prepare=floor, probe=False),
        vllm_loop.run_child("drop-in", policy_name, 300, 0, SHORT, probe=False),
    ]
    assert used == [FloorQueue]
    assert len({run.admissions for run in runs}) == 1
    assert [len(run.step_ns) for run in runs] == [5, 5, 5]
    assert runs[0].calls == {}  # no probe pass: nothing counted
