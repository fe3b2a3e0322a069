"""A persistent first-in-first-out line of ticketed entries.

The waiting queue keeps its order, and each class of the ``lanes`` and
``static`` selection paths keeps its members, in a :class:`Line`: entries in
ascending ticket order, where new entries join only at either end (an append at
the back, a requeue at the front) and any entry may leave.

Theory of operation. A line is two of pyrsistent's C vectors (``PVector``) and
a few integers, held in a tuple (building one costs a third of a slotted
record's ``__init__``):

- ``back``: the entries that joined at the back, in ticket order; the live
  slots are ``[head, tail)``. Leaving at the front moves ``head`` on, leaving
  at the back moves ``tail`` back, and joining at the back writes slot
  ``tail`` (appending to the vector, or overwriting a slot past the live part
  that this version no longer uses: the vector is persistent, so older
  versions keep theirs).
- ``front``: the entries that joined at the front, as a stack: slot
  ``top - 1`` is the first entry of the line, slot 0 the last of the front part.
- An entry leaving from the middle leaves a *tombstone* in its slot: its
  ticket (an ``int``), so the slots stay in ticket order and a binary search
  by ticket still finds any entry. ``dead`` holds the tombstones' tickets
  that lie in the live parts, in a persistent sorted map with positions
  (:class:`~policy.waiting.ordered.OrderedMap`), so that :meth:`Line.rank`
  and :meth:`Line.at` count the tombstones before a slot in O(log n).
  ``head``, ``tail`` and ``top`` always rest on live entries: they skip
  tombstones as they move, and drop them from ``dead``.
- ``waste`` counts slots that hold no live entry (dead prefix, the unused
  slots past ``tail`` and ``top``, tombstones). When it exceeds the live
  entries (plus a constant), the line is rebuilt from its live entries in
  O(n): amortised O(1) per operation, memory at most about twice the entries.

Finding an entry's slot: the first and last entries are checked first (the
common case: admissions leave at the front), then the slot its ticket would
have if back tickets were dense (``ticket - base``; the queue's own line is
dense until an entry leaves at its back), then a binary search by ticket.
Slots are compared by identity (``is``): a line holds each entry object once.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from itertools import islice
from typing import Any, Final, Generic, Protocol, TypeVar

from pyrsistent import pvector
from pyrsistent.typing import PVector

from policy.waiting.ordered import OrderedMap

__all__ = ["Line", "Ticketed"]


class Ticketed(Protocol):
    """What a line holds: an object with an integer ``ticket``."""

    @property
    def ticket(self) -> int: ...


E = TypeVar("E", bound=Ticketed)

#: Rebuilt when wasted slots exceed the live entries by this many.
_SLACK: Final = 64

_EMPTY_VECTOR: Final[PVector[Any]] = pvector()
_NO_DEAD: Final[OrderedMap[int, bool]] = OrderedMap()


def _ticket_of(slot: Any) -> int:
    return slot if type(slot) is int else slot.ticket


def _negated_ticket_of(slot: Any) -> int:
    return -(slot if type(slot) is int else slot.ticket)


class Line(tuple[Any, ...], Generic[E]):
    """Entries in ticket order; joining at either end, leaving anywhere.

    Every update returns a new line and leaves this one as it was.

    >>> from types import SimpleNamespace as E
    >>> a, b, c, r = E(ticket=0), E(ticket=1), E(ticket=2), E(ticket=-1)
    >>> line = Line.empty().joined_back(a).joined_back(b).joined_back(c).joined_front(r)
    >>> [e.ticket for e in line], line.first().ticket, line.rank(b), line.at(3).ticket
    ([-1, 0, 1, 2], -1, 2, 2)
    >>> [e.ticket for e in line.without(b)], len(line.without(b)), len(line)
    ([-1, 0, 2], 3, 4)
    """

    # The fields, by position: (front, top, back, head, tail, base, dead, size,
    # waste). Never unpack a line itself (unpacking a tuple subclass calls its
    # __iter__, which yields entries): unpack ``line[:]``, a plain tuple.
    __slots__ = ()

    @staticmethod
    def empty() -> Line[Any]:
        """The empty line."""
        return _EMPTY

    def __len__(self) -> int:
        size: int = self[7]
        return size

    def __bool__(self) -> bool:
        return self[7] > 0  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[E]:
        front, top, back, head, tail = self[0], self[1], self[2], self[3], self[4]
        for at in range(top - 1, -1, -1):
            slot = front[at]
            if type(slot) is not int:
                yield slot
        for slot in islice(back, head, tail):
            if type(slot) is not int:
                yield slot

    def __repr__(self) -> str:
        return f"Line({list(self)!r})"

    # tuple's own equality and hash would compare vectors slot by slot: a line is
    # compared by identity, as the persistent maps it replaces were
    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:
        return id(self)

    def first(self) -> E:
        """The first entry (the line must not be empty)."""
        top = self[1]
        if top:
            return self[0][top - 1]  # type: ignore[no-any-return]
        return self[2][self[3]]  # type: ignore[no-any-return]

    def last(self) -> E:
        """The last entry (the line must not be empty)."""
        if self[4] > self[3]:
            return self[2][self[4] - 1]  # type: ignore[no-any-return]
        for slot in self[0]:  # the front part's last live slot (tombstones below it)
            if type(slot) is not int:
                return slot  # type: ignore[no-any-return]
        raise IndexError("last of an empty line")

    def joined_back(self, entry: E) -> Line[E]:
        """This line with ``entry`` last; its ticket must exceed every ticket here."""
        back, head, tail = self[2], self[3], self[4]
        waste: int = self[8]
        if tail < len(back):
            back = back.set(tail, entry)
            waste -= 1
        else:
            back = back.append(entry)
        # an empty back part starts dense at this ticket
        base = entry.ticket - tail if tail == head else self[5]
        return _tuple_new(
            Line, (self[0], self[1], back, head, tail + 1, base, self[6], self[7] + 1, waste)
        )

    def joined_back_all(self, entries: list[E]) -> Line[E]:
        """This line with ``entries`` last, in order; their tickets must rise and
        exceed every ticket here (one vector extension when nothing past the live
        part is to be overwritten).

        >>> from types import SimpleNamespace as E
        >>> [e.ticket for e in Line.empty().joined_back_all([E(ticket=0), E(ticket=1)])]
        [0, 1]
        """
        back, head, tail = self[2], self[3], self[4]
        if not entries:
            return self
        if tail < len(back):  # slots to overwrite: one by one
            line = self
            for entry in entries:
                line = line.joined_back(entry)
            return line
        base = entries[0].ticket - tail if tail == head else self[5]
        count = len(entries)
        return _tuple_new(
            Line,
            (
                self[0],
                self[1],
                back.extend(entries),
                head,
                tail + count,
                base,
                self[6],
                self[7] + count,
                self[8],
            ),
        )

    def joined_front(self, entry: E) -> Line[E]:
        """This line with ``entry`` first; its ticket must be below every ticket here."""
        front, top, back, head, tail, base, dead, size, waste = self[:]
        if top < len(front):
            front = front.set(top, entry)
            waste -= 1
        else:
            front = front.append(entry)
        return _made(front, top + 1, back, head, tail, base, dead, size + 1, waste)

    def _slot_of(self, entry: E) -> tuple[bool, int]:
        """(in the front part, slot) of ``entry``, which must be in this line."""
        front, top, back, head, tail = self[0], self[1], self[2], self[3], self[4]
        if tail > head:
            if back[head] is entry:
                return False, head
            if back[tail - 1] is entry:
                return False, tail - 1
            guess = entry.ticket - self[5]
            if head <= guess < tail and back[guess] is entry:
                return False, guess
        if top:
            if front[top - 1] is entry:
                return True, top - 1
            if front[0] is entry:
                return True, 0
            # front tickets fall as slots rise
            at = bisect_left(front, -entry.ticket, 0, top, key=_negated_ticket_of)
            if at < top and front[at] is entry:
                return True, at
        at = bisect_left(back, entry.ticket, head, tail, key=_ticket_of)
        if at < tail and back[at] is entry:
            return False, at
        raise KeyError(entry.ticket)

    def holds(self, entry: E) -> bool:
        """Whether ``entry`` (this very object) is in this line."""
        if not self[7]:
            return False
        ticket = entry.ticket
        if ticket < _ticket_of(self.first()) or ticket > _ticket_of(self.last()):
            return False  # an entry that left at either end (an admission, usually)
        try:
            self._slot_of(entry)
        except KeyError:
            return False
        return True

    def without(self, entry: E) -> Line[E]:
        """This line without ``entry``, which must be in it (a ``KeyError`` otherwise)."""
        back, head = self[2], self[3]
        if not self[1] and self[4] > head and back[head] is entry and self[7] > 1:
            # the common case (an admission at the front, no resumed entries): inline
            tail, dead = self[4], self[6]
            head += 1
            while type(back[head]) is int:  # the last slot is live: head stops there
                dead = dead.remove(back[head])
                head += 1
            size: int = self[7] - 1
            waste: int = self[8] + 1
            if waste > size + _SLACK:
                return _rebuilt(self, size, entry)
            return _tuple_new(Line, (self[0], 0, back, head, tail, self[5], dead, size, waste))
        in_front, at = self._slot_of(entry)
        front, top, back, head, tail, base, dead, size, waste = self[:]
        if size == 1:
            return _EMPTY
        if in_front:
            if at == top - 1:
                top -= 1
                while top and type(front[top - 1]) is int:  # rest on a live entry
                    top -= 1
                    dead = dead.remove(front[top])
            else:
                front = front.set(at, entry.ticket)
                dead = dead.insert(entry.ticket, True)
        elif at == head:
            head += 1
            while head < tail and type(back[head]) is int:
                dead = dead.remove(back[head])
                head += 1
        elif at == tail - 1:
            tail -= 1
            while type(back[tail - 1]) is int:  # head < tail - 1 rests on a live entry
                tail -= 1
                dead = dead.remove(back[tail])
        else:
            back = back.set(at, entry.ticket)
            dead = dead.insert(entry.ticket, True)
        waste += 1
        size -= 1
        if waste > size + _SLACK:
            return _rebuilt(self, size, entry)
        return _made(front, top, back, head, tail, base, dead, size, waste)

    def without_first(self, count: int) -> Line[E]:
        """This line without its first ``count`` entries (0 to ``len``; an
        ``IndexError`` otherwise). O(1) without tombstones (the ends move on:
        ``count`` admissions at the front in one step), one :meth:`without` per
        entry with them.

        >>> from types import SimpleNamespace as E
        >>> line = Line.empty().joined_back_all([E(ticket=0), E(ticket=1), E(ticket=2)])
        >>> [e.ticket for e in line.joined_front(E(ticket=-1)).without_first(2)]
        [1, 2]
        """
        front, top, back, head, tail, base, dead, size, waste = self[:]
        if not 0 <= count <= size:
            raise IndexError(count)
        if count == size:
            return _EMPTY
        if dead:  # the ends must skip tombstones as they move: one entry at a time
            line = self
            for _ in range(count):
                line = line.without(line.first())
            return line
        # every slot in the live parts is live: the front part's top ones go first
        from_front = min(count, top)
        top -= from_front
        head += count - from_front
        size -= count
        waste += count
        moved = _made(front, top, back, head, tail, base, dead, size, waste)
        if waste > size + _SLACK:
            return _rebuilt(moved, size, None)
        return moved

    def rank(self, entry: E) -> int:
        """How many entries come before ``entry``, which must be in this line. O(log n)."""
        in_front, at = self._slot_of(entry)
        top: int = self[1]
        slot: int = top - 1 - at if in_front else top + at - self[3]
        dead: OrderedMap[int, bool] = self[6]
        return slot - dead.rank(entry.ticket) if dead else slot

    def count_before(self, ticket: int) -> int:
        """How many entries have a ticket below ``ticket`` (any integer, in this
        line or not). O(log n).

        >>> from types import SimpleNamespace as E
        >>> line = Line.empty().joined_back_all([E(ticket=0), E(ticket=4)])
        >>> line = line.joined_front(E(ticket=-1))
        >>> [line.count_before(t) for t in (-5, -1, 0, 3, 4, 9)]
        [0, 0, 1, 2, 2, 3]
        """
        front, top, back, head, tail = self[0], self[1], self[2], self[3], self[4]
        # front slots hold falling tickets: those below ``ticket`` are the top ones
        slots: int = top - bisect_left(front, -ticket + 1, 0, top, key=_negated_ticket_of)
        slots += bisect_left(back, ticket, head, tail, key=_ticket_of) - head
        dead: OrderedMap[int, bool] = self[6]
        return slots - dead.rank(ticket) if dead else slots

    def at(self, position: int) -> E:
        """The entry at ``position`` (0 to ``len - 1``; an ``IndexError`` otherwise).
        O(1) without tombstones, O(log n · log tombstones) with them.

        Counting slots from the line's first, the entry is at slot ``position + k``
        where ``k`` tombstones lie before it; ``k`` is found by bisection: for slot
        ``position + k``, the tombstones before it minus ``k`` never rises with
        ``k``, and the entry's ``k`` is the largest for which it is not negative."""
        size = self[7]
        if position < 0 or position >= size:
            raise IndexError(position)
        front, top, back, head = self[0], self[1], self[2], self[3]
        dead: OrderedMap[int, bool] = self[6]
        if dead:
            low, high = 0, len(dead)  # the largest k in [low, high] with room(k) >= 0
            while low < high:
                k = (low + high + 1) // 2
                slot = position + k
                ticket = _ticket_of(
                    front[top - 1 - slot] if slot < top else back[head + slot - top]
                )
                if dead.rank(ticket) >= k:
                    low = k
                else:
                    high = k - 1
            position += low
        if position < top:
            return front[top - 1 - position]  # type: ignore[no-any-return]
        return back[head + position - top]  # type: ignore[no-any-return]


