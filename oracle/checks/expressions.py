"""Exhaustive check of key evaluation: every small expression tree, kernel against spec.

Every tree within the size bound is built directly from the kernel's node
classes and evaluated twice at every point of the domain: by the kernel
(``policy.waiting.evaluate``, in a ``Scope`` like the one selection builds)
and by the spec (``oracle.spec.expressions.interpret`` of the tree's JSON
form ``policy.waiting.expr_to_json(tree)``). The two values must be the same
IEEE value (``same_value``: NaN equals NaN, -0.0 differs from 0.0), and the
kernel must not raise.

**Trees.** Leaves: the literals -1, -0 (-0.0), 0, 1 (literals are finite;
NaN and the infinities come from the attribute, from ``1/0`` or ``0/0``, and
from a stage the moment lacks); the attribute ``a``; ``waited``; ``now``;
``budget_left(engine)``; and an undeclared attribute ``u`` that no entry
carries (it reads NaN). Operators: prefix ``-`` and ``!``; binary ``+ - * /
< <= > >= == != && ||``; ``c ? x : y``; ``min`` and ``max`` with one and with
two arguments. A tree's size is its number of nodes; every tree of each size
up to the level's bound is enumerated, smaller trees memoized (9 trees of 1
node, 36 of 2, 1,278 of 3, 14,913 of 4, 408,600 of 5). Not covered: the
literals ``true``/``false``, ``let`` constants, ``serial``, and ``min``/``max``
with three or more arguments.

**Points.** ``a`` in NaN, -inf, -1.0, -0.0, 0.0, 1.0, +inf, each in the
environments (entry enqueued at ``now - waited``):

===  ======  ========  =========================
env  now     waited    budget_left(engine)
===  ======  ========  =========================
0    4       2         0
1    0       0         absent (NaN)
2    -1      -1        -0.0
===  ======  ========  =========================

The quick level uses environment 0 only; the other levels all three.

Counterexamples are attempt scenarios with one request, ``E``, whose policy's
one key is the tree's text (``unparse``), and ``expect.keys`` the spec's
value. A scenario can only give finite attribute values: when ``a`` is NaN or
infinite, the scenario reads ``(a / d)`` in its place (a, d finite: 0/0, 1/0,
-1/0), and the counterexample is replayed once when it is built (its summary
says if the replay does not fail). A tree that reads the undeclared ``u``
cannot be in a loadable policy (an entry must carry every attribute the keys
read): its counterexample has no scenario (``{}``), and its summary says why.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from pyrsistent import pmap

from oracle.checks.framework import Check, Counterexample, Level, Partial, merge
from oracle.checks.selection import replay_verdict
from oracle.harness.attempt_engine import attempt_document
from oracle.spec.expressions import Env, interpret, same_value
from policy.waiting import (
    Attr,
    Binary,
    BudgetLeft,
    Call,
    Cond,
    Expr,
    Num,
    Scope,
    Unary,
    Var,
    evaluate,
    expr_to_json,
    unparse,
)
from policy.waiting.expr import children, walk

__all__ = ["ATTRIBUTE_VALUES", "ENVIRONMENTS", "EXPRESSIONS", "LEAVES", "run", "trees"]

STAGE = "engine"
UNDECLARED = "u"

#: The leaves, the undeclared attribute last (see ``run``: replayable trees first).
LEAVES: tuple[Expr, ...] = (
    Num(-1.0),
    Num(-0.0),
    Num(0.0),
    Num(1.0),
    Attr("a"),
    Var("waited"),
    Var("now"),
    BudgetLeft(STAGE),
    Attr(UNDECLARED),
)
_BINARY = ("+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!=", "&&", "||")
#: The root forms: prefix operators and one-argument calls, binary forms, the conditional.
_ONE_CHILD = ("-x", "!x", "min(x)", "max(x)")
_TWO_CHILDREN = (*_BINARY, "min(x, y)", "max(x, y)")
_CONDITIONAL = "?:"

#: The attribute ``a``'s values, and the finite (a, d) a scenario writes for each (a / d).
ATTRIBUTE_VALUES: tuple[tuple[float, tuple[float, float] | None], ...] = (
    (math.nan, (0.0, 0.0)),
    (-math.inf, (-1.0, 0.0)),
    (-1.0, None),
    (-0.0, None),
    (0.0, None),
    (1.0, None),
    (math.inf, (1.0, 0.0)),
)


@dataclass(frozen=True, slots=True)
class Environment:
    """The moment and the entry's enqueue time of one evaluation."""

    now: float
    enqueued_at: float
    budget_left: Mapping[str, float]

    @property
    def waited(self) -> float:
        return self.now - self.enqueued_at  # as selection computes it


