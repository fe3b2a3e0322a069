"""The ``lanes`` selection path: a few static classes whose keys never get worse with age.

Under ``lanes`` keys (see :mod:`policy.waiting.analysis`) an entry's key values
depend on it only through a few static class values and on how long it has
waited, and never get worse as it waits. Within one class, then, the oldest
entry is never beaten by a younger one, so only each class's head is a
candidate.

Theory of operation. The queue keeps one :class:`~policy.waiting.line.Line` of
its non-resumed entries per class, in ticket order; selection evaluates the
keys of the class heads only (O(classes)), and the dispatch order merges the
classes lazily. That holds while the entries' enqueue times are finite and
non-decreasing in queue order (``in_time_order``), which the index checks as
entries join; otherwise :meth:`LaneIndex.selected` and
:meth:`LaneIndex.dispatched` answer None and the queue scans every entry.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from immutables import Map

from policy.records import record_builder, shape_of
from policy.waiting.compiled import sort_key
from policy.waiting.entry import WaitingEntry
from policy.waiting.line import Line
from policy.waiting.queue_policy import QueuePolicy

__all__ = ["MERGED_UP_TO", "LaneIndex"]

#: Positions below this are found by walking the lazy merge (quicker than bisection there).
MERGED_UP_TO: Final = 64

_EMPTY_LINE: Final[Line[Any]] = Line.empty()
_NO_LANES: Final[Map[Any, Any]] = Map()


def _finite(value: float) -> bool:
    return value - value == 0.0  # false for ±inf and NaN


@dataclass(frozen=True, slots=True, init=False)
class LaneIndex:
    """The non-resumed entries of a queue under a ``lanes`` policy, by class."""

    #: The path keeps entries (the queue updates it on every join and leave).
    tracks: ClassVar[bool] = True
    #: ``added`` reads ``back`` (the time order's check).
    needs_back: ClassVar[bool] = True
    #: The class lines hold every entry (the queue keeps only its resumed
    #: entries in a line of its own).
    holds_order: ClassVar[bool] = True

    policy: QueuePolicy
    #: class -> its entries in ticket order.
    lanes: Map[tuple[object, ...], Line[WaitingEntry]]
    #: The enqueue times of the entries are finite and non-decreasing in queue
    #: order, so each class's head is its oldest entry.
    in_time_order: bool

    @staticmethod
    def empty(policy: QueuePolicy) -> LaneIndex:
        """The index of an empty queue under ``policy``."""
        return _index(policy, _NO_LANES, True)

    def lines(self) -> tuple[Line[WaitingEntry], ...]:
        """The class lines."""
        return tuple(self.lanes.values())

    def holds(self, entry: WaitingEntry) -> bool:
        """Whether this very entry is in its class's line."""
        members = self.lanes.get(self.policy.plan.lane_of(entry.values, entry.serial))
        return members is not None and members.holds(entry)

    def added(self, entry: WaitingEntry, back: WaitingEntry | None) -> LaneIndex:
        """With ``entry``, which joins the queue behind ``back`` (the last
        non-resumed entry, None if there is none)."""
        lane = self.policy.plan.lane_of(entry.values, entry.serial)
        lanes = self.lanes
        members = lanes.get(lane)
        at = entry.enqueued_at
        ordered = _finite(at) and (
            not lanes or (self.in_time_order and back is not None and at >= back.enqueued_at)
        )
        grown = (_EMPTY_LINE if members is None else members).joined_back(entry)
        return _index(self.policy, lanes.set(lane, grown), ordered)

    def added_all(self, entries: list[WaitingEntry], back: WaitingEntry | None) -> LaneIndex:
        """With ``entries`` joining in order behind ``back``: one :meth:`added` each."""
        index = self
        for entry in entries:
            index = index.added(entry, back)  # the caller's back is never resumed
            back = entry
        return index

    def dropped(self, entry: WaitingEntry) -> LaneIndex:
        """Without ``entry`` (non-resumed, in the index)."""
        lane = self.policy.plan.lane_of(entry.values, entry.serial)
        members = self.lanes[lane].without(entry)
        lanes = self.lanes.set(lane, members) if members else self.lanes.delete(lane)
        return _index(self.policy, lanes, self.in_time_order or not lanes)

    def dropped_all(self, entries: list[WaitingEntry]) -> LaneIndex:
        """Without ``entries`` (non-resumed, each in the index once): one
        :meth:`dropped` each."""
        index = self
        for entry in entries:
            index = index.dropped(entry)
        return index

    def selected(
        self, now: float, budget_left: Mapping[str, float]
    ) -> tuple[WaitingEntry, tuple[float, ...]] | None:
        """The best class head and its key values at this moment; None when the
        heads are not the only candidates (not ``in_time_order``). The index must
        not be empty."""
        if not self.in_time_order:
            return None
        keys_of = self.policy.plan.keys
        chosen: tuple[Any, ...] | None = None
        for members in self.lanes.values():
            head: WaitingEntry = members.first()
            keys = keys_of(head.values, head.serial, now, now - head.enqueued_at, budget_left)
            rank = (*sort_key(keys), head.ticket)
            if chosen is None or rank < chosen[0]:
                chosen = (rank, head, keys)
        assert chosen is not None
        return chosen[1], chosen[2]

    def dispatched(
        self, now: float, budget_left: Mapping[str, float]
    ) -> Iterator[tuple[WaitingEntry, tuple[float, ...]]] | None:
        """Every entry with its key values in dispatch order at this moment, the
        classes merged lazily; None when not ``in_time_order``."""
        if not self.in_time_order:
            return None
        return _merged(self, now, budget_left)

    def size(self) -> int:
        """How many entries the index keeps (O(classes))."""
        return sum(len(members) for members in self.lanes.values())

    def positioned(
        self, position: int, now: float, budget_left: Mapping[str, float]
    ) -> WaitingEntry | None:
        """The entry at ``position`` of :meth:`dispatched`'s order (0 to ``size() -
        1``); None when not ``in_time_order``.

        Near the front (``position < MERGED_UP_TO``) the lazy merge is walked.
        Otherwise each class in turn is searched by bisection for the entry with
        exactly ``position`` entries before it in the merge, counting, for each
        candidate, the entries of every other class ranked before it (a
        bisection too): each class is in (key values, ticket) order, so the
        count rises with the candidate, and each count is searched only where the
        earlier candidates left it. O(k^2 log^2 n) key evaluations for k classes
        at worst (each line's ``at`` O(1) without tombstones)."""
        if not self.in_time_order:
            return None
        lines = list(self.lanes.values())
        if len(lines) == 1:
            return lines[0].at(position)
        if position < MERGED_UP_TO:
            for at, (entry, _) in enumerate(_merged(self, now, budget_left)):
                if at == position:
                    return entry
        keys_of = self.policy.plan.keys
        # (class, position) -> (sort key, ticket): the bisections revisit positions
        # (their first steps are shared), and a line's ``at`` costs O(log n) with
        # tombstones
        ranks: dict[tuple[int, int], tuple[Any, int]] = {}

        def rank(number: int, at: int) -> tuple[Any, int]:
            known = ranks.get((number, at))
            if known is None:
                entry = lines[number].at(at)
                waited = now - entry.enqueued_at
                keys = keys_of(entry.values, entry.serial, now, waited, budget_left)
                known = ranks[number, at] = (sort_key(keys), entry.ticket)
            return known

        def ranked_before(number: int, bound: tuple[Any, int], low: int, high: int) -> int:
            """How many of class ``number``'s entries rank before ``bound``, known
            to be from ``low`` to ``high``."""
            while low < high:
                middle = (low + high) // 2
                if rank(number, middle) < bound:
                    low = middle + 1
                else:
                    high = middle
            return low

        for number, line in enumerate(lines):
            others = [other for other in range(len(lines)) if other != number]
            # what each other class may still count: the candidates' bounds only
            # move inwards as the bisection narrows, and so do the counts
            floors, ceilings = [0] * len(others), [len(lines[other]) for other in others]
            low, high = 0, len(line)
            while low < high:
                middle = (low + high) // 2
                bound = rank(number, middle)
                counts = [
                    ranked_before(other, bound, floors[at], ceilings[at])
                    for at, other in enumerate(others)
                ]
                before = middle + sum(counts)
                if before == position:
                    return line.at(middle)
                if before < position:
                    low, floors = middle + 1, counts
                else:
                    high, ceilings = middle, counts
        raise IndexError(position)


