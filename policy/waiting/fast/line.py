"""A persistent sorted line: the one ordered structure of the waiting queue.

A :class:`Line` holds items in the order of their keys (unique, comparable
values the caller gives with each item: a ticket for queue order, a sort key
for key order). Every update returns a new line that shares almost all of its
structure with the old one; the old line is unchanged.

Theory of operation: one idea, a B+tree whose two end leaves are held outside it.

- A *leaf* is a pair of tuples ``(keys, items)``, at most :data:`LEAF` long.
- The *body* is a B+tree of leaves. A *branch* is ``(seps, children, size)``:
  ``children[i]`` holds the keys from ``seps[i - 1]`` (inclusive) up to
  ``seps[i]`` (exclusive), ``size`` counts the items below. An update copies
  the path from the root to one leaf (O(log n) tuples of at most
  :data:`FAN` entries); a leaf or branch that falls below a quarter full is
  merged with a neighbour when the two fit in one, so the tree stays
  shallow and its memory stays within a small factor of the items'.
- The *front* and *back* leaves live outside the body: the front holds the
  first items, the back the last. Joining at the back (a new request) and
  leaving at the front (an admission), the queue's usual work, copy one short
  leaf; the body is touched once per :data:`LEAF` such operations, when the
  back is full (its items become a leaf of the body) or the front is empty
  (the body's first leaf becomes the front). The front is never empty while
  the line is not.

Nothing is ever marked deleted: an item that leaves is gone from the new line
at once, so a line never holds anything the caller let go of, and no call
compacts or rebuilds. Worst case per call: O(log n) for one item, O(k + k /
LEAF * log n) for ``k`` items joining or leaving at an end.

>>> line = EMPTY_LINE.joined(2, "b").joined(1, "a").joined(3, "c")
>>> list(line), line.first(), line.rank(3), line.at(1)
(['a', 'b', 'c'], 'a', 2, 'b')
>>> list(line.without(2)), list(line.without_first(2)), len(line)
(['a', 'c'], ['c'], 3)
"""

# Tuples are built by concatenation, not unpacking: 0.43 µs against 0.49 µs for a
# leaf of 64 (RUF005 prefers unpacking).
# ruff: noqa: RUF005

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import Any, Final, Generic, TypeVar

__all__ = ["EMPTY_LINE", "FAN", "LEAF", "Line"]

T = TypeVar("T")

#: Most items in a leaf, and most children of a branch. At 64 a line of 100,000
#: items is two branch levels deep; measured (docs/performance.md, "The line"),
#: 32 and 128 cost more per update.
LEAF: Final = 64
FAN: Final = 64

Leaf = tuple[tuple[Any, ...], tuple[Any, ...]]
_EMPTY_LEAF: Final[Leaf] = ((), ())


# --- the body: a B+tree of leaves (depth 0 is a leaf, depth d > 0 a branch) -----------


def _size(node: Any, depth: int) -> int:
    size: int = len(node[0]) if depth == 0 else node[2]
    return size


def _last_key(node: Any, depth: int) -> Any:
    while depth:
        node = node[1][-1]
        depth -= 1
    return node[0][-1]


def _branches(
    seps: tuple[Any, ...], children: tuple[Any, ...], depth: int, size: int
) -> tuple[Any, ...]:
    """``(branch,)``, or ``(left, separator, right)`` when there are too many children
    (``size`` items in all: summed only when it splits, a chunk's pops and joins
    touch the root each time)."""
    if len(children) <= FAN:
        return ((seps, children, size),)
    half = len(children) // 2
    left, right = children[:half], children[half:]
    return (
        (seps[: half - 1], left, sum(_size(child, depth - 1) for child in left)),
        seps[half - 1],
        (seps[half:], right, sum(_size(child, depth - 1) for child in right)),
    )


def _inserted(node: Any, depth: int, key: Any, item: Any) -> tuple[Any, ...]:
    """``node`` with ``item`` at ``key``: ``(node,)`` or ``(left, separator, right)``."""
    if depth == 0:
        keys, items = node
        at = bisect_left(keys, key)
        keys = keys[:at] + (key,) + keys[at:]
        items = items[:at] + (item,) + items[at:]
        if len(keys) <= LEAF:
            return ((keys, items),)
        half = len(keys) // 2
        return ((keys[:half], items[:half]), keys[half], (keys[half:], items[half:]))
    seps, children, size = node
    at = bisect_right(seps, key)
    made = _inserted(children[at], depth - 1, key, item)
    if len(made) == 1:
        return ((seps, children[:at] + made + children[at + 1 :], size + 1),)
    left, sep, right = made
    return _branches(
        seps[:at] + (sep,) + seps[at:],
        children[:at] + (left, right) + children[at + 1 :],
        depth,
        size + 1,
    )


