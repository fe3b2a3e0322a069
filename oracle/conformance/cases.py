"""The cases of each conformance check: a decision's inputs and the spec's answer.

Every enumeration is the oracle's own (:mod:`oracle.checks`): the grant order
check's backlogs, the rotation model check's event domain, canonical names and
state keys, the selection check's queues, policies and moments. The expected
answer of every case is the executable spec's (:mod:`oracle.spec`), written in
the protocol's form (:mod:`oracle.conformance.wire`) and normalised
(:func:`~oracle.conformance.decisions.normal_answer`).

The tick protocol is explored over the **spec's** reachable states: a case is
one state and one event, and the implementation is asked for the step from that
state. So the domain does not depend on the implementation under test (a wrong
answer does not lead the search astray), and every case is self-contained.
"""

from __future__ import annotations

import itertools
import json
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from oracle.checks import decisions as public_decisions
from oracle.checks import rotation_model
from oracle.checks import selection as selection_check
from oracle.checks.convert import spec_event, spec_state
from oracle.checks.observe import LANE_LABELS, events_scenario, spec_observation
from oracle.conformance import own_policies
from oracle.conformance.bounds import (
    FlagBounds,
    GrantOrderBounds,
    HeaderBounds,
    NumberBounds,
    ProtocolBounds,
    SelectionBounds,
    SettingBounds,
)
from oracle.conformance.decisions import key_value_json, normal_answer
from oracle.conformance.wire import (
    JSON,
    backlog_json,
    entry_json,
    number_json,
    read_state,
    state_json,
    taken_json,
)
from oracle.harness.rotation_events import event_json, event_text
from oracle.spec import grant_order as spec_order
from oracle.spec import protocol as spec
from oracle.spec import selection as spec_selection
from policy import Event, Lane, RequestId, RotationState, RulesProfile, Tick

__all__ = [
    "Case",
    "admission_json",
    "backlog_cap_cases",
    "backlog_text",
    "grant_expiry_cases",
    "grant_order_cases",
    "protocol_cases",
    "selection_cases",
]

Counts = dict[str, int]


def _nothing() -> tuple[JSON, ...]:
    return ()


def _no_scenario() -> Mapping[str, JSON]:
    return {}


@dataclass(frozen=True, slots=True)
class Case:
    """One question to the implementation and the spec's answer.

    ``size`` orders counterexamples (smaller is simpler); ``where`` says in words
    what the case is; ``events`` (tick protocol) gives the events that lead from
    the initial state to the case's state, its own event last, ``scenario`` the
    same run as an events scenario expecting the spec's observations, and
    ``renamed`` the same case with the requests named as in those events (the
    state of a case has canonical names): its inputs and the spec's answer. The
    last four are built only for the counterexamples kept.
    """

    decision: str
    inputs: Mapping[str, JSON]
    expected: JSON
    size: int
    where: Callable[[], str]
    events: Callable[[], tuple[JSON, ...]] = field(default=_nothing)
    scenario: Callable[[], Mapping[str, JSON]] = field(default=_no_scenario)
    renamed: Callable[[], tuple[Mapping[str, JSON], JSON]] | None = None


def _text(template: str, *values: object) -> str:
    return template.format(*values)


# ---------------------------------------------------------------- grant expiry, backlog cap


def grant_expiry_cases(bounds: NumberBounds, counts: Counts) -> Iterator[Case]:
    """``slice_grant_expired`` on every count, budget and flag of ``bounds``."""
    values = bounds.values
    del counts  # the runner counts the cases
    for slices, budget, pending in itertools.product(values, values, (False, True)):
        yield Case(
            "slice_grant_expired",
            {"slices_in_grant": slices, "budget": budget, "backlog_pending": pending},
            spec_order.slice_grant_expired(slices, budget, pending),
            slices + budget,
            partial(
                _text,
                "slices_in_grant {}, budget {}, backlog_pending {}",
                slices,
                budget,
                json.dumps(pending),
            ),
        )


