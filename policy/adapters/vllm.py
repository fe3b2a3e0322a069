"""A drop-in waiting queue for vLLM-style schedulers, on the immutable kernel queue.

:class:`WaitingRequestQueue` has the method set of vLLM's ``RequestQueue``
(``vllm/v1/core/sched/request_queue.py``) plus ``__contains__``, and needs
nothing from vLLM: requests are duck-typed, read through a small replaceable
mapping of attribute getters (:data:`DEFAULT_ATTRIBUTES`).

Theory of operation. The adapter is the only stateful code besides the
harness. It holds:

- ``_queue``: the current version of the kernel's
  :class:`~policy.waiting.WaitingQueue`; every operation replaces it with the
  version the kernel returns (O(log n) each, no copy);
- the request objects: each entry carries its request
  (:attr:`~policy.waiting.WaitingEntry.carried`), so no second map is kept;
  the queue being persistent, iteration reads the version it started with,
  and a batch (``prepend_requests``, ``remove_requests``) is built aside and
  committed at once;
- ``_pending``: the adds not yet in ``_queue``, each ``(id, attributes,
  serial, enqueue time, request)`` as ``WaitingQueue.extend`` takes it.
  ``add_request`` checks at once everything the kernel would refuse, reads the
  clock (the enqueue time) and appends here; the next operation that reads
  the queue absorbs them all with one ``extend`` (``_absorb``), which gives
  the version one ``append`` per add gives. An add the kernel might refuse
  or convert (an id already waiting, a value not exactly a float, int or
  bool, a clock reading neither a float nor an int) absorbs the pending adds
  and takes the kernel's own ``append``, as before;
- ``_taken``: under a policy whose selection reads no moment (the ``fifo``
  and ``static`` paths: ``fcfs_queue``, ``priority_queue``), the entries
  popped from ``_queue`` and not yet removed from it, each with its key values
  (counted in the statistics when they are removed, unless a run is
  watched). Repeated selections then take the entries in the dispatch order
  of any one moment, so a pop reads the
  next pair of one ``dispatch_entries`` iteration of ``_queue`` (``_ahead``:
  the iteration read 64 pairs at a time, ``_ahead_from`` the position of its
  first), no selection and no new version; the next operation that needs the
  queue itself removes the taken entries, with one
  ``WaitingQueue.without_first`` (no keys) or one ``without_each``
  (``_settle``, before it absorbs the pending adds), which gives the version
  one ``without`` of the selected entry per pop gives. A peek reads the same
  next pair (the same whatever the clock says, so nothing is pinned);
- ``_ids``: the id of every waiting request, pending or in ``_queue``, so that
  a duplicate add is found in one set lookup; changed with ``_queue``;
- ``_pin``: the entry the last ``peek_request`` returned, with its key values.
  vLLM's scheduler peeks, checks that the request fits, then pops; with keys
  evaluated at selection the clock may have moved in between, so ``pop_request``
  takes the pinned entry instead of selecting again. Any add, prepend or
  remove clears the pin (only the adapter changes ``_queue``, so a pin, when
  set, is always still waiting);
- ``_lock``: a ``threading.Lock`` held across every read-modify-write of
  ``_queue``, the pin, the serial and the statistics, the whole operation
  (peek's selection and its pin, pop's selection and removal, a batch's
  build and commit). Reading the request's id and attributes (the getters)
  happens before the lock is taken; the clock is read under it, so enqueue
  times rise in queue order. Operations that only read the held version
  (``in``, indexing, iteration) settle the taken pops and absorb pending adds
  under the lock first, then load the one reference once without it: every version is
  immutable. ``bool`` and ``len`` take no lock and absorb nothing: they read
  the size of ``_ids``, which every operation changes under the lock, once it
  has replaced ``_queue`` (vLLM asks both of its queues on every admission
  and counts them on every step). The lock is taken by
  ``acquire()`` and released in a ``finally``, not by ``with``: on CPython 3.11
  that costs a third as much (docs/adapters.md, "Cost").

What it differs in from vLLM's queues and from vLLM-Ascend's
ShortRequestFirst queue, and why, is listed in docs/adapters.md.

The clock is injected (default ``time.monotonic``), and ``waited`` is measured
on it from when the adapter received the request; the adapter logs through
``logging`` (the logger ``policy.adapters.vllm``). The kernel does neither;
pyproject.toml's ``kernel-pure`` contract allows exactly this module's
``time``, ``logging`` and ``threading`` imports. Safe under concurrent use
(vLLM's deque loses nothing when two threads add; neither does this queue);
the lock costs about 0.1 µs per operation (docs/adapters.md, "The lock's cost").
"""

from __future__ import annotations

import logging
import math
import operator
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from dataclasses import dataclass
from itertools import islice
from operator import attrgetter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

from returns.result import Failure, Result

from policy.text import cut, represent
from policy.waiting import (
    Moment,
    PolicyError,
    QueuePolicy,
    WaitingEntry,
    WaitingQueue,
    ascend_fcfs_lanes,
    dispatch_entries,
    dispatch_order,
    dispatched_at,
    fifo,
    load_policy,
    load_policy_text,
    select_entry,
    vllm_priority,
)
from policy.waiting.numbers import shown

__all__ = [
    "ASCEND_CLASS_NAMES",
    "DEFAULT_ATTRIBUTES",
    "EXACT_INTEGER",
    "ID_SHOWN",
    "MAX_CLASSES",
    "PREPENDED",
    "QueueStats",
    "WaitingRequestQueue",
    "fcfs_queue",
    "install_waiting_queue",
    "is_recovery_request",
    "priority_queue",
    "queue_from_policy",
    "short_request_first_queue",
]

_LOG: Final = logging.getLogger(__name__)
#: Entries a deferred pop reads from the queue's iteration at a time (vLLM admits
#: up to its max_num_seqs, 256 by default, per step).
_READ_AHEAD: Final = 64

R = TypeVar("R")

