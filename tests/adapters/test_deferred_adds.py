"""``add_request`` defers: the adds since the last read are absorbed in one batch
(``WaitingQueue.extend``) by the next operation that reads the queue.

The batch must give the very version one kernel ``append`` per add gives, in
add order: the same entries (identity, attributes, serial, enqueue time, keys,
ticket, carried request) in the same order, so aging and every tie read as
before. A broken absorption (the batch reversed, one enqueue time shared) is
caught by the same check.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policy.adapters.vllm import DEFAULT_ATTRIBUTES, PREPENDED, WaitingRequestQueue
from policy.waiting import WaitingQueue
from tests.adapters.stand_ins import QUEUE_MAKERS, FakeClock, Req, entry_fields

_SPECS = st.lists(
    st.fixed_dictionaries(
        {
            "priority": st.integers(0, 3),
            "arrival_time": st.sampled_from([0.0, 1.0, 2.5]),
            "num_prompt_tokens": st.sampled_from([1, 256, 257, 4000]),
            "num_computed_tokens": st.sampled_from([0, 0, 16]),
        }
    ),
    min_size=1,
    max_size=12,
)
_GAPS = st.lists(st.sampled_from([0.0, 0.01, 0.2]), min_size=12, max_size=12)


def _one_by_one(
    queue: WaitingRequestQueue[Any], base: WaitingQueue, added: list[tuple[Req, float, int]]
) -> WaitingQueue:
    """``base`` with one kernel ``append`` per add, as the adapter made them before it
    deferred: the attributes its keys read, the add's serial and clock reading."""
    policy = queue.policy
    read = sorted(policy.attributes_read - {PREPENDED})
    for request, now, serial in added:
        attributes = {name: DEFAULT_ATTRIBUTES[name](request) for name in read}
        if PREPENDED in policy.attributes_read:
            attributes[PREPENDED] = False  # the queue's own: an add
        made = base.append(
            policy, request.request_id, attributes, serial=serial, now=now, carried=request
        )
        base = made.unwrap()
    return base


def _check_batch(
    make: Callable[[FakeClock], WaitingRequestQueue[Any]],
    specs: list[dict[str, Any]],
    gaps: list[float],
    before: int,
) -> None:
    """``before`` adds read at once, then the batch of ``specs`` added with the clock
    moving by ``gaps``: the absorbed version is the one-by-one appends' version."""
    clock = FakeClock()
    queue = make(clock)
    for number in range(before):
        queue.add_request(Req(f"early{number}", priority=number % 3))
        assert len(queue.snapshot) == number + 1  # each absorbed alone
    base = queue.snapshot
    added = []
    for number, (spec, gap) in enumerate(zip(specs, gaps, strict=False)):
        request = Req(f"r{number}", **spec)
        added.append((request, clock.now, before + number))
        queue.add_request(request)
        assert bool(queue)
        clock.advance(gap)
    expected = _one_by_one(queue, base, added)
    absorbed = queue.snapshot  # the one read: the whole batch at once
    assert list(map(entry_fields, absorbed)) == list(map(entry_fields, expected))
    # the dispatch order at one moment: the batch's and the one-by-one version's
    reference = make(clock)
    reference._queue = expected  # the same kernel version, nothing pending
    reference._serial = queue._serial
    assert [r.request_id for r in queue] == [r.request_id for r in reference]
    assert len(queue) == before + len(added)


@pytest.mark.parametrize("name", sorted(QUEUE_MAKERS))
@settings(max_examples=40)
@given(specs=_SPECS, gaps=_GAPS, before=st.integers(0, 3))
def test_a_deferred_batch_is_absorbed_as_one_by_one_adds(
    name: str, specs: list[dict[str, Any]], gaps: list[float], before: int
) -> None:
    _check_batch(QUEUE_MAKERS[name], specs, gaps, before)


class _AbsorbsReversed(WaitingRequestQueue[Any]):
    __slots__ = ()

    def _absorb(self) -> None:
        self._pending.reverse()
        super()._absorb()


