"""The immutable waiting queue.

Entries stay in enqueue order. New requests go to the back; a preempted request
goes to the front, marked resumed, so resumed entries form a prefix with the
most recently preempted first. Every operation returns a new queue version
and leaves the old one as it was.

Theory of operation. Each entry gets a *ticket* when it is queued: appends
count up from 0, requeues count down from -1, so ascending tickets are queue
order. A version holds:

- the resumed entries, in a :class:`~policy.waiting.fast.line.Line` keyed by
  ticket (selected first, before any key is read);
- the fresh entries, in the :class:`~policy.waiting.fast.Index` of the policy
  the queue is used with (:mod:`policy.waiting.fast`): queue order under
  ``fifo`` and ``scan``, key order under ``static`` keys, one line per class
  under ``lanes``. Used with another policy, the queue first lays its entries
  out again for that one (O(n log n), once);
- ``identity -> entry`` for every waiting entry, so that duplicates and
  removal by identity need no scan: an
  :class:`~policy.waiting.fast.identities.Identities` index, handed on from
  each version to the version made from it (a version that handed it on
  answers from a dict of its own, made when first asked).

All three hold *rows* (:mod:`policy.waiting.fast.rows`): each entry's fields in
a plain tuple, which the garbage collector stops visiting once it has seen it;
the queue gives :class:`~policy.waiting.entry.WaitingEntry` records at its
interface, made as they are read.

An entry that leaves is dropped from all three at once: a version never holds
a request that left it, and no operation sweeps, compacts or rebuilds. Each
operation is O(log n) (``len`` O(1)), but for positions in queue order under
``static`` keys, which sort the entries by ticket (O(n log n)), and the first
identity look-up in, or the first version made from, a version that handed
its index on (O(n), once).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain, islice, repeat
from typing import Any, Final, cast

from returns.maybe import Maybe, Nothing, Some
from returns.result import Failure, Result, Success

from policy.identity import REQUEST_ID_RULE, RequestId, is_request_id
from policy.text import printable, quote, record_repr
from policy.waiting.entry import (
    ABSENT,
    AttributeValue,
    AttributeView,
    WaitingEntry,
    same_entry,
    stored,
)
from policy.waiting.evaluate import NO_BUDGETS
from policy.waiting.fast import Chosen, ChosenRow, Index, KeyPlan, index_for, plan_of
from policy.waiting.fast.identities import Identities, Unindexed
from policy.waiting.fast.in_order import InOrder
from policy.waiting.fast.line import EMPTY_LINE, Line
from policy.waiting.fast.rows import IDENTITY, NAMES, RESUMED, TICKET, VALUES, Row, as_entry
from policy.waiting.numbers import as_float, is_number, shown
from policy.waiting.queue_policy import QueuePolicy
from policy.waiting.reference import Moment

__all__ = ["QueueError", "WaitingQueue"]

#: Integers up to this in magnitude convert to a float without overflow (the rest
#: take stored()'s conversion).
_EXACT: Final = 2**1000


@dataclass(frozen=True, slots=True)
class QueueError:
    """Why the queue refused a request; its ``str`` is one printable line.

    >>> str(QueueError(10**5000, "is not waiting")), str(QueueError("a\\nb", "is not waiting"))
    ('request a 5001-digit integer: is not waiting', "request 'a\\\\nb': is not waiting")
    """

    identity: RequestId
    message: str

    __repr__ = record_repr  # an identity of any size or text

    def __str__(self) -> str:
        return printable(f"request {shown(self.identity)}: {self.message}")


#: What :meth:`WaitingQueue.extend` takes per request, and its refusals of other items.
_PARTS_TEXT: Final = "identity, attributes, serial, now[, carried]"
_NOT_A_REQUEST: Final = f"is not a request: a tuple ({_PARTS_TEXT})"
_NOT_REQUESTS: Final = f"is not an iterable of requests, tuples ({_PARTS_TEXT})"
#: The refusal of an identity that is_request_id refuses (append, requeue, remove).
_NOT_AN_IDENTITY: Final = f"an identity must be {REQUEST_ID_RULE}"
#: The stamp of a version that handed its identity index on.
_HANDED_ON: Final = -1
_ALREADY_WAITING: Final = "is already waiting"
_NEVER_FITS: Final = (
    "could never fit, even in an empty pool; refused so that it cannot block the queue for ever"
)


class WaitingQueue:
    """Waiting entries in enqueue order (resumed entries first).

    ``WaitingQueue()`` is the empty queue; every other version comes from its
    operations (see the module's theory of operation).

    >>> WaitingQueue() == WaitingQueue(), len(WaitingQueue())
    (True, 0)
    """

    # A plain slotted class: a version is made per operation (0.2 µs; a frozen
    # dataclass's __init__ costs 0.9 µs). What a version answers never changes;
    # only how it finds entries by identity does (_ids, _own: the module's
    # theory of operation).
    __slots__ = (
        "_back", "_fresh", "_front", "_ids", "_own", "_policy", "_resumed", "_size", "_stamp",
    )  # fmt: skip

    _policy: QueuePolicy | None
    _resumed: Line[Row]
    _fresh: Index | None
    _ids: Identities | None
    _stamp: int
    _own: dict[RequestId, Row] | None
    _size: int
    _front: int
    _back: int

    def __init__(self) -> None:
        self._policy = None  # the policy the fresh entries are held for: none yet
        self._resumed = EMPTY_LINE
        self._fresh = None  # no policy yet (so no entry either)
        self._ids = None  # no identity index: the first version made starts one
        self._stamp = 0
        self._own = None  # the entries by identity, made when first needed
        self._size = 0
        self._front = -1  # the next resumed ticket
        self._back = 0  # the next fresh ticket

    def _version(  # noqa: PLR0917 - a version's fields, in one place
        self,
        resumed: Line[Row],
        fresh: Index | None,
        ids: Identities | Unindexed,
        stamp: int,
        size: int,
        front: int,
        back: int,
    ) -> WaitingQueue:
        """A new version held for this one's policy, holding ``ids`` (handed on to
        it at ``stamp``; a branch holds none)."""
        version: WaitingQueue = object.__new__(WaitingQueue)
        version._policy = self._policy
        version._resumed = resumed
        version._fresh = fresh
        version._ids = ids if type(ids) is Identities else None
        version._stamp = stamp
        version._own = None
        version._size = size
        version._front = front
        version._back = back
        return version

    # --- the identity index (policy.waiting.fast.identities) ---------------------

    def _waiting(self, identity: RequestId) -> Row | None:
        """The row of the waiting entry of ``identity`` (a request id), or None."""
        ids, stamp = self._ids, self._stamp
        if ids is not None and ids.held_by(stamp):
            found = ids.entries.get(identity)
            if ids.held_by(stamp):  # not handed on while it read
                return found
        return self._own_entries().get(identity)

    def _own_entries(self) -> dict[RequestId, Row]:
        """This version's rows by identity in a dict of its own (made once)."""
        own = self._own
        if own is None:
            own = self._own = {row[IDENTITY]: row for row in self._rows()}
        return own

    def _claimed(self) -> tuple[Identities | Unindexed, int]:
        """An identity index holding this version's entries, to update for a version
        made from it, and its stamp: this version's own, claimed; none for a branch
        (this version handed its index on, or another version is being made from it
        now); else a new one, for a line that starts here."""
        ids, stamp = self._ids, self._stamp
        if ids is not None and ids.claimed(stamp):
            return ids, stamp
        if ids is not None or stamp == _HANDED_ON:
            return Unindexed(self._own_entries()), 0
        return Identities(self._own_entries().values()), 0

    def _given_back(self, ids: Identities | Unindexed, stamp: int) -> None:
        """``ids``, claimed by :meth:`_claimed` and unchanged, back to this version."""
        if ids is self._ids:
            ids.given_back(stamp)

    def _handed_on(self, ids: Identities | Unindexed, stamp: int) -> int:
        """``ids``, claimed by :meth:`_claimed` and updated, to the version made: its
        stamp. This version answers from its own dict from now on."""
        if ids is self._ids:
            self._ids = None  # and lets go of the index: it holds later versions' entries
            self._stamp = _HANDED_ON  # versions made from it from now on are branches
        return ids.handed_on(stamp)

    def _held_for(self, policy: QueuePolicy) -> bool:
        """Whether the fresh entries are held for ``policy``: the very policy object
        they were held for (the usual call, one test), or an equal one."""
        held = self._policy
        return held is policy or (held is not None and _same_policy(held, policy))

    # --- reading ------------------------------------------------------------------

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def __iter__(self) -> Iterator[WaitingEntry]:
        return map(as_entry, self._rows())

    def _rows(self) -> Iterator[Row]:
        """The rows in queue order."""
        fresh = self._fresh
        if fresh is None or not len(fresh):
            return iter(self._resumed)
        if not self._resumed:
            return fresh.in_queue_order()
        return chain(self._resumed, fresh.in_queue_order())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WaitingQueue):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"WaitingQueue({list(self)!r})"

    @property
    def entries(self) -> tuple[WaitingEntry, ...]:
        """Every entry in queue order (a snapshot; O(n))."""
        return tuple(self)

    def first(self) -> WaitingEntry:
        """The first entry of queue order (an ``IndexError`` for an empty queue):
        O(1) for a resumed one or in queue order, O(n) under ``static`` keys."""
        if self._resumed:
            return as_entry(self._resumed.first())
        fresh = self._fresh
        if fresh is None or not len(fresh):
            raise IndexError("the first entry of an empty queue")
        return as_entry(fresh.first())

    def entry_of(self, identity: RequestId) -> WaitingEntry | None:
        """The waiting entry of the request ``identity``, or None (O(1) expected).

        >>> WaitingQueue().entry_of("a") is None
        True
        """
        # Only a request id can be waiting: a colliding hash makes the dict call the
        # value's __eq__, which may raise (str and int ids always pass, without it).
        if type(identity) is not str and type(identity) is not int and not is_request_id(identity):
            return None
        row = self._waiting(identity)
        return None if row is None else as_entry(row)

    def index_of(self, identity: RequestId) -> Maybe[int]:
        """Where the request ``identity`` waits, if it does.

        >>> WaitingQueue().index_of("a")
        <Nothing>
        """
        entry = self.entry_of(identity)
        return Nothing if entry is None else Some(self.position_of(entry))

    def position_of(self, entry: WaitingEntry) -> int:
        """The position of ``entry``, which must wait in this queue, in queue order."""
        if entry.resumed:
            return self._resumed.rank(entry.ticket)
        assert self._fresh is not None
        return len(self._resumed) + self._fresh.position(entry)

    def at(self, position: int) -> WaitingEntry:
        """The entry at ``position`` of queue order (an int from 0 to ``len - 1``: a
        ``TypeError`` or an ``IndexError`` otherwise)."""
        _check_position(position, self._size, "index")
        resumed = len(self._resumed)
        if position < resumed:
            return as_entry(self._resumed.at(position))
        assert self._fresh is not None
        return as_entry(self._fresh.at(position - resumed))

    def index_for(self, policy: QueuePolicy) -> Index:
        """The fresh (non-resumed) entries held for ``policy``'s selection: this
        version's own index when it was made for ``policy``; otherwise these
        entries in queue order, every key evaluated at each selection (O(n log n)
        to make, O(n) to select from). Selection (:mod:`policy.waiting.select`)
        reads it."""
        fresh = self._fresh
        if fresh is not None and self._held_for(policy):
            return fresh
        # another policy's view of these very entries: in queue order, every key
        # evaluated (by name where the entries are laid out for another policy)
        entries = list(self._fresh_entries())
        line = EMPTY_LINE.joined_all([entry[TICKET] for entry in entries], entries)
        return InOrder(plan_of(policy), line)

    # --- selection, computed (policy.waiting.select wraps these in its records) ------

    def selected(self, policy: QueuePolicy, moment: Moment) -> Chosen | None:
        """The entry ``select_waiting`` selects at ``moment`` and its key values
        (``()`` when no key is read), or None for an empty queue: a resumed front
        entry, else the front under a policy without keys, else the smallest key
        list by the policy's fast path (:mod:`policy.waiting.fast`).

        >>> from policy.waiting.policies import fifo
        >>> queue = WaitingQueue().append(fifo(), "a", {}, serial=0, now=0.0).unwrap()
        >>> queue.selected(fifo(), Moment(0.0))[0].identity
        'a'
        >>> WaitingQueue().selected(fifo(), Moment(0.0)) is None
        True
        """
        if self._resumed:
            return as_entry(self._resumed.first()), ()
        fresh = self._fresh
        if fresh is None or not len(fresh):
            return None
        if not policy.keys:
            return as_entry(fresh.first()), ()
        row, keys = self.index_for(policy).selected(moment.now, moment.budget_left)
        return as_entry(row), keys

    def dispatched(self, policy: QueuePolicy, moment: Moment) -> Iterator[Chosen]:
        """Every entry with its key values, lazily, in the order repeated selections at
        ``moment`` would take them if each left: the resumed prefix, then by the
        policy's fast path (all of it in queue order under a policy without keys)."""
        if not policy.keys:
            return zip(self, repeat(()))  # the pairs made in C
        fresh = map(_chosen, self.index_for(policy).dispatched(moment.now, moment.budget_left))
        if not self._resumed:
            return fresh
        return chain(zip(map(as_entry, self._resumed), repeat(())), fresh)

    def dispatched_at(self, policy: QueuePolicy, moment: Moment, position: int) -> WaitingEntry:
        """The entry at ``position`` of :meth:`dispatched`'s order, without walking the
        order before it where the path allows. ``position`` is an int from 0 to
        ``len - 1`` (a ``TypeError`` or an ``IndexError`` otherwise, on every path:
        past the end, a path's own walk would just stop)."""
        _check_position(position, self._size, "position")
        resumed = len(self._resumed)
        if not policy.keys or position < resumed:
            return self.at(position)
        index = self.index_for(policy)
        return as_entry(index.dispatched_at(position - resumed, moment.now, moment.budget_left))

    def _fresh_entries(self) -> Iterator[Row]:
        return iter(()) if self._fresh is None else self._fresh.in_queue_order()

    # --- joining --------------------------------------------------------------------

    def append(
        self,
        policy: QueuePolicy,
        identity: RequestId,
        attributes: Mapping[str, AttributeValue],
        *,
        serial: int,
        now: float,
        ever_fits: Callable[[WaitingEntry], bool] | None = None,
        carried: object = None,
    ) -> Result[WaitingQueue, QueueError]:
        """This queue with a new request at the back, queued at ``now``.

        Refused: an identity already waiting (or one that
        :func:`~policy.identity.is_request_id` refuses: unhashable, or not equal
        to itself, as a float NaN is), an attribute, ``serial`` or ``now`` that
        is not a number or boolean, an attribute name that is not text, a
        missing attribute the keys read, and (when the host gives
        ``ever_fits``) a request that could never fit even in an empty pool,
        since it would block the queue for ever. A ``policy`` that is not a
        :class:`QueuePolicy` or an ``ever_fits`` that is not callable is refused
        too: like every function that returns a ``Result``, this never raises
        for a bad argument.

        ``carried`` is kept in the entry as it is (:attr:`WaitingEntry.carried`,
        never read): a host's request object, so that nothing else maps
        identities to requests. It leaves with the entry.

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
        made = self._entry(policy, identity, attributes, serial, now, ever_fits, carried, False)
        if isinstance(made, QueueError):
            return Failure(made)
        queue = self._bound(policy)
        fresh = queue._fresh
        assert fresh is not None
        ids, stamp = queue._claimed()
        ids.entries[made[IDENTITY]] = made
        return Success(
            queue._version(
                queue._resumed,
                fresh.joined(made),
                ids,
                queue._handed_on(ids, stamp),
                queue._size + 1,
                queue._front,
                made[TICKET] + 1,
            )
        )

    def requeue_preempted(
        self,
        policy: QueuePolicy,
        identity: RequestId,
        attributes: Mapping[str, AttributeValue],
        *,
        serial: int,
        now: float,
        ever_fits: Callable[[WaitingEntry], bool] | None = None,
        carried: object = None,
    ) -> Result[WaitingQueue, QueueError]:
        """This queue with a preempted request at the front, resumed, queued afresh at ``now``.

        Refused for the same reasons as :meth:`append`, ``ever_fits`` included.

        >>> from policy.waiting.policies import fifo
        >>> queue = WaitingQueue().append(fifo(), "a", {}, serial=0, now=0.0).unwrap()
        >>> queue = queue.requeue_preempted(fifo(), "b", {}, serial=1, now=2.0).unwrap()
        >>> [(e.identity, e.resumed, e.enqueued_at) for e in queue]
        [('b', True, 2.0), ('a', False, 0.0)]
        """
        made = self._entry(policy, identity, attributes, serial, now, ever_fits, carried, True)
        if isinstance(made, QueueError):
            return Failure(made)
        queue = self._bound(policy)
        ids, stamp = queue._claimed()
        ids.entries[made[IDENTITY]] = made
        return Success(
            queue._version(
                queue._resumed.joined(made[TICKET], made),
                queue._fresh,
                ids,
                queue._handed_on(ids, stamp),
                queue._size + 1,
                made[TICKET] - 1,
                queue._back,
            )
        )

    def extend(
        self,
        policy: QueuePolicy,
        requests: Iterable[
            tuple[RequestId, Mapping[str, AttributeValue], int, float]
            | tuple[RequestId, Mapping[str, AttributeValue], int, float, object]
        ],
        *,
        ever_fits: Callable[[WaitingEntry], bool] | None = None,
    ) -> Result[WaitingQueue, QueueError]:
        """This queue with every request of ``requests``, each an ``(identity,
        attributes, serial, now)`` or ``(identity, attributes, serial, now,
        carried)``, appended in order: the queue one :meth:`append` per request
        gives, built in one pass. All or nothing: the first request refused, for
        any reason :meth:`append` refuses one (an identity earlier in the batch
        included), or an item that is not such a tuple, is the result.

        >>> from policy.waiting.policies import fifo
        >>> queue = WaitingQueue().extend(fifo(), [("a", {}, 0, 0.0), ("b", {}, 1, 0.5)])
        >>> [entry.identity for entry in queue.unwrap()]
        ['a', 'b']
        >>> str(WaitingQueue().extend(fifo(), [("a", {}, 0, 0.0), ("a", {}, 1, 0.0)]).failure())
        "request 'a': is already waiting"
        """
        given: object = requests
        if not isinstance(given, Iterable):
            return Failure(QueueError(cast(RequestId, given), _NOT_REQUESTS))
        rules: object = policy
        if not isinstance(rules, QueuePolicy):
            queue, plan, usual = self, None, False  # each request is refused by _entry
        else:
            queue = self._bound(policy)
            plan = queue._plan_for(policy)
            # the usual request takes no check beyond its exact types (_plain_values)
            usual = type(policy) is QueuePolicy and ever_fits is None
        order = () if plan is None else plan.names
        keyed = plan is not None and policy.timing == "enqueue" and bool(policy.keys)
        entries: list[Row] = []
        ticket = queue._back
        ids, stamp = queue._claimed()
        waiting = ids.entries  # the batch joins it at the end, refusing duplicates then
        refusal: QueueError | None = None
        for request in requests:
            if type(request) is tuple and len(request) == 4:
                identity, attributes, serial, now = request
                carried = None
            elif type(request) is tuple and len(request) == 5:
                identity, attributes, serial, now, carried = request
            else:
                refusal = QueueError(cast(RequestId, request), _NOT_A_REQUEST)
                break
            values: tuple[float | bool, ...] | None
            if not usual:
                values = None
            elif not order and type(attributes) is dict and not attributes:
                values = ()  # FIFO's usual request, without a call
            else:
                values = _plain_values(order, attributes)
            if (
                values is not None
                and (type(identity) is str or type(identity) is int)
                and type(serial) is int
                and type(now) is float
            ):
                assert plan is not None
                keys = plan.keys(values, serial, now, 0.0, NO_BUDGETS) if keyed else None
                entries.append((identity, order, values, serial, now, False, keys, ticket, carried))
            else:
                made = queue._entry(
                    policy, identity, attributes, serial, now, ever_fits, carried, False,
                    ticket=ticket, waiting=waiting,
                )  # fmt: skip
                if isinstance(made, QueueError):
                    refusal = made
                    if is_request_id(identity) and identity in {e[IDENTITY] for e in entries}:
                        # an append would have found it waiting (its first check after the id)
                        refusal = QueueError(identity, _ALREADY_WAITING)
                    break
                entries.append(made)
            ticket += 1
        clash = ids.joined(entries)
        if clash >= 0:  # the first refused: a duplicate comes before a refusal that broke off
            refusal = QueueError(entries[clash][IDENTITY], _ALREADY_WAITING)
        elif refusal is not None:
            ids.dropped(entries)  # the batch joined the index: undone
        if refusal is not None or not entries:
            queue._given_back(ids, stamp)
            return Success(self) if refusal is None else Failure(refusal)
        fresh = queue._fresh
        assert fresh is not None
        return Success(
            queue._version(
                queue._resumed,
                fresh.joined_all(entries),
                ids,
                queue._handed_on(ids, stamp),
                queue._size + len(entries),
                queue._front,
                entries[-1][TICKET] + 1,
            )
        )

    def _entry(  # noqa: PLR0917 - a request's parts, as append takes them
        self,
        policy: QueuePolicy,
        identity: RequestId,
        attributes: Mapping[str, AttributeValue],
        serial: int,
        now: float,
        ever_fits: Callable[[WaitingEntry], bool] | None,
        carried: object,
        resumed: bool,
        *,
        ticket: int | None = None,
        waiting: Container[RequestId] | None = None,
    ) -> Row | QueueError:
        """The row of a request joining this queue, laid out for ``policy``, or
        why it is refused (every way in). Every argument is checked here, first:
        a ``Result`` never raises. ``waiting`` (extend's, being joined) says
        which identities wait already (this queue's by default)."""
        # exact types first: each check runs for every request
        rules: object = policy
        if type(rules) is not QueuePolicy and not isinstance(rules, QueuePolicy):
            return QueueError(
                identity,
                "the policy must be a QueuePolicy (from make_policy or load_policy),"
                f" not {shown(rules)}",
            )
        if type(identity) is not str and type(identity) is not int and not is_request_id(identity):
            return QueueError(identity, _NOT_AN_IDENTITY)
        if identity in waiting if waiting is not None else self._waiting(identity) is not None:
            return QueueError(identity, _ALREADY_WAITING)
        given = cast(object, attributes)
        if type(given) is not dict and not isinstance(given, Mapping):
            return QueueError(identity, f"attributes must map names to values, not {shown(given)}")
        named = cast(Mapping[object, object], attributes)
        for name, value in named.items():
            if type(name) is not str and not isinstance(name, str):
                return QueueError(identity, f"an attribute name must be text, not {shown(name)}")
            kind = type(value)
            if kind is not float and kind is not int and kind is not bool and not is_number(value):
                return QueueError(
                    identity, f"attribute {shown(name)} must be a number or a boolean"
                )
        if type(serial) is not int and not is_number(serial):
            return QueueError(identity, f"serial must be a number, not {shown(serial)}")
        if type(now) is not float and not is_number(now):
            return QueueError(identity, f"now must be a number, not {shown(now)}")
        test: object = ever_fits
        if test is not None and not callable(test):
            return QueueError(
                identity, f"ever_fits must be a function or None, not {shown(ever_fits)}"
            )
        plan = plan_of(policy) if self._fresh is None else self._plan_for(policy)
        for name in plan.names:  # the attributes the keys read
            if name not in attributes:
                return QueueError(
                    identity,
                    f"lacks attribute {quote(name)}, which the queue policy's keys read",
                )
        names, values = _layout(plan, attributes)
        at = now if type(now) is float else as_float(now)
        if ticket is None:
            ticket = self._front if resumed else self._back
        keys = None
        if policy.timing == "enqueue" and policy.keys:
            keys = plan.keys(values, serial, at, 0.0, NO_BUDGETS)
        row: Row = (identity, names, values, serial, at, resumed, keys, ticket, carried)
        if ever_fits is not None and not ever_fits(as_entry(row)):
            return QueueError(identity, _NEVER_FITS)
        return row

    def _plan_for(self, policy: QueuePolicy) -> KeyPlan:
        fresh = self._fresh
        if fresh is not None and self._policy is policy:
            return fresh.plan
        return plan_of(policy)

    def _bound(self, policy: QueuePolicy) -> WaitingQueue:
        """This queue with its entries held for ``policy`` (itself when they are)."""
        fresh = self._fresh
        if fresh is not None and self._held_for(policy):
            if self._policy is policy:
                return self
            ids, stamp = self._claimed()
            rebound = self._version(
                self._resumed, fresh, ids, self._handed_on(ids, stamp), self._size,
                self._front, self._back,
            )  # fmt: skip
            rebound._policy = policy  # an equal policy: the same index, found by `is` from now on
            return rebound
        plan = plan_of(policy)
        # tickets are kept; each entry is laid out for the policy's compiled keys
        resumed = [_laid_out(plan, entry) for entry in self._resumed]
        fresh_entries = [_laid_out(plan, entry) for entry in self._fresh_entries()]
        ids = Identities(chain(resumed, fresh_entries))
        rebuilt = self._version(
            EMPTY_LINE.joined_all([entry[TICKET] for entry in resumed], resumed),
            index_for(policy).joined_all(fresh_entries),
            ids,
            ids.handed_on(0),
            self._size,
            self._front,
            self._back,
        )
        rebuilt._policy = policy
        return rebuilt

    # --- leaving --------------------------------------------------------------------

    def without(self, entry: WaitingEntry) -> WaitingQueue:
        """This queue without ``entry``: an entry of this very queue (from its
        iteration, :meth:`entry_of` or a selection on it). O(1) at the front,
        O(log n) elsewhere; the others keep their order.

        An entry that does not wait here is a ``KeyError``: one of another queue, or
        of another version where its request waited otherwise (another ticket,
        serial, enqueue time, attributes or carried object); an entry read again,
        equal in all of these, is the one that waits (the queue makes its records
        as they are read). One that is not a :class:`WaitingEntry` is a
        ``TypeError``.

        >>> from policy.waiting.policies import fifo
        >>> queue = WaitingQueue().append(fifo(), "a", {}, serial=0, now=0.0).unwrap()
        >>> len(queue.without(queue.entry_of("a")))
        0
        """
        return self._without_row(self._check_waiting(entry))

    def _without_row(self, entry: Row) -> WaitingQueue:
        """This queue without the waiting ``entry`` (a row of it)."""
        resumed, fresh = self._resumed, self._fresh
        if entry[RESUMED]:
            resumed = resumed.without(entry[TICKET])
        else:
            assert fresh is not None
            fresh = fresh.without(entry)
        ids, stamp = self._claimed()
        ids.entries.pop(entry[IDENTITY])
        return self._version(
            resumed, fresh, ids, self._handed_on(ids, stamp), self._size - 1,
            self._front, self._back,
        )  # fmt: skip

    def without_each(self, entries: Iterable[WaitingEntry]) -> WaitingQueue:
        """This queue without every entry of ``entries`` (entries of this very queue,
        each once: a ``KeyError`` otherwise, a ``TypeError`` for one that is not a
        :class:`WaitingEntry`), the others in order: the queue one :meth:`without`
        per entry gives. Entries that leave from the front of their order (the
        admissions of one moment) leave at once.

        >>> from policy.waiting.policies import static_priority
        >>> queue = WaitingQueue().extend(
        ...     static_priority(), [(name, {"priority": 1}, 0, 0.0) for name in "abc"]
        ... ).unwrap()
        >>> [entry.identity for entry in queue.without_each(list(queue)[:2])]
        ['c']
        """
        leaving = list(entries)
        resumed, fresh = self._resumed, self._fresh
        ids, stamp = self._claimed()
        stray = ids.left(leaving)
        if stray >= 0:
            self._given_back(ids, stamp)
            self._check_waiting(leaving[stray])  # not an entry, or not one of this queue
            raise KeyError(leaving[stray].ticket)  # an entry given twice
        fresh_leaving = []
        for entry in leaving:
            if entry.resumed:
                resumed = resumed.without(entry.ticket)
            else:
                fresh_leaving.append(entry)
        if fresh_leaving:
            assert fresh is not None
            fresh = fresh.without_all(fresh_leaving)
        return self._version(
            resumed, fresh, ids, self._handed_on(ids, stamp), self._size - len(leaving),
            self._front, self._back,
        )  # fmt: skip

    def without_dispatched(self, policy: QueuePolicy, moment: Moment, count: int) -> WaitingQueue:
        """This queue without the first ``count`` entries of :meth:`dispatched`'s
        order at ``moment`` (all of them when it holds fewer): what
        :meth:`without_each` of those entries gives. Where that order reads no
        moment (the ``fifo`` and ``static`` paths: the admissions of one step)
        they leave at once, none read as a record, where the queue is held for
        ``policy`` (or an equal one) and up to a class that holds arrivals out
        of key order; otherwise one by one. ``policy`` must be a
        :class:`QueuePolicy` and ``moment`` a :class:`Moment` (a
        ``TypeError``), ``count`` an int of at least 0 (a ``TypeError`` or a
        ``ValueError``).

        >>> from policy.waiting.policies import fifo
        >>> queue = WaitingQueue().extend(fifo(), [(name, {}, 0, 0.0) for name in "abc"]).unwrap()
        >>> [entry.identity for entry in queue.without_dispatched(fifo(), Moment(0.0), 2)]
        ['c']
        """
        if not isinstance(policy, QueuePolicy):
            raise TypeError(f"policy must be a QueuePolicy, not {type(policy).__name__}")
        if not isinstance(moment, Moment):
            raise TypeError(f"moment must be a Moment, not {type(moment).__name__}")
        if type(count) is not int and (isinstance(count, bool) or not isinstance(count, int)):
            raise TypeError(f"count must be an int, not {type(count).__name__}")
        if count < 0:
            raise ValueError(f"count must be at least 0, not {shown(count)}")
        count = min(count, self._size)
        if not count:
            return self
        resumed, fresh = self._resumed, self._fresh
        leading = min(count, len(resumed))  # the resumed prefix leaves first
        rows: list[Row] = []
        if count > leading:
            made = None
            if fresh is not None and self._held_for(policy):
                made = fresh.without_leading(count - leading)
            if made is None:  # the order reads the moment: entry by entry
                leaving = islice(self.dispatched(policy, moment), count)
                return self.without_each([entry for entry, _ in leaving])
            fresh, rows = made
        if leading:
            rows = [*islice(resumed, leading), *rows]
            resumed = resumed.without_first(leading)
        ids, stamp = self._claimed()
        ids.dropped(rows)
        return self._version(
            resumed, fresh, ids, self._handed_on(ids, stamp), self._size - count,
            self._front, self._back,
        )  # fmt: skip

    def without_index(self, index: int) -> WaitingQueue:
        """This queue without the entry at ``index`` (which must exist), others in order.

        ``index`` must be an int (a ``TypeError``) from 0 to ``len(queue) - 1``
        (an ``IndexError``), as a selection's ``index`` is.
        """
        return self.without(self.at(index))

    def remove(self, identity: RequestId) -> Result[WaitingQueue, QueueError]:
        """This queue without the request ``identity`` (admitted or cancelled).

        >>> str(WaitingQueue().remove(3).failure())
        'request 3: is not waiting'
        """
        if not is_request_id(identity):
            return Failure(QueueError(identity, _NOT_AN_IDENTITY))
        row = self._waiting(identity)
        if row is None:
            return Failure(QueueError(identity, "is not waiting"))
        return Success(self._without_row(row))

    def _check_waiting(self, entry: WaitingEntry) -> Row:
        """``entry``'s row in this queue; a ``TypeError`` for what is not an entry, a
        ``KeyError`` (its ticket) for an entry that does not wait in this very queue
        (:func:`~policy.waiting.entry.same_entry`)."""
        if type(entry) is not WaitingEntry:
            raise TypeError(f"entry must be a WaitingEntry, not {type(entry).__name__}")
        row = self._waiting(entry.identity)
        if row is None or not same_entry(row, entry):
            raise KeyError(entry.ticket)
        return row


def _check_position(position: object, size: int, noun: str) -> None:
    """A ``TypeError`` unless ``position`` is an int (a subclass of int counts, bool
    does not), an ``IndexError`` unless it is from 0 to ``size - 1``; each names
    it as ``noun``."""
    if type(position) is not int and (isinstance(position, bool) or not isinstance(position, int)):
        raise TypeError(f"{noun} must be an int, not {type(position).__name__}")
    if not 0 <= position < size:
        # shown: str() of an IndexError of a 5001-digit int raises ValueError
        raise IndexError(f"{noun} {shown(position)} of a queue of {size}")


def _plain_values(order: tuple[str, ...], attributes: object) -> tuple[AttributeValue, ...] | None:
    """The values :func:`_layout` lays out for ``attributes`` when they are a dict of
    exactly the names of ``order``, each exactly a ``float``, ``int`` or ``bool``
    (the usual request: nothing to check); None otherwise (then every check runs).

    >>> _plain_values(("arrival", "priority"), {"priority": 3, "arrival": 2.5})
    (2.5, 3.0)
    >>> _plain_values(("priority",), {"priority": "3"}) is None
    True
    """
    if type(attributes) is not dict or len(attributes) != len(order):
        return None
    values: list[AttributeValue] = []
    for name in order:
        value: Any = attributes.get(name)
        kind = type(value)
        if kind is float or kind is bool:
            values.append(value)
        elif kind is int and -_EXACT <= value <= _EXACT:
            values.append(stored(value))
        else:
            return None
    return tuple(values)


def _layout(
    plan: KeyPlan, attributes: Mapping[str, AttributeValue]
) -> tuple[tuple[str, ...], tuple[AttributeValue, ...]]:
    """Names and values as the policy's compiled keys find them: the attributes the
    keys read first, in the plan's order (the names tuple shared with the plan
    when there are no others), then any others as given. A name the keys read
    and ``attributes`` lack is :data:`~policy.waiting.entry.ABSENT` (NaN to the
    keys, as the plain definition reads a missing name)."""
    order = plan.names
    if not attributes and not order:  # FIFO's usual request: nothing to lay out
        return (), ()
    values = [stored(attributes.get(name, ABSENT)) for name in order]
    if len(attributes) == len(order) and all(name in attributes for name in order):
        return order, tuple(values)
    extra = tuple(name for name in attributes if name not in order)
    return order + extra, (*values, *(stored(attributes[name]) for name in extra))


def _laid_out(plan: KeyPlan, entry: Row) -> Row:
    """The row ``entry`` with its attributes laid out for ``plan`` (itself when they are)."""
    if plan.laid_out(entry):
        return entry
    names, values = _layout(plan, AttributeView(entry[NAMES], entry[VALUES]))
    identity, _, _, serial, at, resumed, keys, ticket, carried = entry
    return (identity, names, values, serial, at, resumed, keys, ticket, carried)


def _chosen(chosen: ChosenRow) -> Chosen:
    """A row chosen by an index, and its key values, as the queue gives them."""
    return as_entry(chosen[0]), chosen[1]


def _same_policy(a: QueuePolicy, b: QueuePolicy) -> bool:
    """Whether an index made for ``a`` serves ``b``: the same policy, or an equal
    one whose constants also agree in the sign of zero (``pmap`` equality takes
    -0.0 for 0.0, and ``1 / k`` tells them apart; the caller tried ``is``)."""
    if a != b:
        return False
    return all(
        math.copysign(1.0, a.constants[name]) == math.copysign(1.0, value)
        for name, value in b.constants.items()
    )
