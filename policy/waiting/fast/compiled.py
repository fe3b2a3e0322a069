"""Key expressions compiled to plain Python functions, with exactly the values of ``evaluate``.

:func:`~policy.waiting.evaluate.evaluate` walks a tree for every entry at every
selection. This module turns a key list into Python source once, compiles it
with ``compile`` and makes functions of the code objects
(``types.FunctionType``; nothing is ``exec``-uted). A scan over the waiting
entries is then one Python frame looping over them, with each key an inline
Python expression: ``c ? a : b`` becomes ``(a if c else b)``, truth tests stay
Python truthiness of floats (``bool(x)`` is exactly ``x != 0``: NaN is true,
-0.0 false), comparisons stay comparisons until a number is needed.

Exactness, rule by rule (the tree evaluator stays the reference):

- Every fragment of generated code has a *kind*: a float; a number that may be
  a ``bool`` (an attribute value: Python reads ``True`` as 1 in comparisons and
  in arithmetic with a float, like ``as_float``); a Python bool (a comparison or
  ``!``); or a value only whose truth counts (``a and b``). A fragment is turned
  into a float only where a float is needed: ``(x * 1.0)`` for a number
  (exact, keeps -0.0 and NaN; ``False * 1.0`` is 0.0), ``(1.0 if x else 0.0)``
  for a truth. So ``-False`` is never ``0`` and ``True + True`` never ``2``;
  every value a compiled key returns is a float.
- ``x / y`` is ``(x / c)`` for a non-zero constant ``c`` and otherwise calls
  :func:`~policy.waiting.evaluate.divide`; ``min``/``max`` of two call small
  helpers with the rules of :func:`~policy.waiting.evaluate.extremum`, of more
  call ``extremum`` itself.
- A subtree that reads nothing from the entry or the moment is folded at compile
  time by calling ``evaluate`` on it (its constants bound in a scope), so folding
  is exact by construction; ``c ? a : b``, ``&&`` and ``||`` with a constant
  operand keep only what they need. Constants and literals are inlined as
  ``repr`` of the float (``(-0.0)`` stays negative); NaN and infinities, stage
  names and helpers are names in the functions' globals. No text of the policy
  (a name, a stage) ever appears in the source: attributes are read by position.
- Python evaluates nothing here that raises: float ``+ - *`` overflow to
  infinity, comparisons never raise, division goes through ``divide``.

**Deep trees.** Python's parser refuses more than 200 nested parentheses, and its
compiler recurses over the syntax tree, so a chain ``a + a + ... + a`` of thousands of
terms cannot be one expression. Code is generated without recursion, and a
fragment whose text would nest more than :data:`MAX_NESTING` parentheses has
its deepest operands computed first, into temporaries (``t0 = ...``): every
generated expression nests at most :data:`MAX_NESTING` levels, whatever the tree.
Evaluation is pure and total, so computing such an operand even when a
conditional would not need it changes no value. Should ``compile`` still fail
(``RecursionError`` under a lowered recursion limit, ``MemoryError``), the
functions fall back to calling ``evaluate`` for each entry: slower, just as exact.

Key lists of more than :data:`MAX_INLINE_KEYS` keys are scanned by a plain loop
over the compiled key function and ``key_list_order``.

>>> from policy.waiting.parse import parse_expression
>>> key = parse_expression("immediate ? 0 : prompt > 128 && waited >= 3 ? 1 : 2").unwrap()
>>> generated_source([key], {}, ("immediate", "prompt"), "keys").splitlines()
... # doctest: +NORMALIZE_WHITESPACE
['def keys(values, serial, now, waited, budget_left):',
 '    if waited.__class__ is not _float:',
 '        waited = _as_float(waited)',
 '    v0 = values[0]',
 '    v1 = values[1]',
 '    return ((0.0 if v0 else (1.0 if ((v1 > 128.0) and (waited >= 3.0)) else 2.0)),)']
>>> compile_keys([key], {}, ("immediate", "prompt"))((False, 256.0), 0, 9.0, 4.0, {})
(1.0,)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import CodeType, FunctionType
from typing import Final, Literal, TypeAlias, cast

from policy.waiting.evaluate import (
    Scope,
    divide,
    evaluate,
    extremum,
    is_true,
    key_list_order,
    order_key,
)
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
    children,
    walk,
)
from policy.waiting.fast.rows import ENQUEUED_AT, SERIAL, VALUES, Row
from policy.waiting.numbers import as_float

__all__ = [
    "MAX_INLINE_KEYS",
    "MAX_NESTING",
    "ExpressionFunction",
    "KeyFunction",
    "ScanFunction",
    "SortKeysFunction",
    "Values",
    "compile_expression",
    "compile_keys",
    "compile_scan",
    "compile_sort_keys",
    "entry_values",
    "generated_source",
    "sort_key",
]

#: The attribute values of one entry, first one per name of the attribute order
#: (compiled code reads them by position; any after those are not read), as the
#: queue stores them: floats (NaN and infinities included) or booleans.
#: :func:`entry_values` builds them from a map.
Values: TypeAlias = tuple[float | bool, ...]

#: ``key_function(values, serial, now, waited, budget_left)`` -> the key list's values.
KeyFunction: TypeAlias = Callable[
    [Values, object, float, float, Mapping[str, float]], tuple[float, ...]
]

#: ``expression(values, serial, now, waited, budget_left)`` -> the value of one key.
ExpressionFunction: TypeAlias = Callable[[Values, object, float, float, Mapping[str, float]], float]


#: ``best(rows, now, budget_left)`` -> (index, key values) of the smallest key list.
ScanFunction: TypeAlias = Callable[
    [Sequence[Row], float, Mapping[str, float]], tuple[int, tuple[float, ...]]
]

#: ``sort_keys(rows, now, budget_left)`` -> ``sort_key(key values) + (index,)`` per row.
SortKeysFunction: TypeAlias = Callable[
    [Sequence[Row], float, Mapping[str, float]], list[tuple[float | int, ...]]
]

#: Deepest parenthesis nesting of one generated expression; deeper operands are
#: computed into temporaries first. Python's tokenizer allows 200.
MAX_NESTING: Final = 40

#: Most keys a scan compares inline, lazily (a key is computed only on a tie of
#: the keys before it); longer key lists are scanned by a plain loop.
MAX_INLINE_KEYS: Final = 8


NAN: Final = math.nan

# ----------------------------------------------------------------------------- public helpers


def sort_key(values: tuple[float, ...]) -> tuple[float | int, ...]:
    """Flattened total-order key: ``(1, 0.0)`` for a NaN, ``(0, value + 0.0)`` otherwise.

    ``sort_key(a) < sort_key(b)`` exactly when ``key_list_order(a) < key_list_order(b)``
    (see :func:`~policy.waiting.evaluate.key_list_order`), and equal keys are equal.

    >>> sort_key((2.0, math.nan, -0.0))
    (0, 2.0, 1, 0.0, 0, 0.0)
    >>> sort_key((math.inf,)) < sort_key((math.nan,)), sort_key((-0.0,)) == sort_key((0.0,))
    (True, True)
    """
    if len(values) == 1:  # the common case, without a generator (a hot path)
        value = values[0]
        return (1, 0.0) if value != value else (0, value + 0.0)  # noqa: PLR0124 - NaN test
    flat: list[float | int] = []
    for value in values:
        flat.extend(order_key(value))
    return tuple(flat)


def entry_values(
    attributes: Mapping[str, object], attribute_order: Sequence[str]
) -> tuple[float | bool, ...]:
    """The :data:`Values` of an entry's attribute map: booleans kept, other numbers
    read by :func:`~policy.waiting.numbers.as_float`, a missing name NaN (as
    ``evaluate`` reads it).

    >>> entry_values({"prompt": 256, "immediate": True}, ("immediate", "prompt", "lane"))
    (True, 256.0, nan)
    """
    made: list[float | bool] = []
    for name in attribute_order:
        found = attributes.get(name)
        made.append(found if isinstance(found, bool) else NAN if found is None else as_float(found))
    return tuple(made)


# ----------------------------------------------------------------------------- run-time helpers


def _minimum(a: float, b: float) -> float:
    """``extremum("min", (a, b))`` for floats and booleans, without building lists."""
    if a < b:
        return float(a)
    if b < a:
        return float(b)
    if a == b:  # equal: -0.0 is below 0.0
        return float(a) if math.copysign(1.0, a) < 0.0 else float(b)
    return NAN  # unordered: a NaN


def _maximum(a: float, b: float) -> float:
    """``extremum("max", (a, b))`` for floats and booleans, without building lists."""
    if a > b:
        return float(a)
    if b > a:
        return float(b)
    if a == b:  # equal: 0.0 is above -0.0
        return float(b) if math.copysign(1.0, a) < 0.0 else float(a)
    return NAN


def _budget(budget_left: Mapping[str, object], stage: str) -> float:
    """``budget_left(stage)`` as ``evaluate`` reads it: NaN when the moment lacks it."""
    found = budget_left.get(stage)
    return NAN if found is None else as_float(found)


def _no_rows() -> None:
    raise ValueError("a scan needs at least one row")


#: Names every generated function may use, besides its own (stages): no builtins.
_HELPERS: Final[Mapping[str, object]] = {
    "__builtins__": {},
    "_nan": math.nan,
    "_inf": math.inf,
    "_float": float,
    "_as_float": as_float,
    "_divide": divide,
    "_minimum": _minimum,
    "_maximum": _maximum,
    "_extremum": extremum,
    "_budget": _budget,
    "_no_rows": _no_rows,
    "_enumerate": enumerate,
}

# ----------------------------------------------------------------------------- code fragments

#: "f": a float; "n": a float or a bool (a number as ``as_float`` reads it); "b": a Python
#: bool (1 or 0); "t": only its truth counts (``a and b``).
_Kind: TypeAlias = Literal["f", "n", "b", "t"]


@dataclass(frozen=True, slots=True)
class _Code:
    """Generated Python for one node: its text, kind, parenthesis nesting, and its value
    when it reads nothing (a compile-time constant)."""

    text: str
    kind: _Kind
    depth: int = 0
    const: float | None = None


def _literal(value: float) -> _Code:
    if math.isnan(value):
        text = "_nan"
    elif math.isinf(value):
        text = "_inf" if value > 0 else "(-_inf)"
    else:
        text = repr(value)
        if math.copysign(1.0, value) < 0.0:
            text = f"({text})"
    return _Code(text, "f", 0, value)


def _fold(node: Expr, values: Sequence[float]) -> float:
    """The value of ``node`` whose children are the constants ``values``, by ``evaluate``."""
    names = tuple(Const(f"c{index}") for index in range(len(values)))
    rebuilt: Expr
    match node:
        case Unary(op, _):
            rebuilt = Unary(op, names[0])
        case Binary(op, _, _):
            rebuilt = Binary(op, names[0], names[1])
        case Cond():
            rebuilt = Cond(names[0], names[1], names[2])
        case Call(function, _):
            rebuilt = Call(function, names)
        case _:
            return NAN
    constants = {name.name: value for name, value in zip(names, values, strict=True)}
    return evaluate(rebuilt, Scope({}, 0, 0.0, 0.0, {}, constants))


@dataclass(frozen=True, slots=True)
class _Inputs:
    """How generated code reads the entry and the moment."""

    attributes: Mapping[str, int]  # name -> position in the values (first occurrence)
    constants: Mapping[str, float]
    waited: str  # the text that reads ``waited`` (a local, or an inline expression)
    serial: str


class _Generator:
    """Generates the code of key expressions, without recursion; collects the
    temporaries (statements) it needs and the inputs the keys read."""

    def __init__(self, inputs: _Inputs) -> None:
        self.inputs = inputs
        self.statements: list[str] = []
        self.temporaries = 0
        self.attributes: set[int] = set()
        self.stages: dict[str, int] = {}
        self.reads: set[str] = set()  # of "now", "waited", "serial"

    # -- kinds

    def _hoist(self, code: _Code) -> _Code:
        if code.depth == 0:
            return code
        name = f"t{self.temporaries}"
        self.temporaries += 1
        self.statements.append(f"{name} = {code.text}")
        return _Code(name, code.kind)

    def _fit(self, codes: list[_Code], added: int) -> list[_Code]:
        """``codes`` as operands of a form ``added`` parentheses deep, within MAX_NESTING."""
        if max((code.depth for code in codes), default=0) + added <= MAX_NESTING:
            return codes
        return [self._hoist(code) for code in codes]

    @staticmethod
    def as_float(code: _Code) -> _Code:
        if code.kind == "f":
            return code
        if code.kind == "n":
            if code.text.isidentifier():  # a float as it is (no copy kept per entry)
                text = f"({code.text} if {code.text}.__class__ is _float else {code.text} * 1.0)"
                return _Code(text, "f", code.depth + 1)
            return _Code(f"({code.text} * 1.0)", "f", code.depth + 1)
        return _Code(f"(1.0 if {code.text} else 0.0)", "f", code.depth + 1)

    @classmethod
    def as_number(cls, code: _Code) -> _Code:
        """A float, or a bool (which compares and adds to a float as 1 or 0)."""
        return cls.as_float(code) if code.kind == "t" else code

    @staticmethod
    def as_truth(code: _Code) -> _Code:
        """``code`` where only its truth counts (a bool stays a bool: it is 1 or 0)."""
        return code if code.kind == "b" else _Code(code.text, "t", code.depth)

    # -- nodes

    def leaf(self, node: Expr) -> _Code:
        match node:
            case Num(value):
                return _literal(as_float(value))
            case Bool(value):
                return _literal(1.0 if value else 0.0)
            case Const(name):
                found = self.inputs.constants.get(name)
                return _literal(NAN if found is None else as_float(found))
            case Attr(name):
                position = self.inputs.attributes.get(name)
                if position is None:
                    return _literal(NAN)
                self.attributes.add(position)
                return _Code(f"v{position}", "n")
            case Var("now"):
                self.reads.add("now")
                return _Code("now", "f")
            case Var("waited"):
                self.reads.add("waited")
                return _Code(self.inputs.waited, "f", self.inputs.waited.count("("))
            case Var("serial"):
                self.reads.add("serial")
                return _Code(self.inputs.serial, "f", self.inputs.serial.count("("))
            case BudgetLeft(stage):
                index = self.stages.setdefault(stage, len(self.stages))
                return _Code(f"left{index}", "f")
            case _:  # not a node: evaluate reads it as NaN
                return _literal(NAN)

    def operator(self, node: Expr, operands: list[_Code]) -> _Code:
        consts = [code.const for code in operands]
        if all(const is not None for const in consts):
            return _literal(_fold(node, cast(list[float], consts)))
        match node:
            case Unary("-", _):
                return self._negate(operands[0])
            case Unary(_, _):  # "!"
                (operand,) = self._fit([operands[0]], 1)
                return _Code(f"(not {operand.text})", "b", operand.depth + 1)
            case Binary("&&" | "||" as op, _, _):
                return self._logic(op, operands[0], operands[1])
            case Binary("+" | "-" | "*" as op, _, _):
                left, right = (self.as_number(code) for code in operands)
                if left.kind != "f" and right.kind != "f":  # bool op bool is an int
                    left = self.as_float(left)
                left, right = self._fit([left, right], 1)
                return _Code(f"({left.text} {op} {right.text})", "f", 1 + _deepest(left, right))
            case Binary("/", _, _):
                return self._divide(operands[0], operands[1])
            case Binary(op, _, _):  # a comparison
                left, right = self._fit([self.as_number(code) for code in operands], 1)
                return _Code(f"({left.text} {op} {right.text})", "b", 1 + _deepest(left, right))
            case Cond():
                return self._choose(*operands)
            case Call(function, _):
                return self._extremum(function, operands)
            case _:
                return _literal(NAN)

    def _negate(self, operand: _Code) -> _Code:
        if operand.kind == "f":
            (operand,) = self._fit([operand], 1)
            return _Code(f"(-{operand.text})", "f", operand.depth + 1)
        (operand,) = self._fit([operand], 1)
        if operand.kind == "t":
            return _Code(f"(-1.0 if {operand.text} else -0.0)", "f", operand.depth + 1)
        # * 1.0 makes a bool a float (False is 0.0), then - flips the sign (of a NaN too)
        return _Code(f"(-({operand.text} * 1.0))", "f", operand.depth + 2)

    def _logic(self, op: str, left: _Code, right: _Code) -> _Code:
        deciding = op == "||"  # the truth that decides: || is 1 on a true left, && 0 on a false
        for known, other in ((left, right), (right, left)):
            if known.const is not None:
                if is_true(known.const) == deciding:
                    return _literal(1.0 if deciding else 0.0)
                return self.as_truth(other)  # pure: dropping the constant side changes nothing
        left, right = self._fit([left, right], 1)
        kind: _Kind = "b" if left.kind == right.kind == "b" else "t"
        word = "or" if deciding else "and"
        return _Code(f"({left.text} {word} {right.text})", kind, 1 + _deepest(left, right))

    def _divide(self, numerator: _Code, denominator: _Code) -> _Code:
        numerator = self.as_number(numerator)
        if denominator.const is not None and denominator.const != 0.0:
            if numerator.kind == "b":  # True / 2.0 is a float already, but keep it plain
                numerator = self.as_float(numerator)
            numerator, denominator = self._fit([numerator, denominator], 1)
            return _Code(f"({numerator.text} / {denominator.text})", "f", 1 + _deepest(numerator))
        numerator, denominator = self._fit([numerator, self.as_number(denominator)], 1)
        return _Code(
            f"_divide({numerator.text}, {denominator.text})",
            "f",
            1 + _deepest(numerator, denominator),
        )

    def _choose(self, test: _Code, then: _Code, otherwise: _Code) -> _Code:
        if test.const is not None:
            return then if is_true(test.const) else otherwise
        if "t" in (then.kind, otherwise.kind):
            then, otherwise = self.as_float(then), self.as_float(otherwise)
        kind: _Kind = then.kind if then.kind == otherwise.kind else "n"
        test, then, otherwise = self._fit([test, then, otherwise], 1)
        return _Code(
            f"({then.text} if {test.text} else {otherwise.text})",
            kind,
            1 + _deepest(test, then, otherwise),
        )

    def _extremum(self, function: str, operands: list[_Code]) -> _Code:
        if len(operands) == 1:
            return self.as_float(operands[0])
        arguments = self._fit([self.as_number(code) for code in operands], 2)
        listed = ", ".join(code.text for code in arguments)
        depth = 1 + _deepest(*arguments)
        if len(arguments) == 2:
            helper = "_minimum" if function == "min" else "_maximum"
            return _Code(f"{helper}({listed})", "f", depth)
        return _Code(f'_extremum("{function}", ({listed}))', "f", depth + 1)

    def expression(self, expr: Expr) -> _Code:
        """The code of ``expr`` as a float (temporaries it needs are in ``statements``)."""
        codes: list[_Code] = []
        pending: list[tuple[Expr, bool]] = [(expr, False)]
        while pending:
            node, ready = pending.pop()
            kids = children(node)
            if not kids:
                codes.append(self.leaf(node))
            elif not ready:
                pending.append((node, True))
                pending.extend((kid, False) for kid in reversed(kids))
            else:
                operands = codes[len(codes) - len(kids) :]
                del codes[len(codes) - len(kids) :]
                codes.append(self.operator(node, operands))
        (code,) = self._fit([codes[-1]], 1)
        return self.as_float(code)


def _deepest(*codes: _Code) -> int:
    return max(code.depth for code in codes)


# ----------------------------------------------------------------------------- assembling functions

_Form: TypeAlias = Literal["keys", "expression", "scan", "sort_keys"]


def _attribute_positions(attribute_order: Sequence[str]) -> dict[str, int]:
    positions: dict[str, int] = {}
    for position, name in enumerate(attribute_order):
        positions.setdefault(name, position)
    return positions


def _uses(keys: Sequence[Expr], variable: str) -> int:
    return sum(
        1 for key in keys for node in walk(key) if isinstance(node, Var) and node.name == variable
    )


@dataclass(frozen=True, slots=True)
class _Key:
    statements: tuple[str, ...]
    code: _Code


@dataclass(frozen=True, slots=True)
class _Program:
    source: str
    name: str
    namespace: dict[str, object]


def _generate(
    keys: Sequence[Expr],
    constants: Mapping[str, float],
    attribute_order: Sequence[str],
    form: _Form,
) -> _Program:
    in_loop = form in ("scan", "sort_keys")
    waited, serial = "waited", "serial"
    if in_loop:
        waited = f"(now - row[{ENQUEUED_AT}])" if _uses(keys, "waited") <= 1 else "waited"
        serial = f"_as_float(row[{SERIAL}])" if _uses(keys, "serial") <= 1 else "serial"
    else:
        serial = "serial_"
    inputs = _Inputs(_attribute_positions(attribute_order), constants, waited, serial)
    generator = _Generator(inputs)
    compiled: list[_Key] = []
    for key in keys:
        code = generator.expression(key)
        compiled.append(_Key(tuple(generator.statements), code))
        generator.statements.clear()
    namespace = dict(_HELPERS)
    moment: list[str] = []  # reads of the moment, once per call
    if "now" in generator.reads or (in_loop and "waited" in generator.reads):
        moment += ["if now.__class__ is not _float:", "    now = _as_float(now)"]
    if not in_loop and "waited" in generator.reads:
        moment += ["if waited.__class__ is not _float:", "    waited = _as_float(waited)"]
    if not in_loop and "serial" in generator.reads:
        moment.append("serial_ = _as_float(serial)")
    for stage, index in generator.stages.items():
        namespace[f"_s{index}"] = stage
        moment.append(f"left{index} = _budget(budget_left, _s{index})")
    entry = _entry_reads(generator, len(attribute_order), in_loop, waited, serial)
    if form == "keys":
        body = moment + entry + [line for key in compiled for line in key.statements]
        body.append(f"return ({''.join(key.code.text + ', ' for key in compiled).rstrip()})")
        head = "def keys(values, serial, now, waited, budget_left):"
    elif form == "expression":
        body = [*moment, *entry, *compiled[0].statements, f"return {compiled[0].code.text}"]
        head = "def expression(values, serial, now, waited, budget_left):"
    elif form == "scan":
        body = _scan_body(compiled, moment, entry)
        head = "def scan(rows, now, budget_left):"
    else:
        body = _sort_keys_body(compiled, moment, entry)
        head = "def sort_keys(rows, now, budget_left):"
    source = "\n".join([head, *("    " + line for line in body)])
    return _Program(source, head[4 : head.index("(")], namespace)


def _entry_reads(
    generator: _Generator, width: int, in_loop: bool, waited: str, serial: str
) -> list[str]:
    """Statements reading the entry: its attribute values, and in a loop its wait and serial."""
    del width  # read by position: an entry's values may go on past the names the keys read
    lines = []
    used = generator.attributes
    if used:
        if in_loop:
            lines.append(f"values = row[{VALUES}]")
        lines += [f"v{position} = values[{position}]" for position in sorted(used)]
    if in_loop and waited == "waited" and "waited" in generator.reads:
        lines.append(f"waited = now - row[{ENQUEUED_AT}]")
    if in_loop and serial == "serial" and "serial" in generator.reads:
        lines.append(f"serial = _as_float(row[{SERIAL}])")
    return lines


def _indented(lines: Sequence[str], levels: int) -> list[str]:
    return ["    " * levels + line for line in lines]


def _key_lines(key: _Key, target: str) -> list[str]:
    return [*key.statements, f"{target} = {key.code.text}"]


def _scan_body(keys: Sequence[_Key], moment: list[str], entry: list[str]) -> list[str]:
    """Single key: find the first row whose key is not NaN, then compare floats with ``<``
    (a NaN never wins, -0.0 ties 0.0, a tie keeps the earlier row). Several keys:
    compare lexicographically in the total order, a key computed only on a tie."""
    lines = ["if not rows:", "    _no_rows()", *moment]
    if not keys:
        return [*lines, "return 0, ()"]
    if len(keys) == 1:
        compute = [*entry, *_key_lines(keys[0], "k0")]
        return [
            *lines,
            "rows_left = _enumerate(rows)",
            "for best_index, row in rows_left:",
            *_indented(compute, 1),
            "    if k0 == k0:",
            "        best0 = k0",
            "        break",
            "else:  # every key is NaN: the first row",
            "    row = rows[0]",
            *_indented(compute, 1),
            "    return 0, (k0,)",
            "for index, row in rows_left:",
            *_indented(compute, 1),
            "    if k0 < best0:",
            "        best0 = k0",
            "        best_index = index",
            "return best_index, (best0,)",
        ]
    first = [*entry]
    for position, key in enumerate(keys):
        first += _key_lines(key, f"best{position}")
    first += [f"nan{i} = best{i} != best{i}" for i in range(len(keys))]
    return [
        *lines,
        "rows_left = _enumerate(rows)",
        "for best_index, row in rows_left:  # the first row",
        *_indented(first, 1),
        "    break",
        "for index, row in rows_left:",
        *_indented(entry, 1),
        *_indented(_compare_level(keys, 0), 1),
        f"return best_index, ({', '.join(f'best{i}' for i in range(len(keys)))},)",
    ]


def _compare_level(keys: Sequence[_Key], level: int) -> list[str]:
    """Compare key ``level`` of the row with the best row's; on a tie, the next key."""
    k, b, n = f"k{level}", f"best{level}", f"nan{level}"
    better = [f"best{i} = k{i}" for i in range(level + 1)]
    for later in range(level + 1, len(keys)):
        better += _key_lines(keys[later], f"best{later}")
    better += [f"nan{level} = False"]
    better += [f"nan{i} = best{i} != best{i}" for i in range(level + 1, len(keys))]
    better.append("best_index = index")
    lines = [
        *_key_lines(keys[level], k),
        f"if {k} < {b} or {n} and {k} == {k}:",
        *_indented(better, 1),
    ]
    if level + 1 < len(keys):
        lines.append(f"elif {k} == {b} or {n} and {k} != {k}:")
        lines += _indented(_compare_level(keys, level + 1), 1)
    return lines


