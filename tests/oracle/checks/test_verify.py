"""``policy-kernel verify``: its reporting, sharding and jobs, and that it bites.

The exhaustive checks themselves run in the main job (``./dev replay`` runs
``verify --quick``); here small stand-in checks exercise the command, and one
deliberately broken kernel shows the rotation model check catching it with a
counterexample that replays.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from oracle.checks import framework, verify
from oracle.checks.framework import Check, Counterexample, Level, PaperBound, Partial
from oracle.checks.rotation_model import explore
from oracle.cli import main
from policy.rotation import decisions, protocol
from tests.replay_helpers import printed_by


def _passing(_level: Level, unit: object) -> Partial:
    found = Partial()
    found.count("cases", 10)
    assert isinstance(unit, int)
    found.observe("largest", unit)
    return found


def _failing(_level: Level, _unit: object) -> Partial:
    found = Partial()
    found.count("cases", 1)
    scenario = {
        "kind": "rotation",
        "name": "stand-in",
        "budget": 2,
        "requests": [{"id": "A", "slices": 1}],
        "expect": {"grants": [["A", 1]]},
    }
    found.disagree(lambda: Counterexample("failing", 1, "stand-in disagreement", scenario), 1)
    return found


PASSING = Check(
    "passing",
    "a stand-in that agrees",
    bounds=lambda _level: {"units": "1..3"},
    units=lambda _level: [1, 2, 3],
    run=_passing,
    paper_bounds=lambda _level: {"largest": PaperBound(3, "three units")},
)
FAILING = Check(
    "failing", "a stand-in that disagrees", lambda _level: {}, lambda _level: [0], _failing
)


@pytest.fixture
def stand_ins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify, "CHECKS", (PASSING, FAILING))


def test_shard_parsing() -> None:
    assert verify.parse_shard(" 3/4 ") == verify.Shard(3, 4)
    for bad in ("0/2", "3/2", "1", "a/b", "1/0"):
        with pytest.raises(ValueError, match="--shard"):
            verify.parse_shard(bad)


def test_a_long_shard_is_quoted_short() -> None:
    with pytest.raises(ValueError, match=r"--shard must be K/N") as refused:
        verify.parse_shard("1/" + "2" * 100_000)
    assert str(refused.value).endswith("... (100,002 characters)")


def test_a_misspelt_level_is_a_value_error_naming_the_levels() -> None:
    # Issue 30: a bare KeyError('quik') from a check's domain table.
    said = r"^unknown level 'quik': the levels are quick, default, deep$"
    with pytest.raises(ValueError, match=said):
        verify.verify("quik", jobs=1, out=io.StringIO(), err=io.StringIO())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=said):
        verify.run_checks("quik", 1, verify.Shard())  # type: ignore[arg-type]


def test_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--shard", "5/2"]) == 2
    assert "1 <= K <= N" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["verify", "--jobs", "0"])
    assert exited.value.code == 2
    with pytest.raises(SystemExit):
        main(["verify", "--quick", "--deep"])


@pytest.mark.usefixtures("stand_ins")
@pytest.mark.parametrize("jobs", [1, 2])
def test_report_verdicts_and_counterexample_file(tmp_path: Path, jobs: int) -> None:
    out = io.StringIO()
    status = verify.verify("quick", jobs=jobs, out_folder=tmp_path, out=out, err=io.StringIO())
    text = out.getvalue()
    assert status == 1
    assert "passing: PASS" in text
    assert "failing: FAIL" in text
    assert "count   cases: 30" in text  # three units merged
    assert "largest: 3 (within paper bound 3)" in text
    assert "stand-in disagreement" in text
    assert text.rstrip().splitlines()[-1].startswith("verify: 1 passed, 1 failed")
    written = tmp_path / "counterexample-failing.json"
    assert json.loads(written.read_text())["name"] == "stand-in"
    assert main(["replay", str(written)]) == 0  # the stand-in's "counterexample" holds


@pytest.mark.usefixtures("stand_ins")
def test_json_report_and_shards(tmp_path: Path) -> None:
    reports = []
    for index in (1, 2):
        out = io.StringIO()
        verify.verify(
            "quick",
            jobs=1,
            shard=verify.Shard(index, 2),
            as_json=True,
            out_folder=tmp_path,
            out=out,
            err=io.StringIO(),
        )
        reports.append(json.loads(out.getvalue()))
    # Four tasks (three passing units, one failing) split two and two.
    units = [{check["name"]: check["units"] for check in report["checks"]} for report in reports]
    assert units == [{"passing": 2}, {"passing": 1, "failing": 1}]
    assert [report["passed"] for report in reports] == [True, False]
    assert reports[1]["checks"][1]["counterexamples"][0]["summary"] == "stand-in disagreement"


def test_a_worst_case_above_its_paper_bound_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    strict = Check(
        "strict",
        "a stand-in whose bound is too low",
        lambda _level: {},
        lambda _level: [5],
        _passing,
        lambda _level: {"largest": PaperBound(4, "too low")},
    )
    monkeypatch.setattr(verify, "CHECKS", (strict,))
    out = io.StringIO()
    assert verify.verify("quick", jobs=1, out=out, err=io.StringIO()) == 1
    assert "largest: 5 (ABOVE paper bound 4)" in out.getvalue()


def test_merge_keeps_the_smallest_counterexamples() -> None:
    parts = []
    for size in (5, 1, 4, 2, 3):
        part = Partial()
        part.disagree(lambda s=size: Counterexample("c", s, f"size {s}", {}), size)  # type: ignore[misc]
        parts.append(part)
    merged = framework.merge(parts)
    assert merged.disagreements == 5
    assert [c.size for c in merged.counterexamples] == [1, 2, 3]


def test_the_model_check_catches_a_broken_kernel(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A fast mutant: expiry with ``>`` for ``>=``, seen within 6 events."""
    clean = explore(2, 1, max_depth=6)
    assert clean.disagreements == 0

    def expired_late(slices_in_grant: int, budget: int, backlog_pending: bool) -> bool:
        return budget > 0 and backlog_pending and slices_in_grant > budget

    # The protocol applies the decision's own rule (slice_grant_expired checks its
    # arguments' types, then applies grant_expired; the protocol checked them at
    # apply_event).
    assert vars(protocol)["grant_expired"] is decisions.grant_expired
    monkeypatch.setattr(protocol, "grant_expired", expired_late)
    broken = explore(2, 1, max_depth=6)
    assert broken.disagreements > 0
    smallest = broken.counterexamples[0]
    file = tmp_path / "counterexample.json"
    file.write_text(json.dumps(smallest.scenario))
    assert main(["replay", str(file)]) == 1  # fails on the broken kernel
    monkeypatch.undo()
    assert main(["replay", str(file)]) == 0  # and holds on the real one


