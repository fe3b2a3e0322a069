"""Numbers at the boundary of the library, and values shown in messages.

Numbers enter from the host (attributes, ``serial``, ``now``, ``budget_left``) and
from policy documents (``let``, ``{"num": ...}``, ``version``). Python integers
are unbounded, floats are not, so every number is converted once, by one rule:

- at run time (:func:`as_float`): ``True``/``False`` are 1 and 0, an integer is
  the nearest float or, beyond the float range, ±infinity; floats (infinities and
  NaN included) are kept; anything that is not a number reads as NaN (unknown);
- in a policy (:func:`finite_number`): only numbers that are finite floats are
  accepted, booleans are not numbers there.

An integer is any ``numbers.Integral`` and a float any other ``numbers.Real``
(numpy's integers and floats, which vLLM's own queue takes, ``Fraction``), each
converted as an ``int`` or a ``float`` is; complex numbers and ``Decimal`` (not
``numbers.Real``) are not numbers here.

Messages quote offending values with :func:`shown`, which never raises and stays
short (``repr`` of an integer of more than 4300 digits raises ``ValueError``),
and names with :func:`name_shown`; both are one printable line, and both live in
:mod:`policy.text` with the one quoting rule (:func:`policy.text.cut`), and are
importable from here too.
"""

from __future__ import annotations

import math
import numbers

from policy.text import SHOWN_LIMIT, digits, name_shown, shown

__all__ = [
    "SHOWN_LIMIT",
    "as_float",
    "digits",
    "finite_number",
    "is_number",
    "name_shown",
    "shown",
]


def is_number(value: object) -> bool:
    """Whether ``value`` is a number at run time: an int, a float, a bool, or
    another real number (``numbers.Real``: numpy's, ``Fraction``).

    >>> from fractions import Fraction
    >>> is_number(3), is_number(True), is_number(float("nan")), is_number(Fraction(1, 2))
    (True, True, True, True)
    >>> is_number("3"), is_number(1j)
    (False, False)
    """
    # the exact types first: the ABC's check costs a look-up in its cache
    return isinstance(value, int | float | numbers.Real)


def _whole_float(value: int) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def as_float(value: object) -> float:
    """``value`` as a float; never raises. Another integral number reads as its
    ``int`` does, another real number as its ``float`` (or ±infinity beyond them).

    >>> as_float(True), as_float(3), as_float(10**400), as_float(-(10**400)), as_float("x")
    (1.0, 3.0, inf, -inf, nan)
    >>> from fractions import Fraction
    >>> as_float(Fraction(1, 4)), as_float(Fraction(-(10**400), 3))
    (0.25, -inf)
    """
    if isinstance(value, float):
        return float(value)
    if isinstance(value, int):  # bool is an int
        return _whole_float(value)
    if isinstance(value, numbers.Integral):  # numpy's integers: exactly as their int
        return _whole_float(int(value))
    if isinstance(value, numbers.Real):
        try:
            return float(value)
        except OverflowError:  # a Fraction beyond the floats
            return -math.inf if value < 0 else math.inf
    return math.nan


def finite_number(value: object) -> float | None:
    """``value`` as a float if it is a number that is a finite float (not a boolean).

    >>> finite_number(3), finite_number(True), finite_number(10**400), finite_number("1")
    (3.0, None, None, None)
    """
    if isinstance(value, bool) or not is_number(value):
        return None
    number = as_float(value)
    return number if math.isfinite(number) else None