def _sort_keys_body(keys: Sequence[_Key], moment: list[str], entry: list[str]) -> list[str]:
    lines = [*moment, "made = []", "for index, row in _enumerate(rows):"]
    inner = [*entry]
    parts = []
    for position, key in enumerate(keys):
        k = f"k{position}"
        inner += _key_lines(key, k)
        inner += [
            f"if {k} == {k}:",
            f"    o{position} = 0",
            f"    {k} = {k} + 0.0",
            "else:",
            f"    o{position} = 1",
            f"    {k} = 0.0",
        ]
        parts += [f"o{position}", k]
    inner.append(f"made.append(({', '.join([*parts, 'index'])},))")
    return [*lines, *_indented(inner, 1), "return made"]


def generated_source(
    keys: Sequence[Expr],
    constants: Mapping[str, float],
    attribute_order: Sequence[str],
    form: Literal["keys", "expression", "scan", "sort_keys"],
) -> str:
    """The Python source :func:`compile_keys` (``"keys"``), :func:`compile_expression`
    (``"expression"``, of ``keys[0]``), :func:`compile_scan` or :func:`compile_sort_keys`
    generates, for reading and debugging.

    >>> from policy.waiting.parse import parse_expression
    >>> key = parse_expression("-flag / 0").unwrap()
    >>> generated_source([key], {}, ("flag",), "expression").splitlines()
    ... # doctest: +NORMALIZE_WHITESPACE
    ['def expression(values, serial, now, waited, budget_left):',
     '    v0 = values[0]',
     '    return _divide((-(v0 * 1.0)), 0.0)']
    """
    return _generate(keys, constants, attribute_order, form).source


