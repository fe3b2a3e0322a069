"""Exhaustive check of the public single decisions, called as a host calls them.

The tick protocol calls unchecked bodies of the rotation decisions (the
arguments are its own), so the rotation model check never runs the public
``slice_grant_expired``, ``backlog_admits`` and ``slice_takes_tick`` a host
imports, nor the setting and header readers ``parse_grant_rounds`` and
``parse_lane``. This check calls each of them through the ``policy`` package
(looked up at run time, so what is checked is what ``from policy import ...``
gives) and compares it with the executable spec (:mod:`oracle.spec.grant_order`):

- ``slice_grant_expired`` and ``backlog_admits``: every count and budget 0..8 /
  0..16 / 0..64 and the integer edges 2^31 - 1 ... 2^64 - 1, both flags;
- ``slice_takes_tick``: all four flag pairs;
- ``parse_grant_rounds``: unset, and every text of up to 3 / 4 / 5 characters
  over an alphabet of digits, signs, separators, a letter, white space and
  look-alike digits, each bare and wrapped in white space (ASCII, Unicode, and
  the information separator that is not white space), plus long and
  out-of-range edges;
- ``parse_lane``: unset, every spelling of the three lane names in any case,
  bare and wrapped the same ways, and near misses.

The other public decisions are checked by the grant order check
(``next_grant_index``, ``take_next_grantee``), the selection check
(``select_waiting``, ``attempt_admission``) and the selection paths check
(``dispatch_order``, ``admit_many``). A disagreement here has no replayable
scenario: scenarios reach these functions only through the protocol's bodies.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial

import policy
from oracle.checks.framework import Check, Counterexample, Level, Partial
from oracle.spec import grant_order as spec

__all__ = [
    "COUNTS",
    "EDGE_COUNTS",
    "PUBLIC_DECISIONS",
    "SETTING_LENGTH",
    "lane_headers",
    "lane_headers_described",
    "setting_texts",
    "setting_texts_described",
]

#: level -> the largest small count and budget (every one from 0 is checked)
COUNTS: Mapping[Level, int] = {"quick": 8, "default": 16, "deep": 64}
#: counts and budgets at the integer widths a host may read them as
EDGE_COUNTS = (2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1)
#: level -> the longest generated setting text
SETTING_LENGTH: Mapping[Level, int] = {"quick": 3, "default": 4, "deep": 5}
#: the characters of generated setting texts: digits, signs, separators, a letter,
#: white space, an Arabic-Indic three and a full-width one (digits, but not ASCII)
SETTING_ALPHABET = ("0", "1", "9", "+", "-", ".", "_", "e", " ", "\u0663", "\uff11")
#: (before, after) around every text: bare, ASCII white space, Unicode white space,
#: and an information separator, which is not white space
WRAPPINGS = (("", ""), (" \t", "\n"), ("\u3000", "\u00a0"), ("\u001c", ""))
SETTING_EDGES = (
    "18446744073709551615",
    "18446744073709551616",
    "+18446744073709551615",
    "0" * 30 + "18446744073709551615",
    "9" * 21,
    "0" * 1000 + "7",
    "++1",
    "+-1",
    "1e3",
    "0x10",
    "1,000",
    "\u00b2",
    "\u20036\u2003",
    "7\u200b",
)
LANE_NAMES = ("high", "normal", "low")
LANE_NEAR_MISSES = ("", "hi gh", "lowe", "norm", "hIgh\u0307", "h\u0130gh", "\u217cow", "high\x00")


def setting_texts(longest: int) -> Iterator[str | None]:
    """Every budget setting text of at most ``longest`` generated characters, and the
    edges, each bare and wrapped (None is unset); ``SETTING_LENGTH[level]`` at a level."""
    yield None
    texts = itertools.chain(
        (
            "".join(letters)
            for length in range(longest + 1)
            for letters in itertools.product(SETTING_ALPHABET, repeat=length)
        ),
        SETTING_EDGES,
    )
    for text in texts:
        for before, after in WRAPPINGS:
            yield before + text + after


def _spellings(word: str) -> Iterator[str]:
    for upper in itertools.product((False, True), repeat=len(word)):
        yield "".join(c.upper() if u else c for c, u in zip(word, upper, strict=True))


def lane_headers() -> Iterator[str | None]:
    """Every lane header the check reads (None is missing)."""
    yield None
    words = itertools.chain(*(_spellings(name) for name in LANE_NAMES), LANE_NEAR_MISSES)
    for word in words:
        for before, after in WRAPPINGS:
            yield before + word + after


def _counts(level: Level) -> tuple[int, ...]:
    return (*range(COUNTS[level] + 1), *EDGE_COUNTS)


def setting_texts_described(longest: int) -> str:
    """:func:`setting_texts` in words (a bound's description)."""
    return (
        f"unset, every text of 0..{longest} characters over {''.join(SETTING_ALPHABET)!r},"
        f" and {len(SETTING_EDGES)} edges, each bare and in three wrappings"
    )


def lane_headers_described() -> str:
    """:func:`lane_headers` in words (a bound's description)."""
    return (
        f"missing, the three names in every case, and {len(LANE_NEAR_MISSES)} near misses,"
        " each bare and in three wrappings"
    )


def _bounds(level: Level) -> Mapping[str, str]:
    return {
        "counts and budgets": f"0..{COUNTS[level]}, " + ", ".join(map(str, EDGE_COUNTS)),
        "setting texts": setting_texts_described(SETTING_LENGTH[level]),
        "lane headers": lane_headers_described(),
    }


#: the decisions, one unit each
DECISION_NAMES = (
    "slice_grant_expired",
    "backlog_admits",
    "slice_takes_tick",
    "parse_grant_rounds",
    "parse_lane",
)


def _units(level: Level) -> Sequence[object]:
    del level
    return DECISION_NAMES


def _cases(name: str, level: Level) -> Iterator[tuple[object, ...]]:
    flags = (False, True)
    if name == "slice_grant_expired":
        yield from itertools.product(_counts(level), _counts(level), flags)
    elif name == "backlog_admits":
        yield from itertools.product(_counts(level), _counts(level))
    elif name == "slice_takes_tick":
        yield from itertools.product(flags, flags)
    elif name == "parse_grant_rounds":
        yield from ((text,) for text in setting_texts(SETTING_LENGTH[level]))
    else:
        yield from ((header,) for header in lane_headers())


#: the spec's answer to each decision's arguments (lanes as the spec's ints)
SPEC: Mapping[str, Callable[..., object]] = {
    "slice_grant_expired": spec.slice_grant_expired,
    "backlog_admits": spec.backlog_admits,
    "slice_takes_tick": spec.slice_takes_tick,
    "parse_grant_rounds": spec.parse_grant_rounds,
    "parse_lane": spec.parse_lane,
}


def _size(arguments: tuple[object, ...]) -> int:
    """Smaller counterexamples first: small numbers, short texts."""
    size = 0
    for argument in arguments:
        if isinstance(argument, str):
            size += len(argument)
        elif isinstance(argument, int) and not isinstance(argument, bool):
            size += argument.bit_length()
    return size


def _run(level: Level, unit: object) -> Partial:
    assert isinstance(unit, str)
    decision: Callable[..., object] = getattr(policy, unit)  # what a host imports, now
    reference = SPEC[unit]
    found = Partial()
    for arguments in _cases(unit, level):
        found.count(f"{unit} cases")
        wanted = reference(*arguments)
        try:
            answered = decision(*arguments)
        except Exception as error:  # the decisions never raise on these: a finding too
            answered = f"raised {type(error).__name__}: {error}"
        # A lane is an IntEnum: its int is the spec's lane; bool and int stay apart.
        if type(answered) is not type(wanted) and not (
            isinstance(answered, policy.Lane) and type(wanted) is int
        ):
            same = False
        else:
            same = answered == wanted
        if not same:
            shown = ", ".join(map(repr, arguments))
            summary = f"public decisions: {unit}({shown}): kernel {answered!r}, spec {wanted!r}"
            size = _size(arguments)
            found.disagree(partial(Counterexample, "public decisions", size, summary, {}), size)
    return found


PUBLIC_DECISIONS = Check(
    name="public decisions",
    description="the single decisions a host imports, called as it calls them",
    bounds=_bounds,
    units=_units,
    run=_run,
)
