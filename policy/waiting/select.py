"""Selecting the next waiting entry, and one admission attempt.

These functions return plain values, so an argument of the wrong type (a queue
that is not a :class:`~policy.waiting.queue.WaitingQueue`, a policy that is not
a :class:`~policy.waiting.queue_policy.QueuePolicy`, a moment that is not a
:class:`Moment`, a ``fits`` that is not callable) is a ``TypeError``, raised at
once, before anything is selected.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from itertools import islice, repeat
from typing import Any, Final, TypeAlias

from pyrsistent import pmap
from returns.maybe import Maybe, Nothing, Some

from policy.records import record_builder, shape_of, slot_setters
from policy.waiting.evaluate import evaluate, key_list_order, scope_of
from policy.waiting.numbers import as_float, is_number, shown
from policy.waiting.plan import NO_BUDGETS
from policy.waiting.queue import WaitingEntry, WaitingQueue, keys_at_enqueue_unchecked
from policy.waiting.queue_policy import QueuePolicy


@dataclass(frozen=True, slots=True, init=False)
class Moment:
    """The admission clock and the token budgets left, at one admission attempt.

    A stage missing from ``budget_left`` reads as NaN (unknown): such an
    attempt is not bound to that stage. Numbers are held as floats, converted by
    :func:`~policy.waiting.numbers.as_float` (an integer beyond the float range
    is ±infinity, a boolean 1 or 0); anything else, or a stage name that is not
    text, is a ``TypeError``.

    >>> Moment(2, {"engine": 96}).budget_left
    pmap({'engine': 96.0})
    >>> Moment(10**400).now
    inf
    """

    now: float
    budget_left: Mapping[str, float]

    def __init__(self, now: float, budget_left: Mapping[str, float] = NO_BUDGETS) -> None:
        # The slot setters, not the frozen __init__: a Moment is built per admission.
        if type(now) is not float:  # the hot path passes a float: nothing to convert
            if not is_number(now):
                raise TypeError(f"now must be a number, not {shown(now)}")
            now = as_float(now)
        _set_now(self, now)
        _set_budgets(self, budget_left)
        budgets: object = budget_left
        if budgets is NO_BUDGETS:
            return
        if not isinstance(budgets, Mapping):
            raise TypeError(f"budget_left must map stages to numbers, not {shown(budgets)}")
        for stage, left in budgets.items():
            if not isinstance(stage, str):
                raise TypeError(
                    f"budget_left must be keyed by stage names (str), not {shown(stage)}"
                )
            if not is_number(left):
                raise TypeError(f"budget_left[{shown(stage)}] must be a number, not {shown(left)}")
        # Held as an immutable map of floats, whatever mapping the host passed.
        _set_budgets(self, pmap({stage: as_float(left) for stage, left in budgets.items()}))


# The slot setters, cheaper than object.__setattr__ on a frozen dataclass.
_set_now, _set_budgets = slot_setters(Moment, ("now", "budget_left"))


@dataclass(frozen=True, slots=True)
class Selection:
    """The selected entry and its key values (empty when no key was evaluated).

    ``index`` is where the entry waits in ``queue``, the queue it was selected
    from (computed on demand, as ``WaitingQueue.index_of``).
    """

    entry: WaitingEntry
    keys: tuple[float, ...]
    queue: WaitingQueue = field(repr=False, compare=False)

    @property
    def index(self) -> int:
        """The entry's position in :attr:`queue`."""
        return self.queue._position_of(self.entry)


#: An argument a caller of :func:`_refuse_arguments` does not take.
_ABSENT: object = object()


def _refuse_arguments(
    queue: object = _ABSENT,
    policy: object = _ABSENT,
    moment: object = _ABSENT,
    fits: object = _ABSENT,
) -> None:
    """Raise the ``TypeError`` for the first argument of the wrong type. Callers test
    the exact types inline first, so only a subclass or a mistake comes here."""
    expected: tuple[tuple[str, object, type], ...] = (
        ("queue", queue, WaitingQueue),
        ("policy", policy, QueuePolicy),
        ("moment", moment, Moment),
    )
    for name, value, kind in expected:
        if value is not _ABSENT and not isinstance(value, kind):
            raise TypeError(f"{name} must be a {kind.__name__}, not {type(value).__name__}")
    if fits is not _ABSENT and not callable(fits):
        raise TypeError(f"fits must be a function of an entry, not {type(fits).__name__}")


