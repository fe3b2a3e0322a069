"""``policy-kernel bench --vllm``'s serving loop (oracle/bench/vllm_loop.py): the pure
parts only (percentiles, pooling, ratios, targets and verdicts, the tables and the
JSON document, the timing wrapper's bookkeeping, the refusal without vLLM). Nothing
here needs vLLM and nothing is timed."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from array import array
from collections import deque
from collections.abc import Iterator
from typing import Any

import pytest

from oracle.bench import vllm_loop
from oracle.bench.vllm_loop import (
    CALL_SHARE_TARGET,
    MEAN_TARGETS,
    P50_TARGETS,
    P99_TARGET,
    CollectorClock,
    LoopRow,
    Plan,
    RunResult,
    Target,
    TimedQueue,
    loop_row,
    percentile,
    summarize,
)
from oracle.cli import main


def result(
    side: str,
    run: int = 0,
    steps: tuple[int, ...] = (10_000_000,),
    *,
    policy: str = "fcfs",
    n: int = 1_000,
    collections: tuple[int, int, int] = (0, 0, 0),
    collection_ns: tuple[int, int, int] = (0, 0, 0),
    longest_collection_ns: tuple[int, int, int] = (0, 0, 0),
    longest: dict[str, int] | None = None,
    objects: float = 0.0,
    kept: int = 0,
    digest: str = "same",
    tails: dict[str, int] | None = None,
) -> RunResult:
    return RunResult(
        side=side,
        policy=policy,
        n=n,
        run=run,
        step_ns=steps,
        collections=collections,
        collection_ns=collection_ns,
        longest_collection_ns=longest_collection_ns,
        longest_call_ns={"pop_request": 1_000} if longest is None else longest,
        calls={"pop_request": 256},
        objects_per_entry=objects,
        requests_kept=kept,
        admissions=digest,
        vllm="0.33.0",
        seconds=1.0,
        call_tail_ns={} if tails is None else tails,
    )


def row_of(
    native_steps: tuple[int, ...],
    dropin_steps: tuple[int, ...],
    *,
    policy: str = "fcfs",
    dropin_longest: int = 1_000,
) -> LoopRow:
    return loop_row(
        [
            result("native", steps=native_steps, policy=policy),
            result(
                "drop-in",
                steps=dropin_steps,
                policy=policy,
                longest={"peek_request": dropin_longest, "add_request": 5},
            ),
        ]
    )


# --- percentiles and pooling ---------------------------------------------------------------


def test_percentile_interpolates_between_the_closest_ranks() -> None:
    values = list(range(1, 11))  # 1..10
    assert percentile(values, 0) == 1
    assert percentile(values, 100) == 10
    assert percentile(values, 50) == 5.5
    assert percentile(values, 90) == pytest.approx(9.1)
    assert percentile(list(reversed(values)), 50) == 5.5  # order does not matter
    assert percentile([3, 3, 3], 99) == 3


def test_the_p99_of_a_thousand_steps_lies_between_the_tenth_and_eleventh_worst() -> None:
    steps = list(range(1_000))
    assert percentile(steps, 99) == pytest.approx(989.01)


@pytest.mark.parametrize("q", [-1, 100.5])
def test_percentile_refuses_a_rank_outside_0_to_100(q: float) -> None:
    with pytest.raises(ValueError, match="not within"):
        percentile([1, 2], q)


def test_percentile_of_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)


def test_a_side_pools_the_steps_of_its_runs() -> None:
    first = result("native", 0, (1, 2, 3, 4), collections=(40, 4, 1), collection_ns=(0, 0, 8))
    second = result("native", 1, (5, 6, 7, 8), collections=(40, 4, 1), collection_ns=(0, 0, 8))
    pooled = summarize([first, second])
    assert pooled.runs == 2
    assert pooled.steps == 8
    assert pooled.p50_ns == 4.5
    assert pooled.mean_ns == 4.5
    assert pooled.worst_ns == 8
    assert pooled.p99_ns == pytest.approx(percentile(range(1, 9), 99))
    # per 1,000 steps: 80 collections over 8 steps -> 10,000 per 1,000
    assert pooled.collections_per_1k == (10_000.0, 1_000.0, 250.0)
    assert pooled.gen2_ms_per_1k == pytest.approx(16 / 1e6 * 1_000 / 8)


def test_the_longest_call_of_a_side_is_its_longest_over_every_method_and_run() -> None:
    first = result("drop-in", 0, longest={"add_request": 30, "pop_request": 10})
    second = result("drop-in", 1, longest={"peek_request": 50, "pop_request": 40})
    pooled = summarize([first, second])
    assert (pooled.longest_call_ns, pooled.longest_call_method) == (50, "peek_request")


def test_objects_are_the_mean_and_kept_requests_the_most_of_the_runs() -> None:
    pooled = summarize(
        [result("drop-in", 0, objects=2.0, kept=10), result("drop-in", 1, objects=4.0, kept=3)]
    )
    assert (pooled.objects_per_entry, pooled.requests_kept) == (3.0, 10)


def test_summarize_needs_a_run() -> None:
    with pytest.raises(ValueError, match="no runs"):
        summarize([])


# --- ratios, targets, verdicts -------------------------------------------------------------


def test_the_ratios_are_drop_in_over_native() -> None:
    row = row_of((10, 20, 30), (12, 24, 60))
    assert row.p50_ratio == 24 / 20
    assert row.mean_ratio == (96 / 3) / 20
    assert row.p99_ratio == percentile([12, 24, 60], 99) / percentile([10, 20, 30], 99)
    assert row.call_share == 1_000 / 20


def test_the_least_disturbed_ratios_take_each_sides_lowest_run() -> None:
    # a neighbour slowed one drop-in run and another native one: neither counts
    row = loop_row(
        [
            result("native", 0, (10, 10, 10)),
            result("drop-in", 0, (12, 12, 12)),
            result("native", 1, (30, 30, 30)),
            result("drop-in", 1, (40, 40, 40)),
        ]
    )
    assert row.least_ratios == (12 / 10, 12 / 10)
    assert row.p50_ratio == (12 + 40) / 2 / ((10 + 30) / 2)
    text = vllm_loop.loop_report([row], "0.33.0", 3, 2)
    assert "the least disturbed of the 2 runs a side" in text
    assert "fcfs       1,000  1.20x <= 1.15 NOT MET  1.20x <= 1.20 met" in text
    assert "least disturbed" not in vllm_loop.loop_report([row], "0.33.0", 3, 1)


@pytest.mark.parametrize("policy", ["fcfs", "priority"])
def test_the_targets_are_issue_27s_per_policy(policy: str) -> None:
    row = row_of((100,), (100,), policy=policy, dropin_longest=5)
    limits = {target.name: target.limit for target in row.targets()}
    assert limits == {
        "p50": P50_TARGETS[policy],
        "mean": MEAN_TARGETS[policy],
        "p99": P99_TARGET,
        "longest call": CALL_SHARE_TARGET,
    }
    assert (P50_TARGETS, MEAN_TARGETS, P99_TARGET, CALL_SHARE_TARGET) == (
        {"fcfs": 1.15, "priority": 1.25},
        {"fcfs": 1.20, "priority": 1.30},
        1.5,
        0.10,
    )
    assert all(target.met for target in row.targets())


def test_a_target_is_met_up_to_its_limit_inclusive() -> None:
    assert Target("mean", 1.2, 1.2).met
    assert not Target("mean", 1.2000001, 1.2).met


def test_each_target_is_judged_on_its_own() -> None:
    # p50 1.20x (fcfs limit 1.15: NOT MET, priority's 1.25: met); mean 1.20x (met for both);
    # the longest drop-in call 2 ns of a 100 ns median step (2%: met)
    fcfs = row_of((100, 100), (120, 120), dropin_longest=2)
    priority = row_of((100, 100), (120, 120), policy="priority", dropin_longest=2)
    assert [(t.name, t.met) for t in fcfs.targets()] == [
        ("p50", False),
        ("mean", True),
        ("p99", True),
        ("longest call", True),
    ]
    assert all(t.met for t in priority.targets())
    stalled = row_of((100, 100), (100, 100), dropin_longest=11)
    assert [t.name for t in stalled.targets() if not t.met] == ["longest call"]
    assert vllm_loop.targets_met([fcfs, priority, stalled]) == (10, 12)


def test_same_order_compares_the_admissions_of_each_run_pair() -> None:
    runs = [
        result("native", 0, digest="a"),
        result("drop-in", 0, digest="a"),
        result("native", 1, digest="b"),
        result("drop-in", 1, digest="b"),
    ]
    assert loop_row(runs).same_order
    runs[3] = result("drop-in", 1, digest="c")
    assert not loop_row(runs).same_order
    assert loop_row(runs).runs == 2


def test_a_row_needs_both_sides_of_one_configuration() -> None:
    with pytest.raises(ValueError, match="no drop-in run"):
        loop_row([result("native")])
    with pytest.raises(ValueError, match="more than one configuration"):
        loop_row([result("native"), result("drop-in", n=10_000)])
    with pytest.raises(ValueError, match="no runs"):
        loop_row([])


# --- rendering ------------------------------------------------------------------------------


def test_durations_take_their_unit() -> None:
    assert vllm_loop.duration(950) == "0.9 µs"
    assert vllm_loop.duration(7_300_000) == "7.30 ms"
    assert vllm_loop.duration(2_000_000_000) == "2.00 s"


def test_the_report_shows_every_configuration_ratio_and_verdict() -> None:
    met = row_of((10_000_000,), (10_500_000,), dropin_longest=120_000)
    missed = loop_row(
        [
            result("native", steps=(10_000_000,), policy="priority", n=100_000),
            result(
                "drop-in",
                steps=(30_000_000,),
                policy="priority",
                n=100_000,
                longest={"prepend_request": 800_000_000},
                digest="other",
            ),
        ]
    )
    text = vllm_loop.loop_report([met, missed], "0.33.0", 1_000, 2)
    lines = text.splitlines()
    assert lines[0].startswith("serving loop: vLLM 0.33.0 Scheduler")
    assert "freeze_gc_heap()" in lines[0]
    assert "1,000 timed steps" in lines[0]
    assert lines[-1].startswith("bench --vllm serving loop: 4 of 8 targets met")
    met_line = next(line for line in lines if line.startswith("fcfs") and "x <=" in line)
    assert "1.05x <= 1.15 met" in met_line
    assert "1.05x <= 1.20 met" in met_line
    assert "1.2% <= 10% met" in met_line
    assert "120.0 µs peek_request" in met_line
    assert "1.0 µs pop_request" in met_line  # vLLM's own longest call
    missed_line = next(line for line in lines if line.startswith("priority") and "x <=" in line)
    assert missed_line.count("NOT MET") == 4
    assert "800.00 ms prepend_request" in missed_line
    step_lines = [line for line in lines if "| yes" in line or "| NO" in line]
    assert len(step_lines) == 2
    assert "10.00   10.00   10.00   10.00 |" in step_lines[0]
    assert step_lines[1].endswith("| NO")
    assert "100,000" in step_lines[1]
    assert "3.00x 3.00x 3.00x" in step_lines[1]
    sided = [line for line in lines if line.split()[2:3] in (["native"], ["drop-in"])]
    collector_lines = [line for line in sided if len(line.split()) > 4]
    assert len(collector_lines) == 4
    assert [line.split()[3:] for line in sided if len(line.split()) <= 4] == [["-"], ["-"]]


def test_the_collector_table_scales_to_a_thousand_steps() -> None:
    row = loop_row(
        [
            result(
                "native",
                steps=(1, 1),
                collections=(10, 2, 1),
                collection_ns=(0, 0, 3_000_000),
                longest_collection_ns=(0, 0, 3_000_000),
                objects=0.0,
            ),
            result("drop-in", steps=(1, 1), objects=17.5, kept=1_280),
        ]
    )
    native, dropin = vllm_loop.collector_table([row]).splitlines()[1:]
    assert native.split()[2:] == [
        "native",
        "5000.0",
        "1000.0",
        "500.0",
        "1500.0",
        "3.00",
        "ms",
        "0.00",
        "0",
    ]
    assert dropin.split()[-2:] == ["17.50", "1,280"]


def test_the_drain_is_labelled_a_diagnosis() -> None:
    assert vllm_loop.DRAIN_LABEL == "drain: no arrivals, collector off — a diagnosis, not a gate"


def test_the_document_is_json_with_every_row_run_and_target() -> None:
    runs = [result("native", 0, (10, 20)), result("drop-in", 0, (11, 21), longest={"__len__": 1})]
    row = loop_row(runs)
    document = json.loads(json.dumps(vllm_loop.loop_document([row], runs, "0.33.0", quick=True)))
    assert document["vllm"] == "0.33.0"
    assert (document["targets_met"], document["targets"]) == (4, 4)
    (only,) = document["rows"]
    assert (only["policy"], only["n"], only["steps"], only["runs"]) == ("fcfs", 1_000, 2, 1)
    assert only["native"]["p50_ns"] == 15
    assert only["drop-in"]["worst_ns"] == 21
    assert [t["name"] for t in only["targets"]] == ["p50", "mean", "p99", "longest call"]
    assert [run["side"] for run in document["runs"]] == ["native", "drop-in"]
    assert document["runs"][1]["mean_ns"] == 16


def test_a_run_result_survives_its_json_line() -> None:
    run = result("drop-in", 1, (1, 2, 3), collections=(5, 1, 0), longest={"__bool__": 3})
    assert RunResult.from_json(json.loads(json.dumps(run.to_json()))) == run


def test_the_progress_line_names_the_run() -> None:
    line = vllm_loop.progress_line(result("drop-in", 1, (2_000_000, 4_000_000)), 2)
    assert line.startswith("fcfs N=1,000 drop-in run 2/2: p50 3.00 ms, mean 3.00 ms, worst 4.00 ms")


# --- the plan and the child process's command -----------------------------------------------


def test_the_plans() -> None:
    full, quick = Plan.of(False), Plan.of(True)
    assert (full.sizes, full.steps, full.runs) == ((1_000, 10_000, 100_000), 1_000, 2)
    assert full.warmup >= 1
    assert (quick.sizes, quick.steps, quick.runs) == ((1_000, 10_000), 200, 1)


def test_a_run_is_a_fresh_python_process_of_this_module() -> None:
    command = vllm_loop.child_command(Plan.of(True), "drop-in", "priority", 10_000, 1)
    assert command[:3] == [sys.executable, "-m", "oracle.bench.vllm_loop"]
    assert command[command.index("--child") + 1] == "drop-in"
    assert command[command.index("--n") + 1] == "10000"
    assert command[command.index("--steps") + 1] == "200"


def test_a_run_imports_the_code_its_parent_imports() -> None:
    import oracle  # noqa: PLC0415 - the package's folder is the point
    import policy  # noqa: PLC0415

    environment = vllm_loop.child_environment()
    first = environment["PYTHONPATH"].split(os.pathsep)[0]
    assert os.path.samefile(first, os.path.dirname(os.path.dirname(oracle.__file__)))
    assert os.path.samefile(first, os.path.dirname(os.path.dirname(policy.__file__)))
    assert environment["VLLM_TARGET_DEVICE"] == os.environ.get("VLLM_TARGET_DEVICE", "cpu")


# --- the timing wrapper and the collector's clock (bookkeeping only) ------------------------


class StandIn:
    """A queue with vLLM's RequestQueue methods over a deque."""

    def __init__(self) -> None:
        self.items: deque[str] = deque()
        self.extra = "kept"

    def add_request(self, request: str) -> None:
        self.items.append(request)

    def pop_request(self) -> str:
        return self.items.popleft()

    def peek_request(self) -> str:
        return self.items[0]

    def prepend_request(self, request: str) -> None:
        self.items.appendleft(request)

    def prepend_requests(self, requests: list[str]) -> None:
        self.items.extendleft(reversed(requests))

    def remove_request(self, request: str) -> None:
        self.items.remove(request)

    def remove_requests(self, requests: list[str]) -> None:
        for request in requests:
            self.items.remove(request)

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[str]:
        return iter(self.items)

    def __contains__(self, request: object) -> bool:
        return request in self.items

    def __getitem__(self, index: int) -> str:
        return self.items[index]


