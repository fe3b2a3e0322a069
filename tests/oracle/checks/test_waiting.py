"""The waiting checks (selection, expressions): silent on the real kernel, and each
shown to catch a deliberately wrong kernel with a counterexample that replays."""

from __future__ import annotations

import importlib
import io
import json
import math
import pickle
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from oracle.checks.expressions import EXPRESSIONS, trees
from oracle.checks.framework import LEVELS, Check, Counterexample, Partial, merge
from oracle.checks.selection import SELECTION
from oracle.cli import main
from oracle.harness.admission_replay import replay_admission
from oracle.harness.admission_scenario import AdmissionScenario
from oracle.harness.scenarios import read_scenario
from oracle.harness.verdicts import admission_result
from policy.waiting import (
    Attr,
    BudgetLeft,
    Call,
    Moment,
    Num,
    Scope,
    WaitingQueue,
    evaluate,
    load_policy,
    select_waiting,
)

# ``policy.waiting.evaluate`` (and ``.select``) are also names of functions in
# ``policy.waiting``: the modules themselves, where their callers look names up.
kernel_evaluate = importlib.import_module("policy.waiting.evaluate")
kernel_reference = importlib.import_module("policy.waiting.reference")


def _run_all(check: Check, level: str = "quick") -> Partial:
    return merge([check.run(level, unit) for unit in check.units(level)])  # type: ignore[arg-type]


def _replay_exit(scenario: Mapping[str, object], folder: Path) -> int:
    path = folder / "counterexample.json"
    path.write_text(json.dumps(scenario, allow_nan=False), encoding="utf-8")
    return main(["replay", str(path)], out=io.StringIO())


def _passes(scenario: Mapping[str, object]) -> bool | None:
    loaded = read_scenario(dict(scenario))
    assert isinstance(loaded, AdmissionScenario)
    return admission_result(replay_admission(loaded)).passed


def _replayable(found: Iterable[Counterexample]) -> Counterexample:
    return next(c for c in found if c.scenario)


# ----------------------------------------------------------------------------- the real kernel


@pytest.mark.parametrize("check", [SELECTION, EXPRESSIONS], ids=lambda c: c.name)
def test_quick_level_finds_no_disagreement(check: Check) -> None:
    found = _run_all(check)
    assert found.disagreements == 0, [c.summary for c in found.counterexamples]
    assert found.counts
    assert all(count > 0 for count in found.counts.values())


@pytest.mark.parametrize("check", [SELECTION, EXPRESSIONS], ids=lambda c: c.name)
def test_levels_state_bounds_and_picklable_units(check: Check) -> None:
    for level in LEVELS:
        assert check.bounds(level)
        units = check.units(level)
        assert len(set(units)) == len(units)
        assert pickle.loads(pickle.dumps(list(units))) == list(units)
    assert set(check.units("quick")) <= set(check.units("default")) <= set(check.units("deep"))


def test_tree_counts() -> None:
    # 9 leaves; 4 one-child forms; 14 two-child forms; the conditional
    assert [len(trees(n)) for n in (1, 2, 3, 4)] == [9, 36, 1278, 14913]
    assert len(set(trees(4))) == 14913


# ----------------------------------------------------------------------------- wrong kernels


def _nan_first(values: Iterable[float]) -> tuple[tuple[int, float], ...]:
    return tuple((-1, 0.0) if math.isnan(v) else (0, v + 0.0) for v in values)


