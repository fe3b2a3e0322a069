"""The kit's options (issue 19): ``--checks`` and the bounds options, "not applicable"
answers, counterexample files and progress; each shown against a broken or
restricted implementation."""

from __future__ import annotations

import io
import json
import shlex
import sys
from pathlib import Path

import pytest
from returns.maybe import Maybe

from oracle.cli import main
from oracle.conformance import (
    BoundsChoice,
    GrantOrderBounds,
    NotApplicableError,
    NumberBounds,
    ProtocolBounds,
    SelectionBounds,
    assert_disagrees,
    check_grant_expiry,
    check_grant_order,
    from_callables,
    kernel_implementation,
    run_conformance,
    verify_against_command,
)
from oracle.conformance.own_policies import own_policy
from oracle.conformance.properties import property_check_grant_order
from policy import BacklogEntry, GrantBacklog, slice_grant_expired, take_next_grantee
from policy.waiting import dump_policy, vllm_priority
from tests.oracle.conformance import broken

VLLM = own_policy("vllm-priority", dict(dump_policy(vllm_priority())))

ROOT = Path(__file__).resolve().parents[3]
PYTHON = shlex.quote(sys.executable)


def foreign(fault: str) -> str:
    return f"{PYTHON} -m tests.oracle.conformance.foreign_server {fault}"


@pytest.fixture(autouse=True)
def _at_the_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # python -m tests.oracle.conformance.foreign_server


def _cap_2(backlog: GrantBacklog, skip_cap: int) -> Maybe[tuple[BacklogEntry, GrantBacklog]]:
    """A scheduler whose skip cap is fixed at 2: other caps do not apply to it."""
    if skip_cap != 2:
        raise NotApplicableError(f"skip cap {skip_cap}: fixed at 2")
    return take_next_grantee(backlog, skip_cap)


def test_not_applicable_cases_are_counted_apart_and_reported() -> None:
    report = check_grant_order(_cap_2, bounds=GrantOrderBounds(2, 3))
    assert report.passed
    assert report.not_applicable > 0
    assert (
        report.cases + report.not_applicable
        == check_grant_order(take_next_grantee, bounds=GrantOrderBounds(2, 3)).cases
    )
    reasons = [reason for reason, _ in report.not_applicable_reasons]
    assert reasons == ["skip cap 1: fixed at 2", "skip cap 3: fixed at 2"]
    assert "not applicable (not compared):" in report.text()
    assert report.to_json()["not_applicable"] == report.not_applicable


def test_a_fixed_skip_cap_says_so_and_is_still_checked_at_it() -> None:
    mine = from_callables(take_next_grantee=_cap_2)
    (report,) = run_conformance(
        mine, level="quick", checks=("grant order",), choice=BoundsChoice(skip_caps=(2,))
    )
    assert (report.passed, report.not_applicable, report.bounds["skip caps"]) == (True, 0, "2")

    wrong = from_callables(take_next_grantee=broken.no_skip_increment)
    (caught,) = run_conformance(
        wrong, level="quick", checks=("grant order",), choice=BoundsChoice(skip_caps=(2,))
    )
    assert_disagrees(caught)


def test_the_bounds_choice_reaches_each_check() -> None:
    choice = BoundsChoice(skip_caps=(3,), largest_budget=2, max_depth=2, queue_size=1)
    protocol = choice.applied(ProtocolBounds.at("quick", "mlxcel"))
    assert (protocol.skip_caps, protocol.largest_budget, protocol.max_depth) == ((3,), 2, 2)
    assert protocol.profile == "mlxcel"  # kept
    assert choice.applied(GrantOrderBounds.at("quick")).skip_caps == (3,)
    own = SelectionBounds.at("quick").with_policies((VLLM,))
    chosen = choice.applied(own)
    assert (chosen.one_key, chosen.two_key, chosen.policies) == (1, 1, (VLLM,))
    assert choice.applied(NumberBounds.at("quick")) == NumberBounds.at("quick")  # not its
    with pytest.raises(ValueError, match="skip caps are at least 1"):
        BoundsChoice(skip_caps=(0,))
    with pytest.raises(ValueError, match="name at least one skip cap"):
        BoundsChoice(skip_caps=())
    with pytest.raises(ValueError, match="max depth must be >= 0"):
        BoundsChoice(max_depth=-1)


def test_the_property_checks_skip_not_applicable_and_still_catch() -> None:
    def fixed_and_wrong(
        backlog: GrantBacklog, skip_cap: int
    ) -> Maybe[tuple[BacklogEntry, GrantBacklog]]:
        if skip_cap != 2:
            raise NotApplicableError("fixed at 2")
        return broken.no_skip_increment(backlog, skip_cap)

    assert_disagrees(property_check_grant_order(fixed_and_wrong, examples=100))


def test_a_process_to_which_nothing_applies_exits_2() -> None:
    err = io.StringIO()
    status = verify_against_command(
        foreign("nothing-applies"),
        level="quick",
        checks=("grant expiry",),
        out=io.StringIO(),
        err=err,
    )
    assert status == 2
    assert err.getvalue() == (
        "policy-kernel verify: no check compared anything (every one answered none of its"
        " decisions, or not applicable throughout)\n"
    )


