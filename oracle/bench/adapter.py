"""Benchmarks of the drop-in vLLM queue against the kernel operations it wraps.

Each row times one adapter operation (:mod:`policy.adapters.vllm`) and the
kernel operation it wraps, measured in the same run, on the same queue state:
before each repeat the kernel sequence starts from the adapter's current
version (``snapshot``), so both do the same work, and the difference is the
adapter's own cost (reading the request's attributes, the clock, the id map,
the pin, the statistics). The target is a ratio of at most 1.2.

In a row, the ``kernel`` column is the adapter's time and ``baseline`` the
kernel operation's (the note names it), per call:

- ``add_request`` against ``WaitingQueue.append`` (attributes already built):
  the adds alone, which the adapter defers (absorbed untimed, by the restore);
- ``add_request, absorbed``: the same adds, then the one read (``snapshot``) that
  absorbs them in one ``WaitingQueue.extend``, against the same appends: the
  adds' whole cost;
- ``pop_request`` against ``select_waiting`` then ``WaitingQueue.without``;
- ``peek_request`` then ``pop_request`` (what vLLM's scheduler does) against
  the same (the pin makes the second selection free); both end with the read
  (``snapshot``) that takes deferred pops (``fcfs``) out of the held version;
- ``prepend_request`` against ``WaitingQueue.requeue_preempted`` (or, for a
  queue that re-inserts prepended requests by their keys, as
  ``priority_queue()`` does, ``WaitingQueue.append``);
- ``remove_request`` against ``WaitingQueue.remove``;
- ``remove_requests`` of 64 finished requests, half of them waiting, against
  ``WaitingQueue.remove`` of the 32 waiting ones;
- iterating the first 64 requests against the first 64 of ``dispatch_order``.

Between repeats the adapter is brought back to N requests by untimed
operations (removing what was added, adding back what was taken).
"""

from __future__ import annotations

import gc
import itertools
import logging
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from oracle.bench.rows import Row
from oracle.bench.waiting import MAX_WAIT, SHORT_TOKENS, per_call, requests
from policy.adapters.vllm import (
    DEFAULT_ATTRIBUTES,
    WaitingRequestQueue,
    fcfs_queue,
    priority_queue,
    short_request_first_queue,
)
from policy.waiting import (
    Moment,
    WaitingQueue,
    dispatch_order,
    select_waiting,
    selection_path,
)

#: The adapter's target: every operation within this factor of the kernel's.
TARGET: Final = 1.2
#: Finished requests per ``remove_requests`` call, half of them waiting.
BATCH: Final = 64
#: Requests read per iteration row.
ITERATED: Final = 64


@dataclass(slots=True, eq=False)
class VllmRequest:
    """A stand-in with the attributes the default mapping reads from vLLM's Request."""

    request_id: str
    arrival_time: float
    priority: int
    num_prompt_tokens: int
    status: str
    num_computed_tokens: int
    num_output_tokens: int


class Clock:
    """The injected clock: ``now`` is set by the benchmark."""

    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


#: The adapters measured: name -> constructor (their policies as the waiting rows use).
QUEUES: Final[dict[str, Callable[[Clock], WaitingRequestQueue[Any]]]] = {
    "fcfs": lambda clock: fcfs_queue(clock=clock),
    "priority": lambda clock: priority_queue(clock=clock),
    "short-first": lambda clock: short_request_first_queue(
        threshold=SHORT_TOKENS, long_max_wait_ms=MAX_WAIT * 1000.0, clock=clock
    ),
}


def vllm_requests(count: int, seed: int = 8) -> list[VllmRequest]:
    """The waiting benchmark's seeded requests, shaped as vLLM's (an immediate one
    has computed tokens, as a recovered request has)."""
    return [
        VllmRequest(
            r.identity,
            r.arrival,
            r.priority,
            r.prompt,
            "WAITING",
            16 if r.immediate else 0,
            0,
        )
        for r in requests(count, seed)
    ]


