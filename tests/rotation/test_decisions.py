"""The grant order's rule (``grant_position``, what ``next_grant_index`` and the
tick protocol use), against the rule as first written, on every small backlog."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import pytest
from pyrsistent import pvector
from returns.result import Failure

from policy import (
    Arrival,
    BacklogEntry,
    EntryKind,
    GrantBacklog,
    ProtocolErrorKind,
    RotationState,
    Tick,
    apply_event,
    backlog_admits,
    initial_state,
    live_requests,
    parse_grant_rounds,
    parse_lane,
    slice_grant_expired,
    slice_takes_tick,
    take_next_grantee,
)
from policy.rotation import Lane, backlog, next_grant_index, protocol
from policy.rotation.decisions import at_least, grant_position


def reference_grant_index(entries: list[tuple[Lane, int]], skip_cap: int) -> int | None:
    """The rule as first written: ``max`` over (skipped, -position), then (lane, -position)."""
    if not entries:
        return None
    most = max(range(len(entries)), key=lambda i: (entries[i][1], -i))
    if entries[most][1] >= skip_cap:
        return most
    return max(range(len(entries)), key=lambda i: (entries[i][0], -i))


def test_grant_position_is_the_rule_on_every_small_backlog() -> None:
    pairs = [(lane, skipped) for lane in Lane for skipped in range(4)]
    checked = 0
    for length in range(5):
        for entries in itertools.product(pairs, repeat=length):
            for skip_cap in range(4):
                expected = reference_grant_index(list(entries), skip_cap)
                assert grant_position(entries, skip_cap) == expected, entries
                checked += 1
    assert checked == 4 * sum(12**n for n in range(5))


def test_next_grant_index_on_one_entry_and_on_long_backlogs() -> None:
    N, H = Lane.NORMAL, Lane.HIGH
    assert next_grant_index([(N, 0)]).unwrap() == 0
    assert next_grant_index([(N, 9)], 2).unwrap() == 0
    long = [(N, 0)] * 11 + [(H, 0)]
    assert next_grant_index(long).unwrap() == 11  # beyond the positions built once
    assert next_grant_index([*long[:-1], (N, 2)]).unwrap() == 11


# --- found by hardening (issue 18): ranges and argument types


BACKLOG = GrantBacklog(pvector([BacklogEntry("A", Lane.NORMAL, EntryKind.WAITER)]))


@pytest.mark.parametrize(
    ("call", "said"),
    [
        (lambda: slice_grant_expired(-1, 3, True), "slices_in_grant must be at least 0, not -1"),
        (lambda: slice_grant_expired(3, -1, True), "budget must be at least 0, not -1"),
        (lambda: backlog_admits(-5, 3), "backlog_len must be at least 0, not -5"),
        (lambda: backlog_admits(0, -(10**5000)), "not a negative 5001-digit integer"),
        (lambda: next_grant_index([(Lane.HIGH, 0)], 0), "skip_cap must be at least 1, not 0"),
        (lambda: next_grant_index([(Lane.HIGH, -1)]), "skipped must be at least 0, not -1"),
        (lambda: take_next_grantee(BACKLOG, 0), "skip_cap must be at least 1, not 0"),
        (lambda: take_next_grantee(BACKLOG, -2), "skip_cap must be at least 1, not -2"),
        (lambda: initial_state(0), "RotationState.skip_cap must be at least 1, not 0"),
        (lambda: initial_state(-1), "RotationState.skip_cap must be at least 1, not -1"),
        (lambda: RotationState(skip_cap=0), "RotationState.skip_cap must be at least 1, not 0"),
    ],
)
def test_a_value_out_of_range_is_refused(call: Callable[[], object], said: str) -> None:
    with pytest.raises(ValueError, match="must be at least") as refused:
        call()
    assert str(refused.value).endswith(said)


def test_the_edges_of_the_ranges_still_answer() -> None:
    assert slice_grant_expired(0, 0, True) is False
    assert backlog_admits(0, 1) is True
    assert next_grant_index([(Lane.LOW, 0)], 1).unwrap() == 0
    assert take_next_grantee(BACKLOG, 1).unwrap()[0].request == "A"
    assert initial_state(1).skip_cap == 1
    at_least("budget", 10**5000, 0)


def test_the_protocol_takes_the_grantee_by_the_unchecked_body() -> None:
    """Its skip cap was checked once (in the state): the hot path pays no range check."""
    assert vars(protocol)["take_grantee"] is backlog.take_grantee
    assert "take_next_grantee" not in vars(protocol)


def test_live_requests_of_something_not_a_state_is_a_type_error() -> None:
    for wrong in (None, 3, {"active": None}):
        with pytest.raises(TypeError, match=r"^live_requests takes a RotationState, not "):
            live_requests(wrong)  # type: ignore[arg-type]
    assert live_requests(initial_state()) == ()


# --- found by hardening (issue 9)


def test_show_once_a_nan_budget_turned_rotation_off_silently() -> None:
    nan = math.nan
    # The rules, unchecked, read nan as "rotation disabled": no expiry, no waiting.
    assert not (nan > 0)
    with pytest.raises(TypeError, match="budget must be an int, not float"):
        backlog_admits(1, nan)  # type: ignore[arg-type]


@pytest.mark.parametrize("raw", [5, 4.0, b"4", ["4"]])
def test_settings_that_are_not_text_are_a_type_error(raw: object) -> None:
    with pytest.raises(TypeError, match="parse_grant_rounds reads the setting's text"):
        parse_grant_rounds(raw)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="parse_lane reads a header's text"):
        parse_lane(raw)  # type: ignore[arg-type]


@pytest.mark.parametrize("budget", [math.nan, 2.5, "3", None, True, False])
def test_a_budget_that_is_not_an_int_is_refused_where_it_enters(budget: object) -> None:
    state = initial_state()
    for event in (Arrival("A", Lane.NORMAL, budget), Tick(budget)):  # type: ignore[arg-type]
        refused = apply_event(state, event)
        assert isinstance(refused, Failure)
        assert refused.failure().kind is ProtocolErrorKind.NOT_A_BUDGET
        assert refused.failure().event is event


def test_an_int_budget_of_any_size_is_a_budget() -> None:
    step = apply_event(initial_state(), Arrival("A", Lane.NORMAL, 10**400)).unwrap()
    assert step.state.active is not None
    assert step.state.active.budget == 10**400


def test_the_single_decisions_check_their_arguments() -> None:
    with pytest.raises(TypeError, match="budget must be an int, not float"):
        slice_grant_expired(8, math.nan, True)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="backlog_pending must be True or False"):
        slice_grant_expired(8, 8, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="others_have_work must be True or False"):
        slice_takes_tick(True, "yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"each entry must be a \(Lane, skipped\) pair"):
        next_grant_index([("high", 0)])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="skip_cap must be an int"):
        next_grant_index([(Lane.HIGH, 0)], skip_cap=2.0)  # type: ignore[arg-type]
