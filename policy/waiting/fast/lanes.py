"""The ``lanes`` path: a few static classes whose keys never get worse with age.

Under ``lanes`` keys (see :mod:`policy.waiting.fast.analysis`) an entry's key
values depend on it only through a few static class values and on how long
it has waited, and never get worse as it waits. Within one class, then, the
oldest entry is never beaten by a younger one, so only each class's head is
a candidate.

The fresh entries are kept in one :class:`~policy.waiting.fast.line.Line`
per class (its *lane*), keyed by ticket. Selection evaluates the keys of the
lane heads only (O(classes)); the dispatch order merges the lanes lazily;
queue order is the merge of the lanes by ticket. That holds while the
entries' enqueue times are finite and do not fall along queue order
(``in_time_order``, checked as entries join: a host's clock that runs
backwards breaks it until the queue empties); otherwise selection and the
dispatch order evaluate every entry, as the ``scan`` path does.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping, Sequence
from itertools import islice
from typing import Any, Final

from immutables import Map

from policy.waiting.fast.in_order import scan_dispatch, scan_selected
from policy.waiting.fast.index import ChosenRow
from policy.waiting.fast.line import EMPTY_LINE, Line
from policy.waiting.fast.plan import KeyPlan, ordering
from policy.waiting.fast.rows import ENQUEUED_AT, TICKET, Row, ticket_of

__all__ = ["Lanes"]

_NO_LANES: Final[Map[Any, Any]] = Map()


def _finite(value: float) -> bool:
    return value - value == 0.0  # false for ±inf and NaN


class Lanes:
    """The fresh entries of a queue under a ``lanes`` policy, one line per class."""

    # A plain slotted class: one is made per update of the queue.
    __slots__ = ("in_time_order", "lanes", "last_at", "plan", "size")

    def __init__(
        self,
        plan: KeyPlan,
        lanes: Map[tuple[object, ...], Line[Row]],
        size: int,
        in_time_order: bool,
        last_at: float,
    ) -> None:
        self.plan = plan
        self.lanes = lanes  # class -> its entries in ticket order
        self.size = size
        # every entry's enqueue time is finite and none is below an earlier entry's
        self.in_time_order = in_time_order
        self.last_at = last_at  # the enqueue time of the last entry that joined

    @staticmethod
    def empty(plan: KeyPlan) -> Lanes:
        """No entries."""
        return Lanes(plan, _NO_LANES, 0, True, 0.0)

    def __len__(self) -> int:
        return self.size

    def joined(self, entry: Row) -> Lanes:
        """With ``entry`` last in its lane."""
        lane = self.plan.lane_of(entry)
        lanes = self.lanes
        at = entry[ENQUEUED_AT]
        ordered = _finite(at) and (not self.size or (self.in_time_order and at >= self.last_at))
        grown = lanes.get(lane, EMPTY_LINE).joined(entry[TICKET], entry)
        return Lanes(self.plan, lanes.set(lane, grown), self.size + 1, ordered, at)

    def joined_all(self, entries: Sequence[Row]) -> Lanes:
        """With ``entries``, in order: one :meth:`joined` each."""
        index = self
        for entry in entries:
            index = index.joined(entry)
        return index

    def without(self, entry: Row) -> Lanes:
        """Without ``entry``."""
        lane = self.plan.lane_of(entry)
        members = self.lanes[lane].without(entry[TICKET])
        lanes = self.lanes.set(lane, members) if members else self.lanes.delete(lane)
        size = self.size - 1
        return Lanes(self.plan, lanes, size, self.in_time_order or not size, self.last_at)

    def without_all(self, entries: Sequence[Row]) -> Lanes:
        """Without ``entries``: one :meth:`without` each."""
        index = self
        for entry in entries:
            index = index.without(entry)
        return index

    def without_leading(self, count: int) -> None:
        """None: the dispatch order reads the moment."""

    def first(self) -> Row:
        """The lane head with the smallest ticket (O(classes))."""
        return min((line.first() for line in self.lanes.values()), key=ticket_of)

    def in_queue_order(self) -> Iterator[Row]:
        """The lanes merged by ticket."""
        lines = list(self.lanes.values())
        if len(lines) == 1:
            return iter(lines[0])
        return heapq.merge(*lines, key=ticket_of)

    def position(self, entry: Row) -> int:
        """How many entries of every lane have a smaller ticket (O(classes log n))."""
        ticket = entry[TICKET]
        return sum(line.rank(ticket) for line in self.lanes.values())

    def at(self, position: int) -> Row:
        """The entry at ``position`` of queue order: its ticket found by bisection
        over the tickets, counting each lane's entries below a ticket (O(k log n
        log t) for k lanes and tickets spanning t)."""
        lines = list(self.lanes.values())
        low: int = min(line.first()[TICKET] for line in lines)
        high: int = max(line.last_key() for line in lines)
        while low < high:  # the largest ticket with exactly ``position`` entries below it
            middle = (low + high + 1) // 2
            if sum(line.rank(middle) for line in lines) <= position:
                low = middle
            else:
                high = middle - 1
        for line in lines:
            below = line.rank(low)
            if below < len(line) and line.at(below)[TICKET] == low:
                return line.at(below)
        raise IndexError(position)  # pragma: no cover - the lanes hold every position

    def selected(self, now: float, budget_left: Mapping[str, float]) -> ChosenRow:
        """The best lane head at this moment; every entry when not in time order."""
        keys_at = self.plan.keys_at
        if not self.in_time_order:
            return scan_selected(self.plan, list(self.in_queue_order()), now, budget_left)
        best: tuple[Any, ...] | None = None
        for members in self.lanes.values():
            head = members.first()
            keys = keys_at(head, now, budget_left)
            rank = ordering(keys, head[TICKET])
            if best is None or rank < best[0]:
                best = (rank, head, keys)
        assert best is not None
        return best[1], best[2]

    def dispatched(self, now: float, budget_left: Mapping[str, float]) -> Iterator[ChosenRow]:
        """The lanes merged lazily by (key values, ticket) at this moment: within a
        lane, keys never get worse with age, so each lane in ticket order is
        already in that order. Every entry sorted when not in time order."""
        if not self.in_time_order:
            return scan_dispatch(self.plan, list(self.in_queue_order()), now, budget_left)
        return _merged(self, now, budget_left)

    def dispatched_at(self, position: int, now: float, budget_left: Mapping[str, float]) -> Row:
        """The entry at ``position`` of the dispatch order, by walking it (O(position
        log k) for k lanes)."""
        return next(islice(self.dispatched(now, budget_left), position, None))[0]


def _merged(index: Lanes, now: float, budget_left: Mapping[str, float]) -> Iterator[ChosenRow]:
    keys_at = index.plan.keys_at
    heap: list[tuple[Any, ...]] = []
    for number, members in enumerate(index.lanes.values()):
        run = iter(members)
        head = next(run)
        keys = keys_at(head, now, budget_left)
        heap.append((ordering(keys, head[TICKET]), number, keys, head, run))
    heapq.heapify(heap)  # orderings are unique (they end in the ticket): nothing else compared
    while heap:
        _, number, keys, entry, run = heap[0]
        yield entry, keys
        following = next(run, None)
        if following is None:
            heapq.heappop(heap)
            continue
        keys = keys_at(following, now, budget_left)
        heapq.heapreplace(heap, (ordering(keys, following[TICKET]), number, keys, following, run))
