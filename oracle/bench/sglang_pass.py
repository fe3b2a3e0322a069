"""The cost of one SGLang prefill pass's ``calc_priority`` with the plugin's hook,
against SGLang's own method for the same order (issue 29, build point 5).

Run in an environment with SGLang (``.venv-sglang``, built by ``./dev test-sglang``)::

    PYTHONPATH=$PWD .venv-sglang/bin/python -m oracle.bench.sglang_pass

For each waiting count N (100, 1,000, 10,000) and each configuration
(SGLang's ``lof`` with priority scheduling; the same with ``fcfs``), a
``SchedulePolicy`` holds N real ``Req`` objects; each pass, :data:`TURNOVER`
requests leave (admitted) and as many arrive, as in a busy server, then
``calc_priority`` runs: SGLang's own, or the hook around it with the ready-made
``sglang`` (the same order) and ``priority-aging``. The collector stays on.
Reported: the median and mean of :data:`PASSES` timed passes, and the ratio to
SGLang's own. Nothing from SGLang is imported at import time; without SGLang
the module prints one line and returns 2.
"""

from __future__ import annotations

import importlib
import statistics
import sys
import time
from array import array
from collections.abc import Sequence
from typing import Any, Final

from policy.adapters.sglang import ENV_VAR, around_calc_priority, policy_choice

SIZES: Final = (100, 1_000, 10_000)
#: Requests admitted and arriving per pass.
TURNOVER: Final = 32
PASSES: Final = 200
WARMUP: Final = 20


def _sglang() -> Any:
    server_args: Any = importlib.import_module("sglang.srt.server_args")
    server_args.set_global_server_args_for_scheduler(
        server_args.ServerArgs(model_path="dummy", device="cpu")
    )
    return (
        importlib.import_module("sglang.srt.managers.schedule_batch").Req,
        importlib.import_module("sglang.srt.sampling.sampling_params").SamplingParams,
        importlib.import_module("sglang.srt.managers.schedule_policy").SchedulePolicy,
        importlib.import_module("sglang.srt.mem_cache.radix_cache").RadixCache,
    )


def run(n: int, configured: str, policy_name: str | None) -> list[int]:
    """Nanoseconds of each timed pass: SGLang's own (``policy_name`` None) or hooked."""
    req_class, sampling, schedule_policy_class, radix = _sglang()
    schedule_policy = schedule_policy_class(configured, radix.create_simulated(), False, True, True)
    choice = None if policy_name is None else policy_choice({ENV_VAR: policy_name})
    serial = 0
    processed = 0

    def fresh(count: int) -> list[Any]:
        nonlocal serial
        made = []
        for k in range(serial, serial + count):
            req = req_class(
                f"r{k}", "", array("q", [k % 97] * 8), sampling(max_new_tokens=8 + k % 64),
                priority=k % 5,
            )  # fmt: skip
            req.time_stats.wait_queue_entry_time = float(k)
            req.arrival_processed_tokens = processed
            made.append(req)
        serial += count
        return made

    waiting = fresh(n)
    method = schedule_policy_class.calc_priority
    timed: list[int] = []
    for step in range(WARMUP + PASSES):
        del waiting[:TURNOVER]
        waiting += fresh(TURNOVER)
        processed += 256
        started = time.perf_counter_ns()
        if choice is None:
            method(schedule_policy, waiting, None, processed_tokens=processed)
        else:
            around_calc_priority(
                choice, method, schedule_policy, waiting, None, processed_tokens=processed
            )
        if step >= WARMUP:
            timed.append(time.perf_counter_ns() - started)
    return timed


def main(argv: Sequence[str] | None = None) -> int:
    del argv
    try:
        importlib.import_module("sglang")
    except ImportError:
        print("bench sglang_pass: SGLang is not installed here (./dev test-sglang builds it)")
        return 2
    print("| SGLang policy | N | SGLang's own p50 / mean | hook: sglang | hook: priority-aging |")
    print("|---|---|---|---|---|")
    for configured in ("lof", "fcfs"):
        for n in SIZES:
            own = run(n, configured, None)
            base_p50, base_mean = statistics.median(own), statistics.fmean(own)
            cells = []
            for name in ("sglang", "priority-aging:age_tokens=4096"):
                hooked = run(n, configured, name)
                p50, mean = statistics.median(hooked), statistics.fmean(hooked)
                cells.append(
                    f"{p50 / 1e3:,.0f} / {mean / 1e3:,.0f} µs"
                    f" ({p50 / base_p50:.2f}x / {mean / base_mean:.2f}x)"
                )
            print(
                f"| {configured} + priority | {n:,} |"
                f" {base_p50 / 1e3:,.0f} / {base_mean / 1e3:,.0f} µs | {cells[0]} | {cells[1]} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
