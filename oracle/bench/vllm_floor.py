"""The floor under the serving loop's targets: what any queue with the drop-in's
interface costs in vLLM's loop, before the kernel does anything (a diagnosis,
not a gate).

The drop-in (:mod:`policy.adapters.vllm`) pays for two things a user does not
get from vLLM's own queue: its interface (a Python object in front of every
call, a lock around each, a map of the waiting requests by id, so that a
request can be found, refused as a duplicate and let go of) and the kernel's
work (an immutable version per batch, the policy's keys). :class:`FloorQueue`
has the interface and none of the kernel: vLLM's own queue for the order,
behind a lock and a dict by id. The serving loop run with it
(:mod:`oracle.bench.vllm_loop`, everything else alike: collector on after
``freeze_gc_heap()``, arrivals every step, the whole step timed) says how much
of the drop-in's ratio any such wrapper pays.

A *round* runs vLLM's own queue, the floor and the drop-in one after the other,
each in a fresh process; the rounds repeat. A round's ratios (floor / native,
drop-in / native) compare runs a minute apart, so a change of the machine's
speed between rounds cancels out of them; the report gives each ratio's median
over the rounds (the estimate) and its range (the noise)::

    VLLM_TARGET_DEVICE=cpu .venv-vllm/bin/python -m oracle.bench.vllm_floor --rounds 5

It imports nothing from vLLM at import time, and without vLLM prints one line
and exits 2.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, TextIO

from oracle.bench import vllm_loop
from oracle.bench.vllm_loop import (
    EXIT_NO_VLLM,
    EXIT_RUN_FAILED,
    POLICIES,
    QUICK_SIZES,
    WARMUP,
    Plan,
    RunFailed,
    answer_of,
    percentile,
)
from oracle.bench.vllm_step import refusal, vllm_missing
from oracle.options import positive

#: The three queues of a round, in the order a round runs them.
VARIANTS: Final = ("native", "floor", "drop-in")
#: Rounds, and timed steps per run, by default.
ROUNDS: Final = 5
STEPS: Final = 1_000
#: The statistics of a run's steps the report compares.
STATISTICS: Final = ("p50", "mean", "p99")


class FloorQueue:
    """vLLM's own queue ``inner`` behind what the drop-in's interface needs and
    nothing more: a lock around every call and the waiting requests in a dict by
    id (a request is let go of as it leaves, as the drop-in does).

    >>> from collections import deque
    >>> from types import SimpleNamespace as Req
    >>> class Fifo(deque):  # a stand-in for vLLM's FCFSRequestQueue
    ...     add_request, pop_request = deque.append, deque.popleft
    ...     def peek_request(self): return self[0]
    >>> queue = FloorQueue(Fifo())
    >>> queue.add_request(Req(request_id="a")); queue.add_request(Req(request_id="b"))
    >>> queue.peek_request().request_id, queue.pop_request().request_id, len(queue)
    ('a', 'a', 1)
    >>> Req(request_id="b") in queue, Req(request_id="a") in queue
    (True, False)
    """

    __slots__ = ("_inner", "_lock", "_waiting")

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._waiting: dict[str, Any] = {}

    def add_request(self, request: Any) -> None:
        identity = request.request_id
        with self._lock:
            if identity in self._waiting:
                raise ValueError(f"request {identity!r} is already waiting")
            self._waiting[identity] = request
            self._inner.add_request(request)

    def pop_request(self) -> Any:
        with self._lock:
            request = self._inner.pop_request()
            del self._waiting[request.request_id]
            return request

    def peek_request(self) -> Any:
        with self._lock:
            return self._inner.peek_request()

    def prepend_request(self, request: Any) -> None:
        with self._lock:
            self._waiting[request.request_id] = request
            self._inner.prepend_request(request)

    def prepend_requests(self, requests: Iterable[Any]) -> None:
        for request in list(requests):
            self.prepend_request(request)

    def remove_request(self, request: Any) -> None:
        self.remove_requests((request,))

    def remove_requests(self, requests: Iterable[Any]) -> None:
        with self._lock:
            gone = [r for r in requests if self._waiting.pop(r.request_id, None) is not None]
            if gone:
                self._inner.remove_requests(gone)

    def __bool__(self) -> bool:
        return bool(self._waiting)

    def __len__(self) -> int:
        return len(self._waiting)

    def __contains__(self, request: object) -> bool:
        return getattr(request, "request_id", None) in self._waiting

    def __iter__(self) -> Iterator[Any]:
        with self._lock:
            return iter(list(self._inner))


def install_floor(scheduler: Any) -> None:
    """A :class:`FloorQueue` over a new queue of vLLM's own kind on each queue the
    scheduler built from vLLM's factory (``waiting``, ``kv_holding_waiting``)."""
    for name in ("waiting", "kv_holding_waiting"):
        current = getattr(scheduler, name, None)
        if current is not None:
            setattr(scheduler, name, FloorQueue(type(current)()))


@dataclass(frozen=True, slots=True)
class Round:
    """One round's runs of one configuration: each variant's p50, mean and p99 step
    (nanoseconds)."""

    policy: str
    n: int
    steps: dict[str, dict[str, float]]

    def ratio(self, variant: str, statistic: str) -> float:
        """``variant``'s ``statistic`` over vLLM's own queue's, in this round."""
        return self.steps[variant][statistic] / self.steps["native"][statistic]