def test_the_timed_queue_passes_every_call_through_and_counts_it() -> None:
    inner = StandIn()
    queue: Any = TimedQueue(inner)
    queue.add_request("a")
    queue.add_request("b")
    queue.prepend_request("z")
    queue.prepend_requests(["x", "y"])
    assert queue.peek_request() == "x"
    assert queue.pop_request() == "x"
    queue.remove_request("y")
    queue.remove_requests(["z"])
    assert len(queue) == 2
    assert bool(queue)
    assert list(queue) == ["a", "b"]
    assert "a" in queue
    assert queue[1] == "b"
    assert queue.extra == "kept"  # anything else: the queue's own
    assert set(queue.calls) == set(vllm_loop.QUEUE_METHODS)
    assert queue.calls["add_request"] == 2
    assert all(spent >= 0 for spent in queue.longest.values())
    assert set(queue.longest) == set(queue.calls)
    assert {method: len(times) for method, times in queue.spent.items()} == queue.calls
    tails = queue.tails()
    assert set(tails) == set(queue.calls)
    assert all(0 <= tails[method] <= queue.longest[method] for method in tails)


def test_one_pause_moves_the_longest_call_but_not_the_tail() -> None:
    queue: Any = TimedQueue(StandIn())
    queue.spent["pop_request"] = array("q", [1_000] * 100_000 + [4_000_000])
    assert queue.tails() == {"pop_request": 1_000}
    runs = [
        result("drop-in", 0, tails={"pop_request": 1_000, "add_request": 3_000}),
        result("drop-in", 1, tails={"pop_request": 2_000}),
    ]
    assert summarize(runs).call_tail_ns == 3_000
    again = RunResult.from_json(json.loads(json.dumps(runs[0].to_json())))
    assert again.call_tail_ns == {"pop_request": 1_000, "add_request": 3_000}