def _merged(
    seps: tuple[Any, ...], children: tuple[Any, ...], at: int, depth: int
) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """``children[at]``, just made smaller, merged with a neighbour when it is below a
    quarter full and the two fit in one node."""
    width = len(children[at][0]) if depth == 1 else len(children[at][1])
    if width >= (LEAF if depth == 1 else FAN) // 4 or len(children) == 1:
        return seps, children
    low = at if at + 1 < len(children) else at - 1
    a, b = children[low], children[low + 1]
    if depth == 1:
        if len(a[0]) + len(b[0]) > LEAF:
            return seps, children
        joined: Any = (a[0] + b[0], a[1] + b[1])
    else:
        if len(a[1]) + len(b[1]) > FAN:
            return seps, children
        joined = ((*a[0], seps[low], *b[0]), a[1] + b[1], a[2] + b[2])
    return seps[:low] + seps[low + 1 :], children[:low] + (joined,) + children[low + 2 :]


def _deleted(node: Any, depth: int, key: Any) -> Any:
    """``node`` without the item at ``key`` (a ``KeyError`` when it has none); None
    when nothing is left."""
    if depth == 0:
        keys, items = node
        at = bisect_left(keys, key)
        if at == len(keys) or keys[at] != key:
            raise KeyError(key)
        if len(keys) == 1:
            return None
        return (keys[:at] + keys[at + 1 :], items[:at] + items[at + 1 :])
    seps, children, size = node
    at = bisect_right(seps, key)
    child = _deleted(children[at], depth - 1, key)
    if child is None:
        if len(children) == 1:
            return None
        cut = at - 1 if at else 0
        return (seps[:cut] + seps[cut + 1 :], children[:at] + children[at + 1 :], size - 1)
    seps, children = _merged(seps, children[:at] + (child,) + children[at + 1 :], at, depth)
    return (seps, children, size - 1)


def _with_leaf(node: Any, depth: int, leaf: Leaf, sep: Any, first: bool) -> tuple[Any, ...]:
    """``node`` with a whole leaf added first or last (its keys below or above every
    key here); ``sep`` separates it from its neighbour."""
    seps, children, size = node
    if depth == 1:
        if first:
            return _branches((sep, *seps), (leaf, *children), depth, size + len(leaf[0]))
        return _branches(seps + (sep,), children + (leaf,), depth, size + len(leaf[0]))
    at = 0 if first else len(children) - 1
    made = _with_leaf(children[at], depth - 1, leaf, sep, first)
    if len(made) == 1:
        return ((seps, children[:at] + made + children[at + 1 :], size + len(leaf[0])),)
    left, middle, right = made
    return _branches(
        seps[:at] + (middle,) + seps[at:],
        children[:at] + (left, right) + children[at + 1 :],
        depth,
        size + len(leaf[0]),
    )


def _without_first_leaf(node: Any, depth: int) -> tuple[Leaf, Any]:
    """The first leaf, and ``node`` without it (None when nothing is left)."""
    seps, children, size = node
    if depth == 1:
        leaf, rest = children[0], None
    else:
        leaf, rest = _without_first_leaf(children[0], depth - 1)
    size -= len(leaf[0])
    if rest is not None:
        return leaf, (seps, (rest, *children[1:]), size)
    if len(children) == 1:
        return leaf, None
    return leaf, (seps[1:], children[1:], size)


def _leaves(node: Any, depth: int) -> Iterator[Leaf]:
    if depth == 1:
        yield from node[1]
        return
    for child in node[1]:
        yield from _leaves(child, depth - 1)


def _rank(node: Any, depth: int, key: Any) -> int:
    """How many items of ``node`` have a key below ``key``."""
    below = 0
    while depth:
        seps, children, _ = node
        at = bisect_left(seps, key)
        below += sum(_size(child, depth - 1) for child in children[:at])
        node, depth = children[at], depth - 1
    return below + bisect_left(node[0], key)


def _at(node: Any, depth: int, position: int) -> Any:
    """The item at ``position`` of ``node`` (0 to its size - 1)."""
    while depth:
        for child in node[1]:
            size = _size(child, depth - 1)
            if position < size:
                node = child
                break
            position -= size
        depth -= 1
    return node[1][position]