def backlog_cap_cases(bounds: NumberBounds, counts: Counts) -> Iterator[Case]:
    """``backlog_admits`` on every backlog length and budget of ``bounds``."""
    values = bounds.values
    del counts  # the runner counts the cases
    for length, budget in itertools.product(values, values):
        yield Case(
            "backlog_admits",
            {"backlog_len": length, "budget": budget},
            spec_order.backlog_admits(length, budget),
            length + budget,
            partial(_text, "backlog_len {}, budget {}", length, budget),
        )


# ------------------------------------------------- alternation, budget setting, lane header


def alternation_cases(bounds: FlagBounds, counts: Counts) -> Iterator[Case]:
    """``slice_takes_tick`` on all four pairs of flags."""
    del bounds, counts  # one domain; the runner counts the cases
    for yielded, others in itertools.product((False, True), repeat=2):
        yield Case(
            "slice_takes_tick",
            {"yielded": yielded, "others_have_work": others},
            spec_order.slice_takes_tick(yielded, others),
            int(yielded) + int(others),
            partial(
                _text, "yielded {}, others_have_work {}", json.dumps(yielded), json.dumps(others)
            ),
        )


def _quoted(text: str | None) -> str:
    return "unset" if text is None else json.dumps(text)  # ASCII: escapes show every character


def budget_setting_cases(bounds: SettingBounds, counts: Counts) -> Iterator[Case]:
    """``parse_grant_rounds`` on every setting text of ``bounds`` (the public decisions
    check's domain)."""
    del counts  # the runner counts the cases
    for raw in public_decisions.setting_texts(bounds.longest):
        yield Case(
            "parse_grant_rounds",
            {"raw": raw},
            spec_order.parse_grant_rounds(raw),
            0 if raw is None else len(raw),
            partial(_text, "raw {}", _quoted(raw)),
        )


def lane_header_cases(bounds: HeaderBounds, counts: Counts) -> Iterator[Case]:
    """``parse_lane`` on every lane header of the public decisions check's domain."""
    del bounds, counts  # one domain; the runner counts the cases
    for header in public_decisions.lane_headers():
        yield Case(
            "parse_lane",
            {"header": header},
            LANE_LABELS[spec_order.parse_lane(header)],
            0 if header is None else len(header),
            partial(_text, "header {}", _quoted(header)),
        )


# ----------------------------------------------------------------------------- grant order


def backlog_text(cells: Sequence[tuple[int, int]], cap: int) -> str:
    """A backlog of ``(lane, skipped)`` cells at a skip cap, in words (a case's ``where``)."""
    shown = ", ".join(f"({LANE_LABELS[lane]}, {skipped})" for lane, skipped in cells)
    return f"backlog [{shown}] at skip cap {cap}"


def _describe_append(cells: Sequence[tuple[int, int]], cap: int, skips: int) -> str:
    return f"{backlog_text(cells, cap)}, appending J (low, parked, {skips} skips)"


def grant_order_cases(bounds: GrantOrderBounds, counts: Counts) -> Iterator[Case]:
    """``next_grant_index``, ``take_next_grantee`` and ``backlog_append`` on every
    backlog of ``bounds`` (the grant order check's domain: entry ``i`` is request
    ``R<i>``, parked at odd positions; the entry appended is a parked ``J`` with skips,
    which must enter with none)."""
    cells = [(int(lane), skipped) for lane in Lane for skipped in range(bounds.largest_skips + 1)]
    for cap in bounds.skip_caps:
        for length in range(bounds.longest + 1):
            spec_cells = [
                [spec_order.SpecEntry(f"R{i}", lane, i % 2 == 1, s) for lane, s in cells]
                for i in range(length)
            ]
            json_cells = [[entry_json(entry) for entry in row] for row in spec_cells]
            index_cells = [{"lane": LANE_LABELS[lane], "skipped": s} for lane, s in cells]
            joining = spec_order.SpecEntry("J", int(Lane.LOW), True, skipped=length + 1)
            joining_json = entry_json(joining)
            for chosen in itertools.product(range(len(cells)), repeat=length):
                counts["backlogs"] = counts.get("backlogs", 0) + 1
                entries = [cells[c] for c in chosen]
                backlog = tuple(spec_cells[i][c] for i, c in enumerate(chosen))
                listed = [json_cells[i][c] for i, c in enumerate(chosen)]
                where = partial(backlog_text, entries, cap)
                yield Case(
                    "next_grant_index",
                    {"entries": [index_cells[c] for c in chosen], "skip_cap": cap},
                    spec_order.next_grant_index(entries, cap),
                    length,
                    where,
                )
                taken = spec_order.take_next_grantee(backlog, cap)
                yield Case(
                    "take_next_grantee",
                    {"backlog": listed, "skip_cap": cap},
                    taken_json(taken),
                    length,
                    where,
                )
                if cap == bounds.skip_caps[0]:  # re-entry does not depend on the skip cap
                    yield Case(
                        "backlog_append",
                        {"backlog": listed, "entry": joining_json},
                        backlog_json(spec_order.re_enter(backlog, joining)),
                        length,
                        partial(_describe_append, entries, cap, length + 1),
                    )