def test_the_timed_queue_lets_a_queue_error_through() -> None:
    queue: Any = TimedQueue(StandIn())
    with pytest.raises(IndexError):
        queue.pop_request()
    assert not queue


def test_the_collector_clock_adds_each_collection_to_its_generation() -> None:
    clock = CollectorClock()
    for generation in (0, 2, 2):
        clock("start", {"generation": generation})
        clock("stop", {"generation": generation, "collected": 0})
    assert clock.total[1] == 0
    assert clock.longest[1] == 0
    assert clock.total[2] >= clock.longest[2] >= 0


# --- without vLLM ---------------------------------------------------------------------------


def test_the_module_imports_without_vllm() -> None:
    probe = (
        "import sys\n"
        "import oracle.bench.vllm_loop, oracle.cli\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'vllm'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "extra", [["--loop-only"], ["--quick", "--loop-only"], ["--json", "--loop-only"]]
)
def test_without_vllm_the_loop_refuses_in_one_line(
    monkeypatch: pytest.MonkeyPatch, extra: list[str]
) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)
    out, err = io.StringIO(), io.StringIO()
    assert main(["bench", "--vllm", *extra], out, err) == 2
    assert out.getvalue() == ""
    (line,) = err.getvalue().splitlines()
    assert line.startswith("policy-kernel bench --vllm: vllm is not importable")