class _Uncompilable(Exception):
    """``compile`` refused the generated source (see the module docstring)."""


def _function(program: _Program) -> Callable[..., object]:
    """The function ``program`` defines, made from its code object (nothing is executed)."""
    try:
        module = compile(program.source, f"<policy.waiting.compiled {program.name}>", "exec")
    except (SyntaxError, RecursionError, MemoryError, OverflowError, ValueError) as error:
        raise _Uncompilable(str(error)) from error
    code = next(
        const
        for const in module.co_consts
        if isinstance(const, CodeType) and const.co_name == program.name
    )
    return FunctionType(code, program.namespace, program.name)


def _compiled(
    keys: Sequence[Expr],
    constants: Mapping[str, float],
    attribute_order: Sequence[str],
    form: _Form,
) -> Callable[..., object] | None:
    """The compiled function, or None when ``compile`` refuses its source."""
    try:
        return _function(_generate(keys, constants, attribute_order, form))
    except _Uncompilable:
        return None


# ----------------------------------------------------------------------------- reference fallbacks


def _reference_keys(
    keys: Sequence[Expr], constants: Mapping[str, float], attribute_order: Sequence[str]
) -> KeyFunction:
    """A key function that calls ``evaluate`` (when ``compile`` refuses the source)."""
    trees = tuple(keys)
    fixed = dict(constants)
    positions = _attribute_positions(attribute_order)

    def key_function(
        values: Values,
        serial: object,
        now: float,
        waited: float,
        budget_left: Mapping[str, float],
    ) -> tuple[float, ...]:
        attributes = {name: values[position] for name, position in positions.items()}
        scope = Scope(attributes, cast(int, serial), now, waited, budget_left, fixed)
        return tuple(evaluate(key, scope) for key in trees)

    return key_function


