"""Which selection path a key list allows: FIFO, static keys, class heads, or a full scan.

Theory of operation
-------------------

Selection evaluates every key of every waiting entry at the moment ``(now,
budget_left)``, with ``waited = now - enqueued_at``, and takes the smallest key
list in the total order of :func:`~policy.waiting.evaluate.key_list_order`
(call it *T*: numeric, -0.0 equal to 0.0, NaN equal to NaN and above +inf),
ties to the earlier entry. :func:`lane_plan` proves, for some key lists, that a
scan of a few *class heads* gives the same answer.

**Components.** A key is cut at its maximal sub-trees that read no ``waited``,
``now`` or ``budget_left``; those among them that read an attribute or
``serial`` are the *components*. A component whose parent reads only its truth
(the operand of ``!``, ``&&``, ``||``, the test of ``?:``) is a *truth*
component and stands for 0.0 or 1.0; any other stands for its value. Outside
the components a key reads only literals, ``let`` constants, ``waited``,
``now`` and ``budget_left``; the parent of a component sees nothing of it but
its value (or truth). Entries whose component values are equal (under
:func:`class_value`: NaN equals NaN, -0.0 differs from 0.0, since ``1/x`` tells
them apart) therefore compute the same key list from the same ``(waited, now,
budget_left)``: the components' values are the entry's *class* (contract 1).

**Value sets.** Each component's values are computed exactly, with the
reference operations (``divide``, ``extremum``, ``is_true``), over the finite
sets of its operands: literals and constants are one value, a comparison,
``!``, ``&&`` and ``||`` give at most {0, 1} whatever they read, ``?:`` the
union of the branches its test can choose; an attribute or ``serial`` read
for its value has no finite set, so a component that needs one has none and
there is no plan (nor for a set of more than :data:`MAX_CLASSES` values, or one
that would take more than 4096 operand combinations to compute). A truth
component's set is its truths. The product of the
set sizes bounds the number of classes; above :data:`MAX_CLASSES` there is no
plan.

**Age.** For every combination of component values (a superset of the classes
that occur), the rest of each key is run in an abstract domain that describes
the key, in every moment, as a function of ``waited`` ``w`` over the non-NaN
floats, ±inf included (``now`` and each ``budget_left`` are arbitrary floats,
NaN and ±inf included, and independent of ``w``). An abstract value is a
direction, numeric bounds and a NaN flag:

- ``const``: in every moment the value does not depend on ``w`` (the same
  float, sign of zero included);
- ``up`` (``down``): in every moment, either the value is NaN for every ``w``,
  or it is never NaN and numerically non-decreasing (non-increasing) in ``w``
  (``w1 >= w2`` includes -0.0 and 0.0 both ways, so both give numerically equal
  values); ``const`` is both ``up`` and ``down``;
- ``any``: no claim;
- ``low <= value <= high`` for every value that is not NaN, and ``nan`` when a
  value may be NaN. A value known exactly (a literal, a constant, a component
  value of the combination) is carried as such.

The rules (each sound by the case split in its comment): ``waited`` is ``up``
and never NaN; ``now`` and ``budget_left`` are ``const`` with any value; ``-x``
flips the direction; ``x + y`` keeps a common direction only when ``+inf`` and
``-inf`` cannot meet (by the bounds); ``x * c`` and ``x / c`` keep or flip the
direction of ``x`` for a constant ``c`` that is finite and of one sign
(strictly); ``min``/``max`` keep a common direction (a NaN argument makes the
result NaN for every ``w`` of that moment); ``<``, ``<=``, ``>``, ``>=`` are
monotone in each operand, so they follow the direction of ``x - y`` (no
subtraction happens: an infinity cannot spoil them); ``==`` and ``!=`` of a
moving operand are ``any``. The truth of an ``up`` value that is never below 0
is ``up`` (false while 0, true once positive, true when NaN), of one never above 0
``down``; ``!``, ``&&`` and ``||`` are monotone in the truths; a known-false
``&&`` operand (known-true ``||`` operand) decides. ``t ? a : b`` with a
constant truth of ``t`` takes the common direction of the branches; with an
``up`` truth it is ``b`` for smaller ``w`` and ``a`` for larger, so it is
``down`` when both are ``down`` or ``const``, never NaN, and every value of
``a`` is at most every value of ``b`` (``a.high <= b.low``); symmetrically for
``up`` and for a ``down`` truth. Anything else is ``any``.

A key is *never worse with age* when it is ``const`` or ``down`` in every
combination: then in every moment it is NaN for every ``w`` (equal), or
numerically non-increasing and never NaN, which is non-increasing in *T*
(contract 2). A key list whose keys all are is never worse with age, because
*T* on lists is lexicographic and a list that is no worse in every place is no
worse as a whole (contract 3). So within one class, of two entries the one
that has waited longer (the earlier one, when along the queue ``enqueued_at``
never decreases and is finite: ``now - e`` is monotone in ``e`` under
rounding) is never worse; it also wins ties. (When ``now`` is NaN, every
``waited`` is NaN: the entries of a class then have equal key lists, and the
earliest wins the tie.) The earliest entry of each class wins or ties within
its class, and a scan of the class heads, ties to the earlier head, selects the
entry the full scan selects: the earliest entry with the smallest key list is
the head of its class, since its head is no later and no worse.

Everything here is conservative: a rule that cannot prove a direction says
``any``, and then :func:`lane_plan` returns ``None``. Trees are walked with
explicit stacks, as everywhere in the package.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Final, Literal, NamedTuple, TypeAlias

from policy.waiting.evaluate import divide, extremum, is_true
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
from policy.waiting.modes import Path, Timing
from policy.waiting.numbers import as_float

__all__ = [
    "MAX_CLASSES",
    "Component",
    "LanePlan",
    "class_value",
    "key_path",
    "lane_plan",
    "reads_budget",
]

#: Most classes a plan may have. A selection on the lanes path evaluates the keys
#: of one head per class, so beyond a few dozen classes a scan of a typical queue
#: costs about as much; the analysis also runs once per combination of component
#: values, and 64 keeps it to a few milliseconds for the largest plans.
MAX_CLASSES: Final = 64

#: Most operand combinations computed for one node of a component's value set.
_COMBINATIONS: Final = 4096

_INF: Final = math.inf
_NAN: Final = math.nan


@dataclass(frozen=True, slots=True)
class Component:
    """A maximal sub-tree reading no ``waited``, ``now`` or ``budget_left`` (and
    reading an attribute or ``serial``); ``truth``: its parent reads only its truth,
    so the component stands for 1.0 (``value != 0``) or 0.0."""

    expr: Expr
    truth: bool


@dataclass(frozen=True, slots=True)
class LanePlan:
    """The components whose values (:func:`class_value`) make an entry's class, and
    the product of their value-set sizes (at most :data:`MAX_CLASSES`)."""

    components: tuple[Component, ...]
    classes_bound: int


def class_value(value: float) -> object:
    """A hashable canonical form of one component value: every NaN is the same,
    -0.0 is not 0.0 (``1/x`` tells them apart), and numbers are read as floats.

    >>> class_value(math.nan) == class_value(-math.nan), class_value(1) == class_value(1.0)
    (True, True)
    >>> class_value(-0.0) == class_value(0.0)
    False
    """
    number = as_float(value)
    if math.isnan(number):
        return ("nan",)
    return (number, math.copysign(1.0, number))


def _distinct(values: Iterable[float]) -> tuple[float, ...]:
    """``values`` without repeats under :func:`class_value`, in first-seen order."""
    seen: dict[object, float] = {}
    for value in values:
        seen.setdefault(class_value(value), value)
    return tuple(seen.values())


# ----------------------------------------------------------------------------- exact operations


def _truth(value: float) -> float:
    return 1.0 if is_true(value) else 0.0


def _unary(op: str, value: float) -> float:
    return -value if op == "-" else 1.0 - _truth(value)


def _binary(op: str, a: float, b: float) -> float:
    """``a op b`` exactly as :func:`~policy.waiting.evaluate.evaluate` computes it."""
    match op:
        case "+":
            return a + b
        case "-":
            return a - b
        case "*":
            return a * b
        case "/":
            return divide(a, b)
        case "<":
            return 1.0 if a < b else 0.0
        case "<=":
            return 1.0 if a <= b else 0.0
        case ">":
            return 1.0 if a > b else 0.0
        case ">=":
            return 1.0 if a >= b else 0.0
        case "==":
            return 1.0 if a == b else 0.0
        case "!=":
            return 1.0 if a != b else 0.0
        case "&&":
            return 1.0 if is_true(a) and is_true(b) else 0.0
        case _:  # "||"
            return 1.0 if is_true(a) or is_true(b) else 0.0


def _constant(name: str, constants: Mapping[str, float]) -> float:
    found = constants.get(name)
    return _NAN if found is None else as_float(found)


# ----------------------------------------------------------------------------- tree walks


def _post_order(expr: Expr) -> Iterator[tuple[Expr, bool]]:
    """Every node of ``expr`` after its children, with whether its parent reads
    only its truth; no recursion."""
    pending: list[tuple[Expr, bool, bool]] = [(expr, False, False)]
    while pending:
        node, truth, expanded = pending.pop()
        kids = children(node)
        if expanded or not kids:
            yield node, truth
            continue
        pending.append((node, truth, True))
        for index in range(len(kids) - 1, -1, -1):
            pending.append((kids[index], _truth_position(node, index), False))


def _truth_position(parent: Expr, index: int) -> bool:
    """Whether ``parent`` reads only the truth of its child number ``index``."""
    match parent:
        case Unary("!", _):
            return True
        case Binary("&&" | "||", _, _):
            return True
        case Cond():
            return index == 0
        case _:
            return False


def _reads(keys: Iterable[Expr]) -> dict[int, tuple[bool, bool]]:
    """For each node (by ``id``): whether it reads the moment (``waited``, ``now``,
    ``budget_left``), and whether it reads the entry (an attribute, ``serial``)."""
    found: dict[int, tuple[bool, bool]] = {}
    for key in keys:
        for node, _ in _post_order(key):
            if id(node) in found:
                continue
            moment = isinstance(node, BudgetLeft) or (
                isinstance(node, Var) and node.name != "serial"
            )
            entry = isinstance(node, Attr | Var) and not moment
            for child in children(node):
                child_moment, child_entry = found[id(child)]
                moment, entry = moment or child_moment, entry or child_entry
            found[id(node)] = (moment, entry)
    return found


def _components(key: Expr, reads: Mapping[int, tuple[bool, bool]]) -> list[Component]:
    """The components of ``key``, left to right (pre-order), with repeats."""
    found: list[Component] = []
    pending: list[tuple[Expr, bool]] = [(key, False)]
    while pending:
        node, truth = pending.pop()
        moment, entry = reads[id(node)]
        if not moment:
            if entry:
                found.append(Component(node, truth))
            continue
        kids = children(node)
        for index in range(len(kids) - 1, -1, -1):
            pending.append((kids[index], _truth_position(node, index)))
    return found


# ----------------------------------------------------------------------------- value sets

_Values: TypeAlias = tuple[float, ...] | None  # None: not a known finite set
_BOTH: Final = (0.0, 1.0)


def _truths(values: _Values) -> tuple[float, ...]:
    return _BOTH if values is None else _distinct(_truth(value) for value in values)


def _combined(op: str, operands: Sequence[_Values]) -> _Values:
    """Every value of ``op`` over every combination of its operands' values."""
    if op in ("&&", "||"):
        return _distinct(_binary(op, a, b) for a, b in product(*map(_truths, operands)))
    if op == "!":
        return _distinct(1.0 - t for t in _truths(operands[0]))
    known = [values for values in operands if values is not None]
    if len(known) < len(operands):
        return _BOTH if op in ("<", "<=", ">", ">=", "==", "!=") else None
    if math.prod(len(values) for values in known) > _COMBINATIONS:
        return None
    match op:
        case "-" if len(known) == 1:
            found = _distinct(-value for value in known[0])
        case "min" | "max":
            found = _distinct(extremum(op, combination) for combination in product(*known))
        case _:
            found = _distinct(_binary(op, a, b) for a, b in product(*known))
    return found if len(found) <= MAX_CLASSES else None


