"""A waiting entry: one waiting request as the queue stores it.

Attributes are stored compactly: a tuple of values whose names are shared with
the policy (the attributes its keys read, in its order, then any others), read
through :attr:`WaitingEntry.attributes`. :func:`new_entry` builds entries on the
queue's hot paths; :func:`attribute_layout` and :func:`entry_laid_out` lay the
attributes out for a policy; :func:`keys_at_enqueue` gives the key values as
computed when an entry was queued.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from policy.identity import REQUEST_ID_RULE, RequestId, is_request_id
from policy.records import record_builder, shape_of, slot_setters, wrong_field
from policy.text import quote, represent, shown
from policy.waiting.evaluate import evaluate, scope_of
from policy.waiting.numbers import as_float, is_number
from policy.waiting.plan import NO_BUDGETS
from policy.waiting.queue_policy import QueuePolicy

__all__ = [
    "ABSENT",
    "AttributeValue",
    "AttributeView",
    "WaitingEntry",
    "attribute_layout",
    "entry_laid_out",
    "exact_values",
    "keys_at_enqueue",
    "keys_at_enqueue_unchecked",
    "new_entry",
]

AttributeValue: TypeAlias = float | bool

#: The value of an attribute an entry lacks but a policy it was rebuilt for reads:
#: NaN to compiled keys (as the plain definition reads a missing name), and not
#: an attribute of the entry (its views skip this very object).
ABSENT: Final = float("nan")


class AttributeView(Mapping[str, AttributeValue]):
    """An entry's attributes as a read-only mapping (a view of its compact tuple).

    ``names`` name ``values`` and then ``extras``, in that order.

    >>> view = AttributeView(("prompt", "immediate"), (4.0,), (True,))
    >>> view["immediate"], dict(view), view == {"immediate": True, "prompt": 4.0}
    (True, {'prompt': 4.0, 'immediate': True}, True)

    Built by hand, it checks its arguments: ``names`` a tuple of text, ``values``
    and ``extras`` tuples of numbers (a ``TypeError``), one name per value (a
    ``ValueError``). An entry's own view (:attr:`WaitingEntry.attributes`) is
    built from tuples the queue checked, without these checks.

    >>> AttributeView(3, 3)
    Traceback (most recent call last):
    ...
    TypeError: AttributeView's names must be a tuple of names (str), not int
    """

    __slots__ = ("_extras", "_names", "_values")

    def __init__(
        self,
        names: tuple[str, ...],
        values: tuple[AttributeValue, ...],
        extras: tuple[AttributeValue, ...] = (),
    ) -> None:
        _check_view(names, values, extras)
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
        if value is ABSENT:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        given = (*self._values, *self._extras)
        return (name for name, value in zip(self._names, given, strict=True) if value is not ABSENT)

    def __len__(self) -> int:
        if any(value is ABSENT for value in self._values):
            return sum(1 for _ in self)
        return len(self._names)

    def __hash__(self) -> int:
        return hash(frozenset(self.items()))

    def __repr__(self) -> str:
        return represent(dict(self))  # values of any size (an entry built by hand keeps ints)


def _check_view(names: object, values: object, extras: object) -> None:
    if not isinstance(names, tuple) or not all(isinstance(name, str) for name in names):
        raise TypeError(
            f"AttributeView's names must be a tuple of names (str), not {type(names).__name__}"
        )
    count = 0
    for part, given in (("values", values), ("extras", extras)):
        if not isinstance(given, tuple):
            raise TypeError(f"AttributeView's {part} must be a tuple, not {type(given).__name__}")
        for value in given:
            if not is_number(value):
                raise TypeError(f"AttributeView's {part} must be numbers, not {shown(value)}")
        count += len(given)
    if len(names) != count:
        raise ValueError(
            f"AttributeView needs one name per value: {len(names)} names for {count} values"
        )


_new_view = object.__new__


def _view(
    names: tuple[str, ...], values: tuple[AttributeValue, ...], extras: tuple[AttributeValue, ...]
) -> AttributeView:
    """``AttributeView(names, values, extras)`` without its checks (an entry's own)."""
    view: AttributeView = _new_view(AttributeView)
    view._names = names
    view._values = values
    view._extras = extras
    return view


@dataclass(frozen=True, slots=True, init=False, eq=False)
class WaitingEntry:
    """One waiting request.

    Built by :class:`WaitingQueue`, which stores attribute numbers and
    ``enqueued_at`` as floats. ``enqueue_keys`` holds the key values computed
    when the entry was queued under a policy with ``enqueue`` timing (None
    otherwise). ``names``, ``values`` and ``extras`` are the attributes, stored
    compactly (``values`` those the queue policy's keys read, in its order;
    ``extras`` any others); read them as :attr:`attributes`. ``ticket`` orders
    the entry in its queue, and ``carried`` is the host's own object for the
    request (its request object, say), given to ``append`` or
    ``requeue_preempted`` and carried unchanged, never read (neither is part
    of equality).

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
    carried: object

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
            None,
        )

    @property
    def attributes(self) -> Mapping[str, AttributeValue]:
        """The request's attributes, by name."""
        return _view(self.names, self.values, self.extras)

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
            raise wrong_field("WaitingEntry", f"attributes[{quote(name)}]", "a number", value)
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
        "carried",
    ),
)


