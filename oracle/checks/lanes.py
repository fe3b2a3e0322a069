"""Brute-force check of the lane analysis (``policy.waiting.fast.analysis.lane_plan``).

For every key tree up to a size bound that the analysis accepts, the plan's
contract is tested on a grid, with the reference evaluator
(``policy.waiting.evaluate``):

- **components**: no component reads ``waited``, ``now`` or ``budget_left``;
- **class function** (contract 1): two entries whose component values are equal
  under ``class_value`` (a truth component counts as 1.0 or 0.0) have the same
  key value (the same float: NaN equals NaN, -0.0 differs from 0.0) at every
  point of the grid;
- **classes bound**: no more classes occur than ``classes_bound``;
- **never worse with age** (contract 2): for the first entry of every class, at
  every ``(now, budget_left(s))`` of the grid, the key never rises in the total
  order of ``key_list_order`` as ``waited`` grows, and is the same for ``waited``
  -0.0 and 0.0.

**Trees.** Leaves: ``waited``, ``now``, ``budget_left(s)``, the attributes ``a``
and ``b``, the constant ``k``, the literals 0, 1, 2, ``true`` and ``false``.
Operators: prefix ``-`` and ``!``; binary ``+ - * / < <= > >= == != && ||``;
``c ? x : y``; ``min`` and ``max`` of one and of two arguments. A tree's size is
its number of nodes; every tree of 1..``max_size`` nodes (default 4) is
enumerated: 11, 44, 1,870 and 22,363 trees of 1, 2, 3 and 4 nodes (24,288 in
all; 708,488 of 5 nodes).
Each is analysed as a one-key list with ``constants`` (default ``k = 1``).

**Grid.** Entries: ``a`` and ``b`` each from NaN, -inf, -1.0, -0.0, 0.0, 1.0,
2.0, inf, True, False (only the attributes a tree reads vary: 1, 10 or 100
entries). ``waited`` from -inf, -1e308, -1, -0.0, 0.0, 0.5, 1, 2, 1e308, inf;
``now`` and ``budget_left(s)`` each from NaN, -inf, -1, 0, 1, inf (only the
inputs a tree reads vary: what it does not read cannot change its value).
Multi-key lists are not enumerated: a list is never worse
when each of its keys is (lexicographic order), which the property tests check
on random lists.

**Cost** (one core, measured on 2026-12-07 beside other jobs): ``max_size=3``
(1,925 trees, 1,375 accepted) 0.1 s; the default ``max_size=4`` (24,288 trees,
17,498 accepted, 145,610 evaluations) about 3 s; ``min_size=5, max_size=5,
shard=(6, 97)`` (7,304 trees) about 2 s; every tree of 5 nodes (708,488 trees,
461,125 accepted, 7.3 million evaluations) 109 s. No counterexample at any of
these, for ``k`` in 1, 0, -0.0, -1, 1e308 and undeclared (NaN) up to 4 nodes,
and ``k = 1`` at 5. Reproduce with::

    .venv/bin/python -c "from oracle.checks.lanes import run_lane_check; print(run_lane_check())"
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Final, Literal

from policy.waiting.evaluate import Scope, evaluate, key_list_order
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
    walk,
)
from policy.waiting.fast.analysis import LanePlan, class_value, lane_plan
from policy.waiting.parse import unparse

__all__ = [
    "ATTRIBUTE_VALUES",
    "LEAVES",
    "MOMENT_VALUES",
    "WAITED",
    "LaneCheck",
    "LaneCounterexample",
    "check_lane_plans",
    "run_lane_check",
    "trees",
    "trees_in",
]

Analysis = Callable[[Sequence[Expr], Mapping[str, float]], LanePlan | None]

STAGE: Final = "s"
ATTRIBUTES: Final = ("a", "b")

LEAVES: Final[tuple[Expr, ...]] = (
    Var("waited"),
    Var("now"),
    BudgetLeft(STAGE),
    Attr("a"),
    Attr("b"),
    Const("k"),
    Num(0.0),
    Num(1.0),
    Num(2.0),
    # the literals are their own node, which the analysis shapes apart from numbers:
    # without them a mutmut run found eight unsound rules no tree here reached
    Bool(True),
    Bool(False),
)

ATTRIBUTE_VALUES: Final[tuple[float | bool, ...]] = (
    math.nan,
    -math.inf,
    -1.0,
    -0.0,
    0.0,
    1.0,
    2.0,
    math.inf,
    True,
    False,
)

#: Ascending; -0.0 and 0.0 are equal (each is ``>=`` the other).
WAITED: Final[tuple[float, ...]] = (
    -math.inf,
    -1e308,
    -1.0,
    -0.0,
    0.0,
    0.5,
    1.0,
    2.0,
    1e308,
    math.inf,
)

MOMENT_VALUES: Final[tuple[float, ...]] = (math.nan, -math.inf, -1.0, 0.0, 1.0, math.inf)

_BINARY: Final = ("+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!=", "&&", "||")
_ONE_CHILD: Final = ("-x", "!x", "min(x)", "max(x)")
_TWO_CHILDREN: Final = (*_BINARY, "min(x, y)", "max(x, y)")

Contract = Literal["components", "class function", "classes bound", "never worse with age"]


@dataclass(frozen=True, slots=True)
class LaneCounterexample:
    """A tree the analysis accepts whose plan breaks ``contract``, as ``detail`` shows."""

    key: str
    size: int
    contract: Contract
    detail: str

    def __str__(self) -> str:
        return f"`{self.key}` ({self.size} nodes): {self.contract}: {self.detail}"


@dataclass(slots=True)
class LaneCheck:
    """What one run found: counterexamples (at most one per tree), and counts."""

    counterexamples: list[LaneCounterexample] = field(default_factory=list)
    trees: int = 0
    accepted: int = 0
    evaluations: int = 0


# ----------------------------------------------------------------------------- the trees

_MEMO: dict[int, tuple[Expr, ...]] = {1: LEAVES}


def trees(size: int) -> tuple[Expr, ...]:
    """Every tree of exactly ``size`` nodes, in a fixed order (memoized).

    >>> [len(trees(n)) for n in (1, 2, 3, 4)]
    [11, 44, 1870, 22363]
    """
    found = _MEMO.get(size)
    if found is None:
        found = tuple(_trees_of(size))
        _MEMO[size] = found
    return found


def trees_in(min_size: int, max_size: int, shard: tuple[int, int] = (0, 1)) -> Iterator[Expr]:
    """Every tree of ``min_size``..``max_size`` nodes in the enumeration's order; with
    ``shard=(k, n)`` only those whose position in it is ``k`` modulo ``n``.

    >>> len(list(trees_in(1, 2))), len(list(trees_in(2, 3, shard=(1, 10))))
    (55, 192)
    """
    part, parts = shard
    position = -1
    for size in range(min_size, max_size + 1):
        # the largest size is built lazily: 708,488 trees of 5 nodes need not be kept
        for tree in trees(size) if size < max_size else _trees_of(size):
            position += 1
            if position % parts == part:
                yield tree


def _trees_of(size: int) -> Iterator[Expr]:
    if size < 2:
        yield from LEAVES if size == 1 else ()
        return
    for form in _ONE_CHILD:
        for child in trees(size - 1):
            if form in ("-x", "!x"):
                yield Unary(form[0], child)  # type: ignore[arg-type]
            else:
                yield Call(form[:3], (child,))  # type: ignore[arg-type]
    for form in _TWO_CHILDREN:
        for left_size in range(1, size - 1):
            for left in trees(left_size):
                for right in trees(size - 1 - left_size):
                    if form in _BINARY:
                        yield Binary(form, left, right)  # type: ignore[arg-type]
                    else:
                        yield Call(form[:3], (left, right))  # type: ignore[arg-type]
    for test_size in range(1, size - 2):
        for then_size in range(1, size - 1 - test_size):
            for test in trees(test_size):
                for then in trees(then_size):
                    for otherwise in trees(size - 1 - test_size - then_size):
                        yield Cond(test, then, otherwise)


# ----------------------------------------------------------------------------- the grid


def _text(value: float | bool) -> str:
    if isinstance(value, bool):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if value == 0 and math.copysign(1.0, value) < 0:
        return "-0.0"
    return repr(value)


def _same(x: float, y: float) -> bool:
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return x == y and math.copysign(1.0, x) == math.copysign(1.0, y)


@dataclass(frozen=True, slots=True)
class _Point:
    now: float
    budget: float

    def shown(self, reads_now: bool, reads_budget: bool) -> str:
        parts = [f"now {_text(self.now)}"] if reads_now else []
        if reads_budget:
            parts.append(f"budget_left({STAGE}) {_text(self.budget)}")
        return ", ".join(parts) or "any moment"


def _component_value(
    expr: Expr, truth: bool, attributes: Mapping[str, float | bool], constants: Mapping[str, float]
) -> float:
    scope = Scope(attributes, 0, now=math.nan, waited=math.nan, budget_left={}, constants=constants)
    value = evaluate(expr, scope)
    return (1.0 if value != 0.0 else 0.0) if truth else value


def _reads_moment(expr: Expr) -> bool:
    return any(
        isinstance(node, BudgetLeft) or (isinstance(node, Var) and node.name != "serial")
        for node in walk(expr)
    )


def _check_tree(
    tree: Expr, plan: LanePlan, constants: Mapping[str, float], run: LaneCheck
) -> LaneCounterexample | None:
    size = sum(1 for _ in walk(tree))
    key = unparse(tree)

    def found(contract: Contract, detail: str) -> LaneCounterexample:
        return LaneCounterexample(key, size, contract, detail)

    for component in plan.components:
        if _reads_moment(component.expr):
            return found("components", f"component `{unparse(component.expr)}` reads the moment")
    read = set(walk(tree))
    for component in plan.components:
        read.update(walk(component.expr))
    names = [name for name in ATTRIBUTES if Attr(name) in read]
    reads_now, reads_budget = Var("now") in read, BudgetLeft(STAGE) in read
    # What a tree does not read cannot change its value: those dimensions collapse.
    ages = WAITED if Var("waited") in read else (0.0,)
    points = [
        _Point(now, budget)
        for now in (MOMENT_VALUES if reads_now else (math.nan,))
        for budget in (MOMENT_VALUES if reads_budget else (math.nan,))
    ]
    heads: dict[tuple[object, ...], tuple[str, list[list[float]]]] = {}
    for values in product(ATTRIBUTE_VALUES, repeat=len(names)):
        attributes = dict(zip(names, values, strict=True))
        entry = ", ".join(f"{n} = {_text(v)}" for n, v in attributes.items()) or "any entry"
        lane = tuple(
            class_value(_component_value(c.expr, c.truth, attributes, constants))
            for c in plan.components
        )
        rows = [
            [
                evaluate(
                    tree,
                    Scope(
                        attributes,
                        0,
                        now=point.now,
                        waited=waited,
                        budget_left={STAGE: point.budget},
                        constants=constants,
                    ),
                )
                for waited in ages
            ]
            for point in points
        ]
        run.evaluations += len(points) * len(ages)
        head = heads.get(lane)
        if head is not None:
            head_entry, head_rows = head
            for point, row, head_row in zip(points, rows, head_rows, strict=True):
                for waited, value, head_value in zip(ages, row, head_row, strict=True):
                    if not _same(value, head_value):
                        return found(
                            "class function",
                            f"entries {head_entry} and {entry} are in one class but at"
                            f" {point.shown(reads_now, reads_budget)}, waited {_text(waited)}"
                            f" their keys are {_text(head_value)} and {_text(value)}",
                        )
            continue
        heads[lane] = (entry, rows)
        for point, row in zip(points, rows, strict=True):
            orders = [key_list_order([value]) for value in row]
            for i in range(len(ages) - 1):
                older_worse = orders[i + 1] > orders[i]
                tie_broken = ages[i] == ages[i + 1] and orders[i + 1] != orders[i]
                if older_worse or tie_broken:
                    return found(
                        "never worse with age",
                        f"for {entry} at {point.shown(reads_now, reads_budget)}: waited"
                        f" {_text(ages[i + 1])} gives {_text(row[i + 1])}, waited"
                        f" {_text(ages[i])} gives {_text(row[i])}",
                    )
    if len(heads) > plan.classes_bound:
        return found(
            "classes bound",
            f"{len(heads)} classes occur, the plan bounds them by {plan.classes_bound}",
        )
    return None


def run_lane_check(
    analyse: Analysis = lane_plan,
    *,
    max_size: int = 4,
    min_size: int = 1,
    constants: Mapping[str, float] | None = None,
    shard: tuple[int, int] = (0, 1),
    limit: int | None = None,
) -> LaneCheck:
    """Check ``analyse`` on every tree of ``min_size``..``max_size`` nodes (see the
    module docstring). ``shard=(k, n)`` takes only the trees whose position in the
    enumeration is ``k`` modulo ``n`` (to spread a run, or to sample a large size);
    ``limit`` stops after that many counterexamples."""
    given = {"k": 1.0} if constants is None else dict(constants)
    run = LaneCheck()
    for tree in trees_in(min_size, max_size, shard):
        run.trees += 1
        plan = analyse([tree], given)
        if plan is None:
            continue
        run.accepted += 1
        broken = _check_tree(tree, plan, given, run)
        if broken is not None:
            run.counterexamples.append(broken)
            if limit is not None and len(run.counterexamples) >= limit:
                return run
    return run


def check_lane_plans(
    analyse: Analysis = lane_plan,
    *,
    max_size: int = 4,
    min_size: int = 1,
    constants: Mapping[str, float] | None = None,
    shard: tuple[int, int] = (0, 1),
    limit: int | None = None,
) -> list[LaneCounterexample]:
    """The counterexamples :func:`run_lane_check` finds: none for a sound analysis.

    >>> check_lane_plans(max_size=2)
    []
    """
    return run_lane_check(
        analyse,
        max_size=max_size,
        min_size=min_size,
        constants=constants,
        shard=shard,
        limit=limit,
    ).counterexamples
