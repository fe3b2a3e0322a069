"""The one interface of the selection paths, and which path a policy gets.

Each path's index lives in a module of its own (``path_static``,
``path_lanes``) behind :class:`PathIndex`; the ``fifo`` and ``scan`` paths keep
nothing (:class:`Unindexed`): ``fifo`` selects the front and ``scan``
evaluates every entry's keys with the policy's compiled scan, both in the
queue itself. The queue (:mod:`policy.waiting.queue`) holds one index, built
for the policy it was last used with.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import ClassVar, Protocol

from policy.waiting.entry import WaitingEntry
from policy.waiting.line import Line
from policy.waiting.path_lanes import LaneIndex
from policy.waiting.path_static import StaticIndex
from policy.waiting.queue_policy import QueuePolicy

__all__ = ["PathIndex", "Unindexed", "index_for"]

Chosen = tuple[WaitingEntry, tuple[float, ...]]


class PathIndex(Protocol):
    """What the queue asks of a selection path's index (every method pure).

    ``added`` and ``dropped`` see non-resumed entries only (resumed ones are
    selected from the front, before any key); ``tracks`` says whether they need
    calling at all. ``selected`` and ``dispatched`` answer for a non-empty
    index, or None when the queue must scan its entries instead; so does
    ``positioned`` (the entry at a position of ``dispatched``'s order), for a
    position from 0 to ``size() - 1``. ``size`` counts the entries kept (only
    called when ``tracks``).
    """

    tracks: ClassVar[bool]

    #: ``added`` reads its ``back`` argument (the queue finds it only then).
    needs_back: ClassVar[bool]

    @property
    def policy(self) -> QueuePolicy: ...

    @property
    def holds_order(self) -> bool:
        """Whether :meth:`lines` hold every entry of the index, each line in ticket
        order: then the queue keeps no line of its own for them (only for its
        resumed entries), and its order is the merge of all these lines."""
        ...

    def lines(self) -> tuple[Line[WaitingEntry], ...]:
        """The index's lines, none empty (asked only when :attr:`holds_order`)."""
        ...

    def holds(self, entry: WaitingEntry) -> bool:
        """Whether this very entry is in the index (asked only when :attr:`holds_order`)."""
        ...

    def added(self, entry: WaitingEntry, back: WaitingEntry | None) -> PathIndex: ...

    def added_all(self, entries: list[WaitingEntry], back: WaitingEntry | None) -> PathIndex:
        """With ``entries`` (non-resumed, tickets rising) joining in order behind
        ``back``: the index one :meth:`added` per entry gives."""
        ...

    def dropped(self, entry: WaitingEntry) -> PathIndex: ...

    def dropped_all(self, entries: list[WaitingEntry]) -> PathIndex:
        """Without ``entries`` (non-resumed, each in the index once): the index one
        :meth:`dropped` per entry gives."""
        ...

    def selected(self, now: float, budget_left: Mapping[str, float]) -> Chosen | None: ...

    def dispatched(
        self, now: float, budget_left: Mapping[str, float]
    ) -> Iterator[Chosen] | None: ...

    def size(self) -> int: ...

    def positioned(
        self, position: int, now: float, budget_left: Mapping[str, float]
    ) -> WaitingEntry | None: ...


@dataclass(frozen=True, slots=True)
class Unindexed:
    """The ``fifo`` and ``scan`` paths: nothing kept, the queue selects itself."""

    tracks: ClassVar[bool] = False
    needs_back: ClassVar[bool] = False

    policy: QueuePolicy

    #: The queue's own line holds every entry.
    holds_order: ClassVar[bool] = False

    def lines(self) -> tuple[Line[WaitingEntry], ...]:
        """None: nothing is kept."""
        return ()

    def holds(self, entry: WaitingEntry) -> bool:  # noqa: ARG002 - PathIndex's parameters
        """False: nothing is kept."""
        return False

    def added(self, entry: WaitingEntry, back: WaitingEntry | None) -> Unindexed:  # noqa: ARG002 - PathIndex's parameters
        """Itself: nothing is kept."""
        return self

    def added_all(self, entries: list[WaitingEntry], back: WaitingEntry | None) -> Unindexed:  # noqa: ARG002 - PathIndex's parameters
        """Itself: nothing is kept."""
        return self

    def dropped(self, entry: WaitingEntry) -> Unindexed:  # noqa: ARG002 - PathIndex's parameters
        """Itself: nothing is kept."""
        return self

    def dropped_all(self, entries: list[WaitingEntry]) -> Unindexed:  # noqa: ARG002 - PathIndex's parameters
        """Itself: nothing is kept."""
        return self

    def selected(self, now: float, budget_left: Mapping[str, float]) -> Chosen | None:  # noqa: ARG002 - PathIndex's parameters
        """None: the queue scans (or takes its front)."""
        return None

    def dispatched(self, now: float, budget_left: Mapping[str, float]) -> Iterator[Chosen] | None:  # noqa: ARG002 - PathIndex's parameters
        """None: the queue sorts its entries by their keys."""
        return None

    def size(self) -> int:
        """0: nothing is kept (never asked: ``tracks`` is false)."""
        return 0

    def positioned(
        self,
        position: int,  # noqa: ARG002 - PathIndex's parameters
        now: float,  # noqa: ARG002
        budget_left: Mapping[str, float],  # noqa: ARG002
    ) -> WaitingEntry | None:
        """None: the queue finds the position in its own order."""
        return None


def index_for(policy: QueuePolicy) -> PathIndex:
    """The empty index of ``policy``'s selection path (``policy.path``)."""
    path = policy.plan.path
    if path == "static":
        return StaticIndex.empty(policy)
    if path == "lanes":
        return LaneIndex.empty(policy)
    return Unindexed(policy)