def entry_keys(policy: QueuePolicy, entry: WaitingEntry, moment: Moment) -> tuple[float, ...]:
    """The key values of ``entry`` at ``moment`` under ``policy``'s key timing, by the
    tree evaluator (the plain definition).

    >>> from policy.waiting.queue_policy import make_policy
    >>> policy = make_policy(["waited"]).unwrap()
    >>> entry_keys(policy, WaitingEntry("a", {}, 0, enqueued_at=1.0), Moment(4.0))
    (3.0,)
    """
    if not isinstance(entry, WaitingEntry):
        raise TypeError(f"entry must be a WaitingEntry, not {type(entry).__name__}")
    if type(policy) is not QueuePolicy or type(moment) is not Moment:
        _refuse_arguments(policy=policy, moment=moment)
    return _entry_keys(policy, entry, moment)


def _entry_keys(policy: QueuePolicy, entry: WaitingEntry, moment: Moment) -> tuple[float, ...]:
    """:func:`entry_keys` for arguments of the right types, not checked again."""
    if policy.timing == "enqueue":
        stored = entry.enqueue_keys
        return stored if stored is not None else keys_at_enqueue_unchecked(policy, entry)
    scope = scope_of(
        entry.attributes,
        entry.serial,
        now=moment.now,
        waited=as_float(moment.now) - as_float(entry.enqueued_at),
        budget_left=moment.budget_left,
        constants=policy.constants,
    )
    return tuple(evaluate(key, scope) for key in policy.keys)


def select_reference(queue: WaitingQueue, policy: QueuePolicy, moment: Moment) -> Maybe[Selection]:
    """The plain definition of selection, which :func:`select_waiting` computes faster.

    A resumed front entry, or the front under FIFO, is chosen without
    evaluating any key; otherwise every key of every entry is evaluated by the
    tree evaluator and the smallest key list wins (total order of
    :func:`~policy.waiting.evaluate.key_list_order`), ties going to the earlier entry.

    >>> from policy.waiting.policies import fifo
    >>> select_reference(WaitingQueue(), fifo(), Moment(0.0))
    <Nothing>
    """
    if (
        type(queue) is not WaitingQueue
        or type(policy) is not QueuePolicy
        or type(moment) is not Moment
    ):
        _refuse_arguments(queue, policy, moment)
    return _select_reference(queue, policy, moment)


def _select_reference(queue: WaitingQueue, policy: QueuePolicy, moment: Moment) -> Maybe[Selection]:
    """:func:`select_reference` for arguments of the right types, not checked again."""
    entries = queue.entries
    if not entries:
        return Nothing
    front = entries[0]
    if front.resumed or policy.is_fifo:
        return Some(Selection(front, (), queue))
    best_index, best_keys = 0, _entry_keys(policy, front, moment)
    best_order = key_list_order(best_keys)
    for index in range(1, len(entries)):
        keys = _entry_keys(policy, entries[index], moment)
        order = key_list_order(keys)
        if order < best_order:  # strict: on a tie the earlier entry stays
            best_index, best_keys, best_order = index, keys, order
    return Some(Selection(entries[best_index], best_keys, queue))


def select_entry(
    queue: WaitingQueue, policy: QueuePolicy, moment: Moment
) -> tuple[WaitingEntry, tuple[float, ...]] | None:
    """:func:`select_waiting` without its records: the selected entry and its key
    values as a pair, or None for an empty queue (for hosts that select on every
    step: it builds nothing but the pair).

    >>> from policy.waiting.policies import fifo
    >>> queue = WaitingQueue().append(fifo(), "a", {}, serial=0, now=0.0).unwrap()
    >>> entry, keys = select_entry(queue, fifo(), Moment(0.0))
    >>> entry.identity, keys, select_entry(WaitingQueue(), fifo(), Moment(0.0))
    ('a', (), None)
    """
    if (
        type(queue) is not WaitingQueue
        or type(policy) is not QueuePolicy
        or type(moment) is not Moment
    ):
        _refuse_arguments(queue, policy, moment)
    if not queue:
        return None
    chosen = queue._selected(policy, moment.now, moment.budget_left)
    if chosen is None:  # the queue was built with another policy
        selection = _select_reference(queue, policy, moment).unwrap()
        return selection.entry, selection.keys
    return chosen


