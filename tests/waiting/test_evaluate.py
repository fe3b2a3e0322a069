"""Evaluation never raises, follows IEEE, and the total order of key lists."""

from __future__ import annotations

import itertools
import math
from typing import cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oracle.strategies import (
    ATTRIBUTES,
    AWKWARD,
    CONSTANTS,
    STAGES,
    any_numbers,
    awkward_numbers,
    huge_integers,
    trees,
)
from policy.waiting import (
    Attr,
    Binary,
    Bool,
    BudgetLeft,
    Call,
    Cond,
    Const,
    Expr,
    Num,
    Scope,
    Unary,
    Var,
    divide,
    evaluate,
    is_true,
    key_list_order,
    order_key,
    parse_expression,
)
from policy.waiting.evaluate import extremum

from .test_parse import parsed

NAN, INF = math.nan, math.inf


def scope(**attributes: float) -> Scope:
    return Scope(
        attributes,
        serial=7,
        now=10.0,
        waited=4.0,
        budget_left={"engine": 96.0},
        constants={"k": 2.0, "short_tokens": 128.0},
    )


def value(text: str, **attributes: float) -> float:
    return evaluate(parsed(text), scope(**attributes))


def same(a: float, b: float) -> bool:
    """Equal as bit patterns go for our purposes: NaN is NaN, -0.0 is not 0.0."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 / 0", INF),
        ("-1 / 0", -INF),
        ("1 / -0", -INF),
        ("-1 / -0", INF),
        ("1 / (0 * -1)", -INF),
        ("0 / 0", NAN),
        ("-0 / 0", NAN),
        ("(0 / 0) / 0", NAN),
        ("(1 / 0) / 0", INF),
        ("1 / (1 / 0)", 0.0),
        ("-1 / (1 / 0)", -0.0),
        ("(1 / 0) - (1 / 0)", NAN),
        ("1e308 * 10", INF),
        ("7 / 2", 3.5),
        ("-(0)", -0.0),
        ("true + true", 2.0),
        ("serial + now + waited", 21.0),
        ("budget_left(engine)", 96.0),
        ("budget_left(prefill)", NAN),
        ("short_tokens / k", 64.0),
        ("missing", NAN),
    ],
)
def test_arithmetic_is_ieee_and_never_raises(text: str, expected: float) -> None:
    assert same(value(text), expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(0/0) ? 1 : 2", 1.0),  # NaN is true
        ("-0 ? 1 : 2", 2.0),
        ("0.5 ? 1 : 2", 1.0),
        ("!(0/0)", 0.0),
        ("!0", 1.0),
        ("!-0", 1.0),
        ("!7", 0.0),
        ("(0/0) && 1", 1.0),
        ("0 && (0/0)", 0.0),
        ("0 || (0/0)", 1.0),
        ("5 && 3", 1.0),
        ("0 || -0", 0.0),
        ("(0/0) == (0/0)", 0.0),
        ("(0/0) != (0/0)", 1.0),
        ("(0/0) < 1", 0.0),
        ("(0/0) >= 1", 0.0),
        ("-0 == 0", 1.0),
        ("-0 < 0", 0.0),
        ("1 <= 1", 1.0),
        ("2 > 1", 1.0),
    ],
)
def test_truth_and_comparisons(text: str, expected: float) -> None:
    assert same(value(text), expected)


def test_truth_is_exactly_not_equal_to_zero() -> None:
    for x in AWKWARD:
        assert is_true(x) == (x != 0)


@pytest.mark.parametrize(
    ("function", "values", "expected"),
    [
        ("min", [3.0, 1.0, 2.0], 1.0),
        ("max", [3.0, 1.0, 2.0], 3.0),
        ("min", [0.0, -0.0], -0.0),
        ("min", [-0.0, 0.0], -0.0),
        ("max", [-0.0, 0.0], 0.0),
        ("max", [0.0, -0.0], 0.0),
        ("min", [1.0, NAN], NAN),
        ("max", [NAN, INF], NAN),
        ("min", [-INF, 5.0], -INF),
        ("max", [4.0], 4.0),
    ],
)
def test_min_and_max(function: str, values: list[float], expected: float) -> None:
    assert same(extremum(function, values), expected)
    text = f"{function}({', '.join(f'x{i}' for i in range(len(values)))})"
    assert same(value(text, **{f"x{i}": v for i, v in enumerate(values)}), expected)


def test_min_and_max_of_no_value_are_nan() -> None:
    # the language has no empty call (min() does not parse); the function answers anyway
    assert math.isnan(extremum("min", []))
    assert math.isnan(extremum("max", ()))


@pytest.mark.parametrize(
    ("numerator", "denominator"),
    [(x, y) for x in AWKWARD for y in (0.0, -0.0)],
)
def test_division_by_zero_follows_ieee_sign_rules(numerator: float, denominator: float) -> None:
    result = divide(numerator, denominator)
    if numerator == 0 or math.isnan(numerator):
        assert math.isnan(result)
    else:
        sign = math.copysign(1.0, numerator) * math.copysign(1.0, denominator)
        assert result == sign * INF


def test_the_total_order() -> None:
    ordered = [-INF, -1.0, -0.0, 0.0, 1.0, INF, NAN, -NAN]
    ranks = [order_key(x) for x in ordered]
    assert ranks == sorted(ranks)
    assert order_key(-0.0) == order_key(0.0)
    assert order_key(NAN) == order_key(-NAN) == order_key(float("nan"))
    assert order_key(INF) < order_key(NAN)
    assert order_key(-INF) < order_key(-1e308)
    # lexicographic over the key list
    assert key_list_order([1.0, NAN]) < key_list_order([2.0, -INF])
    assert key_list_order([NAN, 0.0]) == key_list_order([NAN, -0.0])
    assert key_list_order([INF, 9.0]) < key_list_order([NAN, -9.0])


@given(awkward_numbers, awkward_numbers, awkward_numbers)
def test_the_order_is_total_and_transitive(a: float, b: float, c: float) -> None:
    ka, kb, kc = order_key(a), order_key(b), order_key(c)
    assert (ka < kb) + (ka == kb) + (ka > kb) == 1
    if ka <= kb <= kc:
        assert ka <= kc
    if not (math.isnan(a) or math.isnan(b)):
        assert (ka < kb) == (a < b)
        assert (ka == kb) == (a == b)


#: Scopes as a host may build them: any number anywhere, huge integers and booleans too.
scopes = st.builds(
    Scope,
    attributes=st.fixed_dictionaries({}, optional=dict.fromkeys(ATTRIBUTES, any_numbers)),
    serial=st.integers() | huge_integers | st.booleans(),
    now=any_numbers,
    waited=any_numbers,
    budget_left=st.fixed_dictionaries({}, optional=dict.fromkeys(STAGES, any_numbers)),
    constants=st.fixed_dictionaries({}, optional=dict.fromkeys(CONSTANTS, any_numbers)),
)


@given(trees, scopes)
def test_evaluation_never_raises_and_gives_a_float(tree: Expr, where: Scope) -> None:
    result = evaluate(tree, where)
    assert isinstance(result, float)


def _number(value: object) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    return float(value) if isinstance(value, float) else NAN


def reference(expr: Expr, at: Scope) -> float:
    """waiting.md's semantics as a plain recursive walk (fine for small trees)."""
    match expr:
        case Num(value):
            return value
        case Bool(value):
            return 1.0 if value else 0.0
        case Attr(name):
            return _number(at.attributes.get(name, NAN))
        case Const(name):
            return _number(at.constants.get(name, NAN))
        case Var(name):
            return _number({"serial": at.serial, "now": at.now, "waited": at.waited}[name])
        case BudgetLeft(stage):
            return _number(at.budget_left.get(stage, NAN))
        case Unary("-", operand):
            return -reference(operand, at)
        case Unary(_, operand):
            return 0.0 if reference(operand, at) != 0 else 1.0
        case Binary("&&", left, right):
            return float(reference(left, at) != 0 and reference(right, at) != 0)
        case Binary("||", left, right):
            return float(reference(left, at) != 0 or reference(right, at) != 0)
        case Binary(op, left, right):
            a, b = reference(left, at), reference(right, at)
            arithmetic = {"+": a + b, "-": a - b, "*": a * b}
            if op in arithmetic:
                return arithmetic[op]
            if op == "/":
                return divide(a, b)
            comparisons = {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b}
            return float(comparisons.get(op, a != b))
        case Cond(test, then, otherwise):
            return reference(then if reference(test, at) != 0 else otherwise, at)
        case Call(function, args):
            return extremum(function, [reference(arg, at) for arg in args])
    raise AssertionError(expr)


