"""The spec's answers in the harness's observation shape, for counterexample files.

A counterexample is written as a scenario whose ``expect`` is what the spec
says; ``policy-kernel replay`` compares the kernel's observations with it.
"""

from __future__ import annotations

from collections.abc import Sequence

from oracle.checks.convert import spec_event
from oracle.harness.rotation_events import events_document
from oracle.spec import grant_order as spec_order
from oracle.spec import protocol as spec
from policy import Event, Lane, RulesProfile

__all__ = ["LANE_LABELS", "entry_observation", "events_scenario", "spec_observation"]

#: Each lane's label by its number (the spec's lanes are numbers).
LANE_LABELS = {int(lane): lane.label for lane in Lane}


def entry_observation(entry: spec_order.SpecEntry) -> dict[str, object]:
    """A spec backlog entry as the harness observes a kernel backlog entry."""
    return {
        "request": entry.request,
        "lane": LANE_LABELS[entry.lane],
        "kind": "parked" if entry.parked else "waiter",
        "skipped": entry.skipped,
        "cancelled": entry.cancelled,
    }


def spec_observation(result: spec.Step | str) -> dict[str, object]:
    """One step of the spec as the harness observes a kernel step."""
    if isinstance(result, str):
        return {"refused": result}
    state, outcome = result
    active = state.active
    return {
        "branches": list(outcome.branches),
        "use": outcome.use,
        "action": None if outcome.action is None else list(outcome.action),
        "ended": [list(ended) for ended in outcome.ended],
        "grants": [list(grant) for grant in outcome.grants],
        "active": None
        if active is None
        else {
            "request": active.request,
            "lane": LANE_LABELS[active.lane],
            "slices": active.slices,
            "budget": active.budget,
            "in_flight": active.in_flight,
            "cancelled": active.cancelled,
        },
        "backlog": [entry_observation(entry) for entry in state.backlog],
        "yielded": state.yielded,
        "acted": state.acted,
    }


def events_scenario(
    name: str,
    description: str,
    skip_cap: int,
    events: Sequence[Event],
    profile: RulesProfile = RulesProfile.SEED,
) -> dict[str, object]:
    """An events-form rotation scenario expecting, at every step, the spec's answer."""
    state = spec.initial_state(skip_cap, profile.value)
    steps = []
    for event in events:
        result = spec.step(state, spec_event(event))
        steps.append(spec_observation(result))
        if not isinstance(result, str):
            state = result[0]
    return events_document(name, description, skip_cap, events, steps, profile)
