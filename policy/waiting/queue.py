"""The immutable waiting queue.

Entries stay in enqueue order. New requests go to the back; a preempted request
goes to the front, marked resumed, so resumed entries form a prefix with the
most recently preempted first. Every operation returns a new queue.

Theory of operation. Each entry gets a *ticket* when it is queued: appends
count up from 0, requeues count down from -1, so ascending tickets are queue
order. A queue version holds persistent indexes, all sharing structure with
the version they came from:

- ``_order``: entries in ticket order (a :class:`~policy.waiting.line.Line`,
  two persistent C vectors with a moving head): appends, requeues, the front
  and admissions at the front in O(1), removal anywhere in O(log n), position
  (rank) in O(log n). It holds every entry, except when the index's own lines
  hold the non-resumed ones (``PathIndex.holds_order``: the ``static`` path
  by class, the ``lanes`` path): then it holds the resumed entries only, the
  queue's order is the merge of all these lines by ticket, and an admission
  from the middle of the queue (a priority class's head) leaves one line, at
  its front, instead of leaving a tombstone in a line of every entry;
- ``_size``: how many entries wait;
- ``_by_identity``: identity -> entry (an ``immutables.Map``, the hash array
  mapped trie behind the standard library's contextvars): duplicates and
  removal by identity without a scan. It is updated lazily: an entry that
  leaves stays in the map until the map holds more than twice the waiting
  entries, when it is rebuilt from the lines (amortised O(1): a rebuild costs
  about a third of deleting the same entries one by one from a large map); a
  lookup counts an entry as waiting only if its line holds that very object.
  A batch joining (``extend``) is checked for duplicates by the map's size
  after the update (only when it grew by less than the batch is each request
  looked up);
- ``_index``: what the policy's selection path needs, for the policy the queue
  was last used with, behind one interface (:mod:`policy.waiting.paths`):
  under ``static`` keys the entries per priority class in key order
  (:mod:`policy.waiting.path_static`); under ``lanes`` one line per class
  (:mod:`policy.waiting.path_lanes`); nothing under ``fifo`` and ``scan``,
  which the queue selects itself (the front; the compiled scan). Resumed
  entries are in no index: they are selected from the front, before any key.

An operation with a different policy first rebuilds the index for it (O(n log
n), once); selection with a policy the queue was not built with falls back to
the plain definition (:func:`~policy.waiting.select.select_reference`).

Entries (:mod:`policy.waiting.entry`) store attributes compactly: a tuple of
values whose names are shared with the policy (the attributes its keys read,
in its order, then any others), read through :attr:`WaitingEntry.attributes`.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from typing import Any, Final, cast

from immutables import Map
from returns.maybe import Maybe, Nothing, Some
from returns.result import Failure, Result, Success

from policy.identity import REQUEST_ID_RULE, RequestId, is_request_id
from policy.records import record_builder, shape_of, slot_setters, value_setter
from policy.text import printable, quote, record_repr
from policy.waiting.compiled import sort_key
from policy.waiting.entry import (
    AttributeValue,
    AttributeView,
    WaitingEntry,
    attribute_layout,
    entry_laid_out,
    exact_values,
    keys_at_enqueue,
    keys_at_enqueue_unchecked,
    new_entry,
)
from policy.waiting.line import Line
from policy.waiting.numbers import as_float, is_number, shown
from policy.waiting.paths import PathIndex, index_for
from policy.waiting.plan import NO_BUDGETS
from policy.waiting.queue_policy import QueuePolicy

__all__ = [
    "AttributeValue",
    "AttributeView",
    "QueueError",
    "WaitingEntry",
    "WaitingQueue",
    "keys_at_enqueue",
    "keys_at_enqueue_unchecked",
]

_EMPTY_LINE: Final[Line[Any]] = Line.empty()

#: ``Success``'s value slot (policy.records.value_setter: checked at import).
_SET_SUCCESS: Final = value_setter(Success)

_NO_IDENTITIES: Final[Map[Any, Any]] = Map()
#: Positions below this are found by walking the merged lines (quicker than bisection there).
_WALKED_UP_TO: Final = 64
_ticket_of: Final = attrgetter("ticket")
#: The layout of a request without attributes (no names, values or extras).
_NOTHING_LAID_OUT: Final[tuple[tuple[str, ...], tuple[Any, ...], tuple[Any, ...]]] = ((), (), ())
#: The identity map is swept when it holds more than twice the waiting entries plus this.
_SWEEP_SLACK: Final = 64


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
#: The fifth part, ``carried``, may be left out (None).
_REQUEST_PARTS: Final = ("identity", "attributes", "serial", "now")
_PARTS_TEXT: Final = f"{', '.join(_REQUEST_PARTS)}[, carried]"
_NOT_A_REQUEST: Final = f"is not a request: a tuple ({_PARTS_TEXT})"
_NOT_REQUESTS: Final = f"is not an iterable of requests, tuples ({_PARTS_TEXT})"

#: The refusal of an identity that is_request_id refuses (append, requeue, remove).
_NOT_AN_IDENTITY: Final = f"an identity must be {REQUEST_ID_RULE}"


@dataclass(frozen=True, slots=True, init=False, eq=False)
class WaitingQueue:
    """Waiting entries in enqueue order (resumed entries first).

    ``append``, ``requeue_preempted``, ``remove`` and each step of iteration are
    O(log n), ``len`` O(1). ``index_of`` and ``without_index`` are O(log n) where
    one line holds every entry (``fifo``, ``scan``, the ``static`` B+tree), and
    over the k lines of an index that holds the order O(k log n) and O(k log n
    log t) (t the span of the tickets; the first 64 positions by walking).

    >>> WaitingQueue() == WaitingQueue(), len(WaitingQueue())
    (True, 0)
    """

    _order: Line[WaitingEntry]
    _by_identity: Map[RequestId, WaitingEntry]
    _front: int
    _back: int
    _index: PathIndex | None
    _size: int

    def __init__(self) -> None:
        _set_order(self, _EMPTY_LINE)
        _set_identities(self, _NO_IDENTITIES)
        _set_front(self, -1)
        _set_back(self, 0)
        _set_index(self, None)
        _set_size(self, 0)

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def __iter__(self) -> Iterator[WaitingEntry]:
        lines = self._lines()
        if len(lines) == 1:
            return iter(lines[0])
        return heapq.merge(*lines, key=_ticket_of)  # lazily: a reader may stop early

    def _in_order(self) -> list[WaitingEntry]:
        """Every entry in queue order, at once (the lines' runs sorted together in C,
        quicker than the lazy merge when every entry is read)."""
        lines = self._lines()
        if len(lines) == 1:
            return list(lines[0])
        return sorted(chain.from_iterable(lines), key=_ticket_of)

    def _lines(self) -> tuple[Line[WaitingEntry], ...]:
        """The lines that hold every entry, none empty unless the queue is (then
        one empty line); the queue's order is their merge by ticket."""
        index = self._index
        if index is None or not index.holds_order:
            return (self._order,)
        held = index.lines()
        if not self._order:
            return held or (self._order,)
        return (self._order, *held)

    def _first(self) -> WaitingEntry:
        """The first entry (the queue must not be empty)."""
        lines = self._lines()
        first: WaitingEntry = lines[0].first()
        for line in lines[1:]:
            head: WaitingEntry = line.first()
            if head.ticket < first.ticket:
                first = head
        return first

    def _last_fresh(self) -> WaitingEntry | None:
        """The last non-resumed entry, or None if there is none."""
        index = self._index
        last: WaitingEntry | None = None
        if index is not None and index.holds_order:
            for line in index.lines():
                tail: WaitingEntry = line.last()
                if last is None or tail.ticket > last.ticket:
                    last = tail
            return last
        order = self._order
        last = order.last() if order else None
        return None if last is None or last.resumed else last

    def _holds(self, entry: WaitingEntry) -> bool:
        """Whether this very entry waits in this queue."""
        index = self._index
        if entry.resumed or index is None or not index.holds_order:
            return self._order.holds(entry)
        return index.holds(entry)

    def _at(self, position: int) -> WaitingEntry:
        """The entry at ``position`` of the queue's order (0 to ``len - 1``; an
        ``IndexError`` otherwise): the line's own ``at`` when one line holds
        every entry; else the merge walked near the front, and beyond, the
        entry's ticket found by bisection over the tickets, counting the
        entries below a ticket in every line (O(k log n log t) for k lines and
        tickets spanning t)."""
        if not 0 <= position < self._size:
            raise IndexError(position)
        lines = self._lines()
        if len(lines) == 1:
            return lines[0].at(position)
        if position < _WALKED_UP_TO:
            for at, entry in enumerate(self):
                if at == position:
                    return entry
        # the largest ticket with exactly ``position`` entries below it is the entry's
        low: int = min(line.first().ticket for line in lines)
        high: int = max(line.last().ticket for line in lines)
        while low < high:
            middle = (low + high + 1) // 2
            if sum(line.count_before(middle) for line in lines) <= position:
                low = middle
            else:
                high = middle - 1
        for line in lines:
            below = line.count_before(low)
            if below < len(line):
                found: WaitingEntry = line.at(below)
                if found.ticket == low:
                    return found
        raise IndexError(position)  # pragma: no cover - the lines hold every position

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WaitingQueue):
            return NotImplemented
        if len(self) != len(other):
            return False
        return all(a == b for a, b in zip(self._in_order(), other._in_order(), strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self._in_order()))

    def __repr__(self) -> str:
        return f"WaitingQueue({self._in_order()!r})"

    @property
    def entries(self) -> tuple[WaitingEntry, ...]:
        """Every entry in queue order (a snapshot; O(n))."""
        return tuple(self._in_order())

    def index_of(self, identity: RequestId) -> Maybe[int]:
        """Where the request ``identity`` waits, if it does.

        >>> WaitingQueue().index_of("a")
        <Nothing>
        """
        entry = self._get(identity)
        if entry is None:
            return Nothing
        return Some(self._position_of(entry))

    def _position_of(self, entry: WaitingEntry) -> int:
        """The position of ``entry``, which must wait in this queue."""
        lines = self._lines()
        if len(lines) == 1:
            return lines[0].rank(entry)
        ticket = entry.ticket
        return sum(line.count_before(ticket) for line in lines)

    def _bound(self, policy: QueuePolicy) -> WaitingQueue:
        """This queue with its index built for ``policy`` (itself when it already is)."""
        index = self._index
        if index is not None and _same_policy(index.policy, policy):
            return self
        rebuilt = _queue_of(
            _EMPTY_LINE,
            _NO_IDENTITIES,
            self._front,
            self._back,
            index_for(policy),
            0,
        )
        for entry in self._in_order():  # tickets are kept; the layout follows the policy
            rebuilt = rebuilt._with(entry_laid_out(policy, entry), keep_counters=True)
        return rebuilt

    @staticmethod
    def _of_entries(
        policy: QueuePolicy, entries: Iterator[WaitingEntry] | list[WaitingEntry]
    ) -> WaitingQueue:
        """A queue of exactly these entries in this order (for tests of wrong kernels)."""
        queue = _queue_of(_EMPTY_LINE, _NO_IDENTITIES, -1, 0, index_for(policy), 0)
        for ticket, entry in enumerate(entries):
            laid = entry_laid_out(policy, entry)
            queue = queue._with(
                new_entry(
                    laid.identity,
                    laid.names,
                    laid.values,
                    laid.extras,
                    laid.serial,
                    laid.enqueued_at,
                    laid.resumed,
                    laid.enqueue_keys,
                    ticket,
                    laid.carried,
                ),
                keep_counters=True,
            )
        return _queue_of(
            queue._order,
            queue._by_identity,
            -1,
            len(queue),
            queue._index,
            queue._size,
        )

    def _with(self, entry: WaitingEntry, *, keep_counters: bool = False) -> WaitingQueue:
        """With ``entry`` added; its ticket is the next front one (resumed) or back one,
        unless ``keep_counters`` (a rebuild keeps every ticket)."""
        index = self._index
        assert index is not None
        front, back = self._front, self._back
        order = self._order
        if entry.resumed:
            if not keep_counters:
                front = entry.ticket - 1
        else:
            if not keep_counters:
                back = entry.ticket + 1
            if index.tracks:
                grown = index.added(entry, self._last_fresh() if index.needs_back else None)
                if index.holds_order and not grown.holds_order:
                    order = self._one_line()  # the index keeps them in key order only now
                index = grown
        if entry.resumed or not index.holds_order:
            # the ticket says the end: requeues count down from -1 (a rebuild adds
            # every entry in ticket order, at the back)
            order = (
                order.joined_front(entry)
                if entry.ticket < 0 and not keep_counters
                else order.joined_back(entry)
            )
        return _queue_of(
            order,
            self._by_identity.set(entry.identity, entry),
            front,
            back,
            index,
            self._size + 1,
        )

    def _one_line(self) -> Line[WaitingEntry]:
        """Every entry in one line, in ticket order (O(n): when the index stops
        holding the order)."""
        return _EMPTY_LINE.joined_back_all(self._in_order())

    def without(self, entry: WaitingEntry) -> WaitingQueue:
        """This queue without ``entry``: an entry of this very queue (from its
        iteration, :meth:`entry_of` or a selection on it). O(1) at the front,
        O(log n) elsewhere; the others keep their order.

        An entry that does not wait here (another object, even an equal one) is a
        ``KeyError`` and one that is not a :class:`WaitingEntry` a ``TypeError``.

        >>> from policy.waiting.policies import fifo
        >>> queue = WaitingQueue().append(fifo(), "a", {}, serial=0, now=0.0).unwrap()
        >>> len(queue.without(queue.entry_of("a")))
        0
        """
        if type(entry) is not WaitingEntry:
            raise TypeError(f"entry must be a WaitingEntry, not {type(entry).__name__}")
        return self._without(entry)

    def without_first(self, count: int) -> WaitingQueue:
        """This queue without its first ``count`` entries of queue order (an ``int``
        from 0 to ``len``: a ``TypeError``, an ``IndexError`` otherwise), the
        others in order: the queue that ``count`` admissions under a policy
        without keys (each takes the front) leave, in one step. O(1) where one
        line holds every entry and no index tracks them (the ``fifo`` and
        ``scan`` paths) and none has left from the middle; one :meth:`without`
        per entry otherwise.

        >>> from policy.waiting.policies import fifo
        >>> queue = WaitingQueue().extend(fifo(), [("a", {}, 0, 0.0), ("b", {}, 1, 0.0)])
        >>> [entry.identity for entry in queue.unwrap().without_first(1)]
        ['b']
        """
        if type(count) is not int and (isinstance(count, bool) or not isinstance(count, int)):
            raise TypeError(f"count must be an int, not {type(count).__name__}")
        size = self._size
        if not 0 <= count <= size:
            raise IndexError(count)
        if not count:
            return self
        index = self._index
        if index is not None and (index.tracks or index.holds_order):
            queue = self
            for _ in range(count):
                queue = queue._without(queue._first())
            return queue
        order = self._order.without_first(count)
        size -= count
        if not size:
            return _queue_of(order, _NO_IDENTITIES, self._front, self._back, index, 0)
        identities = self._by_identity  # the entries stay in it until a sweep
        if len(identities) > 2 * size + _SWEEP_SLACK:
            identities = Map((waiting.identity, waiting) for waiting in order)
        return _queue_of(order, identities, self._front, self._back, index, size)

    def without_each(self, entries: Iterable[WaitingEntry]) -> WaitingQueue:
        """This queue without every entry of ``entries`` (entries of this very queue,
        each once: a ``KeyError`` otherwise, a ``TypeError`` for one that is not a
        :class:`WaitingEntry`), the others in order: the queue one :meth:`without`
        per entry gives. Where the index holds the order (the ``static`` path by
        class), the entries leaving each class line at its front (the admissions
        of one moment) are cut from it at once, and the class map is updated once
        per class.

        >>> from policy.waiting.policies import static_priority
        >>> queue = WaitingQueue().extend(
        ...     static_priority(), [(name, {"priority": 1}, 0, 0.0) for name in "abc"]
        ... ).unwrap()
        >>> [entry.identity for entry in queue.without_each(list(queue)[:2])]
        ['c']
        """
        leaving = list(entries)
        for entry in leaving:
            if type(entry) is not WaitingEntry:
                raise TypeError(f"entry must be a WaitingEntry, not {type(entry).__name__}")
        index = self._index
        if index is None or not index.holds_order or len(leaving) < 2:
            queue = self
            for entry in leaving:
                queue = queue._without(entry)
            return queue
        order = self._order
        fresh: list[WaitingEntry] = []
        for entry in leaving:
            if entry.resumed:
                order = order.without(entry)  # a KeyError for an entry not in it
            elif self._by_identity.get(entry.identity) is not entry:
                raise KeyError(entry.ticket)  # not of this queue (as _without says)
            else:
                fresh.append(entry)
        index = index.dropped_all(fresh)
        size = self._size - len(leaving)
        if not size:
            return _queue_of(order, _NO_IDENTITIES, self._front, self._back, index, 0)
        identities = self._by_identity  # the entries stay in it until a sweep
        queue = _queue_of(order, identities, self._front, self._back, index, size)
        if len(identities) > 2 * size + _SWEEP_SLACK:
            identities = Map(
                (waiting.identity, waiting) for line in queue._lines() for waiting in line
            )
            queue = _queue_of(order, identities, self._front, self._back, index, size)
        return queue

    def entry_of(self, identity: RequestId) -> WaitingEntry | None:
        """The waiting entry of the request ``identity``, or None (O(1) expected).

        >>> WaitingQueue().entry_of("a") is None
        True
        """
        # Only a request id can be waiting, and only one is looked up: a colliding
        # hash makes the map call the value's __eq__, which may raise (plain str
        # and int ids always pass, without the call).
        if type(identity) is not str and type(identity) is not int and not is_request_id(identity):
            return None
        entry = self._by_identity.get(identity)
        if entry is None or not self._holds(entry):  # left, and not yet swept
            return None
        return entry

    #: The same function, by its internal name (one call fewer than a wrapper:
    #: a host's add asks it every time).
    _get = entry_of

    def _with_all(
        self, entries: list[WaitingEntry], identities: Map[RequestId, WaitingEntry]
    ) -> WaitingQueue:
        """With ``entries`` (new, not resumed, tickets from the next back one up) last;
        ``identities`` is this queue's identity map with them."""
        index = self._index
        assert index is not None
        order = self._order
        if index.tracks:
            grown = index.added_all(entries, self._last_fresh() if index.needs_back else None)
            if index.holds_order and not grown.holds_order:
                order = self._one_line()  # the index keeps them in key order only now
            index = grown
        return _queue_of(
            order if index.holds_order else order.joined_back_all(entries),
            identities,
            self._front,
            entries[-1].ticket + 1,
            index,
            self._size + len(entries),
        )

    def _without(self, entry: WaitingEntry) -> WaitingQueue:
        """Without ``entry``, which must wait in this queue (a ``KeyError`` otherwise,
        before anything is changed)."""
        index = self._index
        order = self._order
        if entry.resumed or index is None or not index.holds_order:
            order = order.without(entry)  # a KeyError for an entry not in it
        elif self._by_identity.get(entry.identity) is not entry:
            # not of this queue (maybe laid out for another policy, which the index
            # could not even read): a KeyError, as the line gives one
            raise KeyError(entry.ticket)
        if not entry.resumed and index is not None and index.tracks:
            index = index.dropped(entry)
        identities = self._by_identity  # the entry stays in it until a sweep
        size = self._size - 1
        if not size:
            return _queue_of(order, _NO_IDENTITIES, self._front, self._back, index, 0)
        if len(identities) > 2 * size + _SWEEP_SLACK:
            # line by line, in no particular order: a map needs none (and the
            # merge by ticket would cost more than the map)
            queue = _queue_of(order, identities, self._front, self._back, index, size)
            identities = Map(
                (waiting.identity, waiting) for line in queue._lines() for waiting in line
            )
        return _queue_of(order, identities, self._front, self._back, index, size)

    def _entry_for(  # noqa: PLR0917 - a request's parts, as append takes them, and its ticket
        self,
        policy: QueuePolicy,
        identity: RequestId,
        attributes: Mapping[str, AttributeValue],
        serial: int,
        now: float,
        resumed: bool,
        ever_fits: Callable[[WaitingEntry], bool] | None,
        ticket: int,
        carried: object = None,
    ) -> WaitingEntry | QueueError:
        """The entry of a request joining this queue with ``ticket``, or why the
        request is refused (append, requeue and extend).

        Every argument's type is checked here, first (a ``Result`` never raises)."""
        rules: object = policy  # typed, yet any object may come (a Result never raises)
        if type(rules) is not QueuePolicy and not isinstance(rules, QueuePolicy):
            return QueueError(
                identity,
                "the policy must be a QueuePolicy (from make_policy or load_policy),"
                f" not {shown(rules)}",
            )
        kind = type(identity)
        if kind is not str and kind is not int and not is_request_id(identity):
            return QueueError(identity, _NOT_AN_IDENTITY)
        if self._get(identity) is not None:
            return QueueError(identity, "is already waiting")
        given: object = attributes
        if type(given) is not dict and not isinstance(given, Mapping):
            return QueueError(identity, f"attributes must map names to values, not {shown(given)}")
        found: Mapping[Any, object] = attributes
        for name, value in found.items():
            # once per attribute: the cheapest test first
            if type(name) is not str and not isinstance(name, str):
                return QueueError(identity, f"an attribute name must be text, not {shown(name)}")
            if not isinstance(value, int | float):  # is_number, inline: once per attribute
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
        for name in policy.plan.attribute_order:  # the attributes the keys read
            if name not in attributes:  # a loop, not all(...): no generator per request
                missing = sorted(policy.attributes_read - attributes.keys())
                return QueueError(
                    identity,
                    f"lacks attribute {quote(missing[0])}, which the queue policy's keys read",
                )
        names, values, extras = attribute_layout(policy, attributes)
        at = now if type(now) is float else as_float(now)
        keys = None
        if policy.timing == "enqueue" and not policy.is_fifo:
            keys = policy.plan.keys(values, serial, at, 0.0, NO_BUDGETS)
        entry = new_entry(
            identity, names, values, extras, serial, at, resumed, keys, ticket, carried
        )
        if ever_fits is not None and not ever_fits(entry):
            return QueueError(
                identity,
                "could never fit, even in an empty pool; refused so that it cannot"
                " block the queue for ever",
            )
        return entry

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
        carried: object,
    ) -> Result[WaitingQueue, QueueError]:
        """This queue with the new entry, or why the request is refused (both ways in)."""
        ticket = self._front if resumed else self._back
        made = self._entry_for(
            policy, identity, attributes, serial, now, resumed, ever_fits, ticket, carried
        )
        if type(made) is QueueError:
            return Failure(made)
        assert type(made) is WaitingEntry
        index = self._index
        queue = self if index is not None and index.policy is policy else self._bound(policy)
        return _succeeded(queue._with(made))

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
        to itself, as a float NaN is), an attribute,
        ``serial`` or ``now`` that is not a number or boolean, an attribute
        name that is not text, a missing attribute the keys read, and (when the
        host gives ``ever_fits``) a request that could never fit even in an
        empty pool, since it would block the queue for ever. A ``policy`` that
        is not a :class:`QueuePolicy` or an ``ever_fits`` that is not callable
        is refused too: like every function that returns a ``Result``, this
        never raises for a bad argument.

        ``carried`` is kept in the entry as it is (:attr:`WaitingEntry.carried`,
        never read): a host's request object, so that nothing else maps
        identities to requests.

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
        return self._admit_entry(
            policy,
            identity,
            attributes,
            serial,
            now,
            resumed=False,
            ever_fits=ever_fits,
            carried=carried,
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
        carried)``, appended in order: the queue that one :meth:`append` per
        request gives (``carried`` as :meth:`append` keeps it; None when left
        out), built in one pass (one vector extension and one identity-map
        update). All or nothing: the first request refused, for any reason
        :meth:`append` refuses one (or an identity twice in the batch, or an
        item that is not such a tuple), is the result.

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
        entries: list[WaitingEntry] = []
        ticket = self._back
        # The usual request (a str or int id, a dict of names to exact numbers
        # holding every attribute the keys read, an int serial, a float now, no
        # ever_fits) is built here with no further check; anything else takes
        # _entry_for, which checks everything and says what is wrong. Duplicates
        # are found by the identity map's size after the batch is added (one map
        # walk per request, not two): only when it grew by less than the batch is
        # every request looked at (_first_duplicate), in order.
        usual = type(policy) is QueuePolicy and ever_fits is None
        plan = policy.plan if usual else None
        order = () if plan is None else plan.attribute_order
        read = frozenset(order)
        keyed = usual and policy.timing == "enqueue" and not policy.is_fifo
        for request in requests:
            parts = len(request) if type(request) is tuple else 0
            if parts == len(_REQUEST_PARTS):
                identity, attributes, serial, now = request  # type: ignore[misc]
                carried = None
            elif parts == len(_REQUEST_PARTS) + 1:
                identity, attributes, serial, now, carried = request  # type: ignore[misc]
            else:
                return Failure(
                    self._first_duplicate(entries)
                    or QueueError(cast(RequestId, request), _NOT_A_REQUEST)
                )
            made: WaitingEntry | QueueError
            laid = None
            if (
                usual
                and (type(identity) is str or type(identity) is int)
                and type(attributes) is dict
                and type(serial) is int
                and type(now) is float
            ):
                if not attributes:  # FIFO's usual request: nothing to lay out or check
                    laid = None if read else _NOTHING_LAID_OUT
                else:
                    values = exact_values(order, attributes)  # the names the keys read only
                    if values is not None:
                        laid = (order, values, ())
                    elif _usual_attributes(attributes, read):
                        laid = attribute_layout(policy, attributes)
            if laid is not None:
                names, values, extras = laid
                keys = plan.keys(values, serial, now, 0.0, NO_BUDGETS) if keyed else None  # type: ignore[union-attr]
                made = new_entry(
                    identity, names, values, extras, serial, now, False, keys, ticket, carried
                )
            else:
                made = self._entry_for(
                    policy, identity, attributes, serial, now, False, ever_fits, ticket, carried
                )
                if type(made) is QueueError:
                    # a repeated id is refused first, as append refuses it (after the
                    # policy and the id itself): an earlier request's, or this one's
                    # id again in the batch
                    own = isinstance(policy, QueuePolicy) and is_request_id(identity)
                    return Failure(
                        self._first_duplicate(entries, (identity,) if own else ()) or made
                    )
            assert type(made) is WaitingEntry
            entries.append(made)
            ticket += 1
        if not entries:
            return _succeeded(self)
        index = self._index
        queue = self if index is not None and index.policy is policy else self._bound(policy)
        before = queue._by_identity
        identities = before.update([(entry.identity, entry) for entry in entries])
        if len(identities) != len(before) + len(entries):
            # an id the map holds (waiting, or left and not yet swept) or one twice
            duplicate = self._first_duplicate(entries)
            if duplicate is not None:
                return Failure(duplicate)
        return _succeeded(queue._with_all(entries, identities))

    def _first_duplicate(
        self, entries: list[WaitingEntry], then: tuple[RequestId, ...] = ()
    ) -> QueueError | None:
        """The refusal of the first id of ``entries`` (a batch's, in order), then of
        ``then``, that waits in this queue or comes earlier in the batch, or None."""
        seen: set[RequestId] = set()
        for identity in chain((entry.identity for entry in entries), then):
            if identity in seen or self._get(identity) is not None:
                return QueueError(identity, "is already waiting")
            seen.add(identity)
        return None

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
        return self._admit_entry(
            policy,
            identity,
            attributes,
            serial,
            now,
            resumed=True,
            ever_fits=ever_fits,
            carried=carried,
        )

    def without_index(self, index: int) -> WaitingQueue:
        """This queue without the entry at ``index`` (which must exist), others in order.

        ``index`` must be an int (a ``TypeError``) from 0 to ``len(queue) - 1``
        (an ``IndexError``), as a selection's ``index`` is.
        """
        if type(index) is not int and (isinstance(index, bool) or not isinstance(index, int)):
            raise TypeError(f"index must be an int, not {type(index).__name__}")
        return self._without(self._at(index))

    def remove(self, identity: RequestId) -> Result[WaitingQueue, QueueError]:
        """This queue without the request ``identity`` (admitted or cancelled).

        >>> str(WaitingQueue().remove(3).failure())
        'request 3: is not waiting'
        """
        entry = self._get(identity)
        if entry is None:
            # A miss only: is_request_id is quick for the str and int ids.
            if not is_request_id(identity):
                return Failure(QueueError(identity, _NOT_AN_IDENTITY))
            return Failure(QueueError(identity, "is not waiting"))
        return _succeeded(self._without(entry))

    def _selected(
        self, policy: QueuePolicy, now: float, budget_left: Mapping[str, float]
    ) -> tuple[WaitingEntry, tuple[float, ...]] | None:
        """The fast selection: the entry and its key values; None when the queue is
        not indexed for ``policy`` (the caller then uses the plain definition).
        The queue must not be empty."""
        index = self._index
        if index is None or not index.holds_order:
            front: WaitingEntry = self._order.first()
            if front.resumed or not policy.keys:
                return front, ()
        elif self._order[7] or not policy.keys:  # resumed entries wait, or no key is read
            front = self._first()
            if front.resumed or not policy.keys:
                return front, ()
        if index is None or not _same_policy(index.policy, policy):
            return None
        chosen = index.selected(now, budget_left)
        if chosen is not None:
            return chosen
        rows = self._in_order()
        at, keys = policy.plan.scan(rows, now, budget_left)
        return rows[at], keys

    def _dispatched_at(
        self, policy: QueuePolicy, now: float, budget_left: Mapping[str, float], position: int
    ) -> WaitingEntry | None:
        """The entry at ``position`` (0 to ``len - 1``) of :meth:`_dispatch`'s order
        by the path's index; None when the caller must walk that order (the
        ``scan`` path, a lanes index out of time order, a queue not indexed for
        ``policy``). The resumed prefix and a policy without keys are the queue's
        own order (:meth:`~policy.waiting.line.Line.at`)."""
        if not policy.keys:
            return self._at(position)
        index = self._index
        if index is None or not index.tracks or not _same_policy(index.policy, policy):
            return None
        resumed = len(self) - index.size()
        if position < resumed:
            return self._at(position)
        return index.positioned(position - resumed, now, budget_left)

    def _dispatch(
        self,
        policy: QueuePolicy,
        now: float,
        budget_left: Mapping[str, float],
        plain_keys: Callable[[WaitingEntry], tuple[float, ...]],
    ) -> Iterator[tuple[WaitingEntry, tuple[float, ...]]]:
        """Every entry with its key values, in the order repeated selections with
        removal would take them at this one moment (see ``dispatch_order``);
        ``plain_keys`` gives an entry's keys by the plain definition, for a queue
        not indexed for ``policy``."""
        resumed = 0
        for entry in self:  # the resumed prefix, without keys
            if not (entry.resumed or not policy.keys):
                break
            resumed += 1
            yield entry, ()
        if resumed == len(self):
            return
        plan = policy.plan
        index = self._index
        if index is None or not _same_policy(index.policy, policy):
            rest = [entry for entry in self._in_order() if not entry.resumed]
            keyed = [(plain_keys(entry), entry) for entry in rest]
            keyed.sort(key=lambda pair: sort_key(pair[0]))  # stable: ties in queue order
            for keys, entry in keyed:
                yield entry, keys
            return
        run = index.dispatched(now, budget_left)
        if run is not None:  # the path's own order
            yield from run
        else:
            rows = [entry for entry in self._in_order() if not entry.resumed]
            ranked = plan.sort_keys(rows, now, budget_left)
            heapq.heapify(ranked)
            keys_of = plan.keys
            while ranked:
                entry = rows[int(heapq.heappop(ranked)[-1])]
                yield (
                    entry,
                    keys_of(entry.values, entry.serial, now, now - entry.enqueued_at, budget_left),
                )