# An unwritable --out (issue 18): refused before the run when given, and after the
# run a counterexample that cannot be written is printed, never lost.


@pytest.mark.parametrize("where", ["a file", "under a file", "/dev/full"])
def test_an_explicit_out_that_cannot_hold_files_is_refused_before_the_run(
    tmp_path: Path,
    where: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    file = tmp_path / "file"
    file.write_text("")
    out, said = {
        "a file": (file, f"{file} is not a folder"),
        "under a file": (file / "deeper" / "still", f"{file}/deeper/still is under {file}"),
        "/dev/full": (Path("/dev/full"), "/dev/full is not a folder"),
    }[where]

    def explored(*_arguments: object) -> object:
        raise AssertionError("the run started")

    monkeypatch.setattr(verify, "run_checks", explored)
    assert main(["verify", "--quick", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"policy-kernel: --out: {said}")
    assert captured.err.count("\n") == 1
    assert verify.out_folder_problem(tmp_path / "new" / "folder") is None  # made when needed


def test_a_fifo_in_the_place_of_a_counterexample_file_is_refused_without_blocking(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "counterexample-failing.json"
    os.mkfifo(fifo)  # no reader ever comes: a blocking open waits for ever
    program = (
        "import sys\n"
        "from pathlib import Path\n"
        "from oracle.checks.verify import write_counterexample\n"
        "print(write_counterexample(Path(sys.argv[1]), 'failing', {'kind': 'rotation'}))\n"
    )
    assert (
        printed_by(program, str(tmp_path)) == f"cannot write {fifo}: not a regular file (a FIFO)\n"
    )


@pytest.mark.usefixtures("stand_ins")
def test_a_counterexample_that_cannot_be_written_is_printed(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    out = io.StringIO()
    assert verify.verify("quick", jobs=1, out_folder=blocked, out=out, err=io.StringIO()) == 1
    text = out.getvalue()
    target = blocked / "counterexample-failing.json"
    assert f"counterexample not written (cannot write {target}:" in text
    printed = text[text.index("its scenario file:\n") + len("its scenario file:\n") :]
    assert json.loads(printed[: printed.index("\n}\n") + 2])["name"] == "stand-in"
    out = io.StringIO()
    status = verify.verify(
        "quick", jobs=1, as_json=True, out_folder=blocked, out=out, err=io.StringIO()
    )
    assert status == 1
    failing = json.loads(out.getvalue())["checks"][1]
    assert failing["counterexample_file"] is None
    assert failing["counterexample_file_error"].startswith(f"cannot write {blocked}/")
    assert failing["counterexamples"][0]["scenario"]["name"] == "stand-in"
