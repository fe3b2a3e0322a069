"""Every table of rotation.md, as data, against the kernel's pure decisions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.maybe import Nothing, Some

from policy import (
    BACKLOG_CAP,
    DEFAULT_GRANT_ROUNDS,
    SKIP_CAP,
    Lane,
    backlog_admits,
    next_grant_index,
    parse_grant_rounds,
    parse_lane,
    slice_grant_expired,
    slice_takes_tick,
)

L, N, H = Lane.LOW, Lane.NORMAL, Lane.HIGH


def test_constants() -> None:
    assert (DEFAULT_GRANT_ROUNDS, BACKLOG_CAP, SKIP_CAP) == (8, 2, 2)
    assert L < N < H
    assert (int(L), int(N), int(H)) == (0, 1, 2)


LANE_HEADERS = [
    ("high", H),
    ("HIGH", H),
    ("  High\t", H),
    ("normal", N),
    ("low", L),
    (" LOW \n", L),
    (None, N),
    ("", N),
    ("   ", N),
    ("urgent", N),
    ("hi gh", N),
    ("2", N),
]


@pytest.mark.parametrize(("header", "lane"), LANE_HEADERS)
def test_lane_header(header: str | None, lane: Lane) -> None:
    assert parse_lane(header) is lane


GRANT_ROUNDS = [
    # the spec's table
    (None, 8),
    ("", 8),
    ("4", 4),
    (" 12 ", 12),
    ("0", 0),
    ("abc", 8),
    ("-3", 8),
    ("8.5", 8),
    ("eight", 8),
    # the sentence around it
    ("\t4\n", 4),
    ("+5", 5),
    ("007", 7),
    ("+0", 0),
    ("1_000", 8),
    ("-0", 8),
    ("++5", 8),
    ("+", 8),
    ("4 4", 8),
    ("0x10", 8),
    ("1e3", 8),
    ("\u0663", 8),  # an Arabic-Indic digit: not a decimal integer of the setting
    (str(2**64 - 1), 2**64 - 1),
    (str(2**64), 8),
    ("9" * 40, 8),
]


@pytest.mark.parametrize(("raw", "budget"), GRANT_ROUNDS)
def test_parse_grant_rounds(raw: str | None, budget: int) -> None:
    assert parse_grant_rounds(raw) == budget


EXPIRY = [
    (8, 8, True, True),
    (100, 8, True, True),
    (7, 8, True, False),
    (100, 8, False, False),
    (100, 0, True, False),
]


@pytest.mark.parametrize(("slices", "budget", "pending", "expired"), EXPIRY)
def test_slice_grant_expired(slices: int, budget: int, pending: bool, expired: bool) -> None:
    assert slice_grant_expired(slices, budget, pending) is expired


ADMITS = [(0, 8, True), (1, 8, True), (2, 8, False), (5, 8, False), (0, 0, False)]


@pytest.mark.parametrize(("length", "budget", "admits"), ADMITS)
def test_backlog_admits(length: int, budget: int, admits: bool) -> None:
    assert backlog_admits(length, budget) is admits


GRANT_ORDER: list[tuple[list[tuple[Lane, int]], int | None]] = [
    ([], None),
    ([(N, 0)], 0),
    ([(N, 0), (N, 0)], 0),
    ([(N, 0), (H, 0)], 1),
    ([(H, 0), (N, 0), (H, 0)], 0),
    ([(L, 0), (N, 0)], 1),
    ([(L, 0), (L, 0), (N, 0)], 2),
    ([(H, 0), (N, 2)], 1),
    ([(H, 0), (L, 2)], 1),
    ([(H, 0), (N, 1)], 0),
    ([(N, 2), (H, 3)], 1),
    ([(N, 2), (L, 2)], 0),
]


@pytest.mark.parametrize(("entries", "chosen"), GRANT_ORDER)
def test_next_grant_index(entries: list[tuple[Lane, int]], chosen: int | None) -> None:
    assert next_grant_index(entries) == (Nothing if chosen is None else Some(chosen))


def test_next_grant_index_custom_skip_cap() -> None:
    assert next_grant_index([(H, 0), (N, 2)], skip_cap=3) == Some(0)
    assert next_grant_index([(H, 0), (N, 1)], skip_cap=1) == Some(1)


TAKES_TICK = [
    (False, False, True),
    (True, False, True),
    (False, True, True),
    (True, True, False),
]


@pytest.mark.parametrize(("yielded", "others", "takes"), TAKES_TICK)
def test_slice_takes_tick(yielded: bool, others: bool, takes: bool) -> None:
    assert slice_takes_tick(yielded, others) is takes


def _reference_grant_rounds(raw: str) -> int:
    """The setting's rule, read literally: trim, optional '+', ASCII digits, u64."""
    text = raw.strip(
        " \t\n\r\x0b\x0c\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
        "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
    )
    digits = text.removeprefix("+")
    if not digits or any(c not in "0123456789" for c in digits):
        return 8
    significant = digits.lstrip("0") or "0"
    if len(significant) > 20 or int(significant) > 2**64 - 1:
        return 8
    return int(significant)


setting_text = st.one_of(
    st.text(),
    st.from_regex(r"\s*\+?0*[0-9]{1,25}\s*", fullmatch=True),
    st.integers(-(2**70), 2**70).map(str),
    st.integers(0, 5000).map(lambda n: "0" * n + "7"),
    st.integers(4000, 6000).map(lambda n: "9" * n),
)


@given(setting_text)
def test_parse_grant_rounds_on_any_text(raw: str) -> None:
    assert parse_grant_rounds(raw) == _reference_grant_rounds(raw)