ENVIRONMENTS: tuple[Environment, ...] = (
    Environment(4.0, 2.0, {STAGE: 0.0}),
    Environment(0.0, 0.0, {}),
    Environment(-1.0, 0.0, {STAGE: -0.0}),
)

#: level -> (largest tree, in nodes; how many of the environments)
_DOMAIN: Mapping[Level, tuple[int, int]] = {"quick": (4, 1), "default": (4, 3), "deep": (5, 3)}

# ----------------------------------------------------------------------------- the trees

_MEMO: dict[int, tuple[Expr, ...]] = {1: LEAVES}


def trees(size: int) -> tuple[Expr, ...]:
    """Every tree of exactly ``size`` nodes, in a fixed order (memoized).

    >>> [len(trees(n)) for n in (1, 2, 3)]
    [9, 36, 1278]
    """
    found = _MEMO.get(size)
    if found is None:
        found = tuple(tree for form in forms(size) for tree in _trees_of_form(size, form))
        _MEMO[size] = found
    return found


def forms(size: int) -> tuple[str, ...]:
    """The root forms a tree of ``size`` nodes can have."""
    if size == 1:
        return ("leaf",)
    made: tuple[str, ...] = _ONE_CHILD
    if size >= 3:
        made += _TWO_CHILDREN
    if size >= 4:
        made += (_CONDITIONAL,)
    return made


def _one(form: str, child: Expr) -> Expr:
    if form in ("-x", "!x"):
        return Unary(form[0], child)  # type: ignore[arg-type]
    return Call(form[:3], (child,))  # type: ignore[arg-type]


def _two(form: str, left: Expr, right: Expr) -> Expr:
    if form in ("min(x, y)", "max(x, y)"):
        return Call(form[:3], (left, right))  # type: ignore[arg-type]
    return Binary(form, left, right)  # type: ignore[arg-type]


def _trees_of_form(size: int, form: str) -> Iterator[Expr]:
    """Every tree of ``size`` nodes whose root has ``form`` (children: memoized)."""
    if form == "leaf":
        yield from LEAVES
    elif form in _ONE_CHILD:
        for child in trees(size - 1):
            yield _one(form, child)
    elif form in _TWO_CHILDREN:
        for left_size in range(1, size - 1):
            rights = trees(size - 1 - left_size)
            for left in trees(left_size):
                for right in rights:
                    yield _two(form, left, right)
    else:
        for test_size in range(1, size - 2):
            for then_size in range(1, size - 1 - test_size):
                otherwise = trees(size - 1 - test_size - then_size)
                for test in trees(test_size):
                    for then in trees(then_size):
                        for other in otherwise:
                            yield Cond(test, then, other)


def _nodes(tree: Expr) -> int:
    return sum(1 for _ in walk(tree))


# ----------------------------------------------------------------------------- levels and units


def _bounds(level: Level) -> Mapping[str, str]:
    largest, environments = _DOMAIN[level]
    shown = ", ".join(str(i) for i in range(environments))
    return {
        "trees": f"every tree of 1..{largest} nodes",
        "leaves": "-1, -0, 0, 1, a, waited, now, budget_left(engine), undeclared u",
        "operators": "- ! (prefix), + - * / < <= > >= == != && ||, ?:, min/max of 1 and 2",
        "a": "NaN, -inf, -1.0, -0.0, 0.0, 1.0, +inf",
        "environments": f"{shown} (now, waited, budget_left(engine)): "
        + "; ".join(
            f"{e.now:g}, {e.waited:g}, {e.budget_left.get(STAGE, 'absent')}"
            for e in ENVIRONMENTS[:environments]
        ),
    }


def _units(level: Level) -> Sequence[object]:
    largest, _ = _DOMAIN[level]
    return [(size, form) for size in range(1, largest + 1) for form in forms(size)]


# ----------------------------------------------------------------------------- counterexamples


