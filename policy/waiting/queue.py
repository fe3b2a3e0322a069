"""The immutable waiting queue.

Entries stay in enqueue order. New requests go to the back; a preempted request
goes to the front, marked resumed, so resumed entries form a prefix with the
most recently preempted first. Every operation returns a new queue.

Theory of operation. Each entry gets a *ticket* when it is queued: appends
count up from 0, requeues count down from -1, so ascending tickets are queue
order. A queue version holds persistent indexes, all sharing structure with
the version they came from:

- ``_order``: the entries in ticket order (a :class:`~policy.waiting.line.Line`,
  two persistent C vectors with a moving head): appends, requeues, the front
  and admissions at the front in O(1), removal anywhere in O(log n), position
  (rank) in O(log n + removals in the middle not yet compacted);
- ``_by_identity``: identity -> entry (an ``immutables.Map``, the hash array
  mapped trie behind the standard library's contextvars): duplicates and
  removal by identity without a scan. It is updated lazily: an entry that
  leaves stays in the map until the map holds more than twice the waiting
  entries, when it is rebuilt from the line (amortised O(1)); a lookup
  counts an entry as waiting only if the line holds that very object;
- ``_index``: what the policy's selection path needs (see
  :mod:`policy.waiting.plan`), for the policy the queue was last used with:
  under ``static`` keys an index ordered by (key values, ticket); under
  ``lanes`` one ticket-ordered index per class. Resumed entries are in neither:
  they are selected from the front, before any key.

An operation with a different policy first rebuilds the index for it (O(n log
n), once); selection with a policy the queue was not built with falls back to
the plain definition (:func:`~policy.waiting.select.select_reference`).

Entries store attributes compactly: a tuple of values whose names are shared
with the policy (the attributes its keys read, in its order, then any others),
read through :attr:`WaitingEntry.attributes`.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias, cast

from immutables import Map
from returns.maybe import Maybe, Nothing, Some
from returns.result import Failure, Result, Success

from policy.identity import REQUEST_ID_RULE, RequestId, is_request_id
from policy.records import record_builder, shape_of, slot_setters, value_setter, wrong_field
from policy.text import printable, record_repr, represent
from policy.waiting.compiled import sort_key
from policy.waiting.evaluate import evaluate, scope_of
from policy.waiting.line import Line
from policy.waiting.numbers import as_float, is_number, shown
from policy.waiting.ordered import OrderedMap
from policy.waiting.plan import NO_BUDGETS
from policy.waiting.queue_policy import QueuePolicy

AttributeValue: TypeAlias = float | bool

_EMPTY_LINE: Final[Line[Any]] = Line.empty()

#: ``Success``'s value slot (policy.records.value_setter: checked at import).
_SET_SUCCESS: Final = value_setter(Success)

_NO_IDENTITIES: Final[Map[Any, Any]] = Map()
_NO_LANES: Final[Map[Any, Any]] = Map()
#: The identity map is swept when it holds more than twice the waiting entries plus this.
_SWEEP_SLACK: Final = 64

#: The value of an attribute an entry lacks but a policy it was rebuilt for reads:
#: NaN to compiled keys (as the plain definition reads a missing name), and not
#: an attribute of the entry (its views skip this very object).
_ABSENT: Final = float("nan")


class AttributeView(Mapping[str, AttributeValue]):
    """An entry's attributes as a read-only mapping (a view of its compact tuple).

    ``names`` name ``values`` and then ``extras``, in that order.

    >>> view = AttributeView(("prompt", "immediate"), (4.0,), (True,))
    >>> view["immediate"], dict(view), view == {"immediate": True, "prompt": 4.0}
    (True, {'prompt': 4.0, 'immediate': True}, True)
    """

    __slots__ = ("_extras", "_names", "_values")

    def __init__(
        self,
        names: tuple[str, ...],
        values: tuple[AttributeValue, ...],
        extras: tuple[AttributeValue, ...] = (),
    ) -> None:
        self._names = names
        self._values = values
        self._extras = extras

    def __getitem__(self, name: str) -> AttributeValue:
        try:
            at = self._names.index(name)
        except ValueError:
            raise KeyError(name) from None
        values = self._values
        value = values[at] if at < len(values) else self._extras[at - len(values)]
        if value is _ABSENT:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        given = (*self._values, *self._extras)
        return (
            name for name, value in zip(self._names, given, strict=True) if value is not _ABSENT
        )

    def __len__(self) -> int:
        if any(value is _ABSENT for value in self._values):
            return sum(1 for _ in self)
        return len(self._names)

    def __hash__(self) -> int:
        return hash(frozenset(self.items()))

    def __repr__(self) -> str:
        return represent(dict(self))  # values of any size (an entry built by hand keeps ints)


@dataclass(frozen=True, slots=True, init=False, eq=False)
class WaitingEntry:
    """One waiting request.

    Built by :class:`WaitingQueue`, which stores attribute numbers and
    ``enqueued_at`` as floats. ``enqueue_keys`` holds the key values computed
    when the entry was queued under a policy with ``enqueue`` timing (None
    otherwise). ``names``, ``values`` and ``extras`` are the attributes, stored
    compactly (``values`` those the queue policy's keys read, in its order;
    ``extras`` any others); read them as :attr:`attributes`. ``ticket`` orders
    the entry in its queue (not part of equality).

    The constructor checks each argument's type (a ``TypeError``): an identity
    that is hashable and equal to itself (:func:`~policy.identity.is_request_id`),
    attributes mapping names (``str``) to numbers or booleans, numbers for
    ``serial`` and ``enqueued_at``, a bool ``resumed`` and None or a tuple of
    numbers for ``enqueue_keys``. Values are kept as given.

    >>> entry = WaitingEntry("a", {"prompt": 2.0}, 0, enqueued_at=1.0)
    >>> entry.attributes["prompt"], entry == WaitingEntry("a", {"prompt": 2.0}, 0, 1.0)
    (2.0, True)
    """

    identity: RequestId
    names: tuple[str, ...]
    values: tuple[AttributeValue, ...]
    extras: tuple[AttributeValue, ...]
    serial: int
    enqueued_at: float
    resumed: bool
    enqueue_keys: tuple[float, ...] | None
    ticket: int

    def __init__(  # noqa: PLR0917 - the record's fields, as before the compact layout
        self,
        identity: RequestId,
        attributes: Mapping[str, AttributeValue],
        serial: int,
        enqueued_at: float,
        resumed: bool = False,
        enqueue_keys: tuple[float, ...] | None = None,
    ) -> None:
        _check_entry(identity, attributes, serial, enqueued_at, resumed, enqueue_keys)
        names = tuple(attributes)
        _made_entry(
            self,
            identity,
            names,
            tuple(attributes[name] for name in names),
            (),
            serial,
            enqueued_at,
            resumed,
            enqueue_keys,
            0,
        )

    @property
    def attributes(self) -> Mapping[str, AttributeValue]:
        """The request's attributes, by name."""
        return AttributeView(self.names, self.values, self.extras)

    def _identity_key(self) -> tuple[object, ...]:
        return (
            self.identity,
            dict(self.attributes),
            self.serial,
            self.enqueued_at,
            self.resumed,
            self.enqueue_keys,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WaitingEntry):
            return NotImplemented
        return self._identity_key() == other._identity_key()

    def __hash__(self) -> int:
        return hash((self.identity, self.serial, self.enqueued_at, self.resumed))

    def __repr__(self) -> str:
        # represent: values of any size or text (repr(10**5000) raises)
        return (
            f"WaitingEntry(identity={represent(self.identity)}, attributes={self.attributes!r},"
            f" serial={represent(self.serial)}, enqueued_at={represent(self.enqueued_at)},"
            f" resumed={self.resumed!r}, enqueue_keys={represent(self.enqueue_keys)})"
        )