@given(trees, scopes)
def test_evaluation_agrees_with_a_plain_recursive_reading(tree: Expr, where: Scope) -> None:
    assert same(evaluate(tree, where), reference(tree, where))


# --- found by mutation testing (docs/mutation.md)
# Evaluating keys: rules mutation testing found unasserted (docs/mutation.md).
#
# docs/waiting.md, "The key language": a value is true exactly when ``value != 0`` (NaN is true,
# -0.0 false); ``&&`` and ``||`` short-circuit and give 1 or 0.


SCOPE = Scope({}, 0, now=0.0, waited=0.0, budget_left={}, constants={})

#: Operands as literals; NaN as 0/0 (a literal must be finite).
OPERANDS = {"0": 0.0, "-0": -0.0, "1": 1.0, "2.5": 2.5, "-3": -3.0, "(0/0)": math.nan}


def evaluated(text: str) -> float:
    return evaluate(parse_expression(text).unwrap(), SCOPE)


def truth(number: float) -> bool:
    return number != 0.0


def test_or_and_and_follow_the_truth_rule_and_give_1_or_0() -> None:
    for (a, x), (b, y) in itertools.product(OPERANDS.items(), repeat=2):
        assert evaluated(f"{a} || {b}") == (1.0 if truth(x) or truth(y) else 0.0), (a, b)
        assert evaluated(f"{a} && {b}") == (1.0 if truth(x) and truth(y) else 0.0), (a, b)


