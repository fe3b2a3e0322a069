"""Building frozen slotted records on hot paths.

A frozen dataclass's ``__init__`` pays an ``object.__setattr__`` per field
(about half a small record's cost). Hot paths build records with
``object.__new__`` and the slots' own setters instead; :func:`slot_setters`
hands those out for *every* field, in order, so a field added to a record fails
at import rather than leaving a builder that forgets it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any


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
