"""Benchmarks of the waiting queue against the queues a scheduler would write instead.

Every figure is a ratio against a baseline measured in the same run, on the
same seeded requests (see docs/performance.md for the method). Baselines,
written here for the purpose, mutable and as simple as a host would write them:

- FIFO: ``collections.deque`` (``append``, ``popleft``);
- priority: ``heapq`` over (priority, arrival, serial);
- Ascend lanes: three deques (immediate, short, long) with aging measured on
  the long lane's head, the algorithm of vLLM-Ascend's FCFS lanes queue;
- a hand-written Python loop computing the Ascend lanes decision over a list;
- an admission pass that re-sorts the whole waiting list by its key (SGLang's
  approach).

A kernel operation is timed on one persistent queue version of exactly N
entries, again and again (each call starts from the same version); a baseline
operation is timed on a mutable queue kept at N entries.
"""

from __future__ import annotations

import collections
import gc
import heapq
import itertools
import random
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Final

from oracle.bench.rows import Row
from policy.waiting import (
    Admitted,
    Moment,
    QueuePolicy,
    WaitingEntry,
    WaitingQueue,
    admit_many,
    ascend_fcfs_lanes,
    attempt_admission,
    fifo,
    make_policy,
    static_priority,
    vllm_priority,
)
from policy.waiting.fast import plan_of
from policy.waiting.fast.compiled import sort_key

SHORT_TOKENS: Final = 256
MAX_WAIT: Final = 0.1

#: Each row's target: at most this ratio to its baseline; ``memory`` in bytes per
#: entry, ``growth`` the same operation at N = 1,000. The ratios to C containers
#: (a deque, a heap) have none: they inform (issue 27: the gates are the serving
#: loop's, ``bench --vllm``; docs/performance.md says where their floor is).
TARGETS: Final[dict[str, float | None]] = {
    "fifo admission": None,
    "append": None,
    "requeue": None,
    "remove": None,
    "priority admission": None,
    "general static admission": None,
    "ascend lanes admission": None,
    "growth": 2.0,
    "build by appends": None,
    "build in one batch": None,
    "memory": 300.0,
}


@dataclass(frozen=True, slots=True)
class Request:
    """One seeded request."""

    identity: str
    serial: int
    arrival: float
    prompt: int
    priority: int
    immediate: bool


def requests(count: int, seed: int = 8) -> list[Request]:
    """``count`` seeded requests, arriving in order 1 ms apart on average."""
    draw = random.Random(seed)
    made, clock = [], 0.0
    for serial in range(count):
        clock += draw.expovariate(1000.0)
        made.append(
            Request(
                f"req-{serial}",
                serial,
                clock,
                draw.randint(1, 2 * SHORT_TOKENS),
                draw.randint(0, 9),
                draw.random() < 0.05,
            )
        )
    return made


POLICIES: Final[dict[str, Callable[[], QueuePolicy]]] = {
    "fifo": fifo,
    "priority": static_priority,
    # a static key with more values than the per-class lines keep apart
    "general static": lambda: make_policy(
        ["prompt"], attributes=["prompt"], timing="enqueue"
    ).unwrap(),
    "ascend lanes": lambda: ascend_fcfs_lanes(short_tokens=SHORT_TOKENS, max_wait=MAX_WAIT),
}


def attributes_for(policy_name: str, request: Request) -> dict[str, float | bool]:
    if policy_name == "fifo":
        return {}
    if policy_name == "priority":
        return {"priority": request.priority}
    if policy_name == "general static":
        return {"prompt": request.prompt}
    return {"immediate": request.immediate, "prompt": request.prompt}


def build(policy_name: str, policy: QueuePolicy, made: Sequence[Request]) -> WaitingQueue:
    queue = WaitingQueue()
    for request in made:
        queue = queue.append(
            policy,
            request.identity,
            attributes_for(policy_name, request),
            serial=request.serial,
            now=request.arrival,
        ).unwrap()
    return queue


