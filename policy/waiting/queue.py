"""The immutable waiting queue.

Entries stay in enqueue order. New requests go to the back; a preempted request
goes to the front, marked resumed, so resumed entries form a prefix with the
most recently preempted first. Every operation returns a new queue.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from pyrsistent import pmap, pvector
from pyrsistent.typing import PMap, PVector
from returns.maybe import Maybe, Nothing, Some
from returns.result import Failure, Result, Success

from policy.identity import RequestId
from policy.waiting.evaluate import Scope, evaluate
from policy.waiting.numbers import as_float, is_number, shown
from policy.waiting.queue_policy import QueuePolicy

AttributeValue: TypeAlias = float | bool


@dataclass(frozen=True, slots=True)
class WaitingEntry:
    """One waiting request.

    Built by :class:`WaitingQueue`, which stores attribute numbers and
    ``enqueued_at`` as floats. ``enqueue_keys`` holds the key values computed
    when the entry was queued under a policy with ``enqueue`` timing (None
    otherwise).
    """

    identity: RequestId
    attributes: PMap[str, AttributeValue]
    serial: int
    enqueued_at: float
    resumed: bool = False
    enqueue_keys: tuple[float, ...] | None = None


@dataclass(frozen=True, slots=True)
class QueueError:
    """Why the queue refused a request."""

    identity: RequestId
    message: str

    def __str__(self) -> str:
        return f"request {shown(self.identity)}: {self.message}"


def keys_at_enqueue(policy: QueuePolicy, entry: WaitingEntry) -> tuple[float, ...]:
    """The key values of ``entry`` as computed when it was queued: ``waited`` = 0.

    >>> from policy.waiting.queue_policy import make_policy
    >>> policy = make_policy(["now + prompt"], attributes=["prompt"], timing="enqueue").unwrap()
    >>> keys_at_enqueue(policy, WaitingEntry(7, pmap({"prompt": 2}), 0, enqueued_at=1.5))
    (3.5,)
    """
    scope = Scope(
        entry.attributes,
        entry.serial,
        now=as_float(entry.enqueued_at),
        waited=0.0,
        budget_left=pmap(),
        constants=policy.constants,
    )
    return tuple(evaluate(key, scope) for key in policy.keys)


@dataclass(frozen=True, slots=True)
class WaitingQueue:
    """Waiting entries in enqueue order (resumed entries first)."""

    entries: PVector[WaitingEntry] = field(default_factory=pvector)

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[WaitingEntry]:
        return iter(self.entries)

    def index_of(self, identity: RequestId) -> Maybe[int]:
        """Where the request ``identity`` waits, if it does.

        >>> WaitingQueue().index_of("a")
        <Nothing>
        """
        for index, entry in enumerate(self.entries):
            if entry.identity == identity:
                return Some(index)
        return Nothing

    def _admit_entry(
        self,
        policy: QueuePolicy,
        identity: RequestId,
        attributes: Mapping[str, AttributeValue],
        serial: int,
        now: float,
        *,
        resumed: bool,
        ever_fits: Callable[[WaitingEntry], bool] | None,
    ) -> Result[WaitingEntry, QueueError]:
        """The entry to queue, or why the request is refused (shared by both ways in)."""
        if self.index_of(identity) != Nothing:
            return Failure(QueueError(identity, "is already waiting"))
        given: object = attributes
        if not isinstance(given, Mapping):
            return Failure(
                QueueError(identity, f"attributes must map names to values, not {shown(given)}")
            )
        for name, value in attributes.items():
            if not is_number(value):
                return Failure(
                    QueueError(identity, f"attribute {shown(name)} must be a number or a boolean")
                )
        if not is_number(serial):
            return Failure(QueueError(identity, f"serial must be a number, not {shown(serial)}"))
        if not is_number(now):
            return Failure(QueueError(identity, f"now must be a number, not {shown(now)}"))
        missing = sorted(policy.attributes_read - attributes.keys())
        if missing:
            return Failure(
                QueueError(
                    identity,
                    f"lacks attribute {missing[0]!r}, which the queue policy's keys read",
                )
            )
        at = as_float(now)
        stored = pmap(
            {
                name: value if isinstance(value, bool) else as_float(value)
                for name, value in attributes.items()
            }
        )
        entry = WaitingEntry(identity, stored, serial, at, resumed)
        if policy.timing == "enqueue" and not policy.is_fifo:
            entry = WaitingEntry(
                identity, entry.attributes, serial, at, resumed, keys_at_enqueue(policy, entry)
            )
        if ever_fits is not None and not ever_fits(entry):
            return Failure(
                QueueError(
                    identity,
                    "could never fit, even in an empty pool; refused so that it cannot"
                    " block the queue for ever",
                )
            )
        return Success(entry)

    def append(
        self,
        policy: QueuePolicy,
        identity: RequestId,
        attributes: Mapping[str, AttributeValue],
        *,
        serial: int,
        now: float,
        ever_fits: Callable[[WaitingEntry], bool] | None = None,
    ) -> Result[WaitingQueue, QueueError]:
        """This queue with a new request at the back, queued at ``now``.

        Refused: an identity already waiting, an attribute, ``serial`` or ``now``
        that is not a number or boolean, a missing attribute the keys read, and
        (when the host gives ``ever_fits``) a request that could never fit even
        in an empty pool, since it would block the queue for ever.

        Numbers are stored as :func:`~policy.waiting.numbers.as_float` reads them:
        attribute numbers and ``now`` become floats (an integer beyond the float
        range is ±infinity); booleans stay booleans; ``serial`` is kept as given
        and read as a float.

        >>> from policy.waiting.policies import fifo
        >>> queue = WaitingQueue().append(fifo(), "a", {}, serial=0, now=0.0).unwrap()
        >>> str(queue.append(fifo(), "a", {}, serial=1, now=1.0).failure())
        "request 'a': is already waiting"
        >>> str(queue.append(fifo(), "b", {}, serial=1, now=1.0, ever_fits=lambda e: False)
        ...       .failure())  # doctest: +ELLIPSIS
        "request 'b': could never fit, even in an empty pool; ..."
        """
        made = self._admit_entry(
            policy, identity, attributes, serial, now, resumed=False, ever_fits=ever_fits
        )
        return made.map(lambda entry: WaitingQueue(self.entries.append(entry)))

    def requeue_preempted(
        self,
        policy: QueuePolicy,
        identity: RequestId,
        attributes: Mapping[str, AttributeValue],
        *,
        serial: int,
        now: float,
        ever_fits: Callable[[WaitingEntry], bool] | None = None,
    ) -> Result[WaitingQueue, QueueError]:
        """This queue with a preempted request at the front, resumed, queued afresh at ``now``.

        Refused for the same reasons as :meth:`append`, ``ever_fits`` included.

        >>> from policy.waiting.policies import fifo
        >>> queue = WaitingQueue().append(fifo(), "a", {}, serial=0, now=0.0).unwrap()
        >>> queue = queue.requeue_preempted(fifo(), "b", {}, serial=1, now=2.0).unwrap()
        >>> [(e.identity, e.resumed, e.enqueued_at) for e in queue]
        [('b', True, 2.0), ('a', False, 0.0)]
        """
        made = self._admit_entry(
            policy, identity, attributes, serial, now, resumed=True, ever_fits=ever_fits
        )
        return made.map(lambda entry: WaitingQueue(pvector([entry]) + self.entries))

    def without_index(self, index: int) -> WaitingQueue:
        """This queue without the entry at ``index`` (which must exist), others in order."""
        return WaitingQueue(self.entries.delete(index))

    def remove(self, identity: RequestId) -> Result[WaitingQueue, QueueError]:
        """This queue without the request ``identity`` (admitted or cancelled).

        >>> str(WaitingQueue().remove(3).failure())
        'request 3: is not waiting'
        """
        found = self.index_of(identity)
        if found == Nothing:
            return Failure(QueueError(identity, "is not waiting"))
        return Success(self.without_index(found.unwrap()))
