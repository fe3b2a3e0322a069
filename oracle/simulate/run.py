"""The policy comparison: one seeded workload through the step engine under several
waiting policies, and a high-lane flood through the rotation protocol.

Entry point: :func:`simulate` (the ``policy-kernel simulate`` subcommand). The
report gives, per policy and request class, waiting time and time to first token
(p50/p95/p99), admissions, preemptions and the longest starvation; for rotation,
the normal-lane request's grants and its longest gap between grants, checked
against the bound of docs/rotation.md ("Bounds"): an entry with ``k`` entries
ahead of it is granted within ``skip_cap + 1 + k`` decisions, so at most
``skip_cap + k`` other grants come between two of its grants.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TextIO

from oracle.harness.admission_scenario import AdmissionScenario, StepEngine, StepRequest
from oracle.harness.rotation_replay import counted_for, replay_rotation
from oracle.harness.rotation_scenario import RotationScenario
from oracle.harness.step_engine import run_step
from oracle.simulate.progress import Progress, progress_on
from oracle.simulate.workload import (
    CLASSES,
    NORMAL_ID,
    FloodShape,
    WorkloadShape,
    admission_workload,
    request_class,
    rotation_flood,
)
from policy import Ending
from policy.rotation import SKIP_CAP
from policy.waiting import QueuePolicy, make_policy, selection_path
from policy.waiting.policies import ASCEND_LANES_KEY

__all__ = [
    "AGING_WAIT",
    "SKIP_CAP_OFF",
    "ClassStats",
    "Comparison",
    "PolicyReport",
    "RotationReport",
    "as_document",
    "compare",
    "percentile",
    "render",
    "simulate",
]

#: ``max_wait`` of the aging policies, seconds.
AGING_WAIT = 0.5
#: A skip cap out of reach: lane order alone (as the golden ``lanes-without-skip-cap``).
SKIP_CAP_OFF = 1_000_000_000
#: The engine every admission policy runs on.
ENGINE = StepEngine(
    budget=512, chunk=512, iteration_cost=0.04, max_running=32, blocks=1024, block_size=16
)
QUICK_SHAPE = WorkloadShape(requests=400, rate=23.0)  # loaded enough to queue
QUICK_FLOOD = FloodShape(flood_ticks=200, normal_slices=20)

# The true output length is hidden from keys, as the step engine's loader declares it.
_HIDDEN_OUT = {"out": "hidden"}
# The Ascend lanes as the older engines wrote aging, with keys fixed at enqueue:
# ``now - queued`` is 0 then, so the aging term never holds (docs/waiting.md).
_ENQUEUE_LANES_KEY = ASCEND_LANES_KEY.replace("waited >= max_wait", "now - queued >= max_wait")


def _policy(
    keys: list[str] | None,
    attributes: Sequence[str] = (),
    constants: dict[str, float] | None = None,
    *,
    enqueue: bool = False,
) -> QueuePolicy:
    visible = dict.fromkeys(attributes, "visible")
    made = make_policy(
        keys,
        constants=constants,
        attributes={**visible, **_HIDDEN_OUT},
        timing="enqueue" if enqueue else "selection",
    )
    return made.unwrap()


def policies(short_tokens: int) -> tuple[tuple[str, QueuePolicy], ...]:
    """The admission policies compared, by name.

    >>> [name for name, _ in policies(256)][:2]
    ['fifo', 'static-priority']
    """
    lanes = ["immediate", "prompt"]

    def ascend(max_wait: float) -> dict[str, float]:
        return {"short_tokens": float(short_tokens), "max_wait": max_wait}

    return (
        ("fifo", _policy(None)),
        ("static-priority", _policy(["priority"], ["priority"], enqueue=True)),
        ("ascend-no-aging", _policy([ASCEND_LANES_KEY], lanes, ascend(0.0))),
        ("ascend-aging", _policy([ASCEND_LANES_KEY], lanes, ascend(AGING_WAIT))),
        (
            "ascend-aging-at-enqueue",
            _policy([_ENQUEUE_LANES_KEY], [*lanes, "queued"], ascend(AGING_WAIT), enqueue=True),
        ),
    )


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank ``q``-th percentile; None for no values.

    >>> percentile([3.0, 1.0, 2.0, 4.0], 50), percentile([1.0, 2.0], 99), percentile([], 50)
    (2.0, 2.0, None)
    """
    return _ranked(sorted(values), q)


