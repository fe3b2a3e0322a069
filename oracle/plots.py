"""Pictures of runs (issue 10, part 4): pure data functions, and PNG writers.

The ``*_data`` functions turn a run into plain, frozen records (no matplotlib
needed, so tests check them exactly). The ``write_*_png`` functions draw those
records; they import matplotlib lazily, with the non-interactive 'Agg' backend,
and raise a :class:`RuntimeError` naming the ``[plot]`` extra when it is missing.
Each picture is drawn in memory and written by :func:`write_png`, through the
project's one file rule: only a regular file is written, never a FIFO or a device.
"""

from __future__ import annotations

import io
import warnings
from bisect import bisect_right
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from returns.result import Failure

from oracle.harness.admission_run import AdmissionRun
from oracle.harness.rotation_replay import RotationRun, counted_for
from oracle.simulate.run import Comparison
from policy import Branch, RequestId
from policy.adapters.regular_files import write_regular_file
from policy.text import cut

__all__ = [
    "AdmissionTimeline",
    "GrantTimeline",
    "RequestSpan",
    "SlotTick",
    "WaitDistribution",
    "WaitRow",
    "admission_timeline_data",
    "grant_timeline_data",
    "require_matplotlib",
    "wait_distribution_data",
    "write_admission_timeline_png",
    "write_grant_timeline_png",
    "write_png",
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
            counted = counted_for(outcome)  # a cancelled no-op round counts too
            if holder is None:
                holder = counted
            if counted is not None and any(b in outcome.branches for b in _PROMOTIONS):
                promotions.append((record.tick, counted))
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
    #: Each stay in the waiting queue: from arrival, then from each preemption, to the
    #: admission that ended it (None: still waiting when the run ended).
    waits: tuple[tuple[float, float | None], ...]
    admissions: tuple[float, ...]  # every admission, re-admissions included
    preempted_at: tuple[float, ...]
    finished: float | None


@dataclass(frozen=True, slots=True)
class AdmissionTimeline:
    scenario: str
    engine: str
    requests: tuple[RequestSpan, ...]  # in serial (arrival) order
    end: float  # the last time the run saw (arrival, admission, preemption or finish)


def _waits(
    arrived: float, admissions: tuple[float, ...], preempted_at: tuple[float, ...]
) -> tuple[tuple[float, float | None], ...]:
    """A request waits from arrival to its first admission, and from its k-th
    preemption to its (k+1)-th admission: every preemption follows an admission
    and re-queues the request until the next one.

    >>> _waits(0.0, (1.0, 4.0), (2.0,))
    ((0.0, 1.0), (2.0, 4.0))
    >>> _waits(0.0, (1.0,), (2.0,))  # preempted, and not admitted again before the end
    ((0.0, 1.0), (2.0, None))
    """
    starts = (arrived, *preempted_at)
    return tuple(
        (start, admissions[k] if k < len(admissions) else None) for k, start in enumerate(starts)
    )


def admission_timeline_data(run: AdmissionRun) -> AdmissionTimeline:
    """Arrivals, waiting spans, admissions and preemptions of every request."""
    spans = tuple(
        RequestSpan(
            r.id,
            r.enqueued_at,
            _waits(r.enqueued_at, r.admitted_at, r.preempted_at),
            r.admitted_at,
            r.preempted_at,
            r.finished_at,
        )
        for r in sorted(run.records, key=lambda record: record.serial)
    )
    times = [s.arrived for s in spans] + list(run.admitted_at)
    times += [at for s in spans for at in s.preempted_at]
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
    waits: tuple[float, ...]  # every admitted request's wait, sorted


@dataclass(frozen=True, slots=True)
class WaitDistribution:
    seed: int
    quick: bool
    policies: tuple[str, ...]
    classes: tuple[str, ...]
    rows: tuple[WaitRow, ...]  # policy-major, in the comparison's order


def wait_distribution_data(comparison: Comparison) -> WaitDistribution:
    """The waiting times per policy and class of a :func:`compare` result: every
    wait, and its percentiles as the report prints them."""
    rows = tuple(
        WaitRow(
            report.policy,
            name,
            stats.requests,
            stats.wait_p50,
            stats.wait_p95,
            stats.wait_p99,
            stats.longest_starvation,
            report.waits.get(name, ()),
        )
        for report in comparison.admission
        for name, stats in report.classes.items()
    )
    classes = tuple(dict.fromkeys(row.request_class for row in rows))
    policies = tuple(report.policy for report in comparison.admission)
    return WaitDistribution(comparison.seed, comparison.quick, policies, classes, rows)


# ------------------------------------------------------------------ drawing


def require_matplotlib() -> None:
    """Raise the :class:`RuntimeError` naming the ``[plot]`` extra unless matplotlib
    can be imported (the CLI asks before replaying anything)."""
    _pyplot()


#: Largest side of a figure, in inches: a long run is squeezed, not drawn 30,000
#: inches wide (matplotlib refuses images beyond 2**16 pixels a side).
_MOST_INCHES = 30.0
#: Beyond this many rows, the request names are left off the axis (they would overlap).
_MOST_LABELLED_ROWS = 60


_DPI = 110
_Key = TypeVar("_Key", bound=Hashable)


def _inches(base: float, per_item: float, items: int) -> float:
    return min(_MOST_INCHES, base + per_item * items)


def _label(value: object, width: int = 30) -> str:
    """A scenario's id or name as one short printable line (ids may be 200 characters),
    with ``$`` escaped: matplotlib would read text between two of them as math."""
    return cut(str(value), width).replace("$", r"\$")


def _name_rows(axes: Any, names: list[str], what: str) -> None:
    """One name per row; too many to read: the rows are numbered, and the axis says so."""
    if len(names) <= _MOST_LABELLED_ROWS:
        axes.set_yticks(range(len(names)), names)
        axes.set_ylabel(what)
    else:
        axes.set_ylabel(f"{what}: row number, from 0")


def _runs(
    slots: tuple[SlotTick, ...], key: Callable[[SlotTick], _Key | None]
) -> dict[_Key, list[tuple[int, int]]]:
    """The (first tick, length) runs of consecutive ticks with the same ``key`` (None:
    not drawn): one bar per run, not one per tick."""
    runs: dict[_Key, list[tuple[int, int]]] = {}
    for slot in slots:
        name = key(slot)
        if name is None:
            continue
        spans = runs.setdefault(name, [])
        if spans and sum(spans[-1]) == slot.tick:
            spans[-1] = (spans[-1][0], spans[-1][1] + 1)
        else:
            spans.append((slot.tick, 1))
    return runs


def _holder(slot: SlotTick) -> RequestId | None:
    return slot.holder


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
    png = io.BytesIO()  # matplotlib would open the path itself, blocking on a FIFO
    with warnings.catch_warnings():
        # A glyph the font lacks (an id in CJK, an emoji) is drawn as a box; its
        # warning (and tight_layout's, for a crowded figure) would be several lines
        # on stderr, where the CLI's rule is one line per problem. Only these calls.
        warnings.simplefilter("ignore", UserWarning)
        figure.tight_layout()
        figure.savefig(png, format="png", dpi=_DPI)
    plt.close(figure)
    return write_png(png.getvalue(), target)


def write_png(png: bytes, path: str | Path) -> Path:
    """Write the drawn picture ``png`` at ``path`` by the project's one file rule
    (:func:`policy.adapters.regular_files.write_regular_file`); return the path, or
    raise an :class:`OSError` whose ``strerror`` is the one-line reason.

    >>> write_png(b"", "/dev/null")
    Traceback (most recent call last):
    ...
    OSError: [Errno None] not a regular file (a character device)
    """
    target = Path(path)
    written = write_regular_file(target, png)
    if isinstance(written, Failure):
        raise OSError(None, written.failure().reason)
    return target


#: How each ending is marked on the grant timeline: marker, colour.
_ENDINGS = {
    "completed": ("|", "black"),
    "cancelled": ("X", "purple"),
    "aborted": ("X", "orange"),
    "routed_classic": ("D", "grey"),
    "classic": ("D", "black"),
}


def write_grant_timeline_png(data: GrantTimeline, path: str | Path) -> Path:
    """Draw who holds the speculative slot per tick; return the written path."""
    plt = _pyplot()
    rows = {request: i for i, request in enumerate(data.requests)}
    colours = plt.get_cmap("tab10")
    wanted = 4.0 + 0.35 * len(data.slots)
    figure, axes = plt.subplots(
        figsize=(max(9.0, min(_MOST_INCHES, wanted)), _inches(1.6, 0.6, len(rows)))
    )
    held: dict[RequestId, list[tuple[int, int]]] = _runs(data.slots, _holder)
    for holder, spans in held.items():
        row = rows[holder]
        axes.broken_barh(spans, (row - 0.3, 0.6), color=colours(row % 10))
    classic = _runs(data.slots, lambda slot: "classic" if slot.use == "classic" else None)
    for start, length in classic.get("classic", []):
        axes.axvspan(start, start + length, color="lightgrey", alpha=0.5, zorder=0)
    if classic:
        axes.fill([], [], color="lightgrey", alpha=0.5, label="classic decoding, no speculation")
    # Above a row (the axis runs downwards): arrival and grants; below it: parks.
    marks = (
        (data.arrivals, "v", "black", "arrived", -0.42),
        (data.promotions, "^", "green", "granted the slot from the backlog", -0.42),
        (data.parks, "x", "red", "parked (its grant ended)", 0.42),
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
    for ending, (marker, colour) in _ENDINGS.items():
        ended = [(tick, request) for tick, request, how in data.endings if how == ending]
        if ended:
            axes.scatter(
                [tick + 1 for tick, _ in ended],
                [rows[request] for _, request in ended],
                marker=marker,
                s=200 if marker == "|" else 60,
                color=colour,
                label=f"left the slot: {ending.replace('_', ' ')}",
                zorder=3,
            )
    axes.set_ylim(len(rows) - 0.4, -0.6)  # the first request on top, as in the file
    squeezed = "" if wanted <= _MOST_INCHES else f"; {len(data.slots)} ticks squeezed to fit"
    axes.set_xlabel(f"tick (a filled box: the request ran a slice in that tick{squeezed})")
    _name_rows(axes, [_label(r) for r in rows], "request (in file order)")
    axes.set_title(
        "Who holds the speculative slot, tick by tick\n"
        f"{_label(data.scenario, 60)} (grant budget {data.budget})"
    )
    axes.grid(axis="x", alpha=0.3)
    axes.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return _save(plt, figure, path)


def write_admission_timeline_png(data: AdmissionTimeline, path: str | Path) -> Path:
    """Draw each request's waits, runs, admissions and preemptions; return the
    written path. One artist per kind of mark, whatever the number of requests."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(9.0, _inches(1.8, 0.5, len(data.requests))))
    waits: list[tuple[int, float, float]] = []
    running: list[tuple[int, float, float]] = []
    for row, span in enumerate(data.requests):
        waits.extend((row, start, data.end if end is None else end) for start, end in span.waits)
        # Admitted until preempted or finished (or the run's end).
        leaves = (*span.preempted_at, data.end if span.finished is None else span.finished)
        running.extend(
            (row, admitted, left) for admitted, left in zip(span.admissions, leaves, strict=False)
        )
    for spans, colour, width, label in (
        (waits, "orange", 6, "waiting in the queue"),
        (running, "grey", 2, "running"),
    ):
        if spans:
            ys, starts, ends = zip(*spans, strict=True)
            axes.hlines(ys, starts, ends, color=colour, linewidth=width, label=label)
    rows = list(enumerate(data.requests))
    marks = (
        ([(r, s.arrived) for r, s in rows], "o", "black", 40, "arrived"),
        ([(r, at) for r, s in rows for at in s.admissions], "^", "green", 70, "admitted"),
        (
            [(r, at) for r, s in rows for at in s.preempted_at],
            "x",
            "red",
            70,
            "preempted (back to the queue)",
        ),
        ([(r, s.finished) for r, s in rows if s.finished is not None], "s", "blue", 40, "finished"),
    )
    for points, marker, colour, size, label in marks:
        if points:
            axes.scatter(
                [at for _, at in points],
                [row for row, _ in points],
                marker=marker,
                color=colour,
                s=size,
                zorder=3,
                label=label,
            )
    axes.set_ylim(len(data.requests) - 0.5, -0.7)
    axes.set_xlabel("time (scenario clock)")
    _name_rows(axes, [_label(s.request) for s in data.requests], "request (in arrival order)")
    axes.set_title(
        f"Arrivals, waits and admissions\n{_label(data.scenario, 60)} ({data.engine} engine)"
    )
    axes.grid(axis="x", alpha=0.3)
    axes.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return _save(plt, figure, path)


_LINEAR_WAIT = 0.1
_DASHES = ("-", (0, (6, 2)), (0, (2, 2)), (0, (8, 3, 2, 3)), (0, (1, 4)))


def write_wait_distribution_png(data: WaitDistribution, path: str | Path) -> Path:
    """Draw, per class, the share of requests admitted within each wait, one line
    per policy (its 99th percentile marked); return the written path."""
    plt = _pyplot()
    figure, panels = plt.subplots(
        1, len(data.classes), figsize=(4.8 * max(1, len(data.classes)), 4.6), squeeze=False
    )
    by_key = {(row.policy, row.request_class): row for row in data.rows}
    colours = plt.get_cmap("tab10")
    for axes, name in zip(panels[0], data.classes, strict=True):
        for i, policy in enumerate(data.policies):
            row = by_key.get((policy, name))
            if row is None or not row.requests:
                continue
            # The share is of the class's requests: one never admitted keeps the line below 1.
            shares = [(k + 1) / row.requests for k in range(len(row.waits))]
            axes.step(
                [0.0, *row.waits],
                [0.0, *shares],
                where="post",
                color=colours(i % 10),
                # Two policies may order alike (the Ascend lanes without aging and with
                # aging at enqueue do): a dash pattern each keeps both lines visible.
                linestyle=_DASHES[i % len(_DASHES)],
                label=policy,
            )
            if row.p99 is not None:
                below = bisect_right(row.waits, row.p99) / row.requests  # waits are sorted
                axes.plot([row.p99], [below], "o", color=colours(i % 10))
        axes.set_title(f"{name} requests")
        # Linear up to 0.1 s, logarithmic beyond: the fast policies' waits are tenths
        # of a second, the slow ones' tails seconds; both stay readable.
        axes.set_xscale("symlog", linthresh=_LINEAR_WAIT, linscale=0.5)
        axes.axvline(_LINEAR_WAIT, color="grey", linewidth=0.5, linestyle=":")
        axes.xaxis.set_major_formatter(lambda value, _: f"{value:g}")  # 0.1, 1, 10
        axes.set_xlabel(
            "wait from arrival to first admission (s)\nlinear to 0.1 s, logarithmic beyond"
        )
        axes.set_ylabel("share of the class admitted within that wait")
        axes.set_ylim(0.0, 1.02)
        axes.grid(alpha=0.3)
    panels[0][-1].plot([], [], "o", color="black", label="99th percentile")
    panels[0][-1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    mode = "quick" if data.quick else "full"
    figure.suptitle(f"Waiting time by policy and request class (seed {data.seed}, {mode} run)")
    return _save(plt, figure, path)
