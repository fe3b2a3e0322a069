"""Selecting the next waiting entry, one admission attempt, and many at one moment.

:func:`select_waiting` is exactly :func:`~policy.waiting.reference.select_reference`:
a resumed front entry first, the front under FIFO, else the smallest key list,
ties to the earlier entry. The queue computes it (``WaitingQueue.selected``,
``dispatched``, ``dispatched_at``: by the path the policy's keys allow,
:func:`~policy.waiting.fast.selection_path`); the functions here check their
arguments once, at the call, and give the results as records.

These functions return plain values, so an argument of the wrong type (a queue
that is not a :class:`~policy.waiting.queue.WaitingQueue`, a policy that is not
a :class:`~policy.waiting.queue_policy.QueuePolicy`, a moment that is not a
:class:`~policy.waiting.reference.Moment`, a ``fits`` that is not callable) is
a ``TypeError``, raised at the call, before anything is selected.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeAlias

from returns.maybe import Maybe, Nothing, Some

from policy.waiting.entry import WaitingEntry
from policy.waiting.fast import plan_of
from policy.waiting.numbers import shown
from policy.waiting.queue import WaitingQueue
from policy.waiting.queue_policy import QueuePolicy
from policy.waiting.reference import Moment, Selection

__all__ = [
    "AdmissionOutcome",
    "Admitted",
    "Blocked",
    "PassOutcome",
    "QueueEmpty",
    "admit_many",
    "attempt_admission",
    "dispatch_order",
    "dispatched_at",
    "select_waiting",
]


def _check(queue: object, policy: object, moment: object, fits: object = callable) -> None:
    """The ``TypeError`` for the first argument of the wrong type: the one check of
    every function here, made once, at its call."""
    if (
        type(queue) is WaitingQueue
        and type(policy) is QueuePolicy
        and type(moment) is Moment
        and (fits is callable or callable(fits))
    ):
        return  # the usual call, in one test
    for name, value, kind in (
        ("queue", queue, WaitingQueue),
        ("policy", policy, QueuePolicy),
        ("moment", moment, Moment),
    ):
        if not isinstance(value, kind):
            raise TypeError(f"{name} must be a {kind.__name__}, not {type(value).__name__}")
    if not callable(fits):
        raise TypeError(f"fits must be a function of an entry, not {type(fits).__name__}")


def select_waiting(queue: WaitingQueue, policy: QueuePolicy, moment: Moment) -> Maybe[Selection]:
    """The entry the next admission attempt tests, or Nothing for an empty queue.

    Never raises for arguments of the right types: every number is read as a
    float (see :class:`~policy.waiting.reference.Moment`), and evaluation is total.

    >>> from policy.waiting.policies import static_priority
    >>> policy = static_priority()
    >>> queue = WaitingQueue()
    >>> for serial, priority in enumerate([5, 1, 1]):
    ...     queue = queue.append(policy, serial, {"priority": priority}, serial=serial,
    ...                          now=0.0).unwrap()
    >>> select_waiting(queue, policy, Moment(1.0)).map(lambda s: (s.index, s.keys))
    <Some: (1, (1.0,))>
    """
    _check(queue, policy, moment)
    chosen = queue.selected(policy, moment)
    return Nothing if chosen is None else Some(Selection(chosen[0], chosen[1], queue))


def dispatch_order(queue: WaitingQueue, policy: QueuePolicy, moment: Moment) -> Iterator[Selection]:
    """Every entry, lazily, in the order in which repeated selections at ``moment``
    would take them if each selected entry left the queue: the resumed prefix, then
    the others by key values, ties in queue order. Keys are evaluated once each;
    ``index`` of every selection is its position in ``queue``.

    Valid for one moment: ``now`` and ``budget_left`` are those of ``moment``
    (see :func:`admit_many` for budgets that change between admissions).

    >>> from policy.waiting.policies import static_priority
    >>> policy = static_priority()
    >>> queue = WaitingQueue()
    >>> for serial, priority in enumerate([5, 1, 3]):
    ...     queue = queue.append(policy, serial, {"priority": priority}, serial=serial,
    ...                          now=0.0).unwrap()
    >>> [s.entry.identity for s in dispatch_order(queue, policy, Moment(0.0))]
    [1, 2, 0]
    """
    _check(queue, policy, moment)  # at the call, not at the first next()
    return (Selection(entry, keys, queue) for entry, keys in queue.dispatched(policy, moment))


def dispatched_at(
    queue: WaitingQueue, policy: QueuePolicy, moment: Moment, position: int
) -> WaitingEntry:
    """The entry at ``position`` of :func:`dispatch_order` ``(queue, policy,
    moment)``, without walking the order before it where the path allows:
    O(log n) under ``fifo`` keys and in the resumed prefix; O(classes + log n)
    under ``static`` keys (O(classes + log² n) while a class holds arrivals that
    came out of key order); the walk of the order under ``lanes`` and ``scan``.

    ``position`` must be an int from 0 to ``len(queue) - 1`` (a ``TypeError``,
    an ``IndexError``).

    >>> from policy.waiting.policies import static_priority
    >>> policy = static_priority()
    >>> queue = WaitingQueue()
    >>> for serial, priority in enumerate([5, 1, 3]):
    ...     queue = queue.append(policy, serial, {"priority": priority}, serial=serial,
    ...                          now=0.0).unwrap()
    >>> [dispatched_at(queue, policy, Moment(0.0), at).identity for at in range(3)]
    [1, 2, 0]
    """
    _check(queue, policy, moment)
    if type(position) is not int:  # exactly: the queue's own method takes subclasses too
        raise TypeError(f"position must be an int, not {type(position).__name__}")
    return queue.dispatched_at(policy, moment, position)  # which checks the range


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
    _check(queue, policy, moment, fits)
    chosen = queue.selected(policy, moment)
    if chosen is None:
        return QueueEmpty()
    selection = Selection(chosen[0], chosen[1], queue)
    if not fits(selection.entry):
        return Blocked(selection, queue)
    return Admitted(selection, queue.without(selection.entry))


@dataclass(frozen=True, slots=True)
class PassOutcome:
    """What one admission pass did: the admissions in order, the queue that
    remains, and why it stopped (``Blocked`` or ``QueueEmpty``; None at the limit)."""

    admitted: tuple[Admitted, ...]
    queue: WaitingQueue
    stopped: Blocked | QueueEmpty | None


def admit_many(
    queue: WaitingQueue,
    policy: QueuePolicy,
    moment: Moment,
    fits: Callable[[WaitingEntry], bool],
    *,
    limit: int | None = None,
    next_moment: Callable[[WaitingEntry, Moment], Moment] | None = None,
) -> PassOutcome:
    """Admission attempts at one moment until one blocks, the queue empties or
    ``limit`` entries were admitted: the same outcome as calling
    :func:`attempt_admission` repeatedly, in O(n + k log n) for k admissions.

    ``next_moment(entry, moment)`` gives the moment after an admission (the host's
    budgets left, which shrink); its ``now`` must stay that of ``moment`` (a
    ``ValueError`` otherwise). When the policy's keys read ``budget_left`` the
    keys are evaluated again after each admission; otherwise once.

    >>> from policy.waiting.policies import fifo
    >>> queue = WaitingQueue()
    >>> for serial in range(3):
    ...     queue = queue.append(fifo(), serial, {}, serial=serial, now=0.0).unwrap()
    >>> done = admit_many(queue, fifo(), Moment(0.0), lambda entry: entry.identity != 2)
    >>> [a.entry.identity for a in done.admitted], type(done.stopped).__name__, len(done.queue)
    ([0, 1], 'Blocked', 1)
    """
    _check(queue, policy, moment, fits)
    if next_moment is not None and not callable(next_moment):
        raise TypeError(f"next_moment must be a function or None, not {type(next_moment).__name__}")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
        raise TypeError(f"limit must be an int or None, not {type(limit).__name__}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be at least 0, not {shown(limit)}")
    admitted: list[Admitted] = []
    if next_moment is not None and plan_of(policy).reads_budget:
        # keys read the budgets, which change after each admission: select again
        while limit is None or len(admitted) < limit:
            chosen = queue.selected(policy, moment)
            if chosen is None:
                return PassOutcome(tuple(admitted), queue, QueueEmpty())
            selection = Selection(chosen[0], chosen[1], queue)
            if not fits(selection.entry):
                return PassOutcome(tuple(admitted), queue, Blocked(selection, queue))
            queue = queue.without(selection.entry)
            admitted.append(Admitted(selection, queue))
            moment = _moved(moment, next_moment(selection.entry, moment))
        return PassOutcome(tuple(admitted), queue, None)
    for entry, keys in queue.dispatched(policy, moment):
        if limit is not None and len(admitted) >= limit:
            return PassOutcome(tuple(admitted), queue, None)
        selection = Selection(entry, keys, queue)
        if not fits(entry):
            return PassOutcome(tuple(admitted), queue, Blocked(selection, queue))
        queue = queue.without(entry)
        admitted.append(Admitted(selection, queue))
        if next_moment is not None:
            moment = _moved(moment, next_moment(entry, moment))
    if limit is not None and len(admitted) >= limit:
        return PassOutcome(tuple(admitted), queue, None)
    return PassOutcome(tuple(admitted), queue, QueueEmpty())


def _moved(before: Moment, after: object) -> Moment:
    if not isinstance(after, Moment):
        raise TypeError(f"next_moment must return a Moment, not {shown(after)}")
    if not (after.now == before.now or (after.now != after.now and before.now != before.now)):
        raise ValueError(
            f"next_moment must keep now ({shown(before.now)}) within one pass,"
            f" not {shown(after.now)}"
        )
    return after
