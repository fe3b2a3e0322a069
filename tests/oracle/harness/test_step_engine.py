"""The step engine: golden timelines, loading rules, and invariants of random runs
checked against the per-iteration trace."""

from __future__ import annotations

import io
import json
import math
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oracle.cli import main
from oracle.harness.admission_replay import replay_admission
from oracle.harness.admission_run import QueueRefused
from oracle.harness.admission_scenario import AdmissionScenario, StepEngine, StepRequest
from oracle.harness.scenarios import golden_paths, load_scenario
from oracle.harness.step_engine import (
    Admission,
    Preemption,
    StepTrace,
    Took,
    blocks_for,
    run_step,
    trace_step,
)
from policy.waiting import (
    QueuePolicy,
    Timing,
    Visibility,
    ascend_fcfs_lanes,
    dump_policy,
    make_policy,
)
from policy.waiting.policies import ASCEND_LANES_KEY
from tests.replay_helpers import step_document

GOLDEN = Path(str(golden_paths()[0])).parents[1] / "admission"
STEP_GOLDENS = sorted(GOLDEN.glob("step-*.json"))


def load(path: Path) -> AdmissionScenario:
    scenario = load_scenario(path).unwrap()
    assert isinstance(scenario, AdmissionScenario)
    return scenario


def replay_json(*argv: str) -> tuple[int, list[dict[str, object]]]:
    out = io.StringIO()
    status = main(["replay", "--json", *argv], out=out)
    return status, [json.loads(line) for line in out.getvalue().splitlines()]


# --- golden scenarios -------------------------------------------------------------


def test_the_step_goldens_exist() -> None:
    names = {path.stem for path in STEP_GOLDENS}
    assert names >= {
        "step-budget-left",
        "step-resumed-first",
        "step-aging-selection",
        "step-ascend-lanes-aging",
        "step-ascend-lanes-no-aging",
    }


@pytest.mark.parametrize("path", STEP_GOLDENS, ids=lambda path: path.stem)
def test_golden_replays_and_carries_the_records(path: Path) -> None:
    status, [result] = replay_json(str(path))
    assert status == 0
    assert result["passed"] is True
    doc = json.loads(path.read_text())
    assert doc["derivation"], "a golden file needs its hand derivation"
    records = result["requests"]
    assert isinstance(records, list)
    assert [record["id"] for record in records] == [r["id"] for r in doc["requests"]]
    for record in records:
        assert set(record) == {
            "id",
            "serial",
            "enqueued_at",
            "admitted_at",
            "first_token_at",
            "finished_at",
            "preemptions",
        }
        assert record["finished_at"] is not None  # no horizon in the goldens: all finish


def test_replay_of_every_golden_exits_0() -> None:
    out = io.StringIO()
    assert main(["replay"], out=out) == 0
    text = out.getvalue()
    assert "step-budget-left-shrinks (admission): step engine, budget 5" in text
    assert "FAIL" not in text


def records_of(path: Path) -> dict[object, dict[str, object]]:
    status, [result] = replay_json(str(path))
    assert status == 0
    records = result["requests"]
    assert isinstance(records, list)
    return {record["id"]: record for record in records}


def test_budget_left_golden_timeline() -> None:
    records = records_of(GOLDEN / "step-budget-left.json")
    # 0 decodes in t1..t9; 1 prefills in t1; 3 prefills 2 tokens in t1 and 1 in t2.
    assert records[0]["first_token_at"] == 1
    assert (records[0]["finished_at"], records[1]["finished_at"]) == (10, 2)
    assert (records[3]["first_token_at"], records[3]["finished_at"]) == (3, 3)
    trace = trace_step(load(GOLDEN / "step-budget-left.json"))
    second = trace.iterations[1]
    assert second.events == (
        Took(0, 1, prefill=False),
        Admission(1, 2, resumed=False),
        Admission(3, 2, resumed=False),
    )
    assert trace.iterations[2].events[:2] == (Took(0, 1, prefill=False), Took(3, 1, prefill=True))


