"""Reading ``POLICY_KERNEL_QUEUE``: the one reader of a ready-made name with its
``name:key=value,...`` arguments, and the one number reader of settings, shared by
the vLLM and SGLang adapters.

A setting's number is written in ASCII digits, with at most one ``.`` and an
optional leading ``-``: no underscores, no other scripts' digits, no exponent, no
``inf`` or ``nan`` (Python's ``int`` and ``float`` take all of these), and at most
:data:`MOST_DIGITS` digits. Each key is given at most once. Every refusal is a
``ValueError`` whose message is one line, the host's text quoted short
(``policy.text.quote``); the caller names the setting. The command line's number
options (``oracle.options``) are read by the same rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from policy.text import quote

__all__ = ["ENV_VAR", "MOST_DIGITS", "is_policy_file", "read_ready_made", "setting_number"]

#: The environment variable that names the policy, for every host.
ENV_VAR: Final = "POLICY_KERNEL_QUEUE"

#: The most digits a setting's number has: Python converts no longer text to an
#: ``int`` (its default limit), and no threshold or age needs more.
MOST_DIGITS: Final = 4300

#: What a refusal of an unknown name adds: how a file is told from a name.
_FILE_HINT: Final = "a policy file's path ends in .json or holds a '/'"


def is_policy_file(value: str, separator: str = "/") -> bool:
    """Whether ``value`` names a policy file rather than a ready-made policy.

    >>> is_policy_file("short-first"), is_policy_file("policies/mine"), is_policy_file("a.json")
    (False, True, True)
    """
    return value.endswith(".json") or "/" in value or separator in value


def setting_number(key: str, text: str) -> int | float:
    """``text`` as a number: an ``int`` without a ``.``, a ``float`` with one.

    >>> setting_number("threshold", "256"), setting_number("age", "0.5"), setting_number("x", "-3")
    (256, 0.5, -3)
    >>> setting_number("threshold", "1_000")
    Traceback (most recent call last):
    ...
    ValueError: threshold must be a number in ASCII digits, not '1_000'
    """
    body = text[1:] if text.startswith("-") else text
    digits = body.replace(".", "", 1)
    if not body or not body.isascii() or not digits.isdigit():
        raise ValueError(f"{key} must be a number in ASCII digits, not {quote(text)}")
    if len(digits) > MOST_DIGITS:
        raise ValueError(
            f"{key} must be a number of at most {MOST_DIGITS:,} digits, not {quote(text)}"
        )
    return float(text) if "." in text else int(text)


def read_ready_made(
    value: str, names: Mapping[str, tuple[str, ...]]
) -> tuple[str, dict[str, int | float]]:
    """The ready-made name ``value`` gives (one of ``names``, each with the argument
    keys it takes) and its arguments, each read by :func:`setting_number`.

    >>> read_ready_made("short-first:threshold=512", {"short-first": ("threshold",)})
    ('short-first', {'threshold': 512})
    >>> read_ready_made("fcfs:x=1", {"fcfs": ()})
    Traceback (most recent call last):
    ...
    ValueError: fcfs takes no arguments (name:key=value,...), not 'x=1'
    """
    name, _, rest = value.partition(":")
    name = name.strip()
    if name not in names:
        raise ValueError(
            f"unknown policy name {quote(name)}: the ready-made names are"
            f" {', '.join(names)}; {_FILE_HINT}"
        )
    accepted = names[name]
    arguments: dict[str, int | float] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, equals, text = (side.strip() for side in item.partition("="))
        if not equals or key not in accepted:
            takes = f"takes {', '.join(accepted)}" if accepted else "takes no arguments"
            raise ValueError(f"{name} {takes} (name:key=value,...), not {quote(item)}")
        if key in arguments:
            raise ValueError(f"{key} is given twice")
        arguments[key] = setting_number(key, text)
    return name, arguments
