"""``replay --plot DIR`` and ``simulate --plot DIR`` (issue 10, part 4).

The PNG writers are replaced by recorders here, so the wiring is checked without
matplotlib (the suite's environment need not have the [plot] extra): which picture
each scenario gets, with which data, under which name; and every way a picture can
fail is one line and exit status 2. One test draws real PNGs when matplotlib is there.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from oracle import plots
from oracle.cli import main
from oracle.harness.admission_replay import replay_admission
from oracle.harness.admission_scenario import AdmissionScenario
from oracle.harness.rotation_replay import replay_rotation
from oracle.harness.rotation_scenario import RotationScenario
from oracle.harness.scenarios import golden_paths, load_scenario
from oracle.simulate.run import compare
from tests.replay_helpers import TIMEOUT, one_line

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), out=out, err=err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> dict[Path, object]:
    """Every picture the CLI asks for, by path, with the data it was given."""
    pictures: dict[Path, object] = {}

    def recorder(data: object, path: str | Path) -> Path:
        assert Path(path) not in pictures, f"{path} drawn twice"
        pictures[Path(path)] = data
        return Path(path)

    monkeypatch.setattr(plots, "require_matplotlib", lambda: None)
    for name in (
        "write_grant_timeline_png",
        "write_admission_timeline_png",
        "write_wait_distribution_png",
    ):
        monkeypatch.setattr(plots, name, recorder)
    return pictures


def test_replay_plot_draws_each_golden_scenario_with_its_data(
    tmp_path: Path, drawn: dict[Path, object]
) -> None:
    status, out, err = _run("replay", "--plot", str(tmp_path / "pictures"))
    assert (status, err) == (0, "")
    expected: dict[Path, object] = {}
    no_picture = 0
    for path in golden_paths():
        scenario = load_scenario(path).unwrap()
        if isinstance(scenario, RotationScenario):
            data: object = plots.grant_timeline_data(replay_rotation(scenario))
            expected[tmp_path / "pictures" / f"{path.stem}-grants.png"] = data
        elif isinstance(scenario, AdmissionScenario):
            data = plots.admission_timeline_data(replay_admission(scenario))
            expected[tmp_path / "pictures" / f"{path.stem}-admissions.png"] = data
        else:
            no_picture += 1
    assert drawn == expected
    assert no_picture == 2  # events-budget-2, events-mlxcel-empty-promotion
    assert out.splitlines()[-1].endswith(
        f"; {len(expected)} pictures written (2 event-list scenarios have none)"
    )
    assert (tmp_path / "pictures").is_dir()


def test_replay_plot_keeps_json_output_to_scenario_objects(
    tmp_path: Path, drawn: dict[Path, object]
) -> None:
    budget_1 = next(p for p in golden_paths() if p.stem == "budget-1")
    status, out, _ = _run("replay", "--json", "--plot", str(tmp_path), str(budget_1))
    assert status == 0
    assert len(out.splitlines()) == 1  # the scenario's JSON object, no summary line
    assert list(drawn) == [tmp_path / "budget-1-grants.png"]


def test_same_file_name_in_two_folders_gets_two_pictures(
    tmp_path: Path, drawn: dict[Path, object]
) -> None:
    budget_1 = next(p for p in golden_paths() if p.stem == "budget-1")
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        shutil.copy(budget_1, tmp_path / folder / "budget-1.json")
    status, _, _ = _run("replay", "--plot", str(tmp_path / "out"), str(tmp_path))
    assert status == 0
    assert sorted(p.name for p in drawn) == ["budget-1-grants-2.png", "budget-1-grants.png"]


@pytest.mark.usefixtures("drawn")
def test_a_picture_that_cannot_be_written_is_one_line_and_status_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(_data: object, _path: str | Path) -> Path:
        raise OSError(28, "No space left on device")  # as /dev/full gives it: no file name

    def broken(_data: object, _path: str | Path) -> Path:
        raise ValueError("a drawing bug")

    monkeypatch.setattr(plots, "write_grant_timeline_png", disk_full)
    monkeypatch.setattr(plots, "write_admission_timeline_png", broken)
    rotation = next(p for p in golden_paths() if p.stem == "budget-1")
    admission = next(p for p in golden_paths() if p.stem == "misfit-blocks")
    status, out, err = _run("replay", "--plot", str(tmp_path), str(rotation), str(admission))
    assert status == 2
    assert err.splitlines() == [
        f"policy-kernel: {rotation}: cannot write the picture"
        f" {tmp_path / 'budget-1-grants.png'}: No space left on device",
        f"policy-kernel: {admission}: cannot draw the picture: internal error:"
        " ValueError: a drawing bug",
    ]
    # The replays themselves still ran and passed; the summary says what is missing.
    assert out.splitlines()[-1] == (
        "replay: 2 passed, 0 failed, 0 bad, 0 without expect; 0 pictures written, 2 not written"
    )


_FIFO_PICTURE = """
import importlib.util, sys
from oracle import plots
from oracle.cli import main
if importlib.util.find_spec("matplotlib") is None:  # drawn as bytes, written as a picture is
    plots.require_matplotlib = lambda: None
    plots.write_grant_timeline_png = lambda data, path: plots.write_png(b"PNG", path)
