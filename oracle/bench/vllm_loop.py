"""``policy-kernel bench --vllm``: the serving loop, vLLM's real scheduler in the steady
state a busy server is in, its own waiting queue against the drop-in
(:mod:`policy.adapters.vllm`); issue 27, build point 1.

For each configuration (a policy, ``fcfs`` or ``priority``, and a waiting count N),
each run is one fresh process (``python -m oracle.bench.vllm_loop --child ...``, its
result one JSON line on stdout), so that one side's heap never inflates the other
side's garbage collections. A run:

- builds vLLM's ``Scheduler`` (CPU platform) as :mod:`oracle.bench.vllm_step` does,
  sized so that a step admits exactly ``BATCH`` (256) requests (``max_num_seqs`` =
  256, tokens and KV blocks to spare); on the drop-in side
  ``install_waiting_queue(scheduler, fcfs_queue or priority_queue)`` before any
  request;
- calls vLLM's own ``vllm.utils.gc_utils.freeze_gc_heap()`` once (what
  ``EngineCore.__init__`` does at the end of start-up) and leaves the collector
  on; ``gc.collect`` is never called between steps;
- adds N waiting requests (10-token prompts, ``max_tokens=1``, priorities 0 to 9
  seeded, arrival times increasing), then steps: ``BATCH`` fresh requests arrive
  (``scheduler.add_request``), ``schedule()`` admits ``BATCH``, and
  ``update_from_output`` with one sampled token per scheduled request (a stand-in
  model output, as tests/vllm_real/engine.py builds it) finishes them, so N wait
  again. The whole step is timed with ``time.perf_counter_ns``, making the
  arrivals' ``Request`` objects (the engine core's work for each arrival) and the
  stand-in output included. With the collector on, a collection falls wherever
  the count of allocations crosses a threshold, and the ``Request`` objects are
  most of a step's allocations: a window without them would leave most of
  vLLM's own collections untimed and charge the queue with those that happen to
  cross inside it (measured at N = 10,000, FCFS, 300 steps: 65% of vLLM's own
  young collections and 10 of its 14 full ones fell while the ``Request`` objects
  were made; with the drop-in, all 16 full ones fell in the adds and ``schedule()``);
- ``WARMUP`` untimed steps, then ``STEPS`` timed ones, counting the collections of
  each generation (``gc.get_stats()`` before and after) and timing each collection
  (``gc.callbacks``: its total and longest per generation);
- then, collector off, ``PROBE_STEPS`` more steps (at least two turnovers of the
  queue, 2N / ``BATCH`` steps, so that work done once per N operations shows) with
  the scheduler's ``waiting`` queue wrapped in :class:`TimedQueue`, which times
  every call of each public method (:data:`QUEUE_METHODS`): the longest single
  queue call and its method;
- last, the collector's view of what the queue keeps: after ``gc.collect()``, the
  requests alive that the scheduler no longer knows (kept by something else than
  the scheduler: the queue, on the drop-in side), and the number of GC-tracked
  objects freed when the queue is dropped (``len(gc.get_objects())`` before and
  after ``scheduler.waiting`` is replaced by ``None`` and ``gc.collect()``; the
  requests still waiting stay alive through ``scheduler.requests``, so they are
  not counted, while anything only the queue keeps alive is), divided by N.

Runs alternate native, drop-in, native, drop-in (``RUNS`` each side); the steps of
a side's runs are pooled. Reported per configuration: per-step p50, mean, p99 and
worst of each side and the ratios drop-in / native, the longest single queue call
of each side, collections per 1,000 steps and the time in gen-2 collections, the
objects per waiting entry, and whether both sides admitted the same requests in
the same order (a digest of every step's admissions). The targets are issue 27's
acceptance (:data:`P50_TARGETS`, :data:`MEAN_TARGETS`, :data:`P99_TARGET`,
:data:`CALL_SHARE_TARGET`); each is printed met or NOT MET.

``bench --vllm`` then runs :mod:`oracle.bench.vllm_step`'s drain (no arrivals, the
collector off) as a second table, labelled as a diagnosis, not a gate
(``--loop-only`` skips it). Like :mod:`oracle.bench.vllm_step`, this module imports
nothing from vLLM at import time (every vLLM object is ``Any``), and without vLLM
prints one line and returns 2.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Final, TextIO

import oracle
import policy
from oracle.bench import vllm_step
from oracle.bench.run import machine
from oracle.bench.vllm_step import (
    ENVIRONMENT,
    Vllm,
    build_scheduler,
    model_folder,
    refusal,
    vllm_config,
    vllm_missing,
)
from oracle.options import positive

#: Waiting counts of the full run and of ``--quick``.
SIZES: Final = (1_000, 10_000, 100_000)
QUICK_SIZES: Final = (1_000, 10_000)
POLICIES: Final = ("fcfs", "priority")
#: The two sides, in the order each pair of runs alternates them.
SIDES: Final = ("native", "drop-in")
#: Timed steps per run, untimed steps before them, runs per side.
STEPS: Final = 1_000
QUICK_STEPS: Final = 200
WARMUP: Final = 50
RUNS: Final = 2
QUICK_RUNS: Final = 1
#: Steps of the pass that times each queue call (collector off).
PROBE_STEPS: Final = 200
QUICK_PROBE_STEPS: Final = 100
#: Requests arriving, admitted and finished per step.
BATCH: Final = vllm_step.BATCH
PROMPT_TOKENS: Final = 10
SEED: Final = 27
#: Issue 27's acceptance: drop-in / native per-step p50 and mean per policy, p99,
#: and the longest single drop-in call as a share of vLLM's median step.
P50_TARGETS: Final = {"fcfs": 1.15, "priority": 1.25}
MEAN_TARGETS: Final = {"fcfs": 1.20, "priority": 1.30}
P99_TARGET: Final = 1.5
CALL_SHARE_TARGET: Final = 0.10
#: The public methods of the ``waiting`` queue the probe pass times (vLLM's
#: ``RequestQueue``), and two more the drop-in has, timed if called.
QUEUE_METHODS: Final = (
    "add_request",
    "pop_request",
    "peek_request",
    "prepend_request",
    "prepend_requests",
    "remove_request",
    "remove_requests",
    "__len__",
    "__bool__",
    "__iter__",
    "__contains__",
    "__getitem__",
)
#: Seconds a run may take before it is stopped.
CHILD_TIMEOUT: Final = 3_600.0
EXIT_NO_VLLM: Final = vllm_step.EXIT_NO_VLLM
EXIT_RUN_FAILED: Final = 1
#: How many of the types freed with the queue a run names.
FREED_TYPES: Final = 6
DRAIN_LABEL: Final = "drain: no arrivals, collector off — a diagnosis, not a gate"
OBJECTS_METHOD: Final = (
    "GC-tracked objects freed when the queue is dropped (len(gc.get_objects()) before and"
    " after, gc.collect() each time), per waiting entry; requests kept: Request objects alive"
    " that the scheduler no longer knows"
)


# --- what a run reports -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunResult:
    """One run (one process) of one side of one configuration, as its JSON line
    carries it: the timed steps in nanoseconds, the collector's counts and times
    per generation over the timed steps, the longest call per queue method
    (probe pass), what the queue keeps, and a digest of the admissions."""

    side: str
    policy: str
    n: int
    run: int
    step_ns: tuple[int, ...]
    collections: tuple[int, int, int]
    collection_ns: tuple[int, int, int]
    longest_collection_ns: tuple[int, int, int]
    longest_call_ns: Mapping[str, int]
    calls: Mapping[str, int]
    objects_per_entry: float
    requests_kept: int
    admissions: str
    vllm: str
    seconds: float
    #: the types most freed when the queue is dropped: (type name, objects per entry)
    freed_types: tuple[tuple[str, float], ...] = ()
    #: the 99.99th percentile of each queue method's calls in the probe pass: one
    #: pause of the machine moves the longest call, not this
    call_tail_ns: Mapping[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        """The JSON object of this run (tuples as lists)."""
        return {
            **asdict(self),
            "longest_call_ns": dict(self.longest_call_ns),
            "calls": dict(self.calls),
            "freed_types": [list(pair) for pair in self.freed_types],
            "call_tail_ns": dict(self.call_tail_ns),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunResult:
        """The run from :meth:`to_json`'s object.

        >>> run = RunResult("native", "fcfs", 10, 0, (1, 2), (3, 0, 0), (9, 0, 0), (4, 0, 0),
        ...                 {"pop_request": 5}, {"pop_request": 1}, 0.0, 0, "ab", "0.33.0", 1.5)
        >>> RunResult.from_json(json.loads(json.dumps(run.to_json()))) == run
        True
        """

        def three(name: str) -> tuple[int, int, int]:
            first, second, third = (int(value) for value in data[name])
            return first, second, third

        return cls(
            side=str(data["side"]),
            policy=str(data["policy"]),
            n=int(data["n"]),
            run=int(data["run"]),
            step_ns=tuple(int(value) for value in data["step_ns"]),
            collections=three("collections"),
            collection_ns=three("collection_ns"),
            longest_collection_ns=three("longest_collection_ns"),
            longest_call_ns={str(k): int(v) for k, v in data["longest_call_ns"].items()},
            calls={str(k): int(v) for k, v in data["calls"].items()},
            objects_per_entry=float(data["objects_per_entry"]),
            requests_kept=int(data["requests_kept"]),
            admissions=str(data["admissions"]),
            vllm=str(data["vllm"]),
            seconds=float(data["seconds"]),
            freed_types=tuple(
                (str(name), float(count)) for name, count in data.get("freed_types", ())
            ),
            call_tail_ns={str(k): int(v) for k, v in data.get("call_tail_ns", {}).items()},
        )


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0 to 100) of ``values``, interpolated linearly
    between the closest ranks (numpy's default method).

    >>> percentile([4, 1, 3, 2], 50)
    2.5
    >>> percentile(range(1, 102), 99)
    100.0
    >>> percentile([7], 99)
    7.0
    """
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is not within 0 to 100")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (position - low))


