"""The public decisions check: it agrees on the kernel, and a public decision broken
in its wrapper alone (the protocol's unchecked bodies untouched) makes ``verify``
exit 1."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest

import policy
from oracle.checks import verify
from oracle.checks.decisions import (
    DECISION_NAMES,
    PUBLIC_DECISIONS,
    lane_headers,
    setting_texts,
)
from oracle.checks.framework import Level, Partial, merge
from policy import Lane


def _whole_check(level: Level = "quick") -> Partial:
    return merge([PUBLIC_DECISIONS.run(level, unit) for unit in PUBLIC_DECISIONS.units(level)])


def test_the_kernel_agrees_at_quick_bounds() -> None:
    found = _whole_check()
    assert found.disagreements == 0, [c.summary for c in found.counterexamples]
    assert found.counts == {
        "slice_grant_expired cases": 17 * 17 * 2,
        "backlog_admits cases": 17 * 17,
        "slice_takes_tick cases": 4,
        "parse_grant_rounds cases": 1 + (1 + 11 + 11**2 + 11**3 + 14) * 4,
        "parse_lane cases": 1 + (16 + 64 + 8 + 8) * 4,
    }
    assert set(PUBLIC_DECISIONS.units("deep")) == set(DECISION_NAMES)


def test_the_domains_hold_the_edges() -> None:
    texts = set(setting_texts(3))
    assert {None, "", "+1", "\u001c1", "\u30009\u00a0", "18446744073709551616"} <= texts
    headers = set(lane_headers())
    assert {None, "HiGh", " \tLOW\n", "\u001cnormal"} <= headers


def _broken_parse_lane(header: str | None) -> Lane:  # trims ASCII white space only
    lanes = {lane.label: lane for lane in Lane}
    return Lane.NORMAL if header is None else lanes.get(header.strip(" \t\n").lower(), Lane.NORMAL)


BROKEN: dict[str, tuple[Callable[..., object], str]] = {
    # each breaks one public wrapper only; the protocol's bodies are untouched
    "slice_grant_expired": (
        lambda s, b, p: b > 0 and p and s > b,
        "slice_grant_expired(1, 1, True): kernel False, spec True",
    ),
    "backlog_admits": (lambda n, _budget: n < 2, "backlog_admits(0, 0): kernel True, spec False"),
    "slice_takes_tick": (lambda y, _others: not y, "slice_takes_tick(True, False): kernel False"),
    "parse_grant_rounds": (
        lambda raw: 8 if raw is None or not raw.strip().isdigit() else int(raw.strip()),
        "parse_grant_rounds('\u0663'): kernel 3, spec 8",
    ),
    "parse_lane": (
        _broken_parse_lane,
        "parse_lane('\\u3000LOW\\xa0'): kernel <Lane.NORMAL: 1>, spec 0",
    ),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_public_decision_makes_verify_exit_1(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken, smallest = BROKEN[name]
    monkeypatch.setattr(policy, name, broken)
    monkeypatch.setattr(verify, "CHECKS", (PUBLIC_DECISIONS,))
    out = io.StringIO()
    assert verify.verify("quick", jobs=1, out=out, err=io.StringIO()) == 1
    assert "public decisions: FAIL" in out.getvalue()
    assert smallest in out.getvalue(), out.getvalue()
