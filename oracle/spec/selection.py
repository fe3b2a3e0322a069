"""select_waiting, one admission attempt and the waiting queue (waiting.md), a second time.

The queue is a plain tuple of ``SpecEntry`` in enqueue order; every operation
returns a new tuple. Keys are JSON trees interpreted by ``expressions``; the
order of key lists is ``key_order``'s.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from oracle.spec.expressions import Env, interpret, read_number
from oracle.spec.key_order import key_list_compare

__all__ = [
    "SpecEntry",
    "SpecPolicy",
    "admit",
    "append",
    "keys_of",
    "policy_from_document",
    "remove",
    "requeue_preempted",
    "select",
]


@dataclass(frozen=True, slots=True)
class SpecEntry:
    """One waiting entry: "the request's identity, its attributes (numbers or
    booleans), the time it entered the queue, and whether it is resumed".

    ``attributes`` is copied into a read-only ``MappingProxyType`` when the entry
    is built, so later changes to the caller's dict do not reach the entry.
    (Entries compare by value; they are not hashable, as a mapping is not.)

    >>> e = SpecEntry("a", {"prompt": 64}, serial=0, enqueued_at=1.0)
    >>> e.attributes["prompt"], e.resumed
    (64, False)
    >>> e == SpecEntry("a", {"prompt": 64}, serial=0, enqueued_at=1.0)
    True
    """

    identity: str | int
    attributes: Mapping[str, float | bool]
    serial: float
    enqueued_at: float
    resumed: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "attributes", MappingProxyType(dict(self.attributes)))


@dataclass(frozen=True, slots=True)
class SpecPolicy:
    """ "A queue policy is an ordered list of one or more keys (or none: FIFO)",
    its ``let`` constants and its key timing.

    ``keys`` holds JSON trees; ``None`` is FIFO. ``constants`` is copied into a
    read-only mapping.

    >>> SpecPolicy(None, {}, "selection").keys is None
    True
    """

    keys: tuple[object, ...] | None
    constants: Mapping[str, float]
    timing: str  # "selection" | "enqueue"

    def __post_init__(self) -> None:
        object.__setattr__(self, "constants", MappingProxyType(dict(self.constants)))


# --------------------------------------------------------------------------- the document


def policy_from_document(doc: Mapping[str, object]) -> SpecPolicy:
    """Read a policy's JSON document (docs, The JSON document). Minimal checks only.

    "Every field is optional. let and attributes default to {}. timing defaults
    to "selection"; the other value is "enqueue". Leaving keys out means FIFO.
    "keys": [] and "keys": null are refused."  Text keys are not supported here
    (a ``ValueError``): the oracle reads only trees. ``format``, ``version`` and
    ``attributes`` are not needed to evaluate keys and are not read.

    >>> p = policy_from_document({"let": {"k": 2}, "keys": [{"const": "k"}]})
    >>> p.keys, dict(p.constants), p.timing
    (({'const': 'k'},), {'k': 2.0}, 'selection')
    >>> policy_from_document({"timing": "enqueue"})
    SpecPolicy(keys=None, constants=mappingproxy({}), timing='enqueue')
    >>> policy_from_document({"keys": ["prompt"]})
    Traceback (most recent call last):
    ...
    ValueError: keys[0]: text keys are not supported by the spec oracle: give a JSON tree
    """
    let = doc.get("let", {})
    if not isinstance(let, Mapping):
        raise ValueError(f"let: must be a mapping, not {let!r}")
    constants: dict[str, float] = {}
    for name, value in let.items():
        # docs, Numbers: "In a policy (let, ...), a number must be a finite float;
        # booleans are not numbers there."
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"let.{name}: must be a number, not {value!r}")
        constants[str(name)] = float(value)

    timing = doc.get("timing", "selection")
    if timing not in ("selection", "enqueue"):
        raise ValueError(f"timing: must be 'selection' or 'enqueue', not {timing!r}")

    if "keys" not in doc:
        return SpecPolicy(None, constants, str(timing))  # "Leaving keys out means FIFO"
    raw_keys = doc["keys"]
    if not isinstance(raw_keys, list | tuple) or len(raw_keys) == 0:
        raise ValueError("keys: a queue policy needs at least one key (for FIFO, leave it out)")
    keys: list[object] = []
    for i, key in enumerate(raw_keys):
        if isinstance(key, str):
            raise ValueError(
                f"keys[{i}]: text keys are not supported by the spec oracle: give a JSON tree"
            )
        if not isinstance(key, Mapping):
            raise ValueError(f"keys[{i}]: a key must be a JSON tree, not {key!r}")
        keys.append(copy.deepcopy(key))
    return SpecPolicy(tuple(keys), constants, str(timing))


# --------------------------------------------------------------------------- keys


def keys_of(
    policy: SpecPolicy, entry: SpecEntry, now: float, budget_left: Mapping[str, float]
) -> tuple[float, ...]:
    """The entry's key values at this selection (``()`` for FIFO).

    selection timing: "re-evaluates every key for every entry at every
    selection"; "now is moment.now, waited is now - enqueued_at and
    budget_left(s) is moment.budget_left[s]".

    enqueue timing: "the keys stored when the entry was queued are used. They
    were evaluated with now = enqueued_at and waited = 0." They are recomputed
    here from the entry, with no stage reported (``budget_left`` reads NaN):
    the same numbers as storing them, provided the policy is the one that
    queued the entry.

    >>> aged = {"op": ">=", "args": [{"var": "waited"}, {"num": 3}]}
    >>> e = SpecEntry(1, {}, serial=1, enqueued_at=2.0)
    >>> keys_of(SpecPolicy((aged, {"var": "now"}), {}, "selection"), e, 5.0, {})
    (1.0, 5.0)
    >>> keys_of(SpecPolicy((aged, {"var": "now"}), {}, "enqueue"), e, 5.0, {})
    (0.0, 2.0)
    >>> keys_of(SpecPolicy(None, {}, "selection"), e, 5.0, {})
    ()
    """
    if policy.keys is None:
        return ()
    if policy.timing == "enqueue":
        env = Env(
            attributes=entry.attributes,
            serial=entry.serial,
            now=entry.enqueued_at,
            waited=0.0,
            budget_left={},
            constants=policy.constants,
        )
    else:
        env = Env(
            attributes=entry.attributes,
            serial=entry.serial,
            now=now,
            # numbers are read as floats first (docs, Numbers), then subtracted
            waited=read_number(now) - read_number(entry.enqueued_at),
            budget_left=budget_left,
            constants=policy.constants,
        )
    return tuple(interpret(key, env) for key in policy.keys)


# --------------------------------------------------------------------------- select_waiting


def select(
    queue: Sequence[SpecEntry],
    policy: SpecPolicy,
    now: float,
    budget_left: Mapping[str, float],
) -> tuple[int, tuple[float, ...]] | None:
    """select_waiting: the chosen entry's (index, key values), or None.

    1. "If the queue is empty, the result is Nothing."
    2. "the front entry is resumed → the front entry (no key is evaluated)"
    3. "FIFO policy → the front entry"
    4. "otherwise the entry with the smallest key list, ties by enqueue order."

    >>> q = tuple(SpecEntry(s, {}, serial=s, enqueued_at=0.0) for s in (1, 2, 3))
    >>> second = {"op": "?:", "args": [{"op": "==", "args": [{"var": "serial"}, {"num": 2}]},
    ...                                {"num": 0}, {"num": 1}]}
    >>> p = SpecPolicy(({"num": 0}, second), {}, "selection")
    >>> select(q, p, 0.0, {})
    (1, (0.0, 0.0))
    >>> select(q[::2], p, 0.0, {})
    (0, (0.0, 1.0))
    >>> select((replace(q[2], resumed=True), *q[:2]), p, 0.0, {})
    (0, ())
    >>> select(q, SpecPolicy(None, {}, "selection"), 0.0, {}), select((), p, 0.0, {})
    ((0, ()), None)
    """
    if len(queue) == 0:
        return None
    if queue[0].resumed:
        return (0, ())
    if policy.keys is None:
        return (0, ())

    candidates = [
        (keys_of(policy, entry, now, budget_left), index) for index, entry in enumerate(queue)
    ]

    def by_keys_then_position(
        x: tuple[tuple[float, ...], int], y: tuple[tuple[float, ...], int]
    ) -> int:
        # "The smallest wins; ties keep enqueue order (the earlier entry wins)"
        decided = key_list_compare(x[0], y[0])
        if decided != 0:
            return decided
        return (x[1] > y[1]) - (x[1] < y[1])

    keys, index = min(candidates, key=functools.cmp_to_key(by_keys_then_position))
    return (index, keys)


# --------------------------------------------------------------------------- admission


def admit(
    queue: Sequence[SpecEntry],
    policy: SpecPolicy,
    now: float,
    budget_left: Mapping[str, float],
    fits: Callable[[SpecEntry], bool],
) -> tuple[str, int | None, tuple[SpecEntry, ...]]:
    """One admission attempt.

    "select one entry; test that same entry for fit ...; if it fits, remove it
    and admit it; if not, STOP: the queue is blocked until the next attempt. No
    other entry is tried (no fit-first skipping)."

    Returns ("empty", None, ()), ("blocked", index, the queue unchanged) or
    ("admitted", index, the queue without that entry).

    >>> q = (SpecEntry(1, {"priority": 1}, 1, 1.0), SpecEntry(2, {"priority": 2}, 2, 1.0))
    >>> p = SpecPolicy(({"attr": "priority"},), {}, "selection")
    >>> admit(q, p, 1.0, {}, lambda e: e.identity == 2)[:2]
    ('blocked', 0)
    >>> outcome, index, rest = admit(q, p, 5.0, {}, lambda e: True)
    >>> outcome, index, [e.identity for e in rest]
    ('admitted', 0, [2])
    >>> admit((), p, 5.0, {}, lambda e: True)
    ('empty', None, ())
    """
    selection = select(queue, policy, now, budget_left)
    if selection is None:
        return ("empty", None, ())
    index, _keys = selection
    entry = queue[index]
    if fits(entry):
        return ("admitted", index, tuple(queue[:index]) + tuple(queue[index + 1 :]))
    return ("blocked", index, tuple(queue))


# --------------------------------------------------------------------------- queue operations


def _check_new(queue: Sequence[SpecEntry], entry: SpecEntry) -> None:
    """docs: "The queue refuses a request ... when: its identity is already
    waiting; an attribute value, serial or now is not a number or a boolean"."""
    if any(waiting.identity == entry.identity for waiting in queue):
        raise ValueError(f"identity {entry.identity!r} is already waiting")
    values: list[object] = [entry.serial, entry.enqueued_at, *entry.attributes.values()]
    for value in values:
        if not isinstance(value, int | float):  # bool is an int
            raise ValueError(f"not a number or a boolean: {value!r}")


