"""Reading a policy file: the one reader of the drop-in's ``POLICY_KERNEL_QUEUE``
and of ``policy-kernel verify --policy``.

A policy file is UTF-8 JSON text of at most :data:`MAX_POLICY_BYTES`, read by
the one JSON reader (:func:`policy.json_text.read_json`: duplicate keys,
non-finite numbers and deep nesting refused at their place) and loaded by
:func:`~policy.waiting.load_policy`. Every refusal is a ``ValueError`` whose
message is one line: the reason, without the file's name (the caller says
which setting or option named it).

The file is opened by the project's one file rule
(:func:`policy.adapters.regular_files.read_regular_file`): only a regular file
is read, and a FIFO or a device in its place is refused without blocking.
"""

from __future__ import annotations

from typing import Final

from returns.result import Failure

from policy.adapters.regular_files import read_regular_file
from policy.json_text import JsonValue, read_json
from policy.text import cut, printable
from policy.waiting import QueuePolicy, load_policy

__all__ = ["MAX_POLICY_BYTES", "read_policy_file"]

#: A policy file is at most this long (a policy document is a few hundred bytes).
MAX_POLICY_BYTES: Final = 1 << 20


def read_policy_file(path: str) -> tuple[JsonValue, QueuePolicy]:
    """The JSON document of the policy file at ``path`` and the policy it holds; a
    ``ValueError`` with a one-line reason when the file cannot be read, is larger
    than :data:`MAX_POLICY_BYTES`, is not UTF-8, not JSON, or not a policy.

    >>> read_policy_file("/nonexistent/policy.json")
    Traceback (most recent call last):
    ...
    ValueError: cannot read the policy file: No such file or directory
    """
    opened = read_regular_file(path, MAX_POLICY_BYTES)
    if isinstance(opened, Failure):
        raise ValueError(f"cannot read the policy file: {opened.failure().reason}")
    data = opened.unwrap()
    if len(data) > MAX_POLICY_BYTES:
        raise ValueError(f"the policy file is larger than {MAX_POLICY_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("the policy file is not UTF-8 text") from None
    read = read_json(text)
    if isinstance(read, Failure):
        raise ValueError(f"the policy file is not JSON: {read.failure()}")
    document = read.unwrap()
    loaded = load_policy(document)
    if isinstance(loaded, Failure):
        reason = printable(cut(str(loaded.failure()), 400))
        raise ValueError(f"the policy file holds no valid policy: {reason}")
    return document, loaded.unwrap()
