"""The versioned JSON document of a queue policy: load, validate, dump.

::

    {"format": "serving-policy-kernel/queue-policy", "version": 1,
     "let": {"short_tokens": 128},
     "attributes": {"prompt": "visible", "out": "hidden"},
     "keys": ["prompt <= short_tokens ? 0 : 1", {"var": "serial"}],
     "timing": "selection"}

Only ``keys`` is needed; ``format`` and ``version`` may be left out (a policy
embedded in a scenario), but when present they must be these. Leaving ``keys``
out means FIFO; an empty list is refused. Keys are text or JSON trees
(:mod:`policy.waiting.tree_json`); :func:`dump_policy` writes them as text.
"""

from __future__ import annotations

import json
import math
import re
from typing import Final

from returns.result import Failure, Result, Success

from policy.waiting.errors import PolicyError
from policy.waiting.expr import Expr
from policy.waiting.numbers import name_shown, shown
from policy.waiting.parse import unparse
from policy.waiting.queue_policy import QueuePolicy, make_policy
from policy.waiting.tree_json import JsonValue, expr_from_json

FORMAT: Final = "serving-policy-kernel/queue-policy"
VERSION: Final = 1
_FIELDS: Final = ("format", "version", "let", "attributes", "keys", "timing")


def _read_object(
    doc: dict[str, JsonValue], field: str
) -> Result[dict[str, JsonValue], PolicyError]:
    value = doc.get(field, {})
    if not isinstance(value, dict):
        return Failure(PolicyError(field, "must be a JSON object"))
    return Success(value)


def _read_keys(doc: dict[str, JsonValue]) -> Result[list[Expr | str] | None, PolicyError]:
    """The keys for :func:`make_policy`: JSON trees read into nodes, text left to it."""
    if "keys" not in doc:
        return Success(None)
    raw = doc["keys"]
    if not isinstance(raw, list):
        return Failure(
            PolicyError("keys", "must be a list of keys (text or trees); leave it out for FIFO")
        )
    keys: list[Expr | str] = []
    for index, key in enumerate(raw):
        path = f"keys[{index}]"
        if isinstance(key, str):
            keys.append(key)
        elif isinstance(key, dict):
            tree = expr_from_json(key, path)
            if isinstance(tree, Failure):
                return Failure(tree.failure())
            keys.append(tree.unwrap())
        else:
            return Failure(
                PolicyError(path, f"a key must be expression text or a JSON tree, not {shown(key)}")
            )
    return Success(keys)


def load_policy(doc: JsonValue) -> Result[QueuePolicy, PolicyError]:
    """A queue policy from its already-parsed JSON document, or why it is refused.

    The document's own rules (an object, its version, fields and format) are
    checked here; :func:`make_policy` applies every rule of the policy itself.

    >>> load_policy({"keys": ["serial"]}).unwrap().keys
    (Var(name='serial'),)
    >>> str(load_policy({"version": 2, "keys": ["serial"]}).failure())
    'version: this library reads queue-policy version 1, not 2'
    """
    if not isinstance(doc, dict):
        return Failure(PolicyError("", "a queue policy must be a JSON object"))
    version = doc.get("version", VERSION)
    if isinstance(version, bool) or not isinstance(version, int):
        return Failure(PolicyError("version", f"must be an integer, not {shown(version)}"))
    if version != VERSION:
        return Failure(
            PolicyError(
                "version",
                f"this library reads queue-policy version {VERSION}, not {shown(version)}",
            )
        )
    for field in doc:
        if field not in _FIELDS:
            return Failure(
                PolicyError(
                    name_shown(field), f"unknown field (expected one of {', '.join(_FIELDS)})"
                )
            )
    if doc.get("format", FORMAT) != FORMAT:
        return Failure(PolicyError("format", f"must be {FORMAT!r}, not {shown(doc['format'])}"))
    return _read_object(doc, "let").bind(
        lambda constants: _read_object(doc, "attributes").bind(
            lambda attributes: _read_keys(doc).bind(
                lambda keys: make_policy(
                    keys,
                    constants=constants,
                    attributes=attributes,
                    timing=doc.get("timing", "selection"),
                )
            )
        )
    )


def load_policy_text(text: str) -> Result[QueuePolicy, PolicyError]:
    """A queue policy from JSON text.

    >>> str(load_policy_text('{"keys": ["1 +"]}').failure())
    "keys[0]: line 1, column 4: expected an operand (number, name or '('), found end of text"
    >>> str(load_policy_text('{"version": 1' + '0' * 5000 + '}').failure())
    'line 1, column 13: integer of 5001 digits is out of range: numbers must be finite floats'
    """
    try:
        doc = json.loads(text, parse_int=_json_integer)
    except json.JSONDecodeError as error:
        return Failure(PolicyError("", f"not JSON: {error.msg}", error.lineno, error.colno))
    except RecursionError:
        return Failure(PolicyError("", "not JSON this library can read: nested too deeply"))
    except _OutOfRange as refused:
        line, column = _where_integer(text, refused.text)
        return Failure(
            PolicyError(
                "",
                f"integer of {refused.digits} digits is out of range:"
                " numbers must be finite floats",
                line,
                column,
            )
        )
    return load_policy(doc)


class _OutOfRange(Exception):
    """Internal: an integer literal beyond the float range (Python could not even
    convert one of more than 4300 digits); it never escapes :func:`load_policy_text`."""

    def __init__(self, text: str) -> None:
        super().__init__("integer out of range")
        self.text = text
        self.digits = len(text.lstrip("-"))


def _json_integer(text: str) -> int:
    # float() reads any number of digits; an integer beyond the float range is refused
    # here, before int() could raise for more than 4300 digits.
    if not math.isfinite(float(text)):
        raise _OutOfRange(text)
    return int(text)


_JSON_NUMBER_OR_STRING: Final = re.compile(
    r'"(?:[^"\\]|\\.)*"|(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?'
)


def _where_integer(text: str, literal: str) -> tuple[int | None, int | None]:
    """Line and column of the first integer literal ``literal`` outside JSON strings."""
    for match in _JSON_NUMBER_OR_STRING.finditer(text):
        if match.group(1) == literal and not match.group(2) and not match.group(3):
            at = match.start()
            line = text.count("\n", 0, at) + 1
            return line, at - (text.rfind("\n", 0, at) + 1) + 1
    return None, None


def dump_policy(policy: QueuePolicy) -> dict[str, JsonValue]:
    """The JSON document of ``policy`` (keys as text); loading it gives ``policy`` back.

    >>> dump_policy(make_policy(["-prompt"], attributes=["prompt"]).unwrap())
    ... # doctest: +NORMALIZE_WHITESPACE
    {'format': 'serving-policy-kernel/queue-policy', 'version': 1, 'let': {},
     'attributes': {'prompt': 'visible'}, 'keys': ['-prompt'], 'timing': 'selection'}
    """
    doc: dict[str, JsonValue] = {
        "format": FORMAT,
        "version": VERSION,
        "let": dict(sorted(policy.constants.items())),
        "attributes": dict(sorted(policy.attributes.items())),
    }
    if not policy.is_fifo:
        doc["keys"] = [unparse(key) for key in policy.keys]
    doc["timing"] = policy.timing
    return doc


def dump_policy_text(policy: QueuePolicy) -> str:
    """:func:`dump_policy` as JSON text.

    >>> load_policy_text(dump_policy_text(make_policy(None).unwrap())).unwrap().is_fifo
    True
    """
    return json.dumps(dump_policy(policy), indent=2)