def _check_entry(  # noqa: PLR0917 - WaitingEntry's arguments
    identity: object,
    attributes: object,
    serial: object,
    enqueued_at: object,
    resumed: object,
    enqueue_keys: object,
) -> None:
    """The argument types of ``WaitingEntry(...)`` built by hand (the queue's own
    builder, ``_entry``, takes values it has checked)."""
    if not is_request_id(identity):
        raise wrong_field("WaitingEntry", "identity", REQUEST_ID_RULE, identity)
    if not isinstance(attributes, Mapping):
        raise wrong_field("WaitingEntry", "attributes", "a mapping", attributes)
    for name, value in attributes.items():
        if not isinstance(name, str):
            raise wrong_field("WaitingEntry", "attributes", "keyed by names (str)", name)
        if not is_number(value):
            raise wrong_field("WaitingEntry", f"attributes[{name!r}]", "a number", value)
    if not is_number(serial):
        raise wrong_field("WaitingEntry", "serial", "a number", serial)
    if not is_number(enqueued_at):
        raise wrong_field("WaitingEntry", "enqueued_at", "a number", enqueued_at)
    if resumed is not True and resumed is not False:
        raise wrong_field("WaitingEntry", "resumed", "True or False", resumed)
    if enqueue_keys is not None and not (
        isinstance(enqueue_keys, tuple) and all(map(is_number, enqueue_keys))
    ):
        raise wrong_field(
            "WaitingEntry", "enqueue_keys", "None or a tuple of numbers", enqueue_keys
        )


