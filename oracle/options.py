"""The command line's readers of option values: each an ``argparse`` type that
refuses a bad value with one line naming what it must be.

Every number is read by the settings' one rule
(:func:`policy.adapters.settings.setting_number`: ASCII digits, at most one
``.``, at most 4,300 digits; no underscores, other scripts' digits, exponents,
``+``, spaces or ``inf``), so an option and ``POLICY_KERNEL_QUEUE`` never
disagree on what a number is. Values are quoted by the one quoting rule
(:func:`policy.text.quote`).
"""

from __future__ import annotations

import argparse

from oracle.conformance.command import checked_timeout
from policy.adapters.settings import setting_number
from policy.text import quote
from policy.waiting.numbers import as_float

__all__ = ["positive", "seed", "timeout", "whole", "whole_list"]

#: The most digits of a bound (``--largest-budget``, ``--skip-caps``, ...).
_BOUND_DIGITS = 6


def _number(text: str) -> int | float | None:
    """``text`` read by the settings' number rule; None when the rule refuses it."""
    try:
        return setting_number("option", text)
    except ValueError:
        return None


def _whole(text: str, most_digits: int | None = None) -> int | None:
    """``text`` as a whole number >= 0 (of at most ``most_digits`` digits); None otherwise."""
    if most_digits is not None and len(text) > most_digits:
        return None
    number = _number(text)
    return number if type(number) is int and number >= 0 else None


def positive(text: str) -> int:
    number = _whole(text)
    if number is None or number < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, not {quote(text)}")
    return number


def whole(text: str) -> int:
    number = _whole(text, _BOUND_DIGITS)
    if number is None:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {quote(text, 40)}")
    return number


def whole_list(text: str) -> tuple[int, ...]:
    numbers = [_whole(part.strip(), _BOUND_DIGITS) for part in text.split(",")]
    if len(numbers) > 16 or None in numbers:
        raise argparse.ArgumentTypeError(
            f"must be whole numbers separated by commas, not {quote(text, 40)}"
        )
    return tuple(sorted({number for number in numbers if number is not None}))


def seed(text: str) -> int:
    number = _whole(text)
    if number is None:
        # the workload's own rule (oracle.simulate.workload.seeded), refused as one line
        raise argparse.ArgumentTypeError(f"the seed must be a whole number >= 0, not {quote(text)}")
    return number


def timeout(text: str) -> float:
    number = _number(text)
    if number is None:
        raise argparse.ArgumentTypeError(f"not a number: {quote(text)}")
    try:
        return checked_timeout(as_float(number))  # a 400-digit integer: infinity, refused
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