def _value_set(expr: Expr, constants: Mapping[str, float]) -> _Values:
    """A finite set holding every value ``expr`` (reading no moment) takes for any
    entry, or None when none is known."""
    done: list[_Values] = []
    for node, _ in _post_order(expr):
        count = len(children(node))
        operands = done[len(done) - count :] if count else []
        del done[len(done) - count :]
        found: _Values
        match node:
            case Num(value):
                found = (value,)
            case Bool(value):
                found = (1.0 if value else 0.0,)
            case Const(name):
                found = (_constant(name, constants),)
            case Unary(op, _):
                found = _combined(op, operands)
            case Binary(op, _, _):
                found = _combined(op, operands)
            case Call(function, _):
                found = _combined(function, operands)
            case Cond():
                test, then, otherwise = operands
                chosen = [then if truth == 1.0 else otherwise for truth in _truths(test)]
                found = None
                if all(values is not None for values in chosen):
                    found = _distinct(value for values in chosen for value in values or ())
            case _:  # an attribute or serial: any number
                found = None
        done.append(found)
    return done[-1]


def _component_values(component: Component, constants: Mapping[str, float]) -> _Values:
    values = _value_set(component.expr, constants)
    return _truths(values) if component.truth else values


# ----------------------------------------------------------------------------- the abstract domain

