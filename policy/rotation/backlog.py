"""The grant backlog: requests waiting for the speculative slot, in order.

One ordered structure holds both kinds of entry — waiters that never ran and
jobs parked after a grant — because the grant order treats them alike. Taking
the next grantee is the only place skip counts change, so the skip accounting
of the spec lives here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from enum import Enum
from operator import attrgetter

from pyrsistent import PVector as AnyPVector
from pyrsistent import pvector
from pyrsistent.typing import PVector
from returns.maybe import Maybe, Nothing, Some

from policy.identity import REQUEST_ID_RULE, RequestId, is_request_id
from policy.records import FieldRule, check_fields, instance_of, wrong_field
from policy.rotation.decisions import (
    SKIP_CAP,
    at_least,
    grant_position,
    is_flag,
    is_whole,
    require_whole,
)
from policy.rotation.lanes import Lane
from policy.text import record_repr

__all__ = ["BacklogEntry", "EntryKind", "GrantBacklog", "take_grantee", "take_next_grantee"]


class EntryKind(Enum):
    """What a backlog entry holds."""

    WAITER = "waiter"  # admitted to wait, has not run its slice 0
    PARKED = "parked"  # ran at least one grant, handed the slot over


#: What a hand-built BacklogEntry's fields must be.
_ENTRY_FIELDS: tuple[FieldRule, ...] = (
    ("request", is_request_id, REQUEST_ID_RULE),
    ("lane", instance_of(Lane), "a Lane (see parse_lane)"),
    ("kind", instance_of(EntryKind), "an EntryKind"),
    ("skipped", is_whole, "an int"),
    ("cancelled", is_flag, "True or False"),
)


@dataclass(frozen=True, slots=True)
class BacklogEntry:
    """One request waiting for the slot.

    The constructor checks each field's type (a ``TypeError``): a ``request``
    that is hashable and equal to itself (:func:`~policy.identity.is_request_id`),
    a :class:`Lane`, an :class:`EntryKind`, an int ``skipped`` and a bool
    ``cancelled``.
    """

    request: RequestId
    lane: Lane
    kind: EntryKind
    skipped: int = 0  # grant decisions that passed this entry over
    cancelled: bool = False  # discovered only when the entry is granted

    __repr__ = record_repr  # a request id of any size or text

    def __post_init__(self) -> None:
        check_fields(self, _ENTRY_FIELDS)


def _empty_entries() -> PVector[BacklogEntry]:
    return pvector()


@dataclass(frozen=True, slots=True)
class GrantBacklog:
    """An immutable ordered backlog; every change returns a new version.

    >>> backlog = GrantBacklog().append(BacklogEntry("A", Lane.NORMAL, EntryKind.WAITER))
    >>> len(backlog), backlog.position("A"), backlog.position("B")
    (1, <Some: 0>, <Nothing>)
    """

    entries: PVector[BacklogEntry] = field(default_factory=_empty_entries)

    def __post_init__(self) -> None:
        entries: object = self.entries
        if not isinstance(entries, AnyPVector):
            raise wrong_field("GrantBacklog", "entries", "a pvector of BacklogEntry", entries)
        for entry in self.entries:
            if not isinstance(entry, BacklogEntry):
                raise wrong_field("GrantBacklog", "entries", "a pvector of BacklogEntry", entry)

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[BacklogEntry]:
        return iter(self.entries)

    def append(self, entry: BacklogEntry) -> GrantBacklog:
        """The backlog with ``entry`` at the back, its skip count starting at 0.

        ``entry`` must be a :class:`BacklogEntry` (a ``TypeError`` otherwise).
        """
        if not isinstance(entry, BacklogEntry):
            raise TypeError(f"a backlog holds BacklogEntry records, not {type(entry).__name__}")
        if entry.skipped:
            return GrantBacklog(entries=self.entries.append(replace(entry, skipped=0)))
        return GrantBacklog(entries=self.entries.append(entry))  # already at 0: the same record

    def position(self, request: RequestId) -> Maybe[int]:
        """Where ``request`` waits, if it does."""
        for index, entry in enumerate(self.entries):
            if entry.request == request:
                return Some(index)
        return Nothing

    def mark_cancelled(self, index: int) -> GrantBacklog:
        """The backlog with the entry at ``index`` marked cancelled, order kept."""
        marked = replace(self.entries[index], cancelled=True)
        return GrantBacklog(entries=self.entries.set(index, marked))


def take_next_grantee(
    backlog: GrantBacklog, skip_cap: int = SKIP_CAP
) -> Maybe[tuple[BacklogEntry, GrantBacklog]]:
    """Choose the next grantee and apply the skip accounting.

    The chosen entry leaves with its count; every other entry counts one more
    skip, whatever its lane. The decision counts even if the host then finds
    the grantee cancelled or declined.

    >>> backlog = GrantBacklog(pvector([
    ...     BacklogEntry("A", Lane.NORMAL, EntryKind.WAITER),
    ...     BacklogEntry("B", Lane.HIGH, EntryKind.WAITER),
    ... ]))
    >>> chosen, rest = take_next_grantee(backlog).unwrap()
    >>> chosen.request, [(e.request, e.skipped) for e in rest]
    ('B', [('A', 1)])

    ``backlog`` must be a :class:`GrantBacklog` and ``skip_cap`` an int (a
    ``TypeError``) of at least 1 (a ``ValueError``: :func:`~policy.rotation.decisions.at_least`).
    The tick protocol, which checked its skip cap once, takes :func:`take_grantee`.
    """
    if not isinstance(backlog, GrantBacklog):
        raise TypeError(f"take_next_grantee takes a GrantBacklog, not {type(backlog).__name__}")
    require_whole("skip_cap", skip_cap)  # the entries were checked when they were built
    at_least("skip_cap", skip_cap, 1)
    taken = take_grantee(backlog.entries, skip_cap)
    return Nothing if taken is None else Some(taken)


def take_grantee(
    entries: PVector[BacklogEntry], skip_cap: int
) -> tuple[BacklogEntry, GrantBacklog] | None:
    """:func:`take_next_grantee` without its checks and its ``Maybe`` (None: no
    entries): the tick protocol's hot path, whose skip cap was checked once."""
    chosen = grant_position(list(map(_lane_and_skipped, entries)), skip_cap)
    if chosen is None:
        return None
    rest = [
        replace(entry, skipped=entry.skipped + 1)
        for index, entry in enumerate(entries)
        if index != chosen
    ]
    return entries[chosen], GrantBacklog(entries=pvector(rest))


_lane_and_skipped = attrgetter("lane", "skipped")  # an entry's (lane, skipped), in C
