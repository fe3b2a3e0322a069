"""Numbers of the kinds numpy makes, without numpy (not a dependency of the suite).

``numpy.int64`` is a ``numbers.Integral`` that is not an ``int``, and
``numpy.float32`` a ``numbers.Real`` that is not a ``float``; vLLM's own queue
takes them. :class:`Int64` stands in for the first; ``fractions.Fraction``, a
``numbers.Real`` of the standard library, for the second.
"""

from __future__ import annotations

import numbers


class Int64:
    """An integer that is not an ``int``, registered as ``numbers.Integral`` as
    numpy registers its integers; unbounded, so that huge ones can be tried."""

    __slots__ = ("value",)

    def __init__(self, value: int) -> None:
        self.value = value

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"Int64({self.value})"


numbers.Integral.register(Int64)
