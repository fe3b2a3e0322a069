"""The floor under the serving loop's targets: what any queue with the drop-in's
interface costs in vLLM's loop, before the kernel does anything (a diagnosis,
not a gate).

The drop-in (:mod:`policy.adapters.vllm`) pays for two things a user does not
get from vLLM's own queue: its interface (a Python object in front of every
call, a lock around each, a map of the waiting requests by id, so that a
request can be found, refused as a duplicate and let go of) and the kernel's
work (an immutable version per batch, the policy's keys). :class:`FloorQueue`
has the interface and none of the kernel: vLLM's own queue for the order,
behind a lock (on the calls that change or walk the queue, as the drop-in
takes it) and a dict by id. The serving loop run with it
(:mod:`oracle.bench.vllm_loop`, everything else alike: collector on after
``freeze_gc_heap()``, arrivals every step, the whole step timed) says how much
of the drop-in's ratio any such wrapper pays.

A *round* runs vLLM's own queue, the floor and the drop-in one after the other,
each in a fresh process, the order turned by one each round (so no variant
always runs last); the rounds repeat. A round's ratios (floor / native,
drop-in / native, drop-in / floor) compare runs a minute apart, so a change of
the machine's speed between rounds cancels out of them; the report gives each
ratio's median over the rounds (the estimate) and its range (the noise). All
three must admit the same requests in the same order at every step (a digest),
or the round is refused::

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
from dataclasses import asdict, dataclass
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
    RunResult,
    answer_of,
    summarize,
)
from oracle.bench.vllm_step import refusal, vllm_missing
from oracle.options import positive
from policy.adapters.vllm import FACTORY_QUEUES

#: The three queues of a round, in the order a round runs them.
VARIANTS: Final = ("native", "floor", "drop-in")
#: Rounds, and timed steps per run, by default.
ROUNDS: Final = 5
STEPS: Final = 1_000
#: The statistics of a run's steps the report compares.
STATISTICS: Final = ("p50", "mean", "p99")


class FloorQueue:
    """vLLM's own queue ``inner`` behind what the drop-in's interface needs and
    nothing more: the waiting requests in a dict by id (a duplicate is refused, a
    request is removed by id and let go of as it leaves, as in the drop-in), and a
    lock around the calls that change or walk the queue (``bool``, ``len`` and
    ``in`` read the dict without it, as the drop-in's do).

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
        self.prepend_requests((request,))

    def prepend_requests(self, requests: Iterable[Any]) -> None:
        """All or nothing, as vLLM's ``prepend_requests`` orders them (``requests``
        read first, outside the lock: it may be this queue)."""
        batch = list(requests)
        with self._lock:
            identities = [request.request_id for request in batch]
            if len(set(identities)) < len(batch) or any(i in self._waiting for i in identities):
                raise ValueError("a prepended request is already waiting")
            self._waiting.update(zip(identities, batch, strict=True))
            self._inner.prepend_requests(batch)

    def remove_request(self, request: Any) -> None:
        if request.request_id not in self._waiting:
            raise ValueError(f"request {request.request_id!r} is not waiting")
        self.remove_requests((request,))

    def remove_requests(self, requests: Iterable[Any]) -> None:
        """The waiting ones of ``requests``, by id (``requests`` read first, outside
        the lock: it may be this queue)."""
        batch = list(requests)
        with self._lock:
            gone = [
                waiting
                for request in batch
                if (waiting := self._waiting.pop(request.request_id, None)) is not None
            ]
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
    """A :class:`FloorQueue` over each queue the scheduler built from vLLM's factory
    (:data:`~policy.adapters.vllm.FACTORY_QUEUES` it has), which must be empty."""
    for name in FACTORY_QUEUES:
        current = getattr(scheduler, name, None)
        if current is None:
            continue  # a scheduler before vLLM 0.33: no second queue
        if current:
            raise RuntimeError(f"{name} holds requests: install the floor before any")
        setattr(scheduler, name, FloorQueue(current))
    if type(getattr(scheduler, FACTORY_QUEUES[0], None)) is not FloorQueue:
        raise RuntimeError(f"the scheduler has no {FACTORY_QUEUES[0]} queue to put the floor on")


@dataclass(frozen=True, slots=True)
class Run:
    """One run: its p50, mean and p99 step (nanoseconds) and the digest of every
    step's admissions."""

    p50: float
    mean: float
    p99: float
    admissions: str

    @classmethod
    def of(cls, result: RunResult) -> Run:
        """The run ``result`` as the report reads it, its statistics as the serving
        loop's tables compute them (:func:`~oracle.bench.vllm_loop.summarize`).

        >>> result = RunResult("native", "fcfs", 10, 0, (1, 2, 3, 5), (0, 0, 0), (0, 0, 0),
        ...                    (0, 0, 0), {}, {}, 0.0, 0, "d", "", 0.0)
        >>> Run.of(result)
        Run(p50=2.5, mean=2.75, p99=4.94, admissions='d')
        """
        pooled = summarize([result])
        return cls(
            p50=pooled.p50_ns, mean=pooled.mean_ns, p99=pooled.p99_ns, admissions=result.admissions
        )

    def statistic(self, name: str) -> float:
        """The statistic of :data:`STATISTICS` called ``name``."""
        value: float = getattr(self, name)
        return value


@dataclass(frozen=True, slots=True)
class Round:
    """One round's runs of one configuration, by variant."""

    policy: str
    n: int
    runs: dict[str, Run]

    def ratio(self, variant: str, statistic: str, over: str = "native") -> float:
        """``variant``'s ``statistic`` over ``over``'s, in this round."""
        return self.runs[variant].statistic(statistic) / self.runs[over].statistic(statistic)


#: The ratios the report gives: (variant, over), each within a round.
RATIOS: Final = (("floor", "native"), ("drop-in", "native"), ("drop-in", "floor"))


def report(rounds: Sequence[Round]) -> str:
    """Per configuration and statistic: vLLM's own queue's median over the rounds,
    and each ratio's median over the rounds and its range (least-most).

    >>> def run(p50: float) -> Run:
    ...     return Run(p50, p50, 2 * p50, "d")
    >>> runs = {"native": run(10e6), "floor": run(10.5e6), "drop-in": run(12e6)}
    >>> one = Round("fcfs", 1000, runs)
    >>> print(report([one, one]))
    policy         N stat     native floor/native     drop-in/native   drop-in/floor    rounds
    fcfs       1,000 p50    10.00 ms 1.05x 1.05-1.05  1.20x 1.20-1.20  1.14x 1.14-1.14       2
    fcfs       1,000 mean   10.00 ms 1.05x 1.05-1.05  1.20x 1.20-1.20  1.14x 1.14-1.14       2
    fcfs       1,000 p99    20.00 ms 1.05x 1.05-1.05  1.20x 1.20-1.20  1.14x 1.14-1.14       2
    """
    lines = [
        f"{'policy':<8} {'N':>7} {'stat':<5} {'native':>9} "
        + " ".join(f"{variant + '/' + over:<16}" for variant, over in RATIOS)
        + " rounds"
    ]
    configurations = dict.fromkeys((r.policy, r.n) for r in rounds)
    for policy_name, n in configurations:
        mine = [r for r in rounds if (r.policy, r.n) == (policy_name, n)]
        for statistic in STATISTICS:
            native = statistics.median(r.runs["native"].statistic(statistic) for r in mine)
            cells = []
            for variant, over in RATIOS:
                ratios = [r.ratio(variant, statistic, over) for r in mine]
                cells.append(
                    f"{statistics.median(ratios):.2f}x {min(ratios):.2f}-{max(ratios):.2f}"
                )
            lines.append(
                f"{policy_name:<8} {n:>7,} {statistic:<5} {native / 1e6:>6.2f} ms "
                + " ".join(f"{cell:<16}" for cell in cells)
                + f" {len(mine):>6}"
            )
    return "\n".join(lines)


def child_command(variant: str, policy_name: str, n: int, steps: int) -> list[str]:
    """The command line of one run."""
    return [
        sys.executable, "-m", "oracle.bench.vllm_floor", "--child", variant,
        "--policy", policy_name, "--n", str(n), "--steps", str(steps),
    ]  # fmt: skip


def spawn(variant: str, policy_name: str, n: int, steps: int) -> Run:
    """One run in a fresh process."""
    made = answer_of(
        child_command(variant, policy_name, n, steps), f"{variant} run of {policy_name} N={n:,}"
    )
    return Run(
        p50=float(made["p50"]),
        mean=float(made["mean"]),
        p99=float(made["p99"]),
        admissions=str(made["admissions"]),
    )


def round_order(number: int) -> tuple[str, ...]:
    """The order round ``number`` (from 0) runs the variants in: turned by one each
    round, so that each runs first, second and last equally often.

    >>> [round_order(k) for k in range(3)]  # doctest: +NORMALIZE_WHITESPACE
    [('native', 'floor', 'drop-in'), ('floor', 'drop-in', 'native'),
     ('drop-in', 'native', 'floor')]
    """
    turn = number % len(VARIANTS)
    return VARIANTS[turn:] + VARIANTS[:turn]


def measure(rounds: int, sizes: Sequence[int], steps: int, progress: TextIO | None) -> list[Round]:
    """``rounds`` rounds of every configuration, each round's variants one after the
    other in :func:`round_order`; a round whose variants admitted differently is a
    :class:`~oracle.bench.vllm_loop.RunFailed`."""
    made: list[Round] = []
    for number in range(rounds):
        for n in sizes:
            for policy_name in POLICIES:
                runs = {v: spawn(v, policy_name, n, steps) for v in round_order(number)}
                if len({run.admissions for run in runs.values()}) != 1:
                    raise RunFailed(
                        f"round {number + 1} of {policy_name} N={n:,}: the variants admitted"
                        " different requests or in a different order"
                    )
                made.append(Round(policy_name, n, runs))
                if progress is not None:
                    progress.write(
                        f"vllm_floor round {number + 1}/{rounds} {policy_name} N={n:,}: p50 "
                        + ", ".join(f"{v} {runs[v].p50 / 1e6:.2f} ms" for v in runs)
                        + "\n"
                    )
                    progress.flush()
    return made


def run_variant(variant: str, policy_name: str, n: int, steps: int) -> Run:
    """One run of ``variant`` in this process (a fresh one): the serving loop of
    :mod:`oracle.bench.vllm_loop`, ending with its timed steps (no probe pass)."""
    plan = Plan((n,), steps, 1, 0, WARMUP)
    if variant == "floor":
        result = vllm_loop.run_child(
            "native", policy_name, n, 0, plan, prepare=install_floor, probe=False
        )
    else:
        result = vllm_loop.run_child(variant, policy_name, n, 0, plan, probe=False)
    return Run.of(result)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m oracle.bench.vllm_floor [--rounds R] [--steps S] [--sizes N ...]``."""
    parser = argparse.ArgumentParser(prog="python -m oracle.bench.vllm_floor")
    parser.add_argument(
        "--rounds", type=positive, default=ROUNDS, help="rounds (default %(default)s)"
    )
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
        run = run_variant(arguments.child, arguments.policy, arguments.n, arguments.steps)
        sys.stdout.write(json.dumps(asdict(run)) + "\n")
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
