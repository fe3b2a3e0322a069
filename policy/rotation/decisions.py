"""The pure decisions of speculative slot rotation (see docs/rotation.md).

Each function here is one rule of the specification, a plain function of plain
data, so that a host scheduler, the tick protocol in :mod:`policy.rotation.protocol` and
the oracle can all call the same definition.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from returns.maybe import Maybe, Nothing, Some

from policy.rotation.lanes import Lane

__all__ = [
    "BACKLOG_CAP",
    "DEFAULT_GRANT_ROUNDS",
    "SKIP_CAP",
    "backlog_admits",
    "next_grant_index",
    "parse_grant_rounds",
    "slice_grant_expired",
    "slice_takes_tick",
]

#: Slices a holder may run per grant while others wait.
DEFAULT_GRANT_ROUNDS = 8
#: Waiting entries (parked jobs and waiters together) the backlog admits.
BACKLOG_CAP = 2
#: Skips after which an entry must be granted next, whatever its lane.
SKIP_CAP = 2

# An optional "+", leading zeros, then at most 20 significant ASCII digits
# (str.isdigit would accept other scripts; a bounded length keeps int() cheap).
_GRANT_ROUNDS_SYNTAX = re.compile(r"\+?0*([0-9]{1,20})")
_GRANT_ROUNDS_LIMIT = 2**64 - 1  # the host reads the setting as an unsigned 64-bit integer
# Unicode White_Space, as a host's trim() strips it: Python's str.strip() would
# also strip the ASCII separators U+001C..U+001F, which are not white space.
_WHITESPACE = "".join(
    c for c in map(chr, range(0x3001)) if c.isspace() and c not in "\x1c\x1d\x1e\x1f"
)


def parse_grant_rounds(raw: str | None) -> int:
    """The grant budget from the raw text of the host's setting; never an error.

    Unset, empty, negative, fractional, underscored or out-of-range text gives
    :data:`DEFAULT_GRANT_ROUNDS`; ``0`` disables rotation.

    >>> [parse_grant_rounds(raw) for raw in (None, "", "4", " 12 ", "0", "-3", "8.5", "1_000")]
    [8, 8, 4, 12, 0, 8, 8, 8]
    """
    if raw is None:
        return DEFAULT_GRANT_ROUNDS
    matched = _GRANT_ROUNDS_SYNTAX.fullmatch(raw.strip(_WHITESPACE))
    if matched is None:
        return DEFAULT_GRANT_ROUNDS
    value = int(matched.group(1))
    return value if value <= _GRANT_ROUNDS_LIMIT else DEFAULT_GRANT_ROUNDS


def slice_grant_expired(slices_in_grant: int, budget: int, backlog_pending: bool) -> bool:
    """Whether the holder must hand the slot over at this round boundary.

    Only contention ends a grant, and ``>=`` makes a holder that overran its
    budget while alone hand over at the first boundary after someone waits.

    >>> slice_grant_expired(8, 8, True), slice_grant_expired(100, 8, False)
    (True, False)
    >>> slice_grant_expired(100, 0, True)
    False
    """
    return budget > 0 and backlog_pending and slices_in_grant >= budget


def backlog_admits(backlog_len: int, budget: int) -> bool:
    """Whether a further request may wait for the slot (else: classic decode).

    >>> backlog_admits(1, 8), backlog_admits(2, 8), backlog_admits(0, 0)
    (True, False, False)
    """
    return budget > 0 and backlog_len < BACKLOG_CAP


def next_grant_index(entries: Sequence[tuple[Lane, int]], skip_cap: int = SKIP_CAP) -> Maybe[int]:
    """The backlog position to grant next, from each entry's ``(lane, skipped)``.

    An entry skipped ``skip_cap`` times or more makes the most skipped entry go
    next (earliest among equals, lane ignored); otherwise the highest lane goes,
    earliest among equals.

    >>> N, H = Lane.NORMAL, Lane.HIGH
    >>> next_grant_index([(N, 0), (H, 0)]), next_grant_index([(H, 0), (N, 2)])
    (<Some: 1>, <Some: 1>)
    >>> next_grant_index([])
    <Nothing>
    """
    count = len(entries)
    if count <= 1:  # both rules choose the only entry
        return _SOME_INDEX[0] if count else Nothing
    most_skipped = max(range(count), key=lambda i: (entries[i][1], -i))
    if entries[most_skipped][1] >= skip_cap:
        return _some_index(most_skipped)
    return _some_index(max(range(count), key=lambda i: (entries[i][0], -i)))


#: ``Some(i)`` for the positions of every backlog the protocol holds (and more), built once.
_SOME_INDEX: tuple[Maybe[int], ...] = tuple(Some(index) for index in range(8))


def _some_index(index: int) -> Maybe[int]:
    return _SOME_INDEX[index] if index < len(_SOME_INDEX) else Some(index)


def slice_takes_tick(yielded: bool, others_have_work: bool) -> bool:
    """Whether speculative work takes this tick: it alternates with classic work.

    >>> slice_takes_tick(True, True), slice_takes_tick(False, True), slice_takes_tick(True, False)
    (False, True, True)
    """
    return not others_have_work or not yielded
