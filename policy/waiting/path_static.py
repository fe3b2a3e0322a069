"""The ``static`` selection path: key values fixed per entry, kept in key order.

Under ``static`` keys (enqueue timing, or keys that read no ``waited``, ``now``
or ``budget_left``) an entry's key values never change, so the queue keeps its
non-resumed entries in (key values, ticket) order as they join, and selection
is the first of them.

Theory of operation. A list of key values is ordered by its first value first,
so entries are kept per *class*, the first key value (a priority, usually a
small integer): one :class:`~policy.waiting.line.Line` per class, in ticket
order, the classes present in a sorted tuple. While every class's line is also
in key order (each entry joins behind one whose later key values are not
greater: requests arriving in time order under vLLM's ``(priority,
arrival_time)``), the selection is the first entry of the smallest class, in
O(1), and admission is O(1). When an entry would join its class out of key
order, or a policy's first key takes more than :data:`MAX_STATIC_CLASSES`
values, the index moves, once, to the general one: a persistent B+tree keyed
by (key values, ticket) (:class:`~policy.waiting.ordered.OrderedMap`), O(log n)
per operation. An index that empties keeps classes again.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Any, ClassVar, Final

from immutables import Map

from policy.records import record_builder, shape_of
from policy.waiting.compiled import sort_key
from policy.waiting.entry import WaitingEntry
from policy.waiting.evaluate import order_key
from policy.waiting.line import Line
from policy.waiting.ordered import OrderedMap
from policy.waiting.plan import NO_BUDGETS
from policy.waiting.queue_policy import QueuePolicy

__all__ = ["MAX_STATIC_CLASSES", "StaticIndex", "static_keys"]

#: Distinct first key values kept apart; beyond, the general index.
MAX_STATIC_CLASSES: Final = 64

#: The class of every NaN first key value (NaN objects differ in identity).
_NAN_CLASS: Final = "nan"

_EMPTY_LINE: Final[Line[Any]] = Line.empty()
_NO_CLASSES: Final[Map[Any, Any]] = Map()


def static_keys(policy: QueuePolicy, entry: WaitingEntry) -> tuple[float, ...]:
    """The key values of ``entry`` under ``policy``'s ``static`` path, exactly as
    :func:`~policy.waiting.select.entry_keys` gives them: under enqueue timing
    the stored keys (or, missing, the keys at enqueue); otherwise keys that read
    no moment, so any moment gives their values."""
    keys_of = policy.plan.keys
    if policy.timing == "enqueue":
        stored = entry.enqueue_keys
        if stored is not None:
            return stored
        return keys_of(entry.values, entry.serial, entry.enqueued_at, 0.0, NO_BUDGETS)
    return keys_of(entry.values, entry.serial, math.nan, math.nan, NO_BUDGETS)


def _class_of(value: float) -> Any:
    """The class of a first key value: the value (``-0.0`` as ``0.0``), one for NaN."""
    return value + 0.0 if value == value else _NAN_CLASS  # noqa: PLR0124 - the NaN test


def _class_rank(value: Any) -> tuple[int, float]:
    """The order of classes: the order of key values itself (one rule for both)."""
    return order_key(math.nan if value is _NAN_CLASS else value)


@dataclass(frozen=True, slots=True, init=False)
class StaticIndex:
    """The non-resumed entries of a queue under a ``static`` policy, in key order."""

    #: The path keeps entries (the queue updates it on every join and leave).
    tracks: ClassVar[bool] = True
    #: ``added`` does not read ``back``.
    needs_back: ClassVar[bool] = False

    policy: QueuePolicy
    #: When not ``by_class``: (sort key of the key values, ticket) -> entry.
    ranked: OrderedMap[tuple[Any, ...], WaitingEntry]
    #: When ``by_class``: first key value -> its entries, in (key values, ticket) order.
    classes: Map[Any, Line[WaitingEntry]]
    #: When ``by_class``: the first key values present, in key order.
    class_order: tuple[Any, ...]
    #: Entries are kept per class (``classes``), else in ``ranked``.
    by_class: bool

    @staticmethod
    def empty(policy: QueuePolicy) -> StaticIndex:
        """The index of an empty queue under ``policy``."""
        return _index(policy, OrderedMap(), _NO_CLASSES, (), True)

    @property
    def holds_order(self) -> bool:
        """Whether the class lines hold the entries (``by_class``): the general
        index keeps them in key order only, and the queue then keeps its own line."""
        return self.by_class

    def lines(self) -> tuple[Line[WaitingEntry], ...]:
        """The class lines, in class order (when ``by_class``)."""
        classes = self.classes
        return tuple(classes[value] for value in self.class_order)

    def holds(self, entry: WaitingEntry) -> bool:
        """Whether this very entry is in its class's line (when ``by_class``)."""
        keys = static_keys(self.policy, entry)
        if not keys:
            return False
        members = self.classes.get(_class_of(keys[0]))
        return members is not None and members.holds(entry)

    def _ranked_key(self, entry: WaitingEntry) -> tuple[Any, ...]:
        # nested, not flat: stored key lists may differ in length (another policy's)
        return (sort_key(static_keys(self.policy, entry)), entry.ticket)

    def added(self, entry: WaitingEntry, back: WaitingEntry | None) -> StaticIndex:  # noqa: ARG002 - PathIndex's parameters
        """With ``entry``, which joins the queue behind every entry here (``back``,
        the last non-resumed entry, is not needed on this path)."""
        policy = self.policy
        if not self.by_class:
            ranked = self.ranked.insert(self._ranked_key(entry), entry)
            return _index(policy, ranked, _NO_CLASSES, (), False)
        keys = static_keys(policy, entry)
        if not keys:  # stored by a policy without keys: the general index
            return self._ranked().added(entry, None)
        first = _class_of(keys[0])
        classes, order = self.classes, self.class_order
        members = classes.get(first)
        if members is None:
            if len(order) >= MAX_STATIC_CLASSES:
                return self._ranked().added(entry, None)
            members = _EMPTY_LINE
            order = tuple(sorted((*order, first), key=_class_rank))
        elif sort_key(keys[1:]) < sort_key(static_keys(policy, members.last())[1:]):
            # out of key order within its class: the general index from now on
            return self._ranked().added(entry, None)
        return _index(
            policy, self.ranked, classes.set(first, members.joined_back(entry)), order, True
        )

    def added_all(self, entries: list[WaitingEntry], back: WaitingEntry | None) -> StaticIndex:
        """With ``entries`` joining in order: the index one :meth:`added` per entry
        gives, built with one line extension and one map update per class when
        every entry keeps its class's key order (otherwise one by one)."""
        if not self.by_class:
            return self._added_each(entries, back)
        policy, classes = self.policy, self.classes
        grown: dict[Any, list[WaitingEntry]] = {}
        # the sort key of the rest of the keys of each class's last entry so far
        tails: dict[Any, Any] = {}
        for entry in entries:
            keys = static_keys(policy, entry)
            if not keys:
                return self._added_each(entries, back)
            first = _class_of(keys[0])
            tail = sort_key(keys[1:])
            batch = grown.get(first)
            if batch is None:
                members = classes.get(first)
                if members is None:
                    known = sum(1 for value in grown if classes.get(value) is None)
                    if len(self.class_order) + known >= MAX_STATIC_CLASSES:
                        return self._added_each(entries, back)
                    grown[first] = [entry]
                    tails[first] = tail
                    continue
                batch = grown[first] = []
                last_tail = sort_key(static_keys(policy, members.last())[1:])
            else:
                last_tail = tails[first]
            if tail < last_tail:
                return self._added_each(entries, back)  # the general index from there on
            batch.append(entry)
            tails[first] = tail
        order = self.class_order
        fresh = [value for value in grown if classes.get(value) is None]
        if fresh:
            order = tuple(sorted((*order, *fresh), key=_class_rank))
        for value, batch in grown.items():
            members = classes.get(value)
            classes = classes.set(
                value, (_EMPTY_LINE if members is None else members).joined_back_all(batch)
            )
        return _index(policy, self.ranked, classes, order, True)

    def _added_each(self, entries: list[WaitingEntry], back: WaitingEntry | None) -> StaticIndex:
        index = self
        for entry in entries:
            index = index.added(entry, back)
            back = entry
        return index

    def _ranked(self) -> StaticIndex:
        """This index with its entries in the general ``ranked`` index."""
        ranked = self.ranked
        for members in self.classes.values():
            for member in members:
                ranked = ranked.insert(self._ranked_key(member), member)
        return _index(self.policy, ranked, _NO_CLASSES, (), False)

    def dropped(self, entry: WaitingEntry) -> StaticIndex:
        """Without ``entry`` (non-resumed, in the index)."""
        policy = self.policy
        if not self.by_class:
            ranked = self.ranked.remove(self._ranked_key(entry))
            # an emptied index keeps entries by class again
            return _index(policy, ranked, _NO_CLASSES, (), not ranked)
        first = _class_of(static_keys(policy, entry)[0])
        members = self.classes[first].without(entry)
        if members:
            classes = self.classes.set(first, members)
            return _index(policy, self.ranked, classes, self.class_order, True)
        order = tuple(value for value in self.class_order if value != first)
        return _index(policy, self.ranked, self.classes.delete(first), order, True)

    def dropped_all(self, entries: list[WaitingEntry]) -> StaticIndex:
        """Without ``entries`` (non-resumed, each in the index once): the index one
        :meth:`dropped` per entry gives. By class, a class whose leaving entries
        are the first of its line, in order (the admissions of one moment take
        class heads), is cut once (``Line.without_first``), then the class map
        is updated once per class."""
        if not self.by_class:
            index = self
            for entry in entries:
                index = index.dropped(entry)
            return index
        policy, classes, order = self.policy, self.classes, self.class_order
        leaving: dict[Any, list[WaitingEntry]] = {}
        for entry in entries:
            first = _class_of(static_keys(policy, entry)[0])
            gone = leaving.get(first)
            if gone is None:
                leaving[first] = [entry]
            else:
                gone.append(entry)
        for value, gone in leaving.items():
            members = classes[value]  # a KeyError for an entry of no class here
            count = len(gone)
            if count <= len(members) and all(
                map(operator.is_, islice(members, count), gone)  # one walk, in C
            ):
                members = members.without_first(count)
            else:  # from the middle too: one at a time (a KeyError for one not here)
                for entry in gone:
                    members = members.without(entry)
            if members:
                classes = classes.set(value, members)
            else:
                classes = classes.delete(value)
                order = tuple(kept for kept in order if kept != value)
        return _index(policy, self.ranked, classes, order, True)

    def selected(
        self,
        now: float,  # noqa: ARG002 - PathIndex's parameters
        budget_left: Mapping[str, float],  # noqa: ARG002
    ) -> tuple[WaitingEntry, tuple[float, ...]]:
        """The first entry and its key values (the index must not be empty; the
        moment is not read)."""
        if self.by_class:
            best = self.classes[self.class_order[0]].first()
        else:
            best = self.ranked.first()[1]
        return best, static_keys(self.policy, best)

    def dispatched(
        self,
        now: float,  # noqa: ARG002 - PathIndex's parameters
        budget_left: Mapping[str, float],  # noqa: ARG002
    ) -> Iterator[tuple[WaitingEntry, tuple[float, ...]]]:
        """Every entry with its key values, in (key values, ticket) order, lazily,
        O(1) each (the moment is not read)."""
        policy = self.policy
        if not self.by_class:
            for entry in self.ranked.values():
                yield entry, static_keys(policy, entry)
            return
        for value in self.class_order:  # a class's first key value dominates its order
            for entry in self.classes[value]:
                yield entry, static_keys(policy, entry)

    def size(self) -> int:
        """How many entries the index keeps (O(classes))."""
        if not self.by_class:
            return len(self.ranked)
        return sum(len(members) for members in self.classes.values())

    def positioned(
        self,
        position: int,
        now: float,  # noqa: ARG002 - PathIndex's parameters
        budget_left: Mapping[str, float],  # noqa: ARG002
    ) -> WaitingEntry:
        """The entry at ``position`` of :meth:`dispatched`'s order (0 to ``size() -
        1``): O(log n) in the general index; by class, O(classes) to find the
        class, then the class line's :meth:`~policy.waiting.line.Line.at`."""
        if not self.by_class:
            return self.ranked.at(position)[1]
        classes = self.classes
        for value in self.class_order:
            members = classes[value]
            if position < len(members):
                return members.at(position)
            position -= len(members)
        raise IndexError(position)


_SHAPE: Final = shape_of(StaticIndex)


def _build(
    policy: QueuePolicy,
    ranked: OrderedMap[tuple[Any, ...], WaitingEntry],
    classes: Map[Any, Line[WaitingEntry]],
    class_order: tuple[Any, ...],
    by_class: bool,
) -> StaticIndex:
    made: Any = _SHAPE()
    made.policy = policy
    made.ranked = ranked
    made.classes = classes
    made.class_order = class_order
    made.by_class = by_class
    made.__class__ = StaticIndex
    built: StaticIndex = made
    return built


_index: Final = record_builder(StaticIndex, _build)
