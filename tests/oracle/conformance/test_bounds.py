"""The bounds of the conformance checks (issue 30): every bound is checked where it is
made, so that bounds built by hand either hold a case to compare or are refused with
the field and its value named; and a domain larger than the kit enumerates is
refused before anything is enumerated."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NoReturn

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle.conformance import (
    BoundsChoice,
    ConformanceReport,
    GrantOrderBounds,
    NumberBounds,
    ProtocolBounds,
    SettingBounds,
    check_backlog_cap,
    check_budget_setting,
    check_grant_expiry,
    check_grant_order,
    check_tick_protocol,
)
from oracle.conformance.bounds import (
    MOST_BUDGET,
    MOST_CASES,
    FlagBounds,
    HeaderBounds,
    SelectionBounds,
)


def _raises(*arguments: object) -> NoReturn:
    """An implementation that answers nothing: it raises on every call."""
    raise RuntimeError(f"not implemented: {len(arguments)} arguments")


_SMALL = st.integers(min_value=-3, max_value=3)
_CAPS = st.lists(st.integers(min_value=-1, max_value=3), max_size=2).map(tuple)


@st.composite
def _hand_built_checks(draw: st.DrawFn) -> tuple[str, Callable[[], ConformanceReport]]:
    """A check run on bounds built by hand from small, empty or negative values (the
    depth of the tick protocol never None: every reachable state takes minutes)."""
    which = draw(st.sampled_from(["expiry", "cap", "setting", "grant order", "protocol"]))
    if which in {"expiry", "cap"}:
        largest, edges = draw(_SMALL), draw(st.lists(_SMALL, max_size=2).map(tuple))
        check = check_grant_expiry if which == "expiry" else check_backlog_cap
        return "NumberBounds", lambda: check(_raises, bounds=NumberBounds(largest, edges))
    if which == "setting":
        longest = draw(st.integers(min_value=-2, max_value=1))
        return "SettingBounds", lambda: check_budget_setting(_raises, bounds=SettingBounds(longest))
    if which == "grant order":
        longest, skips, caps = draw(_SMALL), draw(_SMALL), draw(_CAPS)
        return "GrantOrderBounds", lambda: check_grant_order(
            _raises, bounds=GrantOrderBounds(longest, skips, caps)
        )
    caps, budget = draw(_CAPS), draw(st.integers(min_value=-2, max_value=1))
    depth = draw(st.integers(min_value=-2, max_value=2))
    return "ProtocolBounds", lambda: check_tick_protocol(
        _raises, bounds=ProtocolBounds(caps, budget, depth)
    )


@settings(max_examples=150, deadline=None)
@given(built=_hand_built_checks())
def test_hand_built_bounds_are_refused_or_never_pass_an_implementation_that_raises(
    built: tuple[str, Callable[[], ConformanceReport]],
) -> None:
    owner, run = built
    try:
        report: ConformanceReport | str = run()
    except ValueError as error:
        report = str(error)
    if isinstance(report, str):
        assert report.startswith(f"{owner}."), report
    else:
        assert report.verdict == "FAIL", report.text()
        assert report.cases > 0


_EMPTY_OR_NEGATIVE = [
    (lambda: NumberBounds(-1, edges=()), "NumberBounds.largest must be an integer >= 0, not -1"),
    (lambda: NumberBounds(2, edges=(-1,)), "NumberBounds.edges must be an integer >= 0, not -1"),
    (lambda: GrantOrderBounds(-1, 0), "GrantOrderBounds.longest must be an integer >= 0, not -1"),
    (lambda: GrantOrderBounds(2, 0, ()), "GrantOrderBounds.skip_caps must name at least one"),
    (lambda: GrantOrderBounds(2, 0, (0,)), "GrantOrderBounds.skip_caps must be an integer >= 1"),
    (lambda: ProtocolBounds((), 1, 2), "ProtocolBounds.skip_caps must name at least one"),
    (lambda: ProtocolBounds((2,), -1, 2), "ProtocolBounds.largest_budget must be an integer >= 0"),
    (
        lambda: ProtocolBounds((2,), 1, -1),
        "ProtocolBounds.max_depth must be an integer >= 0, not -1",
    ),
    (
        lambda: ProtocolBounds((2,), True, 1),
        "ProtocolBounds.largest_budget must be an integer >= 0",
    ),
    (lambda: SettingBounds(-1), "SettingBounds.longest must be an integer >= 0, not -1"),
]


@pytest.mark.parametrize(("build", "said"), _EMPTY_OR_NEGATIVE)
def test_an_empty_or_negative_bound_is_refused_where_it_is_made(
    build: Callable[[], object], said: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(said)}"):
        build()


_TOO_LARGE = [
    (lambda: NumberBounds(10**6), "NumberBounds: counts 0..1,000,000 and the edges make"
     " 2,000,036,000,162 cases; the kit enumerates at most 50,000,000"),
    (lambda: NumberBounds(10**5000), "NumberBounds: counts 0..a 5001-digit integer and the"
     " edges make a 10001-digit integer cases"),
    (lambda: GrantOrderBounds(30, 4), "GrantOrderBounds: backlogs of 0..30 entries, skip counts"
     " 0..4 make 1,281,445,312 cases"),
    (lambda: SettingBounds(9), "SettingBounds: setting texts of 0..9 characters make"
     " 10,374,969,897 cases"),
    (lambda: ProtocolBounds((2,), 999_999, None), "ProtocolBounds.largest_budget 999,999 makes"
     " 8,000,005 events in the tick protocol's first state alone"),
    (lambda: BoundsChoice(largest_budget=999_999), "largest budget 999,999 makes 8,000,005"
     " events"),
]  # fmt: skip


@pytest.mark.parametrize(("build", "said"), _TOO_LARGE)
def test_a_domain_beyond_the_kits_is_refused_with_its_size(
    build: Callable[[], object], said: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(said)}[^\n]*$"):
        build()


def test_the_largest_domains_taken_are_at_the_limits() -> None:
    ProtocolBounds((1, 2), MOST_BUDGET, 0)
    NumberBounds(int((MOST_CASES / 2) ** 0.5) - 9, edges=())
    for level in ("quick", "default", "deep"):
        NumberBounds.at(level), GrantOrderBounds.at(level), SettingBounds.at(level)
        ProtocolBounds.at(level)


def test_a_misspelt_level_is_refused_naming_the_levels_by_every_bound() -> None:
    for bounds in (
        NumberBounds, FlagBounds, SettingBounds, HeaderBounds, GrantOrderBounds,
        ProtocolBounds, SelectionBounds,
    ):  # fmt: skip
        with pytest.raises(ValueError, match="unknown level 'quik': the levels are quick"):
            bounds.at("quik")  # type: ignore[arg-type]


def test_a_huge_bound_choice_is_quoted_short() -> None:
    with pytest.raises(ValueError, match="skip caps are at least 1, not") as refused:
        BoundsChoice(skip_caps=(-(10**5000),))
    assert len(str(refused.value)) < 200
