"""Expression nodes check their own invariants when built (docs/waiting.md, "The key
language"; policy/waiting/expr.py): each refusal is a TypeError or ValueError naming what is
wrong. Rules mutation testing found unasserted (docs/mutation.md)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import pytest

from policy.waiting import QueuePolicy, WaitingQueue
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

BAD_NODES: list[tuple[Callable[[], object], type[Exception], str]] = [
    (lambda: Attr(3), TypeError, "attribute name must be text, not 3"),  # type: ignore[arg-type]
    (lambda: Attr("now"), ValueError, "attribute 'now' is not a usable name"),
    (lambda: Const(3), TypeError, "constant name must be text, not 3"),  # type: ignore[arg-type]
    (lambda: Const("2x"), ValueError, "constant '2x' is not a usable name"),
    (lambda: BudgetLeft(None), TypeError, "stage name must be text, not None"),  # type: ignore[arg-type]
    (lambda: BudgetLeft("max"), ValueError, "stage 'max' is not a usable name"),
    (lambda: Call("avg", (Num(1),)), ValueError, "'avg' is not min or max"),  # type: ignore[arg-type]
    (lambda: Call("min", 3), TypeError, "min needs a tuple of arguments, not 3"),  # type: ignore[arg-type]
    (lambda: Call("min", "ab"), TypeError, "min needs a tuple of arguments, not 'ab'"),  # type: ignore[arg-type]
    (lambda: Call("min", ()), ValueError, "min needs at least one argument"),
    (lambda: Call("max", (1,)), TypeError, "max needs expression nodes, not 1"),  # type: ignore[arg-type]
    (lambda: Var("x"), ValueError, "'x' is not a context variable"),  # type: ignore[arg-type]
    (lambda: Bool(1), TypeError, "a boolean literal needs True or False, not 1"),  # type: ignore[arg-type]
    (lambda: Unary("+", Num(1)), ValueError, "'+' is not a unary operator"),  # type: ignore[arg-type]
    (lambda: Unary("-", 1), TypeError, "unary - needs expression nodes, not 1"),  # type: ignore[arg-type]
    (lambda: Binary("%", Num(1), Num(2)), ValueError, "'%' is not a binary operator"),  # type: ignore[arg-type]
    (lambda: Binary("+", Num(1), 2), TypeError, "operator + needs expression nodes, not 2"),  # type: ignore[arg-type]
    (lambda: Cond(1, Num(1), Num(2)), TypeError, "a conditional needs expression nodes, not 1"),  # type: ignore[arg-type]
    (lambda: Num(True), TypeError, "a number literal needs a float, not True"),
    (lambda: Num("1"), TypeError, "a number literal needs a float, not '1'"),  # type: ignore[arg-type]
    (lambda: Num(math.inf), ValueError, "a number literal must be finite, not inf"),
]


@pytest.mark.parametrize(("build", "error", "message"), BAD_NODES)
def test_a_bad_node_is_refused_with_its_own_message(
    build: Callable[[], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        build()


def test_min_and_max_take_any_iterable_of_nodes_as_a_tuple() -> None:
    call = Call("min", [Num(1), Attr("a")])  # type: ignore[arg-type]
    assert call.args == (Num(1), Attr("a"))
    assert Call("max", iter([Num(2)])).args == (Num(2),)  # type: ignore[arg-type]


def test_keys_computed_at_enqueue_see_waited_0_and_no_budget() -> None:
    # "Under enqueue timing ... they were evaluated with now = enqueued_at and waited = 0"; a
    # stage the moment does not report reads as NaN. A QueuePolicy built directly checks
    # nothing, so it may read both: evaluation still never raises.
    keys: tuple[Expr, ...] = (Var("waited"), BudgetLeft("engine"), Var("now"))
    policy = QueuePolicy(keys, timing="enqueue")
    queue = WaitingQueue().append(policy, "a", {}, serial=0, now=4.0).unwrap()
    stored = queue.entries[0].enqueue_keys
    assert stored is not None
    assert stored[0] == 0.0
    assert math.isnan(stored[1])
    assert stored[2] == 4.0


def test_trees_that_share_a_subtree_still_compare_every_other_node() -> None:
    shared = Attr("a")
    assert Binary("+", Num(1), shared) != Binary("+", Num(2), shared)
    assert Binary("+", Num(1), shared) == Binary("+", Num(1), shared)
    assert Cond(shared, shared, Num(1)) != Cond(shared, shared, Num(-1))