#: How an attribute is read from a request object.
Getter = Callable[[Any], Any]


def is_recovery_request(request: object) -> bool:
    """Whether ``request`` resumes work already started, as vLLM-Ascend defines a
    recovery request: preempted, or with computed tokens, or with output tokens.

    Duck-typed: ``status`` may be vLLM's ``RequestStatus`` (read by its name) or
    the text ``"PREEMPTED"``; a missing attribute counts as not started.

    >>> from types import SimpleNamespace
    >>> is_recovery_request(SimpleNamespace(status="PREEMPTED"))
    True
    >>> is_recovery_request(SimpleNamespace(status="WAITING", num_output_tokens=0))
    False
    >>> is_recovery_request(SimpleNamespace(num_computed_tokens=16))
    True
    """
    status = getattr(request, "status", None)
    return (
        getattr(status, "name", status) == "PREEMPTED"
        or getattr(request, "num_computed_tokens", 0) > 0
        or getattr(request, "num_output_tokens", 0) > 0
    )


#: The default attribute mapping: ``request_id`` names the request (its identity
#: in the queue); every other entry is a policy attribute, read from a vLLM
#: ``Request``. Replace entries with ``{**DEFAULT_ATTRIBUTES, "prompt": ...}``.
DEFAULT_ATTRIBUTES: Final[Mapping[str, Getter]] = MappingProxyType(
    {
        "request_id": attrgetter("request_id"),
        "arrival_time": attrgetter("arrival_time"),
        "priority": attrgetter("priority"),
        "prompt": attrgetter("num_prompt_tokens"),
        "immediate": is_recovery_request,
    }
)

#: The names :meth:`WaitingRequestQueue.stats` gives the Ascend lanes' classes
#: (the values of ``ascend_fcfs_lanes``'s key).
ASCEND_CLASS_NAMES: Final[Mapping[float, str]] = MappingProxyType(
    {0.0: "immediate", 1.0: "aged long", 2.0: "short", 3.0: "long"}
)

#: Distinct classes :meth:`WaitingRequestQueue.stats` counts; admissions of any
#: further class are counted as ``"other"``, so a policy whose first key takes
#: many values (a continuous score) cannot grow the counts without bound.
MAX_CLASSES: Final = 64

#: A run of this many consecutive aged-long admissions is logged once (as
#: vLLM-Ascend warns at 3: long requests are overtaking short ones repeatedly).
_RUN_WARNING: Final = 3


#: The moment of every selection on the ``fifo`` and ``static`` paths, whose
#: selection reads no moment (no keys, or keys fixed at enqueue): no clock read
#: there (``_timeless``); on the others, the clock's.
_ANY_MOMENT: Final = Moment(0.0)

#: The attribute the queue itself gives every request, when the policy's keys read
#: it: True for a request :meth:`WaitingRequestQueue.prepend_request` queued (a
#: preempted or skipped request put back), False for one ``add_request`` queued.
PREPENDED: Final = "prepended"

#: Longest text of a request id in a refusal.
ID_SHOWN: Final = 80

#: The largest integer attribute taken: every integer up to it in magnitude is a
#: float exactly, and the kernel compares attributes as floats; beyond it two
#: different integers may be one float (vLLM compares priorities exactly).
EXACT_INTEGER: Final = 2**53


def _id_text(identity: object) -> str:
    """A request id as a refusal quotes it, by the one quoting rule
    (:func:`policy.text.quote`): a text id's first :data:`ID_SHOWN` characters
    quoted, then ``... (N characters)`` for a longer one (its head is cut
    first, never copied whole, and read with ``str``'s own methods); another
    id's ``repr`` on one line, at most :data:`ID_SHOWN` characters.

    >>> _id_text("req-1"), _id_text("x" * 10**6)[-29:]
    ("'req-1'", "xx'... (1,000,000 characters)")
    """
    if isinstance(identity, str):
        size = str.__len__(identity)
        head = represent(str.__getitem__(identity, slice(0, ID_SHOWN)))
        return head if size <= ID_SHOWN else f"{head}... ({size:,} characters)"
    return cut(represent(identity), ID_SHOWN)


def _wrong_id(identity: object) -> TypeError:
    kind = cut(represent(type(identity).__name__)[1:-1], ID_SHOWN)
    return TypeError(
        f"request id {_id_text(identity)}: the queue takes ids of the exact types str and int,"
        f" not {kind} (an id of any other type may change its hash or equality while it"
        " waits, and its entry could then never be found again)"
    )


def _inexact(identity: object, name: str, value: object) -> ValueError:
    return ValueError(
        f"request {_id_text(identity)}: attribute {shown(name)} is {shown(value)}, beyond"
        f" the exact integers (at most 2**53 = {EXACT_INTEGER:,} in magnitude): the queue"
        " compares attributes as floats, which cannot tell such integers apart, so it"
        " refuses them rather than tie them"
    )


@dataclass(frozen=True, slots=True)
class QueueStats:
    """Admissions per class of the policy's first key, and the current run.

    ``admissions`` counts, by class name, the requests popped since the queue
    was made: ``"resumed"`` for a prepended (resumed) request, ``"fifo"`` under
    a policy without keys, otherwise the name of the first key's value
    (``class_names``, or the value itself). ``run`` is the number of
    consecutive admissions, up to now, of the class named ``run_class`` (for
    the Ascend lanes: aged long requests); 0 when no class is watched.
    """

    admissions: Mapping[str, int]
    run_class: str | None
    run: int
    waiting: int


def _class_label(value: object, names: Mapping[float, str]) -> str:
    if isinstance(value, str):
        return value
    assert isinstance(value, float)
    named = names.get(value)
    if named is not None:
        return named
    if math.isfinite(value) and value == int(value):
        return str(int(value))  # "3", not "3.0": classes are usually whole numbers
    return repr(value)


