"""The JSON forms of the conformance protocol's inputs and answers (docs/conformance.md).

Every decision's inputs and answer are plain JSON values, the same whether the
implementation is a Python callable or a process speaking JSON lines. This
module writes the spec's values in those forms (the kit's expected answers) and
reads the forms back into kernel values (for implementations given as callables
with the kernel's signature, and for :mod:`oracle.conformance.kernel_server`).

Rotation values use the forms of the replay harness: an event is
:func:`~oracle.harness.rotation_events.event_json`'s object, an answer of
``apply_event`` is :func:`~oracle.harness.rotation_events.observe`'s observation.
A float is a JSON number, or one of the strings ``"NaN"``, ``"Infinity"``,
``"-Infinity"`` and ``"-0.0"`` (:func:`~oracle.harness.admission_scenario.key_json`).

>>> read_float("-0.0"), read_float(2), read_float("Infinity")
(-0.0, 2.0, inf)
>>> read_float(10**400)
Traceback (most recent call last):
...
oracle.conformance.wire.WireError: a number within the float range, not a 401-digit integer
>>> lane_of("high")
<Lane.HIGH: 2>
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence

from pyrsistent import pvector
from returns.result import Failure, Result

from oracle.checks.convert import spec_entry
from oracle.checks.observe import entry_observation, spec_observation
from oracle.harness.admission_scenario import key_json
from oracle.harness.rotation_scenario import PROFILES_BY_NAME
from oracle.spec import grant_order as spec_order
from oracle.spec import protocol as spec
from policy import (
    ActiveJob,
    Arrival,
    BacklogEntry,
    Cancel,
    EntryKind,
    Event,
    GrantBacklog,
    Lane,
    RequestId,
    RotationState,
    RoundResult,
    RulesProfile,
    SliceKind,
    Tick,
)
from policy.text import cut
from policy.text import shown as quoted
from policy.waiting import Moment, QueueError, QueuePolicy, WaitingEntry, WaitingQueue

__all__ = [
    "JSON",
    "MAX_DEPTH",
    "WireError",
    "backlog_json",
    "canonical",
    "entry_json",
    "kernel_entry_json",
    "lane_of",
    "mapping_json",
    "number_json",
    "queue_json",
    "read_backlog",
    "read_entry",
    "read_event",
    "read_field",
    "read_flag",
    "read_float",
    "read_int",
    "read_line",
    "read_list",
    "read_moment",
    "read_queue",
    "read_request",
    "read_state",
    "shown",
    "state_json",
    "taken_json",
]

#: A JSON value as :func:`json.loads` reads it.
JSON = object

_LANES = {lane.label: lane for lane in Lane}
_KINDS = {kind.value: kind for kind in EntryKind}
_SLICES = {kind.value: kind for kind in SliceKind}
_FLOAT_NAMES = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "-0.0": -0.0}


class WireError(ValueError):
    """A value that is not in the protocol's form (the message names what is wrong)."""


#: Deepest nesting of arrays and objects in one line the kit reads from a process.
MAX_DEPTH = 64

# A JSON string as the JSON reader reads one (the brackets in it are text; one left
# open runs to the end, so that no string is searched for twice: linear time), or a
# bracket.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)