_ENTRY_SLOTS: Final = slot_setters(
    WaitingEntry,
    (
        "identity",
        "names",
        "values",
        "extras",
        "serial",
        "enqueued_at",
        "resumed",
        "enqueue_keys",
        "ticket",
    ),
)


(
    _set_identity,
    _set_names,
    _set_values,
    _set_extras,
    _set_serial,
    _set_enqueued_at,
    _set_resumed,
    _set_enqueue_keys,
    _set_ticket,
) = _ENTRY_SLOTS


def _made_entry(  # noqa: PLR0917 - every field, positionally: the hot path's constructor
    entry: WaitingEntry,
    identity: RequestId,
    names: tuple[str, ...],
    values: tuple[AttributeValue, ...],
    extras: tuple[AttributeValue, ...],
    serial: int,
    enqueued_at: float,
    resumed: bool,
    enqueue_keys: tuple[float, ...] | None,
    ticket: int,
) -> WaitingEntry:
    # Slot setters (policy.records), each named: measured 2x faster than the frozen
    # __init__, and a loop over them costs a third more again.
    _set_identity(entry, identity)
    _set_names(entry, names)
    _set_values(entry, values)
    _set_extras(entry, extras)
    _set_serial(entry, serial)
    _set_enqueued_at(entry, enqueued_at)
    _set_resumed(entry, resumed)
    _set_enqueue_keys(entry, enqueue_keys)
    _set_ticket(entry, ticket)
    return entry


_ENTRY_SHAPE: Final = shape_of(WaitingEntry)


def _build_entry(  # noqa: PLR0917 - every field, positionally: the hot path's constructor
    identity: RequestId,
    names: tuple[str, ...],
    values: tuple[AttributeValue, ...],
    extras: tuple[AttributeValue, ...],
    serial: int,
    enqueued_at: float,
    resumed: bool,
    enqueue_keys: tuple[float, ...] | None,
    ticket: int,
) -> WaitingEntry:
    # plain stores into a shape, then a WaitingEntry (policy.records.record_builder)
    made: Any = _ENTRY_SHAPE()
    made.identity = identity
    made.names = names
    made.values = values
    made.extras = extras
    made.serial = serial
    made.enqueued_at = enqueued_at
    made.resumed = resumed
    made.enqueue_keys = enqueue_keys
    made.ticket = ticket
    made.__class__ = WaitingEntry
    built: WaitingEntry = made
    return built


#: The hot path's constructor of entries (fields checked by the caller).
_entry: Final = record_builder(WaitingEntry, _build_entry)


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
_REQUEST_PARTS: Final = ("identity", "attributes", "serial", "now")
_NOT_A_REQUEST: Final = f"is not a request: a tuple ({', '.join(_REQUEST_PARTS)})"
_NOT_REQUESTS: Final = f"is not an iterable of requests, tuples ({', '.join(_REQUEST_PARTS)})"

#: The refusal of an identity that is_request_id refuses (append, requeue, remove).
_NOT_AN_IDENTITY: Final = f"an identity must be {REQUEST_ID_RULE}"


def keys_at_enqueue(policy: QueuePolicy, entry: WaitingEntry) -> tuple[float, ...]:
    """The key values of ``entry`` as computed when it was queued: ``waited`` = 0.

    This is the plain definition (the tree evaluator); the queue computes the
    same values with the policy's compiled keys.

    >>> from policy.waiting.queue_policy import make_policy
    >>> policy = make_policy(["now + prompt"], attributes=["prompt"], timing="enqueue").unwrap()
    >>> keys_at_enqueue(policy, WaitingEntry(7, {"prompt": 2}, 0, enqueued_at=1.5))
    (3.5,)
    """
    given: tuple[object, object] = (policy, entry)
    if not isinstance(given[0], QueuePolicy):
        raise TypeError(f"policy must be a QueuePolicy, not {type(given[0]).__name__}")
    if not isinstance(given[1], WaitingEntry):
        raise TypeError(f"entry must be a WaitingEntry, not {type(given[1]).__name__}")
    return keys_at_enqueue_unchecked(policy, entry)