def _usual_attributes(attributes: dict[Any, Any], read: frozenset[str]) -> bool:
    """Whether every name is exactly a ``str`` and every value exactly a ``float``,
    ``int`` or ``bool``, and every name in ``read`` is there (extend's usual case)."""
    for name, value in attributes.items():
        kind = type(value)
        if type(name) is not str or (kind is not float and kind is not int and kind is not bool):
            return False
    return attributes.keys() >= read


def _same_policy(a: QueuePolicy, b: QueuePolicy) -> bool:
    """Whether an index built for ``a`` serves ``b``: the same policy, or an equal
    one whose constants also agree in the sign of zero (``pmap`` equality takes
    -0.0 for 0.0, and ``1 / k`` tells them apart)."""
    if a is b:
        return True
    if a != b:
        return False
    return all(
        math.copysign(1.0, a.constants[name]) == math.copysign(1.0, value)
        for name, value in b.constants.items()
    )


_set_order, _set_identities, _set_front, _set_back, _set_index, _set_size = slot_setters(
    WaitingQueue, ("_order", "_by_identity", "_front", "_back", "_index", "_size")
)


_QUEUE_SHAPE: Final = shape_of(WaitingQueue)


def _succeeded(queue: WaitingQueue) -> Result[WaitingQueue, QueueError]:
    """``Success(queue)``, built through its value slot (a third of the constructor)."""
    if _SET_SUCCESS is None:  # pragma: no cover - a returns whose Success differs
        return Success(queue)
    made: Result[WaitingQueue, QueueError] = object.__new__(Success)
    _SET_SUCCESS(made, queue)
    return made


def _build_queue(
    _order: Line[WaitingEntry],
    _by_identity: Map[RequestId, WaitingEntry],
    _front: int,
    _back: int,
    _index: PathIndex | None,
    _size: int,
) -> WaitingQueue:
    made: Any = _QUEUE_SHAPE()
    made._order = _order
    made._by_identity = _by_identity
    made._front = _front
    made._back = _back
    made._index = _index
    made._size = _size
    made.__class__ = WaitingQueue
    built: WaitingQueue = made
    return built


#: A queue version of these fields (the hot paths' constructor).
_queue_of: Final = record_builder(WaitingQueue, _build_queue)