Direction: TypeAlias = Literal["const", "up", "down", "any"]


class _Shape(NamedTuple):  # a tuple: built for every node of every combination
    """What is known of a sub-tree as a function of ``waited``, in every moment
    (see the module docstring): direction, bounds of its non-NaN values, whether it
    may be NaN, and its value when that is one known float."""

    direction: Direction
    low: float = -_INF
    high: float = _INF
    nan: bool = True
    known: bool = False
    value: float = _NAN


_ANY: Final = _Shape("any")
_CONST: Final = _Shape("const")
_WAITED: Final = _Shape("up", nan=False)

#: The key directions that are never worse with age.
_NEVER_WORSE: Final[frozenset[Direction]] = frozenset({"const", "down"})


def _exactly(value: float) -> _Shape:
    if math.isnan(value):
        return _Shape("const", known=True, value=value)
    return _Shape("const", value, value, nan=False, known=True, value=value)


def _boolean(direction: Direction) -> _Shape:
    """A 0/1 value (never NaN) moving in ``direction``."""
    return _ANY if direction == "any" else _Shape(direction, 0.0, 1.0, nan=False)


def _flip(direction: Direction) -> Direction:
    return "down" if direction == "up" else "up" if direction == "down" else direction


def _join(directions: Iterable[Direction]) -> Direction:
    """The direction of a monotone combination of values moving in ``directions``:
    ``const`` moves with anything; ``up`` with ``down`` (or ``any``) is ``any``."""
    moving = {direction for direction in directions if direction != "const"}
    if not moving:
        return "const"
    return moving.pop() if len(moving) == 1 else "any"


