"""What a queue policy is compiled into once: its selection path and its compiled keys.

A :class:`KeyPlan` is derived from a policy's keys when the policy is built
(:class:`~policy.waiting.queue_policy.QueuePolicy` holds it as ``plan``) and
tells the queue which fast path is exact for it (see
:mod:`policy.waiting.analysis`):

- ``fifo``: no keys; the front is selected.
- ``static``: key values are fixed per entry (enqueue timing, or keys that read
  no ``waited``, ``now`` or ``budget_left``): computed once at enqueue and kept
  in key order, so selection is the first entry of an ordered index.
- ``lanes``: the keys depend on an entry only through a few static class
  values and never get worse with age: the oldest entry of each class is the
  only candidate in it, so selection compares the class heads.
- ``scan``: anything else: every key of every entry, by compiled code.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from pyrsistent import pmap

from policy.waiting.analysis import LanePlan, class_value, path_and_plan, reads_budget
from policy.waiting.compiled import (
    KeyFunction,
    ScanFunction,
    SortKeysFunction,
    Values,
    compile_expression,
    compile_keys,
    compile_scan,
    compile_sort_keys,
)
from policy.waiting.expr import Attr, Expr, walk
from policy.waiting.modes import Path

ComponentFunction = Callable[[Values, object, float, float, Mapping[str, float]], float]

#: The budgets of a moment that reads none (components, keys at enqueue, Moment's default).
NO_BUDGETS: Final[Mapping[str, float]] = pmap()


@dataclass(frozen=True, slots=True)
class KeyPlan:
    """A policy's selection path, its attribute layout and its compiled keys."""

    path: Path
    #: The attributes the keys read, in the order compiled code finds them in an entry.
    attribute_order: tuple[str, ...]
    keys: KeyFunction
    scan: ScanFunction
    sort_keys: SortKeysFunction
    reads_budget: bool
    lanes: LanePlan | None
    components: tuple[tuple[ComponentFunction, bool], ...]

    def lane_of(self, values: Values, serial: object) -> tuple[object, ...]:
        """The class of an entry under the ``lanes`` path: its component values
        (a truth as 1.0 or 0.0, any other value by :func:`class_value`)."""
        lane: list[object] = []
        for component, truth in self.components:
            value = component(values, serial, math.nan, math.nan, NO_BUDGETS)
            lane.append((1.0 if value != 0.0 else 0.0) if truth else class_value(value))
        return tuple(lane)


def make_plan(keys: Sequence[Expr], constants: Mapping[str, float], timing: str) -> KeyPlan:
    """The plan of a policy with these keys, constants and key timing."""
    order = tuple(
        sorted({node.name for key in keys for node in walk(key) if isinstance(node, Attr)})
    )
    path, lanes = path_and_plan(keys, constants, timing)  # type: ignore[arg-type]
    components = (
        ()
        if lanes is None
        else tuple(
            (compile_expression(part.expr, constants, order), part.truth)
            for part in lanes.components
        )
    )
    return KeyPlan(
        path,
        order,
        compile_keys(keys, constants, order),
        compile_scan(keys, constants, order),
        compile_sort_keys(keys, constants, order),
        reads_budget(keys),
        lanes,
        components,
    )
