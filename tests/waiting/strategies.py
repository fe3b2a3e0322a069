"""Hypothesis strategies shared by the waiting-selection tests."""

from __future__ import annotations

import math

from hypothesis import strategies as st

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
    Unary,
    Var,
)

ATTRIBUTES = ("a", "b", "prompt")
CONSTANTS = ("k", "short_tokens")
STAGES = ("engine", "prefill")
BINARY = ("+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!=", "&&", "||")

#: Values that make the total order work: ties, signed zeros, infinities, NaN.
AWKWARD = (0.0, -0.0, 1.0, -1.0, 2.0, math.inf, -math.inf, math.nan)

finite_numbers = st.floats(allow_nan=False, allow_infinity=False)
awkward_numbers = st.one_of(st.sampled_from(AWKWARD), st.floats())

leaves: st.SearchStrategy[Expr] = st.one_of(
    finite_numbers.map(Num),
    st.sampled_from([0.0, -0.0, 1.0, 3.0, -2.5, 1e20]).map(Num),
    st.booleans().map(Bool),
    st.sampled_from(ATTRIBUTES).map(Attr),
    st.sampled_from(CONSTANTS).map(Const),
    st.sampled_from([Var("serial"), Var("now"), Var("waited")]),
    st.sampled_from(STAGES).map(BudgetLeft),
)


def _extend(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    return st.one_of(
        st.builds(Unary, st.sampled_from(["-", "!"]), children),
        st.builds(Binary, st.sampled_from(BINARY), children, children),
        st.builds(Cond, children, children, children),
        st.builds(
            Call,
            st.sampled_from(["min", "max"]),
            st.lists(children, min_size=1, max_size=3).map(tuple),
        ),
    )


trees: st.SearchStrategy[Expr] = st.recursive(leaves, _extend, max_leaves=12)


def _power_of_ten(exponent: int) -> int:
    magnitude: int = 10 ** abs(exponent)
    return magnitude if exponent > 0 else -magnitude


#: Integers beyond the float range, some beyond what Python prints (over 4300 digits).
#: Built lazily: Hypothesis shows a strategy's arguments, and such a literal cannot be shown.
huge_integers: st.SearchStrategy[int] = st.sampled_from([309, -309, 400, -400, 5000, -5000]).map(
    _power_of_ten
)

#: Everything that is a number at run time: ints of any size, bools, floats with
#: infinities and NaN.
any_numbers: st.SearchStrategy[float] = st.one_of(
    st.sampled_from(AWKWARD), st.integers(), huge_integers, st.booleans(), st.floats()
)
