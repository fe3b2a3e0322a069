"""The bounds of each conformance check, by level or given by hand.

A level's bounds are the oracle's own: ``policy-kernel verify`` and the kit read
the same tables in :mod:`oracle.checks` (the grant order, the rotation model
check and the selection check), so a foreign implementation is run on the very
domain the kernel is verified on. The grant expiry and the backlog cap are the
public decisions check's (every small count and budget and the edges of the
integer range). Smaller bounds, for a fast test, are given by hand:

>>> ProtocolBounds.at("quick")
ProtocolBounds(skip_caps=(1, 2), largest_budget=1, max_depth=10, profile='seed')
>>> ProtocolBounds(skip_caps=(2,), largest_budget=1, max_depth=3).describe()["states"]
'within 3 events'

Bounds are checked where they are made: a range that holds nothing (a check on it
would compare nothing and pass any implementation) or a domain larger than the
kit enumerates is a ``ValueError`` naming the field and its value:

>>> NumberBounds(-1, edges=())
Traceback (most recent call last):
...
ValueError: NumberBounds.largest must be an integer >= 0, not -1
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

from oracle.checks import decisions, grant_order, rotation_model, selection
from oracle.checks.framework import Level, level_named
from oracle.conformance import own_policies
from oracle.conformance.own_policies import OwnPolicy
from oracle.spec import protocol as spec
from policy.text import shown

__all__ = [
    "EDGE_VALUES",
    "MOST_BUDGET",
    "MOST_CASES",
    "BoundsChoice",
    "FlagBounds",
    "GrantOrderBounds",
    "HeaderBounds",
    "NumberBounds",
    "ProtocolBounds",
    "SelectionBounds",
    "SettingBounds",
]

#: Counts and budgets at the edges of the integer types a host may use (a budget
#: may be as large as 2**64 - 1: docs/rotation.md, "Grant budget"): the public
#: decisions check's own.
EDGE_VALUES: tuple[int, ...] = decisions.EDGE_COUNTS

_LARGEST_NUMBER: Mapping[Level, int] = decisions.COUNTS

_AnyBounds = TypeVar("_AnyBounds")

#: The most cases one check's bounds may hold, counted before anything is enumerated:
#: above every deep level's count (the grant order's is 14 million), and about an hour
#: at the kit's pace (80 us a case: docs/conformance.md, "Cost").
MOST_CASES = 50_000_000

#: The largest budget of the tick protocol: every budget 0..N is tried on every
#: arrival and tick of every state, and the reachable states multiply with N (budgets
#: 0..16 at depth 4: 690,639 cases in 10 s; 0..64 at depth 3: 3.2 million in 30 s).
#: The grant counter is clamped at N + 1, so larger budgets decide alike.
MOST_BUDGET = 16


def _whole(owner: str, name: str, value: object, least: int) -> int:
    """``value`` when it is an integer >= ``least``, else the ``ValueError`` naming the
    field (an empty range would make a check compare nothing, and pass)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{owner}.{name} must be an integer >= {least}, not {shown(value)}")
    return value


def _skip_caps(owner: str, caps: object) -> None:
    if not isinstance(caps, tuple) or not caps:
        raise ValueError(f"{owner}.skip_caps must name at least one skip cap, not {shown(caps)}")
    for cap in caps:
        _whole(owner, "skip_caps", cap, 1)


def _count(number: int) -> str:
    """A count for a message (digit groups; a huge one by its length, which ``format``
    refuses to write past 4,300 digits)."""
    return f"{number:,}" if number < 10**24 else shown(number)


def _at_most_cases(owner: str, cases: int, bounding: str) -> None:
    if cases > MOST_CASES:
        raise ValueError(
            f"{owner}: {bounding} make {_count(cases)} cases;"
            f" the kit enumerates at most {MOST_CASES:,}"
        )


def _events_in_the_first_state(largest_budget: int) -> int:
    """How many events the tick protocol tries in its initial state at budgets
    ``0..largest_budget`` (each arrival lane, flag and budget, each tick budget and
    classic flag, the refused budget -1 of each, two round results, one cancel)."""
    return 8 * (largest_budget + 1) + 5