def _truth_direction(shape: _Shape) -> Direction:
    """The direction of the truth (0 or 1) of ``shape``.

    For ``up`` values never below 0 the truth is false while the value is 0, and
    true from its first positive value on (or for every ``w`` when NaN): ``up``.
    For ``up`` values never above 0 it is true while negative, false from 0 on:
    ``down``. Symmetrically for ``down``. Anything else may change both ways."""
    if shape.direction in ("const", "any"):
        return shape.direction
    if shape.low >= 0.0:
        return shape.direction
    if shape.high <= 0.0:
        return _flip(shape.direction)
    return "any"


def _truth_shape(shape: _Shape) -> _Shape:
    if shape.known:
        return _exactly(_truth(shape.value))
    return _boolean(_truth_direction(shape))


def _negated(shape: _Shape) -> _Shape:
    # -x reverses the numeric order and keeps NaN as NaN (in every moment).
    if shape.known:
        return _exactly(-shape.value)
    if shape.direction == "any":
        return _ANY
    return _Shape(_flip(shape.direction), -shape.high, -shape.low, shape.nan)


def _sum(x: _Shape, y: _Shape) -> _Shape:
    """``x + y`` (and ``x - y`` as ``x + (-y)``, which IEEE 754 defines it to be).

    In a moment where one operand is NaN for every ``w``, so is the sum. Otherwise
    both are never NaN, the sum is NaN only for +inf + -inf, which the bounds rule
    out, and IEEE addition (rounding included) is monotone in each operand."""
    direction = _join((x.direction, y.direction))
    if direction == "any":
        return _ANY
    if (x.high == _INF and y.low == -_INF) or (x.low == -_INF and y.high == _INF):
        return _CONST if direction == "const" else _ANY
    return _Shape(direction, x.low + y.low, x.high + y.high, x.nan or y.nan)


