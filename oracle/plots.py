"""Pictures of runs (issue 10, part 4): pure data functions, and PNG writers.

The ``*_data`` functions turn a run into plain, frozen records (no matplotlib
needed, so tests check them exactly). The ``write_*_png`` functions draw those
records; they import matplotlib lazily, with the non-interactive 'Agg' backend,
and raise a :class:`RuntimeError` naming the ``[plot]`` extra when it is missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oracle.harness.admission_run import AdmissionRun
from oracle.harness.rotation_replay import RotationRun
from oracle.simulate.run import Comparison
from policy import Branch, RequestId

__all__ = [
    "AdmissionTimeline",
    "GrantTimeline",
    "RequestSpan",
    "SlotTick",
    "WaitDistribution",
    "WaitRow",
    "admission_timeline_data",
    "grant_timeline_data",
    "wait_distribution_data",
    "write_admission_timeline_png",
    "write_grant_timeline_png",
    "write_wait_distribution_png",
]

MISSING = "install the [plot] extra: pip install -e '.[plot]'"


# ------------------------------------------------------------------ rotation


@dataclass(frozen=True, slots=True)
class SlotTick:
    """One tick of the speculative slot: who ran a slice in it (None: nobody)."""

    tick: int
    holder: RequestId | None
    use: str | None  # "speculative", "classic" or "idle" (the kernel's TickUse)


@dataclass(frozen=True, slots=True)
class GrantTimeline:
    """Who holds the slot, tick by tick, with parks and promotions."""

    scenario: str
    budget: int
    requests: tuple[RequestId, ...]  # in file order
    arrivals: tuple[tuple[int, RequestId], ...]
    slots: tuple[SlotTick, ...]
    parks: tuple[tuple[int, RequestId], ...]  # a grant ended with the job parked
    promotions: tuple[tuple[int, RequestId], ...]  # a waiter or parked job granted the slot
    endings: tuple[tuple[int, RequestId, str], ...]


_PROMOTIONS = (Branch.WAITER_SLICE0, Branch.PARKED_PROMOTION)


def grant_timeline_data(run: RotationRun[Any]) -> GrantTimeline:
    """The slot's holder per tick of a :func:`replay_rotation` run, and its parks,
    promotions and endings (each tagged with the tick it happened in)."""
    slots: list[SlotTick] = []
    parks: list[tuple[int, RequestId]] = []
    promotions: list[tuple[int, RequestId]] = []
    endings: list[tuple[int, RequestId, str]] = []
    for record in run.ticks:
        holder: RequestId | None = None
        use: str | None = None
        for _, step in record.steps:
            outcome = step.outcome
            if outcome.use is not None:
                use = outcome.use.value
            if outcome.action is not None and holder is None:
                holder = outcome.action.request
            if outcome.action is not None and any(b in outcome.branches for b in _PROMOTIONS):
                promotions.append((record.tick, outcome.action.request))
            parks.extend((record.tick, g.request) for g in outcome.grants if g.parked)
            endings.extend((record.tick, e.request, e.ending.value) for e in outcome.ended)
        slots.append(SlotTick(record.tick, holder, use))
    scenario = run.scenario
    return GrantTimeline(
        scenario.name,
        scenario.budget,
        tuple(r.id for r in scenario.requests),
        tuple((r.arrive, r.id) for r in scenario.requests),
        tuple(slots),
        tuple(parks),
        tuple(promotions),
        tuple(endings),
    )


# ----------------------------------------------------------------- admission


@dataclass(frozen=True, slots=True)
class RequestSpan:
    """One request of an admission run (times in the run's clock)."""

    request: RequestId
    arrived: float
    first_wait_end: float | None  # its first admission; None: never admitted
    admissions: tuple[float, ...]  # every admission, re-admissions included
    preemptions: int
    finished: float | None


@dataclass(frozen=True, slots=True)
class AdmissionTimeline:
    scenario: str
    engine: str
    requests: tuple[RequestSpan, ...]  # in serial (arrival) order
    end: float  # the last time the run saw (arrival, admission or finish)


def admission_timeline_data(run: AdmissionRun) -> AdmissionTimeline:
    """Arrivals, the first waiting span, admissions and preemptions of every request.

    The records give when a request was preempted only as a count (each re-admission
    follows one), so a re-wait after a preemption has no start time here."""
    spans = tuple(
        RequestSpan(
            r.id,
            r.enqueued_at,
            r.admitted_at[0] if r.admitted_at else None,
            r.admitted_at,
            r.preemptions,
            r.finished_at,
        )
        for r in sorted(run.records, key=lambda record: record.serial)
    )
    times = [s.arrived for s in spans] + list(run.admitted_at)
    times += [s.finished for s in spans if s.finished is not None]
    engine = type(run.scenario.engine).__name__.removesuffix("Engine").lower()
    return AdmissionTimeline(run.scenario.name, engine, spans, max(times, default=0.0))


# -------------------------------------------------------------- simulation


@dataclass(frozen=True, slots=True)
class WaitRow:
    """Waiting time (seconds from arrival to first admission) of one class under one policy."""

    policy: str
    request_class: str
    requests: int
    p50: float | None
    p95: float | None
    p99: float | None
    longest: float | None


@dataclass(frozen=True, slots=True)
class WaitDistribution:
    seed: int
    quick: bool
    policies: tuple[str, ...]
    classes: tuple[str, ...]
    rows: tuple[WaitRow, ...]  # policy-major, in the comparison's order


def wait_distribution_data(comparison: Comparison) -> WaitDistribution:
    """The waiting-time percentiles per policy and class of a :func:`compare` result
    (the comparison keeps percentiles, not every wait)."""
    rows = tuple(
        WaitRow(
            report.policy,
            name,
            stats.requests,
            stats.wait_p50,
            stats.wait_p95,
            stats.wait_p99,
            stats.longest_starvation,
        )
        for report in comparison.admission
        for name, stats in report.classes.items()
    )
    classes = tuple(dict.fromkeys(row.request_class for row in rows))
    policies = tuple(report.policy for report in comparison.admission)
    return WaitDistribution(comparison.seed, comparison.quick, policies, classes, rows)


# ------------------------------------------------------------------ drawing


def _pyplot() -> Any:
    """matplotlib's pyplot on the 'Agg' backend, or a RuntimeError naming the extra."""
    try:
        import matplotlib  # noqa: PLC0415
    except ImportError as error:
        raise RuntimeError(MISSING) from error
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def _save(plt: Any, figure: Any, path: str | Path) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(target, format="png", dpi=110)
    plt.close(figure)
    return target


def write_grant_timeline_png(data: GrantTimeline, path: str | Path) -> Path:
    """Draw who holds the speculative slot per tick; return the written path."""
    plt = _pyplot()
    rows = {request: i for i, request in enumerate(data.requests)}
    colours = plt.get_cmap("tab10")
    width = max(9.0, 0.35 * len(data.slots) + 4)
    figure, axes = plt.subplots(figsize=(width, 1.0 + 0.6 * len(rows)))
    for slot in data.slots:
        if slot.holder is not None:
            row = rows[slot.holder]
            axes.broken_barh([(slot.tick, 1)], (row - 0.35, 0.7), color=colours(row % 10))
    marks = (
        (data.arrivals, "v", "black", "arrived", 0.45),
        (data.promotions, "^", "green", "granted the slot (promotion)", 0.45),
        (data.parks, "x", "red", "parked (grant ended)", -0.45),
    )
    for events, marker, colour, label, offset in marks:
        if events:
            axes.scatter(
                [tick + 0.5 for tick, _ in events],
                [rows[request] + offset for _, request in events],
                marker=marker,
                color=colour,
                label=label,
                zorder=3,
            )
    if data.endings:
        axes.scatter(
            [tick + 1 for tick, _, _ in data.endings],
            [rows[request] for _, request, _ in data.endings],
            marker="|",
            s=300,
            color="black",
            label="ended",
            zorder=3,
        )
    axes.set_yticks(range(len(rows)), [str(r) for r in rows])
    axes.set_ylim(-0.7, len(rows) - 0.3)
    axes.set_xlabel("tick (a filled box: the request ran a slice in that tick)")
    axes.set_ylabel("request")
    axes.set_title(
        "Who holds the speculative slot, tick by tick\n"
        f"{data.scenario} (grant budget {data.budget})"
    )
    axes.grid(axis="x", alpha=0.3)
    axes.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return _save(plt, figure, path)


def write_admission_timeline_png(data: AdmissionTimeline, path: str | Path) -> Path:
    """Draw each request's wait, admissions and preemptions; return the written path."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(9.0, 1.8 + 0.5 * len(data.requests)))
    labelled: set[str] = set()

    def label(text: str) -> str | None:
        if text in labelled:
            return None
        labelled.add(text)
        return text

    for row, span in enumerate(data.requests):
        wait_end = data.end if span.first_wait_end is None else span.first_wait_end
        axes.hlines(
            row,
            span.arrived,
            wait_end,
            color="orange",
            linewidth=6,
            label=label("waiting for its first admission"),
        )
        axes.scatter(
            [span.arrived], [row], marker="o", color="black", zorder=3, label=label("arrived")
        )
        if span.admissions:
            axes.scatter(
                span.admissions,
                [row] * len(span.admissions),
                marker="^",
                color="green",
                s=70,
                zorder=3,
                label=label("admitted"),
            )
        if span.finished is not None:
            axes.scatter(
                [span.finished], [row], marker="s", color="blue", zorder=3, label=label("finished")
            )
        if span.preemptions:
            axes.annotate(
                f"preempted x{span.preemptions}",
                (max(span.admissions), row),
                xytext=(6, 6),
                textcoords="offset points",
                color="red",
            )
    axes.set_yticks(range(len(data.requests)), [str(s.request) for s in data.requests])
    axes.set_ylim(len(data.requests) - 0.5, -0.7)
    axes.set_xlabel("time (scenario clock)")
    axes.set_ylabel("request (in arrival order)")
    axes.set_title(f"Arrivals, waits and admissions\n{data.scenario} ({data.engine} engine)")
    axes.grid(axis="x", alpha=0.3)
    axes.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return _save(plt, figure, path)


def write_wait_distribution_png(data: WaitDistribution, path: str | Path) -> Path:
    """Draw p50/p95/p99 waits per class, one group of bars per policy."""
    plt = _pyplot()
    figure, panels = plt.subplots(
        1, len(data.classes), figsize=(4.5 * max(1, len(data.classes)), 4.5), squeeze=False
    )
    by_key = {(row.policy, row.request_class): row for row in data.rows}
    quantiles = (("p50", "median"), ("p95", "95th percentile"), ("p99", "99th percentile"))
    bar = 0.8 / len(quantiles)
    for axes, name in zip(panels[0], data.classes, strict=True):
        for i, (field, text) in enumerate(quantiles):
            heights = []
            for policy in data.policies:
                row = by_key.get((policy, name))
                value = None if row is None else getattr(row, field)
                heights.append(0.0 if value is None else value)
            axes.bar(
                [p + (i - 1) * bar for p in range(len(data.policies))], heights, bar, label=text
            )
        axes.set_xticks(range(len(data.policies)), data.policies, rotation=30, ha="right")
        axes.set_title(f"{name} requests")
        axes.set_ylabel("wait until first admission (s)")
        axes.grid(axis="y", alpha=0.3)
    panels[0][0].legend(fontsize="small")
    mode = "quick" if data.quick else "full"
    figure.suptitle(f"Waiting time by policy and request class (seed {data.seed}, {mode} run)")
    return _save(plt, figure, path)
