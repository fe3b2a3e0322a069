"""Kernel values as spec values, and back where a driver needs it.

The spec (:mod:`oracle.spec`) has its own plain types and imports nothing from
the kernel; every translation between the two lives here, so the spec stays a
reading of the documents and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping

from oracle.spec import grant_order as spec_order
from oracle.spec import protocol as spec
from oracle.spec import selection as spec_selection
from policy import (
    ActiveJob,
    Arrival,
    BacklogEntry,
    Branch,
    Cancel,
    Ended,
    Ending,
    EntryKind,
    Event,
    GrantEnd,
    ModelAction,
    Outcome,
    ProtocolError,
    RotationState,
    RoundResult,
    SliceKind,
    Tick,
    TickUse,
)
from policy.waiting import QueuePolicy, WaitingEntry, dump_policy, expr_to_json
from policy.waiting.numbers import as_float

__all__ = [
    "kernel_outcome",
    "spec_entry",
    "spec_error",
    "spec_event",
    "spec_outcome",
    "spec_policy",
    "spec_queue_entry",
    "spec_state",
]

SpecEvent = spec.Arrival | spec.Tick | spec.RoundResult | spec.Cancel


# ------------------------------------------------------------------------- rotation


def spec_entry(entry: BacklogEntry) -> spec_order.SpecEntry:
    return spec_order.SpecEntry(
        entry.request, int(entry.lane), entry.kind is EntryKind.PARKED, entry.skipped,
        entry.cancelled,
    )  # fmt: skip


def _spec_job(job: ActiveJob) -> spec.Job:
    in_flight = None if job.in_flight is None else job.in_flight.value
    return spec.Job(
        job.request, int(job.lane), job.slices_in_grant, job.budget, in_flight, job.cancelled
    )


def spec_state(state: RotationState) -> spec.State:
    return spec.State(
        active=None if state.active is None else _spec_job(state.active),
        backlog=tuple(spec_entry(entry) for entry in state.backlog),
        yielded=state.yielded,
        acted=state.acted,
        skip_cap=state.skip_cap,
        profile=state.profile.value,
    )


def spec_event(event: Event) -> SpecEvent:
    match event:
        case Arrival(request, lane, budget, may_wait):
            return spec.Arrival(request, int(lane), budget, may_wait)
        case Tick(budget, classic_work, declined):
            return spec.Tick(budget, classic_work, frozenset(declined))
        case RoundResult(finished):
            return spec.RoundResult(finished)
        case Cancel(request):
            return spec.Cancel(request)


def spec_outcome(outcome: Outcome) -> spec.Outcome:
    return spec.Outcome(
        branches=tuple(branch.value for branch in outcome.branches),
        use=None if outcome.use is None else outcome.use.value,
        action=None
        if outcome.action is None
        else (outcome.action.request, outcome.action.kind.value),
        ended=tuple((ended.request, ended.ending.value) for ended in outcome.ended),
        grants=tuple((grant.request, grant.slices, grant.parked) for grant in outcome.grants),
    )


def spec_error(error: ProtocolError) -> str:
    """The spec's name of a refusal: ``NEGATIVE_BUDGET`` is ``"negative budget"``."""
    return error.kind.name.lower().replace("_", " ")


# Enum lookups by value, as plain dicts: ``Branch(name)`` costs far more, and the
# rotation path check converts every spec outcome.
_BRANCHES = {branch.value: branch for branch in Branch}
_USES = {use.value: use for use in TickUse}
_KINDS = {kind.value: kind for kind in SliceKind}
_ENDINGS = {ending.value: ending for ending in Ending}


def kernel_outcome(outcome: spec.Outcome) -> Outcome:
    """A spec outcome in the kernel's types, for the harness's rotation driver."""
    action = None
    if outcome.action is not None:
        request, kind = outcome.action
        action = ModelAction(request, _KINDS[kind])
    return Outcome(
        branches=tuple(_BRANCHES[name] for name in outcome.branches),
        use=None if outcome.use is None else _USES[outcome.use],
        action=action,
        ended=tuple(Ended(request, _ENDINGS[ending]) for request, ending in outcome.ended),
        grants=tuple(
            GrantEnd(request, slices, parked) for request, slices, parked in outcome.grants
        ),
    )


# ------------------------------------------------------------------ waiting selection


def spec_policy(policy: QueuePolicy) -> spec_selection.SpecPolicy:
    """The policy as the spec reads it: its JSON document, every key as a JSON tree."""
    document: dict[str, object] = dict(dump_policy(policy))
    if not policy.is_fifo:
        document["keys"] = [expr_to_json(key) for key in policy.keys]
    return spec_selection.policy_from_document(document)


def spec_queue_entry(entry: WaitingEntry) -> spec_selection.SpecEntry:
    attributes: Mapping[str, float | bool] = dict(entry.attributes)
    return spec_selection.SpecEntry(
        entry.identity, attributes, as_float(entry.serial), entry.enqueued_at, entry.resumed
    )
