"""``policy-kernel``: replay scenario files through the kernel.

Exit status: 0 when every expectation holds, 1 when one fails, 2 when a file
(or the command line) is bad.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from returns.result import Failure

from oracle.bench.run import bench
from oracle.checks.verify import level_of, parse_shard, verify
from oracle.harness.admission_replay import replay_admission
from oracle.harness.admission_run import AdmissionRun
from oracle.harness.admission_scenario import AttemptEngine, PoolEngine
from oracle.harness.attempt_engine import AttemptRun, attempt_queue
from oracle.harness.rotation_events import (
    EventsRun,
    RotationEventsScenario,
    event_text,
    replay_events,
)
from oracle.harness.rotation_replay import RotationRun, replay_rotation
from oracle.harness.rotation_scenario import RotationScenario
from oracle.harness.scenarios import Scenario, expand_paths, golden_paths, load_scenario
from oracle.harness.verdicts import (
    Verdict,
    admission_result,
    events_result,
    format_grant_log,
    format_keys,
    format_number,
    rotation_result,
)
from policy import RotationState

__all__ = ["main", "run"]

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="policy-kernel",
        description="Replay scheduler scenarios through the serving-policy kernel.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    replay = commands.add_parser(
        "replay",
        help="replay scenario files (default: every shipped golden scenario)",
        description=(
            "Replay scenario files or folders of them and check each against its "
            "'expect'. With no argument, replays every golden scenario shipped in the "
            "package. Exit status: 0 all expectations hold, 1 one fails, 2 a bad file."
        ),
    )
    replay.add_argument("paths", nargs="*", metavar="FILE", help="scenario files or folders")
    replay.add_argument(
        "--json", action="store_true", help="print one JSON object per scenario instead"
    )
    verify = commands.add_parser(
        "verify",
        help="run the oracle's exhaustive checks of the kernel against the executable spec",
        description=(
            "Enumerate every input or reachable state within the stated bounds, run the "
            "kernel and the executable specification side by side, check the invariants and "
            "compare worst cases with their paper bounds (docs/oracle.md). Prints the bounds, "
            "what was enumerated and a verdict per check. On a disagreement the smallest "
            "counterexample is printed and written as a scenario file that 'policy-kernel "
            "replay' replays. Exit status: 0 every check passes, 1 one fails, 2 bad arguments."
        ),
    )
    size = verify.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small bounds (about 15-20 s)")
    size.add_argument("--deep", action="store_true", help="large bounds (many minutes)")
    verify.add_argument(
        "--jobs",
        type=_positive,
        default=None,
        metavar="N",
        help="worker processes (default: one per CPU)",
    )
    verify.add_argument(
        "--shard",
        default="1/1",
        metavar="K/N",
        help="run only the K-th of N equal shares of the work (for batch runners)",
    )
    verify.add_argument("--json", action="store_true", help="print one JSON report instead")
    verify.add_argument(
        "--out",
        default=".",
        metavar="DIR",
        help="where counterexample scenario files are written (default: the current folder)",
    )
    bench = commands.add_parser(
        "bench",
        help="measure the kernel against hand-written mutable queues (ratios and targets)",
        description=(
            "Measure every waiting-queue operation, the compiled scan, the admission pass, "
            "building, memory per entry and the rotation tick against baselines measured in "
            "the same run on the same seeded data; print each ratio with its target and "
            "whether it is met (docs/performance.md). Exit status 0."
        ),
    )
    bench.add_argument(
        "--quick", action="store_true", help="fewer sizes and repeats (under a minute)"
    )
    bench.add_argument("--json", action="store_true", help="print one JSON document instead")
    return parser


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, not {text!r}")
    return int(text)


def _replay(scenario: Scenario, out: TextIO, as_json: bool) -> Verdict:
    if isinstance(scenario, RotationScenario):
        run = replay_rotation(scenario)
        result = rotation_result(run)
        if not as_json:
            _render_rotation(run, result, out)
    elif isinstance(scenario, RotationEventsScenario):
        events = replay_events(scenario)
        result = events_result(events)
        if not as_json:
            _render_events(events, result, out)
    else:
        admission = replay_admission(scenario)
        result = admission_result(admission)
        if not as_json:
            _render_admission(admission, result, out)
    if as_json:
        out.write(json.dumps(result.json) + "\n")
    return result


def _render_rotation(run: RotationRun[RotationState], result: Verdict, out: TextIO) -> None:
    scenario = run.scenario
    classic = scenario.classic_work
    classic_text = classic if isinstance(classic, str) else f"at ticks {sorted(classic)}"
    out.write(
        f"{scenario.name} (rotation): budget {scenario.budget}, skip cap {scenario.skip_cap}, "
        f"classic work {classic_text}\n"
    )
    out.write(f"  grant log  {format_grant_log(run.grant_log)}\n")
    out.write(f"  {'request':<8} {'lane':<7} {'arrive':>6} {'slices':>6} {'grants':>6}  outcome\n")
    for request in scenario.requests:
        grants = sum(1 for grant in run.grants if grant.request == request.id)
        out.write(
            f"  {request.id!s:<8} {request.lane.label:<7} {request.arrive:>6} "
            f"{request.slices:>6} {grants:>6}  {run.outcomes[request.id].value}\n"
        )
    _render_verdict(result, out)


def _render_events(run: EventsRun, result: Verdict, out: TextIO) -> None:
    scenario = run.scenario
    out.write(
        f"{scenario.name} (rotation, events): skip cap {scenario.skip_cap}, "
        f"{len(scenario.events)} events\n"
    )
    texts = [event_text(event) for event in scenario.events]
    width = max(len("event"), *map(len, texts))
    digits = max(1, len(str(len(texts) - 1)))
    out.write(f"  {'#':>{digits}}  {'event':<{width}}  result\n")
    for index, (text, step) in enumerate(zip(texts, run.steps, strict=True)):
        refused = step.get("refused")
        branches = step.get("branches")
        shown = (
            f"refused: {refused}"
            if refused is not None
            else ", ".join(map(str, branches if isinstance(branches, list) else []))
        )
        out.write(f"  {index:>{digits}}  {text:<{width}}  {shown}\n")
    out.write(f"  grant log  {format_grant_log(run.grant_log)}\n")
    endings = ", ".join(f"{request} {ending.value}" for request, ending in run.outcomes.items())
    out.write(f"  outcomes   {endings or '(none ended)'}\n")
    _render_verdict(result, out)


def _render_attempt(run: AttemptRun, engine: AttemptEngine, result: Verdict, out: TextIO) -> None:
    scenario = run.scenario
    budgets = ", ".join(
        f"{stage} {format_number(left)}" for stage, left in engine.budget_left.items()
    )
    out.write(
        f"{scenario.name} (admission): one attempt at now {format_number(engine.now)}, "
        f"budget left {budgets or '(none)'}, keys at {scenario.policy.timing}\n"
    )
    queue = ", ".join(
        f"{entry.identity} (resumed)" if entry.resumed else str(entry.identity)
        for entry in attempt_queue(scenario)
    )
    out.write(f"  queue        {queue or '(empty)'}\n")
    out.write(f"  selected     {', '.join(map(str, run.selected)) or '(none)'}\n")
    out.write(f"  keys         {format_keys(run.keys)}\n")
    if not run.selected:
        verdict = "queue empty"
    elif run.admitted_at:
        verdict = f"admitted at {format_number(run.admitted_at[0])}"
    else:
        verdict = "blocked: the selected request does not fit"
    out.write(f"  result       {verdict}\n")
    _render_verdict(result, out)


def _render_admission(run: AdmissionRun, result: Verdict, out: TextIO) -> None:
    scenario = run.scenario
    engine = scenario.engine
    if isinstance(engine, AttemptEngine):
        assert isinstance(run, AttemptRun)  # replay_admission's run for this engine
        _render_attempt(run, engine, result, out)
        return
    if isinstance(engine, PoolEngine):
        setting = f"pool engine, cap {engine.cap}"
    else:
        setting = (
            f"step engine, budget {engine.budget}, chunk {engine.chunk}, "
            f"iteration {format_number(engine.iteration_cost)} s, max running "
            f"{engine.max_running}, KV {engine.blocks} x {engine.block_size}"
        )
    out.write(f"{scenario.name} (admission): {setting}, keys at {scenario.policy.timing}\n")
    out.write(f"  selected     {', '.join(map(str, run.selected))}\n")
    out.write(f"  admitted at  {', '.join(map(format_number, run.admitted_at))}\n")
    _render_verdict(result, out)


def _render_verdict(result: Verdict, out: TextIO) -> None:
    if result.mismatches is None:
        out.write("  (no expectation)\n\n")
    elif not result.mismatches:
        out.write("  PASS\n\n")
    else:
        for mismatch in result.mismatches:
            if mismatch.block:
                out.write(
                    f"  FAIL {mismatch.field}:\n    expected {mismatch.expected}\n"
                    f"    got      {mismatch.actual}\n"
                )
            else:
                out.write(
                    f"  FAIL {mismatch.field}: expected {mismatch.expected}, "
                    f"got {mismatch.actual}\n"
                )
        out.write("\n")


def _command_replay(paths: Sequence[str], as_json: bool, out: TextIO, err: TextIO) -> int:
    files = list(expand_paths(paths)) if paths else golden_paths()
    if not files:
        err.write("policy-kernel: no scenario files found\n")
        return EXIT_BAD_INPUT
    bad = failed = passed = 0
    for path in files:
        loaded = load_scenario(path)
        if isinstance(loaded, Failure):
            err.write(f"policy-kernel: {loaded.failure()}\n")
            bad += 1
            continue
        result = _replay(loaded.unwrap(), out, as_json)
        if result.passed is False:
            failed += 1
        elif result.passed:
            passed += 1
    if not as_json:
        out.write(f"replay: {passed} passed, {failed} failed\n")
    if bad:
        return EXIT_BAD_INPUT
    return EXIT_FAILED if failed else EXIT_OK


def _command_verify(arguments: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        shard = parse_shard(arguments.shard)
    except ValueError as error:
        err.write(f"policy-kernel: {error}\n")
        return EXIT_BAD_INPUT
    return verify(
        level_of(arguments.quick, arguments.deep),
        jobs=arguments.jobs,
        shard=shard,
        as_json=arguments.json,
        out_folder=Path(arguments.out),
        out=out,
        err=err,
    )


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command line; returns the exit status."""
    stdout = out if out is not None else sys.stdout
    arguments = _parser().parse_args(argv)
    if arguments.command == "replay":
        return _command_replay(arguments.paths, arguments.json, stdout, sys.stderr)
    if arguments.command == "verify":
        return _command_verify(arguments, stdout, sys.stderr)
    if arguments.command == "bench":
        return bench(arguments.quick, arguments.json, stdout, sys.stderr)
    return EXIT_BAD_INPUT  # pragma: no cover - argparse rejects unknown commands


def run() -> None:
    """The console entry point."""
    sys.exit(main())


if __name__ == "__main__":
    run()