def summary(steps: Sequence[int]) -> dict[str, float]:
    """A run's p50, mean and p99 step.

    >>> summary([1, 2, 3, 4])
    {'p50': 2.5, 'mean': 2.5, 'p99': 3.97}
    """
    return {
        "p50": percentile(steps, 50),
        "mean": sum(steps) / len(steps),
        "p99": round(percentile(steps, 99), 6),
    }


def report(rounds: Sequence[Round]) -> str:
    """Per configuration and statistic: each variant's median ratio to vLLM's own
    queue over the rounds, and its range.

    >>> one = Round("fcfs", 1000, {"native": {"p50": 10.0, "mean": 10.0, "p99": 20.0},
    ...     "floor": {"p50": 10.5, "mean": 11.0, "p99": 20.0},
    ...     "drop-in": {"p50": 12.0, "mean": 12.0, "p99": 24.0}})
    >>> print(report([one, one]))  # doctest: +NORMALIZE_WHITESPACE
    policy         N stat  floor/native (range)       drop-in/native (range)     rounds
    fcfs       1,000 p50   1.05x (1.05-1.05)          1.20x (1.20-1.20)               2
    fcfs       1,000 mean  1.10x (1.10-1.10)          1.20x (1.20-1.20)               2
    fcfs       1,000 p99   1.00x (1.00-1.00)          1.20x (1.20-1.20)               2
    """
    lines = [
        f"{'policy':<8} {'N':>7} {'stat':<5} {'floor/native (range)':<26}"
        f" {'drop-in/native (range)':<26} rounds"
    ]
    configurations = dict.fromkeys((r.policy, r.n) for r in rounds)
    for policy_name, n in configurations:
        mine = [r for r in rounds if (r.policy, r.n) == (policy_name, n)]
        for statistic in STATISTICS:
            cells = []
            for variant in VARIANTS[1:]:
                ratios = [r.ratio(variant, statistic) for r in mine]
                cells.append(
                    f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"
                )
            lines.append(
                f"{policy_name:<8} {n:>7,} {statistic:<5} {cells[0]:<26} {cells[1]:<26}"
                f" {len(mine):>6}"
            )
    return "\n".join(lines)


def child_command(variant: str, policy_name: str, n: int, steps: int) -> list[str]:
    """The command line of one run."""
    return [
        sys.executable, "-m", "oracle.bench.vllm_floor", "--child", variant,
        "--policy", policy_name, "--n", str(n), "--steps", str(steps),
    ]  # fmt: skip


def spawn(variant: str, policy_name: str, n: int, steps: int) -> dict[str, float]:
    """One run in a fresh process: its p50, mean and p99 step."""
    made: dict[str, float] = answer_of(
        child_command(variant, policy_name, n, steps), f"{variant} run of {policy_name} N={n:,}"
    )
    return made


def measure(rounds: int, sizes: Sequence[int], steps: int, progress: TextIO | None) -> list[Round]:
    """``rounds`` rounds of every configuration, each round's variants one after the
    other."""
    made: list[Round] = []
    for number in range(rounds):
        for n in sizes:
            for policy_name in POLICIES:
                runs = {v: spawn(v, policy_name, n, steps) for v in VARIANTS}
                made.append(Round(policy_name, n, runs))
                if progress is not None:
                    progress.write(
                        f"vllm_floor round {number + 1}/{rounds} {policy_name} N={n:,}: p50 "
                        + ", ".join(f"{v} {runs[v]['p50'] / 1e6:.2f} ms" for v in VARIANTS)
                        + "\n"
                    )
                    progress.flush()
    return made


def run_variant(variant: str, policy_name: str, n: int, steps: int) -> dict[str, float]:
    """One run of ``variant`` in this process (a fresh one): the serving loop of
    :mod:`oracle.bench.vllm_loop`, with no probe pass."""
    plan = Plan((n,), steps, 1, 0, WARMUP)
    if variant == "floor":
        result = vllm_loop.run_child("native", policy_name, n, 0, plan, then=install_floor)
    else:
        result = vllm_loop.run_child(variant, policy_name, n, 0, plan)
    return summary(result.step_ns)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m oracle.bench.vllm_floor [--rounds R] [--steps S] [--sizes N ...]``."""
    parser = argparse.ArgumentParser(prog="python -m oracle.bench.vllm_floor")
    parser.add_argument("--rounds", type=positive, default=ROUNDS, help="rounds (default 5)")
    parser.add_argument("--steps", type=positive, default=STEPS, help="timed steps a run")
    parser.add_argument(
        "--sizes", type=positive, nargs="+", default=list(QUICK_SIZES), help="waiting counts"
    )
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--policy", choices=POLICIES, default="fcfs", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=positive, default=QUICK_SIZES[0], help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    reason = vllm_missing()
    if reason is not None:
        sys.stderr.write(refusal(reason) + "\n")
        return EXIT_NO_VLLM
    if arguments.child is not None:
        made = run_variant(arguments.child, arguments.policy, arguments.n, arguments.steps)
        sys.stdout.write(json.dumps(made) + "\n")
        return 0
    try:
        rounds = measure(arguments.rounds, arguments.sizes, arguments.steps, sys.stderr)
    except (RunFailed, subprocess.TimeoutExpired) as failed:
        sys.stderr.write(f"vllm_floor: a run failed: {failed}\n")
        return EXIT_RUN_FAILED
    sys.stdout.write(report(rounds) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
