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
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

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

NAN: Final = math.nan


@dataclass(frozen=True, slots=True)
class Scope:
    """Everything a key may read while it is evaluated for one entry."""

    attributes: Mapping[str, float | bool]
    serial: int
    now: float
    waited: float
    budget_left: Mapping[str, float]
    constants: Mapping[str, float]


def divide(numerator: float, denominator: float) -> float:
    """IEEE division: never raises.

    >>> divide(1.0, 0.0), divide(1.0, -0.0), divide(-2.0, -0.0), divide(0.0, 0.0)
    (inf, -inf, inf, nan)
    """
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
    for value in values:
        if math.isnan(value):
            return NAN
        ranked.append((value, math.copysign(1.0, value), value))
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


def evaluate(expr: Expr, scope: Scope) -> float:
    """The value of ``expr`` in ``scope``; never raises.

    >>> scope = Scope({"prompt": 256}, 1, now=5.0, waited=5.0, budget_left={}, constants={})
    >>> evaluate(Binary("&&", Binary(">", Attr("prompt"), Num(128)), Var("waited")), scope)
    1.0
    >>> evaluate(BudgetLeft("engine"), scope)
    nan
    """
    match expr:
        case Num(value):
            return value
        case Bool(value):
            return 1.0 if value else 0.0
        case Attr(name):
            found = scope.attributes.get(name)
            return NAN if found is None else float(found)
        case Const(name):
            return float(scope.constants.get(name, NAN))
        case Var("serial"):
            return float(scope.serial)
        case Var("now"):
            return scope.now
        case Var(_):
            return scope.waited
        case BudgetLeft(stage):
            return float(scope.budget_left.get(stage, NAN))
        case Unary("-", operand):
            return -evaluate(operand, scope)
        case Unary(_, operand):
            return 0.0 if is_true(evaluate(operand, scope)) else 1.0
        case Binary("&&", left, right):
            return (
                1.0 if is_true(evaluate(left, scope)) and is_true(evaluate(right, scope)) else 0.0
            )
        case Binary("||", left, right):
            return 1.0 if is_true(evaluate(left, scope)) or is_true(evaluate(right, scope)) else 0.0
        case Binary(op, left, right):
            a, b = evaluate(left, scope), evaluate(right, scope)
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
        case Cond(test, then, otherwise):
            return evaluate(then if is_true(evaluate(test, scope)) else otherwise, scope)
        case Call(function, args):
            return extremum(function, [evaluate(arg, scope) for arg in args])


def order_key(value: float) -> tuple[int, float]:
    """Sort key of one key value in the total order of waiting selection.

    Numeric order; -0.0 equals 0.0; every NaN equals every other NaN and is
    greater than +infinity.

    >>> sorted([math.nan, math.inf, -0.0, -math.inf, 0.0], key=order_key)
    [-inf, -0.0, 0.0, inf, nan]
    >>> order_key(-0.0) == order_key(0.0), order_key(math.nan) == order_key(-math.nan)
    (True, True)
    """
    if math.isnan(value):
        return (1, 0.0)
    return (0, value + 0.0)  # + 0.0 turns -0.0 into 0.0


def key_list_order(values: Iterable[float]) -> tuple[tuple[int, float], ...]:
    """Sort key of a whole key list: lexicographic over :func:`order_key`.

    >>> key_list_order([2.0, math.nan]) < key_list_order([3.0, 0.0])
    True
    """
    return tuple(order_key(value) for value in values)
