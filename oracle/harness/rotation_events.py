"""Rotation scenarios as an exact event list, replayed event by event.

A scenario in this form gives ``events`` instead of ``requests``: each event is
one kernel event (:class:`~policy.Arrival`, :class:`~policy.Tick`,
:class:`~policy.RoundResult`, :class:`~policy.Cancel`), applied in order with
:func:`~policy.apply_event` from :func:`~policy.initial_state`. Nothing is
driven: no model, no clock, no cancel rules, so any event sequence can be
written, illegal events included (a refused event leaves the state as it was,
and the replay goes on). Each event gives one *observation*
(:func:`observe`), the JSON object a checker compares whole; counterexamples
are written in this form (:func:`events_document`). Semantics:
docs/harness.md, "Rotation scenarios as an event list".
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from returns.result import Failure, Result

from oracle.harness.fields import SCENARIO_FIELDS, Node, check_name, read_description
from oracle.harness.rotation_scenario import (
    read_expected_grants,
    read_expected_outcomes,
    read_profile,
)
from policy import (
    ActiveJob,
    Arrival,
    BacklogEntry,
    Cancel,
    Ended,
    Ending,
    Event,
    GrantEnd,
    Lane,
    ProtocolError,
    ProtocolErrorKind,
    RequestId,
    RoundResult,
    RulesProfile,
    Step,
    Tick,
    apply_event,
    initial_state,
    parse_lane,
)
from policy.rotation import SKIP_CAP
from policy.waiting.numbers import shown

__all__ = [
    "REFUSALS",
    "EventsExpect",
    "EventsRun",
    "Observation",
    "RotationEventsScenario",
    "event_json",
    "event_text",
    "events_document",
    "observation_text",
    "observe",
    "read_rotation_events",
    "refusal_name",
    "replay_events",
    "run_events",
    "same_observation",
]

#: One event's observation: a JSON object (see :func:`observe`).
Observation = dict[str, object]

_EVENT_KINDS = ("arrival", "tick", "round_result", "cancel")


def refusal_name(kind: ProtocolErrorKind) -> str:
    """How an observation names a refusal: ``NO_ACTION_IN_FLIGHT`` is ``"no action in flight"``.

    >>> refusal_name(ProtocolErrorKind.NEGATIVE_BUDGET)
    'negative budget'
    """
    return kind.name.lower().replace("_", " ")


#: Every refusal an observation may name.
REFUSALS = frozenset(refusal_name(kind) for kind in ProtocolErrorKind)

_ACCEPTED_KEYS = frozenset(
    {"branches", "use", "action", "ended", "grants", "active", "backlog", "yielded", "acted"}
)
_ACTIVE_KEYS = frozenset({"request", "lane", "slices", "budget", "in_flight", "cancelled"})
_ENTRY_KEYS = frozenset({"request", "lane", "kind", "skipped", "cancelled"})


# ---------------------------------------------------------------------- observations


def observe(result: Result[Step, ProtocolError]) -> Observation:
    """What one ``apply_event`` result shows, as JSON data.

    A refused event: ``{"refused": K}`` (:func:`refusal_name`). An accepted one:
    the outcome (``branches``, ``use``, ``action``, ``ended``, ``grants``) and
    the state after it (``active``, ``backlog``, ``yielded``, ``acted``).

    >>> step = apply_event(initial_state(), Arrival("A", Lane.NORMAL, 2))
    >>> observe(step)["action"], observe(step)["active"]["in_flight"]
    (['A', 'admission slice 0'], 'admission slice 0')
    >>> observe(apply_event(initial_state(), RoundResult(finished=True)))
    {'refused': 'no action in flight'}
    """
    if isinstance(result, Failure):
        error: ProtocolError = result.failure()
        return {"refused": refusal_name(error.kind)}
    step = result.unwrap()
    outcome, state = step.outcome, step.state
    action = outcome.action
    return {
        "branches": [branch.value for branch in outcome.branches],
        "use": None if outcome.use is None else outcome.use.value,
        "action": None if action is None else [action.request, action.kind.value],
        "ended": [[ended.request, ended.ending.value] for ended in outcome.ended],
        "grants": [[grant.request, grant.slices, grant.parked] for grant in outcome.grants],
        "active": None if state.active is None else _active_json(state.active),
        "backlog": [_entry_json(entry) for entry in state.backlog],
        "yielded": state.yielded,
        "acted": state.acted,
    }


def _active_json(job: ActiveJob) -> dict[str, object]:
    return {
        "request": job.request,
        "lane": job.lane.label,
        "slices": job.slices_in_grant,
        "budget": job.budget,
        "in_flight": None if job.in_flight is None else job.in_flight.value,
        "cancelled": job.cancelled,
    }


def _entry_json(entry: BacklogEntry) -> dict[str, object]:
    return {
        "request": entry.request,
        "lane": entry.lane.label,
        "kind": entry.kind.value,
        "skipped": entry.skipped,
        "cancelled": entry.cancelled,
    }


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def same_observation(expected: Mapping[str, object], actual: Mapping[str, object]) -> bool:
    """Observations equal as JSON: ``1`` is not ``true``, ``"1"`` is not ``1``.

    >>> same_observation({"refused": "unknown request"}, {"refused": "unknown request"})
    True
    >>> same_observation({"skipped": 1}, {"skipped": True})
    False
    """
    return _canonical(expected) == _canonical(actual)


def observation_text(observation: Mapping[str, object]) -> str:
    """An observation on one line, as compact JSON."""
    return json.dumps(observation, separators=(",", ":"))


# ------------------------------------------------------------------------ scenarios


@dataclass(frozen=True, slots=True)
class EventsExpect:
    steps: tuple[Observation, ...] | None  # one per event
    grants: tuple[tuple[RequestId, int], ...] | None
    outcomes: Mapping[RequestId, Ending] | None


@dataclass(frozen=True, slots=True)
class RotationEventsScenario:
    """A rotation scenario given as the exact kernel events to apply."""

    name: str
    description: str
    skip_cap: int
    events: tuple[Event, ...]
    expect: EventsExpect | None
    profile: RulesProfile = RulesProfile.SEED

    @property
    def requests(self) -> tuple[RequestId, ...]:
        """The requests that arrive, in order of their first arrival."""
        return tuple(dict.fromkeys(e.request for e in self.events if isinstance(e, Arrival)))


def read_rotation_events(doc: Node) -> RotationEventsScenario:
    """A rotation scenario in the events form from its document (raises FieldError)."""
    if doc.has("requests"):
        raise doc.child("events").fail(
            "give requests (driven ticks) or events (an exact event list), not both"
        )
    for field in ("budget", "budget_setting", "classic_work"):
        if doc.has(field):
            raise doc.child(field).fail(
                "is not allowed with events: each arrival and tick gives its own"
            )
    doc.object({"kind", "name", "events"}, SCENARIO_FIELDS | {"skip_cap", "profile"})
    ids = _Ids()
    events_node = doc.child("events")
    events = tuple(_read_event(node, ids) for node in events_node.items())
    if not events:
        raise events_node.fail("must list at least one event")
    skip_cap_node = doc.optional("skip_cap")
    scenario = RotationEventsScenario(
        name=doc.child("name").name(),
        description=read_description(doc),
        skip_cap=SKIP_CAP if skip_cap_node is None else skip_cap_node.integer(1),
        events=events,
        expect=None,
        profile=read_profile(doc),
    )
    expect_node = doc.optional("expect")
    if expect_node is None:
        return scenario
    return RotationEventsScenario(
        scenario.name,
        scenario.description,
        scenario.skip_cap,
        events,
        _read_expect(expect_node, set(scenario.requests), len(events)),
        scenario.profile,
    )


class _Ids:
    """Request ids read so far: two ids that read the same as text (``1`` and
    ``"1"``) would name the same row of the outcomes, so they are refused."""

    def __init__(self) -> None:
        self.by_text: dict[str, RequestId] = {}

    def read(self, node: Node) -> RequestId:
        request = node.identity()
        seen = self.by_text.setdefault(str(request), request)
        if seen != request:
            raise node.fail(
                f"request id {shown(request)} reads the same as {shown(seen)}, named before;"
                " ids must differ as text"
            )
        return request


def _read_event(node: Node, ids: _Ids) -> Event:
    if not isinstance(node.value, dict) or len(node.value) != 1:
        raise node.fail(
            "must be an object with one key: " + ", ".join(_EVENT_KINDS[:-1]) + " or cancel"
        )
    (kind,) = node.value
    check_name(node, kind, member=True)
    body = node.child(kind)
    if kind == "arrival":
        body.object({"request", "budget"}, {"lane", "may_wait"})
        lane = body.optional("lane")
        may_wait = body.optional("may_wait")
        return Arrival(
            ids.read(body.child("request")),
            Lane.NORMAL if lane is None else parse_lane(lane.name()),
            # An integer of any sign (an illegal budget is an event a kernel must
            # refuse), within the integer limit like every other.
            body.child("budget").integer(None),
            may_wait=True if may_wait is None else may_wait.boolean(),
        )
    if kind == "tick":
        body.object({"budget"}, {"classic_work", "declined"})
        classic = body.optional("classic_work")
        declined_node = body.optional("declined")
        declined: list[RequestId] = []
        for item in () if declined_node is None else declined_node.items():
            request = ids.read(item)
            if request in declined:
                raise item.fail(f"names {shown(request)} twice")
            declined.append(request)
        return Tick(
            body.child("budget").integer(None),  # any sign, as an arrival's budget
            classic_work=False if classic is None else classic.boolean(),
            declined=frozenset(declined),
        )
    if kind == "round_result":
        body.object({"finished"}, set())
        return RoundResult(finished=body.child("finished").boolean())
    if kind == "cancel":
        body.object({"request"}, set())
        return Cancel(ids.read(body.child("request")))
    raise body.fail(f"unknown event (one of {', '.join(_EVENT_KINDS)})")


def _read_expect(node: Node, ids: set[RequestId], count: int) -> EventsExpect:
    node.object(set(), {"steps", "grants", "outcomes"})
    steps_node = node.optional("steps")
    steps = None
    if steps_node is not None:
        steps = tuple(_read_observation(item) for item in steps_node.items())
        if len(steps) != count:
            raise steps_node.fail(
                f"gives {len(steps)} observations for {count} events: one per event"
            )
    return EventsExpect(
        steps,
        read_expected_grants(node.optional("grants"), ids),
        read_expected_outcomes(node.optional("outcomes"), ids),
    )


def _read_observation(node: Node) -> Observation:
    """An expected observation: its shape is checked (so a misspelt field is an error,
    not a silent mismatch); its values are compared with the replay's as JSON."""
    if node.has("refused"):
        node.object({"refused"}, set())
        refused = node.child("refused")
        if refused.string() not in REFUSALS:
            raise refused.fail(f"must be one of {', '.join(sorted(REFUSALS))}")
    else:
        node.object(_ACCEPTED_KEYS, set())
        active = node.child("active")
        if active.value is not None:
            active.object(_ACTIVE_KEYS, set())
        for entry in node.child("backlog").items():
            entry.object(_ENTRY_KEYS, set())
        for field in ("branches", "ended", "grants"):
            node.child(field).items()  # arrays
    observation: Observation = dict(node.object(set(), _ACCEPTED_KEYS | {"refused"}))
    return observation