def _checked_largest_budget(largest_budget: int, field: str) -> None:
    """A ``ValueError`` naming ``field`` when the tick protocol's budgets ``0..largest_budget``
    make a domain larger than the kit enumerates (:data:`MOST_BUDGET`)."""
    if largest_budget > MOST_BUDGET:
        raise ValueError(
            f"{field} {_count(largest_budget)} makes"
            f" {_count(_events_in_the_first_state(largest_budget))} events in the tick protocol's"
            f" first state alone, and its states multiply with it; the kit takes budgets up to"
            f" {MOST_BUDGET} (--largest-budget)"
        )


@dataclass(frozen=True, slots=True)
class NumberBounds:
    """The grant expiry and the backlog cap: every count and budget ``0..largest``,
    and each of ``edges``, in every combination."""

    largest: int
    edges: tuple[int, ...] = EDGE_VALUES

    @classmethod
    def at(cls, level: Level) -> NumberBounds:
        """The bounds of ``level``: 0..8, 0..16 or 0..64, and the edges."""
        return cls(_LARGEST_NUMBER[level_named(level)])

    def __post_init__(self) -> None:
        _whole("NumberBounds", "largest", self.largest, 0)
        if not isinstance(self.edges, tuple):
            raise ValueError(f"NumberBounds.edges must be a tuple, not {shown(self.edges)}")
        for edge in self.edges:
            _whole("NumberBounds", "edges", edge, 0)
        larger = {edge for edge in self.edges if edge > self.largest}
        counted = self.largest + 1 + len(larger)  # counted without building the range
        _at_most_cases(
            "NumberBounds", 2 * counted**2, f"counts 0..{_count(self.largest)} and the edges"
        )

    @property
    def values(self) -> tuple[int, ...]:
        """Every value, smallest first."""
        return tuple(sorted({*range(self.largest + 1), *self.edges}))

    def describe(self) -> dict[str, str]:
        edges = "".join(f", {value}" for value in self.edges)
        return {"counts and budgets": f"0..{self.largest}{edges}"}


@dataclass(frozen=True, slots=True)
class BoundsChoice:
    """Bounds an implementer sets instead of its level's (``verify --against-command
    --skip-caps/--largest-budget/--depth/--queue-size``); None keeps the level's.

    ``skip_caps``: the grant order and the tick protocol (an implementation with a
    fixed skip cap names it); ``largest_budget`` and ``max_depth``: the tick
    protocol; ``queue_size``: the longest queue of selection and the admission
    attempt (one-key queues; two-key queues and own policies' queues at most that).

    >>> BoundsChoice(skip_caps=(2,)).applied(GrantOrderBounds.at("quick")).skip_caps
    (2,)
    >>> BoundsChoice(skip_caps=(0,))
    Traceback (most recent call last):
    ...
    ValueError: skip caps are at least 1, not 0
    """

    skip_caps: tuple[int, ...] | None = None
    largest_budget: int | None = None
    max_depth: int | None = None
    queue_size: int | None = None

    def __post_init__(self) -> None:
        for cap in self.skip_caps or ():
            if cap < 1:
                raise ValueError(f"skip caps are at least 1, not {shown(cap)}")
        if self.skip_caps == ():
            raise ValueError("name at least one skip cap")
        for name in ("largest_budget", "max_depth", "queue_size"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name.replace('_', ' ')} must be >= 0, not {shown(value)}")
        if self.largest_budget is not None:
            _checked_largest_budget(self.largest_budget, "largest budget")
        deepest_one, _ = selection.DOMAIN["deep"]
        if self.queue_size is not None and self.queue_size > deepest_one:
            raise ValueError(f"selection bounds go up to {deepest_one} entries (queue size)")

    def applied(self, bounds: _AnyBounds) -> _AnyBounds:
        """``bounds`` with the choices that concern its check."""
        if isinstance(bounds, GrantOrderBounds) and self.skip_caps is not None:
            return replace(bounds, skip_caps=self.skip_caps)
        if isinstance(bounds, ProtocolBounds):
            chosen = bounds
            if self.skip_caps is not None:
                chosen = replace(chosen, skip_caps=self.skip_caps)
            if self.largest_budget is not None:
                chosen = replace(chosen, largest_budget=self.largest_budget)
            if self.max_depth is not None:
                chosen = replace(chosen, max_depth=self.max_depth)
            return chosen
        if isinstance(bounds, SelectionBounds) and self.queue_size is not None:
            _, deepest_two = selection.DOMAIN["deep"]
            return replace(
                bounds, one_key=self.queue_size, two_key=min(self.queue_size, deepest_two)
            )
        return bounds