def _looping_scan(key_function: KeyFunction) -> ScanFunction:
    """A scan by a plain loop over ``key_function`` and ``key_list_order``."""

    def best(
        rows: Sequence[Row], now: float, budget_left: Mapping[str, float]
    ) -> tuple[int, tuple[float, ...]]:
        if not rows:
            _no_rows()
        now = as_float(now)
        best_index, best_order = 0, key_list_order(())
        best_keys: tuple[float, ...] = ()
        for index, row in enumerate(rows):
            keys = key_function(row[VALUES], row[SERIAL], now, now - row[ENQUEUED_AT], budget_left)
            order = key_list_order(keys)
            if index == 0 or order < best_order:
                best_index, best_keys, best_order = index, keys, order
        return best_index, best_keys

    return best


def _looping_sort_keys(key_function: KeyFunction) -> SortKeysFunction:
    """Sort keys by a plain loop over ``key_function`` and :func:`sort_key`."""

    def sort_keys(
        rows: Sequence[Row], now: float, budget_left: Mapping[str, float]
    ) -> list[tuple[float | int, ...]]:
        now = as_float(now)
        return [
            (
                *sort_key(
                    key_function(row[VALUES], row[SERIAL], now, now - row[ENQUEUED_AT], budget_left)
                ),
                index,
            )
            for index, row in enumerate(rows)
        ]

    return sort_keys


