"""The ``static`` path: the fresh entries in key order, one line per first key.

Under ``static`` keys (enqueue timing, or keys that read no ``waited``,
``now`` or ``budget_left``) an entry's key values never change, so they are
computed once, when it joins, and its place is fixed by its
:func:`~policy.waiting.fast.plan.ordering` (key values, then ticket).

The entries are kept by *class*, the value of their first key (a priority):
one :class:`~policy.waiting.fast.line.Line` per class keyed by the ordering of
the other key values, and the classes themselves in a line of their own (the
total order of key values is lexicographic, so the class decides first). New requests of one class
usually come in key order (vLLM's ``(priority, arrival_time)``), so each joins
at the back of its class's line, the cheap end, instead of in the middle of
one line of everything. Selection is the first entry of the first class; the
dispatch order is the classes in order, each line in order. The key values
are computed again (compiled, 0.3 µs) where an answer needs them.

Queue order is not kept: it is the entries sorted by ticket, so positions in
queue order cost O(n) here (``index_of``, ``without_index``); a position in
the dispatch order costs O(classes + log n).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import chain, islice
from operator import is_
from typing import Any, Final

from immutables import Map

from policy.waiting.entry import WaitingEntry
from policy.waiting.fast.index import Chosen
from policy.waiting.fast.line import EMPTY_LINE, Line
from policy.waiting.fast.plan import NAN_LAST, KeyPlan, ordering

__all__ = ["KeyOrder"]

_NO_CLASSES: Final[Map[Any, Any]] = Map()


class KeyOrder:
    """The fresh entries of a queue under a ``static`` policy, in key order by class."""

    # A plain slotted class: one is made per update of the queue.
    __slots__ = ("classes", "order", "plan", "size")

    def __init__(
        self,
        plan: KeyPlan,
        classes: Map[Any, Line[WaitingEntry]],
        order: Line[Any],
        size: int,
    ) -> None:
        self.plan = plan
        self.classes = classes  # first key value -> the class's entries, by ordering
        self.order = order  # the first key values, in order
        self.size = size

    @staticmethod
    def empty(plan: KeyPlan) -> KeyOrder:
        """No entries."""
        return KeyOrder(plan, _NO_CLASSES, EMPTY_LINE, 0)

    def __len__(self) -> int:
        return self.size

    def _place(self, entry: WaitingEntry) -> tuple[Any, tuple[Any, ...]]:
        """``entry``'s class (its first key value, NaN as ``NAN_LAST``) and its key
        in the class's line (the other key values, then its ticket)."""
        keys = self.plan.fixed_keys(entry)
        first = keys[0]
        return (first if first == first else NAN_LAST), ordering(keys[1:], entry.ticket)  # noqa: PLR0124 - the NaN test

    def joined(self, entry: WaitingEntry) -> KeyOrder:
        """With ``entry``, at its place in key order."""
        kind, place = self._place(entry)
        members = self.classes.get(kind)
        order = self.order
        if members is None:
            members, order = EMPTY_LINE, order.joined(kind, kind)
        classes = self.classes.set(kind, members.joined(place, entry))
        return KeyOrder(self.plan, classes, order, self.size + 1)

    def joined_all(self, entries: Sequence[WaitingEntry]) -> KeyOrder:
        """With ``entries``: one :meth:`joined` each, in one pass (a class's new
        entries that come in key order after its last join its line at once)."""
        joining: dict[Any, tuple[list[Any], list[WaitingEntry]]] = {}
        for entry in entries:
            kind, place = self._place(entry)
            places, members = joining.setdefault(kind, ([], []))
            places.append(place)
            members.append(entry)
        classes, order = self.classes, self.order
        for kind, (places, members) in joining.items():
            line = classes.get(kind)
            if line is None:
                line, order = EMPTY_LINE, order.joined(kind, kind)
            if places == sorted(places) and (not line or places[0] > line.last_key()):
                line = line.joined_all(places, members)
            else:
                for place, entry in zip(places, members, strict=True):
                    line = line.joined(place, entry)
            classes = classes.set(kind, line)
        return KeyOrder(self.plan, classes, order, self.size + len(entries))

    def without(self, entry: WaitingEntry) -> KeyOrder:
        """Without ``entry`` (found by its ordering, computed again)."""
        kind, place = self._place(entry)
        members = self.classes[kind].without(place)
        if members:
            return KeyOrder(self.plan, self.classes.set(kind, members), self.order, self.size - 1)
        classes = self.classes.delete(kind)
        return KeyOrder(self.plan, classes, self.order.without(kind), self.size - 1)

    def without_all(self, entries: Sequence[WaitingEntry]) -> KeyOrder:
        """Without ``entries``: when they are the first of the dispatch order (the
        admissions of one moment), each class's first run at once; else one by one."""
        count = len(entries)
        if not count or not all(map(is_, islice(self._in_key_order(), count), entries)):
            index = self
            for entry in entries:
                index = index.without(entry)
            return index
        classes, order = self.classes, self.order
        while count:
            kind = order.first()
            members = classes[kind]
            if count < len(members):
                classes = classes.set(kind, members.without_first(count))
                break
            count -= len(members)
            classes, order = classes.delete(kind), order.without(kind)
        return KeyOrder(self.plan, classes, order, self.size - len(entries))

    def _in_key_order(self) -> Iterator[WaitingEntry]:
        classes = self.classes
        return chain.from_iterable(classes[kind] for kind in self.order)

    def first(self) -> WaitingEntry:
        """The entry with the smallest ticket (O(n))."""
        return min(self._in_key_order(), key=_ticket)

    def in_queue_order(self) -> Iterator[WaitingEntry]:
        """The entries sorted by ticket (O(n log n))."""
        return iter(sorted(self._in_key_order(), key=_ticket))

    def position(self, entry: WaitingEntry) -> int:
        """How many entries have a smaller ticket (O(n))."""
        ticket = entry.ticket
        return sum(1 for other in self._in_key_order() if other.ticket < ticket)

    def at(self, position: int) -> WaitingEntry:
        """The entry at ``position`` of queue order (O(n log n))."""
        return sorted(self._in_key_order(), key=_ticket)[position]

    def selected(self, now: float, budget_left: Mapping[str, float]) -> Chosen:  # noqa: ARG002 - no moment changes a static key
        """The first entry of the first class."""
        entry = self.classes[self.order.first()].first()
        return entry, self.plan.fixed_keys(entry)

    def dispatched(self, now: float, budget_left: Mapping[str, float]) -> Iterator[Chosen]:  # noqa: ARG002
        """The classes in order, each line in order."""
        fixed_keys = self.plan.fixed_keys
        return ((entry, fixed_keys(entry)) for entry in self._in_key_order())

    def dispatched_at(
        self,
        position: int,
        now: float,  # noqa: ARG002
        budget_left: Mapping[str, float],  # noqa: ARG002
    ) -> WaitingEntry:
        """The entry at ``position`` of the dispatch order (O(classes + log n))."""
        classes = self.classes
        for kind in self.order:
            members = classes[kind]
            if position < len(members):
                return members.at(position)
            position -= len(members)
        raise IndexError(position)


def _ticket(entry: WaitingEntry) -> int:
    return entry.ticket