# --------------------------------------------------------------------------- replay


@dataclass(frozen=True, slots=True)
class EventsRun:
    """A replayed event list: every event's result and observation."""

    scenario: RotationEventsScenario
    results: tuple[Result[Step, ProtocolError], ...]
    steps: tuple[Observation, ...]  # observe(result) for each event

    @property
    def grants(self) -> tuple[GrantEnd, ...]:
        """Every grant that ended, from the accepted steps, in order."""
        return tuple(g for r in self.results if not _refused(r) for g in r.unwrap().outcome.grants)

    @property
    def endings(self) -> tuple[Ended, ...]:
        """Every request that left the speculative path, in order."""
        return tuple(e for r in self.results if not _refused(r) for e in r.unwrap().outcome.ended)

    @property
    def grant_log(self) -> tuple[tuple[RequestId, int], ...]:
        return tuple((grant.request, grant.slices) for grant in self.grants)

    @property
    def outcomes(self) -> Mapping[RequestId, Ending]:
        """Each ended request's ending (the last one, should a request end twice)."""
        return {ended.request: ended.ending for ended in self.endings}


def _refused(result: Result[Step, ProtocolError]) -> bool:
    return isinstance(result, Failure)


def run_events(
    skip_cap: int, events: Sequence[Event], profile: RulesProfile = RulesProfile.SEED
) -> tuple[Result[Step, ProtocolError], ...]:
    """Apply ``events`` in order from ``initial_state(skip_cap, profile)``; a refused
    event leaves the state unchanged and the replay goes on."""
    state = initial_state(skip_cap, profile)
    results = []
    for event in events:
        result = apply_event(state, event)
        if not isinstance(result, Failure):
            state = result.unwrap().state
        results.append(result)
    return tuple(results)