def test_a_process_answering_not_applicable() -> None:
    out, err = io.StringIO(), io.StringIO()
    status = verify_against_command(
        foreign("cap-2-only"), level="quick", checks=("grant order",), out=out, err=err
    )
    assert (status, err.getvalue()) == (0, "")
    assert "not applicable (not compared):" in out.getvalue()
    assert "skip cap 1: this scheduler's cap is 2" in out.getvalue()


def test_counterexample_files_are_written_and_replay(tmp_path: Path) -> None:
    out = io.StringIO()
    status = main(
        [
            "verify",
            "--quick",
            "--against-command",
            foreign("declined-ignored"),
            "--checks",
            "tick protocol",
            "--skip-caps",
            "2",
            "--depth",
            "5",
            "--out",
            str(tmp_path),
        ],
        out=out,
        err=io.StringIO(),
    )
    assert status == 1, out.getvalue()
    written = tmp_path / "counterexample-conformance-tick-protocol.json"
    assert f"  counterexample: {written}" in out.getvalue()
    scenario = json.loads(written.read_text())
    assert scenario["kind"] == "rotation"
    # the spec's observations: the kernel (which agrees with the spec) replays it clean
    assert main(["replay", str(written)], out=io.StringIO(), err=io.StringIO()) == 0


def test_a_counterexample_without_scenario_is_the_disagreement(tmp_path: Path) -> None:
    out = io.StringIO()
    status = main(
        [
            "verify",
            "--quick",
            "--against-command",
            foreign("expiry-strict"),
            "--checks",
            "grant expiry",
            "--out",
            str(tmp_path),
        ],
        out=out,
        err=io.StringIO(),
    )
    assert status == 1
    document = json.loads((tmp_path / "counterexample-conformance-grant-expiry.json").read_text())
    assert document["request"]["inputs"] == {
        "slices_in_grant": 1,
        "budget": 1,
        "backlog_pending": True,
    }


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_goes_to_a_terminal() -> None:
    err = _Terminal()
    status = verify_against_command(
        foreign("agree"),
        level="quick",
        checks=("grant expiry", "backlog cap"),
        out=io.StringIO(),
        err=err,
    )
    assert status == 0
    assert "\rverify --against-command: grant expiry ..." in err.getvalue()
    assert "\rverify --against-command: backlog cap ..." in err.getvalue()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--checks", "grant expiry,nope"], "--checks: no check is named nope (the checks:"),
        (["--checks", ","], "--checks: no check is named nothing"),
        (["--skip-caps", "0"], "skip caps are at least 1, not 0"),
        (["--queue-size", "99"], "selection bounds go up to"),
        (
            ["--largest-budget", "999999"],
            "largest budget 999,999 makes 8,000,005 events in the"
            " tick protocol's first state alone, and its states multiply with it; the kit takes"
            " budgets up to 16 (--largest-budget)",
        ),
    ],
)
def test_bad_kit_options_are_one_line_exit_2(arguments: list[str], message: str) -> None:
    err = io.StringIO()
    status = main(["verify", "--against-command", "x", *arguments], out=io.StringIO(), err=err)
    assert status == 2
    assert err.getvalue().count("\n") == 1
    assert message in err.getvalue()


def test_a_misspelt_level_is_a_value_error_naming_the_levels() -> None:
    # Issue 30: a bare KeyError('quik') from a check's domain table.
    said = r"^unknown level 'quik': the levels are quick, default, deep$"
    with pytest.raises(ValueError, match=said):
        check_grant_expiry(slice_grant_expired, bounds="quik")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=said):
        run_conformance(kernel_implementation(), level="quik")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=said):  # before the command is started
        verify_against_command("false", level="quik", out=io.StringIO(), err=io.StringIO())  # type: ignore[arg-type]


def test_kit_options_need_a_command() -> None:
    err = io.StringIO()
    assert main(["verify", "--skip-caps", "2"], out=io.StringIO(), err=err) == 2
    assert err.getvalue() == "policy-kernel: --skip-caps applies to --against-command\n"


def test_the_options_reach_the_kit(kit_options: dict[str, object]) -> None:
    arguments = ["verify", "--against-command", "x", "--checks", "grant order, tick protocol"]
    arguments += ["--skip-caps", "2,2,1", "--largest-budget", "3", "--depth", "4"]
    assert main(arguments, out=io.StringIO(), err=io.StringIO()) == 0
    assert kit_options["checks"] == ["grant order", "tick protocol"]
    assert kit_options["choice"] == BoundsChoice(skip_caps=(1, 2), largest_budget=3, max_depth=4)


def test_a_check_answered_not_applicable_throughout_is_skipped_not_passed() -> None:
    def never(backlog_len: int, budget: int) -> bool:
        del backlog_len, budget
        raise NotApplicableError("no backlog here")

    (report,) = run_conformance(
        from_callables(backlog_admits=never), level="quick", checks=("backlog cap",)
    )
    assert (report.verdict, report.ran, report.cases) == ("SKIPPED", False, 0)
    assert "every one of its 289 cases answered not applicable: no backlog here" in report.text()