def keys_at_enqueue_unchecked(policy: QueuePolicy, entry: WaitingEntry) -> tuple[float, ...]:
    """:func:`keys_at_enqueue` for arguments of the right types, not checked again."""
    scope = scope_of(
        entry.attributes,
        entry.serial,
        now=as_float(entry.enqueued_at),
        waited=0.0,
        budget_left=NO_BUDGETS,
        constants=policy.constants,
    )
    return tuple(evaluate(key, scope) for key in policy.keys)


def _finite(value: float) -> bool:
    return value - value == 0.0  # false for ±inf and NaN


@dataclass(frozen=True, slots=True, init=False)
class _Index:
    """The selection index of one policy (see the module's theory of operation)."""

    policy: QueuePolicy
    #: ``static``, when not ``by_class``: (sort key of the key values, ticket) ->
    #: entry, non-resumed entries.
    ranked: OrderedMap[tuple[Any, ...], WaitingEntry]
    #: ``lanes``: class -> its entries in ticket order, non-resumed entries.
    #: ``static`` ``by_class``: first key value -> its entries, in (key values,
    #: ticket) order.
    lanes: Map[Any, Line[WaitingEntry]]
    #: ``lanes``: enqueue times of the non-resumed entries are finite and
    #: non-decreasing in queue order, so each class's head is its oldest entry.
    in_time_order: bool
    #: ``static`` ``by_class``: the first key values present, in key order.
    class_order: tuple[Any, ...]
    #: ``static``: entries are kept per first key value (``lanes``, ``class_order``),
    #: each class in key order; otherwise in ``ranked``.
    by_class: bool
    #: Whether the path keeps entries here (``static``, ``lanes``): else nothing to update.
    tracks: bool

    def __init__(self, policy: QueuePolicy) -> None:
        for put, value in zip(
            slot_setters(
                _Index,
                ("policy", "ranked", "lanes", "in_time_order", "class_order", "by_class", "tracks"),
            ),
            (policy, OrderedMap(), _NO_LANES, True, (), True, policy.plan.path in _TRACKED),
            strict=True,
        ):
            put(self, value)

    def ranked_key(self, entry: WaitingEntry) -> tuple[Any, ...]:
        # nested, not flat: stored key lists may differ in length (another policy's)
        return (sort_key(_static_keys(self.policy, entry)), entry.ticket)

    def added(self, entry: WaitingEntry, back: WaitingEntry | None) -> _Index:
        """With ``entry`` (non-resumed, appended after ``back``, the last non-resumed one)."""
        plan = self.policy.plan
        path = plan.path
        if path == "static":
            return self._static_added(entry)
        if path != "lanes":
            return self
        lane = plan.lane_of(entry.values, entry.serial)
        lanes = self.lanes
        members = lanes.get(lane)
        at = entry.enqueued_at
        ordered = _finite(at) and (
            not lanes or (self.in_time_order and back is not None and at >= back.enqueued_at)
        )
        grown = (_EMPTY_LINE if members is None else members).joined_back(entry)
        return _index_record(
            self.policy, self.ranked, lanes.set(lane, grown), ordered, (), True, self.tracks
        )

    def _static_added(self, entry: WaitingEntry) -> _Index:
        policy = self.policy
        if not self.by_class:
            ranked = self.ranked.insert(self.ranked_key(entry), entry)
            return _index_record(policy, ranked, _NO_LANES, True, (), False, self.tracks)
        keys = _static_keys(policy, entry)
        if not keys:  # stored by a policy without keys: the general index
            return self._ranked().added(entry, None)
        first = _class_of(keys[0])
        lanes, order = self.lanes, self.class_order
        members = lanes.get(first)
        if members is None:
            if len(order) >= MAX_STATIC_CLASSES:
                return self._ranked().added(entry, None)
            members = _EMPTY_LINE
            order = tuple(sorted((*order, first), key=_class_rank))
        elif sort_key(keys[1:]) < sort_key(_static_keys(policy, members.last())[1:]):
            # out of key order within its class: the general index from now on
            return self._ranked().added(entry, None)
        grown = members.joined_back(entry)
        return _index_record(
            policy, self.ranked, lanes.set(first, grown), True, order, True, self.tracks
        )

    def _ranked(self) -> _Index:
        """This ``static`` index with its entries in the general ``ranked`` index."""
        ranked = self.ranked
        for members in self.lanes.values():
            for member in members:
                ranked = ranked.insert(self.ranked_key(member), member)
        return _index_record(self.policy, ranked, _NO_LANES, True, (), False, self.tracks)

    def dropped(self, entry: WaitingEntry) -> _Index:
        """Without ``entry`` (non-resumed, in the index)."""
        plan = self.policy.plan
        path = plan.path
        if path == "static":
            if not self.by_class:
                ranked = self.ranked.remove(self.ranked_key(entry))
                # an emptied index keeps entries by class again
                return _index_record(
                    self.policy, ranked, _NO_LANES, True, (), not ranked, self.tracks
                )
            first = _class_of(_static_keys(self.policy, entry)[0])
            members = self.lanes[first].without(entry)
            if members:
                return _index_record(
                    self.policy,
                    self.ranked,
                    self.lanes.set(first, members),
                    True,
                    self.class_order,
                    True,
                    self.tracks,
                )
            order = tuple(value for value in self.class_order if value != first)
            return _index_record(
                self.policy, self.ranked, self.lanes.delete(first), True, order, True, self.tracks
            )
        if path != "lanes":
            return self
        lane = plan.lane_of(entry.values, entry.serial)
        members = self.lanes[lane].without(entry)
        lanes = self.lanes.set(lane, members) if members else self.lanes.delete(lane)
        return _index_record(
            self.policy, self.ranked, lanes, self.in_time_order or not lanes, (), True, self.tracks
        )

    def static_first(self) -> WaitingEntry:
        """The first entry under the ``static`` path (the index must not be empty)."""
        if self.by_class:
            return self.lanes[self.class_order[0]].first()
        first: WaitingEntry = self.ranked.first()[1]
        return first

    def static_entries(self) -> Iterator[WaitingEntry]:
        """The entries under the ``static`` path, in (key values, ticket) order."""
        if not self.by_class:
            yield from self.ranked.values()
            return
        for value in self.class_order:  # a class's first key value dominates its order
            yield from self.lanes[value]


