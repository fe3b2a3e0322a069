"""The one interface of the fast layer: :class:`Index` (see :mod:`policy.waiting.fast`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol

from policy.waiting.entry import WaitingEntry
from policy.waiting.fast.plan import KeyPlan
from policy.waiting.fast.rows import Row

__all__ = ["Chosen", "ChosenRow", "Index"]

#: A selected entry and its key values, as the queue gives them.
Chosen = tuple[WaitingEntry, tuple[float, ...]]

#: A selected row (:mod:`policy.waiting.fast.rows`) and its key values, as an
#: index gives them.
ChosenRow = tuple[Row, tuple[float, ...]]


class Index(Protocol):
    """A queue version's fresh (non-resumed) entries, held for one policy, as rows
    (:mod:`policy.waiting.fast.rows`): it takes a ``Row`` wherever it
    takes a row, and gives rows.

    Every method is pure. The queue calls ``joined`` and ``joined_all`` with
    entries whose tickets rise above every ticket held, ``without`` and
    ``without_all`` with entries held (it checks that first). The selection
    methods are asked only of a non-empty index, positions only from 0 to
    ``len - 1``.
    """

    @property
    def plan(self) -> KeyPlan:
        """The plan of the policy this index was made for."""
        ...

    def __len__(self) -> int: ...

    def joined(self, entry: Row) -> Index:
        """With ``entry`` last in queue order."""
        ...

    def joined_all(self, entries: Sequence[Row]) -> Index:
        """With ``entries`` last in queue order, in order: one :meth:`joined` each."""
        ...

    def without(self, entry: Row) -> Index:
        """Without ``entry``."""
        ...

    def without_all(self, entries: Sequence[Row]) -> Index:
        """Without ``entries`` (each held, once): one :meth:`without` each."""
        ...

    def without_leading(self, count: int) -> tuple[Index, list[Row]] | None:
        """Without the first ``count`` entries (1 to ``len``) of :meth:`dispatched`'s
        order where that order reads no moment (the ``fifo`` and ``static``
        paths), and those entries: what :meth:`without_all` of them gives, with
        nothing to check. None where the order reads the moment."""
        ...

    def first(self) -> Row:
        """The first entry in queue order."""
        ...

    def in_queue_order(self) -> Iterator[Row]:
        """The entries in queue (ticket) order."""
        ...

    def position(self, entry: Row) -> int:
        """How many entries come before ``entry`` (held) in queue order."""
        ...

    def at(self, position: int) -> Row:
        """The entry at ``position`` of queue order."""
        ...

    def selected(self, now: float, budget_left: Mapping[str, float]) -> ChosenRow:
        """The entry with the smallest key list at this moment (ties to the earlier
        entry), and its key values."""
        ...

    def dispatched(self, now: float, budget_left: Mapping[str, float]) -> Iterator[ChosenRow]:
        """Every entry with its key values, in the order repeated selections at
        this moment would take them if each left."""
        ...

    def dispatched_at(self, position: int, now: float, budget_left: Mapping[str, float]) -> Row:
        """The entry at ``position`` of :meth:`dispatched`'s order."""
        ...
