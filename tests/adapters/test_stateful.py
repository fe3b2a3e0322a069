"""The drop-in queue as a state machine, against small models written here.

Four queues, four models, each kept by plain Python structures:

- ``fcfs_queue`` against a ``collections.deque`` (vLLM's FCFS queue is one);
- ``priority_queue()`` against a ``heapq`` heap of (priority, arrival_time,
  insertion number): vLLM's priority queue, ties in insertion order instead of
  by request id, a prepended request pushed like a new one;
- ``priority_queue(preempted_first=True)`` against a heap of (priority, 0 for a
  prepended request and 1 for an added one, arrival_time, insertion number);
- ``short_request_first_queue(256, 100 ms)`` against a deque of prepended
  requests in front of a list whose order is the Ascend lanes' class at the
  current clock, then insertion number.

Rules add (one, or several with nothing read in between, which the queue
absorbs in one batch), prepend (one, or several through ``prepend_requests`` from a list,
an iterator or a deque), pop, peek, remove (waiting or absent; one, or a batch
with ``remove_requests``), and move the clock. Each model keeps the pin as
vLLM's scheduler needs it: a peek pins its request until the next pop, add,
prepend or remove. After every step the queue's length, truth, iteration order
and membership agree with the model.
"""

from __future__ import annotations

import collections
import contextlib
import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from policy.adapters.vllm import (
    WaitingRequestQueue,
    fcfs_queue,
    priority_queue,
    short_request_first_queue,
)
from policy.waiting import fifo
from tests.adapters.stand_ins import FakeClock, Req

THRESHOLD = 256
MAX_WAIT = 100.0 / 1000.0  # the adapter's conversion of long_max_wait_ms=100


class Model:
    """The order a model keeps; ``pinned`` is shared by every model."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.pinned: Req | None = None
        self.counter = itertools.count()

    def add(self, request: Req) -> None:
        raise NotImplementedError

    def prepend(self, request: Req) -> None:
        raise NotImplementedError

    def take(self, request: Req) -> None:
        raise NotImplementedError

    def order(self) -> list[Req]:
        """The waiting requests in the order repeated pops at the clock's now take them."""
        raise NotImplementedError

    def best(self) -> Req:
        return self.order()[0]


class DequeModel(Model):
    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock)
        self.items: collections.deque[Req] = collections.deque()

    def add(self, request: Req) -> None:
        self.items.append(request)

    def prepend(self, request: Req) -> None:
        self.items.appendleft(request)

    def take(self, request: Req) -> None:
        self.items.remove(request)

    def order(self) -> list[Req]:
        return list(self.items)

    def best(self) -> Req:
        return self.items[0]


class HeapModel(Model):
    """vLLM's priority queue: a heap; a prepended request is pushed like a new one."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock)
        self.heap: list[tuple[Any, ...]] = []

    def add(self, request: Req) -> None:
        item = (request.priority, request.arrival_time, next(self.counter), request)
        heapq.heappush(self.heap, item)

    def prepend(self, request: Req) -> None:
        self.add(request)

    def take(self, request: Req) -> None:
        self.heap = [item for item in self.heap if item[-1] is not request]
        heapq.heapify(self.heap)

    def order(self) -> list[Req]:
        return [item[-1] for item in sorted(self.heap)]

    def best(self) -> Req:
        return self.heap[0][-1]  # type: ignore[no-any-return]


class PrependedFirstHeapModel(HeapModel):
    """A prepended request first within its priority (then by arrival), never across."""

    def _push(self, request: Req, rank: int) -> None:
        item = (request.priority, rank, request.arrival_time, next(self.counter), request)
        heapq.heappush(self.heap, item)

    def add(self, request: Req) -> None:
        self._push(request, 1)

    def prepend(self, request: Req) -> None:
        self._push(request, 0)


def recovering(request: Req) -> bool:
    return (
        request.status == "PREEMPTED"
        or request.num_computed_tokens > 0
        or request.num_output_tokens > 0
    )


class LanesModel(Model):
    """Prepended requests first; then by the Ascend lane at ``now``, ties by insertion."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock)
        self.resumed: collections.deque[Req] = collections.deque()
        self.waiting: list[tuple[Req, float, int]] = []

    def add(self, request: Req) -> None:
        self.waiting.append((request, self.clock.now, next(self.counter)))

    def prepend(self, request: Req) -> None:
        self.resumed.appendleft(request)

    def take(self, request: Req) -> None:
        if any(r is request for r in self.resumed):
            self.resumed.remove(request)
        else:
            self.waiting = [item for item in self.waiting if item[0] is not request]

    @staticmethod
    def lane(request: Req, queued: float, now: float) -> int:
        if recovering(request):
            return 0
        is_long = request.num_prompt_tokens > THRESHOLD
        if is_long and MAX_WAIT > 0 and now - queued >= MAX_WAIT:
            return 1
        return 3 if is_long else 2

    def order(self) -> list[Req]:
        now = self.clock.now
        ranked = sorted(self.waiting, key=lambda item: (self.lane(item[0], item[1], now), item[2]))
        return [*self.resumed, *(item[0] for item in ranked)]


