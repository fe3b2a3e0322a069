"""The key language of waiting.md, interpreted a second time from its JSON tree.

Sources: ``shared/spec/waiting.md`` (Keys) and ``docs/waiting.md`` (The key
language, Numbers, The JSON document). Plain recursion over the tree exactly as
the docs' table writes it; no parsing of text keys.

Every sentence implemented is quoted next to the code that implements it.
Evaluation of a well-formed tree never raises ("evaluation never raises").
A tree that is not of one of the forms in the table is not a key at all: it is
a ``ValueError`` (this module is not the validator, but it refuses to guess).

Limitation: plain recursion means a tree deeper than Python's recursion limit
(about 1000 nested nodes, e.g. a chain ``a + b + c + ...`` of ~900 terms)
raises ``RecursionError``. The oracle is written for obviousness, not for
such trees.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Env", "interpret", "read_number", "same_value"]

NAN = math.nan
INF = math.inf

_BINARY = frozenset({"+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!=", "&&", "||"})
_UNARY = frozenset({"-", "!"})
_VARIABLES = frozenset({"serial", "now", "waited"})


@dataclass(frozen=True, slots=True)
class Env:
    """Everything a key may read at one evaluation (waiting.md, Keys).

    "Each key is an expression over: the entry's visible attributes, and
    ``serial``; ``now``; ``waited``; ``budget_left(stage)``; constants declared
    by the policy (``let``)."

    >>> env = Env({"prompt": 64}, serial=0, now=5.0, waited=5.0, budget_left={}, constants={})
    >>> env.now
    5.0
    """

    attributes: Mapping[str, float | bool]  # the entry's attributes
    serial: float
    now: float
    waited: float
    budget_left: Mapping[str, float]  # stage -> tokens free; a stage absent reads NaN
    constants: Mapping[str, float]  # the policy's let


# --------------------------------------------------------------------------- numbers


def read_number(value: object) -> float:
    """Read one run-time number as a float.

    docs, Numbers: "At run time (attributes, serial, now, budget_left),
    true/false are 1 and 0, an integer too large for a float is ±infinity, and
    floats are kept as they are, infinities and NaN included."
    "Evaluation reads every number by the same rule, so it never raises."
    Anything else is not a number: a ``ValueError``.

    >>> read_number(True), read_number(3), read_number(-(10**400)), read_number(0.5)
    (1.0, 3.0, -inf, 0.5)
    """
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return INF if value > 0 else -INF
    if isinstance(value, float):
        return value
    raise ValueError(f"not a number or a boolean: {value!r}")


def _lookup(table: Mapping[str, float | bool] | Mapping[str, float], name: str) -> float:
    """docs: "Unknown at run time reads as NaN." (a stage, an attribute, a constant)."""
    if name in table:
        return read_number(table[name])
    return NAN


def _truth(x: float) -> bool:
    """docs, Truth: "a value is true exactly when value != 0. So NaN is true and
    -0.0 is false"."""
    return x != 0


def _bool_value(b: bool) -> float:
    """waiting.md: "true/false (1/0)"; comparisons, && and || "give 1 or 0"."""
    return 1.0 if b else 0.0


def _is_negative_zero(x: float) -> bool:
    return x == 0 and math.copysign(1.0, x) < 0


# --------------------------------------------------------------------------- arithmetic


def _divide(x: float, y: float) -> float:
    """docs, Arithmetic: "x/0 is ±infinity, signed by the signs of x and of the
    zero (1/-0 is -infinity); 0/0 and NaN/0 are NaN."

    Any other division is the IEEE one (Python's float division does not raise
    when the divisor is not zero: an overflow gives ±inf).
    """
    if y == 0:
        if math.isnan(x) or x == 0:
            return NAN
        sign = math.copysign(1.0, x) * math.copysign(1.0, y)
        return math.copysign(INF, sign)
    return x / y


def _minimum(a: float, b: float) -> float:
    """docs: "A NaN argument makes the result NaN, and -0.0 counts as less than
    0.0 (IEEE 754-2019 minimum)." So minimum(0.0, -0.0) is -0.0."""
    if math.isnan(a) or math.isnan(b):
        return NAN
    if a < b:
        return a
    if b < a:
        return b
    # equal: the only equal values that differ are the two zeros
    if _is_negative_zero(b):
        return b
    return a


def _maximum(a: float, b: float) -> float:
    """IEEE 754-2019 maximum: NaN propagates; 0.0 counts as greater than -0.0."""
    if math.isnan(a) or math.isnan(b):
        return NAN
    if a > b:
        return a
    if b > a:
        return b
    if _is_negative_zero(a):
        return b
    return a


# --------------------------------------------------------------------------- the tree


def _name(tree: Mapping[str, object], field: str) -> str:
    value = tree[field]
    if not isinstance(value, str):
        raise ValueError(f"{field}: {value!r} is not a name")
    return value


def _args(tree: Mapping[str, object]) -> Sequence[object]:
    args = tree.get("args")
    if not isinstance(args, list | tuple):
        raise ValueError(f"args must be a list, not {args!r}")
    return args


