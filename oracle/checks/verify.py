"""``policy-kernel verify``: run the exhaustive checks, report, write counterexamples.

Every check's domain is cut into units (see :mod:`oracle.checks.framework`).
The units of all checks form one task list in a fixed order; ``--shard K/N``
keeps every N-th task starting at the K-th, so N machines or batch jobs cover
the list between them, and ``--jobs`` spreads the kept tasks over processes.
The verdict of a shard speaks for its tasks only.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import re
import signal
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from returns.result import Failure

from oracle.checks.decisions import PUBLIC_DECISIONS
from oracle.checks.expressions import EXPRESSIONS
from oracle.checks.fast import COMPILED_KEYS, LANE_ANALYSIS, SELECTION_PATHS
from oracle.checks.framework import Check, Counterexample, Level, Partial, level_named, merge
from oracle.checks.grant_order import GRANT_ORDER
from oracle.checks.rotation_model import ROTATION_MODEL
from oracle.checks.rotation_paths import ROTATION_PATHS
from oracle.checks.selection import SELECTION
from policy.adapters.regular_files import write_regular_file
from policy.text import printable, quote

__all__ = [
    "CHECKS",
    "CheckResult",
    "Shard",
    "counterexample_file_json",
    "out_folder_problem",
    "parse_shard",
    "run_checks",
    "verify",
    "write_counterexample",
]

#: Every check ``verify`` runs, in the order it reports them.
CHECKS: tuple[Check, ...] = (
    PUBLIC_DECISIONS,
    GRANT_ORDER,
    ROTATION_MODEL,
    ROTATION_PATHS,
    SELECTION,
    EXPRESSIONS,
    COMPILED_KEYS,
    LANE_ANALYSIS,
    SELECTION_PATHS,
)


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int = 1
    count: int = 1


def parse_shard(text: str) -> Shard:
    """``"K/N"`` with 1 <= K <= N.

    >>> parse_shard("2/3")
    Shard(index=2, count=3)
    """
    matched = re.fullmatch(r"([0-9]{1,6})/([0-9]{1,6})", text.strip())
    if matched is None:
        raise ValueError(f"--shard must be K/N, such as 1/4, not {quote(text)}")
    index, count = int(matched.group(1)), int(matched.group(2))
    if not 1 <= index <= count:
        raise ValueError(f"--shard K/N needs 1 <= K <= N, not {quote(text)}")
    return Shard(index, count)


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check's merged result."""

    check: Check
    level: Level
    found: Partial
    units: int
    cpu_seconds: float

    @property
    def worst_above_bound(self) -> list[str]:
        bounds = self.check.paper_bounds(self.level)
        return [
            name
            for name, value in self.found.worst.items()
            if name in bounds and value > bounds[name].value
        ]

    @property
    def passed(self) -> bool:
        return self.found.disagreements == 0 and not self.worst_above_bound


def _tasks(level: Level, shard: Shard) -> list[tuple[int, object]]:
    heaviest_first = sorted(range(len(CHECKS)), key=lambda index: -CHECKS[index].weight)
    every = [(index, unit) for index in heaviest_first for unit in CHECKS[index].units(level)]
    return [task for number, task in enumerate(every) if number % shard.count == shard.index - 1]


def _run_task(task: tuple[Level, int, object]) -> tuple[int, Partial, float]:
    level, index, unit = task
    started = time.process_time()
    found = CHECKS[index].run(level, unit)
    return index, found, time.process_time() - started


