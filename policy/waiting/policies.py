"""Ready-made queue policies."""

from __future__ import annotations

import math
from typing import Final

from policy.waiting.expr import is_name
from policy.waiting.queue_policy import QueuePolicy, make_policy

#: The Ascend FCFS lanes as one key: immediate, aged long, short, long.
ASCEND_LANES_KEY: Final = (
    "immediate ? 0"
    " : prompt > short_tokens && max_wait > 0 && waited >= max_wait ? 1"
    " : prompt <= short_tokens ? 2 : 3"
)


def fifo() -> QueuePolicy:
    """First come, first served: no keys.

    >>> fifo().is_fifo
    True
    """
    return make_policy(None).unwrap()


def static_priority(attribute: str = "priority") -> QueuePolicy:
    """Lower ``attribute`` first, ties by arrival (what vLLM's priority queue does).

    The key is static, so it is computed once at enqueue.

    >>> from policy.waiting.parse import unparse
    >>> [unparse(key) for key in static_priority("rank").keys]
    ['rank']
    """
    if not is_name(attribute):
        raise ValueError(f"{attribute!r} cannot name an attribute")
    return make_policy([attribute], attributes={attribute: "visible"}, timing="enqueue").unwrap()


def ascend_fcfs_lanes(short_tokens: float = 128, max_wait: float = 0.003) -> QueuePolicy:
    """The FCFS lanes of vLLM-Ascend: immediate first; then a long prompt that has
    waited at least ``max_wait``; then short prompts (``prompt <= short_tokens``);
    then long ones. ``max_wait = 0`` disables aging. Keys are evaluated at selection.

    >>> ascend_fcfs_lanes(max_wait=3).constants["max_wait"]
    3.0
    """
    if not (math.isfinite(short_tokens) and math.isfinite(max_wait)):
        raise ValueError("short_tokens and max_wait must be finite")
    return make_policy(
        [ASCEND_LANES_KEY],
        constants={"short_tokens": short_tokens, "max_wait": max_wait},
        attributes={"immediate": "visible", "prompt": "visible"},
    ).unwrap()
