"""The ``static`` path: the fresh entries in key order, one class per first key.

Under ``static`` keys (enqueue timing, or keys that read no ``waited``,
``now`` or ``budget_left``) an entry's key values never change, so its place
is fixed by its :func:`~policy.waiting.fast.plan.ordering` (key values, then
ticket): the same entry, the same place, whenever it is asked.

The entries are kept by *class*, the value of their first key (a priority),
and the classes themselves in a line of their own (the order of key lists is
lexicographic, so the class decides first). Selection is the first entry of
the first class; the dispatch order is the classes in order, each in order.

A class is two lines (:class:`Class`):

- the *run*, keyed by ticket: entries that joined after, and in the
  ordering above, every entry the run ever held. In the run, ticket order is
  ordering order, so the ticket (already in the entry) is its key and nothing
  is kept per entry beyond the line's slots. New requests of one class usually
  come in key order (vLLM's ``(priority, arrival_time)``), so nearly every
  entry joins the run, at its back, the line's cheap end;
- the *rest*, keyed by ordering: any entry that came out of order (an earlier
  arrival after a later one). It costs one ordering tuple per entry.

The class's order is the two merged by ordering. Keying the run by ticket was
measured: 316 bytes per entry under ``vllm_priority`` at 100,000 waiting with
one line keyed by ordering, 260 with the run (docs/performance.md, "Kept per
waiting entry").

Queue order is not kept: it is the entries sorted by ticket, so positions in
queue order cost O(n) here (``index_of``, ``without_index``); a position in
the dispatch order costs O(classes + log^2 n).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from heapq import merge
from itertools import chain, islice
from operator import eq
from typing import Any, Final, NamedTuple

from immutables import Map

from policy.waiting.fast.index import ChosenRow
from policy.waiting.fast.line import EMPTY_LINE, Line
from policy.waiting.fast.plan import NAN_LAST, KeyPlan, ordering
from policy.waiting.fast.rows import TICKET, Row, ticket_of

__all__ = ["Class", "KeyOrder"]


class Class(NamedTuple):
    """The entries of one class (see the module's docstring)."""

    run: Line[Row]  # by ticket: joined in ordering order
    rest: Line[Row]  # by ordering: joined out of order
    #: The highest ordering the run ever held (None before its first entry): an
    #: entry placed above it may join the run. An entry leaving leaves it as it
    #: is, still above every ordering in the run.
    top: tuple[Any, ...] | None


_NO_CLASSES: Final[Map[Any, Class]] = Map()
_NEW_CLASS: Final = Class(EMPTY_LINE, EMPTY_LINE, None)


class KeyOrder:
    """The fresh entries of a queue under a ``static`` policy, in key order by class."""

    # A plain slotted class: one is made per update of the queue.
    __slots__ = ("classes", "order", "plan", "size")

    def __init__(
        self,
        plan: KeyPlan,
        classes: Map[Any, Class],
        order: Line[Any],
        size: int,
    ) -> None:
        self.plan = plan
        self.classes = classes  # first key value -> the class's entries
        self.order = order  # the first key values, in order
        self.size = size

    @staticmethod
    def empty(plan: KeyPlan) -> KeyOrder:
        """No entries."""
        return KeyOrder(plan, _NO_CLASSES, EMPTY_LINE, 0)

    def __len__(self) -> int:
        return self.size

    def _place(self, entry: Row) -> tuple[Any, tuple[Any, ...]]:
        """``entry``'s class (its first key value, NaN as ``NAN_LAST``) and its
        ordering within the class (the other key values, then its ticket)."""
        keys = self.plan.fixed_keys(entry)
        first = keys[0]
        return (first if first == first else NAN_LAST), ordering(keys[1:], entry[TICKET])  # noqa: PLR0124 - the NaN test

    def _ordering(self, entry: Row) -> tuple[Any, ...]:
        return self._place(entry)[1]

    def joined(self, entry: Row) -> KeyOrder:
        """With ``entry``, at its place in key order."""
        return self.joined_all((entry,))

    def joined_all(self, entries: Sequence[Row]) -> KeyOrder:
        """With ``entries``: one :meth:`joined` each, in one pass (a class's new
        entries that all join its run join it at once)."""
        joining: dict[Any, tuple[list[Any], list[Row]]] = {}
        for entry in entries:
            kind, place = self._place(entry)
            places, joiners = joining.setdefault(kind, ([], []))
            places.append(place)
            joiners.append(entry)
        classes, order = self.classes, self.order
        for kind, (places, joiners) in joining.items():
            members = classes.get(kind)
            if members is None:
                members, order = _NEW_CLASS, order.joined(kind, kind)
            run, rest, top = members
            if places == sorted(places) and (top is None or places[0] > top):
                tickets = [entry[TICKET] for entry in joiners]
                members = Class(run.joined_all(tickets, joiners), rest, places[-1])
            else:
                for place, entry in zip(places, joiners, strict=True):
                    if top is None or place > top:
                        run, top = run.joined(entry[TICKET], entry), place
                    else:
                        rest = rest.joined(place, entry)
                members = Class(run, rest, top)
            classes = classes.set(kind, members)
        return KeyOrder(self.plan, classes, order, self.size + len(entries))

    def without(self, entry: Row) -> KeyOrder:
        """Without ``entry`` (found by its ticket in the run, else by its ordering:
        tickets are unique, so a ticket the run holds is this entry's)."""
        first = self.plan.fixed_keys(entry)[0]
        kind = first if first == first else NAN_LAST  # noqa: PLR0124 - the NaN test
        run, rest, top = self.classes[kind]
        try:
            run = run.without(entry[TICKET])
        except KeyError:  # rare: an entry that came out of key order
            rest = rest.without(self._ordering(entry))
        if run or rest:
            members = Class(run, rest, top)
            return KeyOrder(self.plan, self.classes.set(kind, members), self.order, self.size - 1)
        classes = self.classes.delete(kind)
        return KeyOrder(self.plan, classes, self.order.without(kind), self.size - 1)

    def without_all(self, entries: Sequence[Row]) -> KeyOrder:
        """Without ``entries``: at once when they are the first of the dispatch order
        (the admissions of one moment), else one by one."""
        count = len(entries)
        leading = map(ticket_of, islice(self._in_key_order(), count))
        if not count or not all(map(eq, leading, map(ticket_of, entries))):
            return self._without_each(entries)
        return self._without_first(entries)

    def without_leading(self, count: int) -> tuple[KeyOrder, list[Row]]:
        """Without the first ``count`` entries of the key order, and those."""
        leaving = list(islice(self._in_key_order(), count))
        return self._without_first(leaving), leaving

    def _without_first(self, entries: Sequence[Row]) -> KeyOrder:
        """Without ``entries``, the first of the key order: each class's run at
        once, up to a class that holds entries out of order (its ``rest``);
        from there one by one."""
        count = len(entries)
        classes, order = self.classes, self.order
        while count:
            kind = order.first()
            run, rest, top = classes[kind]
            if rest:  # rare: an entry out of order; the others one by one
                left = KeyOrder(self.plan, classes, order, self.size - len(entries) + count)
                return left._without_each(entries[len(entries) - count :])
            if count < len(run):
                classes = classes.set(kind, Class(run.without_first(count), rest, top))
                break
            count -= len(run)
            classes, order = classes.delete(kind), order.without(kind)
        return KeyOrder(self.plan, classes, order, self.size - len(entries))

    def _without_each(self, entries: Sequence[Row]) -> KeyOrder:
        index = self
        for entry in entries:
            index = index.without(entry)
        return index

    def _members(self, members: Class) -> Iterator[Row]:
        """A class's entries in ordering order."""
        if not members.rest:
            return iter(members.run)
        return merge(members.run, members.rest, key=self._ordering)

    def _in_key_order(self) -> Iterator[Row]:
        classes = self.classes
        return chain.from_iterable(self._members(classes[kind]) for kind in self.order)

    def first(self) -> Row:
        """The entry with the smallest ticket (O(n))."""
        return min(self._in_key_order(), key=ticket_of)

    def in_queue_order(self) -> Iterator[Row]:
        """The entries sorted by ticket (O(n log n))."""
        return iter(sorted(self._in_key_order(), key=ticket_of))

    def position(self, entry: Row) -> int:
        """How many entries have a smaller ticket (O(n))."""
        ticket = entry[TICKET]
        return sum(1 for other in self._in_key_order() if other[TICKET] < ticket)

    def at(self, position: int) -> Row:
        """The entry at ``position`` of queue order (O(n log n))."""
        return sorted(self._in_key_order(), key=ticket_of)[position]

    def selected(self, now: float, budget_left: Mapping[str, float]) -> ChosenRow:  # noqa: ARG002 - no moment changes a static key
        """The first entry of the first class."""
        run, rest, _ = self.classes[self.order.first()]
        if not rest:
            entry = run.first()
        elif not run:
            entry = rest.first()
        else:
            entry = min(run.first(), rest.first(), key=self._ordering)
        return entry, self.plan.fixed_keys(entry)

    def dispatched(self, now: float, budget_left: Mapping[str, float]) -> Iterator[ChosenRow]:  # noqa: ARG002
        """The classes in order, each in order."""
        fixed_keys = self.plan.fixed_keys
        return ((entry, fixed_keys(entry)) for entry in self._in_key_order())

    def dispatched_at(
        self,
        position: int,
        now: float,  # noqa: ARG002
        budget_left: Mapping[str, float],  # noqa: ARG002
    ) -> Row:
        """The entry at ``position`` of the dispatch order (O(classes + log^2 n))."""
        classes = self.classes
        for kind in self.order:
            members = classes[kind]
            size = len(members.run) + len(members.rest)
            if position < size:
                return self._member_at(members, position)
            position -= size
        raise IndexError(position)

    def _member_at(self, members: Class, position: int) -> Row:
        """The entry at ``position`` of a class's merged order: the number ``taken``
        of run entries before it is found by bisection (O(log^2 n))."""
        run, rest, _ = members
        if not rest:
            return run.at(position)
        if not run:
            return rest.at(position)
        ordering_of = self._ordering
        # The smallest ``taken`` such that the run's entry at ``taken`` (if any) comes
        # after the rest's entry at ``position - taken`` (if any, and any before).
        low, high = max(0, position - len(rest)), min(position, len(run))
        while low < high:
            taken = (low + high) // 2
            if ordering_of(run.at(taken)) < ordering_of(rest.at(position - taken - 1)):
                low = taken + 1
            else:
                high = taken
        taken = low
        if taken == len(run):
            return rest.at(position - taken)
        if position - taken == len(rest):
            return run.at(taken)
        candidate, other = run.at(taken), rest.at(position - taken)
        return candidate if ordering_of(candidate) < ordering_of(other) else other
