"""The grant order's rule (``grant_position``, what ``next_grant_index`` and the
tick protocol use), against the rule as first written, on every small backlog."""

from __future__ import annotations

import itertools

from policy.rotation import Lane, next_grant_index
from policy.rotation.decisions import grant_position


def reference_grant_index(entries: list[tuple[Lane, int]], skip_cap: int) -> int | None:
    """The rule as first written: ``max`` over (skipped, -position), then (lane, -position)."""
    if not entries:
        return None
    most = max(range(len(entries)), key=lambda i: (entries[i][1], -i))
    if entries[most][1] >= skip_cap:
        return most
    return max(range(len(entries)), key=lambda i: (entries[i][0], -i))


def test_grant_position_is_the_rule_on_every_small_backlog() -> None:
    pairs = [(lane, skipped) for lane in Lane for skipped in range(4)]
    checked = 0
    for length in range(5):
        for entries in itertools.product(pairs, repeat=length):
            for skip_cap in range(4):
                expected = reference_grant_index(list(entries), skip_cap)
                assert grant_position(entries, skip_cap) == expected, entries
                checked += 1
    assert checked == 4 * sum(12**n for n in range(5))


def test_next_grant_index_on_one_entry_and_on_long_backlogs() -> None:
    N, H = Lane.NORMAL, Lane.HIGH
    assert next_grant_index([(N, 0)]).unwrap() == 0
    assert next_grant_index([(N, 9)], 2).unwrap() == 0
    long = [(N, 0)] * 11 + [(H, 0)]
    assert next_grant_index(long).unwrap() == 11  # beyond the positions built once
    assert next_grant_index([*long[:-1], (N, 2)]).unwrap() == 11
