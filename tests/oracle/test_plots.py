"""oracle.plots (issue 10, part 4): the data behind the pictures, and the PNG writers."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracle import plots
from oracle.harness.admission_replay import replay_admission
from oracle.harness.admission_scenario import AdmissionScenario
from oracle.harness.rotation_replay import replay_rotation
from oracle.harness.rotation_scenario import RotationScenario
from oracle.harness.scenarios import load_scenario
from oracle.simulate.run import Comparison, as_document, compare, percentile

GOLDEN = Path(__file__).resolve().parents[2] / "oracle" / "golden"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _rotation(name: str) -> RotationScenario:
    scenario = load_scenario(GOLDEN / "rotation" / f"{name}.json").unwrap()
    assert isinstance(scenario, RotationScenario)
    return scenario


def _admission(name: str) -> AdmissionScenario:
    scenario = load_scenario(GOLDEN / "admission" / f"{name}.json").unwrap()
    assert isinstance(scenario, AdmissionScenario)
    return scenario


@pytest.fixture(scope="module")
def comparison() -> Comparison:
    return compare(1, quick=True)


def test_grant_timeline_budget_1_exact() -> None:
    data = plots.grant_timeline_data(replay_rotation(_rotation("budget-1")))
    assert data.scenario == "budget-1"
    assert data.budget == 1
    assert data.requests == ("A", "B")
    assert data.arrivals == ((0, "A"), (0, "B"))
    assert [(s.tick, s.holder, s.use) for s in data.slots] == [
        (t, h, "speculative") for t, h in enumerate("AABABAB")
    ]
    assert data.parks == ((1, "A"), (2, "B"), (3, "A"), (4, "B"))
    assert data.promotions == ((2, "B"), (3, "A"), (4, "B"), (5, "A"), (6, "B"))
    assert data.endings == ((5, "A", "completed"), (6, "B", "completed"))


def test_grant_timeline_agrees_with_every_rotation_golden() -> None:
    for path in sorted((GOLDEN / "rotation").glob("*.json")):
        scenario = load_scenario(path).unwrap()
        if not isinstance(scenario, RotationScenario):
            continue  # an exact event list, not a driven replay
        run = replay_rotation(scenario)
        data = plots.grant_timeline_data(run)
        # a park is exactly a grant that ended parked; every request ends once
        assert len(data.parks) == sum(g.parked for g in run.grants), path.name
        assert sorted(r for _, r, _ in data.endings) == sorted(run.outcomes), path.name
        held = [s.tick for s in data.slots if s.holder is not None]
        assert held == sorted(set(held)), path.name
        # Every counted slice is drawn for the request it counted for: a request's
        # held ticks are the slices of its grants (every golden request ends).
        for request in data.requests:
            drawn = sum(1 for s in data.slots if s.holder == request)
            granted = sum(g.slices for g in run.grants if g.request == request)
            assert drawn == granted, (path.name, request)


def test_a_counted_no_op_slice_is_drawn_and_its_promotion_marked() -> None:
    # cancelled-parked-job's derivation: at t4 A is granted, and its round sees the
    # cancel and ends it at once, a counted no-op slice (A,1) with no model action.
    data = plots.grant_timeline_data(replay_rotation(_rotation("cancelled-parked-job")))
    assert [s.holder for s in data.slots] == ["A", "A", "B", "B", "A", "B"]
    assert (4, "A") in data.promotions
    assert (4, "A", "cancelled") in data.endings


def test_admission_timeline_exact() -> None:
    data = plots.admission_timeline_data(replay_admission(_admission("step-resumed-first")))
    assert data.engine == "step"
    assert data.end == 5.0
    assert [
        (s.request, s.arrived, s.waits, s.admissions, s.preempted_at, s.finished)
        for s in data.requests
    ] == [
        ("A", 0.0, ((0.0, 0.0),), (0.0,), (), 3.0),
        # B was preempted at the iteration starting at 1.0 and waited until 3.0.
        ("B", 0.0, ((0.0, 0.0), (1.0, 3.0)), (0.0, 3.0), (1.0,), 5.0),
        ("C", 0.5, ((0.5, 3.0),), (3.0,), (), 4.0),
    ]


def test_admission_timeline_agrees_with_every_admission_golden() -> None:
    for path in sorted((GOLDEN / "admission").glob("*.json")):
        scenario = load_scenario(path).unwrap()
        assert isinstance(scenario, AdmissionScenario)
        run = replay_admission(scenario)
        data = plots.admission_timeline_data(run)
        assert sum(len(s.admissions) for s in data.requests) == len(run.selected), path.name
        for span in data.requests:
            # Waits alternate with admissions: each ends where the next stay begins.
            assert span.waits[0][0] == span.arrived, path.name
            assert len(span.waits) == len(span.preempted_at) + 1, path.name
            for (start, admitted), again in zip(span.waits, span.preempted_at, strict=False):
                assert admitted is not None, path.name
                assert start <= admitted <= again, path.name
            for start, admitted in span.waits:
                assert start <= (data.end if admitted is None else admitted) <= data.end


def test_wait_distribution(comparison: Comparison) -> None:
    data = plots.wait_distribution_data(comparison)
    assert data.seed == 1
    assert data.quick
    assert data.policies == tuple(r.policy for r in comparison.admission)
    assert set(data.classes) == {"immediate", "short", "long"}
    assert len(data.rows) == len(data.policies) * len(data.classes)
    assert sum(r.requests for r in data.rows) == comparison.requests * len(data.policies)
    for row in data.rows:
        stats = next(r for r in comparison.admission if r.policy == row.policy).classes[
            row.request_class
        ]
        assert (row.p50, row.p95, row.p99, row.longest) == (
            stats.wait_p50,
            stats.wait_p95,
            stats.wait_p99,
            stats.longest_starvation,
        )
        if row.p50 is not None and row.p99 is not None and row.longest is not None:
            assert row.p50 <= row.p99 <= row.longest
        # The waits drawn are the ones the percentiles were taken of.
        assert list(row.waits) == sorted(row.waits)
        assert len(row.waits) <= row.requests
        assert (percentile(row.waits, 50), percentile(row.waits, 99)) == (row.p50, row.p99)
        assert max(row.waits, default=None) == row.longest
    # The JSON document keeps the percentiles, not every wait.
    reports = as_document(comparison)["admission"]
    assert isinstance(reports, tuple)
    assert all("waits" not in report for report in reports)


def test_missing_matplotlib_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins  # noqa: PLC0415

    real_import = builtins.__import__

    def no_matplotlib(name: str, *args: object, **kwargs: object) -> object:
        if name.split(".", maxsplit=1)[0] == "matplotlib":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    data = plots.grant_timeline_data(replay_rotation(_rotation("budget-1")))
    with pytest.raises(RuntimeError, match=r"pip install -e '\.\[plot\]'"):
        plots.write_grant_timeline_png(data, "/nonexistent/never.png")


def _is_png(path: Path) -> bool:
    return path.is_file() and path.read_bytes()[:8] == PNG_MAGIC


def test_pngs(tmp_path: Path, comparison: Comparison) -> None:
    pytest.importorskip("matplotlib")
    grant = plots.grant_timeline_data(replay_rotation(_rotation("budget-1")))
    admission = plots.admission_timeline_data(replay_admission(_admission("step-resumed-first")))
    waits = plots.wait_distribution_data(comparison)
    written = [
        plots.write_grant_timeline_png(grant, tmp_path / "grant.png"),
        plots.write_admission_timeline_png(admission, tmp_path / "sub" / "admission.png"),
        plots.write_wait_distribution_png(waits, tmp_path / "waits.png"),
    ]
    assert all(_is_png(path) for path in written)