@dataclass(frozen=True, slots=True)
class FlagBounds:
    """``slice_takes_tick``: all four pairs of flags (the same at every level)."""

    @classmethod
    def at(cls, level: Level) -> FlagBounds:
        level_named(level)  # the same for every level, but a misspelt one is refused
        return cls()

    def describe(self) -> dict[str, str]:
        return {"flags": "yielded and others_have_work, all four pairs"}


@dataclass(frozen=True, slots=True)
class SettingBounds:
    """``parse_grant_rounds``: unset, and every setting text of at most ``longest``
    characters over the public decisions check's alphabet and its edges, each bare
    and wrapped in white space (:func:`oracle.checks.decisions.setting_texts`)."""

    longest: int

    @classmethod
    def at(cls, level: Level) -> SettingBounds:
        """The public decisions check's bounds at ``level``: 3, 4 or 5 characters."""
        return cls(decisions.SETTING_LENGTH[level_named(level)])

    def __post_init__(self) -> None:
        _whole("SettingBounds", "longest", self.longest, 0)
        alphabet = len(decisions.SETTING_ALPHABET)
        generated = sum(alphabet**length for length in range(min(self.longest, 16) + 1))
        texts = generated + len(decisions.SETTING_EDGES)
        cases = 1 + texts * len(decisions.WRAPPINGS)  # and unset
        _at_most_cases(
            "SettingBounds", cases, f"setting texts of 0..{_count(self.longest)} characters"
        )

    def describe(self) -> dict[str, str]:
        return {"setting texts": decisions.setting_texts_described(self.longest)}


@dataclass(frozen=True, slots=True)
class HeaderBounds:
    """``parse_lane``: missing, the three lane names in every case and near misses,
    each bare and wrapped (:func:`oracle.checks.decisions.lane_headers`; the same at
    every level)."""

    @classmethod
    def at(cls, level: Level) -> HeaderBounds:
        level_named(level)  # the same for every level, but a misspelt one is refused
        return cls()

    def describe(self) -> dict[str, str]:
        return {"lane headers": decisions.lane_headers_described()}


@dataclass(frozen=True, slots=True)
class GrantOrderBounds:
    """Every backlog of ``0..longest`` entries over the three lanes, each with a skip
    count ``0..largest_skips``, under each skip cap (the grant order check's domain)."""

    longest: int
    largest_skips: int
    skip_caps: tuple[int, ...] = grant_order.SKIP_CAPS

    @classmethod
    def at(cls, level: Level) -> GrantOrderBounds:
        """The grant order check's bounds at ``level``."""
        longest, skips = grant_order.DOMAIN[level_named(level)]
        return cls(longest, skips)

    def __post_init__(self) -> None:
        _whole("GrantOrderBounds", "longest", self.longest, 0)
        _whole("GrantOrderBounds", "largest_skips", self.largest_skips, 0)
        _skip_caps("GrantOrderBounds", self.skip_caps)
        cells = 3 * (self.largest_skips + 1)  # an entry's lane and skip count
        backlogs = 0
        for length in range(self.longest + 1):  # stops as soon as there are too many
            backlogs += cells**length
            if backlogs > MOST_CASES:
                break
        _at_most_cases(
            "GrantOrderBounds",
            backlogs * (2 * len(self.skip_caps) + 1),
            f"backlogs of 0..{_count(self.longest)} entries,"
            f" skip counts 0..{_count(self.largest_skips)}",
        )

    def describe(self) -> dict[str, str]:
        return {
            "backlog length": f"0..{self.longest}",
            "lanes": "low, normal, high",
            "skip counts": f"0..{self.largest_skips}",
            "skip caps": ", ".join(map(str, self.skip_caps)),
            "entry kinds": "waiter, parked (alternating by position)",
            "re-entry": "an entry with skips appended to every backlog (first skip cap)",
        }


