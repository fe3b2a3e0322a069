"""The fast layer of waiting selection, behind one small interface: :class:`Index`.

The plain definition (:mod:`policy.waiting.reference`) evaluates every key of
every entry at every selection. A queue version instead holds its fresh
(non-resumed) entries in an :class:`Index` made for the policy it is used
with (:func:`index_for`), which keeps them in the order that policy's
selection path needs (:func:`~policy.waiting.fast.plan.selection_path`):

- ``fifo`` and ``scan``: queue order (:class:`~policy.waiting.fast.in_order.InOrder`);
  ``fifo`` selects the first, ``scan`` evaluates every entry with compiled keys;
- ``static``: key order, the keys computed once
  (:class:`~policy.waiting.fast.key_order.KeyOrder`); selection is the first;
- ``lanes``: one line per class in queue order
  (:class:`~policy.waiting.fast.lanes.Lanes`); selection compares the class heads.

Each is proven equal to the plain definition: ``policy-kernel verify``'s
selection checks and tests/waiting/fast/ compare them, and each has been seen
to catch a deliberately broken index (docs/performance.md).

All of it rests on one persistent structure, the sorted
:class:`~policy.waiting.fast.line.Line`, and on the compiled keys of
:mod:`policy.waiting.fast.compiled`, derived once per policy
(:func:`~policy.waiting.fast.plan.plan_of`).
"""

from __future__ import annotations

from policy.waiting.fast.in_order import InOrder
from policy.waiting.fast.index import Chosen, ChosenRow, Index
from policy.waiting.fast.key_order import KeyOrder
from policy.waiting.fast.lanes import Lanes
from policy.waiting.fast.plan import KeyPlan, plan_of, selection_path
from policy.waiting.queue_policy import QueuePolicy

__all__ = ["Chosen", "ChosenRow", "Index", "KeyPlan", "index_for", "plan_of", "selection_path"]


def index_for(policy: QueuePolicy) -> Index:
    """The empty index of ``policy``'s selection path.

    >>> from policy.waiting.policies import ascend_fcfs_lanes, fifo, static_priority
    >>> [type(index_for(p)).__name__ for p in (fifo(), static_priority(), ascend_fcfs_lanes())]
    ['InOrder', 'KeyOrder', 'Lanes']
    """
    plan = plan_of(policy)
    if plan.path == "static":
        return KeyOrder.empty(plan)
    if plan.path == "lanes":
        return Lanes.empty(plan)
    return InOrder.empty(plan)
