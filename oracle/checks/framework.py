"""What an exhaustive check is, what it reports, and how ``verify`` runs a set of them.

A check enumerates a finite domain (every input, or every reachable state,
within stated bounds) and compares the kernel with the executable spec on
each element. Its domain is cut into *units* — small picklable values such as
``("skip cap", 2)`` — so that ``verify`` can spread units over processes
(``--jobs``) or over machines (``--shard K/N``): a unit's result does not
depend on which process ran it, and results merge by adding counts, taking
maxima of worst cases and keeping the smallest counterexamples.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from policy.text import shown

__all__ = [
    "LEVELS",
    "Check",
    "Counterexample",
    "Level",
    "PaperBound",
    "Partial",
    "level_named",
    "merge",
]

Level = Literal["quick", "default", "deep"]
LEVELS: tuple[Level, ...] = ("quick", "default", "deep")


def level_named(level: object) -> Level:
    """``level`` when it names one of :data:`LEVELS`; otherwise a ``ValueError``
    listing them. Every function that takes a level checks it here first: a
    misspelt one would otherwise be a bare ``KeyError`` from a check's domain.

    >>> level_named("quick")
    'quick'
    >>> level_named("quik")
    Traceback (most recent call last):
    ...
    ValueError: unknown level 'quik': the levels are quick, default, deep
    """
    for known in LEVELS:
        if isinstance(level, str) and level == known:
            return known
    raise ValueError(f"unknown level {shown(level)}: the levels are {', '.join(LEVELS)}")


#: Counterexamples kept per unit and per check: the smallest ones.
KEPT_COUNTEREXAMPLES = 3


@dataclass(frozen=True, slots=True)
class Counterexample:
    """One disagreement between kernel and spec (or one broken invariant).

    ``size`` orders counterexamples (fewer events, entries or nodes is smaller);
    ``scenario`` is a scenario document that ``policy-kernel replay`` replays,
    with the spec's answer as its ``expect``: it fails on the kernel that
    disagreed and passes on one that agrees with the spec.
    """

    check: str
    size: int
    summary: str
    scenario: Mapping[str, object]


@dataclass(slots=True)
class Partial:
    """What one unit (or a merge of units) found."""

    counts: dict[str, int] = field(default_factory=dict)
    worst: dict[str, int] = field(default_factory=dict)
    disagreements: int = 0
    counterexamples: list[Counterexample] = field(default_factory=list)

    def count(self, name: str, by: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + by

    def observe(self, name: str, value: int) -> None:
        """Record a measured figure; the report keeps the largest."""
        if value > self.worst.get(name, value - 1):
            self.worst[name] = value

    def disagree(self, counterexample: Callable[[], Counterexample], size: int) -> None:
        """Count a disagreement; build its counterexample only if it may be kept."""
        self.disagreements += 1
        kept = self.counterexamples
        if (
            len(kept) < KEPT_COUNTEREXAMPLES
            or size < max(c.size for c in kept)
            or not any(c.scenario for c in kept)
        ):
            kept.append(counterexample())
            _keep_smallest(kept)


def _order(counterexample: Counterexample) -> tuple[int, str]:
    return (counterexample.size, counterexample.summary)


def _keep_smallest(kept: list[Counterexample]) -> None:
    """The smallest counterexamples, and the smallest replayable one among them even
    when smaller ones cannot be replayed (only a replayable one is written to a file)."""
    kept.sort(key=_order)
    replayable = next((c for c in kept if c.scenario), None)
    del kept[KEPT_COUNTEREXAMPLES:]
    if replayable is not None and replayable not in kept:
        kept[-1] = replayable


def merge(parts: Sequence[Partial]) -> Partial:
    """The union of unit results (order-independent)."""
    total = Partial()
    for part in parts:
        for name, value in part.counts.items():
            total.count(name, value)
        for name, value in part.worst.items():
            total.observe(name, value)
        total.disagreements += part.disagreements
        total.counterexamples.extend(part.counterexamples)
    _keep_smallest(total.counterexamples)
    return total


@dataclass(frozen=True, slots=True)
class PaperBound:
    """A worst case derived on paper (docs/oracle.md), to set beside the measured one."""

    value: int
    derivation: str
    exact: bool = False  # True: the bound is attained within the bounds explored


@dataclass(frozen=True, slots=True)
class Check:
    """One exhaustive check: its domain per level, cut into units, and its runner.

    ``run`` must be a module-level function (it is sent to worker processes by
    reference). ``paper_bounds`` names each worst case ``run`` observes.
    """

    name: str
    description: str
    bounds: Callable[[Level], Mapping[str, str]]
    units: Callable[[Level], Sequence[object]]
    run: Callable[[Level, object], Partial]
    paper_bounds: Callable[[Level], Mapping[str, PaperBound]] = field(default=lambda _level: {})
    #: Units of heavier checks are handed to workers first, so that they finish together.
    weight: int = 0
