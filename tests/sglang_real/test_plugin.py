"""The SGLang plugin on SGLang 0.5.23's real objects (``./dev test-sglang``).

- ``sglang`` leaves every list exactly as SGLang's own ``calc_priority`` leaves it,
  on real ``Req`` objects, for ``fcfs`` and ``lof`` with and without priority
  scheduling in both directions, over passes with arrivals, admissions, retracted
  requests appended again and tied entry times;
- two ranks (two ``SchedulePolicy`` objects) fed the same lists decide alike;
- SGLang's own admission (``PrefillAdder``) takes the list in the kernel's order and
  stops at the first request that does not fit;
- SGLang's own plugin loader loads the plugin from its entry point: with no policy
  named it hooks nothing, with one it orders the list, with a bad one the process
  ends with one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from array import array
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy.adapters.sglang import ENV_VAR, around_calc_priority, policy_choice

CONFIGS = [
    (name, priority, low_first)
    for name in ("fcfs", "lof")
    for priority in (False, True)
    for low_first in (False, True)
]

#: Seconds a child process may take (SGLang's imports take about 20 s here).
CHILD_TIMEOUT = 300


def make_req(sg: Any, rid: str, priority: int, max_new: int, entered: float) -> Any:
    req = sg.Req(
        rid, "", array("q", [1, 2, 3]), sg.SamplingParams(max_new_tokens=max_new), priority=priority
    )
    req.time_stats.wait_queue_entry_time = entered
    return req


def schedule_policy(sg: Any, name: str, priority: bool, low_first: bool) -> Any:
    return sg.SchedulePolicy(name, sg.RadixCache.create_simulated(), False, priority, low_first)


Step = tuple[list[bool], list[tuple[int, int, float]], list[int]]


@st.composite
def steps(draw: st.DrawFn) -> list[Step]:
    """Passes: which waiting requests stay (the rest are admitted), the arrivals
    (priority, max_new_tokens, entry-time step: 0 ties the previous one), and which
    admitted requests come back retracted."""
    made: list[Step] = []
    for _ in range(draw(st.integers(1, 5))):
        stays = draw(st.lists(st.booleans(), max_size=12))
        arrivals = draw(
            st.lists(
                st.tuples(
                    st.integers(-2, 2), st.sampled_from([8, 16, 32]), st.sampled_from([0.0, 1.0])
                ),
                max_size=6,
            )
        )
        back = draw(st.lists(st.integers(0, 20), max_size=2))
        made.append((stays, arrivals, back))
    return made


@pytest.mark.parametrize(("name", "priority", "low_first"), CONFIGS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=steps())
def test_sglang_is_sglang_s_own_order_on_real_requests(
    sg: Any, name: str, priority: bool, low_first: bool, plan: list[Step]
) -> None:
    own = schedule_policy(sg, name, priority, low_first)
    kernel = schedule_policy(sg, name, priority, low_first)
    choice = policy_choice({ENV_VAR: "sglang"})
    assert choice is not None
    theirs: list[Any] = []
    ours: list[Any] = []
    admitted: list[Any] = []
    clock, serial = 0.0, 0
    for stays, arrivals, back in plan:
        leaving = [req for req, kept in zip(theirs, stays, strict=False) if not kept]
        admitted += leaving
        theirs = [req for req in theirs if req not in leaving]
        ours = [req for req in ours if req not in leaving]
        fresh = []
        for prio, max_new, step in arrivals:
            clock += step
            fresh.append(make_req(sg, f"r{serial}", prio, max_new, clock))
            serial += 1
        for index in back:  # retracted, appended again with a fresh entry time
            if index < len(admitted):
                req = admitted.pop(index)
                req.retraction_count += 1
                req.is_retracted = True
                clock += 1.0
                req.time_stats.wait_queue_entry_time = clock
                fresh.append(req)
        theirs += fresh
        ours += fresh
        own.calc_priority(theirs, None, processed_tokens=0)
        around_calc_priority(
            choice, type(kernel).calc_priority, kernel, ours, None, processed_tokens=0
        )
        assert [r.rid for r in ours] == [r.rid for r in theirs]


def test_two_ranks_decide_alike(sg: Any) -> None:
    choice = policy_choice({ENV_VAR: "priority-aging:age_tokens=64"})
    assert choice is not None
    ranks = [schedule_policy(sg, "fcfs", True, True) for _ in range(2)]
    lists: list[list[Any]] = [[], []]
    for step in range(30):
        for rank, kept in enumerate(lists):
            # each rank builds its own Req objects from the same inputs, as TP ranks do
            kept.append(make_req(sg, f"r{step}", (step * 7) % 5, 16, float(step)))
            kept[-1].arrival_processed_tokens = step * 10
            if step % 3 == 2:
                kept.pop(0)
            around_calc_priority(
                choice, type(ranks[rank]).calc_priority, ranks[rank], kept, None,
                processed_tokens=step * 10,
            )  # fmt: skip
        assert [r.rid for r in lists[0]] == [r.rid for r in lists[1]]


def admitted(sg: Any, waiting: list[Any], tokens: int) -> list[str]:
    """SGLang's own admission of one prefill pass (the loop of its scheduler's
    ``_get_new_batch_prefill_raw``): ``PrefillAdder.add_one_req`` for each request
    in list order, stopping at the first that is not ``CONTINUE``, with a KV pool of
    ``tokens`` tokens."""
    pool = sg.TokenToKVPoolAllocator(
        size=tokens, dtype=sg.float16, device="cpu", kvcache=None, need_sort=False
    )
    cache = sg.RadixCache.create_simulated()
    adder = sg.PrefillAdder(
        page_size=1,
        tree_cache=cache,
        token_to_kv_pool_allocator=pool,
        running_batch=None,
        new_token_ratio=1.0,
        rem_input_tokens=10_000,
        rem_chunk_tokens=None,
    )
    for req in waiting:
        req.init_next_round_input(cache)  # as the scheduler does before each
        if adder.add_one_req(req, has_chunked_req=False, truncation_align_size=None) != (
            sg.AddReqResult.CONTINUE
        ):
            break
    return [req.rid for req in adder.can_run_list]


def test_sglang_s_admission_follows_the_kernel_s_order_and_stops_at_the_first_misfit(
    sg: Any,
) -> None:
    # a 64-token pool: "big" (60 prompt tokens) does not fit, "a" and "c" do. Under
    # priority-aging (low values first), big (priority 0) goes first: the pass admits
    # nothing, since only the selected request is tested for fit, and a and c wait.
    # With big at priority 2, a and c go first and are admitted; the pass stops at big.
    choice = policy_choice({ENV_VAR: "priority-aging:age_tokens=1000"})
    assert choice is not None
    for big_priority, order, taken in (
        (0, ["big", "a", "c"], []),
        (2, ["a", "c", "big"], ["a", "c"]),
    ):
        schedule = schedule_policy(sg, "fcfs", True, True)
        waiting = [
            sg.Req(
                name, "", array("q", [1] * size), sg.SamplingParams(max_new_tokens=4), priority=p
            )
            for name, size, p in (("a", 10, 1), ("big", 60, big_priority), ("c", 5, 1))
        ]
        around_calc_priority(
            choice, type(schedule).calc_priority, schedule, waiting, None, processed_tokens=0
        )
        assert [req.rid for req in waiting] == order
        assert admitted(sg, waiting, tokens=64) == taken


LOADER = """
import json, sys
from array import array
from sglang.srt.server_args import ServerArgs, set_global_server_args_for_scheduler
set_global_server_args_for_scheduler(ServerArgs(model_path="dummy", device="cpu"))
from sglang.srt.plugins import load_plugins
load_plugins()
from sglang.srt.managers.schedule_batch import Req
from sglang.srt.managers.schedule_policy import SchedulePolicy
from sglang.srt.mem_cache.radix_cache import RadixCache
from sglang.srt.sampling.sampling_params import SamplingParams
policy = SchedulePolicy("fcfs", RadixCache.create_simulated(), False, False, True)
waiting = [
    Req(name, "", array("q", [1]), SamplingParams(max_new_tokens=4), priority=p)
    for name, p in (("late", 5), ("early", 1))
]
policy.calc_priority(waiting, None, processed_tokens=0)
print(json.dumps({
    "hooked": hasattr(SchedulePolicy.calc_priority, "__wrapped__"),
    "order": [req.rid for req in waiting],
}))
"""


def load(value: str | None) -> subprocess.CompletedProcess[str]:
    environment = dict(os.environ, SGLANG_PLUGINS="policy_kernel")
    environment.pop(ENV_VAR, None)
    if value is not None:
        environment[ENV_VAR] = value
    return subprocess.run(
        [sys.executable, "-c", LOADER],
        capture_output=True,
        text=True,
        env=environment,
        timeout=CHILD_TIMEOUT,
        check=False,
    )


@pytest.mark.usefixtures("sg")  # skips without SGLang
def test_sglang_s_loader_loads_the_plugin() -> None:
    # no policy named: SGLang's method is not even wrapped, and keeps its order
    done = load(None)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "hooked": False,
        "order": ["late", "early"],
    }
    # a policy named: priority first (SGLang's fcfs without priority scheduling would not)
    done = load("priority-aging:age_tokens=100")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "hooked": True,
        "order": ["early", "late"],
    }


@pytest.mark.usefixtures("sg")
def test_a_bad_policy_ends_the_start_with_one_line() -> None:
    done = load("lpm-aging:age_tokens=0")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "policy-kernel: POLICY_KERNEL_QUEUE='lpm-aging:age_tokens=0':"
        " age_tokens must be a positive finite number, not 0"
    )
    assert "Traceback" not in done.stderr