@dataclass(slots=True)
class _Setup:
    """One adapter at N requests, and what its operations are fed with."""

    queue: WaitingRequestQueue[Any]
    clock: Clock
    fresh: list[VllmRequest]  # never queued before
    attributes: list[dict[str, Any]]  # the kernel's attributes of each fresh request
    middle: list[VllmRequest]  # waiting, to remove
    absent: list[VllmRequest]  # finished, never waiting


def _setup(name: str, size: int, calls: int) -> _Setup:
    made = vllm_requests(size + calls + BATCH)
    base, fresh = made[:size], made[size : size + calls]
    absent = made[size + calls :]
    clock = Clock()
    queue = QUEUES[name](clock)
    for request in base:  # enqueued at its arrival: the lanes stay in time order
        clock.now = request.arrival_time
        queue.add_request(request)
    clock.now = base[-1].arrival_time + 0.05
    read = sorted(queue.policy.attributes_read)
    # What the adapter reads from each request, read here before any timing starts.
    attributes = [{key: DEFAULT_ATTRIBUTES[key](r) for key in read} for r in fresh]
    start = size // 4
    middle = base[start : start + min(calls, size // 2)]
    return _Setup(queue, clock, fresh, attributes, middle, absent)


@dataclass(frozen=True, slots=True)
class _Measured:
    """One row's work: ``adapter()`` does ``per`` operations on the adapter,
    ``kernel(version)`` the same ``per`` kernel operations from ``version``, and
    ``restore()`` brings the adapter back to its N requests (untimed)."""

    operation: str
    wraps: str
    adapter: Callable[[], object]
    kernel: Callable[[WaitingQueue], object]
    restore: Callable[[], object]
    per: int


def _pair(measured: _Measured, setup: _Setup, repeats: int) -> tuple[float, float]:
    """Best seconds per operation of the adapter and of the kernel, the kernel's run
    starting each time from the adapter's version before the adapter's run."""
    best_adapter = best_kernel = float("inf")
    for _ in range(repeats):
        snapshot = setup.queue.snapshot
        best_kernel = min(best_kernel, per_call(partial(measured.kernel, snapshot), 1, 1))
        best_adapter = min(best_adapter, per_call(measured.adapter, 1, 1))
        measured.restore()
    return best_adapter / measured.per, best_kernel / measured.per


def _each(operation: Callable[[Any], object], items: Sequence[Any]) -> Callable[[], None]:
    """``operation`` on each of ``items``, in order (``items`` read when called)."""

    def run() -> None:
        for item in items:
            operation(item)

    return run


def _work(setup: _Setup, calls: int) -> list[_Measured]:
    """Every measured operation on ``setup``'s adapter."""
    queue, policy, clock = setup.queue, setup.queue.policy, setup.clock
    fresh, attributes, middle = setup.fresh, setup.attributes, setup.middle
    popped: list[Any] = []
    put_back = _each(queue.add_request, popped)

    def kernel_adds(add: Callable[..., Any]) -> Callable[[WaitingQueue], None]:
        """The fresh requests added to a version by ``add`` (``append`` or
        ``requeue_preempted``), as the adapter adds them."""

        def run(version: WaitingQueue) -> None:
            now = clock.now
            for serial, (request, given) in enumerate(zip(fresh, attributes, strict=True)):
                added = add(version, policy, request.request_id, given, serial=serial, now=now)
                version = added.unwrap()

        return run

    add_fresh = _each(queue.add_request, fresh)

    def absorbed_adds() -> None:
        """The adds, then the one read that absorbs them (``snapshot``): their whole cost."""
        add_fresh()
        _ = queue.snapshot

    def drop_fresh() -> None:
        queue.remove_requests(fresh)

    def pops() -> None:
        popped.clear()
        for _ in range(calls):
            popped.append(queue.pop_request())
        _ = queue.snapshot  # the deferred pops (fcfs) taken out: their whole cost

    timeless = selection_path(policy) in ("fifo", "static")  # selection reads no moment: build none
    any_moment = Moment(0.0)

    def moment() -> Moment:
        return any_moment if timeless else Moment(clock.now)

    def admissions(version: WaitingQueue) -> None:
        for _ in range(calls):
            version = version.without(select_waiting(version, policy, moment()).unwrap().entry)

    def peek_pops() -> None:
        popped.clear()
        for _ in range(calls):
            queue.peek_request()
            popped.append(queue.pop_request())
        _ = queue.snapshot  # the deferred pops (fcfs) taken out: their whole cost

    def select_removes(version: WaitingQueue) -> None:  # a host peeks, then takes
        for _ in range(calls):
            version = version.without(select_waiting(version, policy, moment()).unwrap().entry)

    def kernel_removes(removed: Sequence[VllmRequest]) -> Callable[[WaitingQueue], None]:
        def run(version: WaitingQueue) -> None:
            for request in removed:
                version = version.remove(request.request_id).unwrap()

        return run

    # finished requests, half of them waiting (vLLM removes every finished one)
    half = BATCH // 2
    parts = [middle[at : at + half] for at in range(0, len(middle) - half + 1, half)]
    batches = [part + setup.absent[: BATCH - len(part)] for part in parts]
    waiting_in_batches = [request for part in parts for request in part]

    passes = max(1, calls // ITERATED)

    def iterate() -> None:
        for _ in range(passes):
            for _request in itertools.islice(queue, ITERATED):
                pass

    def kernel_iterate(version: WaitingQueue) -> None:
        for _ in range(passes):
            order = dispatch_order(version, policy, Moment(clock.now))
            for _selection in itertools.islice(order, ITERATED):
                pass

    resumes = queue.prepend_resumed
    return [
        _Measured(
            "add_request",
            "append",
            _each(queue.add_request, fresh),
            kernel_adds(WaitingQueue.append),
            drop_fresh,
            calls,
        ),
        _Measured(
            "add_request, absorbed",
            "append",
            absorbed_adds,
            kernel_adds(WaitingQueue.append),
            drop_fresh,
            calls,
        ),
        _Measured("pop_request", "select_waiting + without", pops, admissions, put_back, calls),
        _Measured(
            "peek+pop", "select_waiting + without", peek_pops, select_removes, put_back, calls
        ),
        _Measured(
            "prepend_request",
            "requeue_preempted" if resumes else "append",
            _each(queue.prepend_request, fresh),
            kernel_adds(WaitingQueue.requeue_preempted if resumes else WaitingQueue.append),
            drop_fresh,
            calls,
        ),
        _Measured(
            "remove_request",
            "remove",
            _each(queue.remove_request, middle),
            kernel_removes(middle),
            _each(queue.add_request, middle),
            len(middle),
        ),
        _Measured(
            f"remove_requests of {BATCH}",
            f"remove of the {half} waiting",
            _each(queue.remove_requests, batches),
            kernel_removes(waiting_in_batches),
            _each(queue.add_request, waiting_in_batches),
            max(1, len(batches)),
        ),
        _Measured(
            f"iterate first {ITERATED}",
            "dispatch_order",
            iterate,
            kernel_iterate,
            lambda: None,
            passes * ITERATED,
        ),
    ]


def adapter_rows(sizes: Sequence[int], quick: bool) -> list[Row]:
    """Every adapter operation per queue and size, against the kernel operation it wraps."""
    repeats = 5 if quick else 9  # interleaved, best of: the ratio is what matters
    calls = 300 if quick else 2000
    rows: list[Row] = []
    # The queue's aged-long warning is for operators; the benchmark ages on purpose.
    adapter_log = logging.getLogger("policy.adapters.vllm")
    level = adapter_log.level
    adapter_log.setLevel(logging.ERROR)
    try:
        for size in sizes:
            count = min(calls, size // 2)  # a pop run must not empty the queue
            for name in QUEUES:
                setup = _setup(name, size, count)
                for measured in _work(setup, count):
                    spent, wrapped = _pair(measured, setup, repeats)
                    rows.append(
                        Row(
                            f"adapter {name} {measured.operation}, N={size:,}",
                            size,
                            spent,
                            wrapped,
                            spent / wrapped,
                            TARGET,
                            f"adapter (kernel column) against the {measured.wraps} it wraps",
                        )
                    )
    finally:
        adapter_log.setLevel(level)
    return rows


#: Issue 27: a preemption costs at 100,000 waiting at most this many times what it
#: costs at 1,000 (no index rebuilt, no structure walked).
PREEMPTION_GROWTH: Final = 3.0
#: Preemptions timed per queue and size.
PREEMPTIONS: Final = 200

#: Every ready-made queue (docs/adapters.md), for the preemption rows.
READY_MADE: Final[dict[str, Callable[[Clock], WaitingRequestQueue[Any]]]] = {
    **QUEUES,
    "priority, preempted first": lambda clock: priority_queue(True, clock=clock),
}


def _preemption_seconds(name: str, size: int, repeats: int) -> float:
    """Seconds of one preemption at ``size`` waiting: ``prepend_request`` of a request
    taken a moment before, then the next ``peek_request`` (the scheduler's next
    selection), the median over the repeats' best; each is undone untimed."""
    made = vllm_requests(size + PREEMPTIONS)
    base, preempted = made[:size], made[size:]
    clock = Clock()
    queue = READY_MADE[name](clock)
    for request in base:
        clock.now = request.arrival_time
        queue.add_request(request)
    clock.now = base[-1].arrival_time + 0.05
    queue.peek_request()  # the arrivals joined: not part of a preemption
    best = float("inf")
    timer = time.perf_counter
    for _ in range(repeats):
        gc.disable()
        spent = 0.0
        for request in preempted:
            started = timer()
            queue.prepend_request(request)
            queue.peek_request()
            spent += timer() - started
            queue.remove_request(request)
        gc.enable()
        best = min(best, spent / len(preempted))
    return best


def preemption_rows(small: int, large: int, quick: bool) -> list[Row]:
    """A preemption at ``large`` waiting against one at ``small``, per ready-made queue."""
    repeats = 3 if quick else 7
    rows = []
    for name in READY_MADE:
        at_small = _preemption_seconds(name, small, repeats)
        at_large = _preemption_seconds(name, large, repeats)
        rows.append(
            Row(
                f"preemption {name}, N={large:,} over N={small:,}",
                large,
                at_large,
                at_small,
                at_large / at_small,
                PREEMPTION_GROWTH,
                "prepend_request then the next peek_request; the same at the small size is"
                " the baseline",
            )
        )
    return rows


#: Issue 27: steady-state cycles (one arrival and one admission each) over which the
#: drop-in's memory must not grow.
STEADY_CYCLES: Final = 100_000
#: The most the traced memory may grow over them, as a share of what it holds.
STEADY_GROWTH: Final = 0.01


def steady_state_rows(size: int, cycles: int) -> list[Row]:
    """Memory after ``cycles`` arrivals and admissions at ``size`` waiting, against
    memory before them, per ready-made queue (``tracemalloc``; the requests made
    beforehand are not counted)."""
    rows = []
    for name in READY_MADE:
        made = vllm_requests(size + cycles)
        arriving = iter(made[size:])
        gc.collect()
        tracemalloc.start()  # the requests, made before, are not counted
        clock = Clock()
        queue = READY_MADE[name](clock)
        for request in made[:size]:
            clock.now = request.arrival_time
            queue.add_request(request)
        del made
        before = 0
        for step in range(cycles):  # warm: every structure at its steady shape
            if step == cycles // 2:
                gc.collect()
                before = tracemalloc.get_traced_memory()[0]
            request = next(arriving)
            clock.now = request.arrival_time
            queue.add_request(request)
            queue.peek_request()
            queue.pop_request()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        rows.append(
            Row(
                f"steady state {name}: memory after {cycles - cycles // 2:,} more cycles,"
                f" N={size:,}",
                size,
                float(after),
                float(before),
                after / before,
                1.0 + STEADY_GROWTH,
                "bytes traced after the second half of the cycles over after the first",
            )
        )
    return rows
