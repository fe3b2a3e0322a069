"""The total order of key lists (waiting.md, Keys), written as a comparison.

"Comparison of two entries: their key lists lexicographically, element by
element numerically; all NaNs are equal to each other and greater than
+infinity; -0.0 equals 0.0. The smallest wins."

Written by explicit cases (NaN cases first, then the numeric ones), not by
mapping values to sort keys.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["key_list_compare", "key_list_less", "value_compare"]


def value_compare(a: float, b: float) -> int:
    """-1, 0 or 1 as ``a`` is below, equal to or above ``b`` in the total order.

    "all NaNs are equal to each other and greater than +infinity; -0.0 equals 0.0"

    >>> value_compare(math.nan, -math.nan), value_compare(math.nan, math.inf)
    (0, 1)
    >>> value_compare(math.inf, math.nan), value_compare(-0.0, 0.0)
    (-1, 0)
    >>> value_compare(1.0, 2.0), value_compare(2.0, 1.0), value_compare(-math.inf, -1e308)
    (-1, 1, -1)
    """
    # the NaN cases: "all NaNs are equal to each other and greater than +infinity"
    if math.isnan(a) and math.isnan(b):
        return 0
    if math.isnan(a):
        return 1
    if math.isnan(b):
        return -1
    # the numeric cases ("element by element numerically"); -0.0 == 0.0 holds
    # numerically, so "-0.0 equals 0.0" falls in the last case
    if a < b:
        return -1
    if a > b:
        return 1
    return 0


def key_list_compare(a: Sequence[float], b: Sequence[float]) -> int:
    """-1, 0 or 1: the key lists "lexicographically, element by element".

    The first element that differs decides. If one list is a prefix of the other
    (never the case for two lists from one policy), the shorter is the smaller,
    as in any lexicographic order.

    >>> key_list_compare([0.0, 1.0], [0.0, 0.0]), key_list_compare([0.0, 0.0], [-0.0, 0.0])
    (1, 0)
    >>> key_list_compare([1.0, math.nan], [1.0, math.inf]), key_list_compare([], [])
    (1, 0)
    >>> key_list_compare([1.0], [1.0, 0.0]), key_list_compare([2.0], [1.0, 5.0])
    (-1, 1)
    """
    for x, y in zip(a, b, strict=False):
        decided = value_compare(x, y)
        if decided != 0:
            return decided
    if len(a) < len(b):
        return -1
    if len(a) > len(b):
        return 1
    return 0


def key_list_less(a: Sequence[float], b: Sequence[float]) -> bool:
    """Whether key list ``a`` comes strictly before ``b`` ("the smallest wins").

    >>> key_list_less([2.0], [3.0]), key_list_less([math.nan], [math.inf])
    (True, False)
    >>> key_list_less([0.0], [-0.0])
    False
    """
    return key_list_compare(a, b) < 0
