"""Ready-made queue policies.

They are Python constructors: a bad argument is a ``TypeError`` (wrong type) or
a ``ValueError`` (wrong value) whose message names the argument, as for any
Python function. Policies from data go through :func:`~policy.waiting.make_policy`
or :func:`~policy.waiting.load_policy`, which return a ``Result`` instead.
"""

from __future__ import annotations

from typing import Final

from returns.result import Failure, Result

from policy.waiting.errors import PolicyError
from policy.waiting.expr import RESERVED_WORDS, is_name
from policy.waiting.numbers import finite_number, is_number, shown
from policy.waiting.queue_policy import QueuePolicy, make_policy

#: The Ascend FCFS lanes as one key: immediate, aged long, short, long.
ASCEND_LANES_KEY: Final = (
    "immediate ? 0"
    " : prompt > short_tokens && max_wait > 0 && waited >= max_wait ? 1"
    " : prompt <= short_tokens ? 2 : 3"
)


def _built(made: Result[QueuePolicy, PolicyError]) -> QueuePolicy:
    # The arguments were checked: a refusal here is a defect of this module.
    if isinstance(made, Failure):
        raise AssertionError(f"a ready-made policy was refused: {made.failure()}")
    return made.unwrap()


def _number(argument: str, value: object) -> float:
    if isinstance(value, bool) or not is_number(value):
        raise TypeError(f"{argument} must be a number, not {shown(value)}")
    number = finite_number(value)
    if number is None:
        raise ValueError(f"{argument} must be a finite number, not {shown(value)}")
    return number


def fifo() -> QueuePolicy:
    """First come, first served: no keys.

    >>> fifo().is_fifo
    True
    """
    return _built(make_policy(None))


def static_priority(attribute: str = "priority") -> QueuePolicy:
    """Lower ``attribute`` first, ties in queue order.

    The key is static, so it is computed once at enqueue. This is not vLLM's
    priority order, which breaks ties by ``arrival_time``: see :func:`vllm_priority`.

    >>> from policy.waiting.parse import unparse
    >>> [unparse(key) for key in static_priority("rank").keys]
    ['rank']
    >>> static_priority("now")
    Traceback (most recent call last):
    ...
    ValueError: attribute must be a name that is not a reserved word, not 'now'
    """
    if not isinstance(attribute, str):
        raise TypeError(f"attribute must be a name (text), not {shown(attribute)}")
    if not is_name(attribute):
        why = (
            "a name that is not a reserved word"
            if attribute in RESERVED_WORDS
            else "a name (ASCII letters, digits and _, not starting with a digit)"
        )
        raise ValueError(f"attribute must be {why}, not {shown(attribute)}")
    return _built(make_policy([attribute], attributes=[attribute], timing="enqueue"))


#: The key that puts a prepended request (a preempted one, put back) first within
#: its priority: ``prepended`` is an attribute the host sets (the drop-in vLLM queue
#: sets it: True when ``prepend_request`` queued the request).
PREPENDED_FIRST_KEY: Final = "prepended ? 0 : 1"


def vllm_priority(preempted_first: bool = False) -> QueuePolicy:
    """vLLM's priority order: lower ``priority`` first, then earlier ``arrival_time``,
    then queue order (vLLM compares request ids there; docs/adapters.md says why not).

    With ``preempted_first``, a request whose ``prepended`` attribute is true comes
    first *within its priority* (before every request of that priority that is not,
    never before a request of a better priority), as the fixes proposed for vLLM
    #41951 order preempted requests; among them, earlier ``arrival_time`` first.

    The keys read no moment (the ``static`` path): they are computed once, when a
    request joins, and not stored in its entry.

    >>> from policy.waiting.fast import selection_path
    >>> from policy.waiting.parse import unparse
    >>> [unparse(key) for key in vllm_priority().keys], selection_path(vllm_priority())
    (['priority', 'arrival_time'], 'static')
    >>> [unparse(key) for key in vllm_priority(preempted_first=True).keys]
    ['priority', 'prepended ? 0 : 1', 'arrival_time']
    >>> vllm_priority(preempted_first=1)
    Traceback (most recent call last):
    ...
    TypeError: preempted_first must be True or False, not 1
    """
    if preempted_first is not True and preempted_first is not False:
        raise TypeError(f"preempted_first must be True or False, not {shown(preempted_first)}")
    if preempted_first:
        return _built(
            make_policy(
                ["priority", PREPENDED_FIRST_KEY, "arrival_time"],
                attributes=["priority", "prepended", "arrival_time"],
            )
        )
    return _built(
        make_policy(["priority", "arrival_time"], attributes=["priority", "arrival_time"])
    )


def ascend_fcfs_lanes(short_tokens: float = 128, max_wait: float = 0.003) -> QueuePolicy:
    """The FCFS lanes of vLLM-Ascend: immediate first; then a long prompt that has
    waited at least ``max_wait``; then short prompts (``prompt <= short_tokens``);
    then long ones. ``max_wait = 0`` disables aging. Keys are evaluated at selection.

    Both arguments must be finite numbers (not booleans), ``max_wait`` at least 0.

    >>> ascend_fcfs_lanes(max_wait=3).constants["max_wait"]
    3.0
    >>> ascend_fcfs_lanes(short_tokens=True)
    Traceback (most recent call last):
    ...
    TypeError: short_tokens must be a number, not True
    """
    short = _number("short_tokens", short_tokens)
    wait = _number("max_wait", max_wait)
    if wait < 0:
        raise ValueError(f"max_wait must be at least 0 (0 disables aging), not {shown(max_wait)}")
    return _built(
        make_policy(
            [ASCEND_LANES_KEY],
            constants={"short_tokens": short, "max_wait": wait},
            attributes=["immediate", "prompt"],
        )
    )