sys.exit(main(["replay", "--plot", sys.argv[1], sys.argv[2]]))
"""


def test_a_fifo_in_the_place_of_a_picture_is_refused_without_blocking(tmp_path: Path) -> None:
    rotation = next(p for p in golden_paths() if p.stem == "budget-1")
    fifo = tmp_path / "budget-1-grants.png"
    os.mkfifo(fifo)  # no reader ever comes: a blocking open waits for ever
    done = subprocess.run(
        [sys.executable, "-c", _FIFO_PICTURE, str(tmp_path), str(rotation)],
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 2
    assert one_line(done.stderr.decode()) == (
        f"policy-kernel: {rotation}: cannot write the picture {fifo}: not a regular file (a FIFO)"
    )


def test_missing_extra_refuses_before_replaying_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> None:
        raise RuntimeError(plots.MISSING)

    monkeypatch.setattr(plots, "require_matplotlib", missing)
    for command in (["replay"], ["simulate", "--quick"]):
        status, out, err = _run(*command, "--plot", "never-made")
        assert (status, out) == (2, "")
        assert err == f"policy-kernel: --plot: {plots.MISSING}\n"
    assert not Path("never-made").exists()


def test_unusable_folder_is_one_line(tmp_path: Path, drawn: dict[Path, object]) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    status, out, err = _run("replay", "--plot", str(a_file / "sub"))
    assert (status, out) == (2, "")
    assert err.startswith("policy-kernel: --plot: cannot make the folder: ")
    assert len(err.splitlines()) == 1
    status, out, err = _run("replay", "--plot", str(a_file))
    assert (status, out, err) == (2, "", f"policy-kernel: --plot: not a folder: {a_file}\n")
    status, out, err = _run("replay", "--plot", "")
    assert (status, out, err) == (
        2,
        "",
        "policy-kernel: --plot: an empty argument names no folder\n",
    )
    assert drawn == {}


def test_a_long_file_name_is_cut_to_fit_with_its_suffix(
    tmp_path: Path, drawn: dict[Path, object]
) -> None:
    budget_1 = next(p for p in golden_paths() if p.stem == "budget-1")
    stem = "é" * 120  # 240 bytes: with "-grants.png" beyond a file name's 255
    shutil.copy(budget_1, tmp_path / f"{stem}.json")
    status, _, _ = _run("replay", "--plot", str(tmp_path / "out"), str(tmp_path / f"{stem}.json"))
    assert status == 0
    [target] = drawn
    assert target.name == "é" * 100 + "-grants.png"
    assert len(target.name.encode()) <= 255


def test_simulate_plot_draws_the_comparison(tmp_path: Path, drawn: dict[Path, object]) -> None:
    status, out, err = _run("simulate", "--quick", "--seed", "3", "--plot", str(tmp_path))
    assert status == 0
    target = tmp_path / "waits-seed3-quick.png"
    assert list(drawn) == [target]
    expected = plots.wait_distribution_data(compare(3, quick=True))
    assert drawn[target] == expected
    assert err.splitlines()[-1] == f"simulate: picture written to {target}"
    assert out.startswith("policy comparison: seed 3")


def test_real_pngs_when_matplotlib_is_installed(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    chosen = [p for p in golden_paths() if p.stem in {"budget-1", "step-resumed-first"}]
    # An id the font has no glyph for is drawn as a box, with no warning on stderr.
    document = json.loads(next(p for p in chosen if p.stem == "budget-1").read_text())
    document["requests"][0]["id"] = "漢字🚀"
    del document["expect"]
    (tmp_path / "glyphs.json").write_text(json.dumps(document))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        status, _, err = _run(
            "replay", "--plot", str(tmp_path), *map(str, chosen), str(tmp_path / "glyphs.json")
        )
    assert (status, err) == (0, "")
    assert [str(w.message) for w in caught] == []
    for name in ("budget-1-grants.png", "step-resumed-first-admissions.png", "glyphs-grants.png"):
        assert (tmp_path / name).read_bytes().startswith(PNG_MAGIC)