def _too_deep(text: str) -> bool:
    """Whether ``text`` nests arrays and objects deeper than :data:`MAX_DEPTH`, told
    before the JSON reader (which recurses) sees it."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False  # the common case: too few brackets to nest that deep
    depth = 0
    for token in _TOKEN.finditer(text):
        first = text[token.start()]
        if first != '"':
            depth += 1 if first in "[{" else -1
            if depth > MAX_DEPTH:
                return True
    return False


def _text(text: str) -> str:
    return cut(text, 120)


def _not_json(name: str) -> JSON:
    raise WireError(f"not a JSON line: {name} is not JSON (numbers must be finite)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise WireError(f"not a JSON line: {_text(text)} is beyond the float range")
    return value


def read_line(line: bytes) -> dict[str, JSON]:
    """One line a process wrote, as the JSON object it holds: the one reader of every
    line the kit reads from a process (the hello's answer and every other answer).

    Strict JSON only: UTF-8, no ``NaN`` or ``Infinity``, no number beyond the float
    range (``1e400``), at most :data:`MAX_DEPTH` levels of nesting; anything else
    is a :class:`WireError` (and nothing else is raised).

    >>> read_line(b'{"id": 1, "answer": [true, 2.5]}')
    {'id': 1, 'answer': [True, 2.5]}
    >>> read_line(b'{"id": 1, "answer": 1e400}')
    Traceback (most recent call last):
    ...
    oracle.conformance.wire.WireError: not a JSON line: 1e400 is beyond the float range
    >>> read_line(b"[" * 65 + b"]" * 65)
    Traceback (most recent call last):
    ...
    oracle.conformance.wire.WireError: not a JSON line: nested deeper than 64 levels
    """
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise WireError(f"not a JSON line: {_text(line.decode('utf-8', 'replace'))}") from None
    if _too_deep(text):
        raise WireError(f"not a JSON line: nested deeper than {MAX_DEPTH} levels")
    try:
        message = json.loads(text, parse_constant=_not_json, parse_float=_finite)
    except WireError:
        raise
    except ValueError:  # a syntax error, or an integer of more than 4300 digits
        raise WireError(f"not a JSON line: {_text(text)}") from None
    if not isinstance(message, dict):
        raise WireError(f"not a JSON object: {shown(message)}")
    return message


def canonical(value: JSON) -> str:
    """One JSON line for ``value``: compact, keys sorted, no NaN (the protocol's numbers
    are already written as strings where JSON has no number).

    >>> canonical({"b": [1, True], "a": None})
    '{"a":null,"b":[1,true]}'
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


#: One JSON line for a value: compact, keys in their order, no NaN (what a writer of
#: the protocol's lines writes; :func:`canonical` also sorts the keys).
encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


def number_json(value: float) -> float | int | str:
    """A float in the protocol's form (an integer when integral; names for NaN, the
    infinities and -0.0).

    >>> [number_json(v) for v in (4.0, 0.5, -0.0, float("nan"))]
    [4, 0.5, '-0.0', 'NaN']
    """
    return key_json(value)


def read_float(value: JSON) -> float:
    """A float written in the protocol's form (a boolean is not a number)."""
    if isinstance(value, bool):
        raise WireError(f"a number, not {canonical(value)}")
    if isinstance(value, float):
        return value
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:  # an exact JSON integer of 309 digits or more
            raise WireError(f"a number within the float range, not {quoted(value)}") from None
    if isinstance(value, str) and value in _FLOAT_NAMES:
        return _FLOAT_NAMES[value]
    raise WireError(f"a number (or NaN, Infinity, -Infinity, -0.0), not {shown(value)}")


def shown(value: JSON) -> str:
    try:
        text = canonical(value)
    except (TypeError, ValueError):
        text = repr(value)
    return cut(text)


def read_field(document: JSON, name: str) -> JSON:
    """The field ``name`` of an object."""
    if not isinstance(document, dict):
        raise WireError(f"an object, not {shown(document)}")
    if name not in document:
        raise WireError(f"an object with {name!r}, not {shown(document)}")
    return document[name]


def read_int(value: JSON, what: str) -> int:
    """An integer (not a boolean); ``what`` names it in the error."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise WireError(f"{what}: an integer, not {shown(value)}")
    return value


def read_flag(value: JSON, what: str) -> bool:
    """``true`` or ``false``."""
    if not isinstance(value, bool):
        raise WireError(f"{what}: true or false, not {shown(value)}")
    return value


def read_request(value: JSON, what: str) -> RequestId:
    """A request id: a string or an integer."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise WireError(f"{what}: a request id (a string or an integer), not {shown(value)}")
    return value


def read_list(value: JSON, what: str) -> list[JSON]:
    """A list."""
    if not isinstance(value, list):
        raise WireError(f"{what}: a list, not {shown(value)}")
    return value


# ------------------------------------------------------------------------------ rotation


def lane_of(label: JSON) -> Lane:
    """A lane from its label: ``"low"``, ``"normal"`` or ``"high"`` (nothing else)."""
    if not isinstance(label, str) or label not in _LANES:
        raise WireError(f"a lane (low, normal or high), not {shown(label)}")
    return _LANES[label]


def entry_json(entry: spec_order.SpecEntry) -> dict[str, JSON]:
    """A spec backlog entry in the protocol's form.

    >>> entry_json(spec_order.SpecEntry("A", 2, parked=True, skipped=1))
    {'request': 'A', 'lane': 'high', 'kind': 'parked', 'skipped': 1, 'cancelled': False}
    """
    return entry_observation(entry)


def backlog_json(backlog: Sequence[spec_order.SpecEntry]) -> list[JSON]:
    """A spec backlog in the protocol's form, front first."""
    return [entry_json(entry) for entry in backlog]


def taken_json(
    taken: tuple[spec_order.SpecEntry, Sequence[spec_order.SpecEntry]] | None,
) -> JSON:
    """The spec's answer of ``take_next_grantee`` in the protocol's form (null: none)."""
    if taken is None:
        return None
    return {"chosen": entry_json(taken[0]), "backlog": backlog_json(taken[1])}


def kernel_entry_json(entry: BacklogEntry) -> dict[str, JSON]:
    """A kernel backlog entry in the protocol's form (:func:`entry_json`)."""
    return entry_json(spec_entry(entry))


def read_entry(document: JSON) -> BacklogEntry:
    """A kernel backlog entry from the protocol's form."""
    kind = read_field(document, "kind")
    if not isinstance(kind, str) or kind not in _KINDS:
        raise WireError(f"kind: waiter or parked, not {shown(kind)}")
    return BacklogEntry(
        read_request(read_field(document, "request"), "request"),
        lane_of(read_field(document, "lane")),
        _KINDS[kind],
        read_int(read_field(document, "skipped"), "skipped"),
        read_flag(read_field(document, "cancelled"), "cancelled"),
    )


def read_backlog(document: JSON) -> GrantBacklog:
    """A kernel backlog from the protocol's form (built as given: skip counts kept)."""
    return GrantBacklog(pvector(read_entry(item) for item in read_list(document, "backlog")))


_NO_OUTCOME = spec.Outcome(branches=())


def state_json(state: spec.State) -> dict[str, JSON]:
    """A spec rotation state in the protocol's form: the state fields of an observation
    (``active``, ``backlog``, ``yielded``, ``acted``), the ``skip_cap`` and, for rules
    other than the seed's, the ``profile``.

    >>> state_json(spec.initial_state(1))
    {'active': None, 'backlog': [], 'yielded': False, 'acted': False, 'skip_cap': 1}
    >>> state_json(spec.initial_state(2, spec.MLXCEL_RULES))["profile"]
    'mlxcel'
    """
    observed = spec_observation((state, _NO_OUTCOME))
    document: dict[str, JSON] = {
        "active": observed["active"],
        "backlog": observed["backlog"],
        "yielded": observed["yielded"],
        "acted": observed["acted"],
        "skip_cap": state.skip_cap,
    }
    if state.profile != spec.SEED_RULES:
        document["profile"] = state.profile
    return document


def read_state(document: JSON) -> RotationState:
    """A kernel rotation state from the protocol's form (:func:`state_json`)."""
    active = read_field(document, "active")
    job = None
    if active is not None:
        in_flight = read_field(active, "in_flight")
        if in_flight is not None and (not isinstance(in_flight, str) or in_flight not in _SLICES):
            raise WireError(f"in_flight: null or a slice kind, not {shown(in_flight)}")
        job = ActiveJob(
            read_request(read_field(active, "request"), "request"),
            lane_of(read_field(active, "lane")),
            read_int(read_field(active, "slices"), "slices"),
            read_int(read_field(active, "budget"), "budget"),
            None if in_flight is None else _SLICES[in_flight],
            read_flag(read_field(active, "cancelled"), "cancelled"),
        )
    return RotationState(
        job,
        read_backlog(read_field(document, "backlog")),
        read_flag(read_field(document, "yielded"), "yielded"),
        read_flag(read_field(document, "acted"), "acted"),
        read_int(read_field(document, "skip_cap"), "skip_cap"),
        _read_profile(document),
    )


def _read_profile(document: JSON) -> RulesProfile:
    """A state's ``profile`` (the rules it runs by): the seed's when absent."""
    if not isinstance(document, dict) or "profile" not in document:
        return RulesProfile.SEED
    named = document["profile"]
    if not isinstance(named, str) or named not in PROFILES_BY_NAME:
        raise WireError(f"profile: one of {', '.join(PROFILES_BY_NAME)}, not {shown(named)}")
    return PROFILES_BY_NAME[named]


def read_event(document: JSON) -> Event:
    """A kernel event from :func:`~oracle.harness.rotation_events.event_json`'s form.

    >>> read_event({"tick": {"budget": 1, "classic_work": True, "declined": ["B"]}})
    Tick(budget=1, classic_work=True, declined=frozenset({'B'}))
    """
    if not isinstance(document, dict) or len(document) != 1:
        raise WireError(f"an event: an object with one key, not {shown(document)}")
    ((kind, body),) = document.items()
    if kind == "arrival":
        return Arrival(
            read_request(read_field(body, "request"), "request"),
            lane_of(read_field(body, "lane")),
            read_int(read_field(body, "budget"), "budget"),
            read_flag(read_field(body, "may_wait"), "may_wait"),
        )
    if kind == "tick":
        declined = frozenset(
            read_request(item, "declined")
            for item in read_list(read_field(body, "declined"), "declined")
        )
        return Tick(
            read_int(read_field(body, "budget"), "budget"),
            read_flag(read_field(body, "classic_work"), "classic_work"),
            declined,
        )
    if kind == "round_result":
        return RoundResult(read_flag(read_field(body, "finished"), "finished"))
    if kind == "cancel":
        return Cancel(read_request(read_field(body, "request"), "request"))
    raise WireError(f"an event (arrival, tick, round_result or cancel), not {shown(kind)}")


# ----------------------------------------------------------------------- waiting selection


def _attribute(value: JSON, what: str) -> float | bool:
    if isinstance(value, bool):
        return value
    try:
        return read_float(value)
    except WireError as error:
        raise WireError(f"{what}: {error}") from None


def read_queue(document: JSON, policy: QueuePolicy) -> WaitingQueue:
    """The kernel's waiting queue listed by ``document``, front first, built with the
    queue's two ways in as the attempt engine builds a scenario's queue: the entries
    not resumed appended in order, then the resumed ones re-queued at the front in
    reverse order, each at its own ``enqueued_at``."""
    listed = []
    for item in read_list(document, "queue"):
        attributes = read_field(item, "attrs")
        if not isinstance(attributes, dict):
            raise WireError(f"attrs: an object, not {shown(attributes)}")
        listed.append(
            (
                read_request(read_field(item, "id"), "id"),
                {str(name): _attribute(value, name) for name, value in attributes.items()},
                read_int(read_field(item, "serial"), "serial"),
                read_float(read_field(item, "enqueued_at")),
                read_flag(read_field(item, "resumed"), "resumed"),
            )
        )
    queue = WaitingQueue()
    for identity, attributes, serial, enqueued_at, resumed in listed:
        if not resumed:
            queue = _queued(
                queue.append(policy, identity, attributes, serial=serial, now=enqueued_at)
            )
    for identity, attributes, serial, enqueued_at, resumed in reversed(listed):
        if resumed:
            queue = _queued(
                queue.requeue_preempted(
                    policy, identity, attributes, serial=serial, now=enqueued_at
                )
            )
    return queue


def _queued(result: Result[WaitingQueue, QueueError]) -> WaitingQueue:
    if isinstance(result, Failure):
        raise WireError(f"the queue refused an entry: {result.failure()}")
    return result.unwrap()


def read_moment(document: JSON) -> Moment:
    """A kernel moment from ``{"now": number, "budget_left": {stage: number}}``."""
    left = read_field(document, "budget_left")
    if not isinstance(left, dict):
        raise WireError(f"budget_left: an object, not {shown(left)}")
    return Moment(
        read_float(read_field(document, "now")),
        {str(stage): read_float(value) for stage, value in left.items()},
    )


def queue_json(entries: Sequence[WaitingEntry]) -> list[JSON]:
    """Kernel waiting entries in the protocol's form (what :func:`read_queue` reads).

    >>> from policy.waiting import make_entry
    >>> entry = make_entry("a", {"prompt": 2.0, "vip": True}, 3, 1.5, resumed=True)
    >>> queue_json([entry])  # doctest: +NORMALIZE_WHITESPACE
    [{'id': 'a', 'attrs': {'prompt': 2, 'vip': True}, 'serial': 3, 'enqueued_at': 1.5,
      'resumed': True}]
    """
    return [
        {
            "id": entry.identity,
            "attrs": {
                name: value if isinstance(value, bool) else number_json(value)
                for name, value in entry.attributes.items()
            },
            "serial": entry.serial,
            "enqueued_at": number_json(entry.enqueued_at),
            "resumed": entry.resumed,
        }
        for entry in entries
    ]


def mapping_json(values: Mapping[str, float]) -> dict[str, JSON]:
    """Numbers by name, each in the protocol's form."""
    return {name: number_json(value) for name, value in values.items()}
