"""``policy-kernel``: replay scenario files through the kernel.

Exit status: 0 when every expectation holds, 1 when one fails, 2 when a file
(or the command line) is bad. A closed pipe on standard output (``policy-kernel
replay | head -1``) ends the command quietly with status 141 (128 + SIGPIPE,
what a shell reports for a filter a closed pipe ended).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO

from returns.result import Failure

from oracle import plots
from oracle.bench.run import bench
from oracle.bench.vllm_loop import bench_vllm_loop
from oracle.checks.verify import level_of, out_folder_problem, parse_shard, verify
from oracle.conformance.bounds import BoundsChoice
from oracle.conformance.checks import CHECKS
from oracle.conformance.command import DEFAULT_TIMEOUT, checked_timeout, verify_against_command
from oracle.conformance.own_policies import OwnPolicy, own_policy
from oracle.harness.admission_replay import replay_admission
from oracle.harness.admission_run import AdmissionRun
from oracle.harness.admission_scenario import AttemptEngine, PoolEngine
from oracle.harness.attempt_engine import AttemptRun, attempt_queue
from oracle.harness.limits import EVENT_TEXT_WIDTH
from oracle.harness.rotation_events import (
    EventsRun,
    RotationEventsScenario,
    event_text,
    replay_events,
)
from oracle.harness.rotation_replay import RotationRun, replay_rotation
from oracle.harness.rotation_scenario import RotationScenario
from oracle.harness.scenarios import (
    Scenario,
    ScenarioError,
    expand_paths,
    golden_paths,
    load_scenario,
    os_reason,
)
from oracle.harness.verdicts import (
    Verdict,
    admission_result,
    events_result,
    format_grant_log,
    format_keys,
    format_number,
    format_value,
    json_line,
    rotation_result,
)
from oracle.simulate.run import Comparison, simulate
from oracle.simulate.workload import seeded
from oracle.spec.protocol import PROFILES, SEED_RULES
from policy import RotationState, RulesProfile
from policy.json_text import read_json
from policy.text import cut, printable

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_INTERRUPTED", "main", "run"]

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
#: A reader closed standard output early: what a shell shows for a filter SIGPIPE ended.
EXIT_BROKEN_PIPE: Final = 128 + signal.SIGPIPE
#: Ctrl-C: the shell's status for a command SIGINT ended.
EXIT_INTERRUPTED: Final = 128 + signal.SIGINT


class _Parser(argparse.ArgumentParser):
    """argparse, except that a failed write of help or usage is not ignored:
    ``--help >/dev/full`` must be one line and status 2, like any other output."""

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if message:
            (file or sys.stderr).write(message)


#: Longest description of an unexpected error kept in its one-line report.
_BUG_TEXT_LIMIT: Final = 200


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
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
    replay.add_argument("--plot", default=None, metavar="DIR", help=_PLOT_HELP)
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
        default=None,
        metavar="DIR",
        help="where counterexample scenario files are written (default: the current folder)",
    )
    verify.add_argument(
        "--against-command",
        default=None,
        metavar="CMD",
        help="check the implementation that CMD starts instead of the kernel: JSON lines on"
        " its stdin and stdout (docs/conformance.md); exit 2 if it breaks the protocol",
    )
    verify.add_argument(
        "--profile",
        choices=PROFILES,
        default=SEED_RULES,
        help="with --against-command: the rules the tick protocol is checked by: the seed's"
        " or mlxcel's tick accounting (docs/rotation.md, 'Rules profiles'; default seed)",
    )
    verify.add_argument(
        "--checks",
        default=None,
        metavar="NAME,...",
        help="with --against-command: run only these checks (names as the report prints"
        " them, comma-separated: " + ", ".join(check.name for check in CHECKS) + ")",
    )
    verify.add_argument(
        "--skip-caps",
        type=_whole_list,
        default=None,
        metavar="N,...",
        help="with --against-command: the skip caps of the grant order and the tick protocol"
        " (an implementation with a fixed skip cap names it)",
    )
    verify.add_argument(
        "--largest-budget",
        type=_whole,
        default=None,
        metavar="N",
        help="with --against-command: the tick protocol's budgets 0..N",
    )
    verify.add_argument(
        "--depth",
        type=_whole,
        default=None,
        metavar="N",
        help="with --against-command: the tick protocol's states within N events",
    )
    verify.add_argument(
        "--queue-size",
        type=_whole,
        default=None,
        metavar="N",
        help="with --against-command: the longest queue of selection and admission",
    )
    verify.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="FILE",
        help="with --against-command (repeatable): check selection and admission under this"
        " policy document (docs/waiting.md) instead of the kit's own policies",
    )
    verify.add_argument(
        "--timeout",
        type=_timeout,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="with --against-command: seconds to wait for each answer"
        f" (default {DEFAULT_TIMEOUT:g})",
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
    bench.add_argument(
        "--vllm",
        action="store_true",
        help="instead: vLLM's real scheduler in the serving loop (arrivals, admissions and"
        " finishes every step, collector on), its own waiting queue against the drop-in,"
        " then the drain table (needs vllm installed; exit 2 without it)",
    )
    bench.add_argument(
        "--loop-only",
        action="store_true",
        help="with --vllm: the serving loop only, not the drain table",
    )
    simulate = commands.add_parser(
        "simulate",
        help="compare waiting policies and rotation on a seeded synthetic workload",
        description=(
            "Run a seeded workload through the step engine under FIFO, static priority and the "
            "Ascend lanes (with and without aging, selection vs enqueue keys), and a high-lane "
            "flood through the rotation protocol (budget 0, 1, 8; skip cap on/off); print per "
            "policy and class wait/TTFT p50/p95/p99, admissions, preemptions and the longest "
            "starvation. Exit status 0."
        ),
    )
    simulate.add_argument(
        "--seed", type=_seed, default=1, help="workload seed, a whole number >= 0 (default 1)"
    )
    simulate.add_argument("--json", action="store_true", help="print one JSON document instead")
    simulate.add_argument("--quick", action="store_true", help="a small workload (about a second)")
    simulate.add_argument("--plot", default=None, metavar="DIR", help=_PLOT_HELP)
    return parser


_PLOT_HELP = (
    "also draw each run as a PNG in DIR (created if missing; needs the [plot] extra:"
    " pip install -e '.[plot]')"
)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, not {text!r}")
    return int(text)


def _whole(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 6:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {cut(text, 40)!r}")
    return int(text)


def _whole_list(text: str) -> tuple[int, ...]:
    parts = [part.strip() for part in text.split(",")]
    if (
        not parts
        or len(parts) > 16
        or not all(p.isascii() and p.isdigit() and len(p) <= 6 for p in parts)
    ):
        raise argparse.ArgumentTypeError(
            f"must be whole numbers separated by commas, not {cut(text, 40)!r}"
        )
    return tuple(sorted({int(part) for part in parts}))


def _seed(text: str) -> int:
    try:
        seed = int(text)
        seeded(seed)  # the workload's own rule
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"the seed must be a whole number >= 0, not {text!r}"
        ) from None
    return seed


def _timeout(text: str) -> float:
    try:
        return checked_timeout(float(text))
    except ValueError as error:
        refused = str(error) if "timeout" in str(error) else f"not a number: {text!r}"
        raise argparse.ArgumentTypeError(refused) from None


#: Draws one replayed scenario into the given path; returns the path written.
_Picture = Callable[[Path], Path]


def _replay(scenario: Scenario, out: TextIO, as_json: bool) -> tuple[Verdict, str, _Picture | None]:
    """The verdict, and the scenario's picture (its name's suffix and how to draw it);
    an event-list scenario has no picture: its events are not a tick-by-tick run."""
    picture: _Picture | None = None
    suffix = ""
    if isinstance(scenario, RotationScenario):
        run = replay_rotation(scenario)
        result = rotation_result(run)
        if not as_json:
            _render_rotation(run, result, out)
        picture, suffix = partial(_draw_grants, run), "grants"
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
        picture, suffix = partial(_draw_admissions, admission), "admissions"
    if as_json:
        out.write(json_line(result.json) + "\n")
    return result, suffix, picture


# The pictures' data is computed only when a picture is asked for.


def _draw_grants(run: RotationRun[RotationState], path: Path) -> Path:
    return plots.write_grant_timeline_png(plots.grant_timeline_data(run), path)


def _draw_admissions(run: AdmissionRun, path: Path) -> Path:
    return plots.write_admission_timeline_png(plots.admission_timeline_data(run), path)


# The renderers show every value a scenario gave (names, ids, stage names, event
# text) through format_value or printable: one printable line per table row.


def _render_rotation(run: RotationRun[RotationState], result: Verdict, out: TextIO) -> None:
    scenario = run.scenario
    classic = scenario.classic_work
    classic_text = (
        classic
        if isinstance(classic, str)
        else f"at ticks [{', '.join(map(format_value, sorted(classic)))}]"
    )
    out.write(
        f"{format_value(scenario.name)} (rotation): budget {format_value(scenario.budget)}, "
        f"skip cap {format_value(scenario.skip_cap)}, classic work {classic_text}"
        f"{_rules_text(scenario.profile)}\n"
    )
    out.write(f"  grant log  {format_grant_log(run.grant_log)}\n")
    out.write(f"  {'request':<8} {'lane':<7} {'arrive':>6} {'slices':>6} {'grants':>6}  outcome\n")
    for request in scenario.requests:
        grants = sum(1 for grant in run.grants if grant.request == request.id)
        out.write(
            f"  {format_value(request.id):<8} {request.lane.label:<7} "
            f"{format_value(request.arrive):>6} {format_value(request.slices):>6} "
            f"{grants:>6}  {run.outcomes[request.id].value}\n"
        )
    _render_verdict(result, out)


def _rules_text(profile: RulesProfile) -> str:
    """The header's note of a rules profile other than the seed's."""
    return "" if profile is RulesProfile.SEED else f", {profile.value} rules"


def _render_events(run: EventsRun, result: Verdict, out: TextIO) -> None:
    scenario = run.scenario
    out.write(
        f"{format_value(scenario.name)} (rotation, events): "
        f"skip cap {format_value(scenario.skip_cap)}, {len(scenario.events)} events"
        f"{_rules_text(scenario.profile)}\n"
    )
    # Each row is at most EVENT_TEXT_WIDTH characters of event text (a tick may
    # decline thousands of requests): a longer text is cut, and the column never
    # grows wider, so a row costs a bounded number of bytes.
    texts = [cut(event_text(event), EVENT_TEXT_WIDTH) for event in scenario.events]
    width = max(len("event"), *map(len, texts))
    digits = max(1, len(str(len(texts) - 1)))
    out.write(f"  {'#':>{digits}}  {'event':<{width}}  result\n")
    for index, (text, step) in enumerate(zip(texts, run.steps, strict=True)):
        refused = step.get("refused")
        branches = step.get("branches")
        shown = (
            f"refused: {format_value(refused)}"
            if refused is not None
            else ", ".join(map(format_value, branches if isinstance(branches, list) else []))
        )
        out.write(f"  {index:>{digits}}  {text:<{width}}  {shown}\n")
    out.write(f"  grant log  {format_grant_log(run.grant_log)}\n")
    endings = ", ".join(
        f"{format_value(request)} {ending.value}" for request, ending in run.outcomes.items()
    )
    out.write(f"  outcomes   {endings or '(none ended)'}\n")
    _render_verdict(result, out)


def _render_attempt(run: AttemptRun, engine: AttemptEngine, result: Verdict, out: TextIO) -> None:
    scenario = run.scenario
    budgets = ", ".join(
        f"{format_value(stage)} {format_number(left)}" for stage, left in engine.budget_left.items()
    )
    out.write(
        f"{format_value(scenario.name)} (admission): one attempt at now "
        f"{format_number(engine.now)}, budget left {budgets or '(none)'}, "
        f"keys at {scenario.policy.timing}\n"
    )
    queue = ", ".join(
        f"{format_value(entry.identity)} (resumed)"
        if entry.resumed
        else format_value(entry.identity)
        for entry in attempt_queue(scenario)
    )
    out.write(f"  queue        {queue or '(empty)'}\n")
    out.write(f"  selected     {', '.join(map(format_value, run.selected)) or '(none)'}\n")
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
        setting = f"pool engine, cap {format_value(engine.cap)}"
    else:
        setting = (
            f"step engine, budget {format_value(engine.budget)}, "
            f"chunk {format_value(engine.chunk)}, "
            f"iteration {format_number(engine.iteration_cost)} s, max running "
            f"{format_value(engine.max_running)}, "
            f"KV {format_value(engine.blocks)} x {format_value(engine.block_size)}"
        )
    out.write(
        f"{format_value(scenario.name)} (admission): {setting}, keys at {scenario.policy.timing}\n"
    )
    out.write(f"  selected     {', '.join(map(format_value, run.selected))}\n")
    out.write(f"  admitted at  {', '.join(map(format_number, run.admitted_at))}\n")
    _render_verdict(result, out)


def _render_verdict(result: Verdict, out: TextIO) -> None:
    if result.mismatches is None:
        out.write("  (no expectation)\n\n")
    elif not result.mismatches:
        out.write("  PASS\n\n")
    else:
        for mismatch in result.mismatches:
            # verdicts.py builds these texts with format_value; printable keeps the
            # one-line rule for any text a Mismatch is given (it changes none of ours).
            field, expected, actual = map(
                printable, (mismatch.field, mismatch.expected, mismatch.actual)
            )
            if mismatch.block:
                out.write(f"  FAIL {field}:\n    expected {expected}\n    got      {actual}\n")
            else:
                out.write(f"  FAIL {field}: expected {expected}, got {actual}\n")
        out.write("\n")


@dataclass
class _Tally:
    """How the files of one replay ended; every file is counted once."""

    passed: int = 0
    failed: int = 0
    bad: int = 0
    unchecked: int = 0  # replayed, with no ``expect`` to check
    # With --plot: pictures written and not, and the files that have none.
    pictures_written: int = 0
    pictures_failed: int = 0
    no_picture: int = 0

    def summary(self) -> str:
        line = (
            f"replay: {self.passed} passed, {self.failed} failed, {self.bad} bad, "
            f"{self.unchecked} without expect"
        )
        if self.pictures_written or self.pictures_failed or self.no_picture:
            written = self.pictures_written
            line += f"; {written} picture{'' if written == 1 else 's'} written"
            if self.pictures_failed:
                line += f", {self.pictures_failed} not written"
            if self.no_picture:
                have = "scenario has" if self.no_picture == 1 else "scenarios have"
                line += f" ({self.no_picture} event-list {have} none)"
        return line

    def status(self) -> int:
        if self.bad or self.pictures_failed:
            return EXIT_BAD_INPUT
        return EXIT_FAILED if self.failed else EXIT_OK


@dataclass(frozen=True, slots=True)
class _Replayed:
    text: str  # what the replay prints
    passed: bool | None  # None: the file has no ``expect``
    suffix: str  # of its picture's file name
    picture: _Picture | None


def _replay_file(path: Path, as_json: bool) -> _Replayed | ScenarioError:
    """What replaying one file prints, its verdict and picture, or why it cannot be used.

    Output is collected first and written whole by the caller, so a file whose
    replay fails half-way leaves no partial table or JSON line on stdout.
    """
    try:
        loaded = load_scenario(path)
        if isinstance(loaded, Failure):
            refused: ScenarioError = loaded.failure()
            return refused
        buffer = io.StringIO()
        verdict, suffix, picture = _replay(loaded.unwrap(), buffer, as_json)
        return _Replayed(buffer.getvalue(), verdict.passed, suffix, picture)
    # One scenario's unexpected error (a bug, or a limit not yet checked at load
    # time) must not end the run: it is that file's one-line report. Exception,
    # not BaseException: Ctrl-C and SystemExit still end the command.
    except Exception as error:
        return ScenarioError(str(path), "", f"cannot replay: internal error: {_bug_text(error)}")


def _draw_waits(folder: Path, err: TextIO, comparison: Comparison) -> bool:
    mode = "-quick" if comparison.quick else ""
    target = folder / f"waits-seed{comparison.seed}{mode}.png"
    drawn = _draw(
        partial(plots.write_wait_distribution_png, plots.wait_distribution_data(comparison)),
        target,
        "simulate",
        err,
    )
    if drawn:
        err.write(f"simulate: picture written to {printable(str(target))}\n")
    return drawn


def _bug_text(error: Exception) -> str:
    try:
        detail = str(error)
    except Exception:  # str() of an exception may itself raise (a huge integer in its args)
        detail = ""
    text = printable(f"{type(error).__name__}: {detail}" if detail else type(error).__name__)
    return cut(text, _BUG_TEXT_LIMIT)


def _command_replay(
    paths: Sequence[str], as_json: bool, plot: Path | None, out: TextIO, err: TextIO
) -> int:
    sources = list(expand_paths(paths)) if paths else list(golden_paths())
    if not sources:
        err.write("policy-kernel: no scenario files found\n")
        return EXIT_BAD_INPUT
    tally = _Tally()
    names = _PictureNames(plot) if plot is not None else None
    for source in sources:
        replayed = source if isinstance(source, ScenarioError) else _replay_file(source, as_json)
        if isinstance(replayed, ScenarioError):
            err.write(f"policy-kernel: {replayed}\n")
            tally.bad += 1
            continue
        out.write(replayed.text)
        if replayed.passed is None:
            tally.unchecked += 1
        elif replayed.passed:
            tally.passed += 1
        else:
            tally.failed += 1
        if names is not None:
            assert isinstance(source, Path)  # a bad source ended above
            if replayed.picture is None:
                tally.no_picture += 1
            else:
                target = names.take(source.stem, replayed.suffix)
                if _draw(replayed.picture, target, str(source), err):
                    tally.pictures_written += 1
                else:
                    tally.pictures_failed += 1
    if not as_json:  # --json prints scenario objects only; the exit status sums them up
        out.write(tally.summary() + "\n")
    return tally.status()


#: Longest file stem kept in a picture's name, in bytes (a name is at most 255).
_MOST_STEM_BYTES: Final = 200


class _PictureNames:
    """File names in the --plot folder: a scenario file's stem, made unique within
    one run (two folders may each hold a ``budget-1.json``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.taken: set[str] = set()

    def take(self, stem: str, suffix: str) -> Path:
        # A file name is at most 255 bytes: a long stem is cut, the suffix kept.
        while len(os.fsencode(stem)) > _MOST_STEM_BYTES:
            stem = stem[:-1]
        name, copy = f"{stem}-{suffix}", 1
        while name in self.taken:
            copy += 1
            name = f"{stem}-{suffix}-{copy}"
        self.taken.add(name)
        return self.folder / f"{name}.png"


def _plot_folder(text: str, err: TextIO) -> Path | None:
    """The --plot folder, created; None, after one line on ``err``, when matplotlib is
    missing or the folder cannot be made. Checked before any run, so a missing
    extra costs nothing."""
    try:
        plots.require_matplotlib()
    except RuntimeError as error:
        err.write(f"policy-kernel: --plot: {error}\n")
        return None
    if not text:
        err.write("policy-kernel: --plot: an empty argument names no folder\n")
        return None
    folder = Path(text)
    if folder.exists() and not folder.is_dir():
        err.write(f"policy-kernel: --plot: not a folder: {printable(text)}\n")
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        reason = os_reason(error)
        where = f"{reason}: {error.filename}" if error.filename else reason
        err.write(f"policy-kernel: --plot: cannot make the folder: {printable(where)}\n")
        return None
    return folder


def _draw(picture: _Picture, target: Path, source: str, err: TextIO) -> bool:
    """Write one picture; a failure is one line on ``err`` and ``False``."""
    try:
        picture(target)
    except OSError as error:
        err.write(
            f"policy-kernel: {printable(source)}: cannot write the picture"
            f" {printable(str(target))}: {printable(os_reason(error))}\n"
        )
        return False
    except Exception as error:  # a drawing bug must not end the run (as for a replay)
        err.write(
            f"policy-kernel: {printable(source)}: cannot draw the picture: internal error:"
            f" {_bug_text(error)}\n"
        )
        return False
    return True


#: The largest ``--policy`` file read (as KernelScheduler reads a policy file).
MAX_POLICY_FILE = 1 << 20


def _own_policy(source: str, err: TextIO) -> OwnPolicy | None:
    """The policy document of the file ``source`` for the kit; None (and one line on
    ``err``) when it cannot be read or the kernel refuses it."""
    shown = printable(cut(source, 200))
    try:
        with Path(source).open("rb") as file:
            data = file.read(MAX_POLICY_FILE + 1)
    except OSError as error:
        err.write(f"policy-kernel: --policy {shown}: {printable(error.strerror or str(error))}\n")
        return None
    if len(data) > MAX_POLICY_FILE:
        err.write(f"policy-kernel: --policy {shown}: larger than {MAX_POLICY_FILE} bytes\n")
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        err.write(f"policy-kernel: --policy {shown}: not UTF-8 text\n")
        return None
    read = read_json(text)  # the one JSON reader: duplicate keys, NaN, depth refused
    if isinstance(read, Failure):
        err.write(f"policy-kernel: --policy {shown}: not JSON: {read.failure()}\n")
        return None
    document = read.unwrap()
    try:
        return own_policy(Path(source).stem, document)
    except ValueError as error:
        err.write(f"policy-kernel: --policy {shown}: {printable(cut(str(error), 400))}\n")
        return None


def _kit_arguments(
    arguments: argparse.Namespace, err: TextIO
) -> tuple[list[str] | None, BoundsChoice, list[OwnPolicy]] | None:
    """The kit's options read and checked (one line on ``err`` and None when one is
    wrong): the checks named, the bounds chosen and the policies read."""
    checks = None
    if arguments.checks is not None:
        checks = [name.strip() for name in arguments.checks.split(",") if name.strip()]
        unknown = [name for name in checks if name not in {c.name for c in CHECKS}]
        if unknown or not checks:
            named = printable(cut(unknown[0], 80)) if unknown else "nothing"
            err.write(
                f"policy-kernel: --checks: no check is named {named} (the checks: "
                + ", ".join(check.name for check in CHECKS)
                + ")\n"
            )
            return None
    try:
        choice = BoundsChoice(
            skip_caps=arguments.skip_caps,
            largest_budget=arguments.largest_budget,
            max_depth=arguments.depth,
            queue_size=arguments.queue_size,
        )
    except ValueError as error:
        err.write(f"policy-kernel: {error}\n")
        return None
    policies = []
    for source in arguments.policy:
        read = _own_policy(source, err)
        if read is None:
            return None
        policies.append(read)
    return checks, choice, policies


def _command_verify(arguments: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    kit_only = {
        "--profile": None if arguments.profile == SEED_RULES else arguments.profile,
        "--policy": arguments.policy,
        "--checks": arguments.checks,
        "--skip-caps": arguments.skip_caps,
        "--largest-budget": arguments.largest_budget,
        "--depth": arguments.depth,
        "--queue-size": arguments.queue_size,
    }
    given = [option for option, value in kit_only.items() if value not in (None, [])]
    if arguments.against_command is None and given:
        err.write(f"policy-kernel: {given[0]} applies to --against-command\n")
        return EXIT_BAD_INPUT
    if arguments.against_command is not None and (
        arguments.jobs is not None or arguments.shard != "1/1"
    ):
        err.write("policy-kernel: --jobs and --shard do not apply to --against-command\n")
        return EXIT_BAD_INPUT
    try:
        shard = parse_shard(arguments.shard)
    except ValueError as error:
        err.write(f"policy-kernel: {error}\n")
        return EXIT_BAD_INPUT
    # An explicit --out is checked before the run (its verdict must not be lost after it).
    problem = None if arguments.out is None else out_folder_problem(Path(arguments.out))
    if problem is not None:
        err.write(f"policy-kernel: --out: {problem}\n")
        return EXIT_BAD_INPUT
    out_folder = Path("." if arguments.out is None else arguments.out)
    level = level_of(arguments.quick, arguments.deep)
    if arguments.against_command is None:
        return verify(
            level,
            jobs=arguments.jobs,
            shard=shard,
            as_json=arguments.json,
            out_folder=out_folder,
            out=out,
            err=err,
        )
    kit = _kit_arguments(arguments, err)
    if kit is None:
        return EXIT_BAD_INPUT
    checks, choice, policies = kit
    return verify_against_command(
        arguments.against_command,
        level=level,
        timeout=arguments.timeout,
        as_json=arguments.json,
        profile=arguments.profile,
        policies=policies,
        checks=checks,
        choice=choice,
        out_folder=out_folder,
        out=out,
        err=err,
    )


class _Discarded(io.StringIO):
    """Where output goes when the standard stream is closed (``>&-``): nowhere."""

    def write(self, text: str) -> int:
        return len(text)


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run the command line; returns the exit status.

    ``out`` and ``err`` default to the standard streams at the time of the call;
    a standard stream that is closed (``None``) is written nowhere, and the exit
    status still tells the result.
    """
    stdout = out if out is not None else sys.stdout or _Discarded()
    stderr = err if err is not None else sys.stderr or _Discarded()
    arguments = _parser().parse_args(argv)
    plot: Path | None = None
    if getattr(arguments, "plot", None) is not None:
        plot = _plot_folder(arguments.plot, stderr)
        if plot is None:
            return EXIT_BAD_INPUT
    if arguments.command == "replay":
        return _command_replay(arguments.paths, arguments.json, plot, stdout, stderr)
    if arguments.command == "verify":
        return _command_verify(arguments, stdout, stderr)
    if arguments.command == "bench":
        if arguments.vllm:
            return bench_vllm_loop(
                arguments.quick, arguments.json, stdout, stderr, loop_only=arguments.loop_only
            )
        if arguments.loop_only:
            stderr.write("policy-kernel bench: --loop-only needs --vllm\n")
            return EXIT_BAD_INPUT
        return bench(arguments.quick, arguments.json, stdout, stderr)
    if arguments.command == "simulate":
        return simulate(
            seed=arguments.seed,
            as_json=arguments.json,
            out=stdout,
            err=stderr,
            quick=arguments.quick,
            picture=None if plot is None else partial(_draw_waits, plot, stderr),
        )
    return EXIT_BAD_INPUT  # pragma: no cover - argparse rejects unknown commands


def run() -> None:
    """The console entry point, for every command: output the reader stopped
    reading ends the command quietly (status 141), and no stream error becomes
    a traceback."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            # printable() escapes what is not printable; this keeps printable text
            # that the terminal's encoding cannot show (LANG=C) from raising.
            stream.reconfigure(errors="backslashreplace")
    try:
        try:
            status = main()
        except SystemExit as done:  # argparse: --help (0) or a bad command line (2)
            status = done.code if isinstance(done.code, int) else EXIT_BAD_INPUT
        if sys.stdout is not None:
            sys.stdout.flush()  # inside the try: a closed pipe is often found only here
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback
        if sys.stderr is not None:
            with contextlib.suppress(OSError):
                sys.stderr.write("policy-kernel: interrupted\n")
                sys.stderr.flush()
        status = EXIT_INTERRUPTED
    except BrokenPipeError:
        # The Python docs' advice (signal module, "Note on SIGPIPE"): point the
        # standard streams at devnull so the flush at exit cannot raise again.
        # SIGPIPE itself stays ignored, as Python sets it.
        _silence_standard_streams()
        status = EXIT_BROKEN_PIPE
    except OSError as error:  # a full disk (/dev/full) or a stream closed under us
        if sys.stderr is not None:
            with contextlib.suppress(OSError):  # stderr gone too: the status is all that is left
                sys.stderr.write(
                    f"policy-kernel: cannot write the output: {printable(str(error))}\n"
                )
                sys.stderr.flush()
        _silence_standard_streams()
        status = EXIT_BAD_INPUT
    sys.exit(status)


def _silence_standard_streams() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            # No descriptor (a replaced stream, or one already closed): nothing to silence.
            with contextlib.suppress(OSError, ValueError):
                os.dup2(devnull, stream.fileno())
    os.close(devnull)


if __name__ == "__main__":
    run()