def longest_call(longest: Mapping[str, int]) -> tuple[int, str]:
    """The longest call of a mapping method -> nanoseconds, and its method
    (``(0, "")`` for none; ties to the first method).

    >>> longest_call({"add_request": 3, "pop_request": 9, "__len__": 9})
    (9, 'pop_request')
    >>> longest_call({})
    (0, '')
    """
    best, method = 0, ""
    for name, spent in longest.items():
        if spent > best:
            best, method = spent, name
    return best, method


@dataclass(frozen=True, slots=True)
class SideSummary:
    """One side of a configuration, its runs pooled: per-step p50, mean, p99 and
    worst (ns), collections per 1,000 timed steps per generation, milliseconds in
    gen-2 collections per 1,000 steps and the longest gen-2 collection, the longest
    single queue call and its method, objects per waiting entry (mean of the runs)
    and the most requests kept alive by something else than the scheduler."""

    runs: int
    steps: int
    p50_ns: float
    mean_ns: float
    p99_ns: float
    worst_ns: int
    collections_per_1k: tuple[float, float, float]
    gen2_ms_per_1k: float
    longest_gen2_ns: int
    longest_call_ns: int
    longest_call_method: str
    objects_per_entry: float
    requests_kept: int
    freed_types: tuple[tuple[str, float], ...] = ()
    #: The lowest per-run p50 and mean: the run least disturbed by the machine.
    least_p50_ns: float = 0.0
    least_mean_ns: float = 0.0
    #: The highest 99.99th percentile of a queue method's calls over the runs.
    call_tail_ns: int = 0