def _ranked(ordered: Sequence[float], q: float) -> float | None:
    """:func:`percentile` of values already sorted."""
    if not ordered:
        return None
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


@dataclass(frozen=True, slots=True)
class ClassStats:
    """One request class under one policy (times in seconds)."""

    requests: int
    wait_p50: float | None
    wait_p95: float | None
    wait_p99: float | None
    ttft_p50: float | None
    ttft_p95: float | None
    ttft_p99: float | None
    admissions: int  # re-admissions after a preemption included
    preemptions: int
    longest_starvation: float | None  # the longest wait for a first admission


@dataclass(frozen=True, slots=True)
class PolicyReport:
    policy: str
    path: str  # the kernel's selection path for this policy
    classes: dict[str, ClassStats]
    seconds: float  # wall time of this run
    #: Every class's waits for a first admission, sorted (for the pictures; not in
    #: the JSON document, which keeps the percentiles).
    waits: dict[str, tuple[float, ...]] = field(default_factory=dict, repr=False)


@dataclass
class _ClassRuns:
    """What one class's requests did under one policy, gathered in one pass."""

    requests: int = 0
    waits: list[float] = field(default_factory=list)  # for a first admission
    ttfts: list[float] = field(default_factory=list)
    admissions: int = 0
    preemptions: int = 0

    def stats(self, waits: Sequence[float]) -> ClassStats:
        """The class's report line; ``waits`` are its waits, sorted once by the caller."""
        ttfts = sorted(self.ttfts)
        return ClassStats(
            requests=self.requests,
            wait_p50=_ranked(waits, 50),
            wait_p95=_ranked(waits, 95),
            wait_p99=_ranked(waits, 99),
            ttft_p50=_ranked(ttfts, 50),
            ttft_p95=_ranked(ttfts, 95),
            ttft_p99=_ranked(ttfts, 99),
            admissions=self.admissions,
            preemptions=self.preemptions,
            longest_starvation=waits[-1] if waits else None,
        )


def run_policy(
    name: str, policy: QueuePolicy, requests: tuple[StepRequest, ...], short_tokens: int
) -> PolicyReport:
    """Play ``requests`` through the step engine under ``policy``."""
    started = time.perf_counter()
    scenario = AdmissionScenario(f"simulate-{name}", "", ENGINE, policy, requests, None)
    run = run_step(scenario)
    by_class = {c: _ClassRuns() for c in CLASSES}
    for request, record in zip(requests, run.records, strict=True):
        runs = by_class[request_class(request, short_tokens)]
        runs.requests += 1
        runs.admissions += len(record.admitted_at)
        runs.preemptions += record.preemptions
        if record.admitted_at:
            runs.waits.append(record.admitted_at[0] - record.enqueued_at)
        if record.first_token_at is not None:
            runs.ttfts.append(record.first_token_at - record.enqueued_at)
    waits = {c: tuple(sorted(runs.waits)) for c, runs in by_class.items()}
    return PolicyReport(
        name,
        selection_path(policy),
        {c: runs.stats(waits[c]) for c, runs in by_class.items()},
        time.perf_counter() - started,
        waits,
    )


