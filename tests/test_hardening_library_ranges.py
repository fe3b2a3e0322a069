"""Issue 18, the library's ranges and argument types: one range rule for rotation's
whole numbers (``at_least``: counts, budgets and skip counts >= 0, skip caps >= 1)
in every public decision and in the first state; ``live_requests`` and a hand-built
``AttributeView`` check their arguments (a clear error, not an AttributeError or
a repr that raises later)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pyrsistent import pvector

from policy import (
    BacklogEntry,
    EntryKind,
    GrantBacklog,
    Lane,
    RotationState,
    backlog_admits,
    initial_state,
    live_requests,
    next_grant_index,
    slice_grant_expired,
    take_next_grantee,
)
from policy.rotation import backlog, protocol
from policy.rotation.decisions import at_least
from policy.waiting import WaitingQueue, fifo
from policy.waiting.entry import AttributeView

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


@pytest.mark.parametrize(
    ("arguments", "kind", "said"),
    [
        ((3, 3), TypeError, "AttributeView's names must be a tuple of names (str), not int"),
        (((1,), (1.0,)), TypeError, "AttributeView's names must be a tuple of names (str), not"),
        ((("a",), [1.0]), TypeError, "AttributeView's values must be a tuple, not list"),
        ((("a",), ("x",)), TypeError, "AttributeView's values must be numbers, not 'x'"),
        ((("a",), (None,)), TypeError, "AttributeView's values must be numbers, not None"),
        ((("a", "b"), (1.0,)), ValueError, "AttributeView needs one name per value: 2 names"),
    ],
)
def test_a_hand_built_attribute_view_checks_its_arguments(
    arguments: tuple[object, ...], kind: type[Exception], said: str
) -> None:
    with pytest.raises(kind) as refused:
        AttributeView(*arguments)  # type: ignore[arg-type]
    assert str(refused.value).startswith(said)


def test_an_entry_s_own_view_is_still_an_attribute_view() -> None:
    queue = WaitingQueue().append(fifo(), "r", {"prompt": 3}, serial=0, now=0.0).unwrap()
    (entry,) = queue
    view = entry.attributes
    assert type(view) is AttributeView
    assert (dict(view), repr(view)) == ({"prompt": 3.0}, "{'prompt': 3.0}")
    assert AttributeView(("prompt",), (3.0,)) == view
