"""The ``fifo`` and ``scan`` paths: the fresh entries in queue order.

One :class:`~policy.waiting.fast.line.Line` keyed by ticket. Under ``fifo``
(no keys) the queue selects its front itself and never asks the index (a
scan of empty key lists would give the same, in queue order); under ``scan``
every entry's keys are evaluated at the moment by the policy's compiled scan
(O(n)), and the dispatch order sorts them once (O(n log n)) and pops them in
order.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping, Sequence
from itertools import islice
from operator import eq
from typing import Any

from policy.waiting.fast.index import ChosenRow
from policy.waiting.fast.line import EMPTY_LINE, Line
from policy.waiting.fast.plan import KeyPlan, ordering
from policy.waiting.fast.rows import TICKET, Row, ticket_of

__all__ = ["InOrder", "scan_dispatch", "scan_selected", "without_all"]


class InOrder:
    """The fresh entries of a queue under a ``fifo`` or ``scan`` policy, in ticket order."""

    # A plain slotted class: one is made per update of the queue.
    __slots__ = ("line", "plan")

    def __init__(self, plan: KeyPlan, line: Line[Row]) -> None:
        self.plan = plan
        self.line = line

    @staticmethod
    def empty(plan: KeyPlan) -> InOrder:
        """No entries."""
        return InOrder(plan, EMPTY_LINE)

    def __len__(self) -> int:
        return len(self.line)

    def joined(self, entry: Row) -> InOrder:
        """With ``entry`` last."""
        return InOrder(self.plan, self.line.joined(entry[TICKET], entry))

    def joined_all(self, entries: Sequence[Row]) -> InOrder:
        """With ``entries`` last, in order."""
        tickets = [entry[TICKET] for entry in entries]
        return InOrder(self.plan, self.line.joined_all(tickets, entries))

    def without(self, entry: Row) -> InOrder:
        """Without ``entry``."""
        return InOrder(self.plan, self.line.without(entry[TICKET]))

    def without_all(self, entries: Sequence[Row]) -> InOrder:
        """Without ``entries``: at once when they are the first (admissions of one
        moment under ``fifo``), else one by one."""
        return InOrder(self.plan, without_all(self.line, entries, ticket_of))

    def without_leading(self, count: int) -> tuple[InOrder, list[Row]] | None:
        """Under ``fifo``, without the first ``count`` entries, and those."""
        if self.plan.path != "fifo":
            return None
        leaving = list(islice(self.line, count))
        return InOrder(self.plan, self.line.without_first(count)), leaving

    def first(self) -> Row:
        """The first entry (O(1))."""
        return self.line.first()

    def in_queue_order(self) -> Iterator[Row]:
        """The entries in queue order."""
        return iter(self.line)

    def position(self, entry: Row) -> int:
        """``entry``'s position in queue order (O(log n))."""
        return self.line.rank(entry[TICKET])

    def at(self, position: int) -> Row:
        """The entry at ``position`` of queue order (O(log n))."""
        return self.line.at(position)

    def selected(self, now: float, budget_left: Mapping[str, float]) -> ChosenRow:
        """Every entry's keys evaluated."""
        return scan_selected(self.plan, list(self.line), now, budget_left)

    def dispatched(self, now: float, budget_left: Mapping[str, float]) -> Iterator[ChosenRow]:
        """Every entry sorted by its keys."""
        return scan_dispatch(self.plan, list(self.line), now, budget_left)

    def dispatched_at(self, position: int, now: float, budget_left: Mapping[str, float]) -> Row:
        """The entry at ``position`` of the dispatch order: the walk of the sorted order."""
        return next(islice(self.dispatched(now, budget_left), position, None))[0]


def without_all(line: Line[Row], entries: Sequence[Row], key: Any) -> Line[Any]:
    """``line`` without ``entries`` (each in it once; ``key(entry)`` its key there):
    the first ``k`` at once when ``entries`` are the line's first ``k`` in order
    (their keys are: a line's keys are unique), otherwise one by one."""
    count = len(entries)
    if count and all(map(eq, map(key, islice(line, count)), map(key, entries))):
        return line.without_first(count)
    for entry in entries:
        line = line.without(key(entry))
    return line


def scan_selected(
    plan: KeyPlan, rows: list[Row], now: float, budget_left: Mapping[str, float]
) -> ChosenRow:
    """The entry of ``rows`` (in queue order, not empty) with the smallest key list
    at this moment, ties to the earlier: the policy's compiled scan, or each
    entry's keys by :meth:`~policy.waiting.fast.plan.KeyPlan.keys_at` for a queue
    used with a policy it was not made for (its entries may be laid out for
    another, or hold keys stored at enqueue)."""
    if _compiled_scan(plan, rows):
        at, keys = plan.scan(rows, now, budget_left)
        return rows[at], keys
    keys_at = plan.keys_at
    _, entry, keys = min(
        (ordering(keys, entry[TICKET]), entry, keys)
        for entry in rows
        for keys in (keys_at(entry, now, budget_left),)
    )
    return entry, keys


def scan_dispatch(
    plan: KeyPlan, rows: list[Row], now: float, budget_left: Mapping[str, float]
) -> Iterator[ChosenRow]:
    """``rows`` (in queue order) in dispatch order at this moment: their keys
    evaluated once each, heapified, and popped lazily (O(n) before the first,
    O(log n) each next)."""
    ranked: list[tuple[Any, ...]]
    if _compiled_scan(plan, rows):
        ranked = plan.sort_keys(rows, now, budget_left)  # sort key + (row index,): unique
    else:
        ranked = [
            (ordering(plan.keys_at(entry, now, budget_left), entry[TICKET]), at)
            for at, entry in enumerate(rows)
        ]
    heapq.heapify(ranked)
    while ranked:
        entry = rows[int(heapq.heappop(ranked)[-1])]
        yield entry, plan.keys_at(entry, now, budget_left)


def _compiled_scan(plan: KeyPlan, rows: list[Row]) -> bool:
    """Whether the compiled scan reads ``rows`` right: keys computed now from values
    laid out for the plan (not stored at enqueue)."""
    return plan.policy.timing != "enqueue" and all(map(plan.laid_out, rows))