def summarize(runs: Sequence[RunResult]) -> SideSummary:
    """The runs of one side, pooled.

    >>> a = RunResult("native", "fcfs", 10, 0, (1, 2, 3), (30, 3, 0), (0, 0, 0), (0, 0, 0),
    ...               {"pop_request": 5}, {}, 1.0, 0, "", "", 0.0)
    >>> b = RunResult("native", "fcfs", 10, 1, (4, 5, 6), (30, 3, 6), (0, 0, 6_000_000),
    ...               (0, 0, 2_000_000), {"__len__": 7}, {}, 3.0, 2, "", "", 0.0)
    >>> s = summarize([a, b])
    >>> s.p50_ns, s.mean_ns, s.worst_ns, s.collections_per_1k, s.gen2_ms_per_1k
    (3.5, 3.5, 6, (10000.0, 1000.0, 1000.0), 1000.0)
    >>> s.longest_call_ns, s.longest_call_method, s.objects_per_entry, s.requests_kept
    (7, '__len__', 2.0, 2)
    >>> s.least_p50_ns, s.least_mean_ns
    (2.0, 2.0)
    """
    if not runs:
        raise ValueError("no runs to summarize")
    steps = [spent for run in runs for spent in run.step_ns]
    count = len(steps)
    per_1k = 1_000 / count
    collections = [sum(run.collections[g] for run in runs) * per_1k for g in range(3)]
    longest: dict[str, int] = {}
    for run in runs:
        for method, spent in run.longest_call_ns.items():
            longest[method] = max(longest.get(method, 0), spent)
    call_ns, call_method = longest_call(longest)
    return SideSummary(
        runs=len(runs),
        steps=count,
        p50_ns=percentile(steps, 50),
        mean_ns=sum(steps) / count,
        p99_ns=percentile(steps, 99),
        worst_ns=max(steps),
        collections_per_1k=(collections[0], collections[1], collections[2]),
        gen2_ms_per_1k=sum(run.collection_ns[2] for run in runs) / 1e6 * per_1k,
        longest_gen2_ns=max(run.longest_collection_ns[2] for run in runs),
        longest_call_ns=call_ns,
        longest_call_method=call_method,
        objects_per_entry=sum(run.objects_per_entry for run in runs) / len(runs),
        requests_kept=max(run.requests_kept for run in runs),
        freed_types=mean_types(runs),
        least_p50_ns=min(percentile(run.step_ns, 50) for run in runs),
        least_mean_ns=min(sum(run.step_ns) / len(run.step_ns) for run in runs),
        call_tail_ns=max(max(run.call_tail_ns.values(), default=0) for run in runs),
    )


def mean_types(runs: Sequence[RunResult]) -> tuple[tuple[str, float], ...]:
    """The types freed with the queue, objects per entry averaged over the runs (a
    type a run does not name counts 0 there), most first.

    >>> a = RunResult("drop-in", "fcfs", 10, 0, (1,), (0, 0, 0), (0, 0, 0), (0, 0, 0), {}, {},
    ...               0.0, 0, "", "", 0.0, (("list", 4.0), ("Request", 1.0)))
    >>> b = RunResult("drop-in", "fcfs", 10, 1, (1,), (0, 0, 0), (0, 0, 0), (0, 0, 0), {}, {},
    ...               0.0, 0, "", "", 0.0, (("list", 2.0), ("tuple", 3.0)))
    >>> mean_types([a, b])
    (('list', 3.0), ('tuple', 1.5), ('Request', 0.5))
    """
    totals: dict[str, float] = {}
    for run in runs:
        for name, count in run.freed_types:
            totals[name] = totals.get(name, 0.0) + count
    ordered = sorted(totals.items(), key=lambda pair: -pair[1])
    return tuple((name, total / len(runs)) for name, total in ordered)


@dataclass(frozen=True, slots=True)
class Target:
    """One of issue 27's acceptance targets: a measured value and its upper limit."""

    name: str
    value: float
    limit: float

    @property
    def met(self) -> bool:
        """Whether the value is within its limit.

        >>> Target("p50", 1.15, 1.15).met, Target("p50", 1.16, 1.15).met
        (True, False)
        """
        return self.value <= self.limit


@dataclass(frozen=True, slots=True)
class LoopRow:
    """One configuration: both sides pooled, their ratios and the targets."""

    policy: str
    n: int
    steps: int
    runs: int
    native: SideSummary
    dropin: SideSummary
    same_order: bool

    @property
    def p50_ratio(self) -> float:
        """Drop-in / native per-step p50."""
        return self.dropin.p50_ns / self.native.p50_ns

    @property
    def mean_ratio(self) -> float:
        """Drop-in / native per-step mean."""
        return self.dropin.mean_ns / self.native.mean_ns

    @property
    def p99_ratio(self) -> float:
        """Drop-in / native per-step p99."""
        return self.dropin.p99_ns / self.native.p99_ns

    @property
    def least_ratios(self) -> tuple[float, float]:
        """Drop-in / native p50 and mean of each side's least disturbed run (its
        lowest), as ``timeit`` reports the best of its repeats: on a shared
        machine a slower run measures its neighbours, not the code."""
        dropin, native = self.dropin, self.native
        return (
            dropin.least_p50_ns / native.least_p50_ns,
            dropin.least_mean_ns / native.least_mean_ns,
        )

    @property
    def call_share(self) -> float:
        """The drop-in's longest single queue call as a share of vLLM's median step."""
        return self.dropin.longest_call_ns / self.native.p50_ns

    def targets(self) -> tuple[Target, Target, Target, Target]:
        """p50, mean and p99 ratios and the longest call's share, with their limits."""
        return (
            Target("p50", self.p50_ratio, P50_TARGETS[self.policy]),
            Target("mean", self.mean_ratio, MEAN_TARGETS[self.policy]),
            Target("p99", self.p99_ratio, P99_TARGET),
            Target("longest call", self.call_share, CALL_SHARE_TARGET),
        )