def _leave_interrupts_to_the_parent() -> None:
    # Ctrl-C reaches the whole process group: only the parent reports it (one line).
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def run_checks(
    level: Level, jobs: int, shard: Shard, progress: TextIO | None = None
) -> list[CheckResult]:
    """Run the shard's tasks of every check at ``level`` on ``jobs`` processes (an
    unknown level is a ``ValueError``, :func:`~oracle.checks.framework.level_named`)."""
    level = level_named(level)
    tasks = [(level, index, unit) for index, unit in _tasks(level, shard)]
    parts: dict[int, list[Partial]] = {index: [] for index in range(len(CHECKS))}
    seconds = dict.fromkeys(range(len(CHECKS)), 0.0)
    results: Iterator[tuple[int, Partial, float]]
    pool = None
    if jobs > 1 and len(tasks) > 1:
        pool = multiprocessing.get_context("fork").Pool(
            min(jobs, len(tasks)), initializer=_leave_interrupts_to_the_parent
        )
        results = pool.imap_unordered(_run_task, tasks)
    else:
        results = map(_run_task, tasks)
    finished = False
    try:
        for done, (index, found, cpu) in enumerate(results, start=1):
            parts[index].append(found)
            seconds[index] += cpu
            if progress is not None:
                progress.write(f"\rverify: {done}/{len(tasks)} units done ({CHECKS[index].name})")
                progress.flush()
        finished = True
    finally:
        if pool is not None:
            # Ctrl-C or an error: stop the workers now (close + join would wait for
            # every queued task, for ever if a worker is gone).
            if finished:
                pool.close()
            else:
                pool.terminate()
            pool.join()
    if progress is not None:
        progress.write("\n")
    return [
        CheckResult(check, level, merge(parts[index]), len(parts[index]), seconds[index])
        for index, check in enumerate(CHECKS)
        if parts[index]
    ]


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def out_folder_problem(folder: Path) -> str | None:
    """Why counterexample files could not be written in ``folder``, or None: checked
    before an explicit ``--out``'s run, so that a verdict is not lost after it. The
    folder need not exist yet (it is created when a file is written), but its
    nearest existing ancestor must be a folder this process may write in."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        if existing.is_symlink():  # a dangling link: no folder can be made there
            return f"{_folder_text(folder)} is a link to nothing"
        existing = existing.parent
    if not existing.is_dir():
        if existing == folder:
            return f"{_folder_text(folder)} is not a folder"
        return f"{_folder_text(folder)} is under {_folder_text(existing)}, which is not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{_folder_text(existing)} is not a folder this process may write in"
    return None


def _folder_text(folder: Path) -> str:
    return printable(str(folder))


def _write_counterexample(result: CheckResult, folder: Path) -> Path | str | None:
    """The smallest replayable counterexample of a failed check, as a scenario file:
    its path, or why it could not be written (the report then shows the scenario)."""
    replayable = [c for c in result.found.counterexamples if c.scenario]
    if not replayable:
        return None
    return write_counterexample(folder, result.check.name, replayable[0].scenario)


def write_counterexample(folder: Path, name: str, document: Mapping[str, object]) -> Path | str:
    """``document`` written as ``folder/counterexample-NAME.json`` (``NAME`` as a slug):
    the path, or why it could not be written. ``verify`` and ``verify
    --against-command`` write their counterexamples so, by the project's one file
    rule (only a regular file is written: a FIFO in its place is refused, unblocked)."""
    path = folder / f"counterexample-{_slug(name)}.json"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        return f"cannot write {_folder_text(path)}: {printable(error.strerror or str(error))}"
    text = json.dumps(document, indent=2, allow_nan=False) + "\n"
    written = write_regular_file(path, text.encode("utf-8"))
    if isinstance(written, Failure):
        return f"cannot write {_folder_text(path)}: {written.failure().reason}"
    return path


def counterexample_file_json(written: Path | str | None) -> dict[str, object]:
    """A report's JSON field for its counterexample file: ``counterexample_file`` (the
    path, or None) and, when it could not be written, ``counterexample_file_error``."""
    return {
        "counterexample_file": str(written) if isinstance(written, Path) else None,
        **({"counterexample_file_error": written} if isinstance(written, str) else {}),
    }


def _counterexample_json(counterexample: Counterexample) -> dict[str, object]:
    return {
        "summary": counterexample.summary,
        "size": counterexample.size,
        "scenario": dict(counterexample.scenario) or None,
    }


def _result_json(result: CheckResult, written: Path | str | None) -> dict[str, object]:
    bounds = result.check.paper_bounds(result.level)
    worst: dict[str, object] = {}
    for name, value in sorted(result.found.worst.items()):
        bound = bounds.get(name)
        worst[name] = {
            "measured": value,
            "bound": None if bound is None else bound.value,
            "derivation": None if bound is None else bound.derivation,
        }
    return {
        "name": result.check.name,
        "description": result.check.description,
        "bounds": dict(result.check.bounds(result.level)),
        "units": result.units,
        "counts": dict(sorted(result.found.counts.items())),
        "worst": worst,
        "disagreements": result.found.disagreements,
        "worst_above_bound": result.worst_above_bound,
        "counterexamples": [_counterexample_json(c) for c in result.found.counterexamples],
        **counterexample_file_json(written),
        "cpu_seconds": round(result.cpu_seconds, 2),
        "passed": result.passed,
    }


def _render(result: CheckResult, written: Path | str | None, out: TextIO) -> None:
    check = result.check
    verdict = "PASS" if result.passed else "FAIL"
    out.write(
        f"{check.name}: {verdict} ({result.cpu_seconds:.1f} s of CPU, {result.units} units)\n"
    )
    out.write(f"  {check.description}\n")
    for name, text in check.bounds(result.level).items():
        out.write(f"  bound   {name}: {text}\n")
    for name, count in sorted(result.found.counts.items()):
        out.write(f"  count   {name}: {count:,}\n")
    bounds = check.paper_bounds(result.level)
    for name, value in sorted(result.found.worst.items()):
        bound = bounds.get(name)
        if bound is None:
            out.write(f"  worst   {name}: {value}\n")
        else:
            mark = "within" if value <= bound.value else "ABOVE"
            out.write(f"  worst   {name}: {value} ({mark} paper bound {bound.value})\n")
    if result.found.disagreements:
        out.write(f"  {result.found.disagreements:,} disagreements; the smallest:\n")
        for counterexample in result.found.counterexamples:
            out.write(f"    {counterexample.summary}\n")
    if isinstance(written, Path):
        shown = _folder_text(written)
        out.write(f"  counterexample written to {shown} (replay it: policy-kernel replay {shown})")
        out.write("\n")
    elif written is not None:  # not lost: the scenario file's text, here
        out.write(f"  counterexample not written ({written}); its scenario file:\n")
        smallest = next(c for c in result.found.counterexamples if c.scenario)
        out.write(json.dumps(smallest.scenario, indent=2, allow_nan=False) + "\n")
    out.write("\n")


def verify(
    level: Level,
    *,
    jobs: int | None = None,
    shard: Shard = Shard(),
    as_json: bool = False,
    out_folder: Path = Path(),
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Run the checks and report; 0 when every check passes, 1 otherwise (also when
    a counterexample file cannot be written: the report then holds its text). An
    unknown level is a ``ValueError`` before anything runs."""
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    started = time.perf_counter()
    progress = err if err.isatty() else None
    results = run_checks(level, workers, shard, progress)
    wall = time.perf_counter() - started
    written = {
        result.check.name: None if result.passed else _write_counterexample(result, out_folder)
        for result in results
    }
    passed = sum(result.passed for result in results)
    failed = len(results) - passed
    if as_json:
        document = {
            "level": level,
            "shard": f"{shard.index}/{shard.count}",
            "jobs": workers,
            "wall_seconds": round(wall, 2),
            "checks": [_result_json(r, written[r.check.name]) for r in results],
            "passed": failed == 0,
        }
        out.write(json.dumps(document, allow_nan=False) + "\n")
    else:
        shard_text = "" if shard.count == 1 else f", shard {shard.index}/{shard.count}"
        out.write(f"policy-kernel verify: {level} bounds, {workers} jobs{shard_text}\n\n")
        for result in results:
            _render(result, written[result.check.name], out)
        out.write(f"verify: {passed} passed, {failed} failed in {math.ceil(wall)} s\n")
    return 0 if failed == 0 else 1


def level_of(quick: bool, deep: bool) -> Level:
    return "quick" if quick else "deep" if deep else "default"
