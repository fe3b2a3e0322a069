"""``policy-kernel``: the command line. It parses the arguments and hands each
command to the module that does it: ``replay`` (:mod:`oracle.harness.replay_files`),
``verify`` (:mod:`oracle.checks.verify`, or the conformance kit,
:mod:`oracle.conformance.command`), ``bench`` (:mod:`oracle.bench`) and
``simulate`` (:mod:`oracle.simulate`).

Exit status (:mod:`oracle.exits`): 0 when every expectation holds, 1 when one
fails, 2 when a file (or the command line) is bad. A closed pipe on standard
output (``policy-kernel replay | head -1``) ends the command quietly with
status 141 (128 + SIGPIPE, what a shell reports for a filter a closed pipe
ended); Ctrl-C with 130 (:mod:`oracle.console`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from oracle import options
from oracle.bench.run import bench
from oracle.bench.vllm_loop import bench_vllm_loop
from oracle.checks.verify import level_of, out_folder_problem, parse_shard, verify
from oracle.conformance.command import verify_against_command
from oracle.conformance.options import add_kit_options, kit_arguments, misplaced_option
from oracle.console import Discarded, run_console
from oracle.exits import EXIT_BAD_INPUT, EXIT_BROKEN_PIPE, EXIT_INTERRUPTED
from oracle.harness.replay_files import draw_waits, plot_folder, replay_files
from oracle.simulate.run import simulate

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_INTERRUPTED", "main", "run"]


class _Parser(argparse.ArgumentParser):
    """argparse, except that a failed write of help or usage is not ignored:
    ``--help >/dev/full`` must be one line and status 2, like any other output."""

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if message:
            (file or sys.stderr).write(message)


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
        type=options.positive,
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
    add_kit_options(verify)
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
    bench.add_argument(
        "--runs",
        type=options.positive,
        default=None,
        metavar="N",
        help="with --vllm: runs per side of each loop configuration, pooled (default 2)",
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
        "--seed",
        type=options.seed,
        default=1,
        help="workload seed, a whole number >= 0 (default 1)",
    )
    simulate.add_argument("--json", action="store_true", help="print one JSON document instead")
    simulate.add_argument("--quick", action="store_true", help="a small workload (about a second)")
    simulate.add_argument("--plot", default=None, metavar="DIR", help=_PLOT_HELP)
    return parser


_PLOT_HELP = (
    "also draw each run as a PNG in DIR (created if missing; needs the [plot] extra:"
    " pip install -e '.[plot]')"
)


def _command_verify(arguments: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    misplaced = misplaced_option(arguments)
    if misplaced is not None:
        err.write(f"policy-kernel: {misplaced}\n")
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
    kit = kit_arguments(arguments, err)
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


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run the command line; returns the exit status.

    ``out`` and ``err`` default to the standard streams at the time of the call;
    a standard stream that is closed (``None``) is written nowhere, and the exit
    status still tells the result.
    """
    stdout = out if out is not None else sys.stdout or Discarded()
    stderr = err if err is not None else sys.stderr or Discarded()
    arguments = _parser().parse_args(argv)
    plot: Path | None = None
    if getattr(arguments, "plot", None) is not None:
        plot = plot_folder(arguments.plot, stderr)
        if plot is None:
            return EXIT_BAD_INPUT
    if arguments.command == "replay":
        return replay_files(arguments.paths, arguments.json, plot, stdout, stderr)
    if arguments.command == "verify":
        return _command_verify(arguments, stdout, stderr)
    if arguments.command == "bench":
        if arguments.vllm:
            return bench_vllm_loop(
                arguments.quick,
                arguments.json,
                stdout,
                stderr,
                loop_only=arguments.loop_only,
                runs=arguments.runs,
            )
        for given, name in ((arguments.loop_only, "--loop-only"), (arguments.runs, "--runs")):
            if given:
                stderr.write(f"policy-kernel bench: {name} needs --vllm\n")
                return EXIT_BAD_INPUT
        return bench(arguments.quick, arguments.json, stdout, stderr)
    if arguments.command == "simulate":
        return simulate(
            seed=arguments.seed,
            as_json=arguments.json,
            out=stdout,
            err=stderr,
            quick=arguments.quick,
            picture=None if plot is None else partial(draw_waits, plot, stderr),
        )
    return EXIT_BAD_INPUT  # pragma: no cover - argparse rejects unknown commands


def run() -> None:
    """The console entry point, for every command (:func:`oracle.console.run_console`)."""
    run_console(main)


if __name__ == "__main__":
    run()