#: The paths whose entries the index keeps.
_TRACKED: Final = ("static", "lanes")

#: Distinct first key values the ``static`` path keeps apart; beyond, the general index.
MAX_STATIC_CLASSES: Final = 64

#: The class of every NaN first key value (NaN objects differ in identity).
_NAN_CLASS: Final = "nan"


def _class_of(value: float) -> Any:
    """The class of a first key value: the value (``-0.0`` as ``0.0``), one for NaN."""
    return value + 0.0 if value == value else _NAN_CLASS  # noqa: PLR0124 - the NaN test


def _class_rank(value: Any) -> tuple[int, float]:
    return (1, 0.0) if value is _NAN_CLASS else (0, value)


_INDEX_SHAPE: Final = shape_of(_Index)


def _build_index(  # noqa: PLR0917 - the index's fields, positionally: the hot path's constructor
    policy: QueuePolicy,
    ranked: OrderedMap[tuple[Any, ...], WaitingEntry],
    lanes: Map[Any, Line[WaitingEntry]],
    in_time_order: bool,
    class_order: tuple[Any, ...],
    by_class: bool,
    tracks: bool,
) -> _Index:
    made: Any = _INDEX_SHAPE()
    made.policy = policy
    made.ranked = ranked
    made.lanes = lanes
    made.in_time_order = in_time_order
    made.class_order = class_order
    made.by_class = by_class
    made.tracks = tracks
    made.__class__ = _Index
    built: _Index = made
    return built


_index_record: Final = record_builder(_Index, _build_index)