def replay_events(scenario: RotationEventsScenario) -> EventsRun:
    """Replay an events scenario: each event's result and observation."""
    results = run_events(scenario.skip_cap, scenario.events, scenario.profile)
    return EventsRun(scenario, results, tuple(observe(result) for result in results))


# ------------------------------------------------------------------------ documents


def _id_order(request: RequestId) -> tuple[int, int, str]:
    return (0, request, "") if isinstance(request, int) else (1, 0, request)


def event_json(event: Event) -> dict[str, object]:
    """An event as the events form writes it (every field written).

    >>> event_json(Tick(2, declined=frozenset({"B", "A"})))
    {'tick': {'budget': 2, 'classic_work': False, 'declined': ['A', 'B']}}
    """
    match event:
        case Arrival():
            return {
                "arrival": {
                    "request": event.request,
                    "lane": event.lane.label,
                    "budget": event.budget,
                    "may_wait": event.may_wait,
                }
            }
        case Tick():
            declined = sorted(event.declined, key=_id_order)
            return {
                "tick": {
                    "budget": event.budget,
                    "classic_work": event.classic_work,
                    "declined": declined,
                }
            }
        case RoundResult():
            return {"round_result": {"finished": event.finished}}
        case Cancel():
            return {"cancel": {"request": event.request}}


