"""What an admission replay produced: the admission order and per-request records."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from oracle.admission_scenario import AdmissionScenario
from policy.identity import RequestId

__all__ = ["AdmissionRun", "RequestRecord", "admission_times"]


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """What happened to one request."""

    id: str | int
    serial: int
    enqueued_at: float
    admitted_at: tuple[float, ...] = ()  # every admission, re-admissions included
    first_token_at: float | None = None
    finished_at: float | None = None
    preemptions: int = 0


@dataclass(frozen=True, slots=True)
class AdmissionRun:
    """A replayed admission scenario: the admission order and every request's record."""

    scenario: AdmissionScenario
    selected: tuple[str | int, ...]  # each admission's request, in order
    admitted_at: tuple[float, ...]  # the time of each of those admissions
    records: tuple[RequestRecord, ...] = field(default=())


def admission_times(
    selected: Sequence[RequestId], admitted_at: Sequence[float], request: RequestId
) -> tuple[float, ...]:
    """Every admission time of ``request`` in a run's admission order."""
    return tuple(t for r, t in zip(selected, admitted_at, strict=True) if r == request)
