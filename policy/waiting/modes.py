"""The closed vocabularies of waiting selection, shared by the policy and its analysis.

``Timing``: when a policy's keys are computed, at every ``selection`` or once at
``enqueue``. ``Visibility``: whether a declared attribute is ``visible`` to the
keys or ``hidden``. ``Path``: how selection is computed for a policy, proven exact
from its keys (``fifo``, ``static``, ``lanes``, ``scan``; see
:mod:`policy.waiting.fast.plan`).

``TIMINGS`` and ``VISIBILITIES`` list the values a policy document may name.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

__all__ = ["TIMINGS", "VISIBILITIES", "Path", "Timing", "Visibility"]

Timing: TypeAlias = Literal["selection", "enqueue"]
Visibility: TypeAlias = Literal["visible", "hidden"]
Path: TypeAlias = Literal["fifo", "static", "lanes", "scan"]

TIMINGS: Final[tuple[Timing, ...]] = ("selection", "enqueue")
VISIBILITIES: Final[tuple[Visibility, ...]] = ("visible", "hidden")
