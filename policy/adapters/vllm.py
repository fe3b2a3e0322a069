"""A drop-in waiting queue for vLLM-style schedulers, on the immutable kernel queue.

:class:`WaitingRequestQueue` has the method set of vLLM's ``RequestQueue``
(``vllm/v1/core/sched/request_queue.py``) plus ``__contains__`` and indexing,
and needs nothing from vLLM: requests are duck-typed, read through a small
replaceable mapping of attribute getters (:data:`DEFAULT_ATTRIBUTES`).

Theory of operation. The queue holds one version of the kernel's
:class:`~policy.waiting.WaitingQueue` and replaces it, under ``self._lock``,
with the version the kernel returns; every version is immutable, so a reader
may keep the one it has. Beside it:

- ``_requests``: the waiting requests by id, the only place the queue keeps
  them. Its entries in the kernel carry only ids; a request leaves this map
  the moment it is popped or removed, so the queue never keeps a request that
  left it alive. ``len`` and ``bool`` (which vLLM asks on every admission)
  read its size, and ``in`` looks an id up in it. It is a
  :class:`~policy.waiting.fast.identities.Shards`, not one dict: a dict of
  N requests rebuilds its whole table every N / 2 adds or so (a 29 ms call at
  100,000 waiting inside vLLM's loop);
- the two batches of :mod:`policy.adapters.batches`: the arrivals not yet
  joined (one ``extend`` for up to :data:`~policy.adapters.batches.CHUNK`
  adds) and, under a policy whose selection reads no moment (``fcfs_queue``,
  ``priority_queue``), the admissions taken from the held version and not yet
  removed from it (one ``without_each`` for up to a chunk of pops). The next
  operation that needs the version whole, or fills a chunk, settles both
  (:meth:`_settled`);
- ``_pin``: under a policy whose selection reads the clock, the entry the
  last ``peek_request`` chose, which the next ``pop_request`` takes even if
  the clock moved in between (vLLM peeks, checks the request fits, then pops);
- the statistics (:mod:`policy.adapters.stats`).

What it differs in from vLLM's queues and from vLLM-Ascend's
ShortRequestFirst queue, and why, is listed in docs/adapters.md.

The clock is injected (default ``time.monotonic``): ``waited`` is measured on
it from when the queue received the request. The kernel does neither I/O nor
time; pyproject.toml's ``kernel-pure`` contract allows exactly this module's
``time``, ``threading`` and ``logging`` imports (the log says what was
installed).
"""

from __future__ import annotations

import logging
import math
import numbers
import operator
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from operator import attrgetter
from types import MappingProxyType
from typing import Any, Final, Generic, TypeVar

from returns.result import Failure, Result

from policy.adapters.batches import ANY_MOMENT, CHUNK, Admissions, Arrivals
from policy.adapters.stats import MAX_CLASSES, AdmissionCounts, QueueStats
from policy.text import cut, represent
from policy.waiting import (
    Moment,
    PolicyError,
    QueuePolicy,
    WaitingEntry,
    WaitingQueue,
    ascend_fcfs_lanes,
    dispatch_order,
    dispatched_at,
    fifo,
    load_policy,
    load_policy_text,
    selection_path,
    vllm_priority,
)
from policy.waiting.fast.identities import Shards
from policy.waiting.numbers import shown