def test_resumed_golden_timeline() -> None:
    records = records_of(GOLDEN / "step-resumed-first.json")
    assert records["B"] == {
        "id": "B",
        "serial": 1,
        "enqueued_at": 0,
        "admitted_at": [0, 3],
        "first_token_at": 1,  # the first token the user saw, before the preemption
        "finished_at": 5,
        "preemptions": 1,
    }
    assert (records["A"]["finished_at"], records["C"]["finished_at"]) == (3, 4)
    trace = trace_step(load(GOLDEN / "step-resumed-first.json"))
    t1, t2, t3 = trace.iterations[1:4]
    assert t1.events == (Preemption("B"), Took("A", 1, prefill=False))
    assert t2.events == (Took("A", 1, prefill=False),)  # B, in front, is blocked: so is C
    assert t3.events == (Admission("B", 2, resumed=True), Admission("C", 1, resumed=False))


def test_aging_regression_is_the_same_through_both_engines() -> None:
    pool = load(GOLDEN / "aging-selection.json")
    step = load(GOLDEN / "step-aging-selection.json")
    assert pool.policy.keys == step.policy.keys
    pool_run, step_run = replay_admission(pool), replay_admission(step)
    assert step_run.selected == pool_run.selected == (0, 4, 1, 5, 2, 3)
    assert step_run.admitted_at == pool_run.admitted_at
    # Residency in the step engine plays the pool's hold: released when finished.
    pool_release = {r.id: r.finished_at for r in pool_run.records}
    assert {r.id: r.finished_at for r in step_run.records} == pool_release


@pytest.mark.parametrize(
    ("name", "max_wait", "order"),
    [
        ("step-ascend-lanes-aging", 0.003, (0, 4, 1, 5, 2, 3)),
        ("step-ascend-lanes-no-aging", 0.0, (0, 4, 2, 3, 1, 5)),
    ],
)
def test_ascend_example_with_the_library_policy(
    name: str, max_wait: float, order: tuple[int, ...]
) -> None:
    scenario = load(GOLDEN / f"{name}.json")
    library = replace(scenario, policy=ascend_fcfs_lanes(short_tokens=128, max_wait=max_wait))
    assert run_step(library).selected == run_step(scenario).selected == order


# --- loading ----------------------------------------------------------------------


def step_doc(blocks: int, prompt: int, out: int, **policy: object) -> dict[str, object]:
    return step_document(blocks=blocks, prompt=prompt, out=out, request="big", **policy)


def test_a_request_that_could_never_finish_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps(step_doc(blocks=2, prompt=3, out=3)))
    assert main(["replay", str(path)], out=io.StringIO()) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert (
        "requests[0]: needs 5 tokens of KV for its last output token (prompt 3 + out 3 - 1), "
        "more than the pool's 2 x 2 = 4: it could never finish"
    ) in error


def test_a_request_that_fills_the_pool_exactly_finishes(tmp_path: Path) -> None:
    # The last output token is never fed back: prompt 3 + out 2 needs 4 tokens, not 5.
    path = tmp_path / "full.json"
    path.write_text(json.dumps(step_doc(blocks=2, prompt=3, out=2)))
    trace = trace_step(load(path))
    assert [i.blocks_in_use for i in trace.iterations] == [2, 2]
    assert trace.run.records[0].finished_at == 2


