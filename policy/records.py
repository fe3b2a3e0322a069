"""Building frozen slotted records on hot paths.

A frozen dataclass's ``__init__`` pays an ``object.__setattr__`` per field
(about half a small record's cost). Hot paths build records with
``object.__new__`` and the slots' own setters instead; :func:`slot_setters`
hands those out for *every* field, in order, so a field added to a record fails
at import rather than leaving a builder that forgets it.

Records a host may build by hand check their fields' types in their
constructor, each against a table of :data:`FieldRule` read by
:func:`check_fields` (:func:`wrong_field` words the ``TypeError``); the hot
paths' builders skip that check, since they build only from values already
checked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any, TypeAlias

#: A field's name, the test its value must pass, and what the test expects (in words).
FieldRule: TypeAlias = tuple[str, Callable[[object], bool], str]


def slot_setters(cls: type, names: tuple[str, ...]) -> tuple[Callable[[Any, Any], None], ...]:
    """The slot setters of every field of the frozen slotted dataclass ``cls``, in
    ``names`` order; ``names`` must be all of its fields, in order.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True, slots=True)
    ... class Pair:
    ...     left: int
    ...     right: int
    >>> set_left, set_right = slot_setters(Pair, ("left", "right"))
    >>> pair = object.__new__(Pair); set_left(pair, 1); set_right(pair, 2); pair
    Pair(left=1, right=2)
    >>> slot_setters(Pair, ("left",))
    Traceback (most recent call last):
    ...
    TypeError: Pair has the fields ('left', 'right'), not ('left',)
    """
    declared = tuple(f.name for f in fields(cls))
    if declared != names:
        raise TypeError(f"{cls.__name__} has the fields {declared}, not {names}")
    return tuple(vars(cls)[name].__set__ for name in names)


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