__all__ = [
    "ASCEND_CLASS_NAMES",
    "ASCEND_RUN_ADVICE",
    "DEFAULT_ATTRIBUTES",
    "EXACT_INTEGER",
    "FACTORY_QUEUES",
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

R = TypeVar("R")

_LOG: Final = logging.getLogger(__name__)

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

#: What the run warning of :func:`short_request_first_queue` advises when aged long
#: requests keep being admitted.
ASCEND_RUN_ADVICE: Final = (
    "long requests are overtaking short ones: consider a larger short threshold or a"
    " longer wait limit"
)

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


def _is_inexact(value: Any) -> bool:
    """Whether ``value`` is an integer (an ``int``, or another ``numbers.Integral``
    such as numpy's) beyond :data:`EXACT_INTEGER` in magnitude: two of them may be
    one float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return False
    return not -EXACT_INTEGER <= int(value) <= EXACT_INTEGER


class WaitingRequestQueue(Generic[R]):
    """vLLM's ``RequestQueue`` interface over the kernel's waiting queue.

    ``policy`` decides the order (any :class:`~policy.waiting.QueuePolicy`);
    ``attributes`` maps ``"request_id"`` (the request's identity, which no key
    reads) and every attribute the policy's keys read to a getter on the request
    object (a policy reading another is refused here, naming the ones offered);
    ``clock`` gives the admission clock's ``now`` (seconds). ``prepend_resumed``
    (default) queues a prepended request resumed, ahead of every key; otherwise
    it is added by its keys like a new one. ``class_names`` and ``run_class``
    name the first key's values in :meth:`stats`; a run of the watched class
    (``run_class``) is logged once, with ``run_advice`` if given.

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
        "_arrivals",
        "_attributes",
        "_bare",
        "_clock",
        "_counted_later",
        "_counts",
        "_identity",
        "_lock",
        "_marks_prepended",
        "_pin",
        "_policy",
        "_prepend_resumed",
        "_queue",
        "_requests",
        "_serial",
        "_timeless",
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
        run_advice: str = "",
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
        if "request_id" not in attributes:
            raise ValueError("attributes lacks 'request_id', which names the request")
        read = sorted(policy.attributes_read - {PREPENDED})
        # request_id names the request (text, in vLLM): no attribute a key may read
        unoffered = [name for name in read if name == "request_id" or name not in attributes]
        if unoffered:
            offered = sorted([PREPENDED, *(str(n) for n in attributes if n != "request_id")])
            raise ValueError(
                f"the policy reads {shown(unoffered[0])}, which the requests do not offer as"
                " an attribute"
                + (" ('request_id' names the request)" if unoffered[0] == "request_id" else "")
                + f"; the attributes offered are {cut(', '.join(offered), 400)}"
            )
        if not callable(clock):
            raise TypeError(f"clock must be callable, not {shown(clock)}")
        if prepend_resumed is not True and prepend_resumed is not False:
            raise TypeError(f"prepend_resumed must be True or False, not {shown(prepend_resumed)}")
        if run_class is not None and (
            isinstance(run_class, bool) or not isinstance(run_class, float | int)
        ):
            raise TypeError(f"run_class must be a number or None, not {shown(run_class)}")
        if type(run_advice) is not str:
            raise TypeError(f"run_advice must be text, not {shown(run_advice)}")
        self._policy = policy
        # the fifo and static paths' selection reads no moment: pops are batched
        self._timeless = selection_path(policy) in ("fifo", "static")
        self._identity: Getter = attributes["request_id"]
        # only the attributes the keys read: others would cost time and memory per entry
        self._attributes: tuple[tuple[str, Getter], ...] = tuple(
            (name, attributes[name]) for name in read
        )
        self._marks_prepended = PREPENDED in policy.attributes_read
        self._bare = not self._attributes and not self._marks_prepended  # no attribute read
        self._clock = clock
        self._prepend_resumed = prepend_resumed
        self._counts = AdmissionCounts(
            MappingProxyType(dict(class_names or {})),
            None if run_class is None else float(run_class),
            run_advice,
        )
        # batched admissions with no run to watch are counted when their chunk is
        # removed, all at once (no warning can be due at a pop)
        self._counted_later = self._timeless and not self._counts.watches_run
        self._lock = threading.Lock()
        self._queue = WaitingQueue()
        self._requests: Shards[str | int, R] = Shards()
        self._arrivals = Arrivals()
        self._admissions: Admissions | None = None
        self._pin: tuple[WaitingEntry, tuple[float, ...]] | None = None
        self._serial = 0

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
        """The current version of the kernel queue (it never changes), for running
        the kernel's own functions on it (``select_waiting``, ...). Its entries
        carry no request: look requests up by id in the queue (``in``). Reading
        it costs nothing; making a new version from it takes the identity index
        with it, so this queue's next call builds its own, O(n) once."""
        with self._lock:
            return self._settled()

    def __repr__(self) -> str:
        return f"WaitingRequestQueue(path={selection_path(self._policy)!r}, waiting={len(self)})"

    def _settled(self) -> WaitingQueue:
        """The held version with the taken admissions removed and the arrivals
        joined (the caller holds the lock)."""
        admissions = self._admissions
        if admissions is not None:
            if admissions.count:
                self._queue = admissions.removed(self._queue)
                if self._counted_later:
                    self._counts.counted_all(admissions.taken())
            self._admissions = None
        if self._arrivals.count:
            self._queue = self._arrivals.joined(self._queue, self._policy)
        return self._queue

    # --- reading a request --------------------------------------------------------

    def _identity_of(self, request: R) -> str | int:
        """The request's id: a ``str`` or an ``int`` exactly (a ``TypeError``
        otherwise, before anything is queued)."""
        identity = self._identity(request)
        if type(identity) is str or type(identity) is int:
            return identity
        raise _wrong_id(identity)

    def _attributes_of(
        self, request: R, identity: object, prepended: bool
    ) -> tuple[dict[str, Any], bool]:
        """The attributes the keys read (``prepended`` the queue's own, when read),
        and whether each is one the kernel takes as it is: exactly a float, a bool,
        or an int it converts exactly (any other number, numpy's included, the
        kernel's own append converts: :func:`~policy.waiting.numbers.as_float`);
        an integer beyond :data:`EXACT_INTEGER` in magnitude is a ``ValueError``."""
        attributes: dict[str, Any] = {}
        plain = True
        for name, get in self._attributes:
            value = get(request)
            attributes[name] = value
            kind = type(value)
            if not (
                kind is float
                or kind is bool
                or (kind is int and -EXACT_INTEGER <= value <= EXACT_INTEGER)
            ):
                plain = False
                if _is_inexact(value):
                    raise _inexact(identity, name, value)
        if self._marks_prepended:
            attributes[PREPENDED] = prepended
        return attributes, plain

    # --- vLLM's RequestQueue ------------------------------------------------------

    def add_request(self, request: R) -> None:
        """Queue ``request`` by the policy's keys, waiting from now.

        A request whose id is already waiting, or whose attributes the kernel
        refuses (not a number, ...), is a ``ValueError`` with the kernel's
        reason, and the queue is unchanged. So is an integer attribute beyond
        :data:`EXACT_INTEGER` in magnitude (the kernel compares floats), and an
        id that is not exactly a ``str`` or an ``int`` is a ``TypeError`` (an id
        whose hash could change would leave an entry no one can remove).
        """
        identity = self._identity(request)  # the host's getters: outside the lock
        if type(identity) is not str and type(identity) is not int:
            raise _wrong_id(identity)
        if self._bare:
            attributes, plain = _NO_ATTRIBUTES, True
        else:
            attributes, plain = self._attributes_of(request, identity, prepended=False)
        with self._lock:
            self._pin = None
            now = self._clock()
            serial = self._serial
            if plain and type(now) is float and self._requests.added(identity, request):
                # nothing the kernel could refuse: joined with the step's other arrivals
                if self._arrivals.add(identity, attributes, serial, now) >= CHUNK:
                    self._settled()
            else:  # a refusal, or a value the kernel converts: its own append decides
                made = self._settled().append(
                    self._policy, identity, attributes, serial=serial, now=now
                )
                self._queue = _accepted(made)
                self._requests[identity] = request
            self._serial = serial + 1

    def prepend_request(self, request: R) -> None:
        """Put ``request`` back: resumed, at the front, ahead of every key (or, with
        ``prepend_resumed=False``, by its keys like a new request). Refused as
        :meth:`add_request` refuses."""
        self.prepend_requests((request,))

    def prepend_requests(self, requests: Iterable[R]) -> None:
        """Prepend each request of ``requests`` (any iterable, another queue
        included) one by one in iteration order, as ``deque.extendleft`` does: the
        last one ends up first. All or nothing: if one is refused (a
        ``ValueError``), none is queued.

        ``requests`` is read whole first, outside the lock (it may be this very
        queue), then the batch is built and committed under it.
        """
        batch = []
        for request in requests:
            identity = self._identity_of(request)
            batch.append(
                (identity, self._attributes_of(request, identity, prepended=True)[0], request)
            )
        with self._lock:
            self._pin = None
            queue, serial = self._settled(), self._serial
            now = self._clock()  # one moment for the batch
            for identity, attributes, _ in batch:
                join = queue.requeue_preempted if self._prepend_resumed else queue.append
                queue = _accepted(join(self._policy, identity, attributes, serial=serial, now=now))
                serial += 1
            self._queue, self._serial = queue, serial
            for identity, _, request in batch:
                self._requests[identity] = request

    def pop_request(self) -> R:
        """Take the next request: the one the last :meth:`peek_request` returned if
        nothing changed the queue since, otherwise the policy's selection now.
        An empty queue is an ``IndexError``."""
        with self._lock:
            if self._timeless:
                admissions = self._admissions
                if admissions is None or self._arrivals.count:
                    admissions = self._admitting()
                chosen = admissions.take()
                if chosen is None:
                    raise IndexError("pop from an empty waiting queue")
                request = self._requests.pop(chosen[0].identity)
                if admissions.count >= CHUNK:
                    self._settled()
                if self._counted_later:
                    return request  # counted when the chunk is removed (_settled)
            else:
                chosen = self._pinned(take=True)
                if chosen is None:
                    raise IndexError("pop from an empty waiting queue")
                request = self._requests.pop(chosen[0].identity)
            warn = self._counts.counted(chosen[0], chosen[1])
        if warn:
            self._counts.warn()
        return request

    def peek_request(self) -> R:
        """The request :meth:`pop_request` would take, pinned until the next pop,
        add, prepend or remove (so the same request even if the clock moves). An
        empty queue is an ``IndexError``."""
        with self._lock:
            if self._timeless:
                admissions = self._admissions
                if admissions is None or self._arrivals.count:
                    admissions = self._admitting()
                chosen = admissions.next()
            else:
                chosen = self._pinned(take=False)
            if chosen is None:
                raise IndexError("peek from an empty waiting queue")
            return self._requests[chosen[0].identity]

    def _admitting(self) -> Admissions:
        """New admissions of the held version, its arrivals joined first, under a
        policy whose selection reads no moment: its dispatch order is any moment's,
        so pops take it in turn (the caller holds the lock)."""
        queue = self._settled()
        admissions = self._admissions = Admissions(queue, self._policy)
        return admissions

    def _pinned(self, take: bool) -> tuple[WaitingEntry, tuple[float, ...]] | None:
        """The pinned selection, or the selection now (pinned by a peek, taken out of
        the held version by a pop); None for an empty queue (the caller holds the lock)."""
        pinned = self._pin
        if pinned is None:
            pinned = self._settled().selected(self._policy, Moment(self._clock()))
            if pinned is None:
                return None
        if take:
            self._pin = None
            self._queue = self._queue.without(pinned[0])
        else:
            self._pin = pinned
        return pinned

    def remove_request(self, request: R) -> None:
        """Remove the waiting request with ``request``'s id; one that is not waiting
        is a ``ValueError``."""
        identity = self._identity(request)
        with self._lock:
            self._pin = None  # a remove clears the pin, even one refused
            if not _is_id(identity) or identity not in self._requests:
                raise ValueError(f"request {_id_text(identity)}: is not waiting")
            self._queue = _accepted(self._settled().remove(identity))
            self._requests.pop(identity)

    def remove_requests(self, requests: Iterable[R]) -> None:
        """Remove every waiting request among ``requests``; the others are ignored
        (vLLM calls this on every finished request, waiting or not)."""
        get = self._identity
        identities = [get(request) for request in requests]  # the getter: outside the lock
        with self._lock:
            self._pin = None
            waiting = self._requests
            gone = {identity for identity in identities if _is_id(identity) and identity in waiting}
            if not gone:
                return  # the usual: finished requests are not waiting
            queue = self._settled()
            self._queue = queue.without_each([queue.entry_of(identity) for identity in gone])  # type: ignore[misc]
            for identity in gone:
                waiting.pop(identity)

    def __bool__(self) -> bool:
        # vLLM asks on every admission, of both its queues: one dict's size, no lock
        return self._requests.size > 0

    def __len__(self) -> int:
        return self._requests.size

    def __contains__(self, request: object) -> bool:
        """Whether a request with ``request``'s id is waiting (False for an object
        without one)."""
        try:
            identity = self._identity(request)
        except AttributeError:  # no id: not waiting
            return False
        return _is_id(identity) and identity in self._requests

    def __iter__(self) -> Iterator[R]:
        """The waiting requests in dispatch order now (the order repeated pops at
        this moment would take them), as they were when iteration started (a
        list, made under the lock: O(n))."""
        with self._lock:
            queue = self._settled()
            requests = self._requests
            order = dispatch_order(queue, self._policy, self._moment())
            return iter([requests[selection.entry.identity] for selection in order])

    def __getitem__(self, index: int) -> R:
        """The request at ``index`` of the iteration order now, as a deque answers
        ``queue[index]``: negative from the end, an ``IndexError`` out of range,
        a ``TypeError`` for anything but an integer (slices included, as a
        deque refuses them). Found without walking the order where the path
        allows (:func:`~policy.waiting.dispatched_at`, which gives the costs)."""
        if type(index) is not int:
            try:
                index = operator.index(index)
            except TypeError:
                raise TypeError(
                    f"waiting queue index must be an integer, not {type(index).__name__}"
                ) from None
        with self._lock:
            queue = self._settled()
            size = len(queue)
            position = index + size if index < 0 else index
            if not 0 <= position < size:
                raise IndexError("waiting queue index out of range")
            entry = dispatched_at(queue, self._policy, self._moment(), position)
            return self._requests[entry.identity]

    def _moment(self) -> Moment:
        return ANY_MOMENT if self._timeless else Moment(self._clock())

    # --- statistics ----------------------------------------------------------------

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
        with self._lock:
            self._settled()  # counts the batched admissions not yet counted
            return self._counts.stats(waiting=len(self._requests))


#: The attributes of every request under a policy whose keys read none (never
#: changed: the kernel only reads attributes).
_NO_ATTRIBUTES: Final[dict[str, Any]] = {}


def _is_id(identity: object) -> bool:
    return type(identity) is str or type(identity) is int


def _accepted(made: Result[WaitingQueue, Any]) -> WaitingQueue:
    """The version the kernel made, or its refusal as a ``ValueError``."""
    if isinstance(made, Failure):
        raise ValueError(str(made.failure()))
    return made.unwrap()


# --- constructors --------------------------------------------------------------------


def queue_from_policy(
    policy: QueuePolicy | Mapping[str, Any] | str,
    attributes: Mapping[str, Getter] = DEFAULT_ATTRIBUTES,
    *,
    clock: Callable[[], float] = time.monotonic,
    prepend_resumed: bool = True,
    class_names: Mapping[float, str] | None = None,
    run_class: float | None = None,
    run_advice: str = "",
) -> WaitingRequestQueue[Any]:
    """A drop-in queue ordered by ``policy``: a :class:`~policy.waiting.QueuePolicy`,
    or a policy document (its JSON text, or the value a JSON reader made of it;
    a document the kernel refuses is a ``ValueError`` with its reason).

    >>> queue = queue_from_policy({"attributes": {"priority": "visible"}, "keys": ["-priority"]})
    >>> selection_path(queue.policy)
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
        run_advice=run_advice,
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

    >>> selection_path(fcfs_queue().policy)
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
    >>> def order(preempted_first: bool) -> list[str]:
    ...     queue = priority_queue(preempted_first, clock=lambda: 0.0)
    ...     queue.add_request(Req(request_id="new", priority=0, arrival_time=1.0))
    ...     queue.add_request(Req(request_id="later", priority=10, arrival_time=0.5))
    ...     queue.prepend_request(Req(request_id="preempted", priority=0, arrival_time=2.0))
    ...     return [r.request_id for r in queue]
    >>> order(False), order(True)
    (['new', 'preempted', 'later'], ['preempted', 'new', 'later'])
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
        run_advice=ASCEND_RUN_ADVICE,
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