def test_a_step_policy_may_not_read_the_true_output_length(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "peek.json"
    doc = step_doc(blocks=8, prompt=1, out=1, attributes={"out": "visible"}, keys=["out"])
    path.write_text(json.dumps(doc))
    assert main(["replay", str(path)], out=io.StringIO()) == 2
    assert "policy.attributes.out: a step scenario's true output length is hidden" in (
        capsys.readouterr().err
    )
    # Left undeclared, the engine declares it hidden and the kernel's own rule refuses it.
    doc = step_doc(blocks=8, prompt=1, out=1, attributes={}, keys=["out"])
    path.write_text(json.dumps(doc))
    assert main(["replay", str(path)], out=io.StringIO()) == 2
    assert "policy.keys[0]: attribute 'out' is hidden" in capsys.readouterr().err


def test_the_engine_passes_the_kv_bound_to_the_queue_as_ever_fits() -> None:
    # Built in code, past the loader: the waiting queue still refuses the request.
    scenario = scenario_of([(0, 200, 60)])
    with pytest.raises(QueueRefused, match="could never fit"):
        trace_step(scenario)


# --- time -------------------------------------------------------------------------


def scenario_of(
    requests: list[tuple[float, int, int]],
    *,
    cost: float = 1.0,
    horizon: float | None = None,
    budget: int = 8,
    max_running: int = 4,
) -> AdmissionScenario:
    """A FIFO step scenario from (enqueue, prompt, out) triples."""
    policy = make_policy(None).unwrap()
    engine = StepEngine(budget, 8, cost, max_running, 64, 4, horizon=horizon)
    return AdmissionScenario(
        "t",
        "",
        engine,
        policy,
        tuple(
            StepRequest(i, i, at, {"prompt": float(p), "out": float(o)}, p, o)
            for i, (at, p, o) in enumerate(requests)
        ),
        None,
    )


def test_idle_engine_starts_at_the_next_arrival() -> None:
    # 0 runs in [0, 1); 1 arrived during it, so the next iteration follows at 1;
    # after 1 finishes at 2 the engine is idle until 2 arrives at 2.5.
    trace = trace_step(scenario_of([(0, 1, 1), (0.5, 1, 1), (2.5, 1, 1)]))
    assert [i.start for i in trace.iterations] == [0, 1, 2.5]
    assert trace.run.admitted_at == (0.0, 1.0, 2.5)
    assert [r.enqueued_at for r in trace.run.records] == [0, 0.5, 2.5]


def test_iteration_starts_do_not_drift() -> None:
    # Start n is base + n * cost: summing 0.1 forty times would not give these floats.
    trace = trace_step(scenario_of([(0.3, 1, 40)], cost=0.1))
    assert [i.start for i in trace.iterations] == [0.3 + n * 0.1 for n in range(40)]
    assert trace.run.records[0].finished_at == 0.3 + 40 * 0.1


def test_an_arrival_exactly_at_an_iteration_end_continues_the_busy_period() -> None:
    # The `<=` rule: 0 runs in [0.1, 0.1 + 0.3); 1 arrives exactly at that end, so the
    # busy period goes on and 1's iterations start at 0.1 + n * 0.3 (n = 1, 2, 3). A
    # new busy period at 0.4 would start them at 0.4 + k * 0.3, which differs in the
    # last bits (1.0 rather than 0.9999999999999999).
    end = 0.1 + 0.3
    assert end == 0.4
    trace = trace_step(scenario_of([(0.1, 1, 1), (0.4, 1, 3)], cost=0.3))
    assert [i.start for i in trace.iterations] == [0.1 + n * 0.3 for n in range(4)]
    assert [i.start for i in trace.iterations] != [0.1] + [0.4 + k * 0.3 for k in range(3)]
    assert trace.run.admitted_at == (0.1, 0.4)
    assert trace.run.records[1].finished_at == 0.1 + 4 * 0.3


def test_an_arrival_just_after_an_iteration_end_starts_a_new_busy_period() -> None:
    # Strictly later than the end, with nothing else to do, the engine is idle: the
    # next busy period begins at the arrival itself.
    later = math.nextafter(0.4, math.inf)
    trace = trace_step(scenario_of([(0.1, 1, 1), (later, 1, 3)], cost=0.3))
    assert [i.start for i in trace.iterations] == [0.1] + [later + k * 0.3 for k in range(3)]
    assert trace.run.records[1].finished_at == later + 3 * 0.3


def test_an_arrival_during_an_iteration_waits_for_the_next_one() -> None:
    # Arriving inside [0, 1), 1 is queued at the next start, 1, in the same busy period.
    trace = trace_step(scenario_of([(0, 1, 1), (0.999, 1, 1)]))
    assert [i.start for i in trace.iterations] == [0, 1]
    assert trace.run.admitted_at == (0.0, 1.0)


def test_horizon_stops_iterations() -> None:
    # Requests queue at 0 and finish after 1 and 3 iterations; 2 arrives at 5, past the horizon.
    trace = trace_step(scenario_of([(0, 1, 1), (0, 1, 3), (5, 1, 1)], horizon=2))
    assert [i.start for i in trace.iterations] == [0, 1]
    assert [r.finished_at for r in trace.run.records] == [1, None, None]
    assert trace.run.selected == (0, 1)


def test_residents_take_their_tokens_before_admissions() -> None:
    # Budget 3: 0 (prompt 4) prefills 3 tokens at t0; at t1 it takes its last prompt
    # token first, so the newcomer gets the 2 tokens left, not the whole budget.
    trace = trace_step(scenario_of([(0, 4, 1), (0.5, 5, 1)], budget=3))
    assert trace.iterations[1].events == (
        Took(0, 1, prefill=True),
        Admission(1, 2, resumed=False),
    )


# --- random scenarios -------------------------------------------------------------

ATTRIBUTES: dict[str, Visibility] = {
    "prompt": "visible",
    "out": "hidden",
    "immediate": "visible",
    "priority": "visible",
}
TEMPLATES: list[tuple[list[str] | None, dict[str, float], Timing]] = [
    (None, {}, "selection"),
    (["prompt"], {}, "selection"),
    (["budget_left(engine) >= 4 ? serial : -serial"], {}, "selection"),
    (["budget_left(engine) >= prompt ? 0 : 1", "-serial"], {}, "selection"),
    ([ASCEND_LANES_KEY], {"short_tokens": 4, "max_wait": 2}, "selection"),
    (["priority", "-waited"], {}, "selection"),
    (["priority"], {}, "enqueue"),
]


def policy_from(template: tuple[list[str] | None, dict[str, float], Timing]) -> QueuePolicy:
    keys, constants, timing = template
    return make_policy(keys, constants=constants, attributes=ATTRIBUTES, timing=timing).unwrap()


POLICIES = [policy_from(template) for template in TEMPLATES]


@st.composite
def step_scenarios(draw: st.DrawFn) -> AdmissionScenario:
    """Small step scenarios: KV pools just big enough, so preemptions are common."""
    block_size = draw(st.integers(1, 4))
    requests = []
    for index in range(draw(st.sampled_from([1, 2, 3, 4, 4, 5, 5, 6, 6]))):
        prompt, out = draw(st.integers(1, 10)), draw(st.integers(1, 6))
        attrs = {
            "immediate": draw(st.booleans()),
            "priority": float(draw(st.integers(0, 3))),
            "prompt": float(prompt),
            "out": float(out),
        }
        enqueue = draw(st.integers(0, 8)) / 4
        requests.append(StepRequest(f"r{index}", index, enqueue, attrs, prompt, out))
    smallest = max(blocks_for(r.kv_tokens_at_end, block_size) for r in requests)
    engine = StepEngine(
        budget=draw(st.integers(1, 8)),
        chunk=draw(st.integers(1, 8)),
        iteration_cost=draw(st.sampled_from([1.0, 0.5, 0.25, 0.001])),
        max_running=draw(st.sampled_from([1, 2, 2, 3, 4])),
        blocks=draw(st.integers(smallest, smallest + 3)),
        block_size=block_size,
        horizon=draw(st.none() | st.none() | st.integers(0, 40).map(lambda t: t / 4)),
    )
    policy = draw(st.sampled_from(POLICIES))
    return AdmissionScenario("random", "", engine, policy, tuple(requests), None)


def engine_of(scenario: AdmissionScenario) -> StepEngine:
    assert isinstance(scenario.engine, StepEngine)
    return scenario.engine


def requests_of(scenario: AdmissionScenario) -> dict[str | int, StepRequest]:
    return {r.id: r for r in scenario.requests if isinstance(r, StepRequest)}


@given(step_scenarios())
def test_tokens_taken_never_exceed_the_budget(scenario: AdmissionScenario) -> None:
    engine = engine_of(scenario)
    for iteration in trace_step(scenario).iterations:
        assert iteration.tokens_taken <= engine.budget
        for event in iteration.events:
            if isinstance(event, Admission) or (isinstance(event, Took) and event.prefill):
                assert 1 <= event.tokens <= engine.chunk
            elif isinstance(event, Took):
                assert event.tokens == 1  # a decode


@given(step_scenarios())
def test_kv_use_never_exceeds_the_pool(scenario: AdmissionScenario) -> None:
    """KV recomputed from the events: ceil(processed / block_size) per resident."""
    engine = engine_of(scenario)
    processed: dict[str | int, int] = {}  # residents' tokens since their latest admission
    for iteration in trace_step(scenario).iterations:
        assert set(iteration.residents) == set(processed)
        for event in iteration.events:
            match event:
                case Preemption(request):
                    del processed[request]
                case Took(request, tokens, _):
                    processed[request] += tokens
                case Admission(request, tokens, _):
                    processed[request] = tokens
            in_use = sum(blocks_for(p, engine.block_size) for p in processed.values())
            assert in_use <= engine.blocks
        assert iteration.blocks_in_use == in_use
        for request in iteration.finished:
            del processed[request]


@given(step_scenarios())
def test_every_request_finishes_exactly_once_unless_the_horizon_ends_first(
    scenario: AdmissionScenario,
) -> None:
    engine = engine_of(scenario)
    requests = requests_of(scenario)
    trace = trace_step(scenario)
    finished = [r for iteration in trace.iterations for r in iteration.finished]
    assert len(finished) == len(set(finished))
    if engine.horizon is None:
        assert sorted(map(str, finished)) == sorted(map(str, requests))
    else:
        # Work was left only because the next iteration would have started at or after
        # the horizon: back to back after the last one, or at a later arrival.
        last_end = trace.iterations[-1].end if trace.iterations else -math.inf
        for request in requests.values():
            if request.id not in finished:
                assert max(last_end, request.enqueue) >= engine.horizon
    ends = {r: i.end for i in trace.iterations for r in i.finished}
    for record in trace.run.records:
        assert record.finished_at == ends.get(record.id)


@given(step_scenarios())
def test_a_finished_request_did_all_its_work_in_its_last_residency(
    scenario: AdmissionScenario,
) -> None:
    requests = requests_of(scenario)
    prefilled: dict[str | int, int] = {}
    decoded: dict[str | int, int] = {}
    for iteration in trace_step(scenario).iterations:
        for event in iteration.events:
            match event:
                case Admission(request, tokens, _):
                    prefilled[request], decoded[request] = tokens, 0
                case Took(request, tokens, True):
                    assert decoded[request] == 0  # decoding starts after the whole prompt
                    prefilled[request] += tokens
                case Took(request, _, False):
                    assert prefilled[request] == requests[request].prompt
                    decoded[request] += 1
        for request in iteration.first_tokens:
            assert prefilled[request] == requests[request].prompt
            assert decoded[request] == 0
        for request in iteration.finished:
            assert prefilled[request] == requests[request].prompt
            assert decoded[request] == requests[request].out - 1


@given(step_scenarios())
def test_a_resumed_request_is_always_the_next_one_admitted(scenario: AdmissionScenario) -> None:
    preempted: list[str | int] = []  # waiting after a preemption, most recent last
    for iteration in trace_step(scenario).iterations:
        for event in iteration.events:
            if isinstance(event, Preemption):
                preempted.append(event.request)
            elif isinstance(event, Admission):
                resumed = bool(preempted)
                if resumed:
                    assert event.request == preempted.pop()
                assert event.resumed == resumed


@given(step_scenarios())
def test_a_step_that_preempted_admits_nobody(scenario: AdmissionScenario) -> None:
    for iteration in trace_step(scenario).iterations:
        kinds = {type(event) for event in iteration.events}
        assert not (Preemption in kinds and Admission in kinds), iteration


@given(step_scenarios())
def test_the_most_recently_admitted_resident_is_preempted(scenario: AdmissionScenario) -> None:
    residents: list[str | int] = []  # admission order
    for iteration in trace_step(scenario).iterations:
        assert tuple(residents) == iteration.residents
        for event in iteration.events:
            if isinstance(event, Preemption):
                assert event.request == residents.pop()
            elif isinstance(event, Admission):
                residents.append(event.request)
        residents = [r for r in residents if r not in iteration.finished]


@given(step_scenarios())
def test_residents_take_their_share_first(scenario: AdmissionScenario) -> None:
    """Residents are served in admission order, each its full share (one decode token,
    or a prefill chunk) while tokens are left; admissions get only what is left."""
    engine = engine_of(scenario)
    requests = requests_of(scenario)
    prefilled: dict[str | int, int] = {}
    for iteration in trace_step(scenario).iterations:
        left = engine.budget
        served = [e for e in iteration.events if not isinstance(e, Admission)]
        admissions = [e for e in iteration.events if isinstance(e, Admission)]
        assert list(iteration.events) == served + admissions
        preempted = {e.request for e in served if isinstance(e, Preemption)}
        took = {e.request: e for e in served if isinstance(e, Took)}
        for request in iteration.residents:
            if request in preempted or left == 0:
                assert request not in took
                continue
            remaining = requests[request].prompt - prefilled[request]
            share = min(engine.chunk, remaining, left) if remaining else 1
            assert took[request] == Took(request, share, prefill=remaining > 0)
            prefilled[request] += share if remaining else 0
            left -= share
        for admission in admissions:
            assert admission.tokens == min(engine.chunk, requests[admission.request].prompt, left)
            prefilled[admission.request] = admission.tokens
            left -= admission.tokens


@given(step_scenarios())
def test_runs_end_within_the_progress_bound(scenario: AdmissionScenario) -> None:
    requests = requests_of(scenario).values()
    trace = trace_step(scenario)
    # The bound the loader limits (docs/harness.md, "Limits"): every iteration has an
    # oldest resident, which keeps its progress of min(chunk, budget) prompt tokens or a decode.
    engine = engine_of(scenario)
    assert len(trace.iterations) <= sum(engine.iterations_as_oldest(r) for r in requests)
    starts = [i.start for i in trace.iterations]
    assert starts == sorted(starts)
    assert set(trace.run.admitted_at) <= set(starts)
    for record in trace.run.records:
        if record.first_token_at is not None:
            assert record.admitted_at
            assert record.first_token_at > record.admitted_at[0]
        if record.finished_at is not None:
            assert record.first_token_at is not None
            assert record.finished_at >= record.first_token_at
            assert record.finished_at >= record.admitted_at[-1]
        assert len(record.admitted_at) <= record.preemptions + 1


def scenario_document(scenario: AdmissionScenario) -> dict[str, object]:
    """The scenario file of ``scenario``."""
    engine = engine_of(scenario)
    step: dict[str, object] = {
        "budget": engine.budget,
        "chunk": engine.chunk,
        "iteration_cost": engine.iteration_cost,
        "max_running": engine.max_running,
        "blocks": engine.blocks,
        "block_size": engine.block_size,
        "stage": engine.stage,
    }
    if engine.horizon is not None:
        step["horizon"] = engine.horizon
    return {
        "kind": "admission",
        "name": scenario.name,
        "engine": "step",
        "step": step,
        "policy": dump_policy(scenario.policy),
        "requests": [
            {
                "id": r.id,
                "serial": r.serial,
                "enqueue": r.enqueue,
                "prompt": r.prompt,
                "out": r.out,
                "attrs": {k: v for k, v in r.attrs.items() if k not in ("prompt", "out")},
            }
            for r in requests_of(scenario).values()
        ],
    }


def outcome(trace: StepTrace) -> tuple[object, ...]:
    run = trace.run
    return run.selected, run.admitted_at, run.records, trace.iterations


@given(step_scenarios())
def test_same_scenario_same_output_also_through_its_file(scenario: AdmissionScenario) -> None:
    first = trace_step(scenario)
    assert outcome(trace_step(scenario)) == outcome(first)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "scenario.json"
        path.write_text(json.dumps(scenario_document(scenario)))
        loaded = load(path)
    assert loaded.engine == scenario.engine
    assert loaded.requests == scenario.requests
    assert loaded.policy == scenario.policy
    assert outcome(trace_step(loaded)) == outcome(first)


def test_a_scenario_has_records_for_every_request_in_file_order() -> None:
    scenario = scenario_of([(1, 1, 1), (0, 2, 2)])
    run = run_step(scenario)
    assert [r.id for r in run.records] == [0, 1]
    assert run.selected == (1, 0)
    assert run.admitted_at == (0.0, 1.0)
