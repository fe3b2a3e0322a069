"""What mutation testing of ``policy/records.py`` found untested (docs/mutation.md).

The builders' own checks, each against the module's word: a shape has the
record's slots and nothing else; ``record_builder`` refuses a builder whose
parameters are not the fields (naming it), keeps a builder only when its probe
holds, and otherwise sets each slot (all of them, no more, no fewer);
``value_setter`` hands out the value slot's setter only when an object built
with it is what the constructor builds in type, equality, repr, hash and
unwrapped value, and None for any other layout.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import pytest
from returns.maybe import Some
from returns.result import Success

from policy.records import record_builder, shape_of, value_setter


@dataclasses.dataclass(frozen=True, slots=True)
class Pair:
    left: object
    right: object


PAIR = shape_of(Pair)


def _pair(left: object, right: object) -> Pair:
    built: Any = PAIR()
    built.left = left
    built.right = right
    built.__class__ = Pair
    made: Pair = built
    return made


def test_a_shape_has_the_records_slots_and_nothing_else() -> None:
    assert PAIR.__name__ == "PairShape"
    assert PAIR.__bases__ == (object,)
    assert PAIR.__slots__ == Pair.__slots__ == ("left", "right")  # type: ignore[attr-defined]
    assert not hasattr(PAIR(), "__dict__")
    assert {name for name in vars(PAIR) if not name.startswith("__")} == {"left", "right"}
    made = _pair(1, "two")
    assert type(made) is Pair
    assert made == Pair(1, "two")


def test_a_builder_that_holds_is_kept_and_builds_the_record() -> None:
    build = record_builder(Pair, _pair)
    assert build is _pair
    assert build(3, None) == Pair(3, None)


def test_a_builder_whose_parameters_are_not_the_fields_is_refused_by_name() -> None:
    def pair(left: object, other: object) -> Pair:
        return Pair(left, other)

    with pytest.raises(TypeError) as raised:
        record_builder(Pair, pair)
    assert str(raised.value) == "pair must take the fields ('left', 'right')"

    def short(left: object) -> Pair:
        return Pair(left, None)

    with pytest.raises(TypeError, match=r"^short must take the fields \('left', 'right'\)$"):
        record_builder(Pair, short)

    def longer(left: object, right: object, extra: object = None) -> Pair:  # noqa: ARG001
        return Pair(left, right)

    with pytest.raises(TypeError, match=r"^longer must take the fields"):
        record_builder(Pair, longer)

    # without code of its own (no __code__, no __name__): named by its repr
    partial = functools.partial(Pair)
    with pytest.raises(TypeError) as raised:
        record_builder(Pair, partial)
    assert str(raised.value) == f"{partial!r} must take the fields ('left', 'right')"


def test_the_fallback_sets_every_slot_and_takes_exactly_the_fields() -> None:
    def raises(left: object, right: object) -> Pair:  # noqa: ARG001 - never builds
        raise RuntimeError

    build = record_builder(Pair, raises)
    assert build is not raises
    made = build(1, "two")
    assert type(made) is Pair
    assert (made.left, made.right) == (1, "two")
    with pytest.raises(ValueError, match="zip"):
        build(1)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="zip"):
        build(1, 2, 3)  # type: ignore[call-arg]

    def wrong_type(left: object, right: object) -> Pair:
        made: Any = (left, right)
        return made  # type: ignore[no-any-return]

    assert record_builder(Pair, wrong_type) is not wrong_type


class Box:
    """A container laid out as ``returns`` keeps its value: one ``_inner_value`` slot."""

    __slots__ = ("_inner_value",)

    def __init__(self, value: object) -> None:
        self._inner_value = value

    def unwrap(self) -> object:
        return self._inner_value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Box) and other._inner_value == self._inner_value

    def __hash__(self) -> int:
        return hash(self._inner_value)

    def __repr__(self) -> str:
        return f"Box({self._inner_value!r})"


class AnotherType(Box):
    """Built by its constructor as a subclass: only the type differs."""

    __slots__ = ()

    def __new__(cls, value: object) -> AnotherType:  # noqa: ARG004
        return object.__new__(_Subclass)


class _Subclass(AnotherType):
    __slots__ = ()


class NeverEqual(Box):
    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = Box.__hash__


class ReprByIdentity(Box):
    __slots__ = ()

    def __repr__(self) -> str:
        return f"Box at {id(self)}"


class HashByIdentity(Box):
    __slots__ = ()

    def __hash__(self) -> int:
        return id(self)


class UnwrapsACopy(Box):
    __slots__ = ()

    def unwrap(self) -> object:
        value = self._inner_value
        return (*value,) if isinstance(value, tuple) else value  # equal, another object


class UnwrapRaises(Box):
    __slots__ = ()

    def unwrap(self) -> object:
        raise RuntimeError


class TwoValueSlots(Box):
    __slots__ = ("_inner_value",)  # a second slot of that name, on purpose


class ValueAsAClassAttribute:
    _inner_value = 3  # an int: no __set__


def test_value_setter_of_the_returns_containers_builds_what_the_constructor_builds() -> None:
    for container in (Success, Some, Box):
        set_value = value_setter(container)
        assert set_value is not None, container
        built: Any = object.__new__(container)
        set_value(built, [1])
        assert built == container([1])


@pytest.mark.parametrize(
    "container",
    [
        AnotherType,
        NeverEqual,
        ReprByIdentity,
        HashByIdentity,
        UnwrapsACopy,
        UnwrapRaises,
        TwoValueSlots,
        ValueAsAClassAttribute,
        int,
    ],
)
def test_value_setter_refuses_any_other_layout(container: type) -> None:
    assert value_setter(container) is None
