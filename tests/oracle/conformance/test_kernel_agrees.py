"""The kit run against the kernel itself: every check agrees, on the oracle's own domains.

The kernel agrees with the spec (``policy-kernel verify`` shows it), so any
disagreement here is a fault of the kit: a case enumerated wrong, an answer
written or read wrong. The bounds are small; the command line runs the full ones.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import pytest

from oracle.checks import grant_order, rotation_model, selection
from oracle.conformance import (
    CHECKS,
    ConformanceReport,
    GrantOrderBounds,
    NumberBounds,
    ProtocolBounds,
    SelectionBounds,
    assert_conforms,
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
    kernel_implementation,
    run_conformance,
)
from oracle.conformance.cases import (
    backlog_cap_cases,
    grant_expiry_cases,
    grant_order_cases,
    protocol_cases,
    selection_cases,
)
from oracle.conformance.decisions import normal_answer
from oracle.conformance.properties import (
    property_check_grant_order,
    property_check_selection,
    property_check_tick_protocol,
)
from oracle.conformance.wire import JSON
from policy import (
    apply_event,
    backlog_admits,
    next_grant_index,
    parse_grant_rounds,
    parse_lane,
    slice_grant_expired,
    slice_takes_tick,
    take_next_grantee,
)
from policy.waiting import attempt_admission, select_waiting

KERNEL = kernel_implementation()
SMALL_PROTOCOL = ProtocolBounds(skip_caps=(1, 2), largest_budget=1, max_depth=3)
SMALL_GRANTS = GrantOrderBounds(longest=2, largest_skips=4)
SMALL_QUEUES = SelectionBounds(one_key=2, two_key=1)


def test_the_kernel_callables_agree_on_every_check() -> None:
    reports = [
        check_grant_expiry(slice_grant_expired, bounds="quick"),
        check_backlog_cap(backlog_admits, bounds="quick"),
        check_alternation(slice_takes_tick, bounds="quick"),
        check_budget_setting(parse_grant_rounds, bounds="quick"),
        check_lane_header(parse_lane, bounds="quick"),
        check_grant_order(
            take_next_grantee,
            next_grant_index=next_grant_index,
            backlog_append=lambda backlog, entry: backlog.append(entry),
            bounds=SMALL_GRANTS,
        ),
        check_tick_protocol(apply_event, bounds=SMALL_PROTOCOL),
        check_selection(select_waiting, bounds=SMALL_QUEUES),
        check_admission_attempt(attempt_admission, bounds=SMALL_QUEUES),
    ]
    assert_conforms(reports)
    assert [report.check for report in reports] == [check.name for check in CHECKS]
    for report in reports:
        assert report.cases > 0
        assert sum(v for k, v in report.counts.items() if k.endswith(" cases")) == report.cases
    grants = reports[5]
    assert grants.decisions == ("next_grant_index", "take_next_grantee", "backlog_append")


def test_the_domains_are_the_oracle_checks_own() -> None:
    """The same states, transitions, backlogs and queues as the checks of verify."""
    protocol = check_tick_protocol(KERNEL, bounds=SMALL_PROTOCOL)
    explored = [rotation_model.explore(cap, 1, 3) for cap in (1, 2)]
    assert protocol.counts["states"] == sum(p.counts["states"] for p in explored)
    assert protocol.cases == sum(p.counts["transitions"] for p in explored)

    grants = check_grant_order(KERNEL, bounds=SMALL_GRANTS)
    oracle_backlogs = sum(
        grant_order.GRANT_ORDER.run("quick", (cap, length)).counts["backlogs"]
        for cap, length in itertools.product((1, 2, 3), range(3))
    )
    assert grants.counts["backlogs"] == oracle_backlogs

    queues = check_selection(KERNEL, bounds=SelectionBounds(one_key=2, two_key=0))
    units = [
        unit
        for unit in selection.SELECTION.units("quick")
        if isinstance(unit, tuple) and unit[1] <= (2 if unit[0] == "one" else 0)
    ]
    assert queues.counts["queues"] == sum(
        selection.SELECTION.run("quick", unit).counts["queues"] for unit in units
    )


def test_levels_read_the_oracle_bounds() -> None:
    assert ProtocolBounds.at("default") == ProtocolBounds((1, 2), 1, None)
    assert ProtocolBounds.at("deep").skip_caps == (1, 2, 3, 4)
    assert GrantOrderBounds.at("quick") == GrantOrderBounds(3, 4, (1, 2, 3))
    assert SelectionBounds.at("deep") == SelectionBounds(5, 4)
    assert NumberBounds.at("quick").values[:3] == (0, 1, 2)
    assert NumberBounds.at("quick").values[-1] == 2**64 - 1
    with pytest.raises(ValueError, match="up to 5"):
        SelectionBounds(6, 1)


def test_every_expected_answer_is_in_normal_form() -> None:
    """The spec's answers are compared without being read again: each must already be
    what normal_answer makes of it."""
    counts: dict[str, int] = {}
    streams = [
        grant_expiry_cases(NumberBounds(3, (2**64 - 1,)), counts),
        backlog_cap_cases(NumberBounds(3, ()), counts),
        grant_order_cases(GrantOrderBounds(2, 2, (1,)), counts),
        protocol_cases(ProtocolBounds((2,), 1, 3), counts),
        selection_cases(SelectionBounds(2, 1), counts, attempts=False),
        selection_cases(SelectionBounds(2, 1), counts, attempts=True),
    ]
    for stream in streams:
        for case in itertools.islice(stream, 0, None, 7):
            assert normal_answer(case.decision, case.expected) == case.expected, case.where()


def test_run_conformance_runs_the_named_checks_and_skips_unanswered_ones() -> None:
    only_expiry = from_callables(slice_grant_expired=slice_grant_expired)
    shown: list[ConformanceReport] = []
    reports = run_conformance(
        only_expiry, level="quick", checks=("grant expiry", "backlog cap"), progress=shown.append
    )
    assert [(r.check, r.verdict) for r in reports] == [
        ("grant expiry", "PASS"),
        ("backlog cap", "SKIPPED"),
    ]
    assert shown == list(reports)
    assert reports[1].not_answered == ("backlog_admits",)
    assert "answers none of backlog_admits" in reports[1].text()
    with pytest.raises(AssertionError, match="backlog cap: not run"):
        assert_conforms(reports)
    assert_conforms(reports, allow_not_run=True)
    with pytest.raises(ValueError, match="no check is named"):
        run_conformance(only_expiry, checks=("grant expiry", "speed"))


def test_the_property_checks_agree_on_the_kernel() -> None:
    assert_conforms(
        property_check_tick_protocol(apply_event, examples=15, max_events=40),
        property_check_grant_order(
            take_next_grantee,
            next_grant_index=next_grant_index,
            backlog_append=lambda backlog, entry: backlog.append(entry),
            examples=30,
        ),
        property_check_selection(
            select_waiting, attempt_admission=attempt_admission, examples=15, max_entries=12
        ),
    )


def test_reports_are_json() -> None:
    report = check_backlog_cap(KERNEL, bounds=NumberBounds(2, ()))
    document = report.to_json()
    assert document["verdict"] == "PASS"
    assert document["cases"] == 9
    assert document["bounds"] == {"counts and budgets": "0..2"}


def _zero_sign_flipped(inputs: Mapping[str, JSON]) -> JSON:
    """The kernel's selection with the sign of every zero key turned over."""
    answer = kernel_implementation().answer("select_waiting", inputs)
    if not isinstance(answer, dict):  # an empty queue: null
        return None
    keys = answer["keys"]
    assert isinstance(keys, list)
    flipped: list[JSON] = ["-0.0" if key == 0 else 0 if key == "-0.0" else key for key in keys]
    return {**answer, "keys": flipped}


def test_the_two_zeros_are_one_key_value() -> None:
    """docs/conformance.md and docs/waiting.md agree: -0.0 and 0.0 tie in the key order,
    so an answer may give either (it was a disagreement before issue 19)."""
    flipping = from_handlers({"select_waiting": _zero_sign_flipped})
    report = check_selection(flipping, bounds=SelectionBounds(1, 1))
    assert report.verdict == "PASS", report.text()
    assert normal_answer("select_waiting", {"index": 0, "keys": ["-0.0", -0.0, 0]}) == {
        "index": 0,
        "keys": [0, 0, 0],
    }
