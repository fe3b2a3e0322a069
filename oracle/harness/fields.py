"""Typed reading of parsed JSON with the path of every value, for clear errors.

Scenario loaders read through a :class:`Node`; the first problem raises
:class:`FieldError` naming the JSON path (``requests[2].slices``) and the reason.
Loaders turn it into a ``Result`` at their boundary, so it never escapes.

Paths are built by the library's one path rule (:func:`policy.json_text.member_path`,
:func:`~policy.json_text.element_path`: a key that is not a plain name is quoted, so
no key can forge a path or a line), and every number and count is read against a
documented limit (:mod:`oracle.harness.limits`). Every id and name, and every
member name of an object, is at most :data:`~oracle.harness.limits.NAME` characters
(:func:`check_name`): a longer one is refused at the path of the value or of the
object that holds the member, so no path and no table row grows with it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from oracle.harness.limits import INTEGER, ITEMS, NAME, SECONDS, Limit
from policy.json_text import element_path, member_path
from policy.waiting.numbers import shown

__all__ = [
    "SCENARIO_FIELDS",
    "FieldError",
    "Node",
    "check_distinct_ids",
    "check_name",
    "check_total",
    "check_work",
    "read_description",
]


class FieldError(Exception):
    """A value at ``path`` is not what the format says."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Node:
    """A parsed JSON value and where it sits in its document."""

    value: object
    path: str = ""

    def fail(self, reason: str) -> FieldError:
        """The error for this value (raise it)."""
        return FieldError(self.path, reason)

    def child(self, key: str | int) -> Node:
        """The node for ``key`` below this one (the value may be absent: ``None``)."""
        if isinstance(key, int):
            items = self.value if isinstance(self.value, list) else []
            value = items[key] if 0 <= key < len(items) else None
            return Node(value, element_path(self.path, key))
        fields = self.value if isinstance(self.value, dict) else {}
        return Node(fields.get(key), member_path(self.path, key))

    def object(
        self, required: AbstractSet[str], optional: AbstractSet[str]
    ) -> Mapping[str, object]:
        """This value as an object with exactly the allowed keys."""
        if not isinstance(self.value, dict):
            raise self.fail("must be an object")
        for key in self.value:
            if key not in required and key not in optional:
                check_name(self, key, member=True)
                allowed = ", ".join(sorted(required | optional))
                raise self.child(key).fail(f"unknown field (allowed: {allowed})")
        for key in sorted(required):
            if key not in self.value:
                raise self.child(key).fail("is required")
        return self.value

    def has(self, key: str) -> bool:
        """Whether this object has ``key``."""
        return isinstance(self.value, dict) and key in self.value

    def items(self, limit: Limit[int] = ITEMS) -> Iterator[Node]:
        """The elements of this array, each with its path; at most ``limit`` of them."""
        if not isinstance(self.value, list):
            raise self.fail("must be an array")
        self._count(limit)
        return (self.child(index) for index in range(len(self.value)))

    def entries(self, limit: Limit[int] = ITEMS) -> Iterator[tuple[str, Node]]:
        """The members of this object, each with its path; at most ``limit`` of them."""
        if not isinstance(self.value, dict):
            raise self.fail("must be an object")
        self._count(limit)
        for key in self.value:
            check_name(self, key, member=True)
        return ((key, self.child(key)) for key in self.value)

    def _count(self, limit: Limit[int]) -> None:
        count = len(self.value) if isinstance(self.value, list | dict) else 0
        if count > limit.value:
            raise self.fail(f"holds {count} elements, {limit.beyond()}")

    def string(self) -> str:
        if not isinstance(self.value, str):
            raise self.fail("must be a string")
        return self.value

    def name(self) -> str:
        """A name given as text (a scenario's name, a lane, a stage): a string of at
        most :data:`~oracle.harness.limits.NAME` characters."""
        return check_name(self, self.string())

    def boolean(self) -> bool:
        if not isinstance(self.value, bool):
            raise self.fail("must be true or false")
        return self.value

    def integer(self, minimum: int | None = 0, limit: Limit[int] = INTEGER) -> int:
        """An integer >= ``minimum`` (``None``: of any sign) and at most ``limit`` in
        magnitude (JSON booleans are not integers here)."""
        if minimum is None:
            what = "an integer"
        else:
            what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        value = self.value
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"must be {what}")
        if minimum is not None and value < minimum:
            raise self.fail(f"must be {what}")
        if abs(value) > limit.value:
            raise self.fail(f"{shown(value)} is {limit.beyond()}")
        return value

    def number(self, minimum: float | None = 0.0, limit: Limit[float] = SECONDS) -> float:
        """A finite number >= ``minimum`` (``None``: of any sign) and at most ``limit``
        in magnitude, as a float.

        An integer is accepted only when a float equals it exactly (``2**53 + 1`` is
        not), so what the engines compute with is what the file says. The checks
        compare the JSON value itself (Python compares ints and floats exactly), so
        no conversion can overflow before a limit refuses it.
        """
        what = "a number" if minimum is None else f"a number >= {minimum:g}"
        value = self.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(f"must be {what}")
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail("must be a finite number")
        if minimum is not None and value < minimum:
            raise self.fail(f"must be {what}")
        if abs(value) > limit.value:
            raise self.fail(f"{shown(value)} is {limit.beyond()}")
        number = float(value)
        if number != value:
            raise self.fail(
                f"{shown(value)} is not exactly a float (the nearest is {number!r}):"
                " give a float, or an integer a float equals"
            )
        return number

    def identity(self) -> str | int:
        """A request id: a non-empty string or an integer within the integer limit."""
        if isinstance(self.value, str) and self.value:
            return check_name(self, self.value)
        if isinstance(self.value, int) and not isinstance(self.value, bool):
            return self.integer(None)
        raise self.fail("must be a non-empty string or an integer")

    def optional(self, key: str) -> Node | None:
        """The child ``key`` when present."""
        return self.child(key) if self.has(key) else None