def _merged(
    index: LaneIndex, now: float, budget_left: Mapping[str, float]
) -> Iterator[tuple[WaitingEntry, tuple[float, ...]]]:
    """The classes merged lazily: within a class, keys never get worse with age, so
    each class in ticket order is already in (key values, ticket) order, and a
    merge of the classes by that order is the dispatch order."""
    keys_of = index.policy.plan.keys
    heap: list[tuple[Any, ...]] = []
    for number, members in enumerate(index.lanes.values()):
        run = iter(members)
        head: WaitingEntry = next(run)
        keys = keys_of(head.values, head.serial, now, now - head.enqueued_at, budget_left)
        heap.append((sort_key(keys), head.ticket, number, keys, head, run))
    heapq.heapify(heap)  # (key values, ticket) is unique: the rest is never compared
    while heap:
        _, _, number, keys, entry, run = heap[0]
        yield entry, keys
        following: WaitingEntry | None = next(run, None)
        if following is None:
            heapq.heappop(heap)
            continue
        keys = keys_of(
            following.values, following.serial, now, now - following.enqueued_at, budget_left
        )
        heapq.heapreplace(heap, (sort_key(keys), following.ticket, number, keys, following, run))


_SHAPE: Final = shape_of(LaneIndex)


def _build(
    policy: QueuePolicy, lanes: Map[tuple[object, ...], Line[WaitingEntry]], in_time_order: bool
) -> LaneIndex:
    made: Any = _SHAPE()
    made.policy = policy
    made.lanes = lanes
    made.in_time_order = in_time_order
    made.__class__ = LaneIndex
    built: LaneIndex = made
    return built


_index: Final = record_builder(LaneIndex, _build)