def loop_row(runs: Sequence[RunResult]) -> LoopRow:
    """The row of one configuration from all its runs (both sides).

    >>> def run(side, k, steps, digest="d"):
    ...     return RunResult(side, "fcfs", 1000, k, steps, (0, 0, 0), (0, 0, 0), (0, 0, 0),
    ...                      {"pop_request": 100}, {}, 0.0, 0, digest, "", 0.0)
    >>> row = loop_row([run("native", 0, (1000, 1000)), run("drop-in", 0, (1100, 1300))])
    >>> round(row.p50_ratio, 2), round(row.mean_ratio, 2), round(row.p99_ratio, 3), row.same_order
    (1.2, 1.2, 1.298, True)
    >>> [(t.name, t.met) for t in row.targets()]
    [('p50', False), ('mean', True), ('p99', True), ('longest call', True)]
    """
    if not runs:
        raise ValueError("no runs")
    first = runs[0]
    configurations = {(run.policy, run.n) for run in runs}
    if len(configurations) != 1:
        raise ValueError(f"runs of more than one configuration: {sorted(configurations)}")
    sides = {side: [run for run in runs if run.side == side] for side in SIDES}
    for side, mine in sides.items():
        if not mine:
            raise ValueError(f"no {side} run")
    digests = {side: {run.run: run.admissions for run in mine} for side, mine in sides.items()}
    same_order = digests["native"] == digests["drop-in"]
    return LoopRow(
        policy=first.policy,
        n=first.n,
        steps=len(first.step_ns),
        runs=len(sides["native"]),
        native=summarize(sides["native"]),
        dropin=summarize(sides["drop-in"]),
        same_order=same_order,
    )


# --- rendering ----------------------------------------------------------------------------


def _ms(nanoseconds: float) -> str:
    return f"{nanoseconds / 1e6:.2f}"


def duration(nanoseconds: float) -> str:
    """A duration with its unit.

    >>> duration(7_300_000), duration(95_000), duration(1_250_000_000)
    ('7.30 ms', '95.0 µs', '1.25 s')
    """
    if nanoseconds >= 1e9:
        return f"{nanoseconds / 1e9:.2f} s"
    if nanoseconds >= 1e6:
        return f"{nanoseconds / 1e6:.2f} ms"
    return f"{nanoseconds / 1e3:.1f} µs"


def verdict(target: Target) -> str:
    """``met`` or ``NOT MET``."""
    return "met" if target.met else "NOT MET"


def _target_cell(target: Target, percent: bool = False) -> str:
    if percent:
        return f"{target.value:.1%} <= {target.limit:.0%} {verdict(target)}"
    return f"{target.value:.2f}x <= {target.limit:.2f} {verdict(target)}"


def step_table(rows: Sequence[LoopRow]) -> str:
    """Per-step times (ms) of both sides and their ratios."""
    lines = [
        f"{'policy':<8} {'N':>7} | {'native':>6} {'p50':>7} {'mean':>7} {'p99':>7} {'worst':>7}"
        f" | {'drop-in':>7} {'p50':>7} {'mean':>7} {'p99':>7} {'worst':>7}"
        f" | {'p50':>5} {'mean':>5} {'p99':>5} | same order"
    ]
    for row in rows:
        native, dropin = row.native, row.dropin
        lines.append(
            f"{row.policy:<8} {row.n:>7,} | {'':>6} {_ms(native.p50_ns):>7}"
            f" {_ms(native.mean_ns):>7} {_ms(native.p99_ns):>7} {_ms(native.worst_ns):>7}"
            f" | {'':>7} {_ms(dropin.p50_ns):>7} {_ms(dropin.mean_ns):>7}"
            f" {_ms(dropin.p99_ns):>7} {_ms(dropin.worst_ns):>7}"
            f" | {row.p50_ratio:>4.2f}x {row.mean_ratio:>4.2f}x {row.p99_ratio:>4.2f}x"
            f" | {'yes' if row.same_order else 'NO'}"
        )
    return "\n".join(lines)


def target_table(rows: Sequence[LoopRow]) -> str:
    """Issue 27's targets per configuration, each met or NOT MET, with the longest
    single queue call of each side (collector off)."""
    lines = [
        f"{'policy':<8} {'N':>7}  {'p50 drop-in/native':<22} {'mean drop-in/native':<22}"
        f" {'p99 drop-in/native':<22} {'longest drop-in call / vLLM p50':<34}"
        f" {'longest drop-in call':<31} {'vLLM longest call':<31} 99.99% of calls drop-in, vLLM"
    ]
    for row in rows:
        p50, mean, p99, call = row.targets()
        dropin, native = row.dropin, row.native
        lines.append(
            f"{row.policy:<8} {row.n:>7,}  {_target_cell(p50):<22} {_target_cell(mean):<22}"
            f" {_target_cell(p99):<22} {_target_cell(call, percent=True):<34}"
            f" {duration(dropin.longest_call_ns) + ' ' + dropin.longest_call_method:<31}"
            f" {duration(native.longest_call_ns) + ' ' + native.longest_call_method:<31}"
            f" {duration(dropin.call_tail_ns)}, {duration(native.call_tail_ns)}"
        )
    return "\n".join(lines)


def least_table(rows: Sequence[LoopRow]) -> str:
    """Per configuration, the ratios of each side's least disturbed run, against the
    p50 and mean targets."""
    lines = [f"{'policy':<8} {'N':>7}  {'p50 drop-in/native':<22} mean drop-in/native"]
    for row in rows:
        p50, mean = row.least_ratios
        p50_cell = _target_cell(Target("p50", p50, P50_TARGETS[row.policy]))
        mean_cell = _target_cell(Target("mean", mean, MEAN_TARGETS[row.policy]))
        lines.append(f"{row.policy:<8} {row.n:>7,}  {p50_cell:<22} {mean_cell}")
    return "\n".join(lines)


