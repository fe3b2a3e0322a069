"""The attempt engine: one admission attempt on a given queue.

A scenario lists the waiting queue in queue order (resumed requests first) and
one :class:`~policy.waiting.Moment`; the engine builds the kernel's queue with
its own two ways in (``append``, ``requeue_preempted``) and makes exactly one
call of :func:`~policy.waiting.attempt_admission`. It reports the selected
request, whether it fit, and the key values the selection compared (semantics:
docs/harness.md, "Attempt engine"). Counterexamples about one selection are
written in this form (:func:`attempt_document`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from oracle.harness.admission_run import AdmissionRun, RequestRecord, queued
from oracle.harness.admission_scenario import (
    AdmissionScenario,
    AttemptEngine,
    AttemptRequest,
    key_json,
)
from policy.identity import RequestId
from policy.waiting import (
    AdmissionOutcome,
    Admitted,
    Blocked,
    Moment,
    WaitingEntry,
    WaitingQueue,
    attempt_admission,
)

__all__ = ["AttemptRun", "attempt_document", "attempt_queue", "run_attempt"]


@dataclass(frozen=True, slots=True)
class AttemptRun(AdmissionRun):
    """An attempt replay: ``selected``/``admitted_at`` hold at most one entry each."""

    keys: tuple[float, ...] = ()  # the Selection's key values (none for FIFO, a resumed front)
    outcome: AdmissionOutcome | None = None  # what attempt_admission returned

    @property
    def blocked(self) -> bool:
        """Whether the selected request did not fit."""
        return isinstance(self.outcome, Blocked)


def _attempt_parts(scenario: AdmissionScenario) -> tuple[AttemptEngine, list[AttemptRequest]]:
    engine = scenario.engine
    if not isinstance(engine, AttemptEngine):
        raise TypeError(f"scenario {scenario.name!r} does not use the attempt engine")
    return engine, [r for r in scenario.requests if isinstance(r, AttemptRequest)]


def attempt_queue(scenario: AdmissionScenario) -> WaitingQueue:
    """The waiting queue a scenario lists, in its order: the requests not resumed
    appended in order, then the resumed ones re-queued at the front in reverse
    order (each at its ``enqueue`` time), so that the first listed is the front."""
    _, requests = _attempt_parts(scenario)
    policy = scenario.policy
    queue = WaitingQueue()
    for request in requests:
        if not request.resumed:
            queue = queued(
                queue.append(
                    policy, request.id, request.attrs, serial=request.serial, now=request.enqueue
                )
            )
    for request in reversed(requests):
        if request.resumed:
            queue = queued(
                queue.requeue_preempted(
                    policy, request.id, request.attrs, serial=request.serial, now=request.enqueue
                )
            )
    return queue


def run_attempt(scenario: AdmissionScenario) -> AttemptRun:
    """One ``attempt_admission`` on the scenario's queue at its moment."""
    engine, requests = _attempt_parts(scenario)
    fits = engine.fits

    def fit(entry: WaitingEntry) -> bool:
        return entry.identity in fits

    outcome = attempt_admission(
        attempt_queue(scenario), scenario.policy, Moment(engine.now, engine.budget_left), fit
    )
    selected: tuple[RequestId, ...] = ()
    admitted_at: tuple[float, ...] = ()
    keys: tuple[float, ...] = ()
    if isinstance(outcome, Admitted | Blocked):
        selected = (outcome.entry.identity,)
        keys = outcome.selection.keys
        if isinstance(outcome, Admitted):
            admitted_at = (engine.now,)
    records = tuple(
        RequestRecord(
            request.id,
            request.serial,
            request.enqueue,
            admitted_at=admitted_at if selected == (request.id,) else (),
        )
        for request in requests
    )
    return AttemptRun(scenario, selected, admitted_at, records, keys, outcome)


def attempt_document(  # noqa: PLR0917 - the order of the scenario's fields
    name: str,
    description: str,
    policy_doc: Mapping[str, object],
    requests: Sequence[Mapping[str, object]],
    now: float,
    budget_left: Mapping[str, float],
    fits: Sequence[RequestId],
    expect: Mapping[str, object] | None,
) -> dict[str, object]:
    """An attempt scenario document (the replay format), e.g. for a counterexample.

    ``requests`` are the request objects of the format, in queue order;
    float values in ``expect["keys"]`` are written with :func:`key_json`, so
    NaN, the infinities and -0.0 stay exact. The document is plain JSON data.

    >>> doc = attempt_document("n", "", {"keys": ["0"]}, [{"id": "a"}], 0, {}, ["a"],
    ...                        {"selected": ["a"], "keys": [float("nan")]})
    >>> doc["engine"], doc["attempt"], doc["expect"]["keys"]
    ('attempt', {'now': 0, 'budget_left': {}, 'fits': ['a']}, ['NaN'])
    """
    doc: dict[str, object] = {
        "kind": "admission",
        "name": name,
        "description": description,
        "engine": "attempt",
        "attempt": {"now": now, "budget_left": dict(budget_left), "fits": list(fits)},
        "policy": dict(policy_doc),
        "requests": [dict(request) for request in requests],
    }
    if expect is not None:
        written = dict(expect)
        keys = written.get("keys")
        if isinstance(keys, Sequence) and not isinstance(keys, str):
            written["keys"] = [key_json(k) if isinstance(k, float) else k for k in keys]
        doc["expect"] = written
    return doc
