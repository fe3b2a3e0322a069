"""Evaluating key expressions, and the total order in which key lists compare.

Evaluation never raises. All values are floats; the rules where plain Python
would raise or differ from IEEE 754:

- ``x / 0`` is infinity signed by the signs of ``x`` and of the zero; ``0 / 0``
  and ``NaN / 0`` are NaN.
- A value is *true* when it is not equal to 0, exactly as ``x != 0``: NaN is true.
- Comparisons are IEEE: any comparison with NaN is false except ``!=``.
- ``min``/``max`` propagate NaN, and take -0.0 as below 0.0 (IEEE 754-2019
  ``minimum``/``maximum``).
- A name the scope lacks (an attribute the entry does not carry, an undeclared
  constant, a stage the moment does not report) reads as NaN: unknown.
- Numbers read from the scope are converted by
  :func:`~policy.waiting.numbers.as_float`: booleans are 1 and 0, an integer
  beyond the float range is ±infinity, anything that is not a number is NaN.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, TypeAlias, cast

from pyrsistent import pmap

from policy.records import FieldRule, check_fields, instance_of
from policy.text import record_repr
from policy.waiting.expr import (
    Attr,
    Binary,
    Bool,
    BudgetLeft,
    Call,
    Cond,
    Const,
    Expr,
    Num,
    Unary,
    Var,
)
from policy.waiting.numbers import as_float

NAN: Final = math.nan

#: The budgets of a moment that reads none (keys at enqueue, ``Moment``'s default).
NO_BUDGETS: Final[Mapping[str, float]] = pmap()


@dataclass(frozen=True, slots=True)
class Scope:
    """Everything a key may read while it is evaluated for one entry.

    ``attributes``, ``budget_left`` and ``constants`` must be mappings (a
    ``TypeError`` when the scope is built): evaluation looks names up in them.
    Any value in them, and ``serial``, ``now`` and ``waited``, may be anything:
    what is not a number reads as NaN (see :func:`evaluate`).

    >>> Scope([1], 0, 0.0, 0.0, {}, {})
    Traceback (most recent call last):
    ...
    TypeError: Scope.attributes must be a mapping of names to values, not list
    """

    attributes: Mapping[str, float | bool]
    serial: int
    now: float
    waited: float
    budget_left: Mapping[str, float]
    constants: Mapping[str, float]

    __repr__ = record_repr  # a serial or a value of any size or text

    def __post_init__(self) -> None:
        check_fields(self, _SCOPE_FIELDS)


#: What Scope(...) checks: its three mappings.
_SCOPE_FIELDS: Final[tuple[FieldRule, ...]] = tuple(
    (name, instance_of(Mapping), "a mapping of names to values")
    for name in ("attributes", "budget_left", "constants")
)


def divide(numerator: float, denominator: float) -> float:
    """IEEE division: never raises.

    >>> divide(1.0, 0.0), divide(1.0, -0.0), divide(-2.0, -0.0), divide(0.0, 0.0)
    (inf, -inf, inf, nan)
    """
    numerator, denominator = as_float(numerator), as_float(denominator)
    if denominator != 0.0:
        return numerator / denominator
    if numerator == 0.0 or math.isnan(numerator):
        return NAN
    return math.copysign(math.inf, numerator) * math.copysign(1.0, denominator)


def is_true(value: float) -> bool:
    """A value is true when it is not 0; NaN is true (``NaN != 0`` holds).

    >>> is_true(0.0), is_true(-0.0), is_true(2.5), is_true(math.nan)
    (False, False, True, True)
    """
    return value != 0.0


def extremum(function: str, values: Iterable[float]) -> float:
    """``min`` or ``max``: NaN if any value is NaN; -0.0 counts as below 0.0.

    >>> extremum("min", [0.0, -0.0]), extremum("max", [-0.0, 0.0]), extremum("max", [1, math.nan])
    (-0.0, 0.0, nan)
    """
    ranked = []
    for number in values:
        value = as_float(number)
        if math.isnan(value):
            return NAN
        ranked.append((value, math.copysign(1.0, value), value))
    if not ranked:
        return NAN
    return (min(ranked) if function == "min" else max(ranked))[2]


def _compare(op: str, left: float, right: float) -> bool:
    match op:
        case "<":
            return left < right
        case "<=":
            return left <= right
        case ">":
            return left > right
        case ">=":
            return left >= right
        case "==":
            return left == right
        case _:
            return left != right


@dataclass(frozen=True, slots=True)
class _Apply:
    """Pending: apply ``op`` to the one (prefix) or two values on top of the stack."""

    op: str
    arity: int


@dataclass(frozen=True, slots=True)
class _Logic:
    """Pending: ``&&``/``||`` once its left value is known; ``right`` only if needed."""

    op: str
    right: Expr


@dataclass(frozen=True, slots=True)
class _Truth:
    """Pending: the value on top of the stack as 1 or 0."""


@dataclass(frozen=True, slots=True)
class _Choose:
    """Pending: ``then`` or ``otherwise``, by the test value on top of the stack."""

    then: Expr
    otherwise: Expr


@dataclass(frozen=True, slots=True)
class _Extremum:
    """Pending: ``min``/``max`` of the ``count`` values on top of the stack."""

    function: str
    count: int


_TRUTH: Final = _Truth()

_Step: TypeAlias = Expr | _Apply | _Logic | _Truth | _Choose | _Extremum


def _read(values: Mapping[str, object], name: str) -> float:
    found = values.get(name)
    return NAN if found is None else as_float(found)


def _arithmetic(op: str, a: float, b: float) -> float:
    match op:
        case "+":
            return a + b
        case "-":
            return a - b
        case "*":
            return a * b
        case "/":
            return divide(a, b)
        case _:
            return 1.0 if _compare(op, a, b) else 0.0


def evaluate(expr: Expr, scope: Scope) -> float:
    """The value of ``expr`` in ``scope``; never raises for any :class:`Scope`.

    Every number read from the scope goes through
    :func:`~policy.waiting.numbers.as_float` (an integer beyond the float range
    is ±infinity). The tree is walked with an explicit stack, so a chain of any
    length evaluates without recursion. ``scope`` must be a :class:`Scope` (a
    ``TypeError`` otherwise, at once); ``expr`` that is not a node is unknown, NaN.

    >>> scope = Scope({"prompt": 256}, 1, now=5.0, waited=5.0, budget_left={}, constants={})
    >>> evaluate(Binary("&&", Binary(">", Attr("prompt"), Num(128)), Var("waited")), scope)
    1.0
    >>> evaluate(BudgetLeft("engine"), scope)
    nan
    """
    if type(scope) is not Scope and not isinstance(scope, Scope):
        raise TypeError(f"evaluate reads names from a Scope, not {type(scope).__name__}")
    values: list[float] = []
    pending: list[_Step] = [expr]
    push, pop, put = pending.append, pending.pop, values.append
    while pending:
        step: object = pop()
        kind = type(step)
        # Dispatch on the exact type, most frequent first: this loop is the hot path.
        if kind is Attr:
            put(_read(scope.attributes, cast(Attr, step).name))
        elif kind is Num:
            put(cast(Num, step).value)
        elif kind is Binary:
            binary = cast(Binary, step)
            if binary.op in ("&&", "||"):
                push(_Logic(binary.op, binary.right))
            else:
                push(_Apply(binary.op, 2))
                push(binary.right)
            push(binary.left)
        elif kind is _Apply:
            apply = cast(_Apply, step)
            if apply.arity == 2:
                right_value = values.pop()
                values[-1] = _arithmetic(apply.op, values[-1], right_value)
            elif apply.op == "-":
                values[-1] = -values[-1]
            else:
                values[-1] = 0.0 if is_true(values[-1]) else 1.0
        elif kind is Cond:
            cond = cast(Cond, step)
            push(_Choose(cond.then, cond.otherwise))
            push(cond.test)
        elif kind is _Choose:
            choose = cast(_Choose, step)
            push(choose.then if is_true(values.pop()) else choose.otherwise)
        elif kind is _Logic:
            # &&: a false left decides (0); ||: a true left decides (1)
            logic = cast(_Logic, step)
            either = logic.op == "||"
            if is_true(values[-1]) == either:
                values[-1] = 1.0 if either else 0.0
            else:
                values.pop()
                push(_TRUTH)
                push(logic.right)
        elif kind is _Truth:
            values[-1] = 1.0 if is_true(values[-1]) else 0.0
        elif kind is Const:
            put(_read(scope.constants, cast(Const, step).name))
        elif kind is Var:
            name = cast(Var, step).name
            put(
                as_float(
                    scope.serial
                    if name == "serial"
                    else scope.now
                    if name == "now"
                    else scope.waited
                )
            )
        elif kind is Bool:
            put(1.0 if cast(Bool, step).value else 0.0)
        elif kind is BudgetLeft:
            put(_read(scope.budget_left, cast(BudgetLeft, step).stage))
        elif kind is Unary:
            unary = cast(Unary, step)
            push(_Apply(unary.op, 1))
            push(unary.operand)
        elif kind is Call:
            call = cast(Call, step)
            push(_Extremum(call.function, len(call.args)))
            pending.extend(reversed(call.args))
        elif kind is _Extremum:
            count = cast(_Extremum, step).count
            found = extremum(cast(_Extremum, step).function, values[len(values) - count :])
            del values[len(values) - count :]
            put(found)
        else:  # not a node (a policy built around make_policy): unknown
            put(NAN)
    return values[-1]


def order_key(value: float) -> tuple[int, float]:
    """Sort key of one key value in the total order of waiting selection.

    Numeric order; -0.0 equals 0.0; every NaN equals every other NaN and is
    greater than +infinity.

    >>> sorted([math.nan, math.inf, -0.0, -math.inf, 0.0], key=order_key)
    [-inf, -0.0, 0.0, inf, nan]
    >>> order_key(-0.0) == order_key(0.0), order_key(math.nan) == order_key(-math.nan)
    (True, True)
    """
    value = as_float(value)
    if math.isnan(value):
        return (1, 0.0)
    return (0, value + 0.0)  # + 0.0 turns -0.0 into 0.0


def key_list_order(values: Iterable[float]) -> tuple[tuple[int, float], ...]:
    """Sort key of a whole key list: lexicographic over :func:`order_key`.

    >>> key_list_order([2.0, math.nan]) < key_list_order([3.0, 0.0])
    True
    """
    return tuple(order_key(value) for value in values)