def collector_table(rows: Sequence[LoopRow]) -> str:
    """Collections per 1,000 timed steps, time in gen-2 collections, and what the
    queue keeps, per side."""
    lines = [
        f"{'policy':<8} {'N':>7} {'side':<8} {'gen0/1k':>8} {'gen1/1k':>8} {'gen2/1k':>8}"
        f" {'gen2 ms/1k':>10} {'longest gen2':>12} {'objects/entry':>13} {'requests kept':>13}"
    ]
    for row in rows:
        for side, summary in (("native", row.native), ("drop-in", row.dropin)):
            gen0, gen1, gen2 = summary.collections_per_1k
            lines.append(
                f"{row.policy:<8} {row.n:>7,} {side:<8} {gen0:>8.1f} {gen1:>8.1f} {gen2:>8.1f}"
                f" {summary.gen2_ms_per_1k:>10.1f} {duration(summary.longest_gen2_ns):>12}"
                f" {summary.objects_per_entry:>13.2f} {summary.requests_kept:>13,}"
            )
    return "\n".join(lines)


def freed_lines(rows: Sequence[LoopRow]) -> list[str]:
    """Per configuration, the types the drop-in's queue alone keeps alive (objects
    per waiting entry, the most first)."""
    lines = []
    for row in rows:
        types = ", ".join(f"{name} {count:.2f}" for name, count in row.dropin.freed_types)
        lines.append(f"{row.policy:<8} {row.n:>7,} drop-in  {types or '-'}")
    return lines


def targets_met(rows: Sequence[LoopRow]) -> tuple[int, int]:
    """How many targets are met, of how many."""
    targets = [target for row in rows for target in row.targets()]
    return sum(target.met for target in targets), len(targets)


def loop_report(rows: Sequence[LoopRow], version: str, steps: int, runs: int) -> str:
    """The serving loop's text: the method in one line, then the three tables."""
    met, total = targets_met(rows)
    return "\n".join(
        [
            f"serving loop: vLLM {version} Scheduler, each step {BATCH} add_request +"
            f" schedule() admitting {BATCH} + update_from_output finishing them; collector on"
            f" after freeze_gc_heap(); {steps:,} timed steps (after {WARMUP}) x {runs} run(s)"
            " per side, each run a fresh process, alternating native, drop-in",
            "",
            "per-step time (ms) and drop-in / native:",
            step_table(rows),
            "",
            "issue 27's targets (longest single queue call: a pass of its own, collector off):",
            target_table(rows),
            "",
            *(
                [
                    f"the least disturbed of the {runs} runs a side (each side's lowest p50 and"
                    " mean, as timeit reports the best of its repeats):",
                    least_table(rows),
                    "",
                ]
                if runs > 1
                else []
            ),
            "collector (per 1,000 timed steps) and what the queue keeps (end of a run):",
            collector_table(rows),
            f"({OBJECTS_METHOD})",
            "",
            "what the drop-in's queue keeps alive, by type (objects per waiting entry):",
            *freed_lines(rows),
            "",
            f"bench --vllm serving loop: {met} of {total} targets met ({machine()})",
        ]
    )


def loop_document(
    rows: Sequence[LoopRow], results: Sequence[RunResult], version: str, quick: bool
) -> dict[str, object]:
    """The serving loop's part of the JSON document (every run summarized too)."""
    met, total = targets_met(rows)
    return {
        "vllm": version,
        "quick": quick,
        "batch": BATCH,
        "prompt_tokens": PROMPT_TOKENS,
        "warmup": WARMUP,
        "objects_method": OBJECTS_METHOD,
        "targets_met": met,
        "targets": total,
        "rows": [
            {
                "policy": row.policy,
                "n": row.n,
                "steps": row.steps,
                "runs": row.runs,
                "native": asdict(row.native),
                "drop-in": asdict(row.dropin),
                "p50_ratio": row.p50_ratio,
                "mean_ratio": row.mean_ratio,
                "p99_ratio": row.p99_ratio,
                "call_share": row.call_share,
                "least_ratios": list(row.least_ratios),
                "same_order": row.same_order,
                "targets": [
                    {"name": t.name, "value": t.value, "limit": t.limit, "met": t.met}
                    for t in row.targets()
                ],
            }
            for row in rows
        ],
        "runs": [
            {
                "side": run.side,
                "policy": run.policy,
                "n": run.n,
                "run": run.run,
                "seconds": run.seconds,
                "p50_ns": percentile(run.step_ns, 50),
                "mean_ns": sum(run.step_ns) / len(run.step_ns),
                "p99_ns": percentile(run.step_ns, 99),
                "worst_ns": max(run.step_ns),
                "collections": list(run.collections),
                "collection_ns": list(run.collection_ns),
                "longest_collection_ns": list(run.longest_collection_ns),
                "longest_call_ns": dict(run.longest_call_ns),
                "calls": dict(run.calls),
                "objects_per_entry": run.objects_per_entry,
                "requests_kept": run.requests_kept,
                "freed_types": dict(run.freed_types),
            }
            for run in results
        ],
    }


# --- one run (the child process) ----------------------------------------------------------


