"""Priority lanes of the speculative slot's grant backlog.

Clients choose their lane with a header value, so a lane is only a preference:
the skip cap in :mod:`policy.rotation.decisions` keeps any lane from starving another.
"""

from __future__ import annotations

from enum import IntEnum

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

    The value is trimmed and case-insensitive; a missing, empty or unknown value
    is not an error, because a client header must never fail a request.

    >>> parse_lane(" High ")
    <Lane.HIGH: 2>
    >>> parse_lane("urgent"), parse_lane(None)
    (<Lane.NORMAL: 1>, <Lane.NORMAL: 1>)
    """
    if header is None:
        return Lane.NORMAL
    return _LANES_BY_HEADER.get(header.strip().lower(), Lane.NORMAL)