@dataclass(frozen=True, slots=True)
class RotationReport:
    """The normal-lane request under a high-lane flood, for one budget and skip cap."""

    budget: int
    skip_cap: int
    skip_cap_on: bool
    normal_grants: int  # grants of the normal-lane request (0: it fell back to classic)
    normal_slices: int  # speculative slices it ran
    normal_ending: str
    longest_gap_grants: int | None  # other grants between two of its grants
    longest_gap_ticks: int | None  # ticks between two of its speculative slices
    gap_bound: int | None  # SKIP_CAP + k at the worst park (docs/rotation.md, "Bounds")
    within_bound: bool | None  # the longest gap within the skip cap's bound
    first_grant_after: int | None  # ticks from N's arrival to its first speculative slice
    high_grants: int
    high_classic: int  # high-lane requests that fell back to classic decode
    ticks: int


def run_rotation(
    seed: int, flood: FloodShape, budget: int, skip_cap: int, name: str
) -> RotationReport:
    """Play the flood through the rotation driver; measure the normal-lane request."""
    requests = rotation_flood(seed, flood)
    scenario = RotationScenario(name, "", budget, skip_cap, "always", requests, None)
    run = replay_rotation(scenario)
    grant_index = 0
    normal_grants: list[int] = []  # index in the grant log of each of N's grants
    normal_ticks: list[int] = []  # ticks in which N ran a slice
    bounds: list[int] = []  # skip_cap + k at each park of N
    for record in run.ticks:
        for _, step in record.steps:
            outcome = step.outcome
            if counted_for(outcome) == NORMAL_ID:
                normal_ticks.append(record.tick)
            for grant in outcome.grants:
                if grant.request == NORMAL_ID:
                    normal_grants.append(grant_index)
                    if grant.parked:
                        ahead = step.state.backlog.position(NORMAL_ID).value_or(0)
                        # The bound the skip cap guarantees; with the cap off
                        # it is what the run is measured against.
                        bounds.append(SKIP_CAP + ahead)
                grant_index += 1
    gaps = [b - a - 1 for a, b in itertools.pairwise(normal_grants)]
    tick_gaps = [b - a - 1 for a, b in itertools.pairwise(normal_ticks)]
    outcomes = run.outcomes
    longest = max(gaps, default=None)
    bound = max(bounds, default=None)
    return RotationReport(
        budget=budget,
        skip_cap=skip_cap,
        skip_cap_on=skip_cap == SKIP_CAP,
        normal_grants=len(normal_grants),
        normal_slices=len(normal_ticks),
        normal_ending=outcomes[NORMAL_ID].value,
        longest_gap_grants=longest,
        longest_gap_ticks=max(tick_gaps, default=None),
        gap_bound=bound,
        within_bound=None if longest is None or bound is None else longest <= bound,
        first_grant_after=normal_ticks[0] - flood.normal_arrives if normal_ticks else None,
        high_grants=grant_index - len(normal_grants),  # every grant is N's or the flood's
        high_classic=sum(
            1 for r, ending in outcomes.items() if r != NORMAL_ID and ending is Ending.CLASSIC
        ),
        ticks=len(run.ticks),
    )


@dataclass(frozen=True, slots=True)
class Comparison:
    seed: int
    quick: bool
    requests: int
    admission: tuple[PolicyReport, ...]
    rotation: tuple[RotationReport, ...]
    seconds: float


def compare(seed: int, *, quick: bool = False, progress: Progress | None = None) -> Comparison:
    """Run the whole comparison (the step engine under every policy, then the flood)."""
    started = time.perf_counter()
    shape = QUICK_SHAPE if quick else WorkloadShape()
    flood = QUICK_FLOOD if quick else FloodShape()
    requests = admission_workload(seed, shape)
    named = policies(shape.short_tokens)
    rotations = [(b, cap) for b in (0, 1, 8) for cap in (SKIP_CAP, SKIP_CAP_OFF)]
    total = len(named) + len(rotations)
    done = 0

    def tell(what: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, what, time.perf_counter() - started)

    admission: list[PolicyReport] = []
    for name, policy in named:
        admission.append(run_policy(name, policy, requests, shape.short_tokens))
        tell(f"step engine, {name}")
    rotation: list[RotationReport] = []
    for budget, cap in rotations:
        label = f"rotation budget {budget}, skip cap {'on' if cap == SKIP_CAP else 'off'}"
        rotation.append(run_rotation(seed, flood, budget, cap, label))
        tell(label)
    return Comparison(
        seed, quick, len(requests), tuple(admission), tuple(rotation), time.perf_counter() - started
    )


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f}"