class TimedQueue:
    """A scheduler's ``waiting`` queue with every call of each :data:`QUEUE_METHODS`
    method timed (``time.perf_counter_ns``): the longest per method, the number
    of calls and every call's time (for :meth:`tails`). ``__iter__`` times making
    the iterator (where the drop-in does its work), not the items. Anything else
    is the queue's own, untimed."""

    __slots__ = ("queue", "spent")

    def __init__(self, queue: Any) -> None:
        self.queue = queue
        self.spent: dict[str, array[int]] = {}  # every call's nanoseconds, per method

    @property
    def longest(self) -> dict[str, int]:
        """The longest call of each method (ns)."""
        return {method: max(times) for method, times in self.spent.items()}

    @property
    def calls(self) -> dict[str, int]:
        """The number of calls of each method."""
        return {method: len(times) for method, times in self.spent.items()}

    def _timed(self, method: str, *arguments: Any) -> Any:
        bound = getattr(self.queue, method)
        clock = time.perf_counter_ns
        started = clock()
        result = bound(*arguments)
        spent = clock() - started
        times = self.spent.get(method)
        if times is None:
            times = self.spent[method] = array("q")
        times.append(spent)
        return result

    def tails(self) -> dict[str, int]:
        """The 99.99th percentile of each method's calls (ns)."""
        return {method: int(percentile(times, 99.99)) for method, times in self.spent.items()}

    def add_request(self, request: Any) -> None:
        self._timed("add_request", request)

    def pop_request(self) -> Any:
        return self._timed("pop_request")

    def peek_request(self) -> Any:
        return self._timed("peek_request")

    def prepend_request(self, request: Any) -> None:
        self._timed("prepend_request", request)

    def prepend_requests(self, requests: Any) -> None:
        self._timed("prepend_requests", requests)

    def remove_request(self, request: Any) -> None:
        self._timed("remove_request", request)

    def remove_requests(self, requests: Any) -> None:
        self._timed("remove_requests", requests)

    def __len__(self) -> int:
        return int(self._timed("__len__"))

    def __bool__(self) -> bool:
        return bool(self._timed("__bool__"))

    def __iter__(self) -> Iterator[Any]:
        iterator: Iterator[Any] = self._timed("__iter__")
        return iterator

    def __contains__(self, request: object) -> bool:
        return bool(self._timed("__contains__", request))

    def __getitem__(self, index: int) -> Any:
        return self._timed("__getitem__", index)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.queue, name)


class CollectorClock:
    """A ``gc.callbacks`` entry: the total and the longest time of the collections of
    each generation while it is installed."""

    def __init__(self) -> None:
        self.started = 0
        self.total = [0, 0, 0]
        self.longest = [0, 0, 0]

    def __call__(self, phase: str, info: Mapping[str, int]) -> None:
        now = time.perf_counter_ns()
        if phase == "start":
            self.started = now
            return
        generation = info["generation"]
        spent = now - self.started
        self.total[generation] += spent
        self.longest[generation] = max(self.longest[generation], spent)


def _collections() -> list[int]:
    return [int(generation["collections"]) for generation in gc.get_stats()]


class Loop:
    """One scheduler stepped as a busy server steps it (the module's docstring)."""

    def __init__(self, v: Vllm, scheduler: Any, policy_name: str, n: int, run: int) -> None:
        self.v = v
        self.scheduler = scheduler
        self.output_class: Any = importlib.import_module("vllm.v1.outputs").ModelRunnerOutput
        self.sampling: Any = v.SamplingParams(max_tokens=1)
        self.rng = random.Random(f"{SEED}-{policy_name}-{n}-{run}")
        self.serial = 0
        self.digest = hashlib.sha256()

    def requests(self, count: int) -> list[Any]:
        """``count`` fresh requests: 10-token prompts, ``max_tokens=1``, priority 0 to 9
        (seeded), arrival times increasing (1 ms apart)."""
        made = []
        for serial in range(self.serial, self.serial + count):
            made.append(
                self.v.Request(
                    request_id=f"req-{serial}",
                    prompt_token_ids=[serial % 1024] * PROMPT_TOKENS,
                    sampling_params=self.sampling,
                    pooling_params=None,
                    arrival_time=1_000.0 + serial * 1e-3,
                    priority=self.rng.randrange(10),
                )
            )
        self.serial += count
        return made

    def fill(self, n: int) -> None:
        """``n`` waiting requests."""
        add = self.scheduler.add_request
        for request in self.requests(n):
            add(request)

    def step(self) -> int:
        """One step, timed whole (the module's docstring): ``BATCH`` arrivals made
        and added, ``schedule()``, the stand-in model output, ``update_from_output``;
        returns its nanoseconds."""
        scheduler = self.scheduler
        clock = time.perf_counter_ns
        started = clock()
        fresh = self.requests(BATCH)
        add = scheduler.add_request
        for request in fresh:
            add(request)
        output = scheduler.schedule()
        names = list(output.num_scheduled_tokens)
        model_output = self.output_class(
            req_ids=names,
            req_id_to_index={name: k for k, name in enumerate(names)},
            sampled_token_ids=[[1] for _ in names],
        )
        scheduler.update_from_output(output, model_output)
        finished = clock()
        if len(names) != BATCH or scheduler.running:
            raise RuntimeError(
                f"a step scheduled {len(names)} requests (not {BATCH}) or left"
                f" {len(scheduler.running)} running"
            )
        self.digest.update(",".join(names).encode())
        self.digest.update(b";")
        return finished - started


def _side_queue_check(scheduler: Any, side: str) -> None:
    """The drop-in side runs the drop-in, the native side vLLM's own queue."""
    dropin = type(scheduler.waiting).__module__.startswith(policy.__name__)
    if dropin != (side == "drop-in"):
        raise RuntimeError(f"{side}: the waiting queue is {type(scheduler.waiting).__name__}")


def _requests_kept(v: Vllm, scheduler: Any) -> int:
    """Request objects alive that the scheduler no longer knows (after a collection)."""
    known = scheduler.requests
    request_class = v.Request
    return sum(
        1
        for thing in gc.get_objects()
        if type(thing) is request_class and thing.request_id not in known
    )


def _type_counts() -> Counter[str]:
    return Counter(type(thing).__qualname__ for thing in gc.get_objects())


def _objects_per_entry(scheduler: Any, n: int) -> tuple[float, tuple[tuple[str, float], ...]]:
    """GC-tracked objects freed when the ``waiting`` queue is dropped, per entry, and
    the ``FREED_TYPES`` types most freed (objects of each per entry)."""
    gc.collect()
    before = _type_counts()
    scheduler.waiting = None
    gc.collect()
    after = _type_counts()
    freed = before - after  # the types whose count fell (a type can only fall here)
    total = before.total() - after.total()
    return total / n, tuple((name, count / n) for name, count in freed.most_common(FREED_TYPES))


def probe_steps(least: int, n: int) -> int:
    """Steps of the probe pass: ``least``, or two turnovers of N waiting if more.

    >>> probe_steps(200, 1_000), probe_steps(200, 100_000)
    (200, 782)
    """
    return max(least, math.ceil(2 * n / BATCH))