class Line(Generic[T]):
    """Items in the order of their keys (see the module's theory of operation).

    Built from :data:`EMPTY_LINE` by :meth:`joined` and :meth:`joined_all`; every
    method leaves this line as it is. Keys are unique; equality of two lines is
    identity (compare ``list(line)`` for their items).
    """

    # A plain slotted class with a positional constructor: a line is made per
    # update of the queue (0.2 µs; a frozen dataclass's __init__ costs 0.9 µs).
    __slots__ = ("_back", "_body", "_depth", "_front", "_size")

    def __init__(self, front: Leaf, body: Any, depth: int, back: Leaf, size: int) -> None:
        self._front = front  # the first items; empty only in an empty line
        self._body = body  # the B+tree of the leaves between, or None
        self._depth = depth  # the body's height (1: a branch of leaves)
        self._back = back  # the last items (may be empty)
        self._size = size

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def __iter__(self) -> Iterator[T]:
        if self._body is None:
            return chain(self._front[1], self._back[1])
        body = chain.from_iterable(leaf[1] for leaf in _leaves(self._body, self._depth))
        return chain(self._front[1], body, self._back[1])

    def __repr__(self) -> str:
        return f"Line({list(self)!r})"

    def first(self) -> T:
        """The first item (an ``IndexError`` for an empty line)."""
        return self._front[1][0]  # type: ignore[no-any-return]

    def last_key(self) -> Any:
        """The last key (an ``IndexError`` for an empty line)."""
        if self._back[0]:
            return self._back[0][-1]
        if self._body is not None:
            return _last_key(self._body, self._depth)
        return self._front[0][-1]

    def joined(self, key: Any, item: T) -> Line[T]:
        """This line with ``item`` at ``key`` (which must not be in the line)."""
        front, body, depth, back = self._front, self._body, self._depth, self._back
        size = self._size + 1
        if size == 1:
            return Line(((key,), (item,)), None, 0, _EMPTY_LEAF, 1)
        back_keys = back[0]
        if key > (back_keys[-1] if back_keys else self.last_key()):  # the usual: last
            keys, items = back_keys + (key,), back[1] + (item,)
            if len(keys) <= LEAF:
                return Line(front, body, depth, (keys, items), size)
            # the back is full: all but the newest item become the body's last leaf
            return self._with_last_leaf((keys[:-1], items[:-1]), (keys[-1:], items[-1:]), size)
        front_keys = front[0]
        if key < front_keys[-1]:
            at = bisect_left(front_keys, key)
            keys = front_keys[:at] + (key,) + front_keys[at:]
            items = front[1][:at] + (item,) + front[1][at:]
            if len(keys) <= LEAF:
                return Line((keys, items), body, depth, back, size)
            half = len(keys) // 2
            return self._with_first_leaf(
                (keys[:half], items[:half]), (keys[half:], items[half:]), size
            )
        if body is not None and not (back_keys and key > back_keys[0]):
            return _rooted(front, _inserted(body, depth, key, item), depth, back, size)
        at = bisect_left(back_keys, key)
        keys = back_keys[:at] + (key,) + back_keys[at:]
        items = back[1][:at] + (item,) + back[1][at:]
        if len(keys) <= LEAF:
            return Line(front, body, depth, (keys, items), size)
        half = len(keys) // 2
        return self._with_last_leaf((keys[:half], items[:half]), (keys[half:], items[half:]), size)

    def joined_all(self, keys: Sequence[Any], items: Sequence[T]) -> Line[T]:
        """This line with ``items`` last, in order: their ``keys`` rise and are above
        every key here. The line one :meth:`joined` per item gives, in one pass.

        >>> list(EMPTY_LINE.joined(0, "a").joined_all([1, 2], ["b", "c"]))
        ['a', 'b', 'c']
        """
        if not keys:
            return self
        line: Line[T] = self
        if not self._size:
            line = Line(((keys[0],), (items[0],)), None, 0, _EMPTY_LEAF, 1)
            keys, items = keys[1:], items[1:]
        back_keys = line._back[0] + tuple(keys)
        back_items = line._back[1] + tuple(items)
        size = line._size + len(keys)
        while len(back_keys) > LEAF:
            leaf = (back_keys[:LEAF], back_items[:LEAF])
            back_keys, back_items = back_keys[LEAF:], back_items[LEAF:]
            line = line._with_last_leaf(leaf, line._back, line._size)
        return Line(line._front, line._body, line._depth, (back_keys, back_items), size)

    def _with_last_leaf(self, leaf: Leaf, back: Leaf, size: int) -> Line[T]:
        if self._body is None:
            return Line(self._front, ((), (leaf,), len(leaf[0])), 1, back, size)
        made = _with_leaf(self._body, self._depth, leaf, leaf[0][0], first=False)
        return _rooted(self._front, made, self._depth, back, size)

    def _with_first_leaf(self, front: Leaf, leaf: Leaf, size: int) -> Line[T]:
        if self._body is None:
            return Line(front, ((), (leaf,), len(leaf[0])), 1, self._back, size)
        sep = _first_key_of(self._body, self._depth)
        made = _with_leaf(self._body, self._depth, leaf, sep, first=True)
        return _rooted(front, made, self._depth, self._back, size)

    def without(self, key: Any) -> Line[T]:
        """This line without the item at ``key`` (a ``KeyError`` when there is none)."""
        front, body, depth, back = self._front, self._body, self._depth, self._back
        size = self._size - 1
        front_keys = front[0]
        if front_keys and key <= front_keys[-1]:
            at = bisect_left(front_keys, key)
            if front_keys[at] != key:
                raise KeyError(key)
            if len(front_keys) > 1:
                if at == 0:  # the usual: the first item leaves
                    return Line((front_keys[1:], front[1][1:]), body, depth, back, size)
                keys = front_keys[:at] + front_keys[at + 1 :]
                return Line((keys, front[1][:at] + front[1][at + 1 :]), body, depth, back, size)
            return _refilled(body, depth, back, size)
        back_keys = back[0]
        if back_keys and key >= back_keys[0]:
            at = bisect_left(back_keys, key)
            if at == len(back_keys) or back_keys[at] != key:
                raise KeyError(key)
            keys = back_keys[:at] + back_keys[at + 1 :]
            return Line(front, body, depth, (keys, back[1][:at] + back[1][at + 1 :]), size)
        if body is None:
            raise KeyError(key)
        return _shrunk(front, _deleted(body, depth, key), depth, back, size)

    def without_first(self, count: int) -> Line[T]:
        """This line without its first ``count`` items (0 to ``len``)."""
        if not 0 <= count <= self._size:
            raise IndexError(count)
        line: Line[T] = self
        while count:
            front = line._front
            if count < len(front[0]):
                return Line(
                    (front[0][count:], front[1][count:]),
                    line._body,
                    line._depth,
                    line._back,
                    line._size - count,
                )
            count -= len(front[0])
            line = _refilled(line._body, line._depth, line._back, line._size - len(front[0]))
        return line

    def rank(self, key: Any) -> int:
        """How many items have a key below ``key``."""
        front_keys, back_keys = self._front[0], self._back[0]
        if not front_keys or key <= front_keys[-1]:
            return bisect_left(front_keys, key)
        if back_keys and key > back_keys[0]:
            return self._size - len(back_keys) + bisect_left(back_keys, key)
        below = len(front_keys)
        if self._body is not None:
            below += _rank(self._body, self._depth, key)
        return below

    def at(self, position: int) -> T:
        """The item at ``position`` (0 to ``len - 1``; an ``IndexError`` otherwise)."""
        if not 0 <= position < self._size:
            raise IndexError(position)
        front = self._front[1]
        if position < len(front):
            return front[position]  # type: ignore[no-any-return]
        back = self._back[1]
        behind = position - (self._size - len(back))
        if behind >= 0:
            return back[behind]  # type: ignore[no-any-return]
        return _at(self._body, self._depth, position - len(front))  # type: ignore[no-any-return]


