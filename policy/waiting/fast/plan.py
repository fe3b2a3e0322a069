"""What a queue policy is compiled into, once: its selection path and its compiled keys.

A :class:`KeyPlan` is derived from a policy's keys the first time the fast
layer meets the policy (:func:`plan_of`, memoised) and tells the queue which
selection path is exact for it (see :mod:`policy.waiting.fast.analysis`):

- ``fifo``: no keys; the front is selected.
- ``static``: key values are fixed per entry (enqueue timing, or keys that read
  no ``waited``, ``now`` or ``budget_left``): computed once at enqueue and kept
  in key order, so selection is the first entry of that order.
- ``lanes``: the keys depend on an entry only through a few static class
  values and never get worse with age: the oldest entry of each class is the
  only candidate in it, so selection compares the class heads.
- ``scan``: anything else: every key of every entry, by compiled code.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

from policy.waiting.entry import AttributeView
from policy.waiting.evaluate import NO_BUDGETS
from policy.waiting.expr import Attr, Expr, walk
from policy.waiting.fast.analysis import LanePlan, class_value, path_and_plan, reads_budget
from policy.waiting.fast.compiled import (
    KeyFunction,
    ScanFunction,
    SortKeysFunction,
    Values,
    compile_expression,
    compile_keys,
    compile_scan,
    compile_sort_keys,
)
from policy.waiting.fast.rows import ENQUEUE_KEYS, ENQUEUED_AT, NAMES, SERIAL, VALUES, Row
from policy.waiting.modes import Path
from policy.waiting.queue_policy import QueuePolicy

__all__ = ["NAN_LAST", "KeyPlan", "ordering", "plan_of", "selection_path"]

_NAN: Final = math.nan

ComponentFunction = Callable[[Values, object, float, float, Mapping[str, float]], float]


class _NanLast:
    """Stands for NaN in an :func:`ordering`: above every float, equal to itself
    only (the total order of key values puts every NaN last, all equal)."""

    __slots__ = ()

    def __lt__(self, other: object) -> bool:
        return False

    def __le__(self, other: object) -> bool:
        return other is self

    def __gt__(self, other: object) -> bool:
        return other is not self

    def __ge__(self, other: object) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        return other is self

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "NAN_LAST"


#: NaN's place in an :func:`ordering`.
NAN_LAST: Final = _NanLast()


def ordering(keys: tuple[float, ...], ticket: int) -> tuple[Any, ...]:
    """A comparable value for an entry with these key values and ticket: orderings
    compare as the key lists do in the total order of key values (numeric, -0.0
    equal to 0.0, every NaN equal and last), ties by ticket.

    >>> ordering((2.0, -0.0), 7) == ordering((2.0, 0.0), 7)
    True
    >>> ordering((math.nan,), 1) > ordering((math.inf,), 9)
    True
    """
    for value in keys:
        if value != value:  # noqa: PLR0124 - a NaN: rare, spelled out
            return (*(NAN_LAST if item != item else item for item in keys), ticket)  # noqa: PLR0124
    return (*keys, ticket)


@dataclass(frozen=True, slots=True)
class KeyPlan:
    """A policy's selection path, its attribute layout and its compiled keys."""

    policy: QueuePolicy
    path: Path
    #: The attributes the keys read, in the order compiled code finds them in an
    #: entry's ``values`` (the queue lays entries out in this order).
    names: tuple[str, ...]
    keys: KeyFunction
    scan: ScanFunction
    sort_keys: SortKeysFunction
    reads_budget: bool
    lanes: LanePlan | None
    components: tuple[tuple[ComponentFunction, bool], ...]

    def laid_out(self, entry: Row) -> bool:
        """Whether ``entry``'s (a row's, or a ``WaitingEntry``'s) ``values`` are in
        :attr:`names` order, as the queue lays out the entries it holds for this
        policy."""
        names = entry[NAMES]
        return names is self.names or names[: len(self.names)] == self.names

    def values_of(self, entry: Row) -> Values:
        """``entry``'s attribute values in :attr:`names` order: its own ``values``
        when it is :meth:`laid_out` for this policy, otherwise looked up by name (a
        name it lacks reads NaN, as the plain definition reads a missing name)."""
        if entry[NAMES] is self.names or self.laid_out(entry):  # the first: the usual row
            return entry[VALUES]
        attributes = AttributeView(entry[NAMES], entry[VALUES])
        return tuple(attributes.get(name, math.nan) for name in self.names)

    def keys_at(
        self, entry: Row, now: float, budget_left: Mapping[str, float]
    ) -> tuple[float, ...]:
        """``entry``'s key values at ``(now, budget_left)``; under ``enqueue`` timing,
        those stored when it was queued (else computed as then: ``now`` its
        ``enqueued_at``, ``waited`` 0)."""
        values = self.values_of(entry)
        if self.policy.timing == "enqueue":
            stored = entry[ENQUEUE_KEYS]
            if stored is not None:
                return stored
            at = entry[ENQUEUED_AT]
            return self.keys(values, entry[SERIAL], at, 0.0, NO_BUDGETS)
        return self.keys(values, entry[SERIAL], now, now - entry[ENQUEUED_AT], budget_left)

    def fixed_keys(self, entry: Row) -> tuple[float, ...]:
        """``entry``'s key values on the ``static`` path, where no moment changes them."""
        if self.policy.timing == "enqueue":
            stored = entry[ENQUEUE_KEYS]
            return self.keys_at(entry, _NAN, NO_BUDGETS) if stored is None else stored
        # the usual row read in place: a call less per entry joining and leaving
        values = entry[VALUES] if entry[NAMES] is self.names else self.values_of(entry)
        return self.keys(values, entry[SERIAL], _NAN, _NAN, NO_BUDGETS)

    def lane_of(self, entry: Row) -> tuple[object, ...]:
        """The class of an entry under the ``lanes`` path: its component values
        (a truth as 1.0 or 0.0, any other value by :func:`class_value`)."""
        values = self.values_of(entry)
        lane: list[object] = []
        for component, truth in self.components:
            value = component(values, entry[SERIAL], math.nan, math.nan, NO_BUDGETS)
            lane.append((1.0 if value != 0.0 else 0.0) if truth else class_value(value))
        return tuple(lane)