def _sign(shape: _Shape) -> int:
    """1 (-1) if every non-NaN value of ``shape`` is finite and above (below) 0, else 0."""
    if shape.low > 0.0 and shape.high < _INF:
        return 1
    if shape.low > -_INF and shape.high < 0.0:
        return -1
    return 0


def _scaled(op: str, x: _Shape, y: _Shape) -> _Shape:
    """``x * y`` or ``x / y`` when one side moves and the other is a constant factor.

    A factor (divisor) ``c`` that is finite and not 0 never makes NaN (``inf * c``,
    ``inf / c`` are infinities), and ``v * c``, ``v / c`` are monotone in ``v``
    (rounding is), increasing for ``c > 0``. A NaN factor is NaN for every ``w``."""
    if x.direction == "const" and y.direction == "const":
        return _CONST
    if op == "*" and x.direction == "const":
        x, y = y, x
    if x.direction == "any" or y.direction != "const":
        return _ANY  # v * w, c / v: not monotone in general
    sign = _sign(y)
    if sign == 0:
        return _ANY
    corners = [_binary(op, a, b) for a in (x.low, x.high) for b in (y.low, y.high)]
    direction = x.direction if sign > 0 else _flip(x.direction)
    return _Shape(direction, min(corners), max(corners), x.nan or y.nan)


def _compared(op: str, x: _Shape, y: _Shape) -> _Shape:
    """A comparison: 0 or 1, never NaN.

    In a moment where an operand is NaN for every ``w`` the result is 0 throughout.
    Otherwise ``x >= y`` and ``x > y`` can only turn true as ``x`` grows or ``y``
    shrinks: they follow the direction of ``x - y`` (``x`` up, ``y`` down or
    constant is up), ``<`` and ``<=`` the opposite; ``==``/``!=`` of a moving
    operand may change both ways."""
    difference = _join((x.direction, _flip(y.direction)))
    if op in ("==", "!="):
        return _boolean("const") if difference == "const" else _ANY
    return _boolean(difference if op in (">", ">=") else _flip(difference))


def _logic(op: str, x: _Shape, y: _Shape) -> _Shape:
    """``&&``/``||``: 0 or 1 by the truths; an operand known false (``&&``) or true
    (``||``) decides, one known the other way leaves the truth of the other; else
    monotone in both truths."""
    deciding = op == "||"
    for this, other in ((x, y), (y, x)):
        if this.known:
            if is_true(this.value) == deciding:
                return _exactly(1.0 if deciding else 0.0)
            return _truth_shape(other)
    return _boolean(_join((_truth_direction(x), _truth_direction(y))))


def _chosen(test: _Shape, then: _Shape, otherwise: _Shape) -> _Shape:
    """``test ? then : otherwise``."""
    if test.known:
        return then if is_true(test.value) else otherwise
    if then.known and otherwise.known and class_value(then.value) == class_value(otherwise.value):
        return then
    truth = _truth_direction(test)
    low, high = min(then.low, otherwise.low), max(then.high, otherwise.high)
    if truth == "const":  # in each moment one branch for every w
        direction = _join((then.direction, otherwise.direction))
        if direction == "any":
            return _ANY
        return _Shape(direction, low, high, then.nan or otherwise.nan)
    if truth == "any" or then.nan or otherwise.nan:
        return _ANY
    # In each moment, ``early`` for the smaller w, ``late`` for the larger ones.
    early, late = (otherwise, then) if truth == "up" else (then, otherwise)
    moves = _join((early.direction, late.direction))
    if moves in ("const", "down") and late.high <= early.low:
        return _Shape("down", low, high, nan=False)
    if moves in ("const", "up") and early.high <= late.low:
        return _Shape("up", low, high, nan=False)
    return _ANY


