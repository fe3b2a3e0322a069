"""The pool engine: a capacity pool admitting through the kernel's selection.

Event driven: at each event time, releases are applied, then arrivals (file
order), then the pool admits while the selected request fits
(``used + units <= cap``); an admitted request holds its units for ``hold``.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from oracle.harness.admission_run import AdmissionRun, RequestRecord, admission_times, enqueue
from oracle.harness.admission_scenario import AdmissionScenario, PoolEngine, PoolRequest
from policy.identity import RequestId
from policy.waiting import Admitted, Moment, WaitingEntry, WaitingQueue, attempt_admission

__all__ = ["run_pool"]


@dataclass(slots=True)
class _Pool:
    """The pool's mutable state while a scenario plays (the imperative shell)."""

    scenario: AdmissionScenario
    cap: int
    requests: dict[RequestId, PoolRequest]
    arrivals: deque[PoolRequest]  # time order, file order among equal times
    queue: WaitingQueue = field(default_factory=WaitingQueue)
    used: int = 0
    releases: list[tuple[float, int, RequestId]] = field(default_factory=list)  # a heap
    selected: list[RequestId] = field(default_factory=list)
    admitted_at: list[float] = field(default_factory=list)
    released: dict[RequestId, float] = field(default_factory=dict)

    def next_event(self) -> float | None:
        times = [self.arrivals[0].enqueue] if self.arrivals else []
        times += [self.releases[0][0]] if self.releases else []
        return min(times, default=None)

    def release_due(self, now: float) -> None:
        while self.releases and self.releases[0][0] == now:
            _, _, request = heapq.heappop(self.releases)
            self.used -= self.requests[request].units
            self.released[request] = now

    def queue_arrivals(self, now: float) -> None:
        while self.arrivals and self.arrivals[0].enqueue == now:
            request = self.arrivals.popleft()
            self.queue = enqueue(self.queue, self.scenario.policy, request, now, self.ever_fits)

    def admit_while_fits(self, now: float) -> None:
        while isinstance(
            outcome := attempt_admission(self.queue, self.scenario.policy, Moment(now), self.fits),
            Admitted,
        ):
            request = self.requests[outcome.entry.identity]
            self.queue = outcome.queue
            self.used += request.units
            self.selected.append(request.id)
            self.admitted_at.append(now)
            heapq.heappush(self.releases, (now + request.hold, len(self.selected), request.id))

    def fits(self, entry: WaitingEntry) -> bool:
        return self.used + self.requests[entry.identity].units <= self.cap

    def ever_fits(self, entry: WaitingEntry) -> bool:
        return self.requests[entry.identity].units <= self.cap

    def record(
        self, request: PoolRequest, times: Mapping[RequestId, tuple[float, ...]]
    ) -> RequestRecord:
        return RequestRecord(
            request.id,
            request.serial,
            request.enqueue,
            admitted_at=times.get(request.id, ()),
            finished_at=self.released.get(request.id),
        )


def run_pool(scenario: AdmissionScenario) -> AdmissionRun:
    """Replay a pool scenario: the admission order, times and per-request records."""
    engine = scenario.engine
    assert isinstance(engine, PoolEngine)
    requests = [r for r in scenario.requests if isinstance(r, PoolRequest)]
    order = sorted(range(len(requests)), key=lambda i: (requests[i].enqueue, i))
    arrivals = deque(requests[i] for i in order)
    pool = _Pool(scenario, engine.cap, {r.id: r for r in requests}, arrivals)
    # What one event time does, in order (harness.md): the table is the rule.
    phases = (pool.release_due, pool.queue_arrivals, pool.admit_while_fits)
    while (now := pool.next_event()) is not None:
        for phase in phases:
            phase(now)
    times = admission_times(pool.selected, pool.admitted_at)
    return AdmissionRun(
        scenario,
        tuple(pool.selected),
        tuple(pool.admitted_at),
        tuple(pool.record(r, times) for r in requests),
    )
