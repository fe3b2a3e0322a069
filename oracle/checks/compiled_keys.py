"""Exhaustive bounded check of compiled keys: every small tree, compiled against ``evaluate``.

:func:`check_compiled` compiles every tree of the grammar below, up to
``max_size`` nodes, with ``compiler`` (by default
:func:`policy.waiting.fast.compiled.compile_expression`) and calls the compiled
function at every point of the tree's domain. Each value must be the same
IEEE value as ``policy.waiting.evaluate`` gives in the matching ``Scope``
(:func:`same_value`: a float, NaN equals NaN, -0.0 differs from 0.0); a
compiler or a compiled function that raises, or returns anything but a float,
disagrees too. It needs only the standard library and ``policy``.

**Trees** (every node kind of the language). Leaves: the literals ``0`` and
``1``, ``true``, the attributes ``a`` and ``b``, the constant ``k`` (= -0.0,
inlined by the compiler), ``serial``, ``now``, ``waited``,
``budget_left(engine)``, an attribute ``u`` missing from the attribute order
and a constant ``z`` missing from the constants (both read NaN): 12 leaves.
Operators: prefix ``-`` and ``!``; ``+ - * / < <= > >= == != && ||``;
``c ? x : y``; ``min`` and ``max`` of one and of two arguments. A tree's size is
its number of nodes: 12 trees of 1 node, 48 of 2, 2,208 of 3 and 26,688 of 4
(29,956 trees within the default bound ``max_size=4``; 5 nodes would add
901,632).

**Points.** Every variable the tree reads takes every value of its domain,
independently:

- ``a``, ``b``, ``now``, ``waited``: NaN, -inf, -1.0, -0.0, 0.0, 1.0, +inf,
  True, False (9 values; attribute values are floats or booleans);
- ``serial``: the same 9, and 3, 10**400 and -10**400 (read as ±inf);
- ``budget_left(engine)``: absent (NaN), or NaN, -inf, -1.0, -0.0, 0.0, 1.0, +inf
  (8; the moment holds floats).

A variable the tree does not read holds a value of its own that no other
variable holds (2, 3, 5, 7, 11 and 13), so a compiler that reads the wrong one
is caught. A tree reading three variables has up to 9 x 9 x 12 points. The
default bound makes 776,810 evaluations (each by ``evaluate`` and by the
compiled function) and 29,956 compilations: about 11 s on a loaded 2-core
machine; ``max_size=3`` (2,268 trees) takes under 1 s.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from math import copysign, isnan
from typing import Any, Final, TypeAlias

from policy.waiting import (
    Attr,
    Binary,
    Bool,
    BudgetLeft,
    Call,
    Cond,
    Const,
    Expr,
    Num,
    Scope,
    Unary,
    Var,
    evaluate,
    unparse,
)
from policy.waiting.expr import walk
from policy.waiting.fast.compiled import ExpressionFunction, compile_expression

__all__ = [
    "ATTRIBUTE_ORDER",
    "CONSTANTS",
    "DOMAINS",
    "LEAVES",
    "CompiledMismatch",
    "Compiler",
    "check_compiled",
    "same_value",
    "trees",
]

#: ``compiler(expr, constants, attribute_order)`` -> a compiled expression.
Compiler: TypeAlias = Callable[[Expr, Mapping[str, float], Sequence[str]], ExpressionFunction]

STAGE = "engine"
ATTRIBUTE_ORDER: tuple[str, ...] = ("a", "b")
CONSTANTS: Mapping[str, float] = {"k": -0.0}

LEAVES: tuple[Expr, ...] = (
    Num(0.0),
    Num(1.0),
    Bool(True),
    Attr("a"),
    Attr("b"),
    Const("k"),
    Var("serial"),
    Var("now"),
    Var("waited"),
    BudgetLeft(STAGE),
    Attr("u"),  # not in the attribute order: NaN
    Const("z"),  # not in the constants: NaN
)
_BINARY = ("+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!=", "&&", "||")
_ONE_CHILD = ("-x", "!x", "min(x)", "max(x)")
_TWO_CHILDREN = (*_BINARY, "min(x, y)", "max(x, y)")

_VALUES: tuple[float | bool, ...] = (
    math.nan,
    -math.inf,
    -1.0,
    -0.0,
    0.0,
    1.0,
    math.inf,
    True,
    False,
)
#: The marker of ``budget_left(engine)`` absent from the moment.
ABSENT = "absent"

#: variable -> every value it takes when a tree reads it.
DOMAINS: Mapping[str, tuple[object, ...]] = {
    "a": _VALUES,
    "b": _VALUES,
    "now": _VALUES,
    "waited": _VALUES,
    "serial": (*_VALUES, 3, 10**400, -(10**400)),
    STAGE: (ABSENT, *(value for value in _VALUES if not isinstance(value, bool))),
}
#: variable -> its value when the tree does not read it (distinct from every other).
_UNREAD: Mapping[str, object] = {
    "a": 2.0,
    "b": 3.0,
    "serial": 5,
    "now": 7.0,
    "waited": 11.0,
    STAGE: 13.0,
}


def same_value(expected: float, got: object) -> bool:
    """The same IEEE value: ``got`` is a float, NaN equals NaN, -0.0 differs from 0.0.

    >>> same_value(math.nan, -math.nan), same_value(0.0, -0.0), same_value(1.0, True)
    (True, False, False)
    """
    if type(got) is not float:
        return False
    if math.isnan(expected) or math.isnan(got):
        return math.isnan(expected) and math.isnan(got)
    return expected == got and math.copysign(1.0, expected) == math.copysign(1.0, got)


# ----------------------------------------------------------------------------- the trees

_MEMO: dict[int, tuple[Expr, ...]] = {1: LEAVES}


def trees(size: int) -> tuple[Expr, ...]:
    """Every tree of exactly ``size`` nodes, in a fixed order (memoized).

    >>> [len(trees(n)) for n in (1, 2, 3, 4)]
    [12, 48, 2208, 26688]
    """
    if size < 1:
        return ()
    found = _MEMO.get(size)
    if found is None:
        found = tuple(_trees(size))
        _MEMO[size] = found
    return found


def _one(form: str, child: Expr) -> Expr:
    if form in ("-x", "!x"):
        return Unary("-" if form == "-x" else "!", child)
    return Call("min" if form == "min(x)" else "max", (child,))


def _two(form: str, left: Expr, right: Expr) -> Expr:
    if form == "min(x, y)":
        return Call("min", (left, right))
    if form == "max(x, y)":
        return Call("max", (left, right))
    return Binary(form, left, right)  # type: ignore[arg-type]


def _trees(size: int) -> Iterator[Expr]:
    for form in _ONE_CHILD:
        for child in trees(size - 1):
            yield _one(form, child)
    for form in _TWO_CHILDREN:
        for left_size in range(1, size - 1):
            for left in trees(left_size):
                for right in trees(size - 1 - left_size):
                    yield _two(form, left, right)
    for test_size in range(1, size - 2):
        for then_size in range(1, size - 1 - test_size):
            for test in trees(test_size):
                for then in trees(then_size):
                    for otherwise in trees(size - 1 - test_size - then_size):
                        yield Cond(test, then, otherwise)


# ----------------------------------------------------------------------------- the points


@dataclass(frozen=True, slots=True)
class _Point:
    inputs: tuple[tuple[str, object], ...]  # the variables the tree reads, and their values
    scope: Scope
    values: tuple[float | bool, ...]
    serial: object
    now: float
    waited: float
    budget_left: Mapping[str, float]


def _variables(tree: Expr) -> frozenset[str]:
    read = set()
    for node in walk(tree):
        match node:
            case Attr(name) if name in ATTRIBUTE_ORDER:
                read.add(name)
            case Var(name):
                read.add(name)
            case BudgetLeft(_):
                read.add(STAGE)
            case _:
                pass
    return frozenset(read)


_POINTS: dict[frozenset[str], tuple[_Point, ...]] = {}


def _points(read: frozenset[str]) -> tuple[_Point, ...]:
    """Every point over the variables ``read`` (the others at their own values)."""
    found = _POINTS.get(read)
    if found is not None:
        return found
    names = sorted(read)
    made = []
    for chosen in itertools.product(*(DOMAINS[name] for name in names)):
        given: dict[str, Any] = {**_UNREAD, **dict(zip(names, chosen, strict=True))}
        values: tuple[float | bool, ...] = (given["a"], given["b"])
        budget: dict[str, float] = {} if given[STAGE] == ABSENT else {STAGE: given[STAGE]}
        now, waited, serial = given["now"], given["waited"], given["serial"]
        attributes = dict(zip(ATTRIBUTE_ORDER, values, strict=True))
        scope = Scope(attributes, serial, now, waited, budget, CONSTANTS)
        inputs = tuple(zip(names, chosen, strict=True))
        made.append(_Point(inputs, scope, values, serial, now, waited, budget))
    _POINTS[read] = tuple(made)
    return _POINTS[read]


# ----------------------------------------------------------------------------- the check


def _shown(value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**20:
        return f"{'-' if value < 0 else ''}10**{len(str(abs(value))) - 1}"
    return repr(value)


@dataclass(frozen=True, slots=True)
class CompiledMismatch:
    """A tree and a point at which the compiled function disagrees with ``evaluate``
    (``got`` is its value, or what it or the compiler raised)."""

    tree: Expr
    inputs: tuple[tuple[str, object], ...]
    expected: float
    got: object

    def __str__(self) -> str:
        inputs = ", ".join(f"{name} = {_shown(value)}" for name, value in self.inputs)
        where = f"at {inputs}" if inputs else "reading no input"
        return f"`{unparse(self.tree)}` {where}: evaluate {self.expected!r}, compiled {self.got!r}"


def check_compiled(
    compiler: Compiler = compile_expression, *, max_size: int = 4, limit: int = 20
) -> list[CompiledMismatch]:
    """Every tree of 1..``max_size`` nodes at every point of its domain (see the module
    docstring): the disagreements of ``compiler`` with ``evaluate``, at most one per
    tree, smallest trees first, stopping after ``limit`` of them. Empty when it agrees.

    >>> check_compiled(max_size=2)
    []
    >>> wrong = lambda expr, constants, order: lambda *args: 0.0
    >>> str(check_compiled(wrong, max_size=1, limit=1)[0])
    '`1` reading no input: evaluate 1.0, compiled 0.0'
    """
    found: list[CompiledMismatch] = []
    for size in range(1, max_size + 1):
        for tree in trees(size):
            mismatch = _disagreement(compiler, tree)
            if mismatch is not None:
                found.append(mismatch)
                if len(found) >= limit:
                    return found
    return found


def _disagreement(compiler: Compiler, tree: Expr) -> CompiledMismatch | None:
    points = _points(_variables(tree))
    try:
        compiled = compiler(tree, CONSTANTS, ATTRIBUTE_ORDER)
    except Exception as error:  # a compiler that raises disagrees
        point = points[0]
        expected = evaluate(tree, point.scope)
        return CompiledMismatch(tree, point.inputs, expected, f"raised {error!r}")
    for point in points:
        expected = evaluate(tree, point.scope)
        try:
            got: object = compiled(
                point.values, point.serial, point.now, point.waited, point.budget_left
            )
        except Exception as error:
            got = f"raised {error!r}"
        # same_value, inline (this loop runs about a million times)
        if type(got) is float and (
            (got == expected and (got or copysign(1.0, got) == copysign(1.0, expected)))
            or (isnan(got) and isnan(expected))
        ):
            continue
        return CompiledMismatch(tree, point.inputs, expected, got)
    return None


#: The enumerated grammar and domain, as ``policy-kernel verify`` states its bounds.
GRAMMAR: Final = (
    "leaves: attributes a and b, an attribute the order lacks, a constant and an undeclared"
    " one, literals, serial, now, waited, budget_left; every operator; min and max of 1 or 2"
    " arguments; ?:"
)
DOMAIN: Final = (
    "each variable a tree reads over NaN, -inf, -1.0, -0.0, 0.0, 1.0, inf, True, False;"
    " serial also 3 and ±10**400; the stage present or absent"
)


def disagreement(tree: Expr, compiler: Compiler = compile_expression) -> CompiledMismatch | None:
    """The first point of its domain where ``compiler``'s code for ``tree`` differs
    from ``evaluate``, or None.

    >>> from policy.waiting.parse import parse_expression
    >>> disagreement(parse_expression("-a / 0").unwrap()) is None
    True
    """
    return _disagreement(compiler, tree)