# ----------------------------------------------------------------------------- the public compilers


def compile_keys(
    keys: Sequence[Expr], constants: Mapping[str, float], attribute_order: Sequence[str]
) -> KeyFunction:
    """``key_function(values, serial, now, waited, budget_left)`` -> the keys' values,
    each exactly ``evaluate(key, scope)`` for the scope those arguments describe.

    ``values`` holds one value per name of ``attribute_order`` (see :data:`Values`,
    :func:`entry_values`); a key reading an attribute not in the order, or a
    constant not in ``constants``, reads NaN, as ``evaluate`` does.

    >>> from policy.waiting.parse import parse_expression
    >>> keys = [parse_expression(text, {"k"}).unwrap() for text in ("-a", "a + a", "a / k")]
    >>> compile_keys(keys, {"k": -0.0}, ("a",))((False,), 0, 0.0, 0.0, {})
    (-0.0, 0.0, nan)
    """
    made = _compiled(keys, constants, attribute_order, "keys")
    if made is None:
        return _reference_keys(keys, constants, attribute_order)
    return cast(KeyFunction, made)


def compile_expression(
    expr: Expr, constants: Mapping[str, float], attribute_order: Sequence[str]
) -> ExpressionFunction:
    """``expression(values, serial, now, waited, budget_left)`` -> exactly the value of
    ``evaluate(expr, scope)`` (see :func:`compile_keys`).

    >>> from policy.waiting.parse import parse_expression
    >>> compiled = compile_expression(parse_expression("min(0, -x)").unwrap(), {}, ("x",))
    >>> compiled((0.0,), 0, 0.0, 0.0, {}), compiled((math.nan,), 0, 0.0, 0.0, {})
    (-0.0, nan)
    """
    made = _compiled([expr], constants, attribute_order, "expression")
    if made is None:
        reference = _reference_keys([expr], constants, attribute_order)

        def expression(
            values: Values,
            serial: object,
            now: float,
            waited: float,
            budget_left: Mapping[str, float],
        ) -> float:
            return reference(values, serial, now, waited, budget_left)[0]

        return expression
    return cast(ExpressionFunction, made)


