"""The floor's diagnosis (oracle/bench/vllm_floor.py): the floor queue against a
plain deque doing the same calls, and the report's arithmetic. Nothing here needs
vLLM and nothing is timed."""

from __future__ import annotations

import gc
import io
import weakref
from collections import deque
from types import SimpleNamespace
from typing import Any

import pytest

from oracle.bench import vllm_floor, vllm_loop
from oracle.bench.vllm_floor import FloorQueue, Round, install_floor, report


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

    def remove_requests(self, requests: Any) -> None:
        gone = {id(r) for r in requests}
        kept = [r for r in self if id(r) not in gone]
        self.clear()
        self.extend(kept)


class Req:
    """A request as the queues read it (a class: weak references to it can be made)."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id


def req(name: str) -> Req:
    return Req(name)


def test_the_floor_answers_as_the_queue_it_wraps() -> None:
    floor, plain = FloorQueue(Fifo()), Fifo()
    requests = [req(f"r{i}") for i in range(6)]
    for request in requests:
        floor.add_request(request)
        plain.add_request(request)
    popped = [floor.pop_request() for _ in range(2)]
    assert popped == [plain.pop_request() for _ in range(2)]
    floor.prepend_request(popped[0])  # preempted: back at the front, as the deque puts it
    plain.prepend_request(popped[0])
    assert list(floor) == list(plain)
    assert floor.peek_request() is plain.peek_request()
    floor.remove_requests([requests[2], req("never")])
    plain.remove_requests([requests[2]])
    assert list(floor) == list(plain)
    assert len(floor) == 4
    assert bool(floor)
    assert requests[3] in floor
    assert requests[2] not in floor
    assert object() not in floor


def test_the_floor_refuses_a_duplicate_id_and_keeps_its_queue() -> None:
    floor = FloorQueue(Fifo())
    floor.add_request(req("a"))
    with pytest.raises(ValueError, match="already waiting"):
        floor.add_request(req("a"))
    assert len(floor) == 1
    assert len(list(floor)) == 1


def test_the_floor_lets_go_of_a_request_as_it_leaves() -> None:
    floor = FloorQueue(Fifo())
    popped, removed = req("popped"), req("removed")
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
    install_floor(scheduler)
    assert type(scheduler.waiting) is FloorQueue
    assert type(scheduler.kv_holding_waiting) is FloorQueue
    assert scheduler.waiting is not scheduler.kv_holding_waiting
    older = SimpleNamespace(waiting=Fifo())  # before vLLM 0.33: one queue
    install_floor(older)
    assert type(older.waiting) is FloorQueue
    assert not hasattr(older, "kv_holding_waiting")


def steps(p50: float) -> dict[str, float]:
    return {"p50": p50, "mean": p50, "p99": 2 * p50}


def test_the_report_gives_the_median_of_each_rounds_ratio_and_its_range() -> None:
    # vLLM's own step moves between rounds (10, 20, 12 ms); each round's ratio
    # compares runs of that round only
    rounds = [
        Round("fcfs", 1_000, {"native": steps(10), "floor": steps(10), "drop-in": steps(12)}),
        Round("fcfs", 1_000, {"native": steps(20), "floor": steps(22), "drop-in": steps(22)}),
        Round("fcfs", 1_000, {"native": steps(12), "floor": steps(12), "drop-in": steps(18)}),
        Round("priority", 1_000, {"native": steps(8), "floor": steps(8), "drop-in": steps(10)}),
    ]
    lines = report(rounds).splitlines()
    assert lines[1].split() == [
        "fcfs", "1,000", "p50", "1.00x", "(1.00-1.10)", "1.20x", "(1.10-1.50)", "3",
    ]  # fmt: skip
    assert lines[4].split()[:4] == ["priority", "1,000", "p50", "1.00x"]
    assert lines[4].split()[5:] == ["1.25x", "(1.25-1.25)", "1"]


def test_without_vllm_it_says_so_in_one_line_and_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(vllm_floor, "vllm_missing", lambda: "No module named 'vllm'")
    assert vllm_floor.main(["--rounds", "1"]) == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert len(said.err.strip().splitlines()) == 1
    assert "vllm" in said.err


def test_a_failed_run_is_named_with_its_variant_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def fail(variant: str, policy_name: str, n: int, _steps: int) -> dict[str, float]:
        raise vllm_loop.RunFailed(f"{variant} run of {policy_name} N={n:,} exited 1:\nboom")

    monkeypatch.setattr(vllm_floor, "vllm_missing", lambda: None)
    monkeypatch.setattr(vllm_floor, "spawn", fail)
    assert vllm_floor.main(["--rounds", "1", "--sizes", "1000"]) == 1
    assert "native run of fcfs N=1,000 exited 1" in capsys.readouterr().err


def test_rounds_alternate_the_variants_within_each_configuration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[str, str, int]] = []

    def fake(variant: str, policy_name: str, n: int, _steps: int) -> dict[str, float]:
        calls.append((variant, policy_name, n))
        return {"p50": 1.0, "mean": 1.0, "p99": 1.0}

    monkeypatch.setattr(vllm_floor, "spawn", fake)
    made = vllm_floor.measure(2, [1_000], 10, io.StringIO())
    assert [c[0] for c in calls] == list(vllm_floor.VARIANTS) * 4
    assert [(r.policy, r.n) for r in made] == [("fcfs", 1_000), ("priority", 1_000)] * 2