@dataclass(frozen=True, slots=True, init=False, eq=False)
class WaitingQueue:
    """Waiting entries in enqueue order (resumed entries first).

    ``len``, iteration (queue order), ``index_of``, ``append``,
    ``requeue_preempted``, ``remove`` and ``without_index`` are O(log n).

    >>> WaitingQueue() == WaitingQueue(), len(WaitingQueue())
    (True, 0)
    """

    _order: Line[WaitingEntry]
    _by_identity: Map[RequestId, WaitingEntry]
    _front: int
    _back: int
    _index: _Index | None

    def __init__(self) -> None:
        _set_order(self, _EMPTY_LINE)
        _set_identities(self, _NO_IDENTITIES)
        _set_front(self, -1)
        _set_back(self, 0)
        _set_index(self, None)

    def __len__(self) -> int:
        size: int = self._order[7]  # the line's size, without its own __len__ call
        return size

    def __bool__(self) -> bool:
        return self._order[7] > 0  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[WaitingEntry]:
        return iter(self._order)

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
        return tuple(self._order)

    def index_of(self, identity: RequestId) -> Maybe[int]:
        """Where the request ``identity`` waits, if it does.

        >>> WaitingQueue().index_of("a")
        <Nothing>
        """
        entry = self._get(identity)
        if entry is None:
            return Nothing
        return Some(self._order.rank(entry))

    def _position_of(self, entry: WaitingEntry) -> int:
        """The position of ``entry``, which must wait in this queue."""
        return self._order.rank(entry)

    def _get(self, identity: RequestId) -> WaitingEntry | None:
        # Only a request id can be waiting, and only one is looked up: a colliding
        # hash makes the map call the value's __eq__, which may raise (plain str
        # and int ids always pass, without the call).
        if type(identity) is not str and type(identity) is not int and not is_request_id(identity):
            return None
        entry = self._by_identity.get(identity)
        if entry is None or not self._order.holds(entry):  # left, and not yet swept
            return None
        return entry

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
            _Index(policy),
        )
        for entry in self:  # tickets are kept; the layout follows the policy
            rebuilt = rebuilt._with(_laid_out(policy, entry), keep_counters=True)
        return rebuilt

    @staticmethod
    def _of_entries(
        policy: QueuePolicy, entries: Iterator[WaitingEntry] | list[WaitingEntry]
    ) -> WaitingQueue:
        """A queue of exactly these entries in this order (for tests of wrong kernels)."""
        queue = _queue_of(_EMPTY_LINE, _NO_IDENTITIES, -1, 0, _Index(policy))
        for ticket, entry in enumerate(entries):
            laid = _laid_out(policy, entry)
            queue = queue._with(
                _entry(
                    laid.identity,
                    laid.names,
                    laid.values,
                    laid.extras,
                    laid.serial,
                    laid.enqueued_at,
                    laid.resumed,
                    laid.enqueue_keys,
                    ticket,
                ),
                keep_counters=True,
            )
        return _queue_of(
            queue._order,
            queue._by_identity,
            -1,
            len(queue),
            queue._index,
        )

    def _with(self, entry: WaitingEntry, *, keep_counters: bool = False) -> WaitingQueue:
        """With ``entry`` added; its ticket is the next front one (resumed) or back one,
        unless ``keep_counters`` (a rebuild keeps every ticket)."""
        index = self._index
        assert index is not None
        front, back = self._front, self._back
        if entry.resumed:
            if not keep_counters:
                front = entry.ticket - 1
        else:
            if not keep_counters:
                back = entry.ticket + 1
            if index.tracks:
                last = None
                if index.policy.plan.path == "lanes" and self._order:
                    last = self._order.last()
                index = index.added(entry, None if last is None or last.resumed else last)
        order = self._order
        return _queue_of(
            order.joined_front(entry)
            if entry.resumed and not keep_counters
            else order.joined_back(entry),  # a rebuild adds every entry in ticket order
            self._by_identity.set(entry.identity, entry),
            front,
            back,
            index,
        )

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

    def entry_of(self, identity: RequestId) -> WaitingEntry | None:
        """The waiting entry of the request ``identity``, or None (O(1) expected).

        >>> WaitingQueue().entry_of("a") is None
        True
        """
        return self._get(identity)

    def _with_all(self, entries: list[WaitingEntry]) -> WaitingQueue:
        """With ``entries`` (new, not resumed, tickets from the next back one up) last."""
        index = self._index
        assert index is not None
        if index.tracks:
            order = self._order
            last = order.last() if order else None
            for entry in entries:
                index = index.added(entry, None if last is None or last.resumed else last)
                last = entry
        return _queue_of(
            self._order.joined_back_all(entries),
            self._by_identity.update((entry.identity, entry) for entry in entries),
            self._front,
            entries[-1].ticket + 1,
            index,
        )

    def _without(self, entry: WaitingEntry) -> WaitingQueue:
        """Without ``entry``, which must wait in this queue (a ``KeyError`` otherwise,
        before anything is changed)."""
        order = self._order.without(entry)
        index = self._index
        if index is not None and not entry.resumed and index.tracks:
            index = index.dropped(entry)
        identities = self._by_identity  # the entry stays in it until a sweep
        size: int = order[7]  # len(order), without a Python-level __len__ call
        if not size:
            identities = _NO_IDENTITIES
        elif len(identities) > 2 * size + _SWEEP_SLACK:
            identities = Map((waiting.identity, waiting) for waiting in order)
        return _queue_of(order, identities, self._front, self._back, index)

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
        order = policy.plan.attribute_order  # the attributes the keys read
        if order and not all(name in attributes for name in order):
            missing = sorted(policy.attributes_read - attributes.keys())
            return QueueError(
                identity,
                f"lacks attribute {missing[0]!r}, which the queue policy's keys read",
            )
        names, values, extras = _layout(policy, attributes)
        at = now if type(now) is float else as_float(now)
        keys = None
        if policy.timing == "enqueue" and not policy.is_fifo:
            keys = policy.plan.keys(values, serial, at, 0.0, NO_BUDGETS)
        entry = _entry(identity, names, values, extras, serial, at, resumed, keys, ticket)
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
    ) -> Result[WaitingQueue, QueueError]:
        """This queue with the new entry, or why the request is refused (both ways in)."""
        ticket = self._front if resumed else self._back
        made = self._entry_for(
            policy, identity, attributes, serial, now, resumed, ever_fits, ticket
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
            policy, identity, attributes, serial, now, resumed=False, ever_fits=ever_fits
        )

    def extend(
        self,
        policy: QueuePolicy,
        requests: Iterable[tuple[RequestId, Mapping[str, AttributeValue], int, float]],
        *,
        ever_fits: Callable[[WaitingEntry], bool] | None = None,
    ) -> Result[WaitingQueue, QueueError]:
        """This queue with every request of ``requests``, each an ``(identity,
        attributes, serial, now)``, appended in order: the queue that one
        :meth:`append` per request gives, built in one pass (one vector extension
        and one identity-map update). All or nothing: the first request refused,
        for any reason :meth:`append` refuses one (or an identity twice in the
        batch, or an item that is not such a tuple), is the result.

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
        batch: set[RequestId] = set()
        ticket = self._back
        for request in requests:
            if type(request) is not tuple or len(request) != len(_REQUEST_PARTS):
                return Failure(QueueError(cast(RequestId, request), _NOT_A_REQUEST))
            identity, attributes, serial, now = request
            made = self._entry_for(
                policy, identity, attributes, serial, now, False, ever_fits, ticket
            )
            if type(made) is QueueError:
                return Failure(made)
            assert type(made) is WaitingEntry
            if identity in batch:
                return Failure(QueueError(identity, "is already waiting"))
            batch.add(identity)
            entries.append(made)
            ticket += 1
        if not entries:
            return _succeeded(self)
        index = self._index
        queue = self if index is not None and index.policy is policy else self._bound(policy)
        return _succeeded(queue._with_all(entries))

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
        return self._admit_entry(
            policy, identity, attributes, serial, now, resumed=True, ever_fits=ever_fits
        )

    def without_index(self, index: int) -> WaitingQueue:
        """This queue without the entry at ``index`` (which must exist), others in order.

        ``index`` must be an int (a ``TypeError``) from 0 to ``len(queue) - 1``
        (an ``IndexError``), as a selection's ``index`` is.
        """
        if type(index) is not int and (isinstance(index, bool) or not isinstance(index, int)):
            raise TypeError(f"index must be an int, not {type(index).__name__}")
        return self._without(self._order.at(index))

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
        front: WaitingEntry = self._order.first()
        if front.resumed or not policy.keys:
            return front, ()
        index = self._index
        if index is None or not _same_policy(index.policy, policy):
            return None
        plan = policy.plan
        path = plan.path
        if path == "static":
            best = index.static_first()
            return best, _static_keys(policy, best)
        if path == "lanes" and index.in_time_order:
            keys_of = plan.keys
            chosen: tuple[Any, ...] | None = None
            for members in index.lanes.values():
                head: WaitingEntry = members.first()
                keys = keys_of(head.values, head.serial, now, now - head.enqueued_at, budget_left)
                rank = (*sort_key(keys), head.ticket)
                if chosen is None or rank < chosen[0]:
                    chosen = (rank, head, keys)
            assert chosen is not None
            return chosen[1], chosen[2]
        rows = list(self._order)
        at, keys = plan.scan(rows, now, budget_left)
        return rows[at], keys

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
        for entry in self._order:  # the resumed prefix, without keys
            if not (entry.resumed or not policy.keys):
                break
            resumed += 1
            yield entry, ()
        if resumed == len(self):
            return
        plan = policy.plan
        index = self._index
        if index is None or not _same_policy(index.policy, policy):
            rest = [entry for entry in self._order if not entry.resumed]
            keyed = [(plain_keys(entry), entry) for entry in rest]
            keyed.sort(key=lambda pair: sort_key(pair[0]))  # stable: ties in queue order
            for keys, entry in keyed:
                yield entry, keys
        elif plan.path == "static":  # already in order: O(log n) each
            for entry in index.static_entries():
                yield entry, _static_keys(policy, entry)
        elif plan.path == "lanes" and index.in_time_order:
            yield from _merged_lanes(plan.keys, index, now, budget_left)
        else:
            rows = [entry for entry in self._order if not entry.resumed]
            ranked = plan.sort_keys(rows, now, budget_left)
            heapq.heapify(ranked)
            keys_of = plan.keys
            while ranked:
                entry = rows[int(heapq.heappop(ranked)[-1])]
                yield (
                    entry,
                    keys_of(entry.values, entry.serial, now, now - entry.enqueued_at, budget_left),
                )


def _merged_lanes(
    keys_of: Callable[..., tuple[float, ...]],
    index: _Index,
    now: float,
    budget_left: Mapping[str, float],
) -> Iterator[tuple[WaitingEntry, tuple[float, ...]]]:
    """The classes merged lazily: within a class, keys never get worse with age, so
    each class in ticket order is already in (key values, ticket) order, and a
    merge of the classes by that order is the dispatch order."""
    heap: list[tuple[Any, ...]] = []
    for number, members in enumerate(index.lanes.values()):
        run = iter(members)
        head: WaitingEntry = next(run)
        keys = keys_of(head.values, head.serial, now, now - head.enqueued_at, budget_left)
        heap.append((sort_key(keys), head.ticket, number, keys, head, run))
    heapq.heapify(heap)  # (key values, ticket) is unique: the rest is never compared
    while heap:
        _, _, number, keys, entry, run = heap[0]
        yield entry, keys
        following: WaitingEntry | None = next(run, None)
        if following is None:
            heapq.heappop(heap)
            continue
        keys = keys_of(
            following.values, following.serial, now, now - following.enqueued_at, budget_left
        )
        heapq.heapreplace(heap, (sort_key(keys), following.ticket, number, keys, following, run))


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


def _static_keys(policy: QueuePolicy, entry: WaitingEntry) -> tuple[float, ...]:
    """The key values of ``entry`` under ``policy``'s ``static`` path, exactly as
    :func:`~policy.waiting.select.entry_keys` gives them: under enqueue timing
    the stored keys (or, missing, the keys at enqueue); otherwise keys that read
    no moment, so any moment gives their values."""
    keys_of = policy.plan.keys
    if policy.timing == "enqueue":
        stored = entry.enqueue_keys
        if stored is not None:
            return stored
        return keys_of(entry.values, entry.serial, entry.enqueued_at, 0.0, NO_BUDGETS)
    return keys_of(entry.values, entry.serial, math.nan, math.nan, NO_BUDGETS)


_set_order, _set_identities, _set_front, _set_back, _set_index = slot_setters(
    WaitingQueue, ("_order", "_by_identity", "_front", "_back", "_index")
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
    _index: _Index | None,
) -> WaitingQueue:
    made: Any = _QUEUE_SHAPE()
    made._order = _order
    made._by_identity = _by_identity
    made._front = _front
    made._back = _back
    made._index = _index
    made.__class__ = WaitingQueue
    built: WaitingQueue = made
    return built


#: A queue version of these fields (the hot paths' constructor).
_queue_of: Final = record_builder(WaitingQueue, _build_queue)


def _layout(
    policy: QueuePolicy, attributes: Mapping[str, AttributeValue]
) -> tuple[tuple[str, ...], tuple[AttributeValue, ...], tuple[AttributeValue, ...]]:
    """Names, values and extras as the policy's compiled keys find them: the
    attributes the keys read, in the policy's order (the names tuple shared with
    the policy when there are no others), then any others as given."""
    order = policy.plan.attribute_order
    if not order and not attributes:  # FIFO's usual request: nothing to lay out
        return (), (), ()
    values = tuple(_stored(attributes[name]) for name in order)
    if len(attributes) == len(order):
        return order, values, ()
    extra = tuple(name for name in attributes if name not in order)
    return order + extra, values, tuple(_stored(attributes[name]) for name in extra)


def _stored(value: AttributeValue) -> AttributeValue:
    return value if isinstance(value, bool | float) else as_float(value)


def _laid_out(policy: QueuePolicy, entry: WaitingEntry) -> WaitingEntry:
    """``entry`` with its attributes laid out for ``policy``.

    An entry queued under another policy may lack an attribute this one reads:
    compiled keys read it as NaN (``_ABSENT``), as the plain definition reads a
    missing name; the entry's attributes still do not have it.
    """
    order = policy.plan.attribute_order
    if entry.names[: len(order)] == order and len(entry.values) == len(order):
        return entry
    given = dict(entry.attributes)
    names, values, extras = _layout(policy, {**dict.fromkeys(order, _ABSENT), **given})
    return _entry(
        entry.identity,
        names,
        values,
        extras,
        entry.serial,
        entry.enqueued_at,
        entry.resumed,
        entry.enqueue_keys,
        entry.ticket,
    )
