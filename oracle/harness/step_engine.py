"""The step engine: a continuous-batching stage admitting through the kernel's selection.

Iterations of a fixed cost run back to back while there is work. In each one,
residents take their tokens first (in admission order), growing their KV and
preempting the most recently admitted resident when a block is missing; then
the stage admits while tokens are left and a seat is free, one
``attempt_admission`` at a time, its keys seeing ``budget_left`` shrink. Exact
semantics and a worked timeline: docs/harness.md, "Step engine".
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TypeAlias

from oracle.harness.admission_run import (
    AdmissionRun,
    RequestRecord,
    admission_times,
    enqueue,
    queued,
)
from oracle.harness.admission_scenario import AdmissionScenario, StepEngine, StepRequest
from policy.identity import RequestId
from policy.waiting import Admitted, Moment, WaitingEntry, WaitingQueue, attempt_admission

__all__ = [
    "Admission",
    "EngineStalled",
    "IterationRecord",
    "Preemption",
    "StepEvent",
    "StepTrace",
    "Took",
    "blocks_for",
    "run_step",
    "trace_step",
]


class EngineStalled(RuntimeError):
    """More iterations than the engine's progress bound allows (a harness bug, never a hang)."""


@dataclass(frozen=True, slots=True)
class Took:
    """A resident took ``tokens`` of the iteration's budget: a prefill chunk or one decode."""

    request: RequestId
    tokens: int
    prefill: bool


@dataclass(frozen=True, slots=True)
class Preemption:
    """A resident was preempted: blocks freed, progress discarded, re-queued at the front."""

    request: RequestId


@dataclass(frozen=True, slots=True)
class Admission:
    """A waiting request was admitted and took ``tokens`` prefill tokens at once."""

    request: RequestId
    tokens: int
    resumed: bool  # it came back from the front of the queue after a preemption


StepEvent: TypeAlias = Took | Preemption | Admission


@dataclass(frozen=True, slots=True)
class IterationRecord:
    """One iteration as it happened, for checking the engine's invariants."""

    start: float
    end: float
    residents: tuple[RequestId, ...]  # at the start, in admission order
    events: tuple[StepEvent, ...]  # in the order they happened
    blocks_in_use: int  # after this iteration's allocations, before anyone leaves
    first_tokens: tuple[RequestId, ...]  # completed a prefill: a first token at ``end``
    finished: tuple[RequestId, ...]  # produced their last token at ``end`` and left

    @property
    def tokens_taken(self) -> int:
        """Tokens of the budget used in this iteration."""
        return sum(e.tokens for e in self.events if not isinstance(e, Preemption))


@dataclass(frozen=True, slots=True)
class StepTrace:
    """A step replay: the run and every iteration that made it."""

    run: AdmissionRun
    iterations: tuple[IterationRecord, ...]