def test_the_module_entry_point_refuses_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    assert vllm_loop.main(["--quick"]) == 2
    assert vllm_loop.main(["--child", "native", "--steps", "1"]) == 2
    assert err.getvalue().count("\n") == 2


def test_loop_only_needs_vllm() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["bench", "--loop-only"], out, err) == 2
    assert err.getvalue() == "policy-kernel bench: --loop-only needs --vllm\n"
    assert out.getvalue() == ""


def test_the_types_freed_with_the_queue_are_averaged_and_shown_for_the_drop_in() -> None:
    native = result("native")
    first = RunResult(**{**asdict_run(result("drop-in", 0)), "freed_types": (("list", 4.0),)})
    second = RunResult(
        **{**asdict_run(result("drop-in", 1)), "freed_types": (("Request", 2.0), ("list", 2.0))}
    )
    row = loop_row([native, first, second])
    assert row.dropin.freed_types == (("list", 3.0), ("Request", 1.0))
    assert row.native.freed_types == ()
    (line,) = vllm_loop.freed_lines([row])
    assert line.split() == ["fcfs", "1,000", "drop-in", "list", "3.00,", "Request", "1.00"]
    assert RunResult.from_json(json.loads(json.dumps(second.to_json()))) == second


def asdict_run(run: RunResult) -> dict[str, Any]:
    return {name: getattr(run, name) for name in RunResult.__dataclass_fields__}


