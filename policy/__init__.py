"""serving-policy-kernel: pure decisions for LLM-serving schedulers.

Speculative slot rotation, exported here: :mod:`policy.rotation` (the pure
decisions), :mod:`policy.backlog` (the grant backlog), :mod:`policy.protocol`
(the tick state machine). Waiting selection on the admission clock:
:mod:`policy.waiting` (the queue policy language, the waiting queue,
``select_waiting`` and one admission attempt). Nothing in this package does
I/O or reads hidden inputs.
"""

from policy.backlog import BacklogEntry, EntryKind, GrantBacklog, take_next_grantee
from policy.identity import RequestId
from policy.lanes import Lane, parse_lane
from policy.protocol import (
    ActiveJob,
    Arrival,
    Branch,
    Cancel,
    Ended,
    Ending,
    Event,
    GrantEnd,
    ModelAction,
    Outcome,
    ProtocolError,
    ProtocolErrorKind,
    RotationState,
    RoundResult,
    SliceKind,
    Step,
    Tick,
    TickUse,
    apply_event,
    initial_state,
    live_requests,
)
from policy.rotation import (
    BACKLOG_CAP,
    DEFAULT_GRANT_ROUNDS,
    SKIP_CAP,
    backlog_admits,
    next_grant_index,
    parse_grant_rounds,
    slice_grant_expired,
    slice_takes_tick,
)

__all__ = [
    "BACKLOG_CAP",
    "DEFAULT_GRANT_ROUNDS",
    "SKIP_CAP",
    "ActiveJob",
    "Arrival",
    "BacklogEntry",
    "Branch",
    "Cancel",
    "Ended",
    "Ending",
    "EntryKind",
    "Event",
    "GrantBacklog",
    "GrantEnd",
    "Lane",
    "ModelAction",
    "Outcome",
    "ProtocolError",
    "ProtocolErrorKind",
    "RequestId",
    "RotationState",
    "RoundResult",
    "SliceKind",
    "Step",
    "Tick",
    "TickUse",
    "apply_event",
    "backlog_admits",
    "initial_state",
    "live_requests",
    "next_grant_index",
    "parse_grant_rounds",
    "parse_lane",
    "slice_grant_expired",
    "slice_takes_tick",
    "take_next_grantee",
]
