"""Rotation scenarios as an exact event list: loading, observations, verdicts, documents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oracle.harness.rotation_events import (
    REFUSALS,
    RotationEventsScenario,
    event_json,
    events_document,
    observe,
    replay_events,
    run_events,
)
from oracle.harness.scenarios import golden_paths, load_scenario
from policy import (
    Arrival,
    Cancel,
    Event,
    Lane,
    ProtocolErrorKind,
    RoundResult,
    Tick,
    apply_event,
    initial_state,
)
from tests.replay_helpers import assert_refused_in_one_line, replay, write

GOLDEN = next(path for path in golden_paths() if path.name == "events-budget-2.json")


def load(path: Path) -> RotationEventsScenario:
    scenario = load_scenario(path).unwrap()
    assert isinstance(scenario, RotationEventsScenario)
    return scenario


ARRIVE_A = {"arrival": {"request": "A", "lane": "normal", "budget": 2}}
TICK = {"tick": {"budget": 2}}


def events_doc(**changes: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "kind": "rotation",
        "name": "t",
        "events": [ARRIVE_A, {"round_result": {"finished": True}}, TICK],
    }
    doc.update(changes)
    return {key: value for key, value in doc.items() if value is not None}


# --- the golden file ----------------------------------------------------------------


def test_the_events_golden_replays_as_the_budget_2_schedule() -> None:
    status, text = replay("--json", str(GOLDEN))
    assert status == 0
    result = json.loads(text)
    assert set(result) == {"name", "kind", "steps", "grants", "outcomes", "passed"}
    assert result["kind"] == "rotation"
    assert result["passed"] is True
    # The same grant log as the driven budget-2 scenario.
    assert result["grants"] == [["A", 2], ["B", 2], ["A", 2], ["B", 1]]
    assert result["outcomes"] == {"A": "completed", "B": "completed"}
    assert result["steps"][3] == {"refused": "duplicate request"}
    assert result["steps"][-1] == {"refused": "unknown request"}


def test_the_text_table_has_a_line_per_event() -> None:
    status, text = replay(str(GOLDEN))
    assert status == 0
    assert "events-budget-2 (rotation, events): skip cap 2, 18 events" in text
    assert " 0  arrival A normal budget 2  direct admission\n" in text
    assert " 3  arrival B normal budget 2  refused: duplicate request\n" in text
    assert "17  cancel A                   refused: unknown request\n" in text
    assert "grant log  [(A,2),(B,2),(A,2),(B,1)]" in text
    assert "  PASS\n" in text


def test_a_long_event_text_is_cut_and_its_column_stays_narrow(tmp_path: Path) -> None:
    # About 200 KB: a tick declining 10,000 ids, then 3,000 cancels, printed 177 MB when
    # every row was padded to the tick's text; now each row is a bounded width.
    ids = [f"id{i:05}" for i in range(10_000)]
    events = [{"arrival": {"request": ids[0], "budget": 2}}]
    events.append({"tick": {"budget": 2, "declined": ids}})
    events += [{"cancel": {"request": ids[i]}} for i in range(3_000)]
    path = write(tmp_path, events_doc(events=events))
    assert path.stat().st_size < 250_000
    status, text = replay(str(path))
    assert status == 0
    rows = text.splitlines()[2 : 2 + len(events)]
    assert rows[1].startswith("     1  tick budget 2 declined [id00000, id00001, ")
    cut = rows[1][len("     1  ") :].split("  ")[0]
    # policy.text.cut's rule: 80 characters, then "... (N characters)"
    assert cut[80:].startswith("... (")
    assert cut.endswith(" characters)")
    assert max(map(len, rows)) <= 2 + 4 + 2 + 80 + len("... (99,999 characters)") + 2 + 40
    assert len(text) < 150 * len(events)


def test_the_driven_schedule_and_the_event_list_agree() -> None:
    from oracle.harness.rotation_replay import replay_rotation  # noqa: PLC0415
    from oracle.harness.rotation_scenario import RotationScenario  # noqa: PLC0415

    driven = load_scenario(GOLDEN.parent / "budget-2.json").unwrap()
    assert isinstance(driven, RotationScenario)
    run = replay_rotation(driven)
    driver_events = [event for tick in run.ticks for event, _ in tick.steps]
    listed = list(load(GOLDEN).events)
    del listed[3]  # the refused duplicate arrival
    assert listed[:-1] == driver_events  # and without the refused cancel at the end


# --- observations ----------------------------------------------------------------------


REFUSED: list[tuple[list[Event], str]] = [
    ([RoundResult(finished=True)], "no action in flight"),
    ([Arrival("A", Lane.NORMAL, 2), Tick(2)], "result pending"),
    ([Cancel("A")], "unknown request"),
    (
        [Arrival("A", Lane.NORMAL, 2), RoundResult(False), Arrival("A", Lane.HIGH, 1)],
        "duplicate request",
    ),
    ([Arrival("A", Lane.NORMAL, -1)], "negative budget"),
    ([Tick(-3)], "negative budget"),
]


@pytest.mark.parametrize(("events", "refusal"), REFUSED)
def test_a_refused_event_is_observed_and_changes_nothing(events: list[Event], refusal: str) -> None:
    assert observe(run_events(2, events)[-1]) == {"refused": refusal}
    # The replay goes on from the state before the refused event.
    follow = Arrival("Z", Lane.LOW, 1)
    with_refused = observe(run_events(2, [*events, follow])[-1])
    without = observe(run_events(2, [*events[:-1], follow])[-1])
    assert with_refused == without
    assert "refused" not in with_refused


def test_refusal_names_cover_every_protocol_error() -> None:
    # The refusals a scenario's events can meet (its values are always well typed);
    # the kernel's kinds for values of the wrong type have names too.
    assert set(REFUSALS) >= {
        "no action in flight",
        "result pending",
        "unknown request",
        "duplicate request",
        "negative budget",
    }
    assert len(REFUSALS) == len(ProtocolErrorKind)


def test_an_accepted_observation_has_the_exact_shape() -> None:
    state = initial_state(2)
    first = apply_event(state, Arrival(7, Lane.HIGH, 3, may_wait=False))
    observation = observe(first)
    assert observation == {
        "branches": ["direct admission"],
        "use": None,
        "action": [7, "admission slice 0"],
        "ended": [],
        "grants": [],
        "active": {
            "request": 7,
            "lane": "high",
            "slices": 0,
            "budget": 3,
            "in_flight": "admission slice 0",
            "cancelled": False,
        },
        "backlog": [],
        "yielded": True,
        "acted": True,
    }
    assert json.loads(json.dumps(observation)) == observation  # JSON data only
    step = first.unwrap()
    waiting = observe(apply_event(step.state, Arrival("w", Lane.LOW, 3)))
    assert waiting["backlog"] == [
        {"request": "w", "lane": "low", "kind": "waiter", "skipped": 0, "cancelled": False}
    ]


# --- documents ------------------------------------------------------------------------


EVERY_KIND: list[Event] = [
    Arrival("A", Lane.HIGH, 2),
    RoundResult(finished=False),
    Arrival(5, Lane.LOW, 0, may_wait=False),
    Arrival("C", Lane.NORMAL, 1),
    Cancel("C"),
    Tick(1, classic_work=True, declined=frozenset({"C", 5})),
    Tick(1),
    RoundResult(finished=True),
    Tick(-1),
    Cancel("nobody"),
]


def test_events_document_round_trips_and_passes(tmp_path: Path) -> None:
    steps = [observe(result) for result in run_events(1, EVERY_KIND)]
    doc = events_document("round-trip", "every kind of event", 1, EVERY_KIND, steps)
    path = write(tmp_path, doc)
    scenario = load(path)
    assert scenario.events == tuple(EVERY_KIND)
    assert scenario.skip_cap == 1
    assert scenario.description == "every kind of event"
    status, text = replay("--json", str(path))
    assert status == 0
    result = json.loads(text)
    assert result["passed"] is True
    assert result["steps"] == steps
    assert result["steps"][-2:] == [{"refused": "negative budget"}, {"refused": "unknown request"}]


def test_events_document_without_steps_expects_nothing(tmp_path: Path) -> None:
    doc = events_document("plain", "", 2, EVERY_KIND[:2], None)
    assert "expect" not in doc
    status, text = replay("--json", str(write(tmp_path, doc)))
    assert status == 0
    assert "passed" not in json.loads(text)


def test_event_json_writes_every_field() -> None:
    assert event_json(Arrival("A", Lane.HIGH, -2)) == {
        "arrival": {"request": "A", "lane": "high", "budget": -2, "may_wait": True}
    }
    assert event_json(Tick(0, declined=frozenset({"b", 10, "a", 2}))) == {
        "tick": {"budget": 0, "classic_work": False, "declined": [2, 10, "a", "b"]}
    }
    assert event_json(RoundResult(finished=True)) == {"round_result": {"finished": True}}
    assert event_json(Cancel(3)) == {"cancel": {"request": 3}}


def test_defaults_of_the_events_form(tmp_path: Path) -> None:
    scenario = load(write(tmp_path, events_doc()))
    assert scenario.skip_cap == 2
    assert scenario.events == (Arrival("A", Lane.NORMAL, 2), RoundResult(True), Tick(2))
    assert replay_events(scenario).grant_log == (("A", 1),)


# --- verdicts -------------------------------------------------------------------------


def test_a_wrong_step_fails_with_both_observations(tmp_path: Path) -> None:
    doc = events_doc(events=[{"cancel": {"request": "A"}}, ARRIVE_A])
    steps = [observe(r) for r in run_events(2, load(write(tmp_path, doc)).events)]
    wrong = {**steps[1], "acted": False}
    path = write(tmp_path, events_doc(events=doc["events"], expect={"steps": [steps[0], wrong]}))
    status, text = replay(str(path))
    assert status == 1
    assert "FAIL steps[0]" not in text
    assert "  FAIL steps[1]:\n    expected {" in text
    expected_line, actual_line = text.split("FAIL steps[1]:\n")[1].splitlines()[:2]
    assert expected_line == "    expected " + json.dumps(wrong, separators=(",", ":"))
    assert actual_line == "    got      " + json.dumps(steps[1], separators=(",", ":"))
    status, text = replay("--json", str(path))
    assert status == 1
    assert json.loads(text)["passed"] is False


def test_steps_compare_as_json_not_as_python(tmp_path: Path) -> None:
    (steps,) = [[observe(r) for r in run_events(2, [Arrival("A", Lane.NORMAL, 2)])]]
    active = steps[0]["active"]
    assert isinstance(active, dict)
    one_for_true = {**steps[0], "active": {**active, "cancelled": 0}}
    path = write(tmp_path, events_doc(events=[ARRIVE_A], expect={"steps": [one_for_true]}))
    assert replay(str(path))[0] == 1


def test_grants_and_outcomes_of_the_events_form(tmp_path: Path) -> None:
    expect = {"grants": [["A", 2]], "outcomes": {"A": "aborted"}}
    status, text = replay(str(write(tmp_path, events_doc(expect=expect))))
    assert status == 1
    assert "FAIL grants: expected [(A,2)], got [(A,1)]" in text
    assert "FAIL outcomes.A: expected aborted, got completed" in text
    doc = events_doc(events=[ARRIVE_A], expect={"outcomes": {"A": "completed"}})
    status, text = replay(str(write(tmp_path, doc)))
    assert status == 1
    assert "FAIL outcomes.A: expected completed, got not ended" in text


# --- bad files ------------------------------------------------------------------------


def arrival(**fields: object) -> dict[str, object]:
    return {"arrival": {"request": "A", "budget": 2, **fields}}


BAD_FILES: list[tuple[dict[str, object], str]] = [
    (events_doc(requests=[{"id": "A", "slices": 1}]), "give requests (driven ticks) or events"),
    (events_doc(budget=2), "budget: is not allowed with events"),
    (events_doc(budget_setting="2"), "budget_setting: is not allowed with events"),
    (events_doc(classic_work="never"), "classic_work: is not allowed with events"),
    (events_doc(events=None), 'requests: is required (or give "events"'),
    (events_doc(events=[]), "events: must list at least one event"),
    (events_doc(events={"tick": {}}), "events: must be an array"),
    (events_doc(skip_cap=0), "skip_cap: must be a positive integer"),
    (events_doc(extra=1), "extra: unknown field"),
    (events_doc(events=[ARRIVE_A, {**TICK, **ARRIVE_A}]), "events[1]: must be an object with one"),
    (events_doc(events=[ARRIVE_A, "tick"]), "events[1]: must be an object with one key"),
    (events_doc(events=[{"wait": {}}]), "events[0].wait: unknown event"),
    (events_doc(events=[arrival(budget="2")]), "events[0].arrival.budget: must be an integer"),
    (events_doc(events=[arrival(budget=True)]), "events[0].arrival.budget: must be an integer"),
    (events_doc(events=[arrival(budget=1.5)]), "events[0].arrival.budget: must be an integer"),
    (events_doc(events=[arrival(request="")]), "events[0].arrival.request: must be a non-empty"),
    (events_doc(events=[arrival(lane=1)]), "events[0].arrival.lane: must be a string"),
    (events_doc(events=[arrival(may_wait="no")]), "events[0].arrival.may_wait: must be true"),
    (events_doc(events=[arrival(slices=2)]), "events[0].arrival.slices: unknown field"),
    (events_doc(events=[{"arrival": {"request": "A"}}]), "events[0].arrival.budget: is required"),
    (events_doc(events=[{"tick": {}}]), "events[0].tick.budget: is required"),
    (
        events_doc(events=[{"tick": {"budget": 1, "declined": ["A", "A"]}}]),
        "events[0].tick.declined[1]: names 'A' twice",
    ),
    (
        events_doc(events=[{"tick": {"budget": 1, "classic_work": 1}}]),
        "events[0].tick.classic_work: must be true or false",
    ),
    (events_doc(events=[{"round_result": {}}]), "events[0].round_result.finished: is required"),
    (events_doc(events=[{"cancel": {"request": None}}]), "events[0].cancel.request: must be a"),
    (
        events_doc(events=[arrival(request=1), {"cancel": {"request": "1"}}]),
        "events[1].cancel.request: request id '1' reads the same as 1",
    ),
    (events_doc(expect={"steps": [{"refused": "unknown request"}]}), "expect.steps: gives 1"),
    (events_doc(expect={"steps": [{}, {}, {}]}), "expect.steps[0].acted: is required"),
    (
        events_doc(expect={"steps": [{"refused": "no"}, {}, {}]}),
        "expect.steps[0].refused: must be one of duplicate request",
    ),
    (
        events_doc(expect={"steps": [{"refused": "negative budget", "use": None}, {}, {}]}),
        "expect.steps[0].use: unknown field",
    ),
    (events_doc(expect={"grants": [["B", 1]]}), "expect.grants[0][0]: names no request"),
    (events_doc(expect={"outcomes": {"Z": "completed"}}), "expect.outcomes.Z: names no request"),
    (events_doc(expect={"order": []}), "expect.order: unknown field"),
    (
        events_doc(requests=[{"id": "A", "slices": 1}]),
        "events: give requests (driven ticks) or events (an exact event list), not both",
    ),
    (
        events_doc(events=[{"w" * 201: {}}]),
        "events[0]: a member name 'www",
    ),
]


@pytest.mark.parametrize(("doc", "message"), BAD_FILES)
def test_bad_events_files_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict[str, object], message: str
) -> None:
    assert_refused_in_one_line(tmp_path, capsys, doc, message)


def test_a_bad_observation_shape_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (step,) = [observe(r) for r in run_events(2, [Arrival("A", Lane.NORMAL, 2)])]
    for broken, message in [
        ({**step, "active": {"request": "A"}}, "expect.steps[0].active.budget: is required"),
        ({**step, "backlog": [{"request": "A"}]}, "expect.steps[0].backlog[0].cancelled"),
        ({**step, "branches": "direct admission"}, "expect.steps[0].branches: must be an array"),
    ]:
        path = write(tmp_path, events_doc(events=[ARRIVE_A], expect={"steps": [broken]}))
        assert replay(str(path))[0] == 2
        assert message in capsys.readouterr().err
