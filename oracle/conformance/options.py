"""The kit's options of ``policy-kernel verify --against-command``, read and
checked before anything runs: one line on standard error for the first that
is wrong."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from oracle.conformance.bounds import BoundsChoice
from oracle.conformance.checks import CHECKS
from oracle.conformance.command import DEFAULT_TIMEOUT
from oracle.conformance.own_policies import OwnPolicy, own_policy
from oracle.options import timeout, whole, whole_list
from oracle.spec.protocol import PROFILES, SEED_RULES
from policy.adapters.policy_file import read_policy_file
from policy.text import cut, printable

__all__ = ["add_kit_options", "kit_arguments", "misplaced_option", "read_own_policy"]


def add_kit_options(verify: argparse.ArgumentParser) -> None:
    """The kit's options, on ``policy-kernel verify``'s parser."""
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
        type=whole_list,
        default=None,
        metavar="N,...",
        help="with --against-command: the skip caps of the grant order and the tick protocol"
        " (an implementation with a fixed skip cap names it)",
    )
    verify.add_argument(
        "--largest-budget",
        type=whole,
        default=None,
        metavar="N",
        help="with --against-command: the tick protocol's budgets 0..N",
    )
    verify.add_argument(
        "--depth",
        type=whole,
        default=None,
        metavar="N",
        help="with --against-command: the tick protocol's states within N events",
    )
    verify.add_argument(
        "--queue-size",
        type=whole,
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
        type=timeout,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="with --against-command: seconds to wait for each answer"
        f" (default {DEFAULT_TIMEOUT:g})",
    )


def read_own_policy(source: str, err: TextIO) -> OwnPolicy | None:
    """The policy of the file ``source`` as a domain of the kit's selection checks,
    read by the drop-in's own reader (:func:`~policy.adapters.policy_file.read_policy_file`);
    None (and one line on ``err``) when it cannot be read or the kernel refuses it."""
    shown = printable(cut(source, 200))
    try:
        document, _ = read_policy_file(source)
        return own_policy(Path(source).stem, document)
    except ValueError as error:
        err.write(f"policy-kernel: --policy {shown}: {printable(cut(str(error), 400))}\n")
        return None


def kit_arguments(
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
        read = read_own_policy(source, err)
        if read is None:
            return None
        policies.append(read)
    return checks, choice, policies


def misplaced_option(arguments: argparse.Namespace) -> str | None:
    """The line for the first option given where it does not apply (a kit option
    without ``--against-command``, ``--jobs`` or ``--shard`` with it); None when
    each applies."""
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
        return f"{given[0]} applies to --against-command"
    if arguments.against_command is not None and (
        arguments.jobs is not None or arguments.shard != "1/1"
    ):
        return "--jobs and --shard do not apply to --against-command"
    return None
