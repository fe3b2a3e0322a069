"""A waiting entry: one waiting request, as the queue stores it.

An entry holds the request's identity, its attributes, its serial, when it
entered the queue and whether it was resumed (re-queued after preemption);
under ``enqueue`` key timing, the key values computed then. The queue gives
each entry a ``ticket`` (its place in queue order) and keeps the host's own
object for the request (``carried``) beside it, unread.

Attributes are stored as two tuples, ``names`` and ``values``: the queue lays
them out with the attributes the policy's keys read first, in the policy's
order (then any others), so that its compiled keys read them by position, and
the names tuple is shared by every entry of that policy.
:attr:`WaitingEntry.attributes` reads them back as a mapping.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final, NamedTuple, TypeAlias

from policy.identity import REQUEST_ID_RULE, RequestId, is_request_id
from policy.records import wrong_field
from policy.text import quote, represent
from policy.waiting.numbers import as_float, is_number, shown

__all__ = [
    "ABSENT",
    "AttributeValue",
    "AttributeView",
    "WaitingEntry",
    "make_entry",
    "same_entry",
    "stored",
]

AttributeValue: TypeAlias = float | bool

#: The value of an attribute an entry lacks but a policy it was laid out for reads:
#: NaN to compiled keys (as the plain definition reads a missing name), and not
#: an attribute of the entry (its view skips this very object).
ABSENT: Final = float("nan")


class AttributeView(Mapping[str, AttributeValue]):
    """An entry's attributes as a read-only mapping over its ``names`` and ``values``.

    >>> view = AttributeView(("prompt", "immediate"), (4.0, True))
    >>> view["immediate"], dict(view), view == {"immediate": True, "prompt": 4.0}
    (True, {'prompt': 4.0, 'immediate': True}, True)

    It checks its arguments: ``names`` a tuple of text, ``values`` a tuple of
    numbers, one name per value (a ``TypeError`` or ``ValueError``).

    >>> AttributeView(3, 3)
    Traceback (most recent call last):
    ...
    TypeError: AttributeView's names must be a tuple of names (str), not int
    """

    __slots__ = ("_names", "_values")

    def __init__(self, names: tuple[str, ...], values: tuple[AttributeValue, ...]) -> None:
        given: tuple[object, object] = (names, values)
        if not isinstance(given[0], tuple) or not all(isinstance(name, str) for name in names):
            raise TypeError(
                f"AttributeView's names must be a tuple of names (str), not {type(names).__name__}"
            )
        if not isinstance(given[1], tuple):
            raise TypeError(f"AttributeView's values must be a tuple, not {type(values).__name__}")
        for value in values:
            if not is_number(value):
                raise TypeError(f"AttributeView's values must be numbers, not {shown(value)}")
        if len(names) != len(values):
            raise ValueError(
                f"AttributeView needs one name per value: {len(names)} names for"
                f" {len(values)} values"
            )
        self._names = names
        self._values = values

    def __getitem__(self, name: str) -> AttributeValue:
        try:
            value = self._values[self._names.index(name)]
        except ValueError:
            raise KeyError(name) from None
        if value is ABSENT:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        if ABSENT in self._values:  # identity first: only this very NaN
            return (n for n, v in zip(self._names, self._values, strict=True) if v is not ABSENT)
        return iter(self._names)

    def __len__(self) -> int:
        if ABSENT in self._values:
            return sum(1 for value in self._values if value is not ABSENT)
        return len(self._names)

    def __hash__(self) -> int:
        return hash(frozenset(self.items()))

    def __repr__(self) -> str:
        return represent(dict(self))  # values of any size (an entry built by hand keeps ints)


class WaitingEntry(NamedTuple):
    """One waiting request (see the module's docstring for the fields).

    A named tuple: immutable, and made by the queue from its stored fields each
    time an entry is read (0.3 µs; a frozen dataclass's ``__init__`` costs 1 µs).
    Build one by hand with :func:`make_entry`, which checks and lays out its
    arguments; the constructor takes the stored fields as they are.
    Equality, hash and ``repr`` read the request (identity, attributes by
    name, serial, ``enqueued_at``, ``resumed``, ``enqueue_keys``), not where it
    waits (``ticket``) nor the host's object (``carried``).

    >>> entry = make_entry("a", {"prompt": 2.0}, 0, enqueued_at=1.0)
    >>> entry.attributes["prompt"], entry == make_entry("a", {"prompt": 2}, 0, 1.0)
    (2.0, True)
    """

    identity: RequestId
    names: tuple[str, ...]
    values: tuple[AttributeValue, ...]
    serial: int
    enqueued_at: float
    resumed: bool = False
    enqueue_keys: tuple[float, ...] | None = None
    ticket: int = 0
    carried: object = None

    @property
    def attributes(self) -> Mapping[str, AttributeValue]:
        """The request's attributes, by name."""
        return AttributeView(self.names, self.values)

    def _request(self) -> tuple[object, ...]:
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
        return self is other or self._request() == other._request()

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash((self.identity, self.serial, self.enqueued_at, self.resumed))

    def __repr__(self) -> str:
        # represent: values of any size or text (repr(10**5000) raises)
        return (
            f"WaitingEntry(identity={represent(self.identity)}, attributes={self.attributes!r},"
            f" serial={represent(self.serial)}, enqueued_at={represent(self.enqueued_at)},"
            f" resumed={self.resumed!r}, enqueue_keys={represent(self.enqueue_keys)})"
        )


def make_entry(  # noqa: PLR0917 - the request's parts, as the old constructor took them
    identity: RequestId,
    attributes: Mapping[str, AttributeValue],
    serial: int,
    enqueued_at: float,
    resumed: bool = False,
    enqueue_keys: tuple[float, ...] | None = None,
) -> WaitingEntry:
    """An entry built by hand (a test's, a host's replay), its arguments checked: an
    identity :func:`~policy.identity.is_request_id` accepts, attributes mapping
    names (``str``) to numbers or booleans, numbers for ``serial`` and
    ``enqueued_at``, a bool ``resumed``, None or a tuple of numbers for
    ``enqueue_keys`` (a ``TypeError`` otherwise). Values are kept as given.

    >>> make_entry("a", {"prompt": "long"}, 0, 0.0)
    Traceback (most recent call last):
    ...
    TypeError: WaitingEntry.attributes['prompt'] must be a number, not str
    """
    if not is_request_id(identity):
        raise wrong_field("WaitingEntry", "identity", REQUEST_ID_RULE, identity)
    given: object = attributes
    if not isinstance(given, Mapping):
        raise wrong_field("WaitingEntry", "attributes", "a mapping", given)
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
    names = tuple(attributes)
    values = tuple(attributes[name] for name in names)
    return WaitingEntry(identity, names, values, serial, enqueued_at, resumed, enqueue_keys)


def same_entry(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    """Whether ``a`` and ``b`` are records of one waiting entry: every field equal,
    ``ticket`` included (where it waits), and the very same ``carried`` object.

    The queue makes a :class:`WaitingEntry` each time one is read, so two reads of
    one entry are equal in this sense, not the same object; ``==`` compares the
    requests only (not ``ticket``, not ``carried``).

    >>> a = make_entry("a", {"prompt": 2}, 0, 1.0)
    >>> same_entry(a, a._replace()), same_entry(a, a._replace(ticket=1)), a == a._replace(ticket=1)
    (True, False, True)
    """
    return (
        a is b
        or (
            a[7] == b[7]  # the ticket first: it tells most entries apart
            and a[8] is b[8]
            and a[:8] == b[:8]
        )
    )


#: The floats of the integers from -1024 to 1024, made once: every entry with a
#: small integer attribute (a priority, a prompt length) shares its float, as
#: CPython shares small ints (24 bytes less per entry and attribute).
_SMALL_FLOATS: Final[dict[int, float]] = {number: float(number) for number in range(-1024, 1025)}


def stored(value: Any) -> AttributeValue:
    """An attribute value as the queue stores it: a boolean as it is, any other
    number as :func:`~policy.waiting.numbers.as_float` reads it (an integer
    beyond the float range is ±infinity).

    >>> stored(True), stored(3), stored(10**400), stored(3) is stored(3)
    (True, 3.0, inf, True)
    """
    kind = type(value)
    if kind is float or kind is bool:  # ABSENT too
        return value  # type: ignore[no-any-return]
    if kind is int:
        small = _SMALL_FLOATS.get(value)
        if small is not None:
            return small
        try:
            return float(value)
        except OverflowError:
            pass
    if not is_number(value):
        raise TypeError(f"an attribute must be a number or a boolean, not {shown(value)}")
    return as_float(value)