def append(queue: Sequence[SpecEntry], entry: SpecEntry) -> tuple[SpecEntry, ...]:
    """ "a new request is appended at the back". A new request is not resumed.

    >>> q = append(append((), SpecEntry("a", {}, 0, 0.0)), SpecEntry("b", {}, 1, 1.0))
    >>> [e.identity for e in q]
    ['a', 'b']
    >>> append(q, SpecEntry("a", {}, 2, 2.0))
    Traceback (most recent call last):
    ...
    ValueError: identity 'a' is already waiting
    """
    if entry.resumed:
        raise ValueError("a new request is not resumed: use requeue_preempted")
    _check_new(queue, entry)
    return (*queue, entry)


def requeue_preempted(
    queue: Sequence[SpecEntry], entry: SpecEntry, now: float
) -> tuple[SpecEntry, ...]:
    """ "a preempted request is put at the FRONT, marked resumed ...; its enqueue
    time is reset to the preemption time" (``now``).

    >>> q = append((), SpecEntry("a", {}, 0, 0.0))
    >>> q = requeue_preempted(q, SpecEntry("b", {}, 1, 0.0), now=3.0)
    >>> q = requeue_preempted(q, SpecEntry("c", {}, 2, 0.0), now=4.0)
    >>> [(e.identity, e.resumed, e.enqueued_at) for e in q]
    [('c', True, 4.0), ('b', True, 3.0), ('a', False, 0.0)]
    """
    fresh = replace(entry, resumed=True, enqueued_at=now)
    _check_new(queue, fresh)
    return (fresh, *queue)


def remove(queue: Sequence[SpecEntry], identity: str | int) -> tuple[SpecEntry, ...]:
    """ "removing an entry (admission, cancel) keeps everyone else's order".

    >>> q = tuple(SpecEntry(i, {}, i, 0.0) for i in (1, 2, 3))
    >>> [e.identity for e in remove(q, 2)]
    [1, 3]
    >>> remove(q, 9)
    Traceback (most recent call last):
    ...
    ValueError: identity 9 is not waiting
    """
    if not any(entry.identity == identity for entry in queue):
        raise ValueError(f"identity {identity!r} is not waiting")
    return tuple(entry for entry in queue if entry.identity != identity)
