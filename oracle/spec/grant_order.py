"""The pure decisions of rotation.md, written a second time for obviousness.

Every function quotes the sentence of ``shared/spec/rotation.md`` (or of
``docs/rotation.md``, where the project decided what the spec leaves open) that
it implements. Plain stdlib only; nothing is imported from ``policy``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

# "Three priority lanes, ordered LOW = 0 < NORMAL = 1 < HIGH = 2; higher wins."
LOW, NORMAL, HIGH = 0, 1, 2

# | DEFAULT_GRANT_ROUNDS | 8 | slices a holder may run per grant when others wait |
DEFAULT_GRANT_ROUNDS = 8
# | BACKLOG_CAP | 2 | waiting entries (parked jobs + not-yet-started waiters together) admitted |
BACKLOG_CAP = 2
# | SKIP_CAP | 2 | after this many skips an entry must be granted next |
SKIP_CAP = 2

# docs/rotation.md: '"White space" is Unicode's White_Space, as a host's trim() strips it
# (not the ASCII separators U+001C..U+001F, which Python's str.strip() would also remove).'
# The 25 code points of the White_Space property (Unicode PropList.txt), written out by hand.
UNICODE_WHITE_SPACE = (
    "\u0009"  # CHARACTER TABULATION
    "\u000a"  # LINE FEED
    "\u000b"  # LINE TABULATION
    "\u000c"  # FORM FEED
    "\u000d"  # CARRIAGE RETURN
    "\u0020"  # SPACE
    "\u0085"  # NEXT LINE
    "\u00a0"  # NO-BREAK SPACE
    "\u1680"  # OGHAM SPACE MARK
    "\u2000"  # EN QUAD
    "\u2001"  # EM QUAD
    "\u2002"  # EN SPACE
    "\u2003"  # EM SPACE
    "\u2004"  # THREE-PER-EM SPACE
    "\u2005"  # FOUR-PER-EM SPACE
    "\u2006"  # SIX-PER-EM SPACE
    "\u2007"  # FIGURE SPACE
    "\u2008"  # PUNCTUATION SPACE
    "\u2009"  # THIN SPACE
    "\u200a"  # HAIR SPACE
    "\u2028"  # LINE SEPARATOR
    "\u2029"  # PARAGRAPH SEPARATOR
    "\u202f"  # NARROW NO-BREAK SPACE
    "\u205f"  # MEDIUM MATHEMATICAL SPACE
    "\u3000"  # IDEOGRAPHIC SPACE
)

# docs/rotation.md: '"64-bit range" is read as unsigned (the host parses an unsigned integer)'.
LARGEST_BUDGET = 2**64 - 1
DIGITS_OF_LARGEST_BUDGET = len(str(LARGEST_BUDGET))  # 20


def trim_white_space(text: str) -> str:
    """Remove Unicode White_Space from both ends of ``text`` (and nothing else).

    Used for the budget setting and for the lane header alike.

    >>> trim_white_space(" \\t12\\n ")
    '12'
    >>> trim_white_space("\\u3000high\\u00a0")
    'high'
    >>> trim_white_space("\\u001c4\\u001f")  # information separators are not White_Space
    '\\x1c4\\x1f'
    """
    # str.strip(chars) removes, from both ends, every character that is in `chars`.
    return text.strip(UNICODE_WHITE_SPACE)


def parse_lane(header: str | None) -> int:
    """The lane of a request, from its client-supplied header value.

    rotation.md: 'A lane comes from a client-supplied header value: trimmed,
    case-insensitive "high", "normal", "low"; anything else (missing, empty,
    unknown) is NORMAL.'

    >>> parse_lane(" HIGH ") == HIGH
    True
    >>> parse_lane("low") == LOW
    True
    >>> parse_lane("Normal") == NORMAL
    True
    >>> [parse_lane(h) == NORMAL for h in (None, "", "urgent", "hi gh")]
    [True, True, True, True]
    """
    if header is None:  # "missing"
        return NORMAL
    word = trim_white_space(header).lower()  # "trimmed, case-insensitive"
    if word == "high":
        return HIGH
    if word == "normal":
        return NORMAL
    if word == "low":
        return LOW
    return NORMAL  # "anything else (missing, empty, unknown) is NORMAL"


def _is_ascii_digits(text: str) -> bool:
    """True when ``text`` is one or more of the ASCII digits 0..9 and nothing else.

    docs/rotation.md: 'only ASCII digits count, so "\\u0663" (an Arabic-Indic three)
    is not a budget.'  (Among ASCII characters, ``isdigit`` holds only for 0..9.)

    >>> [_is_ascii_digits(t) for t in ("007", "", "1_000", "\\u0663", "\\u00b2")]
    [True, False, False, False, False]
    """
    return text != "" and text.isascii() and text.isdigit()


def parse_grant_rounds(raw: str | None) -> int:
    """The grant budget from the raw text of the budget setting; never an error.

    rotation.md: 'Strip surrounding whitespace (tabs, newlines too); a non-negative
    decimal integer (an optional leading +, leading zeros allowed) is the budget;
    anything else — unset, empty, negative, fractional, words, 1_000, out of a
    64-bit range — is the default 8. Never an error.'

    docs/rotation.md: 'text with surrounding white space trimmed that is +?[0-9]+
    with a value <= 2^64 - 1 is the budget; anything else is 8; never an error,
    whatever the length'.

    The table of rotation.md:

    >>> [parse_grant_rounds(r) for r in (None, "", "4", " 12 ", "0")]
    [8, 8, 4, 12, 0]
    >>> [parse_grant_rounds(r) for r in ("abc", "-3", "8.5", "eight")]
    [8, 8, 8, 8]

    The readings of docs/rotation.md:

    >>> [parse_grant_rounds(r) for r in ("+5", "\\t007\\n", "1_000", "++1", "+", "\\u0663")]
    [5, 7, 8, 8, 8, 8]
    >>> parse_grant_rounds("18446744073709551615"), parse_grant_rounds("18446744073709551616")
    (18446744073709551615, 8)
    >>> parse_grant_rounds("0" * 100_000 + "3"), parse_grant_rounds("9" * 100_000)
    (3, 8)
    >>> parse_grant_rounds("\\u20036\\u3000"), parse_grant_rounds("\\u001c6")
    (6, 8)
    """
    if raw is None:  # "unset"
        return DEFAULT_GRANT_ROUNDS
    text = trim_white_space(raw)  # "Strip surrounding whitespace (tabs, newlines too)"
    if text.startswith("+"):  # "an optional leading +" (one, at most)
        text = text[1:]
    if not _is_ascii_digits(text):  # empty, negative, fractional, words, 1_000, ...
        return DEFAULT_GRANT_ROUNDS
    significant = text.lstrip("0")  # "leading zeros allowed"
    # "out of a 64-bit range": a number of more than 20 significant digits is out of
    # range whatever its digits are, so it is never handed to int() (cost stays small).
    if len(significant) > DIGITS_OF_LARGEST_BUDGET:
        return DEFAULT_GRANT_ROUNDS
    value = int(significant) if significant != "" else 0
    if value > LARGEST_BUDGET:
        return DEFAULT_GRANT_ROUNDS
    return value


def slice_grant_expired(slices_in_grant: int, budget: int, backlog_pending: bool) -> bool:
    """Whether the holder's grant has run out (it parks at this round boundary).

    rotation.md: 'slice_grant_expired(slices_in_grant, budget, backlog_pending)
    -> bool is budget > 0 and backlog_pending and slices_in_grant >= budget.'

    >>> [slice_grant_expired(s, b, p) for s, b, p in
    ...  [(8, 8, True), (100, 8, True), (7, 8, True), (100, 8, False), (100, 0, True)]]
    [True, True, False, False, False]
    """
    return budget > 0 and backlog_pending and slices_in_grant >= budget


def backlog_admits(backlog_len: int, budget: int) -> bool:
    """Whether one more waiter may enter the backlog.

    rotation.md: 'backlog_admits(backlog_len, budget) -> bool is budget > 0 and
    backlog_len < BACKLOG_CAP. backlog_len counts parked jobs and waiters together.'

    >>> [backlog_admits(n, b) for n, b in [(0, 8), (1, 8), (2, 8), (5, 8), (0, 0)]]
    [True, True, False, False, False]
    """
    return budget > 0 and backlog_len < BACKLOG_CAP


def slice_takes_tick(yielded: bool, others_have_work: bool) -> bool:
    """Whether speculation (rather than classic work) takes the tick.

    rotation.md: 'slice_takes_tick(yielded, others_have_work) -> bool is
    not others_have_work or not yielded.'

    >>> [slice_takes_tick(y, o) for y, o in [(False, False), (True, False), (False, True)]]
    [True, True, True]
    >>> slice_takes_tick(True, True)
    False
    """
    return not others_have_work or not yielded


def next_grant_index(entries: Sequence[tuple[int, int]], skip_cap: int = SKIP_CAP) -> int | None:
    """The index of the backlog entry to grant next; None for an empty backlog.

    rotation.md: 'entries is the backlog in order, each (lane, skipped); returns
    the index to grant, or nothing for an empty backlog:
    1. If some entry has skipped >= skip_cap, choose the entry with the largest
       skipped; among equals, the earliest. The lane is ignored.
    2. Otherwise choose the entry of the highest lane; among equals, the earliest.'

    Written as a sort: order the indices by the rule's criteria, take the first.

    The table of rotation.md:

    >>> N, H, L = NORMAL, HIGH, LOW
    >>> print(next_grant_index([]))
    None
    >>> [next_grant_index(e) for e in (
    ...     [(N, 0)], [(N, 0), (N, 0)], [(N, 0), (H, 0)], [(H, 0), (N, 0), (H, 0)],
    ...     [(L, 0), (N, 0)], [(L, 0), (L, 0), (N, 0)], [(H, 0), (N, 2)], [(H, 0), (L, 2)],
    ...     [(H, 0), (N, 1)], [(N, 2), (H, 3)], [(N, 2), (L, 2)])]
    [0, 0, 1, 0, 1, 2, 1, 1, 0, 1, 0]
    >>> next_grant_index([(H, 0), (N, 1)], skip_cap=1)
    1
    """
    if len(entries) == 0:  # "or nothing for an empty backlog"
        return None

    def lane_of(index: int) -> int:
        return entries[index][0]

    def skipped_of(index: int) -> int:
        return entries[index][1]

    indices = range(len(entries))
    if any(skipped_of(i) >= skip_cap for i in indices):
        # Rule 1: "the largest skipped; among equals, the earliest. The lane is ignored."
        ordered = sorted(indices, key=lambda i: (-skipped_of(i), i))
    else:
        # Rule 2: "the entry of the highest lane; among equals, the earliest."
        ordered = sorted(indices, key=lambda i: (-lane_of(i), i))
    return ordered[0]


@dataclass(frozen=True, slots=True)
class SpecEntry:
    """One backlog entry: a waiter that never ran (parked False) or a parked job."""

    request: str | int
    lane: int
    parked: bool
    skipped: int = 0
    cancelled: bool = False


def take_next_grantee(
    backlog: tuple[SpecEntry, ...], skip_cap: int = SKIP_CAP
) -> tuple[SpecEntry, tuple[SpecEntry, ...]] | None:
    """Take the next grantee out of the backlog: (the chosen entry, the backlog left).

    rotation.md: 'Skip accounting belongs to taking the next grantee out of the
    backlog: after the index is chosen, EVERY other entry's skipped grows by one
    (whatever its lane), and the chosen entry leaves the backlog with its count.'

    >>> a = SpecEntry("A", NORMAL, parked=True, skipped=1)
    >>> b = SpecEntry("B", NORMAL, parked=True)
    >>> chosen, rest = take_next_grantee((a, b))  # budget-1 golden, t3: [A1, B0] -> A
    >>> chosen.request, chosen.skipped, [(e.request, e.skipped) for e in rest]
    ('A', 1, [('B', 1)])
    >>> print(take_next_grantee(()))
    None
    """
    index = next_grant_index([(entry.lane, entry.skipped) for entry in backlog], skip_cap)
    if index is None:
        return None
    chosen = backlog[index]  # "the chosen entry leaves the backlog with its count"
    others = tuple(
        replace(entry, skipped=entry.skipped + 1)  # "EVERY other entry's skipped grows by one"
        for position, entry in enumerate(backlog)
        if position != index
    )
    return chosen, others


def re_enter(backlog: tuple[SpecEntry, ...], entry: SpecEntry) -> tuple[SpecEntry, ...]:
    """An entry joins the backlog.

    rotation.md: 'An entry that re-enters the backlog (a job parked again) goes
    to the back with skipped = 0.' A waiter joins the same way, with no skips.

    >>> [(e.request, e.skipped) for e in re_enter((SpecEntry("A", LOW, False, 2),),
    ...                                            SpecEntry("B", HIGH, True, 3))]
    [('A', 2), ('B', 0)]
    """
    return (*backlog, replace(entry, skipped=0))
