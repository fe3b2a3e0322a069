"""The pure decisions of speculative slot rotation (see docs/rotation.md).

Each function here is one rule of the specification, a plain function of plain
data, so that a host scheduler, the tick protocol in :mod:`policy.rotation.protocol` and
the oracle can all call the same definition.

Each public decision checks its arguments' types (a ``TypeError``: a budget of
``nan`` or ``2.5`` would silently change the rule) and their ranges by one rule,
:func:`at_least` (a ``ValueError``: counts, budgets and skip counts are at least
0, a skip cap at least 1, as the scenario loader reads it), and then applies its rule,
which is a function of its own, without the checks (:func:`grant_expired`,
:func:`backlog_has_room`, :func:`grant_position`, :func:`takes_tick`). The tick
protocol calls those: it checked every value where it entered
(``apply_event``), so it does not check the same value twice.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from returns.maybe import Maybe, Nothing, Some

from policy.rotation.lanes import Lane
from policy.text import shown, trim

__all__ = [
    "BACKLOG_CAP",
    "DEFAULT_GRANT_ROUNDS",
    "SKIP_CAP",
    "at_least",
    "backlog_admits",
    "backlog_has_room",
    "grant_expired",
    "grant_position",
    "next_grant_index",
    "parse_grant_rounds",
    "require_flag",
    "require_whole",
    "slice_grant_expired",
    "slice_takes_tick",
    "takes_tick",
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


# The two type rules of rotation's values, used by the decisions below, the
# records and the tick protocol (whose hot path tests ``type(value) is int`` or
# ``value is True or value is False`` inline first: the common case costs one
# comparison).


def is_whole(value: object) -> bool:
    """Whether ``value`` can be a count, a budget or a skip cap: an ``int``, and not
    a bool (``True`` is 1 to Python, but a budget of ``True`` is a mistake).

    >>> is_whole(3), is_whole(10**400), is_whole(True), is_whole(2.0), is_whole("3")
    (True, True, False, False, False)
    """
    return isinstance(value, int) and not isinstance(value, bool)


def is_flag(value: object) -> bool:
    """Whether ``value`` is ``True`` or ``False`` (truthiness would hide a ``"no"``).

    >>> is_flag(False), is_flag(0), is_flag(None)
    (True, False, False)
    """
    return value is True or value is False


def require_whole(argument: str, value: object) -> None:
    """A ``TypeError`` naming ``argument`` unless :func:`is_whole` holds for ``value``."""
    if not is_whole(value):
        raise TypeError(f"{argument} must be an int, not {type(value).__name__}")


def at_least(argument: str, value: int, least: int) -> None:
    """The range rule of rotation's whole numbers (``value`` already an int): a count,
    a budget or a skip count is at least 0, a skip cap at least 1 (0 would make every
    entry overdue at once; the scenario loader refuses it too). A ``ValueError``
    below ``least``.

    >>> at_least("budget", 0, 0)
    >>> at_least("skip_cap", 0, 1)
    Traceback (most recent call last):
    ...
    ValueError: skip_cap must be at least 1, not 0
    """
    if value < least:
        raise ValueError(f"{argument} must be at least {least}, not {shown(value)}")


def require_flag(argument: str, value: object) -> None:
    """A ``TypeError`` naming ``argument`` unless :func:`is_flag` holds for ``value``."""
    if not is_flag(value):
        raise TypeError(f"{argument} must be True or False, not {type(value).__name__}")


def parse_grant_rounds(raw: str | None) -> int:
    """The grant budget from the raw text of the host's setting; never an error.

    Unset, empty, negative, fractional, underscored or out-of-range text gives
    :data:`DEFAULT_GRANT_ROUNDS`; ``0`` disables rotation. Surrounding white
    space is trimmed by :func:`policy.text.trim` (the same rule as a lane's).
    A value that is not text (``str``) or None is the host's mistake, not a
    setting: a ``TypeError``.

    >>> [parse_grant_rounds(raw) for raw in (None, "", "4", " 12 ", "0", "-3", "8.5", "1_000")]
    [8, 8, 4, 12, 0, 8, 8, 8]
    >>> parse_grant_rounds(5)
    Traceback (most recent call last):
    ...
    TypeError: parse_grant_rounds reads the setting's text (str) or None, not int
    """
    if raw is None:
        return DEFAULT_GRANT_ROUNDS
    if not isinstance(raw, str):
        raise TypeError(
            f"parse_grant_rounds reads the setting's text (str) or None, not {type(raw).__name__}"
        )
    matched = _GRANT_ROUNDS_SYNTAX.fullmatch(trim(raw))
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

    Counts and the budget must be ints, the flag True or False (a ``TypeError``
    otherwise: ``nan`` or ``2.5`` would silently change the rule), and neither
    count nor budget negative (a ``ValueError``: :func:`at_least`).

    >>> slice_grant_expired(-1, 3, True)
    Traceback (most recent call last):
    ...
    ValueError: slices_in_grant must be at least 0, not -1
    """
    require_whole("slices_in_grant", slices_in_grant)
    require_whole("budget", budget)
    require_flag("backlog_pending", backlog_pending)
    at_least("slices_in_grant", slices_in_grant, 0)
    at_least("budget", budget, 0)
    return grant_expired(slices_in_grant, budget, backlog_pending)


def grant_expired(slices_in_grant: int, budget: int, backlog_pending: bool) -> bool:
    """:func:`slice_grant_expired`'s rule, for values already checked."""
    return budget > 0 and backlog_pending and slices_in_grant >= budget


def backlog_admits(backlog_len: int, budget: int) -> bool:
    """Whether a further request may wait for the slot (else: classic decode).

    >>> backlog_admits(1, 8), backlog_admits(2, 8), backlog_admits(0, 0)
    (True, False, False)

    Both must be ints (a ``TypeError``) and not negative (a ``ValueError``).

    >>> backlog_admits(-5, 3)
    Traceback (most recent call last):
    ...
    ValueError: backlog_len must be at least 0, not -5
    """
    require_whole("backlog_len", backlog_len)
    require_whole("budget", budget)
    at_least("backlog_len", backlog_len, 0)
    at_least("budget", budget, 0)
    return backlog_has_room(backlog_len, budget)


def backlog_has_room(backlog_len: int, budget: int) -> bool:
    """:func:`backlog_admits`'s rule, for values already checked."""
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

    ``entries`` must be a sequence (a list or a tuple, not text, a set or a map:
    entries are read by position), each entry a ``(Lane, int)`` pair and
    ``skip_cap`` an int (a ``TypeError`` otherwise); no skip count negative and the
    skip cap at least 1 (a ``ValueError``).

    >>> next_grant_index({(H, 0): 1})
    Traceback (most recent call last):
    ...
    TypeError: entries must be a sequence of (Lane, skipped) pairs, not dict
    """
    given: object = entries
    if isinstance(given, str | bytes | bytearray) or not isinstance(given, Sequence):
        raise TypeError(
            f"entries must be a sequence of (Lane, skipped) pairs, not {type(given).__name__}"
        )
    require_whole("skip_cap", skip_cap)
    at_least("skip_cap", skip_cap, 1)
    for entry in entries:
        if not isinstance(entry, tuple) or len(entry) != 2 or not isinstance(entry[0], Lane):
            raise TypeError(
                f"each entry must be a (Lane, skipped) pair, not {type(entry).__name__}"
            )
        require_whole("skipped", entry[1])
        at_least("skipped", entry[1], 0)
    chosen = grant_position(entries, skip_cap)
    return Nothing if chosen is None else Some(chosen)


def grant_position(entries: Sequence[tuple[Lane, int]], skip_cap: int) -> int | None:
    """The rule itself (``next_grant_index`` without its checks and its ``Maybe``):
    the first entry of the greatest ``skipped`` if that reaches ``skip_cap``, else
    the first entry of the highest lane; None for no entries."""
    count = len(entries)
    if count <= 1:  # both rules choose the only entry
        return 0 if count else None
    most, most_skipped = 0, entries[0][1]
    for index in range(1, count):
        skipped = entries[index][1]
        if skipped > most_skipped:  # strictly: the earliest among equals stays
            most, most_skipped = index, skipped
    if most_skipped >= skip_cap:
        return most
    best, best_lane = 0, entries[0][0]
    for index in range(1, count):
        lane = entries[index][0]
        if lane > best_lane:
            best, best_lane = index, lane
    return best


def slice_takes_tick(yielded: bool, others_have_work: bool) -> bool:
    """Whether speculative work takes this tick: it alternates with classic work.

    >>> slice_takes_tick(True, True), slice_takes_tick(False, True), slice_takes_tick(True, False)
    (False, True, True)
    """
    require_flag("yielded", yielded)
    require_flag("others_have_work", others_have_work)
    return takes_tick(yielded, others_have_work)


def takes_tick(yielded: bool, others_have_work: bool) -> bool:
    """:func:`slice_takes_tick`'s rule, for values already checked."""
    return not others_have_work or not yielded
