"""One Tick + RoundResult pair of the rotation kernel against a hand-written mutable one.

The baseline, :class:`MutableRotation`, is the rotation tick logic as a host
would write it for speed: one class, a list of small mutable lists for the
backlog, ints and flags for the holder, and plain lists for the grant log and
the endings. It shares no code with the kernel: it reads the same event
records (``Arrival``, ``Tick``, ``RoundResult``, ``Cancel``) and makes the same
decisions (tests/oracle/bench/test_rotation.py checks that on random seeded runs,
event by event, state included).

Every stream is generated before timing from a seeded ``random.Random``, by
playing it through the kernel, so that it is legal; both implementations then
get the very same event objects. The kernel is fed through the public
:func:`policy.apply_event` and keeps only the latest state; the baseline through
:meth:`MutableRotation.handle`. A *pair* is one ``Tick`` and the
``RoundResult`` answering its model action; the figure is seconds per tick of
the stream, arrivals and cancels of the stream included (each row's note says
how many there are). Each side is timed ``repeats`` times, interleaved, with
the garbage collector off (as ``timeit`` does), and the best run counts.
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from returns.result import Success

from oracle.bench.rows import Row
from policy import (
    Arrival,
    Cancel,
    Event,
    Lane,
    RequestId,
    RotationState,
    RoundResult,
    Tick,
    apply_event,
    initial_state,
    live_requests,
)

__all__ = [
    "TARGET",
    "MutableRotation",
    "Refused",
    "Row",
    "Stream",
    "bench_rotation",
    "contended_stream",
    "holder_alone_stream",
    "mixed_stream",
    "run_baseline",
    "run_kernel",
]

#: No target: the tick is O(1) per event and a model round costs milliseconds, so the
#: pair's microseconds inform (issue 28 built the records in the open).
TARGET: Final[float | None] = None


# ------------------------------------------------------------------------ baseline

# The baseline's own names for what it decides (the kernel's enum values, as text).
ADMISSION_SLICE0: Final = "admission slice 0"
GRANT_SLICE0: Final = "grant slice 0"
ROUND: Final = "round"
SPECULATIVE: Final = "speculative"
CLASSIC: Final = "classic"
IDLE: Final = "idle"
COMPLETED: Final = "completed"
CANCELLED: Final = "cancelled"
ABORTED: Final = "aborted"
ROUTED_CLASSIC: Final = "routed_classic"
CLASSIC_FALLBACK: Final = "classic"
BACKLOG_CAP: Final = 2
NO_ACTION_IN_FLIGHT: Final = "a round result arrived with no model action in flight"
RESULT_PENDING: Final = "the previous model action's result has not arrived"
UNKNOWN_REQUEST: Final = "the request is not on the speculative path"
DUPLICATE_REQUEST: Final = "the request is already on the speculative path"
NEGATIVE_BUDGET: Final = "a grant budget must be >= 0"

# Backlog entries are lists [request, lane, parked, skipped, cancelled].
_REQUEST, _LANE, _PARKED, _SKIPPED, _CANCELLED = range(5)


class Refused(ValueError):
    """An illegal event (its text says why, in the kernel's words); nothing changed."""


class MutableRotation:
    """The rotation tick protocol, mutable: ``handle(event)`` changes this object.

    ``handle`` returns the model action to run now, as ``(request, kind)``, or
    None; an illegal event raises :class:`Refused` and changes nothing. ``use`` is
    the last tick's use; ``ended`` and ``grants`` are appended to, in order.
    """

    __slots__ = (
        "_handlers",
        "acted",
        "backlog",
        "budget",
        "cancelled",
        "ended",
        "grants",
        "holder",
        "in_flight",
        "lane",
        "skip_cap",
        "slices",
        "use",
        "yielded",
    )

    def __init__(self, skip_cap: int = 2) -> None:
        self.skip_cap = skip_cap
        self.holder: RequestId | None = None  # the slot's job, if any
        self.lane = 0
        self.slices = 0  # slice results of the current grant
        self.budget = 0  # cached when the grant started
        self.in_flight: str | None = None
        self.cancelled = False
        self.backlog: list[list[Any]] = []
        self.yielded = False
        self.acted = False
        self.use: str | None = None
        self.ended: list[tuple[RequestId, str]] = []
        self.grants: list[tuple[RequestId, int, bool]] = []
        self._handlers: dict[type, Callable[[Any], tuple[RequestId, str] | None]] = {
            Tick: self.tick,
            RoundResult: self.round_result,
            Arrival: self.arrive,
            Cancel: self.cancel,
        }

    def handle(self, event: Event) -> tuple[RequestId, str] | None:
        return self._handlers[type(event)](event)

    def arrive(self, event: Arrival) -> tuple[RequestId, str] | None:
        request = event.request
        if event.budget < 0:
            raise Refused(NEGATIVE_BUDGET)
        if self.holder is not None and self.holder == request:
            raise Refused(DUPLICATE_REQUEST)
        backlog = self.backlog
        for entry in backlog:
            if entry[_REQUEST] == request:
                raise Refused(DUPLICATE_REQUEST)
        if self.holder is None and not backlog:
            if not self.acted:
                self.holder = request
                self.lane = event.lane
                self.slices = 0
                self.budget = event.budget
                self.in_flight = ADMISSION_SLICE0
                self.cancelled = False
                self.yielded = self.acted = True
                return (request, ADMISSION_SLICE0)
            if event.may_wait:  # the slot is free but this tick's action is spent
                backlog.append([request, event.lane, False, 0, False])
                return None
        elif event.may_wait and event.budget > 0 and len(backlog) < BACKLOG_CAP:
            backlog.append([request, event.lane, False, 0, False])
            return None
        self.ended.append((request, CLASSIC_FALLBACK))
        return None

    def cancel(self, event: Cancel) -> tuple[RequestId, str] | None:
        request = event.request
        if self.holder is not None and self.holder == request:
            self.cancelled = True
            return None
        for entry in self.backlog:
            if entry[_REQUEST] == request:
                entry[_CANCELLED] = True
                return None
        raise Refused(UNKNOWN_REQUEST)

    def tick(self, event: Tick) -> tuple[RequestId, str] | None:
        if event.budget < 0:
            raise Refused(NEGATIVE_BUDGET)
        holder = self.holder
        if holder is not None and self.in_flight is not None:
            raise Refused(RESULT_PENDING)
        if self.acted:
            self.acted = False
            self.use = SPECULATIVE
            return None
        if (holder is not None or self.backlog) and (not event.classic_work or not self.yielded):
            self.use = SPECULATIVE
            if holder is None:
                return self._promote(event)
            self.yielded = True
            if self.cancelled:
                self.ended.append((holder, CANCELLED))
                self.grants.append((holder, self.slices + 1, False))
                self.holder = None
                return None
            self.in_flight = ROUND
            return (holder, ROUND)
        if event.classic_work:
            self.yielded = False
            self.use = CLASSIC
        else:
            self.use = IDLE
        return None

    def _promote(self, event: Tick) -> tuple[RequestId, str] | None:
        backlog = self.backlog
        cap = self.skip_cap
        while backlog:
            chosen = 0
            if len(backlog) > 1:
                most = 0
                for index in range(1, len(backlog)):
                    if backlog[index][_SKIPPED] > backlog[most][_SKIPPED]:
                        most = index
                if backlog[most][_SKIPPED] >= cap:
                    chosen = most
                else:
                    for index in range(1, len(backlog)):
                        if backlog[index][_LANE] > backlog[chosen][_LANE]:
                            chosen = index
            entry = backlog.pop(chosen)
            for other in backlog:
                other[_SKIPPED] += 1
            request = entry[_REQUEST]
            parked = entry[_PARKED]
            if not parked:
                if entry[_CANCELLED]:
                    self.ended.append((request, ABORTED))
                    continue
                if request in event.declined:
                    self.ended.append((request, ROUTED_CLASSIC))
                    continue
            self.yielded = True
            if entry[_CANCELLED]:  # a cancelled parked job: its round ends it
                self.ended.append((request, CANCELLED))
                self.grants.append((request, 1, False))
                return None
            kind = ROUND if parked else GRANT_SLICE0
            self.holder = request
            self.lane = entry[_LANE]
            self.slices = 0
            self.budget = event.budget
            self.in_flight = kind
            self.cancelled = False
            return (request, kind)
        # everyone taken out was cancelled or declined: the tick is not speculative
        if event.classic_work:
            self.yielded = False
            self.use = CLASSIC
        else:
            self.use = IDLE
        return None

    def round_result(self, event: RoundResult) -> tuple[RequestId, str] | None:
        holder = self.holder
        if holder is None or self.in_flight is None:
            raise Refused(NO_ACTION_IN_FLIGHT)
        slices = self.slices + 1
        if event.finished:
            self.ended.append((holder, COMPLETED))
            self.grants.append((holder, slices, False))
            self.holder = self.in_flight = None
            return None
        budget = self.budget
        if self.in_flight != ADMISSION_SLICE0 and budget > 0 and self.backlog and slices >= budget:
            self.grants.append((holder, slices, True))
            self.backlog.append([holder, self.lane, True, 0, self.cancelled])
            self.holder = self.in_flight = None
            return None
        self.slices = slices
        self.in_flight = None
        return None

    def snapshot(self) -> tuple[object, ...]:
        """The state as plain values, lanes as ints (for the tests; not used while timing)."""
        holder = (
            None
            if self.holder is None
            else (
                self.holder, int(self.lane), self.slices, self.budget, self.in_flight,
                self.cancelled,
            )
        )  # fmt: skip
        entries = [
            (request, int(lane), parked, skipped, cancelled)
            for request, lane, parked, skipped, cancelled in self.backlog
        ]
        return holder, entries, self.yielded, self.acted


# ------------------------------------------------------------------------- streams


@dataclass(frozen=True, slots=True)
class Stream:
    """A legal event stream and what it holds."""

    skip_cap: int
    events: tuple[Event, ...]
    ticks: int
    arrivals: int
    cancels: int


def _play(skip_cap: int, make: Callable[[Callable[[Event], bool]], None]) -> Stream:
    """The events ``make`` feeds, each played through the kernel as it is fed (so each
    must be legal); ``feed`` tells whether the event handed out a model action."""
    events: list[Event] = []
    state = initial_state(skip_cap)

    def feed(event: Event) -> bool:
        nonlocal state
        step = apply_event(state, event).unwrap()
        events.append(event)
        state = step.state
        return step.outcome.action is not None

    make(feed)
    return Stream(
        skip_cap,
        tuple(events),
        sum(isinstance(e, Tick) for e in events),
        sum(isinstance(e, Arrival) for e in events),
        sum(isinstance(e, Cancel) for e in events),
    )


def holder_alone_stream(pairs: int) -> Stream:
    """One request holding the slot alone: every pair is a round that continues."""

    def make(feed: Callable[[Event], bool]) -> None:
        feed(Arrival("alone", Lane.NORMAL, 8))
        feed(RoundResult(finished=False))
        feed(Tick(8))  # the admission tick
        for _ in range(pairs):
            feed(Tick(8))
            feed(RoundResult(finished=False))

    return _play(2, make)


def contended_stream(rng: random.Random, pairs: int, budget: int = 2) -> Stream:
    """Three live requests of random lanes at ``budget``: rounds, parks and promotions;
    a request finishes with probability 0.02 per slice and a new one arrives for it."""
    lanes = tuple(Lane)
    serial = 0

    def make(feed: Callable[[Event], bool]) -> None:
        nonlocal serial
        for _ in range(3):
            serial += 1
            if feed(Arrival(f"r{serial}", rng.choice(lanes), budget)):
                feed(RoundResult(finished=False))
        for _ in range(pairs):
            if feed(Tick(budget)):
                finished = rng.random() < 0.02
                feed(RoundResult(finished))
                if finished:
                    serial += 1
                    feed(Arrival(f"r{serial}", rng.choice(lanes), budget))

    return _play(2, make)


def mixed_stream(rng: random.Random, ticks: int) -> Stream:
    """Everything at once: arrivals (random lane, budget 0..8, may or may not wait),
    cancels, declined waiters, classic work on half the ticks, finishes."""
    lanes = tuple(Lane)
    budgets = (0, 1, 2, 3, 8)
    serial = 0
    skip_cap = rng.choice((1, 2, 3))
    events: list[Event] = []
    state = initial_state(skip_cap)

    def feed(event: Event) -> None:
        nonlocal state
        step = apply_event(state, event).unwrap()
        events.append(event)
        state = step.state
        if step.outcome.action is not None:
            feed(RoundResult(rng.random() < 0.15))

    for _ in range(ticks):
        for _ in range(rng.choice((0, 0, 0, 1, 1, 2))):
            serial += 1
            feed(Arrival(f"m{serial}", rng.choice(lanes), rng.choice(budgets), rng.random() < 0.9))
        live = live_requests(state)
        if live and rng.random() < 0.05:
            feed(Cancel(rng.choice(live)))
        waiting = [entry.request for entry in state.backlog]
        declined = frozenset(request for request in waiting if rng.random() < 0.05)
        feed(Tick(rng.choice(budgets[1:]), rng.random() < 0.5, declined))
    return Stream(
        skip_cap,
        tuple(events),
        ticks,
        sum(isinstance(e, Arrival) for e in events),
        sum(isinstance(e, Cancel) for e in events),
    )


# ------------------------------------------------------------------------- timing


def run_kernel(stream: Stream) -> RotationState:
    """Feed the stream through the kernel, keeping only the latest state."""
    state = initial_state(stream.skip_cap)
    step = apply_event
    for event in stream.events:
        result = step(state, event)
        if isinstance(result, Success):  # every event of a stream is legal
            state = result.unwrap().state
    return state


def run_baseline(stream: Stream) -> MutableRotation:
    """Feed the stream through the mutable baseline."""
    baseline = MutableRotation(stream.skip_cap)
    handle = baseline.handle
    for event in stream.events:
        handle(event)
    return baseline


def _best_pair(stream: Stream, repeats: int) -> tuple[float, float]:
    """Best seconds per tick of the stream: (kernel, baseline), timed interleaved."""
    runs: Sequence[tuple[int, Callable[[Stream], object]]] = (
        (0, run_kernel),
        (1, run_baseline),
    )
    best = [float("inf"), float("inf")]
    for _ in range(repeats):
        for side, run in runs:
            gc.collect()
            gc.disable()
            try:
                started = time.perf_counter()
                run(stream)
                elapsed = time.perf_counter() - started
            finally:
                gc.enable()
            best[side] = min(best[side], elapsed / stream.ticks)
    return best[0], best[1]


#: Tick + RoundResult pairs a case times, in a quick run and in a full one.
QUICK_PAIRS = 20_000
PAIRS = 100_000


def bench_rotation(quick: bool) -> list[Row]:
    """The rotation rows: one Tick + RoundResult pair, kernel against the baseline.

    ``quick`` takes a few seconds in all; otherwise about half a minute.
    """
    pairs = QUICK_PAIRS if quick else PAIRS
    repeats = 3 if quick else 7
    rng = random.Random(20261201)
    cases = (
        ("holder alone (round, continue)", holder_alone_stream(pairs)),
        ("contended, budget 2 (rounds, parks, promotions)", contended_stream(rng, pairs)),
        ("mixed seeded run (classic work, cancels, declines)", mixed_stream(rng, pairs)),
    )
    rows: list[Row] = []
    for label, stream in cases:
        kernel, baseline = _best_pair(stream, repeats)
        others = len(stream.events) - stream.ticks
        rows.append(
            Row(
                f"rotation Tick + RoundResult pair, {label}",
                stream.ticks,
                kernel,
                baseline,
                kernel / baseline,
                TARGET,
                f"{stream.ticks:,} ticks, {others:,} other events ({stream.arrivals:,} arrivals,"
                f" {stream.cancels:,} cancels); best of {repeats}, per tick",
            )
        )
    return rows