def _opt(value: object) -> str:
    return "-" if value is None else str(value)


def render(comparison: Comparison) -> str:
    """The comparison as text tables."""
    lines = [
        f"policy comparison: seed {comparison.seed}, {comparison.requests} requests"
        f"{' (quick)' if comparison.quick else ''}, {comparison.seconds:.1f} s",
        "",
        "step engine (times in ms; wait = enqueue to first admission, ttft = to first token)",
        f"{'policy':<24} {'class':<10} {'n':>5} {'wait p50':>9} {'p95':>7} {'p99':>7}"
        f" {'ttft p50':>9} {'p95':>7} {'p99':>7} {'admits':>7} {'preempt':>8} {'starved':>8}",
    ]
    for report in comparison.admission:
        for cls, s in report.classes.items():
            lines.append(
                f"{report.policy:<24} {cls:<10} {s.requests:>5} {_ms(s.wait_p50):>9}"
                f" {_ms(s.wait_p95):>7} {_ms(s.wait_p99):>7} {_ms(s.ttft_p50):>9}"
                f" {_ms(s.ttft_p95):>7} {_ms(s.ttft_p99):>7} {s.admissions:>7}"
                f" {s.preemptions:>8} {_ms(s.longest_starvation):>8}"
            )
    lines += [
        "",
        "rotation under a high-lane flood: the normal-lane request N"
        " (gap = other grants between two of N's grants; bound = SKIP_CAP + k, k entries"
        " ahead of N when it parked: the skip cap's guarantee, docs/rotation.md;"
        " first = ticks from N's arrival to its first slice)",
        f"{'budget':>6} {'skip cap':<12} {'N grants':>8} {'N slices':>8} {'N ending':<17}"
        f" {'first':>5} {'gap':>5} {'bound':>6} {'within':>6} {'gap ticks':>9} {'H grants':>8}"
        f" {'H classic':>9}",
    ]
    for r in comparison.rotation:
        cap = f"on ({r.skip_cap})" if r.skip_cap_on else "off"
        lines.append(
            f"{r.budget:>6} {cap:<12} {r.normal_grants:>8} {r.normal_slices:>8}"
            f" {r.normal_ending:<17} {_opt(r.first_grant_after):>5}"
            f" {_opt(r.longest_gap_grants):>5} {_opt(r.gap_bound):>6}"
            f" {_opt(r.within_bound):>6} {_opt(r.longest_gap_ticks):>9} {r.high_grants:>8}"
            f" {r.high_classic:>9}"
        )
    return "\n".join(lines)


def as_document(comparison: Comparison) -> dict[str, object]:
    """The comparison as one JSON object (times in seconds; percentiles, not every wait)."""
    document = asdict(comparison)
    for report in document["admission"]:
        del report["waits"]
    return document


def simulate(
    *,
    seed: int,
    as_json: bool,
    out: TextIO,
    err: TextIO,
    quick: bool = False,
    picture: Callable[[Comparison], bool] | None = None,
) -> int:
    """Run the comparison and write it to ``out`` (text tables, or one JSON object).

    Progress goes to ``err``: a bar on a terminal with the [progress] extra, else one
    line per run. Then ``picture`` draws the comparison (``False``: it could not).
    Returns the exit status: 0, or 2 when the picture was not written."""

    progress = progress_on(err)
    try:
        comparison = compare(seed, quick=quick, progress=progress)
    finally:
        progress.close()
    if as_json:
        out.write(json.dumps(as_document(comparison), allow_nan=False) + "\n")
    else:
        out.write(render(comparison) + "\n")
    return 0 if picture is None or picture(comparison) else 2
