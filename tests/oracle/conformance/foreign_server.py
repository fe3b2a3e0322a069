"""A stand-in foreign implementation: the kernel speaking the conformance protocol,
with one deliberate fault (``python -m tests.oracle.conformance.foreign_server FAULT``).

Faults of a decision (the process answers, wrongly): ``expiry-strict``,
``declined-ignored``, ``ties-later``. Faults of the process, at its ``N``-th
answer line (the hello answer is line 0): ``not-json:N`` (a line that is not
JSON), ``wrong-id:N``, ``malformed:N`` (an answer not of the decision's form),
``exit:N`` (a line on stderr, then exit status 3), ``hang:N`` (stops answering).
Faults of the session: ``no-decisions`` (answers none), ``protocol-2``,
``misspelt`` (the hello also names ``slice_grant_expried``), ``nothing-applies``
(``not_applicable`` to every request), ``cap-2-only`` (a fixed
skip cap: ``not_applicable`` for every grant order case at another cap).
``agree`` is the kernel without a fault.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

from oracle.conformance.implementations import (
    Implementation,
    NotApplicableError,
    from_callables,
)
from oracle.conformance.kernel_server import serve
from policy import (
    apply_event,
    backlog_admits,
    next_grant_index,
    slice_grant_expired,
    take_next_grantee,
)
from policy.waiting import attempt_admission, select_waiting
from tests.oracle.conformance import broken


def _cap_2_only(take: Callable[..., Any]) -> Callable[..., Any]:
    def fixed(backlog: Any, skip_cap: int) -> Any:
        if skip_cap != 2:
            raise NotApplicableError(f"skip cap {skip_cap}: this scheduler's cap is 2")
        return take(backlog, skip_cap)

    return fixed


def _implementation(fault: str) -> Implementation:
    if fault == "cap-2-only":
        return from_callables(
            next_grant_index=_cap_2_only(next_grant_index),
            take_next_grantee=_cap_2_only(take_next_grantee),
        )
    return from_callables(
        slice_grant_expired=broken.expiry_strict
        if fault == "expiry-strict"
        else slice_grant_expired,
        backlog_admits=backlog_admits,
        next_grant_index=next_grant_index,
        take_next_grantee=take_next_grantee,
        backlog_append=lambda backlog, entry: backlog.append(entry),
        apply_event=broken.declined_ignored if fault == "declined-ignored" else apply_event,
        select_waiting=broken.later_entry_on_ties if fault == "ties-later" else select_waiting,
        attempt_admission=attempt_admission,
    )


class _Faulty:
    """stdout's buffer, with a fault at one answer line."""

    def __init__(self, fault: str) -> None:
        kind, _, at = fault.partition(":")
        self.kind = kind
        self.at = int(at) if at else -1
        self.lines = 0
        self.out = sys.stdout.buffer

    def write(self, data: bytes, /) -> object:
        line, self.lines = self.lines, self.lines + 1
        message = json.loads(data)
        if line == 0 and self.kind == "no-decisions":
            message["answer"]["decisions"] = []
        if line > 0 and self.kind == "nothing-applies":
            message = {"id": message["id"], "not_applicable": "nothing applies here"}
        if line == 0 and self.kind == "misspelt":
            message["answer"]["decisions"].append("slice_grant_expried")
        if line == 0 and self.kind == "protocol-2":
            message["answer"]["protocol"] = 2
        if line == self.at:
            if self.kind == "not-json":
                data = b"this is not JSON\n"
            elif self.kind == "wrong-id":
                message["id"] += 1
            elif self.kind == "malformed":
                message["answer"] = "yes"
            elif self.kind == "exit":
                sys.stderr.write("foreign: out of patience\n")
                sys.stderr.flush()
                sys.exit(3)
            elif self.kind == "hang":
                self.out.flush()
                time.sleep(600)
        if data != b"this is not JSON\n":
            data = json.dumps(message).encode() + b"\n"
        return self.out.write(data)

    def flush(self) -> object:
        self.out.flush()
        return None


def main(fault: str) -> int:
    return serve(_implementation(fault), sys.stdin.buffer, _Faulty(fault))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "agree"))
