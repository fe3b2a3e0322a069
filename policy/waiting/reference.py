"""Selection, as defined: the plain definition every fast path is proven equal to.

At an admission attempt, at a :class:`Moment` (``now`` and the token budgets
left), the selected entry of a waiting queue is:

1. nothing, when the queue is empty;
2. the front entry, when it is resumed (no key is evaluated);
3. the front entry, when the policy has no keys (FIFO);
4. otherwise the entry with the smallest key list, its keys evaluated now by
   the tree evaluator (:func:`~policy.waiting.evaluate.evaluate`) and compared
   in the total order of :func:`~policy.waiting.evaluate.key_list_order`;
   ties to the earlier entry.

:func:`select_reference` is exactly that, over the queue's entries in order.
This module reads nothing of how the queue is stored: any iterable of
:class:`~policy.waiting.entry.WaitingEntry` in queue order serves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from pyrsistent import pmap
from returns.maybe import Maybe, Nothing, Some

from policy.waiting.entry import WaitingEntry
from policy.waiting.evaluate import NO_BUDGETS, Scope, evaluate, key_list_order
from policy.waiting.numbers import as_float, is_number, shown
from policy.waiting.queue_policy import QueuePolicy

__all__ = [
    "Moment",
    "Positions",
    "Selection",
    "entry_keys",
    "keys_at_enqueue",
    "select_reference",
]


@dataclass(frozen=True, slots=True)
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
    budget_left: Mapping[str, float] = NO_BUDGETS

    def __post_init__(self) -> None:
        now: object = self.now
        if type(now) is not float:
            if not is_number(now):
                raise TypeError(f"now must be a number, not {shown(now)}")
            object.__setattr__(self, "now", as_float(now))
        budgets: object = self.budget_left
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
        # held as an immutable map of floats, whatever mapping the host passed
        object.__setattr__(
            self, "budget_left", pmap({stage: as_float(left) for stage, left in budgets.items()})
        )


class Positions(Protocol):
    """What a :class:`Selection` asks of the queue it was selected from."""

    def position_of(self, entry: WaitingEntry) -> int: ...


class Selection(NamedTuple):
    """The selected entry, its key values (empty when no key was evaluated) and the
    queue it was selected from; ``index`` is where the entry waits there
    (computed on demand). Equality reads the entry and the keys.
    """

    entry: WaitingEntry
    keys: tuple[float, ...]
    queue: Positions

    @property
    def index(self) -> int:  # type: ignore[override]  # a field of the record, not tuple.index
        """The entry's position in :attr:`queue`."""
        return self.queue.position_of(self.entry)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Selection):
            return NotImplemented
        return self.entry == other.entry and self.keys == other.keys

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash((self.entry, self.keys))

    def __repr__(self) -> str:
        return f"Selection(entry={self.entry!r}, keys={self.keys!r})"


def keys_at_enqueue(policy: QueuePolicy, entry: WaitingEntry) -> tuple[float, ...]:
    """The key values of ``entry`` as computed when it was queued: ``now`` is its
    ``enqueued_at`` and ``waited`` 0.

    >>> from policy.waiting.entry import make_entry
    >>> from policy.waiting.queue_policy import make_policy
    >>> policy = make_policy(["now + prompt"], attributes=["prompt"], timing="enqueue").unwrap()
    >>> keys_at_enqueue(policy, make_entry(7, {"prompt": 2}, 0, enqueued_at=1.5))
    (3.5,)
    """
    _check_types(policy=policy, entry=entry)
    scope = Scope(
        entry.attributes,
        entry.serial,
        as_float(entry.enqueued_at),
        0.0,
        NO_BUDGETS,
        policy.constants,
    )
    return tuple(evaluate(key, scope) for key in policy.keys)


def entry_keys(policy: QueuePolicy, entry: WaitingEntry, moment: Moment) -> tuple[float, ...]:
    """The key values of ``entry`` at ``moment`` under ``policy``'s key timing:
    the keys stored when it was queued under ``enqueue`` timing, otherwise every
    key evaluated now, ``waited`` being ``now - enqueued_at``.

    >>> from policy.waiting.entry import make_entry
    >>> from policy.waiting.queue_policy import make_policy
    >>> policy = make_policy(["waited"]).unwrap()
    >>> entry_keys(policy, make_entry("a", {}, 0, enqueued_at=1.0), Moment(4.0))
    (3.0,)
    """
    _check_types(policy=policy, entry=entry, moment=moment)
    if policy.timing == "enqueue":
        stored = entry.enqueue_keys
        return stored if stored is not None else keys_at_enqueue(policy, entry)
    scope = Scope(
        entry.attributes,
        entry.serial,
        moment.now,
        moment.now - as_float(entry.enqueued_at),
        moment.budget_left,
        policy.constants,
    )
    return tuple(evaluate(key, scope) for key in policy.keys)


def select_reference(
    queue: Iterable[WaitingEntry], policy: QueuePolicy, moment: Moment
) -> Maybe[Selection]:
    """The selection at ``moment`` from ``queue`` (a
    :class:`~policy.waiting.queue.WaitingQueue`, or any iterable of its entries in
    queue order), as defined (the module's docstring): what
    :func:`~policy.waiting.select.select_waiting` computes faster.

    >>> from policy.waiting.policies import fifo
    >>> select_reference([], fifo(), Moment(0.0))
    <Nothing>
    """
    given: object = queue
    if not isinstance(given, Iterable):
        raise TypeError(f"queue must be a WaitingQueue, not {type(given).__name__}")
    _check_types(policy=policy, moment=moment)
    entries = list(queue)
    for entry in entries:
        _check_types(entry=entry)
    if not entries:
        return Nothing
    front = entries[0]
    if front.resumed or not policy.keys:
        return Some(Selection(front, (), queue))  # type: ignore[arg-type]
    keyed = [
        (key_list_order(entry_keys(policy, entry, moment)), at) for at, entry in enumerate(entries)
    ]
    _, best = min(keyed)  # the smallest key list; on a tie, the smaller position
    chosen = entries[best]
    return Some(Selection(chosen, entry_keys(policy, chosen, moment), queue))  # type: ignore[arg-type]


#: An argument a caller of :func:`_check_types` does not pass.
_UNSET: object = object()


def _check_types(
    *, policy: object = _UNSET, entry: object = _UNSET, moment: object = _UNSET
) -> None:
    """The ``TypeError`` for an argument of the wrong type (each one given)."""
    if policy is not _UNSET and not isinstance(policy, QueuePolicy):
        raise TypeError(f"policy must be a QueuePolicy, not {type(policy).__name__}")
    if entry is not _UNSET and not isinstance(entry, WaitingEntry):
        raise TypeError(f"entry must be a WaitingEntry, not {type(entry).__name__}")
    if moment is not _UNSET and not isinstance(moment, Moment):
        raise TypeError(f"moment must be a Moment, not {type(moment).__name__}")
