"""Hypothesis strategies shared by the test modules."""

from __future__ import annotations

from typing import Literal

from hypothesis import strategies as st

from oracle.rotation_scenario import (
    CancelAfterPark,
    CancelAtTick,
    CancelRule,
    RotationRequest,
    RotationScenario,
)
from policy import Lane

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
