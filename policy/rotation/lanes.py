"""Priority lanes of the speculative slot's grant backlog.

Clients choose their lane with a header value, so a lane is only a preference:
the skip cap in :mod:`policy.rotation.decisions` keeps any lane from starving another.
"""

from __future__ import annotations

from enum import IntEnum

from policy.text import trim

__all__ = ["Lane", "parse_lane"]


class Lane(IntEnum):
    """A priority lane; a higher value is granted first."""

    LOW = 0
    NORMAL = 1
    HIGH = 2

    @property
    def label(self) -> str:
        """The lane's header spelling, e.g. ``"normal"``."""
        return self.name.lower()


_LANES_BY_HEADER = {lane.label: lane for lane in Lane}


def parse_lane(header: str | None) -> Lane:
    """The lane named by a client's header value; anything unknown is NORMAL.

    The value is trimmed (:func:`policy.text.trim`, the same rule as the grant
    budget's) and case-insensitive; a missing, empty or unknown value is not an
    error, because a client header must never fail a request. A value that is
    not text (``str``) or None is the host's mistake, not the client's: a
    ``TypeError`` (decode bytes first).

    >>> parse_lane(" High\\u3000")
    <Lane.HIGH: 2>
    >>> parse_lane("urgent"), parse_lane(None), parse_lane("\\x1fhigh")
    (<Lane.NORMAL: 1>, <Lane.NORMAL: 1>, <Lane.NORMAL: 1>)
    >>> parse_lane(3)
    Traceback (most recent call last):
    ...
    TypeError: parse_lane reads a header's text (str) or None, not int
    """
    if header is None:
        return Lane.NORMAL
    if not isinstance(header, str):
        raise TypeError(
            f"parse_lane reads a header's text (str) or None, not {type(header).__name__}"
        )
    return _LANES_BY_HEADER.get(trim(header).lower(), Lane.NORMAL)
