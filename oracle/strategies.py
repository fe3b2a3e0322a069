"""Public Hypothesis strategies for the kernel's inputs, for this project's tests and
for other schedulers' test suites (needs ``hypothesis``, a test dependency).

Rotation: :data:`lanes`, :data:`cancel_rules`, :func:`rotation_scenarios`.
Waiting selection: :data:`leaves` and :data:`trees` (key expression trees over
the names :data:`ATTRIBUTES`, :data:`CONSTANTS`, :data:`STAGES`),
:data:`finite_numbers`, :data:`awkward_numbers` (ties, signed zeros,
infinities, NaN), :data:`huge_integers`, :data:`any_numbers`.
"""

from __future__ import annotations

import math
from typing import Literal

from hypothesis import strategies as st

from oracle.harness.rotation_scenario import (
    CancelAfterPark,
    CancelAtTick,
    CancelRule,
    RotationRequest,
    RotationScenario,
)
from policy import Lane
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

# ---------------------------------------------------------------------- rotation

lanes = st.sampled_from(list(Lane))

cancel_rules: st.SearchStrategy[CancelRule | None] = st.one_of(
    st.none(),
    st.none(),
    st.just("waiting"),
    st.builds(CancelAfterPark, st.integers(1, 3)),
    st.builds(CancelAtTick, st.integers(0, 12)),
)


@st.composite
def rotation_scenarios(draw: st.DrawFn, max_requests: int = 5) -> RotationScenario:
    """Random rotation scenarios: lanes, sizes, budgets 0..4, arrivals, cancels,
    declines and classic work."""
    count = draw(st.integers(1, max_requests))
    requests = tuple(
        RotationRequest(
            id=f"R{index}",
            lane=draw(lanes),
            slices=draw(st.integers(1, 6)),
            arrive=draw(st.integers(0, 4)),
            may_wait=draw(st.booleans() | st.just(True)),
            declined_at_promotion=draw(st.sampled_from([False, False, False, True])),
            cancel=draw(cancel_rules),
        )
        for index in range(count)
    )
    classic: Literal["never", "always"] | frozenset[int] = draw(
        st.one_of(
            st.sampled_from(["never", "always"]),
            st.frozensets(st.integers(0, 15), max_size=8),
        )
    )
    return RotationScenario(
        name="random",
        description="",
        budget=draw(st.integers(0, 4)),
        skip_cap=draw(st.sampled_from([2, 2, 1, 3])),
        classic_work=classic,
        requests=requests,
        expect=None,
    )


# ------------------------------------------------------------ waiting selection

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
