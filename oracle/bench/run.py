"""``policy-kernel bench``: every row, its ratio, its target and met / not met.

Measures in this process (no timed assertions anywhere): see docs/performance.md
for the method and a recorded run.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from oracle.bench import adapter, waiting
from oracle.bench.rotation import bench_rotation
from oracle.bench.rows import Row
from policy.waiting import (
    ascend_fcfs_lanes,
    fifo,
    make_policy,
    selection_path,
    static_priority,
    vllm_priority,
)


def paths_report() -> list[tuple[str, str]]:
    """Which selection path each benchmarked policy gets (``selection_path``)."""
    return [
        ("fifo()", selection_path(fifo())),
        ("static_priority()", selection_path(static_priority())),
        ("vllm_priority()", selection_path(vllm_priority())),
        ("ascend_fcfs_lanes()", selection_path(ascend_fcfs_lanes())),
        (
            "prompt / (1 + waited)",
            selection_path(make_policy(["prompt / (1 + waited)"], attributes=["prompt"]).unwrap()),
        ),
    ]


def sections(quick: bool) -> list[tuple[str, Callable[[], list[Row]]]]:
    """The benchmark's parts, in the order they run."""
    sizes = (1_000, 100_000) if quick else (1_000, 10_000, 100_000)

    def rotation() -> list[Row]:
        return bench_rotation(quick)

    return [
        ("queue operations", lambda: waiting.operation_rows(sizes, quick)),
        ("compiled scan", lambda: waiting.scan_rows(sizes[-1:] if quick else sizes, quick)),
        ("admission pass", lambda: waiting.pass_rows(quick)),
        ("building", lambda: waiting.build_rows(100_000, quick)),
        ("memory", lambda: waiting.memory_rows(100_000)),
        ("preemption", lambda: adapter.preemption_rows(1_000, 100_000, quick)),
        (
            "steady state",
            lambda: adapter.steady_state_rows(10_000, 20_000 if quick else adapter.STEADY_CYCLES),
        ),
        ("rotation", rotation),
        # quick: up to N = 10,000 (building three adapters of 100,000 takes most of a minute)
        (
            "drop-in vLLM queue",
            lambda: adapter.adapter_rows((1_000, 10_000) if quick else sizes, quick),
        ),
    ]


def _verdict(row: Row) -> str:
    met = row.met
    return "" if met is None else ("met" if met else "NOT MET")


def _number(value: float) -> str:
    if not math.isfinite(value):
        return str(value)
    return f"{value:,.1f}" if value >= 10 else f"{value:.2f}"


def _seconds(value: float) -> str:
    if value >= 1e-3:
        return f"{value * 1e3:.2f} ms"
    return f"{value * 1e6:.2f} µs"


def table(rows: Sequence[Row]) -> str:
    """The rows as a plain text table."""
    lines = [f"{'row':<64} {'kernel':>11} {'baseline':>11} {'ratio':>9} {'target':>8}  verdict"]
    for row in rows:
        memory = row.name.startswith("memory")
        kernel = f"{row.kernel_seconds:.0f} B" if memory else _seconds(row.kernel_seconds)
        baseline = f"{row.baseline_seconds:.0f} B" if memory else _seconds(row.baseline_seconds)
        target = (
            ""
            if row.target is None
            else (">= " if row.higher_is_better else "<= ") + _number(row.target)
        )
        ratio = _number(row.ratio)
        lines.append(
            f"{row.name:<64} {kernel:>11} {baseline:>11} {ratio:>9} {target:>8}  {_verdict(row)}"
        )
    return "\n".join(lines)


def machine() -> dict[str, object]:
    """What the figures were measured on."""
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }


def bench(quick: bool, as_json: bool, out: TextIO, err: TextIO) -> int:
    """Run every section and print the table (or one JSON document); exit status 0."""
    rows: list[Row] = []
    for title, section in sections(quick):
        if not as_json:
            err.write(f"bench: {title} ...\n")
            err.flush()
        rows.extend(section())
    if as_json:
        document = {
            "machine": machine(),
            "quick": quick,
            "paths": dict(paths_report()),
            "rows": [
                {
                    "name": row.name,
                    "n": row.n,
                    "kernel_seconds": row.kernel_seconds,
                    "baseline_seconds": row.baseline_seconds,
                    "ratio": row.ratio,
                    "target": row.target,
                    "higher_is_better": row.higher_is_better,
                    "met": row.met,
                    "note": row.note,
                }
                for row in rows
            ],
        }
        out.write(json.dumps(document, indent=2) + "\n")
        return 0
    out.write(
        "selection paths: " + ", ".join(f"{name} -> {path}" for name, path in paths_report()) + "\n"
    )
    out.write(table(rows) + "\n")
    met = sum(1 for row in rows if row.met)
    targeted = sum(1 for row in rows if row.met is not None)
    out.write(f"bench: {met} of {targeted} targets met ({machine()})\n")
    return 0