def _made_entry(entry: WaitingEntry, *fields: object) -> WaitingEntry:
    """``entry`` with every field set through its slot (``WaitingEntry(...)``'s body;
    the queue's hot paths build entries with :func:`new_entry`)."""
    for put, value in zip(_ENTRY_SLOTS, fields, strict=True):
        put(entry, value)
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
    carried: object,
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
    made.carried = carried
    made.__class__ = WaitingEntry
    built: WaitingEntry = made
    return built


#: The hot path's constructor of entries: every field, positionally, checked by the
#: caller (the queue); ``WaitingEntry(...)`` is the checked constructor.
new_entry: Final = record_builder(WaitingEntry, _build_entry)


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


def attribute_layout(
    policy: QueuePolicy, attributes: Mapping[str, AttributeValue]
) -> tuple[tuple[str, ...], tuple[AttributeValue, ...], tuple[AttributeValue, ...]]:
    """Names, values and extras as the policy's compiled keys find them: the
    attributes the keys read, in the policy's order (the names tuple shared with
    the policy when there are no others), then any others as given."""
    order = policy.plan.attribute_order
    if not order and not attributes:  # FIFO's usual request: nothing to lay out
        return (), (), ()
    values = tuple(map(_stored, map(attributes.__getitem__, order)))  # no generator frame
    if len(attributes) == len(order):
        return order, values, ()
    extra = tuple(name for name in attributes if name not in order)
    return order + extra, values, tuple(_stored(attributes[name]) for name in extra)


def exact_values(
    order: tuple[str, ...], attributes: dict[str, object]
) -> tuple[AttributeValue, ...] | None:
    """The values :func:`attribute_layout` lays out for ``attributes`` when they
    hold exactly the names of ``order`` (a policy's attribute order, not empty),
    each exactly a ``float``, ``int`` or ``bool``; None otherwise (then the
    general layout and its checks decide). One pass, for batches.

    >>> exact_values(("priority", "arrival"), {"arrival": 2.5, "priority": 3})
    (3.0, 2.5)
    >>> exact_values(("priority",), {"priority": "3"}) is None
    True
    """
    if len(attributes) != len(order):
        return None
    values: list[AttributeValue] = []
    for name in order:
        value = attributes.get(name)  # None, when missing: not a number
        kind = type(value)
        if kind is float or kind is bool:
            values.append(value)  # type: ignore[arg-type]
        elif kind is int:
            values.append(_stored(value))  # type: ignore[arg-type]
        else:
            return None
    return tuple(values)


def _stored(value: AttributeValue) -> AttributeValue:
    kind: type[object] = type(value)  # an int too (float | bool admits one as a type)
    if kind is float or kind is bool:  # the usual values, without the union's isinstance
        return value
    if kind is int:  # as_float's conversion, without its isinstance tests
        try:
            return float(value)
        except OverflowError:
            pass  # as_float's infinity
    return value if isinstance(value, bool | float) else as_float(value)


def entry_laid_out(policy: QueuePolicy, entry: WaitingEntry) -> WaitingEntry:
    """``entry`` with its attributes laid out for ``policy``.

    An entry queued under another policy may lack an attribute this one reads:
    compiled keys read it as NaN (``ABSENT``), as the plain definition reads a
    missing name; the entry's attributes still do not have it.
    """
    order = policy.plan.attribute_order
    if entry.names[: len(order)] == order and len(entry.values) == len(order):
        return entry
    given = dict(entry.attributes)
    names, values, extras = attribute_layout(policy, {**dict.fromkeys(order, ABSENT), **given})
    return new_entry(
        entry.identity,
        names,
        values,
        extras,
        entry.serial,
        entry.enqueued_at,
        entry.resumed,
        entry.enqueue_keys,
        entry.ticket,
        entry.carried,
    )