def test_or_of_two_true_values_is_1() -> None:
    assert evaluated("1 || 1") == 1.0
    assert evaluated("2.5 || 2.5") == 1.0
    assert evaluated("(0/0) || (0/0)") == 1.0


def test_chains_of_logic_operators() -> None:
    assert evaluated("0 || 0 || 3") == 1.0
    assert evaluated("1 && 2 && 0") == 0.0
    assert evaluated("0 && 1 || 1") == 1.0  # && binds tighter than ||
    assert evaluated("1 || 0 && 0") == 1.0
    nested = Binary("||", Unary("!", Num(1)), Binary("&&", Num(2), Num(-1)))
    assert evaluate(nested, SCOPE) == 1.0


def test_a_key_that_is_not_a_node_reads_as_unknown() -> None:
    # QueuePolicy(...) built directly checks nothing; evaluation still never raises, and what
    # it cannot read is NaN (unknown).
    junk = cast(Expr, "prompt")
    assert math.isnan(evaluate(junk, SCOPE))


# --- found by hardening (issue 9)


HUGE = 10**5000  # more digits than Python writes in decimal (4300)


def test_evaluate_with_a_hand_built_scope() -> None:
    with pytest.raises(TypeError, match=r"Scope\.attributes must be a mapping"):
        Scope([1], 0, 0.0, 0.0, {}, {})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Scope\.constants must be a mapping"):
        Scope({}, 0, 0.0, 0.0, {}, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="evaluate reads names from a Scope, not NoneType"):
        evaluate(Attr("a"), None)  # type: ignore[arg-type]
    # Documented: what is not a number reads as NaN, even from a hand-built scope.
    odd = Scope({"a": [1]}, "x", None, "y", {"s": "z"}, {"k": HUGE})  # type: ignore[arg-type, dict-item]
    for text in ("a", "serial", "now", "waited", "budget_left(s)"):
        assert math.isnan(evaluate(parse_expression(text).unwrap(), odd))
    assert evaluate(parse_expression("k", {"k"}).unwrap(), odd) == math.inf
