"""The command line's readers of option values: each an ``argparse`` type that
refuses a bad value with one line naming what it must be."""

from __future__ import annotations

import argparse

from oracle.conformance.command import checked_timeout
from oracle.simulate.workload import seeded
from policy.text import cut

__all__ = ["positive", "seed", "timeout", "whole", "whole_list"]


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, not {text!r}")
    return int(text)


def whole(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 6:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {cut(text, 40)!r}")
    return int(text)


def whole_list(text: str) -> tuple[int, ...]:
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


def seed(text: str) -> int:
    try:
        seed = int(text)
        seeded(seed)  # the workload's own rule
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"the seed must be a whole number >= 0, not {text!r}"
        ) from None
    return seed


def timeout(text: str) -> float:
    try:
        return checked_timeout(float(text))
    except ValueError as error:
        refused = str(error) if "timeout" in str(error) else f"not a number: {text!r}"
        raise argparse.ArgumentTypeError(refused) from None