def select_waiting(queue: WaitingQueue, policy: QueuePolicy, moment: Moment) -> Maybe[Selection]:
    """The entry the next admission attempt tests, or Nothing for an empty queue.

    Exactly :func:`select_reference`, computed by the policy's path
    (``policy.path``: ``fifo``, ``static``, ``lanes`` or ``scan``; see
    docs/performance.md) with compiled keys. Never raises: every number is read
    as a float (see :class:`Moment`), and evaluation is total.

    >>> from policy.waiting.policies import static_priority
    >>> policy = static_priority()
    >>> queue = WaitingQueue()
    >>> for serial, priority in enumerate([5, 1, 1]):
    ...     queue = queue.append(policy, serial, {"priority": priority}, serial=serial,
    ...                          now=0.0).unwrap()
    >>> select_waiting(queue, policy, Moment(1.0)).map(lambda s: (s.index, s.keys))
    <Some: (1, (1.0,))>
    """
    if (
        type(queue) is not WaitingQueue
        or type(policy) is not QueuePolicy
        or type(moment) is not Moment
    ):
        _refuse_arguments(queue, policy, moment)
    if not queue:
        return Nothing
    return Some(_selection_of(queue, policy, moment))


def _selection_of(queue: WaitingQueue, policy: QueuePolicy, moment: Moment) -> Selection:
    """The selection from a non-empty ``queue``: by the policy's path, or by the plain
    definition when the queue was built with another policy."""
    chosen = queue._selected(policy, moment.now, moment.budget_left)
    if chosen is None:
        return _select_reference(queue, policy, moment).unwrap()
    return _selection(chosen[0], chosen[1], queue)


def dispatch_order(queue: WaitingQueue, policy: QueuePolicy, moment: Moment) -> Iterator[Selection]:
    """Every entry, lazily, in the order in which repeated selections at ``moment``
    would take them if each selected entry left the queue: the resumed prefix, then
    the others by key values, ties in queue order. Keys are evaluated once each
    (O(n) for the first, O(log n) for each next one); ``index`` of every
    selection is its position in ``queue``.

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
    if (
        type(queue) is not WaitingQueue
        or type(policy) is not QueuePolicy
        or type(moment) is not Moment
    ):
        _refuse_arguments(queue, policy, moment)  # raised at the call: see _dispatch_order
    return _dispatch_order(queue, policy, moment)


def dispatch_entries(
    queue: WaitingQueue, policy: QueuePolicy, moment: Moment
) -> Iterator[tuple[WaitingEntry, tuple[float, ...]]]:
    """:func:`dispatch_order` without its records: each entry and its key values as
    a pair, lazily, in the same order (for hosts that take many entries at one
    moment: it builds nothing but the pairs, and no position; O(1) each on the
    ``fifo`` and ``static`` paths, by class).

    >>> from policy.waiting.policies import static_priority
    >>> policy = static_priority()
    >>> queue = WaitingQueue().extend(
    ...     policy, [(name, {"priority": p}, 0, 0.0) for name, p in zip("abc", (5, 1, 3))]
    ... ).unwrap()
    >>> [(entry.identity, keys) for entry, keys in dispatch_entries(queue, policy, Moment(0.0))]
    [('b', (1.0,)), ('c', (3.0,)), ('a', (5.0,))]
    """
    if (
        type(queue) is not WaitingQueue
        or type(policy) is not QueuePolicy
        or type(moment) is not Moment
    ):
        _refuse_arguments(queue, policy, moment)  # raised at the call, not at the first next
    if not policy.keys:  # the queue's own order: the pairs made in C, no generator frame
        return zip(queue, repeat(()))
    return queue._dispatch(
        policy, moment.now, moment.budget_left, partial(_plain_keys, policy, moment)
    )


def dispatched_at(
    queue: WaitingQueue, policy: QueuePolicy, moment: Moment, position: int
) -> WaitingEntry:
    """The entry at ``position`` of :func:`dispatch_order` ``(queue, policy,
    moment)``, without walking the order before it where the path allows:
    O(log n) on the ``fifo`` and ``static`` paths (plus, within one line,
    removals from its middle not yet compacted), O(k^2 log^2 n) key evaluations
    on the ``lanes`` path with k classes (walking the merge below position 64),
    and the walk itself on the ``scan`` path (O(n log n)).

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
    if (
        type(queue) is not WaitingQueue
        or type(policy) is not QueuePolicy
        or type(moment) is not Moment
    ):
        _refuse_arguments(queue, policy, moment)
    if type(position) is not int:
        raise TypeError(f"position must be an int, not {type(position).__name__}")
    if not 0 <= position < len(queue):
        raise IndexError(f"position {position} of a queue of {len(queue)}")
    found = queue._dispatched_at(policy, moment.now, moment.budget_left, position)
    if found is not None:
        return found
    return next(islice(_dispatch_order(queue, policy, moment), position, None)).entry


