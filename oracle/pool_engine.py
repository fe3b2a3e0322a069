"""The pool engine: a capacity pool admitting through the kernel's selection.

Event driven: at each event time, releases are applied, then arrivals (file
order), then the pool admits while the selected request fits
(``used + units <= cap``); an admitted request holds its units for ``hold``.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from returns.result import Failure

from oracle.admission_run import AdmissionRun, RequestRecord
from oracle.admission_scenario import AdmissionScenario, PoolEngine, PoolRequest, StepRequest
from policy.waiting import Admitted, Moment, WaitingEntry, WaitingQueue, attempt_admission

__all__ = ["QueueRefused", "enqueue", "run_pool"]


class QueueRefused(RuntimeError):
    """The waiting queue refused a request the loader accepted (a harness bug)."""


def enqueue(
    queue: WaitingQueue,
    scenario: AdmissionScenario,
    request: PoolRequest | StepRequest,
    now: float,
    ever_fits: Callable[[WaitingEntry], bool],
) -> WaitingQueue:
    """``queue`` with ``request`` appended at ``now``."""
    appended = queue.append(
        scenario.policy,
        request.id,
        request.attrs,
        serial=request.serial,
        now=now,
        ever_fits=ever_fits,
    )
    if isinstance(appended, Failure):
        raise QueueRefused(str(appended.failure()))
    return appended.unwrap()


def run_pool(scenario: AdmissionScenario) -> AdmissionRun:
    """The pool engine: event driven; at each event time releases, then arrivals
    (file order), then admissions while the selected request fits."""
    engine = scenario.engine
    assert isinstance(engine, PoolEngine)
    requests = {r.id: r for r in scenario.requests if isinstance(r, PoolRequest)}
    arrivals = sorted(enumerate(requests.values()), key=lambda item: (item[1].enqueue, item[0]))
    releases: list[tuple[float, int, str | int]] = []  # (time, admission number, request)
    queue = WaitingQueue()
    used = 0
    selected: list[str | int] = []
    admitted_at: list[float] = []
    released: dict[str | int, float] = {}
    next_arrival = 0

    def fits(entry: WaitingEntry) -> bool:
        return used + requests[entry.identity].units <= engine.cap

    def ever_fits(entry: WaitingEntry) -> bool:
        return requests[entry.identity].units <= engine.cap

    while next_arrival < len(arrivals) or releases:
        now = min(
            arrivals[next_arrival][1].enqueue if next_arrival < len(arrivals) else float("inf"),
            releases[0][0] if releases else float("inf"),
        )
        while releases and releases[0][0] == now:
            _, _, request_id = heapq.heappop(releases)
            used -= requests[request_id].units
            released[request_id] = now
        while next_arrival < len(arrivals) and arrivals[next_arrival][1].enqueue == now:
            queue = enqueue(queue, scenario, arrivals[next_arrival][1], now, ever_fits)
            next_arrival += 1
        while True:
            outcome = attempt_admission(queue, scenario.policy, Moment(now), fits)
            if not isinstance(outcome, Admitted):
                break
            request = requests[outcome.entry.identity]
            queue = outcome.queue
            used += request.units
            selected.append(request.id)
            admitted_at.append(now)
            heapq.heappush(releases, (now + request.hold, len(selected), request.id))
    admitted = dict(zip(selected, admitted_at, strict=True))
    records = tuple(
        RequestRecord(
            r.id,
            r.serial,
            r.enqueue,
            admitted_at=(admitted[r.id],) if r.id in admitted else (),
            finished_at=released.get(r.id),
        )
        for r in requests.values()
    )
    return AdmissionRun(scenario, tuple(selected), tuple(admitted_at), records)