def _value_text(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if x == 0 and math.copysign(1.0, x) < 0:
        return "-0.0"
    return f"{x:g}"


def _substituted(tree: Expr) -> Expr:
    """``tree`` with every leaf ``a`` read as ``a / d`` (rebuilt bottom-up)."""
    if isinstance(tree, Attr) and tree.name == "a":
        return Binary("/", Attr("a"), Attr("d"))
    kids = tuple(_substituted(child) for child in children(tree))
    match tree:
        case Unary(op, _):
            return Unary(op, kids[0])
        case Binary(op, _, _):
            return Binary(op, kids[0], kids[1])
        case Cond():
            return Cond(kids[0], kids[1], kids[2])
        case Call(function, _):
            return Call(function, kids)
        case _:
            return tree


def _inputs(tree: Expr, a: float, env: Environment) -> str:
    """The inputs ``tree`` reads, as text: ``at a = NaN, now 4`` (or ``reading no input``)."""
    read = set(walk(tree))
    parts = []
    if Attr("a") in read:
        parts.append(f"a = {_value_text(a)}")
    if Var("now") in read:
        parts.append(f"now {_value_text(env.now)}")
    if Var("waited") in read:
        parts.append(f"waited {_value_text(env.waited)}")
    if BudgetLeft(STAGE) in read:
        stage = env.budget_left.get(STAGE)
        parts.append(f"budget_left({STAGE}) {'absent' if stage is None else _value_text(stage)}")
    return "at " + ", ".join(parts) if parts else "reading no input"


def _json_number(x: float) -> float | int:
    if x == 0 and math.copysign(1.0, x) < 0:
        return -0.0
    return int(x) if x.is_integer() else x


@dataclass(frozen=True, slots=True)
class _Found:
    tree: Expr
    a: int  # index into ATTRIBUTE_VALUES
    environment: int
    kernel: str  # the kernel's value as text, or what it raised
    spec: float


def _counterexample(found: _Found) -> Counterexample:
    tree = found.tree
    size = _nodes(tree)
    value, encoded = ATTRIBUTE_VALUES[found.a]
    env = ENVIRONMENTS[found.environment]
    where = _inputs(tree, value, env)
    text = unparse(tree)
    told = f"`{text}` {where}: kernel {found.kernel}, spec {_value_text(found.spec)}"
    if Attr(UNDECLARED) in walk(tree):
        summary = (
            f"expression, not replayable (reads the undeclared attribute {UNDECLARED}, which no"
            f" loadable policy can): {told}"
        )
        return Counterexample("expressions", size, summary, {})
    reads_a = Attr("a") in walk(tree)
    key = tree
    attrs: dict[str, float | int] = {}
    if encoded is not None and reads_a:
        key = _substituted(tree)
        attrs = {"a": _json_number(encoded[0]), "d": _json_number(encoded[1])}
    elif math.isfinite(value):
        attrs = {"a": _json_number(value)}
    summary = f"expression {told}"
    if key is not tree:
        summary += f" (the scenario reads a as a / d: `{unparse(key)}`)"
    document = attempt_document(
        f"expression-{size}-nodes",
        summary,
        {"attributes": {"a": "visible", "d": "visible"}, "keys": [unparse(key)]},
        [{"id": "E", "enqueue": _json_number(env.enqueued_at), "attrs": attrs}],
        _json_number(env.now),
        {name: _json_number(left) for name, left in env.budget_left.items()},
        ["E"],
        {"selected": ["E"], "admitted_at": [_json_number(env.now)], "keys": [found.spec]},
    )
    if replay_verdict(document) is not False:
        summary += " (its replay does not fail)"
        document["description"] = summary
    return Counterexample("expressions", size, summary, document)


# ----------------------------------------------------------------------------- the run


def _points(environments: int) -> list[tuple[int, int, Scope, Env]]:
    points = []
    for a, (value, _) in enumerate(ATTRIBUTE_VALUES):
        for index, env in enumerate(ENVIRONMENTS[:environments]):
            scope = Scope(
                pmap({"a": value}),
                0,
                now=env.now,
                waited=env.waited,
                budget_left=pmap(env.budget_left),
                constants=pmap(),
            )
            spec_env = Env({"a": value}, 0.0, env.now, env.waited, dict(env.budget_left), {})
            points.append((a, index, scope, spec_env))
    return points


def run(level: Level, unit: object) -> Partial:
    """Every tree of one unit ``(size, root form)`` at every point of the level."""
    assert isinstance(unit, tuple)
    size, form = unit
    _, environments = _DOMAIN[level]
    points = _points(environments)
    replayable, unreplayable = Partial(), Partial()
    count = 0
    for tree in _trees_of_form(size, form):
        count += 1
        tree_json = expr_to_json(tree)
        reported = False
        for a, environment, scope, spec_env in points:
            expected = interpret(tree_json, spec_env)
            try:
                value = evaluate(tree, scope)
            except Exception as error:
                kernel = f"raised {type(error).__name__}: {error}"
            else:
                if same_value(value, expected):
                    continue
                kernel = _value_text(value)
            kept = unreplayable if Attr(UNDECLARED) in walk(tree) else replayable
            if reported:  # one counterexample per tree: the first point it is wrong at
                kept.disagreements += 1
                continue
            reported = True
            found = _Found(tree, a, environment, kernel, expected)
            kept.disagree(partial(_counterexample, found), size)
    # Replayable counterexamples sort first among those of one size ("expression `"
    # before "expression,"): merging keeps them when both kinds are found.
    found_all = merge([replayable, unreplayable])
    found_all.count("trees", count)
    found_all.count("evaluations", count * len(points))
    return found_all


EXPRESSIONS = Check(
    name="expressions",
    description="evaluate on every small key expression tree at every point of a small domain",
    bounds=_bounds,
    units=_units,
    run=run,
)