def compile_scan(
    keys: Sequence[Expr], constants: Mapping[str, float], attribute_order: Sequence[str]
) -> ScanFunction:
    """``best(rows, now, budget_left)`` -> ``(index, key values)`` of the row with the
    smallest key list in the total order (``key_list_order``), ties to the smallest
    index; a row's (:mod:`~policy.waiting.fast.rows`) ``waited`` is ``now`` less its
    ``enqueued_at``. ``rows`` must not be
    empty (``ValueError``). With no keys, the first row wins.

    >>> from policy.waiting.entry import make_entry
    >>> from policy.waiting.parse import parse_expression
    >>> best = compile_scan([parse_expression("prompt > 128 ? 1 : 0").unwrap()], {}, ["prompt"])
    >>> best([make_entry(k, {"prompt": p}, k, 0.0) for k, p in enumerate([256.0, 64.0, 9.0])],
    ...      1.0, {})
    (1, (0.0,))
    """
    if len(keys) > MAX_INLINE_KEYS:
        return _looping_scan(compile_keys(keys, constants, attribute_order))
    made = _compiled(keys, constants, attribute_order, "scan")
    if made is None:
        return _looping_scan(_reference_keys(keys, constants, attribute_order))
    return cast(ScanFunction, made)


def compile_sort_keys(
    keys: Sequence[Expr], constants: Mapping[str, float], attribute_order: Sequence[str]
) -> SortKeysFunction:
    """``sort_keys(rows, now, budget_left)`` -> for each row, ``sort_key(key values) +
    (index,)``: ``heapq.heapify`` of the list pops the rows in selection order.

    >>> from policy.waiting.entry import make_entry
    >>> from policy.waiting.parse import parse_expression
    >>> sort_keys = compile_sort_keys([parse_expression("1 / x").unwrap()], {}, ["x"])
    >>> sort_keys([make_entry(k, {"x": x}, k, 0.0) for k, x in enumerate([0.0, -0.0, math.nan])],
    ...           0.0, {})
    [(0, inf, 0), (0, -inf, 1), (1, 0.0, 2)]
    """
    made = _compiled(keys, constants, attribute_order, "sort_keys")
    if made is None:
        return _looping_sort_keys(_reference_keys(keys, constants, attribute_order))
    return cast(SortKeysFunction, made)
