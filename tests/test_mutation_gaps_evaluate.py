"""Evaluating keys: rules mutation testing found unasserted (docs/mutation.md).

docs/waiting.md, "The key language": a value is true exactly when ``value != 0`` (NaN is true,
-0.0 false); ``&&`` and ``||`` short-circuit and give 1 or 0.
"""

from __future__ import annotations

import itertools
import math
from typing import cast

from policy.waiting import Scope, evaluate, parse_expression
from policy.waiting.expr import Binary, Expr, Num, Unary

SCOPE = Scope({}, 0, now=0.0, waited=0.0, budget_left={}, constants={})

#: Operands as literals; NaN as 0/0 (a literal must be finite).
OPERANDS = {"0": 0.0, "-0": -0.0, "1": 1.0, "2.5": 2.5, "-3": -3.0, "(0/0)": math.nan}


def value(text: str) -> float:
    return evaluate(parse_expression(text).unwrap(), SCOPE)


def truth(number: float) -> bool:
    return number != 0.0


def test_or_and_and_follow_the_truth_rule_and_give_1_or_0() -> None:
    for (a, x), (b, y) in itertools.product(OPERANDS.items(), repeat=2):
        assert value(f"{a} || {b}") == (1.0 if truth(x) or truth(y) else 0.0), (a, b)
        assert value(f"{a} && {b}") == (1.0 if truth(x) and truth(y) else 0.0), (a, b)


def test_or_of_two_true_values_is_1() -> None:
    assert value("1 || 1") == 1.0
    assert value("2.5 || 2.5") == 1.0
    assert value("(0/0) || (0/0)") == 1.0


def test_chains_of_logic_operators() -> None:
    assert value("0 || 0 || 3") == 1.0
    assert value("1 && 2 && 0") == 0.0
    assert value("0 && 1 || 1") == 1.0  # && binds tighter than ||
    assert value("1 || 0 && 0") == 1.0
    nested = Binary("||", Unary("!", Num(1)), Binary("&&", Num(2), Num(-1)))
    assert evaluate(nested, SCOPE) == 1.0


def test_a_key_that_is_not_a_node_reads_as_unknown() -> None:
    # QueuePolicy(...) built directly checks nothing; evaluation still never raises, and what
    # it cannot read is NaN (unknown).
    junk = cast(Expr, "prompt")
    assert math.isnan(evaluate(junk, SCOPE))
