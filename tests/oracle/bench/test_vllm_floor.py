"""The floor's diagnosis (oracle/bench/vllm_floor.py): the floor queue against a
plain deque doing the same calls, and the report's arithmetic. Nothing here needs
vLLM and nothing is timed."""

from __future__ import annotations

import gc
import io
import sys
import weakref
from collections import deque
from types import SimpleNamespace
from typing import Any

import pytest

from oracle.bench import vllm_floor, vllm_loop
from oracle.bench.vllm_floor import FloorQueue, Round, Run, install_floor, report


class Fifo(deque[Any]):
    """vLLM's FCFSRequestQueue's calls on a deque (its own definitions)."""

    def add_request(self, request: Any) -> None:
        self.append(request)

    def pop_request(self) -> Any:
        return self.popleft()

    def peek_request(self) -> Any:
        return self[0]

    def prepend_request(self, request: Any) -> None:
        self.appendleft(request)

    def prepend_requests(self, requests: Any) -> None:
        self.extendleft(requests)

    def remove_requests(self, requests: Any) -> None:
        gone = {id(r) for r in requests}
        kept = [r for r in self if id(r) not in gone]
        self.clear()
        self.extend(kept)


class Req:
    """A request as the queues read it (a class: weak references to it can be made)."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id


def test_the_floor_answers_as_the_queue_it_wraps() -> None:
    floor, plain = FloorQueue(Fifo()), Fifo()
    requests = [Req(f"r{i}") for i in range(6)]
    for request in requests:
        floor.add_request(request)
        plain.add_request(request)
    popped = [floor.pop_request() for _ in range(2)]
    assert popped == [plain.pop_request() for _ in range(2)]
    floor.prepend_request(popped[0])  # preempted: back at the front, as the deque puts it
    plain.prepend_request(popped[0])
    assert list(floor) == list(plain)
    assert floor.peek_request() is plain.peek_request()
    floor.remove_requests([requests[2], Req("never")])
    plain.remove_requests([requests[2]])
    assert list(floor) == list(plain)
    assert len(floor) == 4
    assert bool(floor)
    assert requests[3] in floor
    assert requests[2] not in floor
    assert object() not in floor


def test_the_floor_refuses_a_duplicate_id_and_keeps_its_queue() -> None:
    floor = FloorQueue(Fifo())
    floor.add_request(Req("a"))
    with pytest.raises(ValueError, match="already waiting"):
        floor.add_request(Req("a"))
    assert len(floor) == 1
    assert len(list(floor)) == 1


def test_the_floor_prepends_a_batch_as_vllm_does_all_or_nothing() -> None:
    floor, plain = FloorQueue(Fifo()), Fifo()
    for request in (Req("a"), Req("b")):
        floor.add_request(request)
        plain.add_request(request)
    batch = [Req("x"), Req("y")]
    floor.prepend_requests(batch)
    plain.prepend_requests(batch)
    assert list(floor) == list(plain)  # the last prepended first, as extendleft puts it
    with pytest.raises(ValueError, match="already waiting"):
        floor.prepend_requests([Req("z"), Req("x")])  # x waits already
    with pytest.raises(ValueError, match="already waiting"):
        floor.prepend_request(Req("b"))
    assert list(floor) == list(plain)
    assert len(floor) == 4


def test_the_floor_removes_by_id_and_refuses_a_request_not_waiting() -> None:
    floor = FloorQueue(Fifo())
    floor.add_request(Req("a"))
    floor.add_request(Req("b"))
    floor.remove_requests([Req("a")])  # another object with the waiting request's id
    assert [r.request_id for r in floor] == ["b"]
    assert len(floor) == 1
    with pytest.raises(ValueError, match="not waiting"):
        floor.remove_request(Req("a"))
    floor.remove_requests(floor)  # the queue itself: read before the lock is taken
    assert not floor
    assert list(floor) == []


def test_the_floor_lets_go_of_a_request_as_it_leaves() -> None:
    floor = FloorQueue(Fifo())
    popped, removed = Req("popped"), Req("removed")
    floor.add_request(popped)
    floor.add_request(removed)
    gone = [weakref.ref(popped), weakref.ref(removed)]
    floor.pop_request()
    floor.remove_request(removed)
    del popped, removed
    gc.collect()
    assert [ref() for ref in gone] == [None, None]
    assert not floor


def test_install_floor_wraps_each_queue_the_scheduler_built() -> None:
    scheduler = SimpleNamespace(waiting=Fifo(), kv_holding_waiting=Fifo())
    waiting, holding = scheduler.waiting, scheduler.kv_holding_waiting
    install_floor(scheduler)
    assert type(scheduler.waiting) is FloorQueue
    assert type(scheduler.kv_holding_waiting) is FloorQueue
    assert scheduler.waiting._inner is waiting  # what it wraps (no public way to ask)
    assert scheduler.kv_holding_waiting._inner is holding
    older = SimpleNamespace(waiting=Fifo())  # before vLLM 0.33: one queue
    install_floor(older)
    assert type(older.waiting) is FloorQueue
    assert not hasattr(older, "kv_holding_waiting")


def test_install_floor_refuses_a_queue_that_holds_requests_or_no_queue() -> None:
    busy = SimpleNamespace(waiting=Fifo([Req("a")]))
    with pytest.raises(RuntimeError, match="waiting holds requests"):
        install_floor(busy)
    with pytest.raises(RuntimeError, match="no waiting queue"):
        install_floor(SimpleNamespace(queue=Fifo()))


def run(p50: float) -> Run:
    return Run(p50=p50, mean=p50, p99=2 * p50, admissions="same")


def test_the_report_gives_the_median_of_each_rounds_ratio_and_its_range() -> None:
    # vLLM's own step moves between rounds (10, 20, 12 ms); each round's ratio
    # compares runs of that round only
    rounds = [
        Round("fcfs", 1_000, {"native": run(10e6), "floor": run(10e6), "drop-in": run(12e6)}),
        Round("fcfs", 1_000, {"native": run(20e6), "floor": run(22e6), "drop-in": run(22e6)}),
        Round("fcfs", 1_000, {"native": run(12e6), "floor": run(12e6), "drop-in": run(18e6)}),
        Round("priority", 1_000, {"native": run(8e6), "floor": run(8e6), "drop-in": run(10e6)}),
    ]
    lines = report(rounds).splitlines()
    assert lines[1].split() == [
        "fcfs", "1,000", "p50", "12.00", "ms", "1.00x", "1.00-1.10", "1.20x", "1.10-1.50",
        "1.20x", "1.00-1.50", "3",
    ]  # fmt: skip
    assert lines[4].split()[:7] == ["priority", "1,000", "p50", "8.00", "ms", "1.00x", "1.00-1.00"]
    assert lines[4].split()[7:] == ["1.25x", "1.25-1.25", "1.25x", "1.25-1.25", "1"]


def test_each_round_turns_the_order_so_no_variant_always_runs_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[str, str, int]] = []

    def fake(variant: str, policy_name: str, n: int, _steps: int) -> Run:
        calls.append((variant, policy_name, n))
        return run(1.0)

    monkeypatch.setattr(vllm_floor, "spawn", fake)
    made = vllm_floor.measure(3, [1_000], 10, io.StringIO())
    lasts = [calls[k + 2][0] for k in range(0, len(calls), 3)]
    assert sorted(lasts[::2]) == sorted(vllm_floor.VARIANTS)  # fcfs's three rounds
    assert [(r.policy, r.n) for r in made] == [("fcfs", 1_000), ("priority", 1_000)] * 3


def test_a_round_whose_variants_admitted_differently_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fake(variant: str, _policy_name: str, _n: int, _steps: int) -> Run:
        return Run(p50=1.0, mean=1.0, p99=1.0, admissions="other" if variant == "floor" else "d")

    monkeypatch.setattr(vllm_floor, "spawn", fake)
    with pytest.raises(vllm_loop.RunFailed, match="admitted different requests"):
        vllm_floor.measure(1, [1_000], 10, None)


def test_without_vllm_it_says_so_in_one_line_and_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(vllm_floor, "vllm_missing", lambda: "No module named 'vllm'")
    assert vllm_floor.main(["--rounds", "1"]) == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert len(said.err.strip().splitlines()) == 1
    assert "vllm" in said.err


def test_a_failed_run_is_named_with_its_variant_and_its_last_words(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def failing(*_: object) -> list[str]:
        return [sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"]

    monkeypatch.setattr(vllm_floor, "vllm_missing", lambda: None)
    monkeypatch.setattr(vllm_floor, "child_command", failing)
    assert vllm_floor.main(["--rounds", "1", "--sizes", "1000"]) == 1
    said = capsys.readouterr().err
    assert "native run of fcfs N=1,000 exited 3" in said
    assert "boom" in said