# ---------------------------------------------------------------------------- tick protocol

_Key = tuple[object, ...]
_Parents = dict[_Key, tuple[_Key, Event, dict[RequestId, str]] | None]


def _model_actions(outcome: spec.Outcome) -> int:
    return int(outcome.action is not None or spec.CANCELLED_JOB in outcome.branches)


def _path_events(parents: _Parents, key: _Key, event: Event) -> tuple[JSON, ...]:
    path = rotation_model.path_to(parents, key)
    return tuple(event_json(e) for e in rotation_model.stable_events(path, event))


def _path_scenario(
    parents: _Parents, key: _Key, event: Event, skip_cap: int, profile: str
) -> Mapping[str, JSON]:
    events = rotation_model.stable_events(rotation_model.path_to(parents, key), event)
    return events_scenario(
        f"conformance-tick-protocol-{len(events)}-events",
        f"tick protocol conformance, skip cap {skip_cap}, {profile} rules: the spec's"
        f" observation after every event; an implementation disagreed at event"
        f" {len(events) - 1} ({event_text(event)}).",
        skip_cap,
        events,
        RulesProfile(profile),
    )


def _path_case(
    parents: _Parents, key: _Key, event: Event, skip_cap: int, profile: str
) -> tuple[Mapping[str, JSON], JSON]:
    """The case reached by the path's events, with their names: the spec's state
    after all but the last event, the last event, and the spec's answer."""
    *before, last = rotation_model.stable_events(rotation_model.path_to(parents, key), event)
    state = spec.initial_state(skip_cap, profile)
    for earlier in before:
        result = spec.step(state, spec_event(earlier))
        assert not isinstance(result, str), "a path's events are accepted ones"
        state = result[0]
    answer = normal_answer("apply_event", spec_observation(spec.step(state, spec_event(last))))
    return {"state": state_json(state), "event": event_json(last)}, answer


def _describe_step(parents: _Parents, key: _Key, event: Event, skip_cap: int) -> str:
    events = rotation_model.stable_events(rotation_model.path_to(parents, key), event)
    return f"after {len(events) - 1} events at skip cap {skip_cap}, {event_text(events[-1])}"