def check_name(node: Node, text: str, *, member: bool = False) -> str:
    """``text``, an id or a name given at ``node`` (with ``member``: the name of a
    member of the object at ``node``), refused when longer than the name limit.

    >>> check_name(Node("A", "requests[0].id"), "A")
    'A'
    >>> try:
    ...     check_name(Node({}, "requests[0].attrs"), "x" * 201, member=True)
    ... except FieldError as error:
    ...     print(error.path, "is 201 characters long, beyond the limit of 200" in error.reason)
    requests[0].attrs True
    """
    if len(text) > NAME.value:
        what = f"a member name {shown(text)}" if member else shown(text)
        raise node.fail(f"{what} is {len(text)} characters long, {NAME.beyond()}")
    return text


def check_distinct_ids(ids: list[str | int], requests: Node) -> None:
    """Refuse two requests whose ids read the same as text (``1`` and ``"1"``):
    results name requests by text, in JSON object keys and tables."""
    seen: dict[str, int] = {}
    for index, request in enumerate(ids):
        text = str(request)
        if text in seen:
            first = requests.child(seen[text]).path
            raise (
                requests.child(index)
                .child("id")
                .fail(f"duplicate request id {shown(request)} ({first} has the same id)")
            )
        seen[text] = index


def check_total(amounts: Iterable[tuple[Node, int]], limit: Limit[int]) -> int:
    """The sum of ``amounts``, each with the node it comes from; refused at the first
    node that brings it beyond ``limit`` (a bound on the work a file implies)."""
    total = 0
    for node, amount in amounts:
        total += amount
        if total > limit.value:
            raise node.fail(
                f"brings {limit.applies_to} to {total}, beyond its limit of {limit.text}"
                f" ({limit.why})"
            )
    return total


def check_work(node: Node, work: int, product: str, limit: Limit[int]) -> None:
    """Refuse at ``node`` a ``work`` bound (the ``product`` of its factors, as
    text) beyond ``limit``: the work bounds of a file as a whole.

    >>> bound = Limit("a bound", 6, "6", "why")
    >>> check_work(Node({}, "policy"), 6, "2 x 3", bound)
    >>> check_work(Node({}, "policy"), 7, "7 x 1", bound)
    Traceback (most recent call last):
    oracle.harness.fields.FieldError: policy: gives a bound 7 (7 x 1), beyond its limit of 6 (why)
    """
    if work > limit.value:
        raise node.fail(
            f"gives {limit.applies_to} {work} ({product}), beyond its limit of {limit.text}"
            f" ({limit.why})"
        )


#: Fields every scenario file may have, whatever its kind.
SCENARIO_FIELDS = frozenset({"kind", "name", "description", "derivation", "expect"})


def read_description(doc: Node) -> str:
    """A scenario's description ("" when absent), checking its derivation lines."""
    derivation = doc.optional("derivation")
    if derivation is not None:
        for line in derivation.items():
            line.string()
    node = doc.optional("description")
    return "" if node is None else node.string()