# Few values, so that ties on priority and arrival are common and lanes meet.
requests_specs: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {
        "priority": st.integers(0, 2),
        "arrival_time": st.sampled_from([0.0, 1.0, 2.0]),
        "num_prompt_tokens": st.sampled_from([10, 256, 257, 1000]),
        "status": st.sampled_from(["WAITING"] * 9 + ["PREEMPTED"]),
        "num_output_tokens": st.sampled_from([0] * 9 + [2]),
    }
)


class QueueMachine(RuleBasedStateMachine):
    make_queue: Callable[[FakeClock], WaitingRequestQueue[Any]]
    make_model: Callable[[FakeClock], Model]

    gone = Bundle("gone")  # requests that were queued and are no longer

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.queue = type(self).make_queue(self.clock)
        self.model = type(self).make_model(self.clock)
        self.names = itertools.count()
        self.known: list[Req] = []

    def fresh(self, spec: dict[str, Any]) -> Req:
        request = Req(f"r{next(self.names)}", **spec)
        self.known.append(request)
        return request

    def waiting(self) -> list[Req]:
        return self.model.order()

    @rule(spec=requests_specs)
    def add(self, spec: dict[str, Any]) -> None:
        request = self.fresh(spec)
        self.queue.add_request(request)
        self.model.pinned = None
        self.model.add(request)

    @rule(
        specs=st.lists(requests_specs, min_size=2, max_size=5),
        seconds=st.sampled_from([0.0, 0.03, 0.1]),
    )
    def add_many(self, specs: list[dict[str, Any]], seconds: float) -> None:
        # Adds with nothing read in between, the clock moving: the adapter defers
        # them and absorbs them in one batch at the next read (its fast path).
        for spec in specs:
            request = self.fresh(spec)
            self.queue.add_request(request)
            self.model.pinned = None
            self.model.add(request)
            self.clock.advance(seconds)

    @rule(target=gone)
    @precondition(lambda self: bool(self.model.order()))
    def pop(self) -> Req:
        taken = self.queue.pop_request()
        expected = self.model.pinned or self.model.best()
        assert taken is expected
        self.model.pinned = None
        self.model.take(expected)
        return taken

    @rule()
    def pop_or_peek_empty(self) -> None:
        if self.waiting():
            return
        with pytest.raises(IndexError):
            self.queue.pop_request()
        with pytest.raises(IndexError):
            self.queue.peek_request()

    def _peek(self) -> None:
        if self.model.pinned is None:
            self.model.pinned = self.model.best()
        assert self.queue.peek_request() is self.model.pinned

    @rule()
    @precondition(lambda self: bool(self.model.order()))
    def peek(self) -> None:
        self._peek()

    @rule(seconds=st.sampled_from([0.1, 0.25]))
    @precondition(lambda self: bool(self.model.order()))
    def peek_then_wait(self, seconds: float) -> None:
        # The scheduler's pattern: peek, time passes (long requests age), then pop.
        self._peek()
        self.clock.advance(seconds)

    @rule(request=consumes(gone))
    def prepend_popped(self, request: Req) -> None:
        self.queue.prepend_request(request)
        self.model.pinned = None
        self.model.prepend(request)

    @rule(
        specs=st.lists(requests_specs, max_size=4),
        form=st.sampled_from(["list", "iter", "deque"]),
    )
    def prepend_many(self, specs: list[dict[str, Any]], form: str) -> None:
        made = [self.fresh(spec) for spec in specs]
        given: Iterable[Req] = (
            list(made)
            if form == "list"
            else iter(made)
            if form == "iter"
            else collections.deque(made)
        )
        self.queue.prepend_requests(given)
        self.model.pinned = None
        for request in made:
            self.model.prepend(request)

    @rule(data=st.data())
    def remove_one(self, data: st.DataObject) -> None:
        if not self.known:
            return
        request = data.draw(st.sampled_from(self.known))
        self.model.pinned = None
        if any(r is request for r in self.waiting()):
            self.queue.remove_request(request)
            self.model.take(request)
        else:
            with pytest.raises(ValueError, match="is not waiting"):
                self.queue.remove_request(request)

    @rule(data=st.data())
    def remove_many(self, data: st.DataObject) -> None:
        if not self.known:
            return
        chosen = data.draw(st.lists(st.sampled_from(self.known), max_size=5))
        self.queue.remove_requests(chosen)
        self.model.pinned = None
        waiting = self.waiting()
        for request in {id(r): r for r in chosen}.values():
            if any(r is request for r in waiting):
                self.model.take(request)

    @rule(seconds=st.sampled_from([0.0, 0.03, 0.05, 0.1, 0.25]))
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @invariant()
    def agrees_with_the_model(self) -> None:
        expected = self.waiting()
        assert bool(self.queue) == bool(expected)  # first: bool absorbs no pending add
        assert len(self.queue) == len(expected)
        assert [r.request_id for r in self.queue] == [r.request_id for r in expected]
        assert all(a is b for a, b in zip(self.queue, expected, strict=True))
        for request in self.known:
            assert (request in self.queue) == any(r is request for r in expected)
        assert all(r in self.queue for r in expected)


