"""Selecting the next waiting entry, and one admission attempt."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from pyrsistent import pmap
from returns.maybe import Maybe, Nothing, Some

from policy.waiting.evaluate import Scope, evaluate, key_list_order
from policy.waiting.numbers import as_float, is_number, shown
from policy.waiting.queue import WaitingEntry, WaitingQueue, keys_at_enqueue
from policy.waiting.queue_policy import QueuePolicy


@dataclass(frozen=True, slots=True)
class Moment:
    """The admission clock and the token budgets left, at one admission attempt.

    A stage missing from ``budget_left`` reads as NaN (unknown): such an
    attempt is not bound to that stage. Numbers are held as floats, converted by
    :func:`~policy.waiting.numbers.as_float` (an integer beyond the float range
    is ±infinity, a boolean 1 or 0); anything else is a ``TypeError``.

    >>> Moment(2, {"engine": 96}).budget_left
    pmap({'engine': 96.0})
    >>> Moment(10**400).now
    inf
    """

    now: float
    budget_left: Mapping[str, float] = field(default_factory=pmap)

    def __post_init__(self) -> None:
        if not is_number(self.now):
            raise TypeError(f"now must be a number, not {shown(self.now)}")
        object.__setattr__(self, "now", as_float(self.now))
        budgets: object = self.budget_left
        if not isinstance(budgets, Mapping):
            raise TypeError(f"budget_left must map stages to numbers, not {shown(budgets)}")
        for stage, left in budgets.items():
            if not is_number(left):
                raise TypeError(f"budget_left[{shown(stage)}] must be a number, not {shown(left)}")
        # Held as an immutable map of floats, whatever mapping the host passed.
        object.__setattr__(
            self, "budget_left", pmap({stage: as_float(left) for stage, left in budgets.items()})
        )


@dataclass(frozen=True, slots=True)
class Selection:
    """The selected entry, where it waits, and its key values (empty when no key was evaluated)."""

    index: int
    entry: WaitingEntry
    keys: tuple[float, ...]


def entry_keys(policy: QueuePolicy, entry: WaitingEntry, moment: Moment) -> tuple[float, ...]:
    """The key values of ``entry`` at ``moment`` under ``policy``'s key timing.

    >>> from policy.waiting.queue_policy import make_policy
    >>> policy = make_policy(["waited"]).unwrap()
    >>> entry_keys(policy, WaitingEntry("a", pmap(), 0, enqueued_at=1.0), Moment(4.0))
    (3.0,)
    """
    if policy.timing == "enqueue":
        stored = entry.enqueue_keys
        return stored if stored is not None else keys_at_enqueue(policy, entry)
    scope = Scope(
        entry.attributes,
        entry.serial,
        now=moment.now,
        waited=as_float(moment.now) - as_float(entry.enqueued_at),
        budget_left=moment.budget_left,
        constants=policy.constants,
    )
    return tuple(evaluate(key, scope) for key in policy.keys)


def select_waiting(queue: WaitingQueue, policy: QueuePolicy, moment: Moment) -> Maybe[Selection]:
    """The entry the next admission attempt tests, or Nothing for an empty queue.

    Never raises: every number is read as a float (see :class:`Moment`), and
    evaluation is total. A resumed front entry, or the front under FIFO, is chosen without
    evaluating any key; otherwise the smallest key list wins (total order of
    :func:`~policy.waiting.evaluate.key_list_order`), ties going to the earlier entry.

    >>> from policy.waiting.policies import static_priority
    >>> policy = static_priority()
    >>> queue = WaitingQueue()
    >>> for serial, priority in enumerate([5, 1, 1]):
    ...     queue = queue.append(policy, serial, {"priority": priority}, serial=serial,
    ...                          now=0.0).unwrap()
    >>> select_waiting(queue, policy, Moment(1.0)).map(lambda s: (s.index, s.keys))
    <Some: (1, (1.0,))>
    """
    entries = queue.entries
    if not entries:
        return Nothing
    front = entries[0]
    if front.resumed or policy.is_fifo:
        return Some(Selection(0, front, ()))
    best_index, best_keys = 0, entry_keys(policy, front, moment)
    best_order = key_list_order(best_keys)
    for index in range(1, len(entries)):
        keys = entry_keys(policy, entries[index], moment)
        order = key_list_order(keys)
        if order < best_order:  # strict: on a tie the earlier entry stays
            best_index, best_keys, best_order = index, keys, order
    return Some(Selection(best_index, entries[best_index], best_keys))


@dataclass(frozen=True, slots=True)
class QueueEmpty:
    """Nothing was waiting."""


@dataclass(frozen=True, slots=True)
class Admitted:
    """The selected entry fit and left the queue; ``queue`` is what remains."""

    selection: Selection
    queue: WaitingQueue

    @property
    def entry(self) -> WaitingEntry:
        """The admitted entry."""
        return self.selection.entry


@dataclass(frozen=True, slots=True)
class Blocked:
    """The selected entry did not fit: ``queue`` is the queue as it was (unchanged),
    until the next attempt; like :class:`Admitted`, it carries the queue to go on with."""

    selection: Selection
    queue: WaitingQueue

    @property
    def entry(self) -> WaitingEntry:
        """The selected entry, which did not fit."""
        return self.selection.entry


AdmissionOutcome: TypeAlias = QueueEmpty | Admitted | Blocked


def attempt_admission(
    queue: WaitingQueue,
    policy: QueuePolicy,
    moment: Moment,
    fits: Callable[[WaitingEntry], bool],
) -> AdmissionOutcome:
    """One admission attempt: select one entry and test only that entry with ``fits``.

    >>> from policy.waiting.policies import fifo
    >>> queue = WaitingQueue().append(fifo(), "a", {}, serial=0, now=0.0).unwrap()
    >>> blocked = attempt_admission(queue, fifo(), Moment(0.0), lambda entry: False)
    >>> type(blocked).__name__, blocked.queue is queue
    ('Blocked', True)
    >>> len(attempt_admission(queue, fifo(), Moment(0.0), lambda entry: True).queue)
    0
    """
    selected = select_waiting(queue, policy, moment)
    if selected == Nothing:
        return QueueEmpty()
    selection = selected.unwrap()
    if not fits(selection.entry):
        return Blocked(selection, queue)
    return Admitted(selection, queue.without_index(selection.index))
