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

The fastest builders (:func:`record_builder`) store the fields in a *shape*
(:func:`shape_of`): a plain class with the record's slots and nothing else, so
that each store is a plain attribute store (which CPython specializes for
slots), and then make the object a record (``__class__`` assignment, which
CPython allows between classes of the same slot layout). That costs less than
half of the slot setters. Each such builder is checked once, at import; where
the check fails, the slot setters build the record instead.

The containers of ``returns`` (``Success``, ``Some``) keep their value in one
slot; :func:`value_setter` hands out its setter, for building them as records
are built (``object.__new__`` and the setter: about a third of the constructor,
which runs two Python ``__init__`` methods), checked once against the
constructor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any, ParamSpec, TypeAlias, TypeVar, cast

_Fields = ParamSpec("_Fields")
_Record = TypeVar("_Record")

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


def shape_of(cls: type) -> type:
    """A plain class with the slots of the slotted class ``cls`` and no methods: an
    object of it can be filled with plain attribute stores, then become a ``cls``
    (``obj.__class__ = cls``; see :func:`record_builder`)."""
    return type(f"{cls.__name__}Shape", (), {"__slots__": vars(cls)["__slots__"]})


def record_builder(
    cls: type[_Record], build: Callable[_Fields, _Record]
) -> Callable[_Fields, _Record]:
    """``build`` itself when it builds ``cls`` records from their fields (checked
    here, once), else a builder that sets each slot (:func:`slot_setters`).

    ``build`` takes every field of ``cls``, in order, by position (its parameters
    must be named as the fields: a ``TypeError`` at import otherwise), and builds
    the record in a :func:`shape_of` ``cls``. Whether it gives a ``cls`` holding
    exactly the values given, each in its own field, is tried on a probe;
    anything unexpected (another interpreter, another layout) keeps the setters.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True, slots=True)
    ... class Pair:
    ...     left: int
    ...     right: int
    >>> PAIR = shape_of(Pair)
    >>> def pair(left: int, right: int) -> Pair:
    ...     built: Any = PAIR()
    ...     built.left = left
    ...     built.right = right
    ...     built.__class__ = Pair
    ...     return built
    >>> build = record_builder(Pair, pair)
    >>> build is pair, build(1, 2), type(build(1, 2)) is Pair
    (True, Pair(left=1, right=2), True)
    """
    names = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]
    setters = slot_setters(cls, names)
    # a builder wrapped by functools.wraps (a mutation-testing trampoline) names its
    # parameters through __wrapped__
    code: Any = getattr(getattr(build, "__wrapped__", build), "__code__", None)
    if code is None or code.co_varnames[: code.co_argcount] != names:
        raise TypeError(f"{getattr(build, '__name__', build)} must take the fields {names}")
    new = object.__new__

    def set_slots(*values: Any) -> Any:  # the slot setters, field by field
        record = new(cls)
        for set_field, value in zip(setters, values, strict=True):
            set_field(record, value)
        return record

    markers = [object() for _ in names]  # a distinct value per field: each lands in its own
    make: Callable[..., object] = build
    try:
        probe = make(*markers)
        holds = type(probe) is cls and all(
            getattr(probe, name) is marker for name, marker in zip(names, markers, strict=True)
        )
    except Exception:  # a shape cannot become a record here: keep the setters
        holds = False
    return build if holds else cast(Callable[_Fields, _Record], set_slots)


def value_setter(container: type) -> Callable[[Any, Any], None] | None:
    """The setter of the one slot in which ``container`` (a ``returns`` container such
    as ``Success`` or ``Some``) keeps its value, when ``object.__new__(container)``
    with that setter builds what ``container(value)`` builds (checked here, once, on
    a probe); None for any other layout (build with the constructor then).

    >>> from returns.result import Success
    >>> set_value = value_setter(Success)
    >>> built = object.__new__(Success); set_value(built, 3); built == Success(3)
    True
    >>> value_setter(int) is None
    True
    """
    slots = [vars(k)["_inner_value"] for k in container.__mro__ if "_inner_value" in vars(k)]
    if len(slots) != 1 or not hasattr(slots[0], "__set__"):
        return None
    set_value: Callable[[Any, Any], None] = slots[0].__set__
    probe = ("probe", 1)  # hashable, with a repr
    try:
        built: Any = object.__new__(container)
        set_value(built, probe)
        made: Any = container(probe)
        unwrapped = built.unwrap()
        same = (
            type(built) is type(made) is container
            and built == made
            and repr(built) == repr(made)
            and hash(built) == hash(made)
            and unwrapped is probe
        )
    except Exception:  # another layout of the container: keep the constructor
        return None
    return set_value if same else None
