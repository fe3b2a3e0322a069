"""Checking the fields of frozen records built by hand.

Records a host may build by hand check their fields' types in their
constructor, each against a table of :data:`FieldRule` read by
:func:`check_fields` (:func:`wrong_field` words the ``TypeError``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

__all__ = ["FieldRule", "check_fields", "instance_of", "wrong_field"]

#: A field's name, the test its value must pass, and what the test expects (in words).
FieldRule: TypeAlias = tuple[str, Callable[[object], bool], str]


def wrong_field(record: str, field: str, expected: str, value: object) -> TypeError:
    """The ``TypeError`` for a record field of the wrong type.

    >>> str(wrong_field("BacklogEntry", "lane", "a Lane", "high"))
    'BacklogEntry.lane must be a Lane, not str'
    """
    return TypeError(f"{record}.{field} must be {expected}, not {type(value).__name__}")


def instance_of(*types: type) -> Callable[[object], bool]:
    """The field test "an instance of one of ``types``" (``type(None)`` for optional).

    >>> instance_of(int, type(None))(None), instance_of(int)("3")
    (True, False)
    """
    return lambda value: isinstance(value, types)


def check_fields(record: object, rules: tuple[FieldRule, ...]) -> None:
    """Raise :func:`wrong_field`'s ``TypeError`` for the first field of ``record``
    whose value fails its rule (a constructor's ``__post_init__`` calls this).

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Job:
    ...     slices: object
    ...     def __post_init__(self) -> None:
    ...         check_fields(self, (("slices", instance_of(int), "an int"),))
    >>> Job("3")
    Traceback (most recent call last):
    ...
    TypeError: Job.slices must be an int, not str
    """
    for name, holds, expected in rules:
        value = getattr(record, name)
        if not holds(value):
            raise wrong_field(type(record).__name__, name, expected, value)
