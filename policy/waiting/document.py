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
from collections.abc import Collection
from typing import Final

from returns.result import Failure, Result, Success

from policy.json_text import read_json
from policy.waiting.errors import PolicyError
from policy.waiting.expr import Expr
from policy.waiting.numbers import name_shown, shown
from policy.waiting.parse import unparse
from policy.waiting.queue_policy import QueuePolicy, build_policy, read_key
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


def _read_keys(doc: dict[str, JsonValue]) -> Result[list[JsonValue] | None, PolicyError]:
    """The keys as given, for :func:`_read_key` to read one by one (None: FIFO)."""
    if "keys" not in doc:
        return Success(None)
    raw = doc["keys"]
    if not isinstance(raw, list):
        return Failure(
            PolicyError("keys", "must be a list of keys (text or trees); leave it out for FIFO")
        )
    return Success(raw)


def _read_key(index: int, key: object, constants: Collection[str]) -> Result[Expr, PolicyError]:
    """A document's key: text, read as ``make_policy`` reads it, or a JSON tree.

    :func:`~policy.waiting.queue_policy.build_policy` reads the keys one by one,
    so the limit on the keys' nodes together stops the reading of trees at the
    first key beyond it (a tree's own count comes first, in linear time)."""
    if isinstance(key, str):
        return read_key(index, key, constants)
    path = f"keys[{index}]"
    if isinstance(key, dict):
        return expr_from_json(key, path)
    return Failure(
        PolicyError(path, f"a key must be expression text or a JSON tree, not {shown(key)}")
    )


def load_policy(doc: JsonValue) -> Result[QueuePolicy, PolicyError]:
    """A queue policy from its already-parsed JSON document, or why it is refused.

    The document's own rules (an object, its version, fields and format) are
    checked here; :func:`~policy.waiting.queue_policy.build_policy` (the body of
    :func:`~policy.waiting.queue_policy.make_policy`) applies every rule of the
    policy itself, sizes included.

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
                lambda keys: build_policy(
                    keys,
                    constants,
                    attributes,
                    doc.get("timing", "selection"),  # build_policy checks each value
                    _read_key,
                )
            )
        )
    )


def load_policy_text(text: str) -> Result[QueuePolicy, PolicyError]:
    """A queue policy from JSON text.

    The text is read by :func:`policy.json_text.read_json`, the one JSON reader
    (the scenario loader's too): a key given twice in one object, ``NaN`` or
    ``Infinity``, a number beyond the float range and nesting deeper than 256 are
    refused with their JSON path, line and column. Like every function here that
    returns a ``Result``, it never raises: ``text`` that is not a ``str`` is a
    ``Failure`` too (bytes are decoded by whoever read them).

    >>> str(load_policy_text('{"keys": ["1 +"]}').failure())
    "keys[0]: line 1, column 4: expected an operand (number, name or '('), found end of text"
    >>> str(load_policy_text('{"keys": ["serial"], "keys": []}').failure())
    'keys: line 1, column 22: duplicate key "keys" (each key may appear once in an object)'
    >>> str(load_policy_text(None).failure())
    'policy text must be a str, not None'
    """
    given: object = text  # typed str, yet any object may come (a Result never raises)
    if not isinstance(given, str):
        return Failure(PolicyError("", f"policy text must be a str, not {shown(given)}"))
    read = read_json(given)
    if isinstance(read, Failure):
        refused = read.failure()
        return Failure(PolicyError(refused.path, refused.message, refused.line, refused.column))
    return load_policy(read.unwrap())


def dump_policy(policy: QueuePolicy) -> dict[str, JsonValue]:
    """The JSON document of ``policy`` (keys as text); loading it gives ``policy`` back.

    >>> from policy.waiting.queue_policy import make_policy
    >>> dump_policy(make_policy(["-prompt"], attributes=["prompt"]).unwrap())
    ... # doctest: +NORMALIZE_WHITESPACE
    {'format': 'serving-policy-kernel/queue-policy', 'version': 1, 'let': {},
     'attributes': {'prompt': 'visible'}, 'keys': ['-prompt'], 'timing': 'selection'}

    ``policy`` must be a :class:`QueuePolicy` (a ``TypeError`` otherwise).
    """
    if not isinstance(policy, QueuePolicy):
        raise TypeError(f"dump_policy writes a QueuePolicy, not {type(policy).__name__}")
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
    """:func:`dump_policy` as JSON text (never a token that is not JSON: a policy
    built by hand with a constant that is not finite is a ``ValueError``).

    >>> from policy.waiting.queue_policy import make_policy
    >>> load_policy_text(dump_policy_text(make_policy(None).unwrap())).unwrap().is_fifo
    True
    """
    return json.dumps(dump_policy(policy), indent=2, allow_nan=False)
