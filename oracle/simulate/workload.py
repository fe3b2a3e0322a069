"""Seeded synthetic workloads for the policy comparison.

Everything random is drawn here from one ``random.Random(seed)``: the same seed
gives the same requests, so the comparison's numbers are reproducible. The
kernel (``policy/``) never sees the generator, only the requests it built.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from oracle.harness.admission_scenario import StepRequest
from oracle.harness.rotation_scenario import RotationRequest
from policy import Lane
from policy.text import shown

__all__ = [
    "CLASSES",
    "NORMAL_ID",
    "FloodShape",
    "WorkloadShape",
    "admission_workload",
    "request_class",
    "rotation_flood",
    "seeded",
]

#: Request classes the report is split by, in display order.
CLASSES: tuple[str, ...] = ("immediate", "short", "long")


@dataclass(frozen=True, slots=True)
class WorkloadShape:
    """The mix of an admission workload (token counts are inclusive ranges)."""

    requests: int = 4000
    rate: float = 20.0  # mean arrivals per second (Poisson)
    long_share: float = 0.25  # prompts above ``short_tokens``
    immediate_share: float = 0.05  # recovery requests (``immediate``), short prompts
    short_prompt: tuple[int, int] = (16, 256)
    long_prompt: tuple[int, int] = (600, 2000)
    short_out: tuple[int, int] = (8, 64)
    long_out: tuple[int, int] = (8, 48)
    lanes: tuple[float, float, float] = (0.2, 0.6, 0.2)  # shares of priority 0, 1, 2
    short_tokens: int = 256  # the class boundary (the Ascend lanes' threshold)


def request_class(request: StepRequest, short_tokens: int) -> str:
    """The report class of a request: ``immediate``, ``short`` or ``long``.

    >>> request_class(StepRequest("r", 0, 0.0, {"immediate": False}, 300, 1), 256)
    'long'
    """
    if request.attrs.get("immediate") is True:
        return "immediate"
    return "short" if request.prompt <= short_tokens else "long"


def seeded(seed: int) -> random.Random:
    """The one random source of a workload: ``random.Random(seed)`` for a seed that is
    a whole number >= 0. A negative seed is refused (``ValueError``): Python's
    generator seeds by the magnitude, so ``-1`` would silently be seed 1.

    >>> seeded(-1)
    Traceback (most recent call last):
    ...
    ValueError: the seed must be a whole number >= 0, not -1
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"the seed must be a whole number >= 0, not {shown(seed)}")
    return random.Random(seed)


def admission_workload(seed: int, shape: WorkloadShape) -> tuple[StepRequest, ...]:
    """``shape.requests`` step-engine requests with Poisson arrivals, drawn from ``seed``.

    Attributes: ``prompt``, ``out`` (hidden from keys by the policies), ``immediate``,
    ``priority`` (0 best) and ``queued`` (the enqueue time, for enqueue-timed keys).

    >>> a = admission_workload(7, WorkloadShape(requests=5))
    >>> a == admission_workload(7, WorkloadShape(requests=5)), len(a)
    (True, 5)
    """
    rng = seeded(seed)
    now = 0.0
    requests: list[StepRequest] = []
    for serial in range(shape.requests):
        now += rng.expovariate(shape.rate)
        at = round(now, 6)
        draw = rng.random()
        immediate = draw < shape.immediate_share
        long = not immediate and draw < shape.immediate_share + shape.long_share
        prompt = rng.randint(*(shape.long_prompt if long else shape.short_prompt))
        out = rng.randint(*(shape.long_out if long else shape.short_out))
        priority = rng.choices((0, 1, 2), weights=shape.lanes)[0]
        attrs: dict[str, float | bool] = {
            "prompt": prompt,
            "out": out,
            "immediate": immediate,
            "priority": priority,
            "queued": at,
        }
        requests.append(StepRequest(f"r{serial}", serial, at, attrs, prompt=prompt, out=out))
    return tuple(requests)


@dataclass(frozen=True, slots=True)
class FloodShape:
    """A client flooding the high lane while one normal-lane request runs speculatively."""

    flood_ticks: int = 400  # high-lane arrivals start at tick 0 and go on this long
    per_tick: float = 0.8  # chance of a high-lane arrival at each tick
    high_slices: tuple[int, int] = (2, 6)
    normal_arrives: int = 2  # after the flood began: the backlog is contended
    normal_slices: int = 40


NORMAL_ID = "N"


def rotation_flood(seed: int, shape: FloodShape) -> tuple[RotationRequest, ...]:
    """The flood: one normal-lane request ``N`` and high-lane requests ``H<i>``.

    >>> flood = rotation_flood(1, FloodShape(flood_ticks=5))
    >>> [r.id for r in flood if r.lane is Lane.NORMAL]
    ['N']
    """
    rng = seeded(seed)
    requests: list[RotationRequest] = []
    for tick in range(shape.flood_ticks):
        if tick == shape.normal_arrives:
            requests.append(RotationRequest(NORMAL_ID, Lane.NORMAL, shape.normal_slices, tick))
        if rng.random() < shape.per_tick:
            slices = rng.randint(*shape.high_slices)
            requests.append(RotationRequest(f"H{len(requests)}", Lane.HIGH, slices, tick))
    return tuple(requests)