def test_runs_replace_the_plans_runs_per_side(monkeypatch: pytest.MonkeyPatch) -> None:
    planned: list[vllm_loop.Plan] = []

    def measure(plan: vllm_loop.Plan, progress: object) -> Any:  # noqa: ARG001 - as measure
        planned.append(plan)
        raise vllm_loop.RunFailed("stopped here: the plan is what is checked")

    monkeypatch.setattr(vllm_loop, "vllm_missing", lambda: None)
    monkeypatch.setattr(vllm_loop, "measure", measure)
    for extra, runs in ((["--runs", "5"], 5), (["--quick", "--runs", "3"], 3), ([], 2)):
        out, err = io.StringIO(), io.StringIO()
        assert main(["bench", "--vllm", "--loop-only", *extra], out, err) == 1
        assert planned[-1].runs == runs
        assert planned[-1].sizes == vllm_loop.Plan.of("--quick" in extra).sizes


@pytest.mark.parametrize("bad", ["0", "-1", "two", "1.5"])
def test_runs_must_be_a_whole_number_of_at_least_one(bad: str) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["bench", "--vllm", "--runs", bad], io.StringIO(), io.StringIO())
    assert stopped.value.code == 2


def test_runs_needs_vllm() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["bench", "--runs", "3"], out, err) == 2
    assert err.getvalue() == "policy-kernel bench: --runs needs --vllm\n"
    assert out.getvalue() == ""