def run_child(
    side: str,
    policy_name: str,
    n: int,
    run: int,
    plan: Plan,
    *,
    prepare: Callable[[Any], None] | None = None,
    probe: bool = True,
) -> RunResult:
    """One run, in this process (meant to be a fresh one; see the module's docstring),
    with ``plan``'s warm-up, timed and probe steps. ``prepare``, if given, changes
    the side's scheduler before any request, where the drop-in is installed
    (:mod:`oracle.bench.vllm_floor`'s queue); without ``probe``, the run ends with
    its timed steps (no probe pass, nothing counted: its calls and objects are
    empty and 0)."""
    started = time.perf_counter()
    v = Vllm()
    freeze_gc_heap: Any = importlib.import_module("vllm.utils.gc_utils").freeze_gc_heap
    with tempfile.TemporaryDirectory(prefix="policy-kernel-vllm-loop-") as where:
        config = vllm_config(v, model_folder(Path(where)), policy_name)
        scheduler = build_scheduler(v, config, side == "drop-in")
    _side_queue_check(scheduler, side)
    if prepare is not None:
        prepare(scheduler)
    gc.enable()
    freeze_gc_heap()
    loop = Loop(v, scheduler, policy_name, n, run)
    loop.fill(n)
    for _ in range(plan.warmup):
        loop.step()
    clock = CollectorClock()
    step_ns: list[int] = []
    gc.callbacks.append(clock)
    try:
        before = _collections()
        for _ in range(plan.steps):
            step_ns.append(loop.step())
        after = _collections()
    finally:
        gc.callbacks.remove(clock)
    if len(scheduler.waiting) != n:
        raise RuntimeError(f"{len(scheduler.waiting)} waiting after the steps, not {n}")
    counts = [after[g] - before[g] for g in range(3)]
    timed_run = RunResult(
        side=side,
        policy=policy_name,
        n=n,
        run=run,
        step_ns=tuple(step_ns),
        collections=(counts[0], counts[1], counts[2]),
        collection_ns=(clock.total[0], clock.total[1], clock.total[2]),
        longest_collection_ns=(clock.longest[0], clock.longest[1], clock.longest[2]),
        longest_call_ns={},
        calls={},
        objects_per_entry=0.0,
        requests_kept=0,
        admissions=loop.digest.hexdigest(),
        vllm=v.version,
        seconds=time.perf_counter() - started,
    )
    if not probe:
        return timed_run
    timed = TimedQueue(scheduler.waiting)
    gc.disable()
    try:
        scheduler.waiting = timed
        for _ in range(probe_steps(plan.probe_steps, n)):
            loop.step()
    finally:
        scheduler.waiting = timed.queue
        gc.enable()
    longest, calls, tails = timed.longest, timed.calls, timed.tails()
    del timed  # it holds the queue, which is about to be dropped and counted
    gc.collect()
    kept = _requests_kept(v, scheduler)
    objects, freed_types = _objects_per_entry(scheduler, n)
    return replace(
        timed_run,
        longest_call_ns=longest,
        calls=calls,
        call_tail_ns=tails,
        objects_per_entry=objects,
        requests_kept=kept,
        admissions=loop.digest.hexdigest(),  # the probe pass's admissions too
        seconds=time.perf_counter() - started,
        freed_types=freed_types,
    )


# --- the runs (the parent process) --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Plan:
    """What a benchmark runs: sizes, timed steps, runs per side, probe steps."""

    sizes: tuple[int, ...]
    steps: int
    runs: int
    probe_steps: int
    warmup: int = WARMUP

    @classmethod
    def of(cls, quick: bool) -> Plan:
        """The full plan, or ``--quick``'s.

        >>> Plan.of(True)
        Plan(sizes=(1000, 10000), steps=200, runs=1, probe_steps=100, warmup=50)
        """
        if quick:
            return cls(QUICK_SIZES, QUICK_STEPS, QUICK_RUNS, QUICK_PROBE_STEPS)
        return cls(SIZES, STEPS, RUNS, PROBE_STEPS)


def child_command(plan: Plan, side: str, policy_name: str, n: int, run: int) -> list[str]:
    """The command line of one run."""
    return [
        sys.executable,
        "-m",
        "oracle.bench.vllm_loop",
        "--child",
        side,
        "--policy",
        policy_name,
        "--n",
        str(n),
        "--run",
        str(run),
        "--steps",
        str(plan.steps),
        "--warmup",
        str(plan.warmup),
        "--probe-steps",
        str(plan.probe_steps),
    ]


def child_environment() -> dict[str, str]:
    """This environment with vLLM's defaults (offline, CPU, logs on stderr) and the
    folders this process imports ``oracle`` and ``policy`` from first on
    ``PYTHONPATH``, so that a run measures the same code as its parent."""
    environment = dict(os.environ)
    for name, value in ENVIRONMENT.items():
        environment.setdefault(name, value)
    roots: list[str] = []
    for package in (oracle, policy):
        root = str(Path(next(iter(package.__path__))).resolve().parent)
        if root not in roots:
            roots.append(root)
    existing = environment.get("PYTHONPATH", "")
    environment["PYTHONPATH"] = os.pathsep.join([*roots, *([existing] if existing else [])])
    return environment


class RunFailed(RuntimeError):
    """A run's process failed; the message ends with its last stderr lines."""


def answer_of(command: list[str], what: str) -> Any:
    """The JSON value a run's process (``command``, in :func:`child_environment`)
    prints last on stdout; ``what`` names the run when it fails."""
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env=child_environment(),
        timeout=CHILD_TIMEOUT,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = "\n".join(done.stderr.strip().splitlines()[-20:])
        raise RunFailed(f"{what} exited {done.returncode}:\n{tail}")
    return json.loads(lines[-1])


def spawn(plan: Plan, side: str, policy_name: str, n: int, run: int) -> RunResult:
    """One run in a fresh process; its result."""
    made = answer_of(
        child_command(plan, side, policy_name, n, run),
        f"{side} run {run + 1} of {policy_name} N={n:,}",
    )
    return RunResult.from_json(made)


