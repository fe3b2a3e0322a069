"""The JSON form of key expression trees.

Leaves are one-field objects, operators an ``op`` with its ``args``::

    {"num": 3}   {"bool": true}   {"attr": "prompt"}   {"const": "short_tokens"}
    {"var": "serial" | "now" | "waited"}   {"budget_left": "engine"}
    {"op": "-" | "!", "args": [x]}                  prefix operators
    {"op": "+", "args": [a, b]}                     any binary operator
    {"op": "?:", "args": [test, then, otherwise]}
    {"op": "min" | "max", "args": [x, ...]}         one or more
"""

from __future__ import annotations

import math
from typing import Any, Final, TypeAlias, cast

from returns.result import Failure, Result, Success

from policy.waiting.errors import PolicyError
from policy.waiting.expr import (
    BINARY_OPERATORS,
    CONTEXT_VARIABLES,
    Attr,
    Binary,
    BinaryOperator,
    Bool,
    BudgetLeft,
    Call,
    Cond,
    Const,
    ContextVariable,
    Expr,
    Num,
    Unary,
    Var,
    is_name,
)
from policy.waiting.parse import MAX_DEPTH

JsonValue: TypeAlias = Any  # what json.loads returns; checked field by field

_LEAVES: Final = ("num", "bool", "attr", "const", "var", "budget_left")


def expr_to_json(expr: Expr) -> dict[str, JsonValue]:
    """The JSON tree of ``expr``.

    >>> expr_to_json(Binary("<=", Attr("prompt"), Const("short_tokens")))
    {'op': '<=', 'args': [{'attr': 'prompt'}, {'const': 'short_tokens'}]}
    """
    match expr:
        case Num(value):
            return {"num": value}
        case Bool(value):
            return {"bool": value}
        case Attr(name):
            return {"attr": name}
        case Const(name):
            return {"const": name}
        case Var(name):
            return {"var": name}
        case BudgetLeft(stage):
            return {"budget_left": stage}
        case Unary(op, operand):
            return {"op": op, "args": [expr_to_json(operand)]}
        case Binary(op, left, right):
            return {"op": op, "args": [expr_to_json(left), expr_to_json(right)]}
        case Cond(test, then, otherwise):
            return {"op": "?:", "args": [expr_to_json(part) for part in (test, then, otherwise)]}
        case Call(function, args):
            return {"op": function, "args": [expr_to_json(arg) for arg in args]}


class _Refused(Exception):
    def __init__(self, error: PolicyError) -> None:
        super().__init__(error.message)
        self.error = error


def finite_number(value: object) -> float | None:
    """``value`` as a float if it is a finite JSON number (booleans are not numbers).

    >>> finite_number(3), finite_number(True), finite_number(10**400), finite_number("1")
    (3.0, None, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _field(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _name(value: JsonValue, path: str, what: str) -> str:
    if not isinstance(value, str) or not is_name(value):
        raise _Refused(PolicyError(path, f"{value!r} cannot name {what}"))
    return value


def _tree(value: JsonValue, path: str, level: int) -> Expr:
    if level > MAX_DEPTH:
        raise _Refused(PolicyError(path, f"expression nested deeper than {MAX_DEPTH} levels"))
    if not isinstance(value, dict):
        raise _Refused(PolicyError(path, "an expression tree node must be a JSON object"))
    fields = set(value)
    leaf = [name for name in _LEAVES if name in fields]
    if leaf and fields == {leaf[0]}:
        kind, item, where = leaf[0], value[leaf[0]], _field(path, leaf[0])
        match kind:
            case "num":
                number = finite_number(item)
                if number is None:
                    raise _Refused(PolicyError(where, f"must be a finite number, not {item!r}"))
                return Num(number)
            case "bool":
                if not isinstance(item, bool):
                    raise _Refused(PolicyError(where, f"must be true or false, not {item!r}"))
                return Bool(item)
            case "attr":
                return Attr(_name(item, where, "an attribute"))
            case "const":
                return Const(_name(item, where, "a constant"))
            case "budget_left":
                return BudgetLeft(_name(item, where, "a stage"))
            case _:
                if not isinstance(item, str) or item not in CONTEXT_VARIABLES:
                    raise _Refused(
                        PolicyError(where, f'must be "serial", "now" or "waited", not {item!r}')
                    )
                return Var(cast(ContextVariable, item))
    if fields != {"op", "args"}:
        unknown = sorted(str(name) for name in fields - {*_LEAVES, "op", "args"})
        shape = f"a node is one of {', '.join(_LEAVES)} alone, or op with args"
        if unknown:
            raise _Refused(PolicyError(_field(path, unknown[0]), f"unknown field: {shape}"))
        raise _Refused(PolicyError(path, f"fields {sorted(map(str, fields))} do not fit: {shape}"))
    op, raw_args = value["op"], value["args"]
    if not isinstance(op, str):
        raise _Refused(PolicyError(_field(path, "op"), f"must be an operator name, not {op!r}"))
    if not isinstance(raw_args, list):
        raise _Refused(PolicyError(_field(path, "args"), "must be a list of expression trees"))
    args = [
        _tree(arg, f"{_field(path, 'args')}[{index}]", level + 1)
        for index, arg in enumerate(raw_args)
    ]
    arity = len(args)
    if op in ("-", "!") and arity == 1:
        return Unary("-" if op == "-" else "!", args[0])
    if op in BINARY_OPERATORS and arity == 2:
        return Binary(cast(BinaryOperator, op), args[0], args[1])
    if op == "?:" and arity == 3:
        return Cond(args[0], args[1], args[2])
    if op in ("min", "max") and arity >= 1:
        return Call("min" if op == "min" else "max", tuple(args))
    if op in BINARY_OPERATORS or op in ("!", "?:", "min", "max"):
        raise _Refused(
            PolicyError(_field(path, "args"), f"wrong number of arguments ({arity}) for {op!r}")
        )
    raise _Refused(PolicyError(_field(path, "op"), f"unknown operator {op!r}"))


def expr_from_json(value: JsonValue, path: str = "") -> Result[Expr, PolicyError]:
    """Read a JSON expression tree; errors carry the JSON path of the bad node.

    >>> expr_from_json({"op": "max", "args": [{"var": "now"}, {"num": 2}]}).unwrap()
    Call(function='max', args=(Var(name='now'), Num(value=2.0)))
    >>> print(expr_from_json({"op": "+", "args": [{"num": 1}]}, "keys[0]").failure())
    keys[0].args: wrong number of arguments (1) for '+'
    """
    try:
        return Success(_tree(value, path, 1))
    except _Refused as refused:
        return Failure(refused.error)
