"""A persistent sorted map with positions: the waiting queue's ordered indexes.

Theory of operation. A B+tree whose nodes are plain tuples, never changed once
built: an update copies the nodes on one root-to-leaf path (at most ``FANOUT``
slots each) and shares every other node with the version it came from. So
``insert``, ``remove``, ``first``, ``rank`` and ``get`` are O(log n), and
iteration in key order is O(n).

- A leaf is ``(keys, values)``: two tuples of at most ``FANOUT`` items, keys
  ascending.
- An inner node is ``(separators, slots)``, ``slots`` being ``(child 0, size 0,
  child 1, size 1, ...)`` in one tuple (one copy per update, not two): every
  key under child ``i`` is at most ``separators[i]`` and above
  ``separators[i - 1]``, and size ``i`` is how many keys it holds, so a key's
  position (its rank) is the sum of the sizes to its left on the path. A
  separator is an upper bound, not necessarily the largest key: an insert
  never moves one (a key routed to a child is at most its separator, except
  past the last, which routes to the last child, whose separator is therefore
  reset when it splits), and a removal leaves it standing, so an update copies
  only the slots on its path; separators change only when nodes split or are
  dropped.

A map whose height exceeds what its size needs by more than one level (nodes
are never merged) is rebuilt full when a removal finds it so, in O(n), which
the Omega(n) removals that thinned it pay for: the height stays within two
levels of log base ``FANOUT`` of the size, so every operation stays O(log n)
amortized.

A full leaf splits in two halves, except when the new key went to one of its
ends (the queue's appends and requeues): then it splits into the full leaf and
a new one, so keys that arrive in order, or in reverse order, fill every leaf.
An emptied node is dropped.

Keys must be totally ordered by ``<`` and never equal to one another in a map
(the queue's keys end in a unique ticket).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from typing import Any, Final, Generic, TypeAlias, TypeVar

#: Most keys in a leaf, and most children of an inner node.
FANOUT: Final = 64

K = TypeVar("K")
V = TypeVar("V")

# Nodes are tuples for speed; their shape is given by the height above.
_Node: TypeAlias = tuple[Any, ...]


def _largest(node: _Node, height: int) -> Any:
    """The largest key under ``node`` (its rightmost leaf's last key)."""
    while height:
        node, height = node[1][-2], height - 1
    return node[0][-1]


def _route(separators: tuple[Any, ...], key: Any) -> int:
    """The child of an inner node where ``key`` belongs (the last one past every separator)."""
    at = bisect_left(separators, key)
    return at if at < len(separators) else at - 1


def _count(node: _Node, height: int) -> int:
    return len(node[0]) if height == 0 else sum(node[1][1::2])


def _insert(node: _Node, height: int, key: Any, value: Any) -> tuple[_Node, ...]:
    """``node`` with ``key`` added: one node, or two when it had to split."""
    if height == 0:
        keys, values = node
        at = bisect_right(keys, key)
        if at == len(keys):
            keys, values = (*keys, key), (*values, value)
        else:
            keys = (*keys[:at], key, *keys[at:])
            values = (*values[:at], value, *values[at:])
        if len(keys) <= FANOUT:
            return ((keys, values),)
        # at an end (appends, requeues), the full leaf stays full and a new one starts
        cut = FANOUT if at == FANOUT else 1 if at == 0 else len(keys) // 2
        return ((keys[:cut], values[:cut]), (keys[cut:], values[cut:]))
    separators, slots = node
    at = _route(separators, key)
    parts = _insert(slots[2 * at], height - 1, key, value)
    if len(parts) == 1:  # the separators stand: see the module's theory of operation
        copy = list(slots)
        copy[2 * at] = parts[0]
        copy[2 * at + 1] += 1
        return ((separators, tuple(copy)),)
    left, right = parts
    # the last child may hold keys past its separator (nothing routes past it)
    bound = separators[at] if at + 1 < len(separators) else _largest(right, height - 1)
    separators = (*separators[:at], _largest(left, height - 1), bound, *separators[at + 1 :])
    slots = (
        *slots[: 2 * at],
        left,
        _count(left, height - 1),
        right,
        _count(right, height - 1),
        *slots[2 * at + 2 :],
    )
    if len(separators) <= FANOUT:
        return ((separators, slots),)
    cut = FANOUT if at + 1 == FANOUT else len(separators) // 2
    return ((separators[:cut], slots[: 2 * cut]), (separators[cut:], slots[2 * cut :]))


def _remove(node: _Node, height: int, key: Any) -> _Node | None:
    """``node`` without ``key`` (which it holds), or None once it is empty."""
    if height == 0:
        keys, values = node
        at = bisect_left(keys, key)
        if at == len(keys) or keys[at] != key:
            raise KeyError(key)
        if len(keys) == 1:
            return None
        if at == 0:  # the front: an admission under FIFO
            return (keys[1:], values[1:])
        return (keys[:at] + keys[at + 1 :], values[:at] + values[at + 1 :])
    separators, slots = node
    at = _route(separators, key)
    child = _remove(slots[2 * at], height - 1, key)
    if child is None:
        if len(separators) == 1:
            return None
        return (separators[:at] + separators[at + 1 :], slots[: 2 * at] + slots[2 * at + 2 :])
    copy = list(slots)
    copy[2 * at] = child
    copy[2 * at + 1] -= 1
    return (separators, tuple(copy))


def _leaves(node: _Node, height: int) -> Iterator[_Node]:
    if height == 0:
        yield node
        return
    for child in node[1][::2]:
        yield from _leaves(child, height - 1)


_EMPTY_LEAF: Final[_Node] = ((), ())


class OrderedMap(Generic[K, V]):
    """An immutable map kept in key order; every update returns a new map.

    >>> m = OrderedMap().insert(3, "c").insert(1, "a").insert(2, "b")
    >>> list(m.items()), m.rank(3), m.first(), len(m.remove(1))
    ([(1, 'a'), (2, 'b'), (3, 'c')], 2, (1, 'a'), 2)
    """

    __slots__ = ("_height", "_root", "_size")

    _root: _Node
    _height: int
    _size: int

    def __init__(self) -> None:
        object.__setattr__(self, "_root", _EMPTY_LEAF)
        object.__setattr__(self, "_height", 0)
        object.__setattr__(self, "_size", 0)

    @staticmethod
    def _made(root: _Node, height: int, size: int) -> OrderedMap[Any, Any]:
        made: OrderedMap[Any, Any] = object.__new__(OrderedMap)
        _set_root(made, root)
        _set_height(made, height)
        _set_size(made, size)
        return made

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("OrderedMap is immutable")

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def __repr__(self) -> str:
        return f"OrderedMap({list(self.items())!r})"

    def insert(self, key: K, value: V) -> OrderedMap[K, V]:
        """This map with ``key`` (not yet in it) mapped to ``value``."""
        parts = _insert(self._root, self._height, key, value)
        if len(parts) == 1:
            return OrderedMap._made(parts[0], self._height, self._size + 1)
        left, right = parts
        height = self._height
        root = (
            (_largest(left, height), _largest(right, height)),
            (left, _count(left, height), right, _count(right, height)),
        )
        return OrderedMap._made(root, self._height + 1, self._size + 1)

    def remove(self, key: K) -> OrderedMap[K, V]:
        """This map without ``key``, which must be in it (see :meth:`get`)."""
        root = _remove(self._root, self._height, key)
        if root is None:
            return OrderedMap()
        height, size = self._height, self._size - 1
        while height > 0 and len(root[0]) == 1:  # a root with one child is that child
            root, height = root[1][0], height - 1
        if height > 1 and size < FANOUT ** (height - 1):
            # far taller than its size needs (nodes are never merged): rebuilt
            # full, in O(n), after the Omega(n) removals that thinned it
            return _built(self._items_of(root, height), size)
        return OrderedMap._made(root, height, size)

    @staticmethod
    def _items_of(root: _Node, height: int) -> list[tuple[Any, Any]]:
        return [
            pair
            for keys, values in _leaves(root, height)
            for pair in zip(keys, values, strict=True)
        ]

    def _leaf_of(self, key: K) -> tuple[_Node, int]:
        node, height = self._root, self._height
        while height:
            node, height = node[1][2 * _route(node[0], key)], height - 1
        return node, bisect_left(node[0], key)

    def get(self, key: K, default: V | None = None) -> V | None:
        """The value of ``key``, or ``default`` when the map lacks it."""
        leaf, at = self._leaf_of(key)
        keys = leaf[0]
        if at < len(keys) and keys[at] == key:
            value: V = leaf[1][at]
            return value
        return default

    def __contains__(self, key: object) -> bool:
        leaf, at = self._leaf_of(key)  # type: ignore[arg-type]
        keys = leaf[0]
        return at < len(keys) and bool(keys[at] == key)

    def first(self) -> tuple[K, V]:
        """The smallest key and its value; the map must not be empty."""
        node, height = self._root, self._height
        while height:
            node, height = node[1][0], height - 1
        return node[0][0], node[1][0]

    def last(self) -> tuple[K, V]:
        """The largest key and its value; the map must not be empty."""
        node, height = self._root, self._height
        while height:
            node, height = node[1][-2], height - 1
        return node[0][-1], node[1][-1]

    def rank(self, key: K) -> int:
        """How many keys are smaller than ``key``."""
        node, height, before = self._root, self._height, 0
        while height:
            at = _route(node[0], key)
            before += sum(node[1][1 : 2 * at : 2])
            node, height = node[1][2 * at], height - 1
        return before + bisect_left(node[0], key)

    def at(self, position: int) -> tuple[K, V]:
        """The key and value at ``position`` (0 is the smallest); it must exist."""
        if not 0 <= position < self._size:
            raise IndexError(position)
        node, height = self._root, self._height
        while height:
            slots = node[1]
            for child, size in zip(slots[::2], slots[1::2], strict=True):
                if position < size:
                    node = child
                    break
                position -= size
            height -= 1
        return node[0][position], node[1][position]

    def items(self) -> Iterator[tuple[K, V]]:
        """Every key and value, in key order."""
        for keys, values in _leaves(self._root, self._height):
            yield from zip(keys, values, strict=True)

    def values(self) -> Iterator[V]:
        """Every value, in key order."""
        for leaf in _leaves(self._root, self._height):
            yield from leaf[1]

    def keys(self) -> Iterator[K]:
        """Every key, in order."""
        for leaf in _leaves(self._root, self._height):
            yield from leaf[0]


def _built(items: list[tuple[Any, Any]], size: int) -> OrderedMap[Any, Any]:
    """A map of ``items`` (in key order) with full nodes."""
    if not items:
        return OrderedMap()
    level: list[_Node] = [
        (tuple(k for k, _ in items[at : at + FANOUT]), tuple(v for _, v in items[at : at + FANOUT]))
        for at in range(0, len(items), FANOUT)
    ]
    height = 0
    while len(level) > 1:
        grouped: list[_Node] = []
        for at in range(0, len(level), FANOUT):
            children = level[at : at + FANOUT]
            separators = tuple(_largest(child, height) for child in children)
            slots = tuple(part for child in children for part in (child, _count(child, height)))
            grouped.append((separators, slots))
        level, height = grouped, height + 1
    return OrderedMap._made(level[0], height, size)


# The slot descriptors: the constructor sets a new map's slots through them.
_set_root, _set_height, _set_size = (
    getattr(OrderedMap, name).__set__ for name in ("_root", "_height", "_size")
)