def per_call(operation: Callable[[], object], calls: int, repeats: int) -> float:
    """Seconds per call of ``operation``: the best of ``repeats`` runs of ``calls`` calls."""
    best = float("inf")
    for _ in range(repeats):
        gc.disable()
        start = time.perf_counter()
        for _ in range(calls):
            operation()
        best = min(best, (time.perf_counter() - start) / calls)
        gc.enable()
    return best


def per_item(run: Callable[[int], object], calls: int, repeats: int) -> float:
    """Seconds per item of ``run(calls)``, which does ``calls`` items in one go."""
    best = float("inf")
    for _ in range(repeats):
        gc.disable()
        start = time.perf_counter()
        run(calls)
        best = min(best, (time.perf_counter() - start) / calls)
        gc.enable()
    return best


# --- baselines ------------------------------------------------------------------


class ThreeLanes:
    """vLLM-Ascend's FCFS lanes as a host writes them: three deques, aging on the
    long lane's head."""

    def __init__(self, short_tokens: int, max_wait: float) -> None:
        self.short_tokens, self.max_wait = short_tokens, max_wait
        self.immediate: collections.deque[Request] = collections.deque()
        self.short: collections.deque[Request] = collections.deque()
        self.long: collections.deque[Request] = collections.deque()

    def add(self, request: Request) -> None:
        if request.immediate:
            self.immediate.append(request)
        elif request.prompt <= self.short_tokens:
            self.short.append(request)
        else:
            self.long.append(request)

    def pop(self, now: float) -> Request:
        if self.immediate:
            return self.immediate.popleft()
        long = self.long
        if long and self.max_wait > 0 and now - long[0].arrival >= self.max_wait:
            return long.popleft()
        if self.short:
            return self.short.popleft()
        return long.popleft()


def ascend_loop(rows: Sequence[Request], now: float, short: float, wait: float) -> int:
    """The Ascend lanes decision by hand: the index of the first request of the best lane."""
    best, best_lane = 0, 4
    for index, request in enumerate(rows):
        if request.immediate:
            return index  # lane 0: nothing beats it, and it is the earliest there
        prompt = request.prompt
        if prompt > short and wait > 0 and now - request.arrival >= wait:
            lane = 1
        elif prompt <= short:
            lane = 2
        else:
            lane = 3
        if lane < best_lane:
            best, best_lane = index, lane
    return best


# --- rows ---------------------------------------------------------------------------


def always_fits(_entry: WaitingEntry) -> bool:
    return True


def _kernel_operations(
    name: str,
    policy: QueuePolicy,
    queue: WaitingQueue,
    *,
    now: float,
    fresh: Iterator[Request],
    middle: Request,
) -> dict[str, Callable[[], object]]:
    """One call of each kernel operation, on ``queue`` (the same version every call)."""

    def admission() -> object:
        return attempt_admission(queue, policy, Moment(now), always_fits)

    def append() -> object:
        request = next(fresh)
        attributes = attributes_for(name, request)
        return queue.append(policy, request.identity, attributes, serial=request.serial, now=now)

    def requeue() -> object:
        request = next(fresh)
        attributes = attributes_for(name, request)
        return queue.requeue_preempted(
            policy, request.identity, attributes, serial=request.serial, now=now
        )

    def remove() -> object:
        return queue.remove(middle.identity)

    return {"admission": admission, "append": append, "requeue": requeue, "remove": remove}