def protocol_cases(bounds: ProtocolBounds, counts: Counts) -> Iterator[Case]:
    """``apply_event`` on every state of the spec reachable within ``bounds`` and every
    event of the rotation model check's domain in it.

    The search is the model check's: a breadth-first search from the initial state,
    live requests renamed ``R0, R1, ...`` after every step and the grant counter
    clamped at ``largest_budget + 1`` (:func:`oracle.checks.rotation_model.explore`
    explains why neither changes a decision), states told apart by the same key;
    only the steps are the spec's, so the states are the spec's."""
    budgets = range(bounds.largest_budget + 1)
    clamp = bounds.largest_budget + 1
    deepest = bounds.max_depth
    profile = bounds.profile
    for skip_cap in bounds.skip_caps:
        start = read_state(state_json(spec.initial_state(skip_cap, profile)))
        start_key = rotation_model.state_key(start, 0)
        parents: _Parents = {start_key: None}
        frontier = deque([(spec_state(start), 0, start_key, 0)])
        events_by_shape: dict[object, list[tuple[Event, spec.Event, JSON]]] = {}
        canonical_of: dict[spec.State, tuple[RotationState, dict[RequestId, str]]] = {}
        states = 0
        while frontier:
            state, actions, key, depth = frontier.popleft()
            states += 1
            as_json = state_json(state)
            shape = (len(state.backlog), state.active is None, state.acted)
            events = events_by_shape.get(shape)
            if events is None:  # events depend only on how many are live and where
                events = [
                    (event, spec_event(event), event_json(event))
                    for event in rotation_model.events_in(read_state(as_json), budgets)
                ]
                events_by_shape[shape] = events
            for event, as_spec, written in events:
                result = spec.step(state, as_spec)
                yield Case(
                    "apply_event",
                    {"state": as_json, "event": written},
                    spec_observation(result),  # already in normal form
                    depth + 1,
                    partial(_describe_step, parents, key, event, skip_cap),
                    partial(_path_events, parents, key, event),
                    partial(_path_scenario, parents, key, event, skip_cap, profile),
                    partial(_path_case, parents, key, event, skip_cap, profile),
                )
                if isinstance(result, str) or (deepest is not None and depth >= deepest):
                    continue
                after, outcome = result
                renamed = canonical_of.get(after)
                if renamed is None:  # many steps lead to one state: rename each state once
                    renamed = rotation_model.canonical_state(read_state(state_json(after)), clamp)
                    canonical_of[after] = renamed
                canonical, names = renamed
                successor_actions = (
                    0 if isinstance(event, Tick) else actions + _model_actions(outcome)
                )
                successor = rotation_model.state_key(canonical, successor_actions)
                if successor not in parents:
                    parents[successor] = (key, event, names)
                    frontier.append(
                        (spec_state(canonical), successor_actions, successor, depth + 1)
                    )
        counts[f"states (skip cap {skip_cap})"] = states
        counts["states"] = counts.get("states", 0) + states


# --------------------------------------------------------------------------------- selection


def _selection_units(bounds: SelectionBounds) -> list[tuple[str, int, int, int | None]]:
    longest = {"one": bounds.one_key, "two": bounds.two_key}
    units = []
    for unit in selection_check.SELECTION.units("deep"):
        assert isinstance(unit, tuple)
        domain, length, resumed, first = unit
        if length <= longest[domain]:
            units.append((domain, length, resumed, first))
    return units


def _describe_queue(labels: Sequence[str], resumed: int, policy: str, fits: str) -> str:
    shown = f"queue [{', '.join(labels)}] ({resumed} resumed), policy {policy}"
    return shown if not fits else f"{shown}, fits {fits}"


def _fits_in(fitting: frozenset[str], entry: spec_selection.SpecEntry) -> bool:
    return entry.identity in fitting


def admission_json(
    admitted: tuple[str, int | None, Sequence[spec_selection.SpecEntry]], keys: Sequence[JSON]
) -> JSON:
    """The spec's answer of ``attempt_admission`` in the protocol's form: ``admitted`` is
    :func:`oracle.spec.selection.admit`'s, ``keys`` the selected entry's key values."""
    outcome, index, rest = admitted
    if index is None:
        return {"outcome": "empty"}
    return {
        "outcome": outcome,
        "index": index,
        "keys": keys,
        "queue": [entry.identity for entry in rest],
    }


def _own_policy_cases(bounds: SelectionBounds, counts: Counts, attempts: bool) -> Iterator[Case]:
    """:func:`selection_cases` under the implementer's own policies of ``bounds``."""
    for own in own_policies.own_cases(bounds.policies, bounds.one_key):
        counts["queues"] = counts.get("queues", 0) + 1
        answer = spec_selection.select(own.queue, own.policy.spec, own.now, own.budget_left)
        keys = [] if answer is None else [key_value_json(k) for k in answer[1]]
        if not attempts:
            yield Case(
                "select_waiting",
                own.inputs,
                None if answer is None else {"index": answer[0], "keys": keys},
                own.size,
                own.where,
            )
            continue
        fittings: list[tuple[str, ...]] = [own.every, ()]
        if answer is not None and own.size > 1:
            fittings.append(tuple(i for i in own.every if i != f"R{answer[0]}"))
        for fitting in fittings:
            admitted = spec_selection.admit(
                own.queue,
                own.policy.spec,
                own.now,
                own.budget_left,
                partial(_fits_in, frozenset(fitting)),
            )
            yield Case(
                "attempt_admission",
                {**own.inputs, "fits": list(fitting)},
                admission_json(admitted, keys),
                own.size,
                own.described(selection_check.fits_text(fitting, own.size)),
            )