def blocks_for(tokens: int, block_size: int) -> int:
    """KV blocks that hold ``tokens`` tokens.

    >>> blocks_for(0, 16), blocks_for(1, 16), blocks_for(16, 16), blocks_for(17, 16)
    (0, 1, 1, 2)
    """
    return -(-tokens // block_size)


@dataclass(frozen=True, slots=True)
class _Resident:
    """A request's progress since its latest admission (a preemption discards it)."""

    request: StepRequest
    prefilled: int
    blocks: int
    decoded: int = 0  # decode iterations: each feeds one output token back
    generated: int = 0  # output tokens: the prefill's, then one per decode

    @property
    def processed(self) -> int:
        return self.prefilled + self.decoded

    @property
    def prefilling(self) -> bool:
        return self.prefilled < self.request.prompt


@dataclass(slots=True)
class _Stage:
    """The engine's mutable state while a scenario plays (the imperative shell)."""

    scenario: AdmissionScenario
    engine: StepEngine
    requests: dict[RequestId, StepRequest]
    free_blocks: int
    queue: WaitingQueue = field(default_factory=WaitingQueue)
    residents: list[_Resident] = field(default_factory=list)  # admission order
    selected: list[RequestId] = field(default_factory=list)
    admitted_at: list[float] = field(default_factory=list)
    first_token_at: dict[RequestId, float] = field(default_factory=dict)
    finished_at: dict[RequestId, float] = field(default_factory=dict)
    preempted_at: dict[RequestId, list[float]] = field(default_factory=dict)

    def ever_fits(self, entry: WaitingEntry) -> bool:
        # Alone in the engine a request can grow to its peak, so it finishes.
        return self.requests[entry.identity].kv_tokens_at_end <= self.engine.kv_tokens

    def arrive(self, request: StepRequest) -> None:
        self.queue = enqueue(
            self.queue, self.scenario.policy, request, request.enqueue, self.ever_fits
        )

    def preempt_newest(self, now: float, events: list[StepEvent]) -> _Resident:
        victim = self.residents.pop()
        self.free_blocks += victim.blocks
        request = victim.request
        self.preempted_at.setdefault(request.id, []).append(now)
        events.append(Preemption(request.id))
        self.queue = queued(
            self.queue.requeue_preempted(
                self.scenario.policy,
                request.id,
                request.attrs,
                serial=request.serial,
                now=now,
                ever_fits=self.ever_fits,
            )
        )
        return victim

    def serve_residents(self, now: float, events: list[StepEvent]) -> int:
        """Residents take their tokens in admission order; returns the tokens left."""
        left = self.engine.budget
        index = 0
        # Victims are popped from the back, so everyone before ``index`` stays put.
        while index < len(self.residents) and left > 0:
            resident = self.residents[index]
            prefill = resident.prefilling
            tokens = (
                min(self.engine.chunk, resident.request.prompt - resident.prefilled, left)
                if prefill
                else 1
            )
            need = blocks_for(resident.processed + tokens, self.engine.block_size) - resident.blocks
            # Victims come from the back: none of them has taken tokens yet in this
            # iteration, since everyone before the grower was admitted earlier.
            while need > self.free_blocks:
                if self.preempt_newest(now, events) is resident:
                    break
            if index == len(self.residents):
                break  # the grower itself was preempted, and it was the last
            self.free_blocks -= need
            left -= tokens
            self.residents[index] = replace(
                resident,
                prefilled=resident.prefilled + (tokens if prefill else 0),
                decoded=resident.decoded + (0 if prefill else 1),
                blocks=resident.blocks + need,
            )
            events.append(Took(resident.request.id, tokens, prefill))
            index += 1
        return left

    def admit(self, now: float, left: int, events: list[StepEvent]) -> None:
        """Admission attempts while tokens and seats are left; a blocked attempt ends them."""
        engine = self.engine
        while left > 0 and len(self.residents) < engine.max_running:
            chunk = min(engine.chunk, left)

            def fits(entry: WaitingEntry, chunk: int = chunk) -> bool:
                tokens = min(chunk, self.requests[entry.identity].prompt)
                return blocks_for(tokens, engine.block_size) <= self.free_blocks

            moment = Moment(now, {engine.stage: float(left)})
            outcome = attempt_admission(self.queue, self.scenario.policy, moment, fits)
            if not isinstance(outcome, Admitted):
                return  # nothing waits, or the selected request blocks until the next iteration
            self.queue = outcome.queue
            request = self.requests[outcome.entry.identity]
            tokens = min(chunk, request.prompt)
            blocks = blocks_for(tokens, engine.block_size)
            self.free_blocks -= blocks
            left -= tokens
            self.residents.append(_Resident(request, prefilled=tokens, blocks=blocks))
            events.append(Admission(request.id, tokens, outcome.entry.resumed))
            self.selected.append(request.id)
            self.admitted_at.append(now)

    def end_iteration(
        self, end: float, events: list[StepEvent]
    ) -> tuple[tuple[RequestId, ...], tuple[RequestId, ...]]:
        """Outputs at the end of the iteration; finished requests leave.

        Returns the requests that produced a first token and those that finished.
        """
        progressed = {e.request for e in events if not isinstance(e, Preemption)}
        first_tokens: list[RequestId] = []
        finished: list[RequestId] = []
        staying: list[_Resident] = []
        for before in self.residents:
            request = before.request
            after = before
            if request.id in progressed and not before.prefilling:
                if before.generated == 0:
                    first_tokens.append(request.id)
                    # The user saw the first token then, whatever a later preemption discards.
                    self.first_token_at.setdefault(request.id, end)
                after = replace(before, generated=before.generated + 1)
            if after.generated == request.out:
                finished.append(request.id)
                self.finished_at[request.id] = end
                self.free_blocks += after.blocks
            else:
                staying.append(after)
        self.residents = staying
        return tuple(first_tokens), tuple(finished)

    def record(
        self, request: StepRequest, times: Mapping[RequestId, tuple[float, ...]]
    ) -> RequestRecord:
        return RequestRecord(
            request.id,
            request.serial,
            request.enqueue,
            admitted_at=times.get(request.id, ()),
            first_token_at=self.first_token_at.get(request.id),
            finished_at=self.finished_at.get(request.id),
            preempted_at=tuple(self.preempted_at.get(request.id, ())),
        )


def run_step(scenario: AdmissionScenario) -> AdmissionRun:
    """The step engine's admission order, admission times and per-request records."""
    return _replay(scenario, keep=False).run


def trace_step(scenario: AdmissionScenario) -> StepTrace:
    """Replay a step scenario, keeping a record of every iteration."""
    return _replay(scenario, keep=True)


def _replay(scenario: AdmissionScenario, *, keep: bool) -> StepTrace:
    """Replay a step scenario; with ``keep``, record every iteration (run_step does
    not, so a long run costs no memory per iteration)."""
    engine = scenario.engine
    assert isinstance(engine, StepEngine)
    requests = [r for r in scenario.requests if isinstance(r, StepRequest)]
    stage = _Stage(scenario, engine, {r.id: r for r in requests}, engine.blocks)
    arrivals = sorted(enumerate(requests), key=lambda item: (item[1].enqueue, item[0]))
    upcoming = deque(request for _, request in arrivals)  # time order, file order on ties
    # Every iteration has an oldest resident, which keeps its progress: no run needs
    # more iterations than this (the loader refuses a file whose bound exceeds its limit).
    progress_bound = sum(engine.iterations_as_oldest(r) for r in requests)
    iterations: list[IterationRecord] = []
    count = 0
    # A busy period begins at ``base``; its n-th iteration starts at base + n * cost,
    # computed afresh each time so that float sums do not drift.
    base, n = (upcoming[0].enqueue if upcoming else 0.0), 0
    while upcoming or stage.residents or len(stage.queue) > 0:
        start = base + n * engine.iteration_cost
        end = base + (n + 1) * engine.iteration_cost
        # No horizon means none: an infinite time is never taken for "past the horizon"
        # (the limits keep every time finite; a time that is not is a harness bug).
        if engine.horizon is not None and start >= engine.horizon:
            break
        if count == progress_bound or not math.isfinite(end):
            raise EngineStalled(
                f"{scenario.name}: no end after {count} iterations (bound {progress_bound},"
                f" time {end!r})"
            )
        while upcoming and upcoming[0].enqueue <= start:
            stage.arrive(upcoming.popleft())
        events: list[StepEvent] = []
        at_start = tuple(r.request.id for r in stage.residents) if keep else ()
        left = stage.serve_residents(start, events)
        if not any(isinstance(event, Preemption) for event in events):
            # As in vLLM's scheduler: a step that had to preempt admits nobody, so a
            # request just preempted cannot bounce straight back in the same step.
            stage.admit(start, left, events)
        in_use = engine.blocks - stage.free_blocks
        first_tokens, finished = stage.end_iteration(end, events)
        count += 1
        if keep:
            iterations.append(
                IterationRecord(start, end, at_start, tuple(events), in_use, first_tokens, finished)
            )
        # The busy period goes on while there is work: a resident, a waiting request,
        # or one arriving at or before this iteration's end (``<=``: arriving exactly
        # at the end, it starts the next iteration, at that same time).
        arrived = bool(upcoming) and upcoming[0].enqueue <= end
        if stage.residents or len(stage.queue) > 0 or arrived:
            n += 1
        elif upcoming:
            base, n = upcoming[0].enqueue, 0  # idle until the next arrival
    times = admission_times(stage.selected, stage.admitted_at)
    run = AdmissionRun(
        scenario,
        tuple(stage.selected),
        tuple(stage.admitted_at),
        tuple(stage.record(r, times) for r in requests),
    )
    return StepTrace(run, tuple(iterations))