def interpret(tree: object, env: Env) -> float:
    """The value of one key, given as a JSON tree (docs, The JSON document).

    | ``{"num": 3}`` a number | ``{"bool": true}`` 1/0 | ``{"attr": n}`` |
    ``{"const": n}`` | ``{"var": "serial"|"now"|"waited"}`` |
    ``{"budget_left": stage}`` | ``{"op": "-"|"!", "args": [x]}`` |
    ``{"op": <binary>, "args": [a, b]}`` | ``{"op": "?:", "args": [c, a, b]}`` |
    ``{"op": "min"|"max", "args": [x, ...]}``

    >>> env = Env({"prompt": 256, "immediate": False}, serial=1, now=5.0, waited=5.0,
    ...           budget_left={"engine": 4.0}, constants={"short_tokens": 128.0})
    >>> interpret({"op": ">", "args": [{"attr": "prompt"}, {"const": "short_tokens"}]}, env)
    1.0
    >>> interpret({"op": "/", "args": [{"num": 1}, {"op": "-", "args": [{"num": 0}]}]}, env)
    -inf
    >>> interpret({"op": "/", "args": [{"num": 0}, {"num": 0}]}, env)
    nan
    >>> interpret({"attr": "missing"}, env)
    nan
    >>> interpret({"budget_left": "other"}, env), interpret({"budget_left": "engine"}, env)
    (nan, 4.0)
    >>> interpret({"op": "min", "args": [{"num": 0.0}, {"num": -0.0}]}, env)
    -0.0
    >>> interpret({"op": "max", "args": [{"num": -0.0}, {"num": 0.0}]}, env)
    0.0
    >>> interpret({"op": "?:", "args": [{"var": "waited"}, {"num": 1}, {"num": 2}]}, env)
    1.0
    >>> interpret({"op": "!", "args": [{"op": "/", "args": [{"num": 0}, {"num": 0}]}]}, env)
    0.0
    >>> interpret({"num": 10**400}, env)
    inf
    """
    if not isinstance(tree, Mapping):
        raise ValueError(f"not an expression tree: {tree!r}")
    if "op" in tree:
        return _interpret_op(tree, env)
    if "num" in tree:
        # {"num": 3}: a number (read by the run-time rule so that evaluation never raises)
        return read_number(tree["num"])
    if "bool" in tree:
        # "true is 1 and false is 0"
        value = tree["bool"]
        if not isinstance(value, bool):
            raise ValueError(f"bool: {value!r} is not a boolean")
        return _bool_value(value)
    if "attr" in tree:
        # "an attribute that an entry lacks" reads as NaN
        return _lookup(env.attributes, _name(tree, "attr"))
    if "const" in tree:
        # a let constant; unknown reads as NaN
        return _lookup(env.constants, _name(tree, "const"))
    if "var" in tree:
        variable = _name(tree, "var")
        if variable == "serial":
            return read_number(env.serial)
        if variable == "now":
            return read_number(env.now)
        if variable == "waited":
            return read_number(env.waited)
        raise ValueError(f"var: {variable!r} is not one of serial, now, waited")
    if "budget_left" in tree:
        # "A stage that the moment does not report gives budget_left(stage) = NaN"
        return _lookup(env.budget_left, _name(tree, "budget_left"))
    raise ValueError(f"not an expression tree: {tree!r}")


def _interpret_op(tree: Mapping[str, object], env: Env) -> float:
    op = tree["op"]
    if not isinstance(op, str):
        raise ValueError(f"op: {op!r} is not an operator")
    args = _args(tree)

    if op in _UNARY and len(args) == 1:
        x = interpret(args[0], env)
        if op == "-":
            # unary minus: IEEE negation, so -(0.0) is -0.0
            return -x
        # "!x ... use this rule" (truth): !x is 1 exactly when x is false
        return _bool_value(not _truth(x))

    if op == "?:":
        if len(args) != 3:
            raise ValueError("?: takes three arguments")
        # "c ? a : b": picks by the truth of c; only the chosen branch is evaluated
        if _truth(interpret(args[0], env)):
            return interpret(args[1], env)
        return interpret(args[2], env)

    if op in ("min", "max"):
        if len(args) < 1:
            raise ValueError(f"{op} takes one or more arguments")
        combine = _minimum if op == "min" else _maximum
        result = interpret(args[0], env)
        for arg in args[1:]:
            result = combine(result, interpret(arg, env))
        return result

    if op in _BINARY and len(args) == 2:
        if op == "&&":
            # "&& and || short-circuit and give 1 or 0"
            if not _truth(interpret(args[0], env)):
                return 0.0
            return _bool_value(_truth(interpret(args[1], env)))
        if op == "||":
            if _truth(interpret(args[0], env)):
                return 1.0
            return _bool_value(_truth(interpret(args[1], env)))
        a = interpret(args[0], env)
        b = interpret(args[1], env)
        return _binary(op, a, b)

    raise ValueError(f"unknown operator {op!r} with {len(args)} argument(s)")


def _binary(op: str, a: float, b: float) -> float:
    """The binary arithmetic and comparison operators.

    docs: "Arithmetic follows IEEE 754 and never raises"; "Comparisons are IEEE
    comparisons and give 1 or 0. Every comparison with NaN is false, except !=,
    which is true. -0 == 0 holds." Python's float operators are exactly these
    (float + - * never raise; an overflow gives ±inf).
    """
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return _divide(a, b)
    if op == "<":
        return _bool_value(a < b)
    if op == "<=":
        return _bool_value(a <= b)
    if op == ">":
        return _bool_value(a > b)
    if op == ">=":
        return _bool_value(a >= b)
    if op == "==":
        return _bool_value(a == b)
    if op == "!=":
        return _bool_value(a != b)
    raise ValueError(f"unknown binary operator {op!r}")


# --------------------------------------------------------------------------- comparing results


def same_value(a: float, b: float) -> bool:
    """Equal as IEEE results: NaN equals NaN (whatever its payload), and -0.0 is
    DISTINCT from 0.0. For comparing two evaluations bit for bit.

    >>> same_value(math.nan, -math.nan), same_value(0.0, -0.0), same_value(-0.0, -0.0)
    (True, False, True)
    >>> same_value(1.0, 1.0), same_value(math.inf, -math.inf), same_value(math.nan, 0.0)
    (True, False, False)
    """
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
