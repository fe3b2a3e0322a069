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

from pyrsistent import PVector as AnyPVector
from pyrsistent import pvector
from pyrsistent.typing import PVector
from returns.maybe import Maybe, Nothing, Some

from policy.identity import REQUEST_ID_RULE, RequestId, is_request_id
from policy.records import FieldRule, check_fields, instance_of, slot_setters, wrong_field
from policy.rotation.decisions import SKIP_CAP, _grant_index, _whole, is_flag, is_whole
from policy.rotation.lanes import Lane
from policy.text import record_repr

__all__ = ["BacklogEntry", "EntryKind", "GrantBacklog", "take_next_grantee"]


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
        # Built by hand only (the protocol's builder skips this): check every entry.
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
            return _backlog(self.entries.append(replace(entry, skipped=0)))
        return _backlog(self.entries.append(entry))  # already at 0: the same record

    def position(self, request: RequestId) -> Maybe[int]:
        """Where ``request`` waits, if it does."""
        for index, entry in enumerate(self.entries):
            if entry.request == request:
                return Some(index)
        return Nothing

    def mark_cancelled(self, index: int) -> GrantBacklog:
        """The backlog with the entry at ``index`` marked cancelled, order kept."""
        entry = self.entries[index]
        marked = _entry(entry.request, entry.lane, entry.kind, entry.skipped, True)
        return _backlog(self.entries.set(index, marked))


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

    ``backlog`` must be a :class:`GrantBacklog` and ``skip_cap`` an int (a ``TypeError``).
    """
    if not isinstance(backlog, GrantBacklog):
        raise TypeError(f"take_next_grantee takes a GrantBacklog, not {type(backlog).__name__}")
    if type(skip_cap) is not int:  # the entries' own types were checked when they were built
        _whole("skip_cap", skip_cap)
    entries = backlog.entries
    chosen = _grant_index([(e.lane, e.skipped) for e in entries], skip_cap).value_or(None)
    if chosen is None:
        return Nothing
    rest = [
        _entry(entry.request, entry.lane, entry.kind, entry.skipped + 1, entry.cancelled)
        for index, entry in enumerate(entries)
        if index != chosen
    ]
    return Some((entries[chosen], _backlog(pvector(rest))))


# ----------------------------------------------------------------- record builders
#
# A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``
# (its way around its own ``__setattr__``), which is most of what a small record
# costs. Internal paths build records with ``object.__new__`` and the slots'
# own setters instead: the same fields, the same values, a record equal to what
# the constructor gives, at about half the cost. Records stay frozen: nothing
# here or anywhere sets a field of a record after it is built.


_new = object.__new__
_set_request, _set_lane, _set_kind, _set_skipped, _set_cancelled = slot_setters(
    BacklogEntry, ("request", "lane", "kind", "skipped", "cancelled")
)
(_set_entries,) = slot_setters(GrantBacklog, ("entries",))


def _entry(
    request: RequestId, lane: Lane, kind: EntryKind, skipped: int, cancelled: bool
) -> BacklogEntry:
    """``BacklogEntry(request, lane, kind, skipped, cancelled)``."""
    entry = _new(BacklogEntry)
    _set_request(entry, request)
    _set_lane(entry, lane)
    _set_kind(entry, kind)
    _set_skipped(entry, skipped)
    _set_cancelled(entry, cancelled)
    return entry


def _backlog(entries: PVector[BacklogEntry]) -> GrantBacklog:
    """``GrantBacklog(entries)``."""
    backlog = _new(GrantBacklog)
    _set_entries(backlog, entries)
    return backlog
