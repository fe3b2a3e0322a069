"""Numbers at the boundary of the library, and values shown in messages.

Numbers enter from the host (attributes, ``serial``, ``now``, ``budget_left``) and
from policy documents (``let``, ``{"num": ...}``, ``version``). Python integers
are unbounded, floats are not, so every number is converted once, by one rule:

- at run time (:func:`as_float`): ``True``/``False`` are 1 and 0, an integer is
  the nearest float or, beyond the float range, ±infinity; floats (infinities and
  NaN included) are kept; anything that is not a number reads as NaN (unknown);
- in a policy (:func:`finite_number`): only numbers that are finite floats are
  accepted, booleans are not numbers there.

Messages quote offending values with :func:`shown`, which never raises and stays
short (``repr`` of an integer of more than 4300 digits raises ``ValueError``),
and names with :func:`name_shown`; both are one printable line
(:func:`policy.text.printable`).
"""

from __future__ import annotations

import math
from typing import Final

from policy.text import cut, printable, represent

#: Longest text :func:`shown` returns.
SHOWN_LIMIT: Final = 60

_LOG10_2: Final = math.log10(2)


def is_number(value: object) -> bool:
    """Whether ``value`` is a number at run time: an int, a float or a bool.

    >>> is_number(3), is_number(True), is_number(float("nan")), is_number("3")
    (True, True, True, False)
    """
    return isinstance(value, int | float)


def as_float(value: object) -> float:
    """``value`` as a float; never raises.

    >>> as_float(True), as_float(3), as_float(10**400), as_float(-(10**400)), as_float("x")
    (1.0, 3.0, inf, -inf, nan)
    """
    if isinstance(value, float):
        return float(value)
    if isinstance(value, int):  # bool is an int
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    return math.nan


def finite_number(value: object) -> float | None:
    """``value`` as a float if it is a number that is a finite float (not a boolean).

    >>> finite_number(3), finite_number(True), finite_number(10**400), finite_number("1")
    (3.0, None, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = as_float(value)
    return number if math.isfinite(number) else None


def digits(number: int) -> int:
    """How many decimal digits ``abs(number)`` has, without converting it to text.

    >>> digits(0), digits(-999), digits(10**5000)
    (1, 3, 5001)
    """
    magnitude = abs(number)
    count = max(1, int(magnitude.bit_length() * _LOG10_2))
    while 10**count <= magnitude:
        count += 1
    while count > 1 and 10 ** (count - 1) > magnitude:
        count -= 1
    return count


def _shown(value: object, room: int) -> str:
    if value is None or isinstance(value, bool | float):
        return repr(value)
    if isinstance(value, int):
        count = digits(value)
        if count <= 30:
            return repr(value)
        return f"a {'negative ' if value < 0 else ''}{count}-digit integer"
    if isinstance(value, str):
        return repr(value[: SHOWN_LIMIT + 1])
    if isinstance(value, list | tuple):
        if room == 0:
            return "[...]"
        items = [_shown(item, room - 1) for item in value[:4]]
        return "[" + ", ".join(items + (["..."] if len(value) > 4 else [])) + "]"
    if isinstance(value, dict):
        if room == 0:
            return "{...}"
        pairs = [f"{_shown(k, 0)}: {_shown(v, room - 1)}" for k, v in list(value.items())[:4]]
        return "{" + ", ".join(pairs + (["..."] if len(value) > 4 else [])) + "}"
    return represent(value)  # any repr may fail or span lines: the message must not


def shown(value: object) -> str:
    """``value`` for an error message: like ``repr``, short, and never raising.

    >>> shown("128"), shown(True), shown(10**5000), shown([1, [2, [3, [4]]]])
    ("'128'", 'True', 'a 5001-digit integer', '[1, [2, [3, [...]]]]')
    >>> shown("x" * 100)[-5:]
    'xx...'
    """
    return cut(_shown(value, 3), SHOWN_LIMIT)


def name_shown(name: object) -> str:
    """A name as it appears in a JSON path: short printable text as is, other
    characters escaped (:func:`~policy.text.printable`), anything else :func:`shown`.

    >>> name_shown("short_tokens"), name_shown(10**400), len(name_shown("n" * 100))
    ('short_tokens', 'a 401-digit integer', 60)
    >>> name_shown("a\\nb\\ud800")
    'a\\\\nb\\\\ud800'
    """
    if isinstance(name, str):
        # Escapes only lengthen: a prefix one longer than the limit is enough.
        return cut(printable(name[: SHOWN_LIMIT + 1]), SHOWN_LIMIT)
    return shown(name)