def _extremum(function: str, args: Sequence[_Shape]) -> _Shape:
    """``min``/``max``: NaN for every ``w`` of a moment if an argument is; else the
    extremum of monotone functions moving one way moves that way."""
    direction = _join(arg.direction for arg in args)
    if direction == "any":
        return _ANY
    pick = min if function == "min" else max
    return _Shape(
        direction,
        pick(arg.low for arg in args),
        pick(arg.high for arg in args),
        any(arg.nan for arg in args),
    )


def _node_shape(node: Expr, operands: Sequence[_Shape], constants: Mapping[str, float]) -> _Shape:
    if operands and all(operand.known for operand in operands):
        values = [operand.value for operand in operands]
        match node:
            case Unary(op, _):
                return _exactly(_unary(op, values[0]))
            case Binary(op, _, _):
                return _exactly(_binary(op, values[0], values[1]))
            case Call(function, _):
                return _exactly(extremum(function, values))
            case _:  # Cond
                return operands[1] if is_true(values[0]) else operands[2]
    match node:
        case Num(value):
            return _exactly(value)
        case Bool(value):
            return _exactly(1.0 if value else 0.0)
        case Const(name):
            return _exactly(_constant(name, constants))
        case Var("waited"):
            return _WAITED
        case Var("now") | BudgetLeft():
            return _CONST
        case Unary("-", _):
            return _negated(operands[0])
        case Unary(_, _):  # "!"
            return _boolean(_flip(_truth_direction(operands[0])))
        case Binary("+", _, _):
            return _sum(operands[0], operands[1])
        case Binary("-", _, _):
            return _sum(operands[0], _negated(operands[1]))
        case Binary("*" | "/", _, _):
            return _scaled(node.op, operands[0], operands[1])
        case Binary("&&" | "||", _, _):
            return _logic(node.op, operands[0], operands[1])
        case Binary(op, _, _):
            return _compared(op, operands[0], operands[1])
        case Cond():
            return _chosen(operands[0], operands[1], operands[2])
        case Call(function, _):
            return _extremum(function, operands)
        case _:  # an attribute or serial outside every component: never happens
            return _ANY


@dataclass(frozen=True, slots=True)
class _Apply:
    """Pending: the shape of ``node`` from the shapes of its children on top of the stack."""

    node: Expr


@dataclass(frozen=True, slots=True)
class _Choose:
    """Pending: the conditional ``node`` once the shape of its test is known."""

    node: Cond


def _key_shape(
    key: Expr,
    substitute: Mapping[tuple[int, bool], float],
    constants: Mapping[str, float],
) -> _Shape:
    """The shape of ``key`` with each component (by ``id`` and truth position)
    replaced by its value in ``substitute``. A conditional whose test is known
    stands for its chosen branch: the other one is not looked at."""
    done: list[_Shape] = []
    pending: list[tuple[Expr, bool] | _Apply | _Choose] = [(key, False)]
    while pending:
        step = pending.pop()
        if isinstance(step, _Apply):
            count = len(children(step.node))
            operands = done[len(done) - count :]
            del done[len(done) - count :]
            done.append(_node_shape(step.node, operands, constants))
            continue
        if isinstance(step, _Choose):
            test = done[-1]
            cond = step.node
            if test.known:
                done.pop()
                pending.append((cond.then if is_true(test.value) else cond.otherwise, False))
            else:
                pending += [_Apply(cond), (cond.otherwise, False), (cond.then, False)]
            continue
        node, truth = step
        found = substitute.get((id(node), truth))
        if found is not None:
            done.append(_exactly(found))
            continue
        kids = children(node)
        if not kids:
            done.append(_node_shape(node, (), constants))
        elif isinstance(node, Cond):
            pending += [_Choose(node), (node.test, True)]
        else:
            pending.append(_Apply(node))
            for index in range(len(kids) - 1, -1, -1):
                pending.append((kids[index], _truth_position(node, index)))
    return done[-1]


# ----------------------------------------------------------------------------- the public functions