def selection_cases(bounds: SelectionBounds, counts: Counts, attempts: bool) -> Iterator[Case]:
    """``select_waiting`` (or, with ``attempts``, ``attempt_admission`` with the
    selected entry fitting, not fitting, and every other entry fitting) on every
    queue of ``bounds`` under every policy and moment of the selection check (or
    of the implementer's own policies, when ``bounds`` names them)."""
    if bounds.policies:
        yield from _own_policy_cases(bounds, counts, attempts)
        return
    now = number_json(selection_check.NOW)
    for domain_name, length, resumed, first in _selection_units(bounds):
        two = domain_name == "two"
        domain = selection_check.TWO_KEY_DOMAIN if two else selection_check.ONE_KEY_DOMAIN
        labels = (
            tuple(f"({a}, {b})" for (a, _, _), (b, _, _) in itertools.product(domain, domain))
            if two
            else tuple(label for label, _, _ in domain)
        )
        cells = selection_check.value_attributes(domain, two)
        cases = selection_check.policy_cases(two)
        plan = [
            (
                case,
                spec_selection.SpecPolicy(case.spec_keys, {}, case.timing),
                {
                    "policy": case.document,
                    "key_trees": None if case.spec_keys is None else list(case.spec_keys),
                },
                {
                    "now": now,
                    "budget_left": {s: number_json(v) for s, v in case.budget_left.items()},
                },
            )
            for case in cases
        ]
        fronts: list[tuple[int, ...]] = [()] if first is None else [(first,)]
        rests = itertools.product(range(len(cells)), repeat=max(length - 1, 0))
        for front, rest in itertools.product(fronts, rests):
            values = front + rest
            counts["queues"] = counts.get("queues", 0) + 1
            spec_queue = tuple(
                spec_selection.SpecEntry(f"R{i}", cells[v], float(i), float(i), i < resumed)
                for i, v in enumerate(values)
            )
            listed = [
                {
                    "id": f"R{i}",
                    "attrs": {name: number_json(x) for name, x in cells[v].items()},
                    "serial": i,
                    "enqueued_at": i,
                    "resumed": i < resumed,
                }
                for i, v in enumerate(values)
            ]
            shown = tuple(labels[v] for v in values)
            every = tuple(f"R{i}" for i in range(length))
            for case, policy, policy_inputs, moment in plan:
                answer = spec_selection.select(
                    spec_queue, policy, selection_check.NOW, case.budget_left
                )
                keys = [] if answer is None else [key_value_json(k) for k in answer[1]]
                inputs = {**policy_inputs, "queue": listed, "moment": moment}
                if not attempts:
                    yield Case(
                        "select_waiting",
                        inputs,
                        None if answer is None else {"index": answer[0], "keys": keys},
                        length,
                        partial(_describe_queue, shown, resumed, case.name, ""),
                    )
                    continue
                fittings: list[tuple[str, ...]] = [every, ()]
                if answer is not None and length > 1:
                    fittings.append(tuple(i for i in every if i != f"R{answer[0]}"))
                for fitting in fittings:
                    admitted = spec_selection.admit(
                        spec_queue,
                        policy,
                        selection_check.NOW,
                        case.budget_left,
                        partial(_fits_in, frozenset(fitting)),
                    )
                    expected = admission_json(admitted, keys)
                    yield Case(
                        "attempt_admission",
                        {**inputs, "fits": list(fitting)},
                        expected,
                        length,
                        partial(
                            _describe_queue,
                            shown,
                            resumed,
                            case.name,
                            selection_check.fits_text(fitting, length),
                        ),
                    )