def event_text(event: Event) -> str:
    """An event in short form, for tables: ``arrival A normal budget 2``.

    >>> event_text(Tick(2, classic_work=True)), event_text(RoundResult(finished=False))
    ('tick budget 2 classic_work', 'round_result not finished')
    """
    match event:
        case Arrival():
            wait = "" if event.may_wait else " may_wait=false"
            return f"arrival {event.request} {event.lane.label} budget {event.budget}{wait}"
        case Tick():
            classic = " classic_work" if event.classic_work else ""
            declined = sorted(event.declined, key=_id_order)
            names = f" declined [{', '.join(map(str, declined))}]" if declined else ""
            return f"tick budget {event.budget}{classic}{names}"
        case RoundResult():
            return "round_result " + ("finished" if event.finished else "not finished")
        case Cancel():
            return f"cancel {event.request}"


def events_document(  # noqa: PLR0917
    name: str,
    description: str,
    skip_cap: int,
    events: Sequence[Event],
    steps: Sequence[Mapping[str, object]] | None,
    profile: RulesProfile = RulesProfile.SEED,
) -> dict[str, object]:
    """A scenario document in the events form (the replay format), e.g. for a
    counterexample; with ``steps``, it expects those observations, one per event.

    >>> doc = events_document("n", "", 2, [Cancel("A")], [{"refused": "unknown request"}])
    >>> doc["events"], doc["expect"]
    ([{'cancel': {'request': 'A'}}], {'steps': [{'refused': 'unknown request'}]})
    """
    doc: dict[str, object] = {
        "kind": "rotation",
        "name": name,
        "description": description,
        "skip_cap": skip_cap,
        "events": [event_json(event) for event in events],
    }
    if profile is not RulesProfile.SEED:
        doc["profile"] = profile.value
    if steps is not None:
        doc["expect"] = {"steps": [json.loads(json.dumps(step)) for step in steps]}
    return doc