def _machine(
    make_queue: Callable[[FakeClock], WaitingRequestQueue[Any]],
    make_model: Callable[[FakeClock], Model],
) -> type[QueueMachine]:
    return type(
        "Machine",
        (QueueMachine,),
        {"make_queue": staticmethod(make_queue), "make_model": staticmethod(make_model)},
    )


MACHINES = {
    "fcfs against a deque": _machine(lambda clock: fcfs_queue(clock=clock), DequeModel),
    "priority (vLLM's re-insert) against a heap": _machine(
        lambda clock: priority_queue(clock=clock), HeapModel
    ),
    "priority preempted first within its priority against a heap": _machine(
        lambda clock: priority_queue(True, clock=clock), PrependedFirstHeapModel
    ),
    "short first against lanes": _machine(
        lambda clock: short_request_first_queue(THRESHOLD, 100.0, clock=clock), LanesModel
    ),
}


# Four machines share the suite's time budget: at most 150 runs of 30 steps each
# (about 3 s per machine in the CI profile; each step checks the whole queue).
_SETTINGS = settings(
    settings(), max_examples=min(settings().max_examples, 150), stateful_step_count=30
)


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_the_queue_agrees_with_its_model(name: str) -> None:
    run_state_machine_as_test(MACHINES[name], settings=_SETTINGS)


# The machine catches a broken queue: each stand-in below breaks one promise of
# vLLM's interface, and the fcfs machine must fail on it.


class _PrependsInListOrder(WaitingRequestQueue[Any]):
    """``prepend_requests`` without ``extendleft``'s reversal: the first ends up first."""

    __slots__ = ()

    def prepend_requests(self, requests: Iterable[Any]) -> None:
        super().prepend_requests(list(requests)[::-1])


class _RemovesAbsentSilently(WaitingRequestQueue[Any]):
    """``remove_request`` of an absent request does not raise ``ValueError``."""

    __slots__ = ()

    def remove_request(self, request: Any) -> None:
        with contextlib.suppress(ValueError):
            super().remove_request(request)


class _AbsorbsReversed(WaitingRequestQueue[Any]):
    """The step's arrivals joined in reverse order (a broken batch)."""

    __slots__ = ()

    def _settled(self) -> Any:
        self._arrivals._waiting.reverse()  # the batch's own list: what this breaks
        return super()._settled()


@pytest.mark.parametrize("broken", [_PrependsInListOrder, _RemovesAbsentSilently, _AbsorbsReversed])
def test_the_machine_catches_a_broken_queue(broken: type[WaitingRequestQueue[Any]]) -> None:
    def make(clock: FakeClock) -> WaitingRequestQueue[Any]:
        return broken(fifo(), clock=clock)  # fcfs_queue's queue, one method broken

    # Found is enough here: no shrinking, no example database.
    found = settings(_SETTINGS, phases=[Phase.generate], database=None)
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        run_state_machine_as_test(_machine(make, DequeModel), settings=found)