def _first_key_of(node: Any, depth: int) -> Any:
    while depth:
        node = node[1][0]
        depth -= 1
    return node[0][0]


def _rooted(front: Leaf, made: tuple[Any, ...], depth: int, back: Leaf, size: int) -> Line[Any]:
    """A line whose body is ``made`` (one root, or two halves under a new root)."""
    if len(made) == 1:
        return Line(front, made[0], depth, back, size)
    left, sep, right = made
    root = ((sep,), (left, right), _size(left, depth) + _size(right, depth))
    return Line(front, root, depth + 1, back, size)


def _shrunk(front: Leaf, body: Any, depth: int, back: Leaf, size: int) -> Line[Any]:
    """A line whose body lost items: a root with one child gives way to it."""
    if body is None:
        return Line(front, None, 0, back, size)
    while depth > 1 and len(body[1]) == 1:
        body, depth = body[1][0], depth - 1
    return Line(front, body, depth, back, size)


def _refilled(body: Any, depth: int, back: Leaf, size: int) -> Line[Any]:
    """A line whose front emptied: the body's first leaf, or else the back, moves up."""
    if body is not None:
        leaf, rest = _without_first_leaf(body, depth)
        return _shrunk(leaf, rest, depth, back, size)
    return Line(back, None, 0, _EMPTY_LEAF, size)


#: The empty line.
EMPTY_LINE: Final[Line[Any]] = Line(_EMPTY_LEAF, None, 0, _EMPTY_LEAF, 0)
