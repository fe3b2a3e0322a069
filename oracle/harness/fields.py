"""Typed reading of parsed JSON with the path of every value, for clear errors.

Scenario loaders read through a :class:`Node`; the first problem raises
:class:`FieldError` naming the JSON path (``requests[2].slices``) and the reason.
Loaders turn it into a ``Result`` at their boundary, so it never escapes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

__all__ = ["SCENARIO_FIELDS", "FieldError", "Node", "check_distinct_ids", "read_description"]


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
            path = f"{self.path}[{key}]"
            items = self.value if isinstance(self.value, list) else []
            return Node(items[key] if 0 <= key < len(items) else None, path)
        path = f"{self.path}.{key}" if self.path else key
        fields = self.value if isinstance(self.value, dict) else {}
        return Node(fields.get(key), path)

    def object(
        self, required: AbstractSet[str], optional: AbstractSet[str]
    ) -> Mapping[str, object]:
        """This value as an object with exactly the allowed keys."""
        if not isinstance(self.value, dict):
            raise self.fail("must be an object")
        for key in self.value:
            if key not in required and key not in optional:
                allowed = ", ".join(sorted(required | optional))
                raise self.child(key).fail(f"unknown field (allowed: {allowed})")
        for key in sorted(required):
            if key not in self.value:
                raise self.child(key).fail("is required")
        return self.value

    def has(self, key: str) -> bool:
        """Whether this object has ``key``."""
        return isinstance(self.value, dict) and key in self.value

    def items(self) -> Iterator[Node]:
        """The elements of this array, each with its path."""
        if not isinstance(self.value, list):
            raise self.fail("must be an array")
        return (self.child(index) for index in range(len(self.value)))

    def entries(self) -> Iterator[tuple[str, Node]]:
        """The members of this object, each with its path."""
        if not isinstance(self.value, dict):
            raise self.fail("must be an object")
        return ((key, self.child(key)) for key in self.value)

    def string(self) -> str:
        if not isinstance(self.value, str):
            raise self.fail("must be a string")
        return self.value

    def boolean(self) -> bool:
        if not isinstance(self.value, bool):
            raise self.fail("must be true or false")
        return self.value

    def integer(self, minimum: int = 0) -> int:
        """An integer >= ``minimum`` (JSON booleans are not integers here)."""
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            raise self.fail(f"must be {what}")
        if self.value < minimum:
            raise self.fail(f"must be {what}")
        return self.value

    def number(self, minimum: float = 0.0) -> float:
        """A finite number >= ``minimum``."""
        if isinstance(self.value, bool) or not isinstance(self.value, int | float):
            raise self.fail(f"must be a number >= {minimum:g}")
        try:
            number = float(self.value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            raise self.fail("must be a finite number")
        if number < minimum:
            raise self.fail(f"must be a number >= {minimum:g}")
        return number

    def identity(self) -> str | int:
        """A request id: a non-empty string or an integer."""
        if isinstance(self.value, str) and self.value:
            return self.value
        if isinstance(self.value, int) and not isinstance(self.value, bool):
            return self.value
        raise self.fail("must be a non-empty string or an integer")

    def optional(self, key: str) -> Node | None:
        """The child ``key`` when present."""
        return self.child(key) if self.has(key) else None


def check_distinct_ids(ids: list[str | int], requests: Node) -> None:
    """Refuse two requests whose ids read the same as text (``1`` and ``"1"``):
    results name requests by text, in JSON object keys and tables."""
    seen: dict[str, int] = {}
    for index, request in enumerate(ids):
        text = str(request)
        if text in seen:
            raise (
                requests.child(index)
                .child("id")
                .fail(f"duplicate request id {request!r} (requests[{seen[text]}] has the same id)")
            )
        seen[text] = index


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
