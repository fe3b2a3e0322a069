"""The kit catches deliberately broken implementations given as Python callables, each
with the smallest counterexample (tests/oracle/conformance/broken.py lists the faults)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NoReturn

import pytest
from returns.result import Result

from oracle.cli import main
from oracle.conformance import (
    Failed,
    GrantOrderBounds,
    NumberBounds,
    ProtocolBounds,
    SelectionBounds,
    assert_conforms,
    assert_disagrees,
    check_admission_attempt,
    check_alternation,
    check_backlog_cap,
    check_budget_setting,
    check_grant_expiry,
    check_grant_order,
    check_lane_header,
    check_selection,
    check_tick_protocol,
    from_callables,
    from_handlers,
)
from oracle.conformance.properties import (
    property_check_grant_order,
    property_check_selection,
    property_check_tick_protocol,
)
from oracle.conformance.wire import JSON
from policy import (
    Cancel,
    Event,
    ProtocolError,
    RotationState,
    Step,
    apply_event,
    next_grant_index,
    take_next_grantee,
)
from tests.oracle.conformance import broken

SMALL_PROTOCOL = ProtocolBounds(skip_caps=(2,), largest_budget=1, max_depth=4)
SMALL_GRANTS = GrantOrderBounds(longest=2, largest_skips=3)
SMALL_QUEUES = SelectionBounds(one_key=2, two_key=1)


def test_expiry_with_greater_than_is_caught_at_the_smallest_counts() -> None:
    report = check_grant_expiry(broken.expiry_strict, bounds="quick")
    smallest = assert_disagrees(report)
    assert report.verdict == "FAIL"
    assert smallest.inputs == {"slices_in_grant": 1, "budget": 1, "backlog_pending": True}
    assert (smallest.expected, smallest.answered) == (True, False)
    assert smallest.summary == (
        "grant expiry: slice_grant_expired, slices_in_grant 1, budget 1, backlog_pending true:"
        " expected true, answered false"
    )
    # every slices == budget > 0 with a backlog pending, over the values 0..8 and the edges
    assert report.disagreements == len(NumberBounds.at("quick").values) - 1
    with pytest.raises(AssertionError, match="slices_in_grant 1, budget 1"):
        assert_conforms(report)


def test_a_backlog_admitting_one_more_is_caught() -> None:
    smallest = assert_disagrees(check_backlog_cap(broken.backlog_one_more, bounds="quick"))
    assert smallest.inputs == {"backlog_len": 2, "budget": 1}
    assert (smallest.expected, smallest.answered) == (False, True)


def test_the_readers_and_the_alternation_are_caught() -> None:
    takes = assert_disagrees(check_alternation(broken.alternation_ignored, bounds="quick"))
    assert takes.inputs == {"yielded": True, "others_have_work": True}
    budget = assert_disagrees(check_budget_setting(broken.budget_read_by_isdigit, bounds="quick"))
    assert budget.inputs == {"raw": "\u0663"}
    assert (budget.expected, budget.answered) == (8, 3)
    lane = assert_disagrees(check_lane_header(broken.lane_trimmed_of_ascii_only, bounds="quick"))
    assert lane.inputs == {"header": "\u3000low\u00a0"}
    assert (lane.expected, lane.answered) == ("low", "normal")


def test_grant_order_faults_are_caught_each_in_its_decision() -> None:
    flipped = check_grant_order(
        take_next_grantee, next_grant_index=broken.lowest_lane_first, bounds=SMALL_GRANTS
    )
    smallest = assert_disagrees(flipped)
    assert smallest.decision == "next_grant_index"
    assert smallest.where == "backlog [(low, 0), (normal, 0)] at skip cap 1"
    assert (smallest.expected, smallest.answered) == (1, 0)

    skips = assert_disagrees(check_grant_order(broken.no_skip_increment, bounds=SMALL_GRANTS))
    assert skips.decision == "take_next_grantee"
    assert skips.size == 2
    assert "answered differently (backlog)" in skips.problem

    reentry = check_grant_order(
        take_next_grantee,
        next_grant_index=next_grant_index,
        backlog_append=broken.append_keeps_skips,
        bounds=SMALL_GRANTS,
    )
    smallest = assert_disagrees(reentry)
    assert smallest.decision == "backlog_append"
    assert smallest.size == 0  # the empty backlog: J enters with its skips
    assert smallest.expected == [
        {"request": "J", "lane": "low", "kind": "parked", "skipped": 0, "cancelled": False}
    ]


def test_an_ignored_decline_is_caught_with_a_path_that_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = check_tick_protocol(broken.declined_ignored, bounds=SMALL_PROTOCOL)
    smallest = assert_disagrees(report)
    assert smallest.decision == "apply_event"
    event = smallest.inputs["event"]
    assert isinstance(event, dict)
    assert event["tick"]["declined"]
    assert smallest.events[-1] == event  # the request's names are the path's
    assert "declined waiter" in str(smallest.expected)
    # The scenario expects the spec's observations: the kernel replays it and passes.
    path = tmp_path / "counterexample.json"
    path.write_text(json.dumps(smallest.scenario))
    assert main(["replay", str(path)]) == 0, capsys.readouterr().out
    text = report.text()
    assert "tick protocol: FAIL" in text
    assert "events from the initial state" in text


def test_a_raising_or_mistyped_implementation_gives_no_answer() -> None:
    smallest = assert_disagrees(
        check_tick_protocol(broken.raising_on_cancel, bounds=SMALL_PROTOCOL)
    )
    assert smallest.answered is None
    assert smallest.problem == "no answer: raised RuntimeError: cancel not supported"
    assert smallest.size == 1  # a cancel of an unknown request, in the initial state

    def mistyped(state: RotationState, event: object) -> Step:
        del state, event
        return "nothing"  # type: ignore[return-value]  # the fault under test

    smallest = assert_disagrees(check_tick_protocol(mistyped, bounds=SMALL_PROTOCOL))
    assert "not a Result, a Step or a ProtocolError" in smallest.problem


def test_selection_faults_are_caught() -> None:
    ties = assert_disagrees(check_selection(broken.later_entry_on_ties, bounds=SMALL_QUEUES))
    assert ties.size == 2
    assert ties.where.startswith("queue [")
    assert isinstance(ties.expected, dict)
    assert ties.answered == {"index": 1, "keys": ties.expected["keys"]}

    resumed = assert_disagrees(check_selection(broken.resumed_front_ignored, bounds=SMALL_QUEUES))
    assert "(1 resumed)" in resumed.where or "(2 resumed)" in resumed.where
    assert resumed.expected == {"index": 0, "keys": []}


def test_fit_first_skipping_is_caught() -> None:
    smallest = assert_disagrees(check_admission_attempt(broken.fit_first, bounds=SMALL_QUEUES))
    assert smallest.where.endswith("fits only R1") or smallest.where.endswith("fits only R0")
    assert isinstance(smallest.expected, dict)
    assert smallest.expected["outcome"] == "blocked"
    assert isinstance(smallest.answered, dict)
    assert smallest.answered["outcome"] == "admitted"


def test_a_json_handler_is_read_strictly() -> None:
    """An implementation of the protocol's JSON forms (the small adapter for a scheduler
    with types of its own): a malformed answer is a disagreement that says why."""

    def admits(inputs: Mapping[str, JSON]) -> JSON:
        length, budget = inputs["backlog_len"], inputs["budget"]
        assert isinstance(length, int)
        assert isinstance(budget, int)
        return 1 if budget > 0 and length < 2 else False  # 1 is not true

    smallest = assert_disagrees(check_backlog_cap(from_handlers({"backlog_admits": admits})))
    assert smallest.problem == "malformed answer: backlog_admits: true or false, not 1"
    with pytest.raises(ValueError, match="no decision is named"):
        from_handlers({"select": admits})


def test_the_property_checks_catch_and_shrink() -> None:
    protocol = property_check_tick_protocol(broken.declined_ignored, examples=200, max_events=60)
    smallest = assert_disagrees(protocol)
    assert len(smallest.events) <= 8, smallest.text()
    assert protocol.counts["examples"] > 1

    grants = assert_disagrees(property_check_grant_order(broken.no_skip_increment, examples=200))
    assert grants.size <= 3

    ties = assert_disagrees(property_check_selection(broken.later_entry_on_ties, examples=200))
    assert ties.size == 2, ties.text()


def _raises(*arguments: object) -> NoReturn:
    """An implementation that answers nothing: it raises on every call."""
    raise RuntimeError(f"not implemented: {len(arguments)} arguments")


@pytest.mark.parametrize(
    ("run", "said"),
    [
        (lambda: property_check_tick_protocol(_raises, examples=0),
         "examples must be an integer >= 1, not 0"),
        (lambda: property_check_tick_protocol(_raises, max_events=0),
         "max_events must be an integer >= 1, not 0"),
        (lambda: property_check_tick_protocol(_raises, max_events=-1),
         "max_events must be an integer >= 1, not -1"),
        (lambda: property_check_grant_order(_raises, examples=-5),
         "examples must be an integer >= 1, not -5"),
        (lambda: property_check_selection(_raises, examples=0),
         "examples must be an integer >= 1, not 0"),
        (lambda: property_check_selection(_raises, max_entries=-1),
         "max_entries must be an integer >= 0, not -1"),
    ],
)  # fmt: skip
def test_a_property_check_of_no_example_or_no_event_is_refused(
    run: Callable[[], object], said: str
) -> None:
    with pytest.raises(ValueError, match=f"^{said}$"):
        run()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("examples", "max_events"), [(1, 1), (2, 1), (1, 2)])
def test_a_property_check_that_compared_nothing_does_not_pass(
    seed: int, examples: int, max_events: int
) -> None:
    """Runs of 0..max_events events: a search may draw only empty runs, which compare
    nothing; against an implementation that raises it is then SKIPPED, never PASS."""
    report = property_check_tick_protocol(
        _raises, examples=examples, max_events=max_events, seed=seed
    )
    assert report.verdict == ("FAIL" if report.cases else "SKIPPED"), report.text()
    assert not report.passed


def test_the_kernel_step_function_is_not_flagged() -> None:
    assert check_tick_protocol(apply_event, bounds=SMALL_PROTOCOL).passed


def _two_faults(state: RotationState, event: Event) -> Result[Step, ProtocolError]:
    """Raises on every cancel, ignores the declined verdict elsewhere."""
    if isinstance(event, Cancel):
        return broken.raising_on_cancel(state, event)
    return broken.declined_ignored(state, event)


def test_disagreements_are_grouped_by_cause_with_a_count_and_the_smallest() -> None:
    report = check_tick_protocol(_two_faults, bounds=SMALL_PROTOCOL)
    assert [(cause.decision, cause.kind) for cause in report.causes] == [
        ("apply_event", "no answer: raised RuntimeError"),
        ("apply_event", "answered differently (action, active, branches, ended, use)"),
    ]
    assert sum(cause.count for cause in report.causes) == report.disagreements
    raised, declined = report.causes
    assert raised.count > declined.count > 0
    assert declined.smallest.where.endswith("declined [R1]")  # the smallest of its own cause
    assert "by cause (2):" in report.text()
    written = report.to_json()["causes"]
    assert isinstance(written, list)
    assert [c["kind"] for c in written if isinstance(c, dict)] == [c.kind for c in report.causes]


def test_a_callable_s_10_mb_exception_text_is_quoted_short() -> None:
    def loud(backlog_len: int, budget: int) -> bool:
        del backlog_len, budget
        raise ValueError("x" * 10_000_000)

    answer = from_callables(backlog_admits=loud).answer(
        "backlog_admits", {"backlog_len": 1, "budget": 8}
    )
    assert isinstance(answer, Failed)
    assert answer.reason == f"raised ValueError: {'x' * 300}... (10,000,000 characters)"


def test_a_callable_s_mistyped_answer_of_5001_digits_is_quoted_short() -> None:
    # Issue 30: quoting it raised Python's int-to-text limit instead of the WireError.
    def huge(backlog_len: int, budget: int) -> bool:
        del backlog_len, budget
        return 10**5000  # type: ignore[return-value]  # the fault under test

    answer = from_callables(backlog_admits=huge).answer(
        "backlog_admits", {"backlog_len": 1, "budget": 8}
    )
    assert isinstance(answer, Failed)
    assert answer.reason == (
        "raised WireError: backlog_admits returned a 5001-digit integer, not True or False"
    )


def test_a_huge_answer_is_shown_cut_in_the_report() -> None:
    """An answer of any size is one short line of the report (issue 18: cut every
    quoted user text)."""
    huge = from_handlers({"next_grant_index": lambda _inputs: 10**5000})
    report = check_grant_order(huge, bounds=SMALL_GRANTS)
    smallest = assert_disagrees(report)
    assert smallest.answered == 10**5000
    answered = next(line for line in report.text().splitlines() if "answered:" in line)
    assert answered.endswith(" characters)")  # in hexadecimal (repr refuses 4300+ digits)
    assert len(answered) < 2100