class WaitingRequestQueue(Generic[R]):
    """vLLM's ``RequestQueue`` interface over the kernel's waiting queue.

    ``policy`` decides the order (any :class:`~policy.waiting.QueuePolicy`);
    ``attributes`` maps ``"request_id"`` and every attribute the policy's keys
    read to a getter on the request object; ``clock`` gives the admission
    clock's ``now`` (seconds). ``prepend_resumed`` (default) queues a prepended
    request resumed, ahead of every key; otherwise it is added by its keys like
    a new one. ``class_names`` and ``run_class`` name the first key's values in
    :meth:`stats`.

    >>> from types import SimpleNamespace as Req
    >>> queue = fcfs_queue(clock=lambda: 0.0)
    >>> for name in "abc":
    ...     queue.add_request(Req(request_id=name))
    >>> queue.peek_request().request_id, queue.pop_request().request_id, len(queue)
    ('a', 'a', 2)
    >>> queue.prepend_requests([Req(request_id="x"), Req(request_id="y")])
    >>> [request.request_id for request in queue]
    ['y', 'x', 'b', 'c']
    """

    __slots__ = (
        "_admissions",
        "_ahead",
        "_ahead_from",
        "_attributes",
        "_bare",
        "_class_names",
        "_clock",
        "_counted_later",
        "_deferred",
        "_identity",
        "_ids",
        "_in_line",
        "_lock",
        "_marks_prepended",
        "_pending",
        "_pin",
        "_policy",
        "_prepend_resumed",
        "_queue",
        "_rest",
        "_run",
        "_run_value",
        "_serial",
        "_taken",
        "_timeless",
        "_warned",
    )

    def __init__(
        self,
        policy: QueuePolicy,
        *,
        attributes: Mapping[str, Getter] = DEFAULT_ATTRIBUTES,
        clock: Callable[[], float] = time.monotonic,
        prepend_resumed: bool = True,
        class_names: Mapping[float, str] | None = None,
        run_class: float | None = None,
    ) -> None:
        if not isinstance(policy, QueuePolicy):
            raise TypeError(f"policy must be a QueuePolicy, not {type(policy).__name__}")
        if not isinstance(attributes, Mapping):
            raise TypeError(f"attributes must map names to getters, not {shown(attributes)}")
        for name, getter in attributes.items():
            if not callable(getter):
                raise TypeError(f"attributes[{shown(name)}] must be callable, not {shown(getter)}")
        if PREPENDED in attributes:
            raise ValueError(
                f"attributes[{PREPENDED!r}] is the queue's own: True for a request"
                " prepend_request queued, False for one add_request queued"
            )
        marks = PREPENDED in policy.attributes_read
        read = sorted(policy.attributes_read - {PREPENDED})
        needed = ["request_id", *read]
        missing = [name for name in needed if name not in attributes]
        if missing:
            raise ValueError(
                f"attributes lacks {shown(missing[0])}, which "
                + ("names the request" if missing[0] == "request_id" else "the policy's keys read")
            )
        if not callable(clock):
            raise TypeError(f"clock must be callable, not {shown(clock)}")
        if prepend_resumed is not True and prepend_resumed is not False:
            raise TypeError(f"prepend_resumed must be True or False, not {shown(prepend_resumed)}")
        names = MappingProxyType(dict(class_names or {}))
        if run_class is not None and (
            isinstance(run_class, bool) or not isinstance(run_class, float | int)
        ):
            raise TypeError(f"run_class must be a number or None, not {shown(run_class)}")
        self._policy = policy
        self._timeless = policy.path in ("fifo", "static")
        # Selection reads no moment: pops are deferred (_taken); without keys, each
        # takes the front.
        self._deferred = self._timeless
        self._in_line = policy.is_fifo
        self._identity: Getter = attributes["request_id"]
        # Only the attributes the keys read: others would cost time and memory per entry.
        self._attributes: tuple[tuple[str, Getter], ...] = tuple(
            (name, attributes[name]) for name in read
        )
        self._marks_prepended = marks
        self._bare = not self._attributes and not marks  # no attribute read: {} for each
        self._clock = clock
        self._prepend_resumed = prepend_resumed
        self._class_names: Mapping[float, str] = names
        self._run_value: float | None = None if run_class is None else float(run_class)
        # Deferred pops with no run to watch are counted when they are removed
        # (_settle), all at once: no warning can be due at a pop.
        self._counted_later = self._deferred and self._run_value is None
        self._queue = WaitingQueue()
        self._lock = threading.Lock()
        self._pin: tuple[WaitingEntry, tuple[float, ...]] | None = None
        # Deferred pops (selection reads no moment): the entries popped, with their key
        # values, not yet removed from _queue, and the iteration of _queue they were
        # read from (_ahead holds its pairs from position _ahead_from on).
        self._taken: list[tuple[WaitingEntry, tuple[float, ...]]] = []
        self._ahead: list[tuple[WaitingEntry, tuple[float, ...]]] = []
        self._ahead_from = 0
        self._rest: Iterator[tuple[WaitingEntry, tuple[float, ...]]] | None = None
        # Requests added and not yet absorbed into _queue (add_request's fast path),
        # each as WaitingQueue.extend takes it.
        self._pending: list[tuple[str | int, Mapping[str, Any], int, float, R]] = []
        # The id of every waiting request, pending or in _queue: add_request's
        # duplicate test in one set lookup (the kernel's map is a Python call and
        # a trie walk); changed with _queue, under the lock.
        self._ids: set[str | int] = set()
        self._serial = 0
        self._admissions: dict[object, int] = {}
        self._run = 0
        self._warned = False

    # --- what a host may read ---------------------------------------------------

    @property
    def policy(self) -> QueuePolicy:
        """The queue policy that orders this queue."""
        return self._policy

    @property
    def prepend_resumed(self) -> bool:
        """Whether a prepended request is queued resumed, ahead of every key
        (otherwise by its keys, like a new one)."""
        return self._prepend_resumed

    @property
    def snapshot(self) -> WaitingQueue:
        """The current version of the kernel queue (O(1) once the adds since the
        last operation are absorbed; it never changes), for running the kernel's
        own functions on it (``select_waiting``, ...)."""
        return self._held()

    def __repr__(self) -> str:
        return f"WaitingRequestQueue(path={self._policy.path!r}, waiting={len(self._held())})"

    # --- deferred adds ------------------------------------------------------------

    def _absorb(self) -> None:
        """Join the pending adds to ``_queue`` in one ``extend`` (the caller holds
        the lock): the version one ``append`` per add, in add order, gives."""
        pending = self._pending
        made = self._queue.extend(self._policy, pending)
        if type(made) is Failure:  # add_request checked what the kernel checks
            raise RuntimeError(f"the queue refused an add it had taken: {made.failure()}")
        self._queue = made.unwrap()
        self._pending = []

    def _settle(self) -> None:
        """Make ``_queue`` the whole current version (the caller holds the lock):
        the taken pops removed with one ``without_first``, then the pending adds
        absorbed. Every change of ``_queue`` but these follows a call of this."""
        taken = self._taken
        if taken:
            queue = self._queue
            self._queue = (
                queue.without_first(len(taken))
                if self._in_line
                else queue.without_each([entry for entry, _ in taken])
            )
            self._taken = []
            if self._counted_later:
                self._count_all(taken)
        if self._rest is not None:  # an iteration of the version just replaced
            self._ahead, self._ahead_from, self._rest = [], 0, None
        if self._pending:
            self._absorb()

    def _held(self) -> WaitingQueue:
        """The current version, settled first (under the lock)."""
        if self._pending or self._taken:
            lock = self._lock
            lock.acquire()
            try:
                self._settle()
            finally:
                lock.release()
        return self._queue

    def _read_ahead(self) -> tuple[WaitingEntry, tuple[float, ...]] | None:
        """When pops are deferred and every pair read so far is taken: the next
        pairs of ``_queue``'s dispatch iteration read into ``_ahead``; the first
        of them (the entry the next pop takes, with its key values), or None when
        no entry is left. The caller holds the lock and has settled any pending
        add; a pop or peek reads ``_ahead[len(_taken) - _ahead_from]`` first."""
        rest = self._rest
        if rest is None:
            rest = self._rest = dispatch_entries(self._queue, self._policy, _ANY_MOMENT)
        self._ahead_from += len(self._ahead)
        ahead = self._ahead = list(islice(rest, _READ_AHEAD))
        return ahead[0] if ahead else None

    # --- vLLM's RequestQueue ------------------------------------------------------

    def _identity_of(self, request: R) -> str | int:
        """The request's id: a ``str`` or an ``int`` exactly (a ``TypeError``
        otherwise, before anything is queued)."""
        identity = self._identity(request)
        if type(identity) is str or type(identity) is int:
            return identity
        raise _wrong_id(identity)

    def _attributes_of(
        self, request: R, identity: object, prepended: bool = False
    ) -> tuple[Mapping[str, Any], bool]:
        """The attributes the keys read (``prepended`` the queue's own, when read),
        and whether every value is plain (exactly a ``float``, ``int`` or ``bool``:
        one the kernel takes as it is); an integer beyond :data:`EXACT_INTEGER`
        in magnitude is a ``ValueError`` naming the request."""
        getters = self._attributes
        if self._bare:
            # a dict, whose type the kernel checks at once (a proxy takes an ABC check)
            return {}, True
        attributes: dict[str, Any] = {}
        plain = True
        for name, get in getters:  # a loop, not a comprehension: no frame per request
            value = get(request)
            attributes[name] = value
            kind = type(value)
            if (
                kind is not float
                and kind is not bool
                and not (kind is int and -EXACT_INTEGER <= value <= EXACT_INTEGER)
            ):
                plain = False  # looked at below, once every getter has been read
        if self._marks_prepended:
            attributes[PREPENDED] = prepended  # a bool: plain
        if plain:
            return attributes, True
        plain = True
        for name, value in attributes.items():
            kind = type(value)
            if kind is float or kind is bool:
                continue  # floats are exact as they are, booleans small
            if kind is not int:
                plain = False  # the kernel's own checks decide (add_request's slow path)
                if not isinstance(value, int):
                    continue
            # only integers can be inexact
            if not -EXACT_INTEGER <= value <= EXACT_INTEGER:
                raise _inexact(identity, name, value)
        return attributes, plain

    def add_request(self, request: R) -> None:
        """Queue ``request`` by the policy's keys, waiting from now.

        A request whose id is already waiting, or whose attributes the kernel
        refuses (not a number, ...), is a ``ValueError`` with the kernel's
        reason, and the queue is unchanged. So is an integer attribute beyond
        :data:`EXACT_INTEGER` in magnitude (the kernel compares floats), and an
        id that is not exactly a ``str`` or an ``int`` is a ``TypeError`` (an id
        whose hash could change would leave an entry no one can remove).
        """
        identity = self._identity(request)  # _identity_of, inline: once per request
        if type(identity) is not str and type(identity) is not int:
            raise _wrong_id(identity)
        if self._bare:
            attributes: Mapping[str, Any] = {}  # a dict, whose type the kernel checks at once
            plain = True
        else:
            attributes, plain = self._attributes_of(request, identity)
        lock = self._lock
        lock.acquire()
        try:
            self._pin = None
            now = self._clock()
            serial = self._serial
            kind = type(now)
            if plain and (kind is float or kind is int) and identity not in self._ids:
                # nothing the kernel could refuse: deferred, absorbed in one
                # extend by the next operation that reads the queue
                self._pending.append((identity, attributes, serial, now, request))
                self._ids.add(identity)
                self._serial = serial + 1
                return
            # a refusal, or a value the kernel converts: its own append decides
            self._settle()
            made = self._queue.append(
                self._policy, identity, attributes, serial=serial, now=now, carried=request
            )
            if type(made) is Failure:  # not isinstance: an ABC check on every request
                raise ValueError(str(made.failure()))
            self._serial = serial + 1
            self._queue = made.unwrap()
            self._ids.add(identity)
        finally:
            lock.release()

    def _read(self, request: R) -> tuple[Any, Mapping[str, Any], R]:
        """What the queue reads from ``request`` to prepend it (outside the lock:
        the getters are the host's code)."""
        identity = self._identity_of(request)
        return identity, self._attributes_of(request, identity, prepended=True)[0], request

    def _prepended(
        self, queue: WaitingQueue, serial: int, read: tuple[Any, Mapping[str, Any], R], now: float
    ) -> tuple[WaitingQueue, int]:
        """A request, as :meth:`_read` read it, prepended to a version being built:
        the new version and the next serial, which the caller commits (nothing of
        ``self`` changes here)."""
        identity, attributes, request = read
        join = queue.requeue_preempted if self._prepend_resumed else queue.append
        made = join(self._policy, identity, attributes, serial=serial, now=now, carried=request)
        if type(made) is Failure:  # not isinstance: an ABC check on every request
            raise ValueError(str(made.failure()))
        return made.unwrap(), serial + 1

    def prepend_request(self, request: R) -> None:
        """Put ``request`` back: resumed, at the front, ahead of every key (or, with
        ``prepend_resumed=False``, by its keys like a new request). Refused as
        :meth:`add_request` refuses."""
        read = self._read(request)
        lock = self._lock
        lock.acquire()
        try:
            self._pin = None
            self._settle()
            self._queue, self._serial = self._prepended(
                self._queue, self._serial, read, self._clock()
            )
            self._ids.add(read[0])
        finally:
            lock.release()

    def prepend_requests(self, requests: Iterable[R]) -> None:
        """Prepend each request of ``requests`` (any iterable, another queue
        included) one by one in iteration order, as ``deque.extendleft`` does: the
        last one ends up first. All or nothing: if one is refused (a
        ``ValueError``), none is queued.

        ``requests`` is read whole first, outside the lock (it may be this very
        queue), then the batch is built and committed under it.
        """
        batch = [self._read(request) for request in requests]
        lock = self._lock
        lock.acquire()
        try:
            self._pin = None
            self._settle()
            queue, serial = self._queue, self._serial
            now = self._clock()  # one moment for the batch
            for read in batch:
                queue, serial = self._prepended(queue, serial, read, now)
            self._queue, self._serial = queue, serial
            self._ids.update([read[0] for read in batch])  # a list: one C loop, seen at once
        finally:
            lock.release()

    def pop_request(self) -> R:
        """Take the next request: the one the last :meth:`peek_request` returned if
        nothing changed the queue since, otherwise the policy's selection now.
        An empty queue is an ``IndexError``."""
        lock = self._lock
        lock.acquire()
        try:
            if self._pending:
                self._settle()  # a pin, when set, is older than any pending add: none is
            keys: tuple[float, ...]
            if self._deferred:  # the next of the dispatch order, read; its removal deferred
                taken = self._taken
                at = len(taken) - self._ahead_from  # the next pair: read ahead, or read now
                ahead = self._ahead
                pair = ahead[at] if at < len(ahead) else self._read_ahead()
                if pair is None:
                    raise IndexError("pop from an empty waiting queue")
                taken.append(pair)
                entry = pair[0]
                self._ids.discard(entry.identity)
                if self._counted_later:
                    request: R = entry.carried  # type: ignore[assignment]  # what add_request gave
                    return request
                keys = pair[1]
            else:
                pinned = self._pin
                if pinned is None:
                    # one admission attempt whose fit the scheduler has checked
                    moment = _ANY_MOMENT if self._timeless else Moment(self._clock())
                    pinned = select_entry(self._queue, self._policy, moment)
                    if pinned is None:
                        raise IndexError("pop from an empty waiting queue")
                else:
                    self._pin = None
                entry, keys = pinned
                self._queue = self._queue.without(entry)
                self._ids.discard(entry.identity)
            warn = self._count(entry, keys)
        finally:
            lock.release()
        if warn:
            self._warn_run()
        popped: R = entry.carried  # type: ignore[assignment]  # what add_request gave
        return popped

    def peek_request(self) -> R:
        """The request :meth:`pop_request` would take, pinned until the next pop,
        add, prepend or remove (so the same request even if the clock moves). An
        empty queue is an ``IndexError``."""
        lock = self._lock
        lock.acquire()  # the selection and its pin, at once
        try:
            if self._pending:
                self._settle()
            if self._deferred:  # the next of the dispatch order, which the next pop takes
                at = len(self._taken) - self._ahead_from  # the next pair: read ahead, or read now
                ahead = self._ahead
                pair = ahead[at] if at < len(ahead) else self._read_ahead()
                if pair is None:
                    raise IndexError("peek from an empty waiting queue")
                front: R = pair[0].carried  # type: ignore[assignment]  # what add_request gave
                return front
            pinned = self._pin
            if pinned is None:
                moment = _ANY_MOMENT if self._timeless else Moment(self._clock())
                pinned = select_entry(self._queue, self._policy, moment)
                if pinned is None:
                    raise IndexError("peek from an empty waiting queue")
                self._pin = pinned
        finally:
            lock.release()
        request: R = pinned[0].carried  # type: ignore[assignment]  # what add_request gave
        return request

    def remove_request(self, request: R) -> None:
        """Remove the waiting request with ``request``'s id; one that is not waiting
        is a ``ValueError``."""
        identity = self._identity(request)
        if type(identity) is not str and type(identity) is not int:
            # never queued (add_request refuses such ids): not waiting
            raise ValueError(f"request {_id_text(identity)}: is not waiting")
        lock = self._lock
        lock.acquire()
        try:
            self._pin = None
            self._settle()
            made = self._queue.remove(identity)
            if type(made) is Failure:  # not isinstance: an ABC check on every request
                raise ValueError(str(made.failure()))
            self._queue = made.unwrap()
            self._ids.discard(identity)
        finally:
            lock.release()

    def remove_requests(self, requests: Iterable[R]) -> None:
        """Remove every waiting request among ``requests``; the others are ignored
        (vLLM calls this on every finished request, waiting or not)."""
        get = self._identity
        identities = [get(request) for request in requests]  # the getter: outside the lock
        lock = self._lock
        lock.acquire()
        try:
            self._pin = None
            self._settle()
            queue, waiting = self._queue, self._ids
            gone: list[str | int] = []
            for identity in identities:
                if type(identity) is not str and type(identity) is not int:
                    continue  # never queued: add_request refuses such ids
                if identity not in waiting:
                    continue  # one set lookup for a request that is not waiting
                entry = queue.entry_of(identity)
                if entry is not None:
                    queue = queue.without(entry)
                    gone.append(identity)
            self._queue = queue
            waiting.difference_update(gone)  # after the commit, at once (len and bool read it)
        finally:
            lock.release()

    def __bool__(self) -> bool:
        # vLLM asks every admission, of both its queues: one set's size, no lock and
        # no absorption (_ids holds every waiting id, pending or queued; an
        # operation changes it under the lock, after the queue)
        return bool(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[R]:
        """The waiting requests in dispatch order now (the order repeated pops at
        this moment would take them), lazily, O(log n) each after the first on
        the ``fifo``, ``static`` and ``lanes`` paths. Iteration reads the queue
        as it was when it started, whatever happens to the queue meanwhile."""
        order = dispatch_order(self._held(), self._policy, Moment(self._clock()))
        return (selection.entry.carried for selection in order)  # type: ignore[misc]

    def __getitem__(self, index: int) -> R:
        """The request at ``index`` of the iteration order now, as a deque answers
        ``queue[index]``: negative from the end, an ``IndexError`` out of range,
        a ``TypeError`` for anything but an integer (slices included, as a
        deque refuses them). O(log n) on the ``fifo`` and ``static`` paths, fast
        on ``lanes`` (:func:`~policy.waiting.dispatched_at`); reads the queue as
        it is, without the lock, like iteration."""
        if type(index) is not int:
            try:
                index = operator.index(index)
            except TypeError:
                raise TypeError(
                    f"waiting queue index must be an integer, not {type(index).__name__}"
                ) from None
        queue = self._held()  # one version: it never changes
        size = len(queue)
        position = index + size if index < 0 else index
        if not 0 <= position < size:
            raise IndexError("waiting queue index out of range")
        entry = dispatched_at(queue, self._policy, Moment(self._clock()), position)
        request: R = entry.carried  # type: ignore[assignment]  # what add_request gave
        return request

    def __contains__(self, request: object) -> bool:
        """Whether a request with ``request``'s id is waiting (False for an object
        without one)."""
        try:
            identity = self._identity(request)
        except AttributeError:  # no id: not waiting
            return False
        if type(identity) is not str and type(identity) is not int:
            return False  # never queued: add_request refuses such ids
        return self._held().entry_of(identity) is not None

    # --- statistics ----------------------------------------------------------------

    def _count(self, entry: WaitingEntry, keys: tuple[float, ...]) -> bool:
        """Count one admission by its class (see :class:`QueueStats`); whether the
        run's warning is due now (logged by the caller, outside the lock)."""
        kind: object
        if entry.resumed:
            kind = "resumed"
        elif not keys:
            kind = "fifo"
        else:
            first = keys[0]
            # NaN objects hash apart: one class for all of them
            kind = first if first == first else "nan"  # noqa: PLR0124 - the NaN test
        counts = self._admissions
        seen = counts.get(kind)
        if seen is None:
            if len(counts) >= MAX_CLASSES:
                kind = "other"
            seen = counts.get(kind, 0)
        counts[kind] = seen + 1
        watched = self._run_value
        if watched is None:
            return False
        if kind == watched:
            self._run += 1
            if self._run == _RUN_WARNING and not self._warned:
                self._warned = True
                return True
        else:
            self._run = 0
        return False

    def _count_all(self, taken: list[tuple[WaitingEntry, tuple[float, ...]]]) -> None:
        """Count deferred pops, in order, when they are removed (no run is watched:
        no warning can be due)."""
        count = self._count
        for entry, keys in taken:
            count(entry, keys)

    def _warn_run(self) -> None:
        """Log the run of consecutive admissions of the watched class, once per queue."""
        watched = self._run_value
        assert watched is not None
        _LOG.warning(
            "%d consecutive admissions of class %s: long requests are overtaking"
            " short ones; consider a larger short threshold or a longer wait limit",
            _RUN_WARNING,
            _class_label(watched, self._class_names),
        )

    def stats(self) -> QueueStats:
        """Admissions per class of the policy's first key, and the current run of
        consecutive admissions of the watched class (aged long, for the Ascend
        lanes).

        >>> from types import SimpleNamespace as Req
        >>> queue = short_request_first_queue(threshold=256, clock=lambda: 0.0)
        >>> for name, tokens in (("a", 10), ("b", 300)):
        ...     queue.add_request(Req(request_id=name, num_prompt_tokens=tokens))
        >>> _ = queue.pop_request(), queue.pop_request()
        >>> queue.stats()
        QueueStats(admissions={'short': 1, 'long': 1}, run_class='aged long', run=0, waiting=0)
        """
        names = self._class_names
        lock = self._lock
        lock.acquire()  # the counts, the run and the size of one moment
        try:
            self._settle()
            counted = list(self._admissions.items())
            run = self._run
            waiting = len(self._queue)
        finally:
            lock.release()
        admissions: dict[str, int] = {}
        for kind, count in counted:
            label = _class_label(kind, names)
            admissions[label] = admissions.get(label, 0) + count
        watched = self._run_value
        return QueueStats(
            admissions,
            None if watched is None else _class_label(watched, names),
            run,
            waiting,
        )


# --- constructors --------------------------------------------------------------------


def queue_from_policy(
    policy: QueuePolicy | Mapping[str, Any] | str,
    attributes: Mapping[str, Getter] = DEFAULT_ATTRIBUTES,
    *,
    clock: Callable[[], float] = time.monotonic,
    prepend_resumed: bool = True,
    class_names: Mapping[float, str] | None = None,
    run_class: float | None = None,
) -> WaitingRequestQueue[Any]:
    """A drop-in queue ordered by ``policy``: a :class:`~policy.waiting.QueuePolicy`,
    or a policy document (its JSON text, or the value a JSON reader made of it;
    a document the kernel refuses is a ``ValueError`` with its reason).

    >>> queue = queue_from_policy({"attributes": {"priority": "visible"}, "keys": ["-priority"]})
    >>> queue.policy.path
    'static'
    >>> queue_from_policy('{"keys": ["prmpt"]}')
    Traceback (most recent call last):
    ...
    ValueError: keys[0]: unknown name 'prmpt': not a declared attribute, constant or context variable (in key `prmpt`)
    """  # noqa: E501 - a doctest's expected line
    if isinstance(policy, str):
        policy = _loaded(load_policy_text(policy))
    elif not isinstance(policy, QueuePolicy) and isinstance(policy, Mapping):
        policy = _loaded(load_policy(policy))
    return WaitingRequestQueue(
        policy,
        attributes=attributes,
        clock=clock,
        prepend_resumed=prepend_resumed,
        class_names=class_names,
        run_class=run_class,
    )


def _loaded(made: Result[QueuePolicy, PolicyError]) -> QueuePolicy:
    if type(made) is Failure:  # not isinstance: an ABC check on every request
        raise ValueError(str(made.failure()))
    return made.unwrap()


def fcfs_queue(
    *,
    attributes: Mapping[str, Getter] = DEFAULT_ATTRIBUTES,
    clock: Callable[[], float] = time.monotonic,
) -> WaitingRequestQueue[Any]:
    """vLLM's FCFS queue: queue order; a prepended request goes to the front.

    >>> fcfs_queue().policy.path
    'fifo'
    """
    return WaitingRequestQueue(fifo(), attributes=attributes, clock=clock)


def priority_queue(
    preempted_first: bool = False,
    *,
    attributes: Mapping[str, Getter] = DEFAULT_ATTRIBUTES,
    clock: Callable[[], float] = time.monotonic,
) -> WaitingRequestQueue[Any]:
    """vLLM's priority order (:func:`~policy.waiting.vllm_priority`): lower
    ``priority``, then earlier ``arrival_time``, then queue order; a prepended
    (preempted or skipped) request is re-inserted by its keys, as vLLM's
    ``PriorityRequestQueue.prepend_request`` pushes it onto its heap.

    ``preempted_first=True`` puts prepended requests first *within their
    priority* (ahead of the requests of the same priority that were added, never
    ahead of a better priority; among themselves by ``arrival_time``), the order
    the fixes proposed for vLLM #41951 give: the queue marks each request it
    queued by ``prepend_request`` (the attribute :data:`PREPENDED`).

    >>> from types import SimpleNamespace as Req
    >>> for preempted_first in (False, True):
    ...     queue = priority_queue(preempted_first, clock=lambda: 0.0)
    ...     queue.add_request(Req(request_id="new", priority=0, arrival_time=1.0))
    ...     queue.add_request(Req(request_id="later", priority=10, arrival_time=0.5))
    ...     queue.prepend_request(Req(request_id="preempted", priority=0, arrival_time=2.0))
    ...     print([r.request_id for r in queue])
    ['new', 'preempted', 'later']
    ['preempted', 'new', 'later']
    >>> priority_queue(preempted_first="yes")
    Traceback (most recent call last):
    ...
    TypeError: preempted_first must be True or False, not 'yes'
    """
    if preempted_first is not True and preempted_first is not False:
        raise TypeError(f"preempted_first must be True or False, not {shown(preempted_first)}")
    return WaitingRequestQueue(
        vllm_priority(preempted_first),
        attributes=attributes,
        clock=clock,
        prepend_resumed=False,
    )


def short_request_first_queue(
    threshold: int = 256,
    long_max_wait_ms: float = 0.0,
    *,
    attributes: Mapping[str, Getter] = DEFAULT_ATTRIBUTES,
    clock: Callable[[], float] = time.monotonic,
) -> WaitingRequestQueue[Any]:
    """vLLM-Ascend's ShortRequestFirst order (:func:`~policy.waiting.ascend_fcfs_lanes`):
    immediate (recovery) requests; then a long request that has waited at least
    ``long_max_wait_ms`` (0 disables aging); then short ones
    (``num_prompt_tokens <= threshold``); then long ones; queue order within each.

    Validated as the Ascend configuration is: ``threshold`` a non-negative int,
    ``long_max_wait_ms`` a number at least 0 (a negative value is a
    ``ValueError``; a wrong type a ``TypeError``; a non-finite one a ``ValueError``).

    >>> short_request_first_queue(threshold=-1)
    Traceback (most recent call last):
    ...
    ValueError: threshold must be a non-negative int, not -1
    >>> short_request_first_queue(long_max_wait_ms=-0.5)
    Traceback (most recent call last):
    ...
    ValueError: long_max_wait_ms must be at least 0 (0 disables aging), not -0.5
    """
    if isinstance(threshold, bool) or not isinstance(threshold, int):
        raise TypeError(f"threshold must be an int (prompt tokens), not {shown(threshold)}")
    if threshold < 0:
        raise ValueError(f"threshold must be a non-negative int, not {shown(threshold)}")
    if isinstance(long_max_wait_ms, bool) or not isinstance(long_max_wait_ms, int | float):
        raise TypeError(f"long_max_wait_ms must be a number, not {shown(long_max_wait_ms)}")
    if not long_max_wait_ms >= 0:  # NaN too
        raise ValueError(
            f"long_max_wait_ms must be at least 0 (0 disables aging), not {shown(long_max_wait_ms)}"
        )
    if not math.isfinite(long_max_wait_ms):
        raise ValueError(f"long_max_wait_ms must be finite, not {shown(long_max_wait_ms)}")
    policy = ascend_fcfs_lanes(short_tokens=threshold, max_wait=long_max_wait_ms / 1000.0)
    return WaitingRequestQueue(
        policy,
        attributes=attributes,
        clock=clock,
        class_names=ASCEND_CLASS_NAMES,
        run_class=1.0,
    )


# --- installing ----------------------------------------------------------------------


#: The queues vLLM's ``Scheduler`` builds from its factory (``create_request_queue``):
#: ``waiting`` always, ``kv_holding_waiting`` from vLLM 0.33 on.
FACTORY_QUEUES: Final = ("waiting", "kv_holding_waiting")


def install_waiting_queue(
    scheduler: Any,
    queue: WaitingRequestQueue[Any] | Callable[[], WaitingRequestQueue[Any]],
) -> WaitingRequestQueue[Any]:
    """Make ``queue`` the ``waiting`` queue of a vLLM-like ``scheduler``; or, when
    ``queue`` is a function that makes a queue (``fcfs_queue``, a ``lambda``),
    give every queue the scheduler built from vLLM's factory (:data:`FACTORY_QUEUES`
    it has) a queue of its own, all or none.

    Refused with a ``RuntimeError`` while a queue to replace still holds
    requests (they would be lost), when a queue to install holds requests (the
    scheduler does not know them), and when ``queue`` is one queue but the
    scheduler also has ``kv_holding_waiting`` (one queue cannot be two; pass
    the function). Installing the queue that is already installed does
    nothing. Returns the ``waiting`` queue.

    >>> from types import SimpleNamespace
    >>> scheduler = SimpleNamespace(waiting=[])
    >>> install_waiting_queue(scheduler, fcfs_queue()) is scheduler.waiting
    True
    >>> scheduler = SimpleNamespace(waiting=[], kv_holding_waiting=[])
    >>> install_waiting_queue(scheduler, fcfs_queue) is scheduler.waiting
    True
    >>> scheduler.kv_holding_waiting
    WaitingRequestQueue(path='fifo', waiting=0)
    """
    if not isinstance(queue, WaitingRequestQueue) and callable(queue):
        return _install_made(scheduler, queue)
    if not isinstance(queue, WaitingRequestQueue):
        raise TypeError(f"queue must be a WaitingRequestQueue, not {type(queue).__name__}")
    try:
        current: object = scheduler.waiting
    except AttributeError:
        raise TypeError(
            f"scheduler must have a waiting queue, not {type(scheduler).__name__}"
        ) from None
    if current is queue:
        return queue
    if getattr(scheduler, FACTORY_QUEUES[1], None) is not None:
        raise RuntimeError(
            f"the scheduler also has {FACTORY_QUEUES[1]}: pass a function that makes a"
            " queue (install_waiting_queue(scheduler, fcfs_queue)), so each gets its own"
        )
    _check_replaceable(current, queue)
    scheduler.waiting = queue
    _LOG.info("installed %r as the scheduler's waiting queue", queue)
    return queue


def _check_replaceable(current: object, queue: WaitingRequestQueue[Any]) -> None:
    """Refuse to replace a queue that holds requests, or to install one that does."""
    if current:
        held = len(current) if isinstance(current, Sized) else "some"
        raise RuntimeError(
            f"the scheduler's waiting queue still holds {held} request(s):"
            " install the new queue before any request is added"
        )
    if queue:
        raise RuntimeError(
            f"the queue to install already holds {len(queue)} request(s) the scheduler"
            " does not know"
        )


def _install_made(
    scheduler: Any, make: Callable[[], WaitingRequestQueue[Any]]
) -> WaitingRequestQueue[Any]:
    """:func:`install_waiting_queue` with a function: a new queue for each queue of
    :data:`FACTORY_QUEUES` the scheduler has, each checked as one queue is, then
    all installed at once (none when one is refused)."""
    if not hasattr(scheduler, FACTORY_QUEUES[0]):
        raise TypeError(f"scheduler must have a waiting queue, not {type(scheduler).__name__}")
    made: dict[str, WaitingRequestQueue[Any]] = {}
    for name in FACTORY_QUEUES:
        current = getattr(scheduler, name, None)
        if current is None and name != FACTORY_QUEUES[0]:
            continue  # a scheduler before vLLM 0.33: no second queue
        queue = make()
        if not isinstance(queue, WaitingRequestQueue):
            raise TypeError(f"make must return a WaitingRequestQueue, not {type(queue).__name__}")
        if any(queue is other for other in made.values()):
            raise RuntimeError(
                f"{name}: make returned the same queue twice (one queue cannot be two)"
            )
        if current is not queue:
            try:
                _check_replaceable(current, queue)
            except RuntimeError as refused:
                raise RuntimeError(f"{name}: {refused}") from None
        made[name] = queue
    for name, queue in made.items():
        setattr(scheduler, name, queue)
    _LOG.info("installed %r on the scheduler's %s", made[FACTORY_QUEUES[0]], " and ".join(made))
    return made[FACTORY_QUEUES[0]]


# --- the scheduler class (needs vLLM; made on first use) -----------------------------

if TYPE_CHECKING:
    #: vLLM's ``Scheduler`` (``AsyncScheduler``) with every waiting queue from a kernel
    #: policy (policy/adapters/vllm_scheduler.py; docs/adapters.md, "vllm serve").
    KernelScheduler: type[Any]
    KernelAsyncScheduler: type[Any]
else:

    def __getattr__(name: str) -> Any:
        """``KernelScheduler`` and ``KernelAsyncScheduler``, made on first use: this
        module imports without vLLM."""
        if name in ("KernelScheduler", "KernelAsyncScheduler"):
            from policy.adapters.vllm_scheduler import kernel_scheduler_class  # noqa: PLC0415 - it imports this module

            return kernel_scheduler_class(asynchronous=name == "KernelAsyncScheduler")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
