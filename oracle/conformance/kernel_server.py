"""The conformance protocol spoken by the kernel itself, as a process.

``python -m oracle.conformance.kernel_server`` reads one request per line on
stdin and writes one answer per line on stdout, answering every decision with
the kernel (docs/conformance.md). It is the reference a foreign implementation
can be compared with line by line, and what the kit's own tests run::

    policy-kernel verify --against-command "python -m oracle.conformance.kernel_server"

:func:`serve` speaks the protocol for any in-process implementation (for
example :func:`~oracle.conformance.implementations.from_handlers` around a
Python scheduler of one's own).

>>> import io
>>> requests = io.BytesIO(
...     b'{"id": 0, "decision": "hello", "inputs": {"protocol": 1}}\\n'
...     b'{"id": 1, "decision": "backlog_admits", "inputs": {"backlog_len": 2, "budget": 8}}\\n'
...     b'{"id": 2, "decision": "no such thing", "inputs": {}}\\n'
... )
>>> answers = io.BytesIO()
>>> serve(kernel_implementation(), requests, answers)
0
>>> print(answers.getvalue().decode(), end="")  # doctest: +ELLIPSIS
{"id":0,"answer":{"protocol":1,"decisions":["apply_event",...,"take_next_grantee"]}}
{"id":1,"answer":false}
{"id":2,"error":"unknown decision: no such thing"}
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Protocol

from oracle.conformance.decisions import HELLO, PROTOCOL_VERSION
from oracle.conformance.implementations import (
    Failed,
    Implementation,
    NotApplicable,
    kernel_implementation,
)
from oracle.conformance.wire import JSON, encode

__all__ = ["AnswerStream", "main", "serve"]


class AnswerStream(Protocol):
    """Where :func:`serve` writes its answers (a binary stream, such as stdout's buffer)."""

    def write(self, data: bytes, /) -> object: ...

    def flush(self) -> object: ...


def _answer(
    implementation: Implementation, decisions: frozenset[str], line: bytes
) -> dict[str, JSON]:
    try:
        request = json.loads(line)
    except (UnicodeDecodeError, ValueError):
        return {"id": None, "error": "the request is not a JSON line"}
    if not isinstance(request, dict):
        return {"id": None, "error": "the request is not a JSON object"}
    identity = request.get("id")
    decision, inputs = request.get("decision"), request.get("inputs")
    if decision == HELLO:
        named = sorted(decisions)
        return {"id": identity, "answer": {"protocol": PROTOCOL_VERSION, "decisions": named}}
    if not isinstance(decision, str) or decision not in decisions:
        return {"id": identity, "error": f"unknown decision: {str(decision)[:80]}"}
    if not isinstance(inputs, dict):
        return {"id": identity, "error": "the inputs are not a JSON object"}
    answer = implementation.answer(decision, inputs)
    if isinstance(answer, Failed):
        return {"id": identity, "error": answer.reason}
    if isinstance(answer, NotApplicable):
        return {"id": identity, "not_applicable": answer.reason}
    return {"id": identity, "answer": answer}


def serve(implementation: Implementation, requests: Iterable[bytes], answers: AnswerStream) -> int:
    """Answer every request line of ``requests`` on ``answers`` with ``implementation``,
    one line each, flushed, until ``requests`` ends; 0. A request the implementation
    cannot answer gets an ``error`` answer (the JSON error's text)."""
    decisions = implementation.decisions()
    for line in requests:
        if not line.strip():
            continue
        answers.write(encode(_answer(implementation, decisions, line)).encode() + b"\n")
        answers.flush()
    return 0


def main() -> int:
    """Serve the kernel on the standard streams."""
    try:
        return serve(kernel_implementation(), sys.stdin.buffer, sys.stdout.buffer)
    except BrokenPipeError:  # the kit went away: nothing to answer any more
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