def _plain_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Select by the plain definition (select_reference, the tree evaluator): the
    mutants below break that definition, which the fast paths are proven equal to
    (tests/waiting/fast/test_paths.py, tests/waiting/test_compiled.py). The queue's
    one method select_waiting chooses through is replaced."""
    monkeypatch.setattr(WaitingQueue, "selected", _by_definition)


def _by_definition(queue: WaitingQueue, policy: object, moment: Moment) -> object:
    chosen = kernel_reference.select_reference(queue, policy, moment)
    return chosen.map(lambda selection: (selection.entry, selection.keys)).value_or(None)


def _queue_of(keys: list[float]) -> tuple[WaitingQueue, object]:
    policy = load_policy({"attributes": {"k": "visible", "d": "visible"}, "keys": ["k / d"]})
    kernel_policy = policy.unwrap()
    queue = WaitingQueue()
    for i, (k, d) in enumerate((1.0, 1.0) if key == 1.0 else (0.0, 0.0) for key in keys):
        queue = queue.append(kernel_policy, f"R{i}", {"k": k, "d": d}, serial=i, now=0.0).unwrap()
    return queue, kernel_policy


def test_selection_catches_nan_ranked_first(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # select_reference looks key_list_order up in policy.waiting.reference
    _plain_kernel(monkeypatch)
    monkeypatch.setattr(kernel_reference, "key_list_order", _nan_first)
    queue, policy = _queue_of([1.0, math.nan])
    chosen = select_waiting(queue, policy, Moment(4.0)).unwrap()  # type: ignore[arg-type]
    assert chosen.index == 1  # the patch is effective: NaN wins

    found = SELECTION.run("quick", ("one", 2, 0, 5))  # front key 1.0, every second key
    assert found.disagreements > 0
    counterexample = _replayable(found.counterexamples)
    assert counterexample.size == 2
    assert "\n" not in counterexample.summary
    assert counterexample.scenario["engine"] == "attempt"
    assert _passes(counterexample.scenario) is False
    assert _replay_exit(counterexample.scenario, tmp_path) == 1

    monkeypatch.undo()
    assert _passes(counterexample.scenario) is True
    assert _replay_exit(counterexample.scenario, tmp_path) == 0


def test_selection_catches_negative_zero_below_zero(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # key_list_order looks order_key up in policy.waiting.evaluate
    def signed(value: float) -> tuple[int, float, float]:
        if math.isnan(value):
            return (1, 0.0, 0.0)
        return (0, value, math.copysign(1.0, value))

    _plain_kernel(monkeypatch)
    monkeypatch.setattr(kernel_evaluate, "order_key", signed)
    assert kernel_reference.key_list_order([-0.0]) < kernel_reference.key_list_order([0.0])

    found = SELECTION.run("quick", ("one", 2, 0, 4))  # front key 0.0, every second key
    assert found.disagreements > 0
    counterexample = _replayable(found.counterexamples)
    assert _replay_exit(counterexample.scenario, tmp_path) == 1
    monkeypatch.undo()
    assert _replay_exit(counterexample.scenario, tmp_path) == 0


def _min_ignoring_nan(function: str, values: Iterable[float]) -> float:
    numbers = [v for v in values if not math.isnan(v)]
    if not numbers:
        return math.nan
    return min(numbers) if function == "min" else max(numbers)


def test_expressions_catch_extremum_not_propagating_nan(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # evaluate looks extremum up in policy.waiting.evaluate
    _plain_kernel(monkeypatch)
    monkeypatch.setattr(kernel_evaluate, "extremum", _min_ignoring_nan)
    scope = Scope({}, 0, now=0.0, waited=0.0, budget_left={}, constants={})
    assert evaluate(Call("min", (BudgetLeft("engine"), Num(1.0))), scope) == 1.0  # effective

    found = EXPRESSIONS.run("quick", (3, "min(x, y)"))
    assert found.disagreements > 0
    counterexample = found.counterexamples[0]
    assert counterexample.scenario, counterexample.summary  # replayable ones come first
    assert counterexample.size == 3
    assert "\n" not in counterexample.summary
    assert _passes(counterexample.scenario) is False
    assert _replay_exit(counterexample.scenario, tmp_path) == 1

    monkeypatch.undo()
    assert _passes(counterexample.scenario) is True
    assert _replay_exit(counterexample.scenario, tmp_path) == 0


def test_expressions_report_unreplayable_trees(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A missing name read as 0 instead of NaN: the undeclared attribute u, and an
    # absent stage, are both wrong; only the stage gives a scenario.
    def zero_when_missing(values: Mapping[str, object], name: str) -> float:
        found = values.get(name)
        return 0.0 if found is None else kernel_evaluate.as_float(found)

    _plain_kernel(monkeypatch)
    monkeypatch.setattr(kernel_evaluate, "_read", zero_when_missing)
    scope = Scope({}, 0, now=0.0, waited=0.0, budget_left={}, constants={})
    assert evaluate(Attr("u"), scope) == 0.0  # effective

    # quick: environment 0 only, where the stage is present; u is wrong at each a
    found = EXPRESSIONS.run("quick", (1, "leaf"))
    assert found.disagreements == 7
    assert found.counterexamples
    for counterexample in found.counterexamples:
        assert counterexample.scenario == {}
        assert "not replayable" in counterexample.summary
        assert counterexample.summary.startswith("expression, not replayable")

    # default: the absent stage (environment 1) too, and its counterexamples come first
    found = EXPRESSIONS.run("default", (1, "leaf"))
    assert found.disagreements == 7 * 3 + 7
    stage = found.counterexamples[0]
    assert "budget_left(engine) absent" in stage.summary
    assert _replay_exit(stage.scenario, tmp_path) == 1
    monkeypatch.undo()
    assert _replay_exit(stage.scenario, tmp_path) == 0
