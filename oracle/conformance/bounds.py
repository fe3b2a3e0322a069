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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

from oracle.checks import decisions, grant_order, rotation_model, selection
from oracle.checks.framework import Level
from oracle.conformance import own_policies
from oracle.conformance.own_policies import OwnPolicy
from oracle.spec import protocol as spec
from policy.text import shown

__all__ = [
    "EDGE_VALUES",
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


@dataclass(frozen=True, slots=True)
class NumberBounds:
    """The grant expiry and the backlog cap: every count and budget ``0..largest``,
    and each of ``edges``, in every combination."""

    largest: int
    edges: tuple[int, ...] = EDGE_VALUES

    @classmethod
    def at(cls, level: Level) -> NumberBounds:
        """The bounds of ``level``: 0..8, 0..16 or 0..64, and the edges."""
        return cls(_LARGEST_NUMBER[level])

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
                raise ValueError(f"skip caps are at least 1, not {cap}")
        if self.skip_caps == ():
            raise ValueError("name at least one skip cap")
        for name in ("largest_budget", "max_depth", "queue_size"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name.replace('_', ' ')} must be >= 0, not {value}")
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
        del level
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
        return cls(decisions.SETTING_LENGTH[level])

    def describe(self) -> dict[str, str]:
        return {"setting texts": decisions.setting_texts_described(self.longest)}


@dataclass(frozen=True, slots=True)
class HeaderBounds:
    """``parse_lane``: missing, the three lane names in every case and near misses,
    each bare and wrapped (:func:`oracle.checks.decisions.lane_headers`; the same at
    every level)."""

    @classmethod
    def at(cls, level: Level) -> HeaderBounds:
        del level
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
        longest, skips = grant_order.DOMAIN[level]
        return cls(longest, skips)

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
        if self.profile not in spec.PROFILES:
            raise ValueError(
                f"the rules profile is one of {', '.join(spec.PROFILES)}, not {shown(self.profile)}"
            )

    @classmethod
    def at(cls, level: Level, profile: str = spec.SEED_RULES) -> ProtocolBounds:
        """The rotation model check's bounds at ``level``, under ``profile``."""
        caps, largest, depth = rotation_model.DOMAIN[level]
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
        one, two = selection.DOMAIN[level]
        return cls(one, two)

    def __post_init__(self) -> None:
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
