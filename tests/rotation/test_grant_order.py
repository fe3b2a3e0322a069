"""Laws of the grant order (next_grant_index) and of the skip accounting."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyrsistent import pvector
from returns.maybe import Nothing, Some

from oracle.strategies import lanes
from policy import (
    BACKLOG_CAP,
    BacklogEntry,
    EntryKind,
    GrantBacklog,
    Lane,
    next_grant_index,
    take_next_grantee,
)
from policy.rotation import decisions

entries_lists = st.lists(st.tuples(lanes, st.integers(0, 5)), max_size=6)
skip_caps = st.integers(1, 4)


@given(entries_lists, skip_caps)
def test_index_is_valid(entries: list[tuple[Lane, int]], skip_cap: int) -> None:
    chosen = next_grant_index(entries, skip_cap)
    if not entries:
        assert chosen == Nothing
    else:
        assert 0 <= chosen.unwrap() < len(entries)


@given(entries_lists, skip_caps)
def test_no_overdue_entry_means_earliest_of_the_highest_lane(
    entries: list[tuple[Lane, int]], skip_cap: int
) -> None:
    if not entries or any(skipped >= skip_cap for _, skipped in entries):
        return
    top = max(lane for lane, _ in entries)
    expected = next(i for i, (lane, _) in enumerate(entries) if lane == top)
    assert next_grant_index(entries, skip_cap) == Some(expected)


@given(entries_lists, skip_caps)
def test_overdue_means_earliest_of_the_most_skipped(
    entries: list[tuple[Lane, int]], skip_cap: int
) -> None:
    if not any(skipped >= skip_cap for _, skipped in entries):
        return
    most = max(skipped for _, skipped in entries)
    expected = next(i for i, (_, skipped) in enumerate(entries) if skipped == most)
    assert next_grant_index(entries, skip_cap) == Some(expected)


backlog_entries = st.builds(
    BacklogEntry,
    request=st.integers(0, 10**6),
    lane=lanes,
    kind=st.sampled_from(list(EntryKind)),
    skipped=st.integers(0, 4),
    cancelled=st.booleans(),
)


@given(st.lists(backlog_entries, max_size=4, unique_by=lambda e: e.request), skip_caps)
def test_taking_a_grantee_skips_every_other_entry_once(
    entries: list[BacklogEntry], skip_cap: int
) -> None:
    backlog = GrantBacklog(pvector(entries))
    taken = take_next_grantee(backlog, skip_cap)
    if not entries:
        assert taken == Nothing
        return
    chosen, rest = taken.unwrap()
    index = next_grant_index([(e.lane, e.skipped) for e in entries], skip_cap).unwrap()
    assert chosen == entries[index]
    others = entries[:index] + entries[index + 1 :]
    assert [e.request for e in rest] == [e.request for e in others]  # order kept
    assert [e.skipped for e in rest] == [e.skipped + 1 for e in others]
    assert [(e.lane, e.kind, e.cancelled) for e in rest] == [
        (e.lane, e.kind, e.cancelled) for e in others
    ]
    assert [e.request for e in backlog] == [e.request for e in entries]  # input untouched


def _decisions_until_granted(backlog: GrantBacklog, lower: object, skip_cap: int) -> int:
    """Decisions until ``lower`` is granted while a high-lane entry arrives after each."""
    for decision in range(1, 50):
        chosen, backlog = take_next_grantee(backlog, skip_cap).unwrap()
        if chosen.request == lower:
            return decision
        backlog = backlog.append(BacklogEntry(f"flood-{decision}", Lane.HIGH, EntryKind.WAITER))
    raise AssertionError("starved")


@given(
    st.sampled_from([Lane.LOW, Lane.NORMAL]),
    st.lists(st.sampled_from([Lane.NORMAL, Lane.HIGH]), max_size=BACKLOG_CAP - 1),
    skip_caps,
)
def test_endless_higher_lane_stream_cannot_starve(
    lane: Lane, behind: list[Lane], skip_cap: int
) -> None:
    # The spec's situation: the lower-lane entry waits (oldest first), higher-lane
    # entries keep arriving behind it, the backlog as full as the cap allows.
    entries = [BacklogEntry("lower", lane, EntryKind.WAITER)] + [
        BacklogEntry(f"high-{i}", other, EntryKind.WAITER)
        for i, other in enumerate(behind)
        if other > lane
    ]
    backlog = GrantBacklog(pvector(entries))
    assert _decisions_until_granted(backlog, "lower", skip_cap) <= skip_cap + 1


@given(st.lists(backlog_entries, max_size=4, unique_by=lambda e: e.request), skip_caps)
def test_starvation_bound_with_entries_ahead(ahead: list[BacklogEntry], skip_cap: int) -> None:
    # Each entry ahead of it (as skipped as it, or more) may go first once.
    backlog = GrantBacklog(pvector(ahead)).append(BacklogEntry("lower", Lane.LOW, EntryKind.WAITER))
    bound = skip_cap + 1 + len(ahead)
    assert _decisions_until_granted(backlog, "lower", skip_cap) <= bound


@given(backlog_entries)
def test_an_entry_enters_the_backlog_with_no_skips(entry: BacklogEntry) -> None:
    # A parked job re-enters at the back as a new entry: its old count is gone.
    backlog = GrantBacklog().append(entry)
    assert [(e.request, e.skipped) for e in backlog] == [(entry.request, 0)]


# --- found by hardening (issue 9)


def test_show_once_next_grant_index_read_a_map_by_key() -> None:
    entries = {(Lane.LOW, 0): 1, (Lane.HIGH, 0): 2}
    with pytest.raises(KeyError):  # the old failure: the rule reads entries[0]
        decisions.grant_position(entries, 2)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("entries", "name"),
    [
        ({(Lane.LOW, 0): 1, (Lane.HIGH, 0): 2}, "dict"),
        ({(Lane.LOW, 0), (Lane.HIGH, 0)}, "set"),
        (frozenset(), "frozenset"),
        ("", "str"),
        (b"", "bytes"),
        (None, "NoneType"),
        (iter([(Lane.LOW, 0)]), "list_iterator"),
    ],
)
def test_next_grant_index_refuses_entries_that_are_not_a_sequence(
    entries: object, name: str
) -> None:
    with pytest.raises(
        TypeError, match=rf"^entries must be a sequence of \(Lane, skipped\) pairs, not {name}$"
    ):
        next_grant_index(entries)  # type: ignore[arg-type]


def test_next_grant_index_reads_any_sequence() -> None:
    entries = [(Lane.LOW, 0), (Lane.HIGH, 0)]
    for sequence in (entries, tuple(entries), pvector(entries)):
        assert next_grant_index(sequence).unwrap() == 1
    assert next_grant_index(()).value_or(None) is None


def test_taking_a_grantee_refuses_what_is_not_a_backlog() -> None:
    # found by branch coverage: the check before the skip cap's had no test
    entries = [BacklogEntry("a", Lane.LOW, EntryKind.WAITER)]
    with pytest.raises(TypeError, match=r"^take_next_grantee takes a GrantBacklog, not list$"):
        take_next_grantee(entries, 1)  # type: ignore[arg-type]
