"""``policy-kernel bench --vllm``: without vLLM, one refusal line and exit status 2,
and the module imports without it; with vLLM importable (a separate venv, see
docs/performance.md), a tiny run gives well-formed rows. Nothing is timed here."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from oracle.bench import vllm_step
from oracle.cli import main


def test_the_module_imports_without_vllm() -> None:
    probe = (
        "import sys\n"
        "import oracle.bench.vllm_step, oracle.cli\n"
        "import policy.adapters.vllm, policy.adapters.vllm_scheduler  # KernelScheduler's\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'vllm'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("extra", [[], ["--quick"], ["--json"], ["--quick", "--json"]])
def test_without_vllm_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, extra: list[str]
) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # what a venv without vllm gives
    out, err = io.StringIO(), io.StringIO()
    assert main(["bench", "--vllm", *extra], out, err) == 2
    assert out.getvalue() == ""
    lines = err.getvalue().splitlines()
    assert len(lines) == 1
    line = lines[0]
    assert line.startswith("policy-kernel bench --vllm: vllm is not importable")
    for needed in ("separate venv", "pip install vllm==0.33.0", "VLLM_TARGET_DEVICE=cpu"):
        assert needed in line


def test_the_module_entry_point_refuses_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)
    assert vllm_step.vllm_missing() is not None
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    assert vllm_step.main(["--quick"]) == 2
    assert err.getvalue().count("\n") == 1


def test_the_model_folder_holds_only_a_config() -> None:
    with tempfile.TemporaryDirectory() as where:
        folder = vllm_step.model_folder(Path(where))
        assert [path.name for path in folder.iterdir()] == ["config.json"]
        config = json.loads((folder / "config.json").read_text())
        assert config["max_position_embeddings"] == vllm_step.MAX_MODEL_LEN


def test_a_tiny_run_with_vllm_gives_well_formed_rows() -> None:
    pytest.importorskip("vllm")
    v = vllm_step.Vllm()
    rows = vllm_step.measure(v, (64,), 2)
    assert [(row.policy, row.n, row.steps) for row in rows] == [
        ("fcfs", 64, 2),
        ("priority", 64, 2),
    ]
    for row in rows:
        assert row.admitted == 64  # fewer waiting than a batch: all of them, each step
        assert row.same_order
        assert min(row.native_step_seconds, row.dropin_step_seconds) > 0
        assert min(row.native_add_seconds, row.dropin_add_seconds) > 0
        assert row.step_ratio == row.dropin_step_seconds / row.native_step_seconds
        assert row.add_ratio == row.dropin_add_seconds / row.native_add_seconds
        assert row.step_target == vllm_step.STEP_TARGETS[row.policy]
        assert row.add_target == vllm_step.ADD_TARGET
    text = vllm_step.table(rows)
    assert len(text.splitlines()) == 1 + len(rows)
    document = json.loads(json.dumps(vllm_step.document(rows, v.version, quick=True)))
    assert document["replaced_queues"] == ["waiting", "kv_holding_waiting"]
    assert [row["policy"] for row in document["rows"]] == ["fcfs", "priority"]
    assert {"step_met", "add_met", "same_order"} <= set(document["rows"][0])
