"""The one interface of the fast layer: :class:`Index` (see :mod:`policy.waiting.fast`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol

from policy.waiting.entry import WaitingEntry
from policy.waiting.fast.plan import KeyPlan

__all__ = ["Chosen", "Index"]

#: A selected entry and its key values.
Chosen = tuple[WaitingEntry, tuple[float, ...]]


class Index(Protocol):
    """A queue version's fresh (non-resumed) entries, held for one policy.

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

    def joined(self, entry: WaitingEntry) -> Index:
        """With ``entry`` last in queue order."""
        ...

    def joined_all(self, entries: Sequence[WaitingEntry]) -> Index:
        """With ``entries`` last in queue order, in order: one :meth:`joined` each."""
        ...

    def without(self, entry: WaitingEntry) -> Index:
        """Without ``entry``."""
        ...

    def without_all(self, entries: Sequence[WaitingEntry]) -> Index:
        """Without ``entries`` (each held, once): one :meth:`without` each."""
        ...

    def first(self) -> WaitingEntry:
        """The first entry in queue order."""
        ...

    def in_queue_order(self) -> Iterator[WaitingEntry]:
        """The entries in queue (ticket) order."""
        ...

    def position(self, entry: WaitingEntry) -> int:
        """How many entries come before ``entry`` (held) in queue order."""
        ...

    def at(self, position: int) -> WaitingEntry:
        """The entry at ``position`` of queue order."""
        ...

    def selected(self, now: float, budget_left: Mapping[str, float]) -> Chosen:
        """The entry with the smallest key list at this moment (ties to the earlier
        entry), and its key values."""
        ...

    def dispatched(self, now: float, budget_left: Mapping[str, float]) -> Iterator[Chosen]:
        """Every entry with its key values, in the order repeated selections at
        this moment would take them if each left."""
        ...

    def dispatched_at(
        self, position: int, now: float, budget_left: Mapping[str, float]
    ) -> WaitingEntry:
        """The entry at ``position`` of :meth:`dispatched`'s order."""
        ...