@dataclass(frozen=True, slots=True)
class ProtocolBounds:
    """Every state of the tick protocol reachable from the initial state (within
    ``max_depth`` events; None: every one), at each skip cap, with every event of
    the rotation model check's domain at budgets ``0..largest_budget``, under the
    rules ``profile`` (``"seed"`` or ``"mlxcel"``, docs/rotation.md)."""

    skip_caps: tuple[int, ...]
    largest_budget: int
    max_depth: int | None
    profile: str = spec.SEED_RULES

    def __post_init__(self) -> None:
        _skip_caps("ProtocolBounds", self.skip_caps)
        _whole("ProtocolBounds", "largest_budget", self.largest_budget, 0)
        _checked_largest_budget(self.largest_budget, "ProtocolBounds.largest_budget")
        if self.max_depth is not None:
            _whole("ProtocolBounds", "max_depth", self.max_depth, 0)
        if self.profile not in spec.PROFILES:
            raise ValueError(
                f"the rules profile is one of {', '.join(spec.PROFILES)}, not {shown(self.profile)}"
            )

    @classmethod
    def at(cls, level: Level, profile: str = spec.SEED_RULES) -> ProtocolBounds:
        """The rotation model check's bounds at ``level``, under ``profile``."""
        caps, largest, depth = rotation_model.DOMAIN[level_named(level)]
        return cls(caps, largest, depth, profile)

    def describe(self) -> dict[str, str]:
        depth = self.max_depth
        return {
            "states": "every reachable state" if depth is None else f"within {depth} events",
            "skip caps": ", ".join(map(str, self.skip_caps)),
            "rules profile": self.profile,
            "budgets on every event": f"0..{self.largest_budget} (and -1, refused)",
            "grant counter": f"clamped at {self.largest_budget + 1}"
            " (decides like any larger count)",
            "events per state": "arrivals (lane x may_wait x budget, duplicate), ticks (budget"
            " x classic x declined subset), round results, cancels (each live, one unknown)",
        }


@dataclass(frozen=True, slots=True)
class SelectionBounds:
    """Every waiting queue of ``0..one_key`` entries over the one-key values and of
    ``0..two_key`` entries over the two-key values, every resumed prefix, under
    every policy and moment of the selection check (at most its deep bounds).

    With ``policies`` (an implementer's own, :func:`oracle.conformance.own_policies.own_policy`),
    the queues, values and moments derived from each of them instead, queues of at
    most ``one_key`` entries."""

    one_key: int
    two_key: int
    policies: tuple[OwnPolicy, ...] = ()

    @classmethod
    def at(cls, level: Level) -> SelectionBounds:
        """The selection check's bounds at ``level``."""
        one, two = selection.DOMAIN[level_named(level)]
        return cls(one, two)

    def __post_init__(self) -> None:
        _whole("SelectionBounds", "one_key", self.one_key, 0)
        _whole("SelectionBounds", "two_key", self.two_key, 0)
        one, two = selection.DOMAIN["deep"]  # the units are the deep level's, filtered
        if not (0 <= self.one_key <= one and 0 <= self.two_key <= two):
            raise ValueError(
                f"selection bounds go up to {one} (one key) and {two} (two keys) entries"
            )

    def with_policies(self, policies: tuple[OwnPolicy, ...]) -> SelectionBounds:
        """These bounds under ``policies`` instead of the selection check's own."""
        return SelectionBounds(self.one_key, self.two_key, policies)

    def describe(self) -> dict[str, str]:
        if self.policies:
            return own_policies.describe(self.policies, self.one_key)
        return {
            "one-key queues": f"0..{self.one_key} entries,"
            " each key NaN, -inf, -1.0, -0.0, 0.0, 1.0, +inf",
            "two-key queues": f"0..{self.two_key} entries, each key NaN, -0.0, 0.0, 1.0",
            "resumed prefixes": "every one: 0..n entries resumed at the front",
            "policies": "those of the selection check: fifo, k / d, k / d - now, aging on"
            " waited, budget_left(engine) present and absent, both timings (one and two keys)",
            "moment": "now 4; entry i enqueued at i; budget_left(engine) 4 or absent",
        }