_tuple_new: Final = tuple.__new__


def _made(  # noqa: PLR0917 - the line's fields, positionally: the hot path's constructor
    front: PVector[Any],
    top: int,
    back: PVector[Any],
    head: int,
    tail: int,
    base: int,
    dead: OrderedMap[int, bool],
    size: int,
    waste: int,
) -> Line[Any]:
    return _tuple_new(Line, (front, top, back, head, tail, base, dead, size, waste))


def _rebuilt(line: Line[Any], size: int, leaving: Any) -> Line[Any]:
    """``line`` without ``leaving`` (None: with every entry), rebuilt from its
    live entries (no waste)."""
    front_part = [
        slot
        for slot in islice(line[0], 0, line[1])
        if type(slot) is not int and slot is not leaving
    ]
    back_part = [
        slot
        for slot in islice(line[2], line[3], line[4])
        if type(slot) is not int and slot is not leaving
    ]
    base = back_part[0].ticket if back_part else 0
    return _made(
        pvector(front_part),
        len(front_part),
        pvector(back_part),
        0,
        len(back_part),
        base,
        _NO_DEAD,
        size,
        0,
    )


_EMPTY: Final[Line[Any]] = _made(_EMPTY_VECTOR, 0, _EMPTY_VECTOR, 0, 0, 0, _NO_DEAD, 0, 0)
