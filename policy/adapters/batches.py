"""The drop-in queue's two batches: its arrivals and its admissions of one moment.

vLLM's step adds its new requests one by one, then peeks and pops requests one
by one. Each of these done on the kernel's queue would make a new version per
request. The drop-in instead collects each kind and hands it to the kernel in
one call, at the next operation that needs the held version whole. Each batch
keeps one invariant, which its tests check against one kernel call per
request:

- :class:`Arrivals`: ``joined(queue)`` is the version one ``append`` per add,
  in add order, gives;
- :class:`Admissions`: under a policy whose selection reads no moment (the
  ``fifo`` and ``static`` paths), repeated selections, each followed by the
  removal of the selected entry, take the entries in the dispatch order of
  any one moment. So each pop takes the next entry of one dispatch iteration
  of the held version, and ``removed(queue)`` is the version one ``without``
  per taken entry gives.

Neither holds a host's request: entries carry only ids (the drop-in keeps its
requests itself, and lets go of each as it leaves). Neither grows past
:data:`CHUNK`: the drop-in hands a full one to the kernel at once, so that no
single call does more than a chunk's work (the longest call stays a small part
of vLLM's step, docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from returns.result import Failure

from policy.waiting import Moment, QueuePolicy, WaitingEntry, WaitingQueue

__all__ = ["ANY_MOMENT", "CHUNK", "Admissions", "Arrivals"]

#: The moment of every selection on a path whose selection reads none.
ANY_MOMENT: Final = Moment(0.0)

#: The most arrivals, or taken admissions, held before they go to the kernel in one
#: call: a chunk costs about 0.3 ms at 100,000 waiting (docs/performance.md), a
#: tenth of what a whole step's 256 would.
CHUNK: Final = 64


class Arrivals:
    """Requests added and not yet joined to the held version, in add order.

    Each is ``(id, attributes, serial, enqueue time)``, as
    ``WaitingQueue.extend`` takes it, and added only once the caller has
    checked everything ``append`` would refuse: joining them cannot fail.

    >>> from policy.waiting import fifo
    >>> arrivals = Arrivals()
    >>> arrivals.add("a", {}, 0, 0.0), arrivals.add("b", {}, 1, 0.0)
    (1, 2)
    >>> [entry.identity for entry in arrivals.joined(WaitingQueue(), fifo())], arrivals.count
    (['a', 'b'], 0)
    """

    __slots__ = ("_waiting", "count")

    def __init__(self) -> None:
        self._waiting: list[tuple[str | int, dict[str, object], int, float]] = []
        #: How many arrivals wait to be joined.
        self.count = 0

    def add(
        self, identity: str | int, attributes: dict[str, object], serial: int, now: float
    ) -> int:
        """One more arrival, after the others; how many wait now."""
        self._waiting.append((identity, attributes, serial, now))
        self.count += 1
        return self.count

    def joined(self, queue: WaitingQueue, policy: QueuePolicy) -> WaitingQueue:
        """``queue`` with every arrival appended, in order; none is left."""
        made = queue.extend(policy, self._waiting)  # type: ignore[arg-type]
        self._waiting = []
        self.count = 0
        if isinstance(made, Failure):  # the caller checked what the kernel checks
            raise RuntimeError(f"the queue refused an arrival it had taken: {made.failure()}")
        return made.unwrap()


#: An entry and its key values, as ``WaitingQueue.dispatched`` gives them.
Chosen = tuple[WaitingEntry, tuple[float, ...]]


class Admissions:
    """The entries taken, in dispatch order, from one version of the queue under a
    policy whose selection reads no moment, and not yet removed from it.

    >>> from policy.waiting import fifo
    >>> queue = WaitingQueue().extend(fifo(), [("a", {}, 0, 0.0), ("b", {}, 1, 0.0)]).unwrap()
    >>> admissions = Admissions(queue, fifo())
    >>> admissions.next()[0].identity, admissions.take()[0].identity
    ('a', 'a')
    >>> [entry.identity for entry in admissions.removed(queue)]
    ['b']
    """

    __slots__ = ("_ahead", "_order", "_policy", "_taken", "count")

    def __init__(self, queue: WaitingQueue, policy: QueuePolicy) -> None:
        self._policy = policy
        self._order: Iterator[Chosen] = queue.dispatched(policy, ANY_MOMENT)
        self._ahead: Chosen | None = None  # the next pair, once read
        self._taken: list[Chosen] = []
        #: How many entries were taken.
        self.count = 0

    def next(self) -> Chosen | None:
        """The entry the next :meth:`take` takes, with its key values (None: nothing
        is left)."""
        ahead = self._ahead
        if ahead is None:
            ahead = self._ahead = next(self._order, None)
        return ahead

    def take(self) -> Chosen | None:
        """The next entry, taken, with its key values (None: nothing is left)."""
        chosen = self._ahead
        if chosen is None:
            chosen = next(self._order, None)
            if chosen is None:
                return None
        else:
            self._ahead = None
        self._taken.append(chosen)
        self.count += 1
        return chosen

    def taken(self) -> list[Chosen]:
        """The entries taken, with their key values, in the order taken."""
        return self._taken

    def removed(self, queue: WaitingQueue) -> WaitingQueue:
        """``queue`` (the version these were taken from) without the taken entries:
        the first of its dispatch order, which leave at once."""
        return queue.without_dispatched(self._policy, ANY_MOMENT, self.count)