def _zero_signs(policy: QueuePolicy) -> tuple[tuple[str, float], ...]:
    """The sign of each constant: equal policies may differ in the sign of a zero
    constant (``pmap`` equality takes -0.0 for 0.0, and ``1 / k`` tells them apart)."""
    return tuple(
        sorted((name, math.copysign(1.0, value)) for name, value in policy.constants.items())
    )


def plan_of(policy: QueuePolicy) -> KeyPlan:
    """The plan of ``policy``, made once per policy (memoised; equal policies share
    a plan).

    >>> from policy.waiting.policies import fifo, static_priority
    >>> plan_of(fifo()).path, plan_of(static_priority()).path, plan_of(fifo()) is plan_of(fifo())
    ('fifo', 'static', True)
    """
    return _plan(policy, _zero_signs(policy))


def selection_path(policy: QueuePolicy) -> Path:
    """How selection is computed for ``policy``, proven exact from its keys:
    ``fifo``, ``static`` (kept in key order), ``lanes`` (class heads) or
    ``scan`` (every entry, compiled keys).

    >>> from policy.waiting.policies import ascend_fcfs_lanes, fifo, static_priority
    >>> from policy.waiting.queue_policy import make_policy
    >>> [selection_path(p) for p in (fifo(), static_priority(), ascend_fcfs_lanes())]
    ['fifo', 'static', 'lanes']
    >>> selection_path(make_policy(["waited"]).unwrap())
    'scan'
    """
    return plan_of(policy).path


@lru_cache(maxsize=256)
def _plan(policy: QueuePolicy, signs: tuple[tuple[str, float], ...]) -> KeyPlan:  # noqa: ARG001 - part of the memo's key
    return _made(policy.keys, policy.constants, policy.timing, policy)


def _made(
    keys: Sequence[Expr], constants: Mapping[str, float], timing: Any, policy: QueuePolicy
) -> KeyPlan:
    names = tuple(
        sorted({node.name for key in keys for node in walk(key) if isinstance(node, Attr)})
    )
    path, lanes = path_and_plan(keys, constants, timing)
    components = (
        ()
        if lanes is None
        else tuple(
            (compile_expression(part.expr, constants, names), part.truth)
            for part in lanes.components
        )
    )
    return KeyPlan(
        policy,
        path,
        names,
        compile_keys(keys, constants, names),
        compile_scan(keys, constants, names),
        compile_sort_keys(keys, constants, names),
        reads_budget(keys),
        lanes,
        components,
    )
