"""What an admission replay produced: the admission order and per-request records."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from returns.result import Failure, Result

from oracle.harness.admission_scenario import AdmissionScenario, PoolRequest, StepRequest
from policy.identity import RequestId
from policy.waiting import QueueError, QueuePolicy, WaitingEntry, WaitingQueue

__all__ = [
    "AdmissionRun",
    "QueueRefused",
    "RequestRecord",
    "admission_times",
    "enqueue",
    "queued",
]


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """What happened to one request."""

    id: str | int
    serial: int
    enqueued_at: float
    admitted_at: tuple[float, ...] = ()  # every admission, re-admissions included
    first_token_at: float | None = None
    finished_at: float | None = None
    preempted_at: tuple[float, ...] = ()  # each preemption's iteration start

    @property
    def preemptions(self) -> int:
        return len(self.preempted_at)


@dataclass(frozen=True, slots=True)
class AdmissionRun:
    """A replayed admission scenario: the admission order and every request's record."""

    scenario: AdmissionScenario
    selected: tuple[str | int, ...]  # each admission's request, in order
    admitted_at: tuple[float, ...]  # the time of each of those admissions
    records: tuple[RequestRecord, ...] = field(default=())


def admission_times(
    selected: Sequence[RequestId], admitted_at: Sequence[float]
) -> Mapping[RequestId, tuple[float, ...]]:
    """Every request's admission times, in a run's admission order (one pass over
    the run, not one per request: a run's records cost linear time).

    >>> admission_times(["A", "B", "A"], [0.0, 1.0, 3.0])
    {'A': (0.0, 3.0), 'B': (1.0,)}
    """
    times: dict[RequestId, list[float]] = {}
    for request, at in zip(selected, admitted_at, strict=True):
        times.setdefault(request, []).append(at)
    return {request: tuple(at) for request, at in times.items()}


class QueueRefused(RuntimeError):
    """The waiting queue refused a request the loader accepted (a harness bug)."""


def queued(result: Result[WaitingQueue, QueueError]) -> WaitingQueue:
    """The new queue of an ``append`` or ``requeue_preempted`` the loader made sure of."""
    if isinstance(result, Failure):
        raise QueueRefused(str(result.failure()))
    return result.unwrap()


def enqueue(
    queue: WaitingQueue,
    policy: QueuePolicy,
    request: PoolRequest | StepRequest,
    now: float,
    ever_fits: Callable[[WaitingEntry], bool],
) -> WaitingQueue:
    """``queue`` with a scenario's request appended at ``now``."""
    return queued(
        queue.append(
            policy, request.id, request.attrs, serial=request.serial, now=now, ever_fits=ever_fits
        )
    )