class _AbsorbsAtOneMoment(WaitingRequestQueue[Any]):
    """Every pending add enqueued at the first one's time (aging would read it)."""

    __slots__ = ()

    def _absorb(self) -> None:
        first = self._pending[0][3]
        self._pending[:] = [(i, a, s, first, r) for i, a, s, _, r in self._pending]
        super()._absorb()


@pytest.mark.parametrize("broken", [_AbsorbsReversed, _AbsorbsAtOneMoment])
@pytest.mark.parametrize("name", sorted(QUEUE_MAKERS))
def test_a_broken_absorption_is_caught(name: str, broken: type[WaitingRequestQueue[Any]]) -> None:
    def make(clock: FakeClock) -> WaitingRequestQueue[Any]:
        queue = QUEUE_MAKERS[name](clock)
        queue.__class__ = broken  # the same slots: only the absorption changes
        return queue

    specs = [{"priority": 1, "arrival_time": 1.0, "num_prompt_tokens": 10}] * 3
    with pytest.raises(AssertionError):
        _check_batch(make, specs, [0.2, 0.2, 0.2], 1)


@pytest.mark.parametrize("name", sorted(QUEUE_MAKERS))
def test_refusals_stay_at_add_while_adds_are_pending(name: str) -> None:
    queue = QUEUE_MAKERS[name](FakeClock())
    queue.add_request(Req("a"))
    queue.add_request(Req("b"))  # both pending
    with pytest.raises(ValueError, match="'a': is already waiting"):
        queue.add_request(Req("a"))
    with pytest.raises(ValueError, match="'b': is already waiting"):
        queue.add_request(Req("b"))
    assert len(queue) == 2
    queue.add_request(Req("c"))
    assert [r.request_id for r in queue] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="'c': is already waiting"):
        queue.add_request(Req("c"))  # absorbed: the kernel's own check
    assert queue._ids == {"a", "b", "c"}


def test_a_clock_the_kernel_converts_takes_the_kernel_path() -> None:
    """A clock giving something other than a float or an int: the kernel's own
    append decides, after the pending adds are absorbed (the order stays)."""
    readings: list[object] = [1.0, 2.0, True, 3.0, 4.0, 5.0]
    queue = QUEUE_MAKERS["fcfs"](lambda: readings.pop(0))  # type: ignore[arg-type]
    for name in "abc":
        queue.add_request(Req(name))
    assert not queue._pending  # the third add absorbed the two before it
    assert [entry.enqueued_at for entry in queue.snapshot] == [1.0, 2.0, 1.0]
    assert [r.request_id for r in queue] == ["a", "b", "c"]
    # the kernel's path counts the request as every add does: its serial, its id
    queue.add_request(Req("d"))
    assert [entry.serial for entry in queue.snapshot] == [0, 1, 2, 3]
    assert len(queue) == 4
    with pytest.raises(ValueError, match="'c': is already waiting"):
        queue.add_request(Req("c"))


def test_two_threads_adding_lose_nothing_while_a_third_reads() -> None:
    queue = QUEUE_MAKERS["fcfs"](FakeClock())
    done = threading.Event()
    seen: list[int] = []

    def add(prefix: str) -> None:
        for number in range(2000):
            queue.add_request(Req(f"{prefix}{number}"))

    def read() -> None:
        while not done.is_set():
            seen.append(len(queue))
            assert bool(queue)

    writers = [threading.Thread(target=add, args=(prefix,)) for prefix in "xy"]
    queue.add_request(Req("first"))
    reader = threading.Thread(target=read)
    reader.start()
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    done.set()
    reader.join()
    assert len(queue) == 4001
    assert seen == sorted(seen)  # the size only grows, as each read sees it
    order = [r.request_id for r in queue]
    assert order[0] == "first"
    for prefix in "xy":
        mine = [name for name in order if name.startswith(prefix)]
        assert mine == [f"{prefix}{number}" for number in range(2000)]