def _dispatch_order(
    queue: WaitingQueue, policy: QueuePolicy, moment: Moment
) -> Iterator[Selection]:
    plain = partial(_plain_keys, policy, moment)
    for entry, keys in queue._dispatch(policy, moment.now, moment.budget_left, plain):
        yield _selection(entry, keys, queue)


def _plain_keys(policy: QueuePolicy, moment: Moment, entry: WaitingEntry) -> tuple[float, ...]:
    return _entry_keys(policy, entry, moment)


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
    if (
        type(queue) is not WaitingQueue
        or type(policy) is not QueuePolicy
        or type(moment) is not Moment
        or not callable(fits)
    ):
        _refuse_arguments(queue, policy, moment, fits)
    return _attempt_admission(queue, policy, moment, fits)


def _attempt_admission(
    queue: WaitingQueue,
    policy: QueuePolicy,
    moment: Moment,
    fits: Callable[[WaitingEntry], bool],
) -> AdmissionOutcome:
    """:func:`attempt_admission` for arguments of the right types, not checked again."""
    if not queue:
        return QueueEmpty()
    selection = _selection_of(queue, policy, moment)
    if not fits(selection.entry):
        return _blocked(selection, queue)
    return _admitted(selection, queue._without(selection.entry))


_SELECTION: Final = shape_of(Selection)
_ADMITTED: Final = shape_of(Admitted)
_BLOCKED: Final = shape_of(Blocked)


def _build_selection(
    entry: WaitingEntry, keys: tuple[float, ...], queue: WaitingQueue
) -> Selection:
    made: Any = _SELECTION()
    made.entry = entry
    made.keys = keys
    made.queue = queue
    made.__class__ = Selection
    built: Selection = made
    return built


def _build_admitted(selection: Selection, queue: WaitingQueue) -> Admitted:
    made: Any = _ADMITTED()
    made.selection = selection
    made.queue = queue
    made.__class__ = Admitted
    built: Admitted = made
    return built


def _build_blocked(selection: Selection, queue: WaitingQueue) -> Blocked:
    made: Any = _BLOCKED()
    made.selection = selection
    made.queue = queue
    made.__class__ = Blocked
    built: Blocked = made
    return built


# The hot paths' constructors (policy.records.record_builder: checked at import).
_selection: Final = record_builder(Selection, _build_selection)
_admitted: Final = record_builder(Admitted, _build_admitted)
_blocked: Final = record_builder(Blocked, _build_blocked)


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
    _refuse_arguments(queue, policy, moment, fits)  # once per pass: no fast path needed
    if next_moment is not None and not callable(next_moment):
        raise TypeError(f"next_moment must be a function or None, not {type(next_moment).__name__}")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
        raise TypeError(f"limit must be an int or None, not {type(limit).__name__}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be at least 0, not {shown(limit)}")
    admitted: list[Admitted] = []
    if next_moment is not None and policy.plan.reads_budget:
        while limit is None or len(admitted) < limit:
            outcome = _attempt_admission(queue, policy, moment, fits)
            if not isinstance(outcome, Admitted):
                return PassOutcome(tuple(admitted), queue, outcome)
            admitted.append(outcome)
            queue = outcome.queue
            moment = _moved(moment, next_moment(outcome.entry, moment))
        return PassOutcome(tuple(admitted), queue, None)
    for selection in _dispatch_order(queue, policy, moment):
        if limit is not None and len(admitted) >= limit:
            return PassOutcome(tuple(admitted), queue, None)
        here = _selection(selection.entry, selection.keys, queue)
        if not fits(here.entry):
            return PassOutcome(tuple(admitted), queue, _blocked(here, queue))
        queue = queue._without(here.entry)
        admitted.append(_admitted(here, queue))
        if next_moment is not None:
            moment = _moved(moment, next_moment(here.entry, moment))
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