def lane_plan(keys: Sequence[Expr], constants: Mapping[str, float]) -> LanePlan | None:
    """The components that make an entry's class, if within every class the key
    list is proved never worse for an entry that has waited longer; else None.

    >>> from policy.waiting.parse import parse_expression, unparse
    >>> from policy.waiting.policies import ASCEND_LANES_KEY
    >>> constants = {"short_tokens": 128.0, "max_wait": 3.0}
    >>> ascend = parse_expression(ASCEND_LANES_KEY, constants).unwrap()
    >>> plan = lane_plan([ascend], constants)
    >>> [(unparse(component.expr), component.truth) for component in plan.components]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('immediate', True), ('prompt > short_tokens && max_wait > 0', True),
     ('prompt <= short_tokens ? 2 : 3', False)]
    >>> plan.classes_bound
    8
    >>> [lane_plan([parse_expression(text).unwrap()], {}) is None
    ...  for text in ("-waited", "waited", "-waited + prompt", "immediate ? 0 : -waited")]
    [False, True, True, False]
    """
    reads = _reads(keys)
    slots: dict[Component, int] = {}  # each distinct component, numbered
    value_sets: list[tuple[float, ...]] = []
    bound = 1
    per_key: list[list[tuple[tuple[int, bool], int]]] = []  # (place in the key, slot)
    for key in keys:
        places: list[tuple[tuple[int, bool], int]] = []
        for component in _components(key, reads):
            slot = slots.get(component)
            if slot is None:
                values = _component_values(component, constants)
                if values is None:
                    return None
                bound *= len(values)
                if bound > MAX_CLASSES:
                    return None
                slot = slots[component] = len(value_sets)
                value_sets.append(values)
            places.append(((id(component.expr), component.truth), slot))
        per_key.append(places)
    for key, places in zip(keys, per_key, strict=True):
        own = list(dict.fromkeys(slot for _, slot in places))
        for combination in product(*(value_sets[slot] for slot in own)):
            value_of = dict(zip(own, combination, strict=True))
            substitute = {place: value_of[slot] for place, slot in places}
            if _key_shape(key, substitute, constants).direction not in _NEVER_WORSE:
                return None
    return LanePlan(tuple(slots), bound)


def _reads_moment(key: Expr) -> bool:
    return any(
        isinstance(node, BudgetLeft) or (isinstance(node, Var) and node.name != "serial")
        for node in walk(key)
    )


def reads_budget(keys: Sequence[Expr]) -> bool:
    """Whether some key reads ``budget_left(stage)``.

    >>> from policy.waiting.parse import parse_expression
    >>> reads_budget([parse_expression("waited").unwrap()])
    False
    >>> reads_budget([Num(1.0), parse_expression("-budget_left(engine)").unwrap()])
    True
    """
    return any(isinstance(node, BudgetLeft) for key in keys for node in walk(key))


def key_path(keys: Sequence[Expr], constants: Mapping[str, float], timing: Timing) -> Path:
    """How a selection under these keys may be computed.

    ``"fifo"``: no keys. ``"static"``: keys computed at enqueue, or reading no
    ``waited``, ``now`` or ``budget_left`` (fixed per entry). ``"lanes"``:
    :func:`lane_plan` gives a plan, so the heads of the classes suffice.
    ``"scan"``: every entry must be evaluated.

    >>> from policy.waiting.parse import parse_expression
    >>> def path(text, timing="selection"):
    ...     return key_path([parse_expression(text).unwrap()], {}, timing)
    >>> key_path([], {}, "selection"), path("prompt"), path("now", "enqueue")
    ('fifo', 'static', 'static')
    >>> path("immediate ? 0 : -waited"), path("waited"), path("waited * 0")
    ('lanes', 'scan', 'scan')
    """
    return path_and_plan(keys, constants, timing)[0]


def path_and_plan(
    keys: Sequence[Expr], constants: Mapping[str, float], timing: Timing
) -> tuple[Path, LanePlan | None]:
    """:func:`key_path` with the lane plan it found (None off the ``lanes`` path),
    so that a caller needing both analyses the keys once."""
    if not keys:
        return "fifo", None
    if timing == "enqueue" or not any(_reads_moment(key) for key in keys):
        return "static", None
    plan = lane_plan(keys, constants)
    return ("lanes", plan) if plan is not None else ("scan", None)
