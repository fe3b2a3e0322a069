"""Speculative slot rotation (see docs/rotation.md).

:mod:`policy.rotation.lanes` (priority lanes), :mod:`policy.rotation.decisions`
(the constants and the pure decisions, one function per rule),
:mod:`policy.rotation.backlog` (the grant backlog and its skip accounting) and
:mod:`policy.rotation.protocol` (the tick state machine: every transition rule
in one file). Every public name of the four is importable from here.
"""

from policy.rotation.backlog import BacklogEntry, EntryKind, GrantBacklog, take_next_grantee
from policy.rotation.decisions import (
    BACKLOG_CAP,
    DEFAULT_GRANT_ROUNDS,
    SKIP_CAP,
    backlog_admits,
    next_grant_index,
    parse_grant_rounds,
    slice_grant_expired,
    slice_takes_tick,
)
from policy.rotation.lanes import Lane, parse_lane
from policy.rotation.protocol import (
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
    RulesProfile,
    SliceKind,
    Step,
    Tick,
    TickUse,
    apply_event,
    initial_state,
    live_requests,
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
    "RotationState",
    "RoundResult",
    "RulesProfile",
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