def operation_rows(sizes: Sequence[int], quick: bool) -> list[Row]:
    """Admission, append, requeue and remove per policy and size, with growth rows."""
    rows: list[Row] = []
    repeats = 3 if quick else 5
    calls = 300 if quick else 2000
    kernel_cost: dict[tuple[str, str, int], float] = {}
    for size in sizes:
        made = requests(size + calls)
        base, extra = made[:size], made[size:]
        now = base[-1].arrival + 0.05
        for name, make in POLICIES.items():
            policy = make()
            queue = build(name, policy, base)
            operations = _kernel_operations(
                name, policy, queue, now=now, fresh=itertools.cycle(extra), middle=base[size // 2]
            )
            for operation, run in operations.items():
                kernel_cost[name, operation, size] = per_call(run, calls, repeats)
        rows.extend(_baseline_rows(size, base, extra, now, kernel_cost, calls, repeats))
    smallest, largest = min(sizes), max(sizes)
    if smallest != largest:
        for name in POLICIES:
            for operation in ("admission", "append", "requeue", "remove"):
                big = kernel_cost[name, operation, largest]
                small = kernel_cost[name, operation, smallest]
                rows.append(
                    Row(
                        f"growth: {name} {operation}, N={largest:,} over N={smallest:,}",
                        largest,
                        big,
                        small,
                        big / small,
                        TARGETS["growth"],
                        "log growth: the same operation at the small size is the baseline",
                    )
                )
    return rows


def _baseline_rows(  # noqa: PLR0917 - one size's measurements, passed along
    size: int,
    base: Sequence[Request],
    extra: Sequence[Request],
    now: float,
    kernel_cost: dict[tuple[str, str, int], float],
    calls: int,
    repeats: int,
) -> list[Row]:
    rows: list[Row] = []
    pool = itertools.cycle(list(base) + list(extra))

    # deque FIFO, kept at `size` entries
    fifo_queue = collections.deque(base)
    feed = pool

    def deque_popleft() -> object:
        found = fifo_queue.popleft()
        fifo_queue.append(next(feed))
        return found

    def deque_append() -> object:
        fifo_queue.append(next(feed))
        return fifo_queue.popleft()

    pop_cost = per_call(deque_popleft, calls, repeats)
    append_cost = per_call(deque_append, calls, repeats)
    rows.append(
        _row(
            f"fifo admission, N={size:,}",
            size,
            kernel_cost["fifo", "admission", size],
            pop_cost,
            TARGETS["fifo admission"],
            "deque popleft",
        )
    )
    for operation in ("append", "requeue", "remove"):
        rows.append(
            _row(
                f"fifo {operation}, N={size:,}",
                size,
                kernel_cost["fifo", operation, size],
                append_cost,
                TARGETS[operation],
                "deque append",
            )
        )

    # heapq priority queue
    heap = [(r.priority, r.arrival, r.serial, r) for r in base]
    heapq.heapify(heap)
    heap_feed = pool

    def heap_pop() -> object:
        found = heapq.heappop(heap)
        request = next(heap_feed)
        heapq.heappush(heap, (request.priority, request.arrival, request.serial, request))
        return found

    push_pop = per_call(heap_pop, calls, repeats)

    def heap_push() -> object:
        request = next(heap_feed)
        heapq.heappush(heap, (request.priority, request.arrival, request.serial, request))
        return heapq.heappop(heap)

    # a pop and a push each time keeps the size; half of each is the operation
    rows.append(
        _row(
            f"priority admission, N={size:,}",
            size,
            kernel_cost["priority", "admission", size],
            push_pop / 2,
            TARGETS["priority admission"],
            "heappop (half a heappop+heappush pair)",
        )
    )
    rows.append(
        _row(
            f"general static admission, N={size:,}",
            size,
            kernel_cost["general static", "admission", size],
            push_pop / 2,
            TARGETS["general static admission"],
            "heappop (half a heappop+heappush pair); one key of 512 values: the B+tree",
        )
    )
    push_cost = per_call(heap_push, calls, repeats) / 2
    rows.append(
        _row(
            f"priority append, N={size:,}",
            size,
            kernel_cost["priority", "append", size],
            push_cost,
            TARGETS["append"],
            "heappush (half a heappush+heappop pair)",
        )
    )

    # three lanes
    lanes = ThreeLanes(SHORT_TOKENS, MAX_WAIT)
    for request in base:
        lanes.add(request)
    lane_feed = pool

    def lanes_pop() -> object:
        found = lanes.pop(now)
        lanes.add(next(lane_feed))
        return found

    def lanes_add() -> object:
        lanes.add(next(lane_feed))
        return lanes.pop(now)

    lane_pop_cost = per_call(lanes_pop, calls, repeats)
    rows.append(
        _row(
            f"ascend lanes admission, N={size:,}",
            size,
            kernel_cost["ascend lanes", "admission", size],
            lane_pop_cost,
            TARGETS["ascend lanes admission"],
            "three-lane deques with head aging",
        )
    )
    rows.append(
        _row(
            f"ascend lanes append, N={size:,}",
            size,
            kernel_cost["ascend lanes", "append", size],
            per_call(lanes_add, calls, repeats),
            TARGETS["append"],
            "three-lane add",
        )
    )
    return rows


def _row(  # noqa: PLR0917 - a Row's fields, in its order
    name: str, size: int | None, kernel: float, baseline: float, target: float | None, note: str
) -> Row:
    return Row(name, size, kernel, baseline, kernel / baseline, target, note)


def scan_rows(sizes: Sequence[int], quick: bool) -> list[Row]:
    """A full compiled scan of the Ascend key against the hand-written loop."""
    rows: list[Row] = []
    repeats = 3 if quick else 5
    for size in sizes:
        made = requests(size)
        policy = ascend_fcfs_lanes(short_tokens=SHORT_TOKENS, max_wait=MAX_WAIT)
        queue = build("ascend lanes", policy, made)
        entries = list(queue)
        now = made[-1].arrival + 0.01
        scan = plan_of(policy).scan
        budgets: dict[str, float] = {}
        plain = [r for r in made if not r.immediate]  # so the hand loop scans every row
        kept = [e for e in entries if not e.attributes["immediate"]]
        calls = max(1, 20_000 // size)
        kernel = per_call(partial(scan, kept, now, budgets), calls, repeats) / len(kept)
        loop = per_call(partial(ascend_loop, plain, now, SHORT_TOKENS, MAX_WAIT), calls, repeats)
        loop /= len(plain)
        rows.append(
            _row(
                f"ascend compiled scan per entry, N={size:,}",
                size,
                kernel,
                loop,
                1.5,
                "hand-written loop",
            )
        )
    return rows


def pass_rows(quick: bool) -> list[Row]:
    """Admitting 64 of 10,000 in one pass, against repeated scans and a re-sort."""
    size, admitted = 10_000, 64
    repeats = 2 if quick else 3
    made = requests(size)
    policy = make_policy(["prompt / (1 + waited)"], attributes=["prompt"]).unwrap()
    queue = WaitingQueue()
    for request in made:
        queue = queue.append(
            policy,
            request.identity,
            {"prompt": request.prompt},
            serial=request.serial,
            now=request.arrival,
        ).unwrap()
    now = made[-1].arrival + 0.5
    moment = Moment(now)

    def one_pass() -> object:
        return admit_many(queue, policy, moment, always_fits, limit=admitted)

    def repeated() -> object:
        step = queue
        for _ in range(admitted):
            outcome = attempt_admission(step, policy, moment, always_fits)
            assert isinstance(outcome, Admitted)
            step = outcome.queue
        return step

    keys = plan_of(policy).keys
    budgets: dict[str, float] = {}

    def resort() -> object:
        entries = list(queue)
        ranked = sorted(
            range(len(entries)),
            key=lambda i: (
                *sort_key(
                    keys(
                        entries[i].values,
                        entries[i].serial,
                        now,
                        now - entries[i].enqueued_at,
                        budgets,
                    )
                ),
                i,
            ),
        )
        step = queue
        for position in ranked[:admitted]:
            step = step.remove(entries[position].identity).unwrap()
        return step

    pass_cost = per_call(one_pass, 1, repeats)
    return [
        _speedup(
            "pass: 64 of 10,000 vs 64 repeated full scans",
            size,
            per_call(repeated, 1, repeats),
            pass_cost,
            30.0,
            "speed-up of one admission pass (times faster)",
        ),
        _speedup(
            "pass: 64 of 10,000 vs one re-sort by key (SGLang)",
            size,
            per_call(resort, 1, repeats),
            pass_cost,
            1.5,
            "speed-up of one admission pass (times faster)",
        ),
    ]


def build_rows(size: int, quick: bool) -> list[Row]:
    """Building a queue of ``size`` entries by appends and in one batch
    (``WaitingQueue.extend``), against building a deque by appends."""
    made = requests(size)
    policy = ascend_fcfs_lanes(short_tokens=SHORT_TOKENS, max_wait=MAX_WAIT)
    repeats = 1 if quick else 2
    batch = [
        (request.identity, attributes_for("ascend lanes", request), request.serial, request.arrival)
        for request in made
    ]

    def kernel(_: int) -> object:
        return build("ascend lanes", policy, made)

    def in_one_batch(_: int) -> object:
        return WaitingQueue().extend(policy, batch).unwrap()

    def deque_build(_: int) -> object:
        built: collections.deque[Request] = collections.deque()
        for request in made:
            built.append(request)
        return built

    deque_cost = per_item(deque_build, size, repeats * 3)
    return [
        _row(
            f"build by appends, ascend lanes, N={size:,}",
            size,
            per_item(kernel, size, repeats),
            deque_cost,
            TARGETS["build by appends"],
            "deque built by appends",
        ),
        _row(
            f"build in one batch, ascend lanes, N={size:,}",
            size,
            per_item(in_one_batch, size, repeats),
            deque_cost,
            TARGETS["build in one batch"],
            "deque built by appends; the kernel's WaitingQueue.extend",
        ),
    ]


#: The policies whose memory per entry is measured, with the attributes a host
#: gives each request under it (the drop-in's ready-made queues).
MEMORY_POLICIES: Final[
    dict[str, tuple[Callable[[], QueuePolicy], Callable[[Request], dict[str, float | bool]]]]
] = {
    "fifo": (fifo, lambda _: {}),
    "vllm priority": (
        vllm_priority,
        lambda r: {"priority": r.priority, "arrival_time": r.arrival},
    ),
    "ascend lanes": (
        lambda: ascend_fcfs_lanes(short_tokens=SHORT_TOKENS, max_wait=MAX_WAIT),
        lambda r: {"immediate": r.immediate, "prompt": r.prompt},
    ),
}


def memory_rows(size: int) -> list[Row]:
    """Bytes per waiting entry, every kernel structure included (tracemalloc), per
    policy of :data:`MEMORY_POLICIES`; the requests and their attribute maps, made
    beforehand, are not counted."""
    made = requests(size)
    rows = []
    for name, (make, attributes_of) in MEMORY_POLICIES.items():
        policy = make()
        given = [(r.identity, attributes_of(r), r.serial, r.arrival) for r in made]
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        queue = WaitingQueue()
        for identity, attributes, serial, arrival in given:
            queue = queue.append(policy, identity, attributes, serial=serial, now=arrival).unwrap()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        per_entry = (after - before) / size
        limit = TARGETS["memory"]
        assert limit is not None
        rows.append(
            Row(
                f"memory per entry, {name}, N={size:,}",
                size,
                per_entry,
                limit,
                per_entry / limit,
                1.0,
                f"{per_entry:.0f} bytes per entry; target at most {limit:.0f}"
                f" (ratio = bytes / {limit:.0f})",
            )
        )
        del queue, given
    return rows


def _speedup(  # noqa: PLR0917 - a Row's fields, in its order
    name: str, size: int, other: float, kernel: float, target: float, note: str
) -> Row:
    # kernel_seconds is the pass, baseline the slower way; the ratio is how many times faster
    return Row(name, size, kernel, other, other / kernel, target, note, higher_is_better=True)
