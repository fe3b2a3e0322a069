"""Exhaustive checks: every selection fast path against the plain definition.

The kernel selects by a policy's path (``static``, ``lanes`` or ``scan``, with
compiled keys); :func:`policy.waiting.select_reference` is the plain definition
(every key of every entry by the tree evaluator). This check builds every
queue of up to ``max_entries`` entries over a small domain and compares, at
several moments:

- ``select_waiting`` with ``select_reference`` (entry and bit-exact keys);
- ``dispatch_order`` with repeated ``select_reference`` and removal, and
  ``dispatched_at`` at every position with the same;
- ``admit_many`` with repeated ``attempt_admission``, for a host whose pool
  takes a fixed number of entries.

Domain (``ENTRY_CHOICES``): each entry is immediate (long at time 0 or 2,
short at 1: two classes whose keys tie, so ties between class heads are
tested), short or long (at time 0, 1 or 2), or a long one requeued as
preempted; the queue is built in every order of those choices, so
enqueue times are both in order and out of order (the lane path must then
fall back). Moments: ``MOMENTS`` (before, at and after the aging limit, and
the non-finite ones).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from oracle.checks.compiled_keys import same_value
from policy.waiting import (
    Admitted,
    Moment,
    QueuePolicy,
    WaitingQueue,
    admit_many,
    ascend_fcfs_lanes,
    attempt_admission,
    dispatch_order,
    dispatched_at,
    make_policy,
    select_reference,
    select_waiting,
)

#: (immediate, prompt, enqueued at, requeued as preempted)
ENTRY_CHOICES: Final = (
    (True, 3, 0.0, False),
    (True, 3, 2.0, False),
    (True, 1, 1.0, False),  # immediate short and long: two classes whose keys tie
    *((False, prompt, at, False) for prompt in (1, 3) for at in (0.0, 1.0, 2.0)),
    (False, 3, 1.0, True),
)

MOMENTS: Final = (2.0, 2.5, 3.0, 4.5, math.inf, -math.inf, math.nan)


def policies_checked() -> tuple[tuple[str, QueuePolicy], ...]:
    """One policy per path, and lane policies with and without aging."""
    attributes = ["immediate", "prompt"]
    return (
        ("ascend lanes, aging 1.5", ascend_fcfs_lanes(short_tokens=2, max_wait=1.5)),
        ("ascend lanes, no aging", ascend_fcfs_lanes(short_tokens=2, max_wait=0)),
        (
            "lanes: -waited within classes",
            make_policy(["immediate ? 0 : 1", "-waited"], attributes=attributes).unwrap(),
        ),
        ("static: prompt", make_policy(["prompt", "immediate"], attributes=attributes).unwrap()),
        (
            "static at enqueue: now + prompt",
            make_policy(["now + prompt"], attributes=attributes, timing="enqueue").unwrap(),
        ),
        ("scan: waited - prompt", make_policy(["waited - prompt"], attributes=attributes).unwrap()),
        (
            "scan: budget",
            make_policy(["budget_left(engine) < prompt"], attributes=attributes).unwrap(),
        ),
    )


def _same(a: Sequence[float], b: Sequence[float]) -> bool:
    return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))


def _queue(policy: QueuePolicy, choices: Sequence[tuple[bool, int, float, bool]]) -> WaitingQueue:
    queue = WaitingQueue()
    for serial, (immediate, prompt, at, preempted) in enumerate(choices):
        attributes = {"immediate": immediate, "prompt": prompt}
        add = queue.requeue_preempted if preempted else queue.append
        queue = add(policy, f"r{serial}", attributes, serial=serial, now=at).unwrap()
    return queue


@dataclass(frozen=True, slots=True)
class Mismatch:
    """A queue and moment where a fast path and the plain definition differ."""

    policy: str
    choices: tuple[tuple[bool, int, float, bool], ...]
    now: float
    what: str

    def __str__(self) -> str:
        return f"{self.policy}: queue {list(self.choices)} at now={self.now}: {self.what}"


def _reference_order(queue: WaitingQueue, policy: QueuePolicy, moment: Moment) -> list[object]:
    order: list[object] = []
    while len(queue):
        chosen = select_reference(queue, policy, moment).unwrap()
        order.append(chosen.entry.identity)
        queue = queue.remove(chosen.entry.identity).unwrap()
    return order


def _always(_entry: object) -> bool:
    return True


def _compare(policy: QueuePolicy, queue: WaitingQueue, moment: Moment) -> str | None:
    fast = select_waiting(queue, policy, moment).unwrap()
    plain = select_reference(queue, policy, moment).unwrap()
    if fast.entry != plain.entry or fast.index != plain.index or not _same(fast.keys, plain.keys):
        return (
            f"select_waiting chose {fast.entry.identity} {fast.keys},"
            f" the definition {plain.entry.identity} {plain.keys}"
        )
    order = [selection.entry.identity for selection in dispatch_order(queue, policy, moment)]
    wanted = _reference_order(queue, policy, moment)
    if order != wanted:
        return f"dispatch_order {order}, repeated selection {wanted}"
    at = [dispatched_at(queue, policy, moment, position).identity for position in range(len(queue))]
    if at != wanted:
        return f"dispatched_at gives {at}, repeated selection {wanted}"
    room = 2
    passed = admit_many(queue, policy, moment, _always, limit=room)
    step, admitted = queue, []
    for _ in range(room):
        outcome = attempt_admission(step, policy, moment, _always)
        if not isinstance(outcome, Admitted):
            break
        admitted.append(outcome.entry.identity)
        step = outcome.queue
    took = [a.entry.identity for a in passed.admitted]
    if took != admitted or passed.queue != step:
        return f"admit_many admitted {took}, attempts {admitted}"
    return None


def check_paths(
    policies: Iterable[tuple[str, QueuePolicy]] | None = None,
    max_entries: int = 4,
    moments: Sequence[float] = MOMENTS,
) -> list[Mismatch]:
    """Every queue of up to ``max_entries`` entries over ``ENTRY_CHOICES``, at every
    moment: the mismatches between the fast paths and the plain definition."""
    found: list[Mismatch] = []
    for name, policy in policies_checked() if policies is None else policies:
        for size in range(1, max_entries + 1):
            for choices in itertools.product(ENTRY_CHOICES, repeat=size):
                queue = _queue(policy, choices)
                for now in moments:
                    problem = _compare(policy, queue, Moment(now, {"engine": 2.0}))
                    if problem is not None:
                        found.append(Mismatch(name, choices, now, problem))
                        break
                if len(found) >= 5:
                    return found
    return found