def progress_line(result: RunResult, runs: int) -> str:
    """What a finished run says on stderr."""
    steps = result.step_ns
    return (
        f"{result.policy} N={result.n:,} {result.side} run {result.run + 1}/{runs}:"
        f" p50 {duration(percentile(steps, 50))}, mean {duration(sum(steps) / len(steps))},"
        f" worst {duration(max(steps))} ({result.seconds:.0f} s)"
    )


def measure(
    plan: Plan, progress: TextIO | None, *, policies: Sequence[str] = POLICIES
) -> tuple[list[LoopRow], list[RunResult]]:
    """Every configuration (sizes outermost), each run in a fresh process,
    alternating sides; the rows and every run."""
    rows: list[LoopRow] = []
    results: list[RunResult] = []
    for n in plan.sizes:
        for policy_name in policies:
            runs: list[RunResult] = []
            for run in range(plan.runs):
                for side in SIDES:
                    result = spawn(plan, side, policy_name, n, run)
                    runs.append(result)
                    if progress is not None:
                        progress.write(f"bench --vllm loop: {progress_line(result, plan.runs)}\n")
                        progress.flush()
            rows.append(loop_row(runs))
            results.extend(runs)
    return rows, results


def bench_vllm_loop(
    quick: bool,
    as_json: bool,
    out: TextIO,
    err: TextIO,
    *,
    loop_only: bool = False,
    runs: int | None = None,
) -> int:
    """``policy-kernel bench --vllm``: the serving loop's tables, then (unless
    ``loop_only``) the drain's, or one JSON document with both; exit status 0, 1
    when a run fails, 2 (one line on ``err``) when vLLM cannot be imported.
    ``runs`` (at least 1) replaces the plan's runs per side: more runs, pooled,
    narrow the run-to-run noise a verdict on a target has to beat."""
    reason = vllm_missing()
    if reason is not None:
        err.write(refusal(reason) + "\n")
        return EXIT_NO_VLLM
    plan = Plan.of(quick) if runs is None else replace(Plan.of(quick), runs=runs)
    started = time.perf_counter()
    err.write(
        f"bench --vllm loop: {len(plan.sizes) * len(POLICIES)} configurations,"
        f" {plan.runs} run(s) per side, {plan.steps:,} timed steps each\n"
    )
    err.flush()
    try:
        rows, results = measure(plan, err)
    except (RunFailed, subprocess.TimeoutExpired) as failed:
        err.write(f"bench --vllm loop: a run failed: {failed}\n")
        return EXIT_RUN_FAILED
    version = results[0].vllm if results else "?"
    loop_seconds = time.perf_counter() - started
    drain: list[vllm_step.StepRow] = []
    if not loop_only:
        err.write("bench --vllm drain ...\n")
        err.flush()
        drain = vllm_step.measure(
            Vllm(),
            vllm_step.QUICK_SIZES if quick else vllm_step.SIZES,
            vllm_step.QUICK_STEPS if quick else vllm_step.STEPS,
            progress=err,
        )
    total_seconds = time.perf_counter() - started
    err.write(
        f"bench --vllm: the serving loop took {loop_seconds:.0f} s, everything"
        f" {total_seconds:.0f} s\n"
    )
    if as_json:
        document: dict[str, object] = {
            "machine": machine(),
            "loop": loop_document(rows, results, version, quick),
            "loop_seconds": loop_seconds,
            "drain": None if loop_only else vllm_step.document(drain, version, quick),
        }
        out.write(json.dumps(document, indent=2) + "\n")
        return 0
    out.write(loop_report(rows, version, plan.steps, plan.runs) + "\n")
    if not loop_only:
        out.write("\n" + DRAIN_LABEL + "\n")
        out.write(drain_report(drain, version) + "\n")
    return 0


def drain_report(rows: Sequence[vllm_step.StepRow], version: str) -> str:
    """The drain's table (:mod:`oracle.bench.vllm_step`) and its count of targets."""
    met = sum(row.step_met for row in rows) + sum(row.add_met for row in rows)
    return (
        f"vLLM {version} Scheduler.schedule() alone, {vllm_step.BATCH} admissions per step,"
        " the admitted requests aborted untimed and as many added back (add_request timed"
        " per request)\n"
        + vllm_step.table(rows)
        + f"\nbench --vllm drain: {met} of {2 * len(rows)} targets met (diagnosis)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m oracle.bench.vllm_loop [--quick] [--json] [--loop-only]``."""
    parser = argparse.ArgumentParser(prog="python -m oracle.bench.vllm_loop")
    parser.add_argument("--quick", action="store_true", help="N = 1,000 and 10,000, fewer steps")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead")
    parser.add_argument("--loop-only", action="store_true", help="skip the drain table")
    parser.add_argument("--runs", type=positive, default=None, help="runs per side")
    parser.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--policy", choices=POLICIES, default="fcfs", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, default=SIZES[0], help=argparse.SUPPRESS)
    parser.add_argument("--run", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=STEPS, help=argparse.SUPPRESS)
    parser.add_argument("--warmup", type=int, default=WARMUP, help=argparse.SUPPRESS)
    parser.add_argument("--probe-steps", type=int, default=PROBE_STEPS, help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.child is None:
        return bench_vllm_loop(
            arguments.quick,
            arguments.json,
            sys.stdout,
            sys.stderr,
            loop_only=arguments.loop_only,
            runs=arguments.runs,
        )
    reason = vllm_missing()
    if reason is not None:
        sys.stderr.write(refusal(reason) + "\n")
        return EXIT_NO_VLLM
    plan = Plan((arguments.n,), arguments.steps, 1, arguments.probe_steps, arguments.warmup)
    result = run_child(arguments.child, arguments.policy, arguments.n, arguments.run, plan)
    sys.stdout.write(json.dumps(result.to_json()) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
