"""The rotation benchmark: its mutable baseline decides as the kernel does, and its
rows are well formed (no timed assertion anywhere)."""

from __future__ import annotations

import math
import random

import pytest
from returns.result import Failure

import oracle.bench.rotation as rotation_bench
from oracle.bench.rotation import (
    TARGET,
    MutableRotation,
    Refused,
    Row,
    Stream,
    bench_rotation,
    contended_stream,
    holder_alone_stream,
    mixed_stream,
    run_baseline,
    run_kernel,
)
from policy import (
    Arrival,
    Cancel,
    Event,
    Lane,
    RotationState,
    RoundResult,
    Tick,
    apply_event,
    initial_state,
    live_requests,
)


def kernel_snapshot(state: RotationState) -> tuple[object, ...]:
    """The kernel's state in the form of ``MutableRotation.snapshot``."""
    job = state.active
    holder = (
        None
        if job is None
        else (
            job.request,
            int(job.lane),
            job.slices_in_grant,
            job.budget,
            None if job.in_flight is None else job.in_flight.value,
            job.cancelled,
        )
    )
    entries = [
        (e.request, int(e.lane), e.kind.value == "parked", e.skipped, e.cancelled)
        for e in state.backlog
    ]
    return holder, entries, state.yielded, state.acted


def lockstep(skip_cap: int, events: list[Event] | tuple[Event, ...]) -> int:
    """Feed both; after every event the decisions (refusals and their reasons included)
    and the states must be equal. Returns how many events were refused."""
    state = initial_state(skip_cap)
    baseline = MutableRotation(skip_cap)
    refused = 0
    for number, event in enumerate(events):
        where = f"event {number}: {event}"
        before = baseline.snapshot()
        ended, grants = len(baseline.ended), len(baseline.grants)
        result = apply_event(state, event)
        if isinstance(result, Failure):
            refused += 1
            with pytest.raises(Refused) as refusal:
                baseline.handle(event)
            assert str(refusal.value) == result.failure().kind.value, where
            assert baseline.snapshot() == before, where
            continue
        action = baseline.handle(event)
        step = result.unwrap()
        outcome = step.outcome
        expected_action = (
            None if outcome.action is None else (outcome.action.request, outcome.action.kind.value)
        )
        assert action == expected_action, where
        if isinstance(event, Tick):
            assert outcome.use is not None
            assert baseline.use == outcome.use.value, where
        assert baseline.ended[ended:] == [(e.request, e.ending.value) for e in outcome.ended], where
        assert baseline.grants[grants:] == [(g.request, g.slices, g.parked) for g in outcome.grants]
        state = step.state
        assert baseline.snapshot() == kernel_snapshot(state), where
    return refused


def random_events(rng: random.Random, count: int) -> tuple[int, list[Event]]:
    """Events of every kind, legal or not, chosen from the kernel's current state."""
    skip_cap = rng.choice((1, 2, 3))
    state = initial_state(skip_cap)
    events: list[Event] = []
    serial = 0
    budgets = (-1, 0, 1, 1, 2, 3, 8)
    for _ in range(count):
        live = live_requests(state)
        draw = rng.random()
        event: Event
        if draw < 0.3:
            if live and rng.random() < 0.05:
                request = rng.choice(live)  # a duplicate
            else:
                serial += 1
                request = f"q{serial}"
            lane = rng.choice(tuple(Lane))
            event = Arrival(request, lane, rng.choice(budgets), rng.random() < 0.85)
        elif draw < 0.6:
            waiting = [entry.request for entry in state.backlog]
            declined = frozenset(r for r in waiting if rng.random() < 0.3)
            event = Tick(rng.choice(budgets), rng.random() < 0.5, declined)
        elif draw < 0.9:
            event = RoundResult(rng.random() < 0.25)
        else:
            event = Cancel(rng.choice(live) if live and rng.random() < 0.9 else "nobody")
        events.append(event)
        result = apply_event(state, event)
        if not isinstance(result, Failure):
            state = result.unwrap().state
    return skip_cap, events


@pytest.mark.parametrize("seed", range(40))
def test_the_baseline_decides_as_the_kernel_on_random_runs(seed: int) -> None:
    skip_cap, events = random_events(random.Random(seed), 400)
    lockstep(skip_cap, events)


def test_random_runs_reach_every_decision() -> None:
    """The lockstep runs above are not vacuous: refusals, every action kind, every
    ending, parks and every tick use all occur."""
    kinds: set[str] = set()
    uses: set[str] = set()
    endings: set[str] = set()
    parks = refused = 0
    for seed in range(40):
        skip_cap, events = random_events(random.Random(seed), 400)
        refused += lockstep(skip_cap, events)
        baseline = MutableRotation(skip_cap)
        for event in events:
            try:
                action = baseline.handle(event)
            except Refused:
                continue
            if action is not None:
                kinds.add(action[1])
            if isinstance(event, Tick) and baseline.use is not None:
                uses.add(baseline.use)
        endings |= {ending for _, ending in baseline.ended}
        parks += sum(parked for _, _, parked in baseline.grants)
    assert kinds == {"admission slice 0", "grant slice 0", "round"}
    assert uses == {"speculative", "classic", "idle"}
    assert endings == {"completed", "cancelled", "aborted", "routed_classic", "classic"}
    assert parks > 0
    assert refused > 0


@pytest.mark.parametrize(
    "stream",
    [
        holder_alone_stream(300),
        contended_stream(random.Random(1), 300),
        contended_stream(random.Random(2), 300, budget=1),
        mixed_stream(random.Random(3), 300),
    ],
    ids=["alone", "contended", "contended-budget-1", "mixed"],
)
def test_the_benchmarked_streams_are_legal_and_decided_alike(stream: Stream) -> None:
    assert lockstep(stream.skip_cap, stream.events) == 0
    final = run_kernel(stream)
    assert kernel_snapshot(final) == run_baseline(stream).snapshot()
    assert stream.ticks == sum(isinstance(event, Tick) for event in stream.events)


def test_bench_rotation_quick_rows_are_well_formed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rotation_bench, "QUICK_PAIRS", 2_000)  # the rows' form, not the timing
    rows = bench_rotation(quick=True)
    assert len(rows) == 3
    assert len({row.name for row in rows}) == len(rows)
    for row in rows:
        assert isinstance(row, Row)
        assert row.name.startswith("rotation Tick + RoundResult pair")
        assert isinstance(row.n, int)
        assert row.n > 0
        for seconds in (row.kernel_seconds, row.baseline_seconds):
            assert math.isfinite(seconds)
            assert seconds > 0
        assert row.ratio == pytest.approx(row.kernel_seconds / row.baseline_seconds)
        assert row.target is TARGET is None  # the pair's microseconds inform
        assert row.note
        assert row.met is None
