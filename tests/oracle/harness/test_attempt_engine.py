"""The attempt engine: one admission attempt on a given queue, and its keys, exactly."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from oracle.harness.admission_replay import replay_admission
from oracle.harness.admission_scenario import AdmissionScenario, key_json, same_keys
from oracle.harness.attempt_engine import AttemptRun, attempt_document, attempt_queue
from oracle.harness.scenarios import golden_paths, load_scenario
from tests.replay_helpers import assert_refused_in_one_line, replay, write

GOLDEN = next(path for path in golden_paths() if path.name == "attempt-nan-loses-to-inf.json")


def load(path: Path) -> AdmissionScenario:
    scenario = load_scenario(path).unwrap()
    assert isinstance(scenario, AdmissionScenario)
    return scenario


def attempt_doc(**changes: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "kind": "admission",
        "name": "t",
        "engine": "attempt",
        "attempt": {"now": 5, "budget_left": {"engine": 96}, "fits": ["A", "B"]},
        "policy": {"attributes": {"priority": "visible"}, "keys": ["priority"]},
        "requests": [
            {"id": "A", "enqueue": 1, "attrs": {"priority": 2}},
            {"id": "B", "enqueue": 2, "attrs": {"priority": 1}},
        ],
    }
    doc.update(changes)
    return {key: value for key, value in doc.items() if value is not None}


def result_of(tmp_path: Path, doc: object) -> tuple[int, dict[str, object]]:
    status, text = replay("--json", str(write(tmp_path, doc)))
    result = json.loads(text)
    assert isinstance(result, dict)
    return status, result


# --- the golden file --------------------------------------------------------------


def test_the_golden_attempt_passes_with_exact_keys() -> None:
    status, text = replay("--json", str(GOLDEN))
    assert status == 0
    result = json.loads(text)
    assert result["selected"] == ["B"]
    assert result["admitted_at"] == [5]
    assert result["keys"] == ["Infinity", "-0.0"]
    assert result["passed"] is True
    assert list(result) == ["name", "kind", "selected", "admitted_at", "keys", "requests", "passed"]


def test_the_golden_attempt_text() -> None:
    status, text = replay(str(GOLDEN))
    assert status == 0
    assert "attempt-nan-loses-to-inf (admission): one attempt at now 5" in text
    assert "  queue        A, B\n" in text
    assert "  selected     B\n" in text
    assert "  keys         [Infinity, -0.0]\n" in text
    assert "  result       admitted at 5\n" in text


def test_pool_and_step_results_have_no_keys() -> None:
    status, text = replay("--json", str(GOLDEN.parent))
    assert status == 0
    for line in text.splitlines():
        result = json.loads(line)
        assert ("keys" in result) == result["name"].startswith("attempt-"), result["name"]


# --- semantics ----------------------------------------------------------------------


def test_the_best_key_is_selected_and_admitted(tmp_path: Path) -> None:
    status, result = result_of(
        tmp_path, attempt_doc(expect={"selected": ["B"], "admitted_at": [5], "keys": [1]})
    )
    assert status == 0
    assert result["passed"] is True
    assert result["requests"] == [
        {
            "id": "A",
            "serial": 0,
            "enqueued_at": 1,
            "admitted_at": [],
            "first_token_at": None,
            "finished_at": None,
            "preemptions": 0,
        },
        {
            "id": "B",
            "serial": 1,
            "enqueued_at": 2,
            "admitted_at": [5],
            "first_token_at": None,
            "finished_at": None,
            "preemptions": 0,
        },
    ]


def test_a_resumed_front_is_selected_without_keys_and_may_block(tmp_path: Path) -> None:
    requests = [
        {"id": "R", "enqueue": 4, "attrs": {"priority": 9}, "resumed": True},
        {"id": "A", "enqueue": 1, "attrs": {"priority": 0}},
    ]
    doc = attempt_doc(
        requests=requests,
        attempt={"now": 5, "fits": ["A"]},
        expect={"selected": ["R"], "admitted_at": [], "keys": []},
    )
    status, result = result_of(tmp_path, doc)
    assert status == 0
    assert (result["selected"], result["admitted_at"], result["keys"]) == (["R"], [], [])
    status, text = replay(str(write(tmp_path, doc)))
    assert "  queue        R (resumed), A\n" in text
    assert "  keys         []\n" in text
    assert "  result       blocked: the selected request does not fit\n" in text
    run = replay_admission(load(write(tmp_path, doc)))
    assert isinstance(run, AttemptRun)
    assert run.blocked


def test_the_listed_order_is_the_queue_order(tmp_path: Path) -> None:
    requests = [
        {"id": "R1", "enqueue": 3, "resumed": True, "attrs": {"priority": 0}},
        {"id": "R2", "enqueue": 2, "resumed": True, "attrs": {"priority": 0}},
        {"id": "X", "serial": 7, "attrs": {"priority": 0}},
        {"id": "Y", "resumed": False, "attrs": {"priority": 0}},
    ]
    doc = attempt_doc(requests=requests, attempt={"now": 5, "fits": ["X"]})
    queue = attempt_queue(load(write(tmp_path, doc)))
    assert [(e.identity, e.resumed, e.enqueued_at, e.serial) for e in queue] == [
        ("R1", True, 3.0, 0),
        ("R2", True, 2.0, 1),
        ("X", False, 0.0, 7),
        ("Y", False, 0.0, 3),
    ]


def test_an_empty_queue_is_allowed_for_the_attempt_engine(tmp_path: Path) -> None:
    doc = attempt_doc(
        requests=[],
        attempt={"now": 0},
        expect={"selected": [], "admitted_at": [], "keys": []},
    )
    status, result = result_of(tmp_path, doc)
    assert status == 0
    assert (result["selected"], result["keys"], result["requests"]) == ([], [], [])
    assert "  result       queue empty\n" in replay(str(write(tmp_path, doc)))[1]


def test_keys_see_the_moment(tmp_path: Path) -> None:
    policy = {
        "attributes": {"priority": "visible"},
        "keys": ["budget_left(engine)", "budget_left(decode)", "waited", "now"],
    }
    status, result = result_of(
        tmp_path, attempt_doc(policy=policy, attempt={"now": -1.5, "budget_left": {"engine": 96}})
    )
    assert status == 0
    # A missing stage reads NaN, and NaN ties with NaN; waited is now - enqueue:
    # A waited -2.5, B -3.5, so B has the smaller key list.
    assert result["selected"] == ["B"]
    assert result["keys"] == [96, "NaN", -3.5, -1.5]
    assert result["admitted_at"] == []  # fits defaults to []


def test_nan_equals_nan_and_signed_zeros_differ(tmp_path: Path) -> None:
    policy = {"keys": ["0/0", "-0", "0", "1/-0", "0.25"]}
    expected: list[object] = ["NaN", "-0.0", 0, "-Infinity", 0.25]
    requests = [{"id": "A"}]
    attempt = {"now": 0, "fits": ["A"]}
    status, result = result_of(
        tmp_path,
        attempt_doc(policy=policy, requests=requests, attempt=attempt, expect={"keys": expected}),
    )
    assert status == 0
    assert result["keys"] == expected
    # -0.0 written as a JSON number is negative zero too.
    status, _ = result_of(
        tmp_path,
        attempt_doc(
            policy=policy,
            requests=requests,
            attempt=attempt,
            expect={"keys": ["NaN", -0.0, 0.0, "-Infinity", 0.25]},
        ),
    )
    assert status == 0
    for wrong in (
        ["NaN", 0, 0, "-Infinity", 0.25],
        ["NaN", "-0.0", "-0.0", "-Infinity", 0.25],
        ["Infinity", "-0.0", 0, "-Infinity", 0.25],
        ["NaN", "-0.0", 0, "-Infinity"],
    ):
        path = write(
            tmp_path,
            attempt_doc(policy=policy, requests=requests, attempt=attempt, expect={"keys": wrong}),
        )
        status, text = replay(str(path))
        assert status == 1, wrong
        assert "FAIL keys: expected [" in text
        assert "got [NaN, -0.0, 0, -Infinity, 0.25]" in text


def test_key_json_and_same_keys() -> None:
    assert [key_json(v) for v in (math.nan, math.inf, -math.inf, -0.0, 0.0, 3.0, 0.1)] == [
        "NaN",
        "Infinity",
        "-Infinity",
        "-0.0",
        0,
        3,
        0.1,
    ]
    assert key_json(1e300) == int(1e300)  # integral floats are exact integers
    assert same_keys((math.nan,), (-math.nan,))
    assert not same_keys((0.0,), (-0.0,))
    assert not same_keys((1.0,), (1.0, 2.0))


def test_a_wrong_expectation_exits_1(tmp_path: Path) -> None:
    path = write(tmp_path, attempt_doc(expect={"selected": ["A"], "admitted_at": [4]}))
    status, text = replay(str(path))
    assert status == 1
    assert "FAIL selected: expected [A], got [B]" in text
    assert "FAIL admitted_at: expected [4], got [5]" in text


# --- documents ----------------------------------------------------------------------


def test_attempt_document_round_trips(tmp_path: Path) -> None:
    doc = attempt_document(
        "counterexample",
        "a NaN key loses to +infinity",
        {"attributes": {"prompt": "visible"}, "keys": ["prompt / budget_left(engine)"]},
        [
            {"id": "R", "resumed": True, "enqueue": 3, "attrs": {"prompt": 1}},
            {"id": 1, "attrs": {"prompt": 0}},
            {"id": 2, "serial": 5, "attrs": {"prompt": 4}},
        ],
        7,
        {"engine": 0},
        [2],
        None,
    )
    assert "expect" not in doc
    status, result = result_of(tmp_path, doc)
    assert status == 0
    assert "passed" not in result
    assert (result["selected"], result["keys"]) == (["R"], [])

    doc = attempt_document(
        "counterexample",
        "",
        {"attributes": {"prompt": "visible"}, "keys": ["prompt / budget_left(engine)"]},
        [{"id": 1, "attrs": {"prompt": 0}}, {"id": 2, "attrs": {"prompt": 4}}],
        7,
        {"engine": 0},
        [2],
        {"selected": [2], "admitted_at": [7], "keys": [math.inf]},
    )
    assert doc["expect"] == {"selected": [2], "admitted_at": [7], "keys": ["Infinity"]}
    path = write(tmp_path, doc)
    assert json.loads(path.read_text()) == doc  # plain JSON, no NaN or Infinity literals
    status, result = result_of(tmp_path, doc)
    assert status == 0
    assert result["passed"] is True


# --- bad files ----------------------------------------------------------------------


BAD_FILES: list[tuple[dict[str, object], str]] = [
    (attempt_doc(engine="batch"), 'engine: must be "pool" or "step", or "attempt"'),
    (attempt_doc(attempt=None), "attempt: must be an object"),
    (attempt_doc(pool={"cap": 1}), 'pool: belongs to engine "pool"'),
    (attempt_doc(attempt={}), "attempt.now: is required"),
    (attempt_doc(attempt={"now": "5"}), "attempt.now: must be a number"),
    (attempt_doc(attempt={"now": 1, "later": 2}), "attempt.later: unknown field"),
    (
        attempt_doc(attempt={"now": 1, "budget_left": {"now": 1}}),
        "attempt.budget_left.now: must be a name keys can write",
    ),
    (
        attempt_doc(attempt={"now": 1, "budget_left": {"engine": "96"}}),
        "attempt.budget_left.engine: must be a number",
    ),
    (attempt_doc(attempt={"now": 1, "budget_left": [1]}), "attempt.budget_left: must be an obj"),
    (attempt_doc(attempt={"now": 1, "fits": "A"}), "attempt.fits: must be an array"),
    (attempt_doc(attempt={"now": 1, "fits": ["A", "Z"]}), "attempt.fits[1]: names no request"),
    (attempt_doc(attempt={"now": 1, "fits": [True]}), "attempt.fits[0]: must be a non-empty"),
    (
        attempt_doc(requests=[{"id": "A", "attrs": {"priority": 1}, "hold": 1}]),
        "requests[0].hold: unknown field",
    ),
    (
        attempt_doc(requests=[{"id": "A", "attrs": {"priority": 1}, "resumed": 1}]),
        "requests[0].resumed: must be true or false",
    ),
    (
        attempt_doc(
            requests=[
                {"id": "A", "attrs": {"priority": 1}, "resumed": True},
                {"id": "B", "attrs": {"priority": 1}},
                {"id": "C", "attrs": {"priority": 1}, "resumed": True},
            ]
        ),
        "requests[2].resumed: resumed requests form the front of the queue",
    ),
    (attempt_doc(requests=[{"id": "A"}]), "requests[0].attrs: lacks attribute 'priority'"),
    (
        attempt_doc(requests=[{"id": "A", "attrs": {"priority": 1}}] * 2),
        "requests[1].id: duplicate request id 'A'",
    ),
    (
        attempt_doc(requests=[{"id": "A", "enqueue": -1, "attrs": {"priority": 1}}]),
        "requests[0].enqueue: must be a number >= 0",
    ),
    (attempt_doc(expect={"keys": ["nan"]}), 'expect.keys[0]: must be a number or one of "NaN"'),
    (attempt_doc(expect={"keys": [True]}), "expect.keys[0]: must be a number or one of"),
    (attempt_doc(expect={"keys": 1}), "expect.keys: must be an array"),
    (attempt_doc(expect={"selected": ["Z"]}), "expect.selected[0]: names no request"),
]


@pytest.mark.parametrize(("doc", "message"), BAD_FILES)
def test_bad_attempt_files_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict[str, object], message: str
) -> None:
    assert_refused_in_one_line(tmp_path, capsys, doc, message)


def test_keys_are_refused_for_the_other_engines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = {
        "kind": "admission",
        "name": "pool",
        "engine": "pool",
        "pool": {"cap": 1},
        "policy": {"keys": ["serial"]},
        "requests": [{"id": 0, "hold": 1}],
        "expect": {"keys": [0]},
    }
    assert replay(str(write(tmp_path, doc)))[0] == 2
    assert 'expect.keys: only engine "attempt" reports the selection\'s keys' in (
        capsys.readouterr().err
    )
    doc["requests"] = []
    del doc["expect"]
    assert replay(str(write(tmp_path, doc)))[0] == 2
    assert "requests: must list at least one request" in capsys.readouterr().err
