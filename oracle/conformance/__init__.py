"""The conformance kit: the oracle's checks, run against another scheduler's decisions.

A scheduler that keeps its own implementation of a decision (in Python, or in
any language) runs the oracle's exhaustive checks (and, with ``hypothesis``,
its property checks) against it; the executable spec (:mod:`oracle.spec`) is
the reference, and the domains are the oracle's own (:mod:`oracle.checks`).
The decisions: the grant expiry, the backlog cap, the alternation, the budget
setting and lane header readers, the grant order with its skip accounting, the
tick protocol (a step function over the event types), selection and one
admission attempt. docs/conformance.md has the whole story
and a complete example.

- Checks (:mod:`oracle.conformance.checks`): :func:`check_grant_expiry`,
  :func:`check_backlog_cap`, :func:`check_grant_order`, :func:`check_tick_protocol`,
  :func:`check_selection`, :func:`check_admission_attempt`, each taking a callable
  with the kernel's signature or an :class:`Implementation`, and bounds (a level,
  or :class:`NumberBounds`, :class:`GrantOrderBounds`, :class:`ProtocolBounds`,
  :class:`SelectionBounds`); :func:`run_conformance` runs them all.
- Property checks (:mod:`oracle.conformance.properties`, needs ``hypothesis``):
  ``property_check_tick_protocol``, ``property_check_grant_order``,
  ``property_check_selection``.
- Reports: :class:`ConformanceReport` (cases run, bounds, disagreements) and
  :class:`Disagreement` (the request, the spec's answer and the implementation's).
- Implementations (:mod:`oracle.conformance.implementations`): :func:`from_callables`,
  :func:`from_handlers` (functions of the protocol's JSON), :class:`CommandImplementation`
  (a process speaking JSON lines), :func:`kernel_implementation`.
- Pytest helpers (:mod:`oracle.conformance.testing`): :func:`assert_conforms`,
  :func:`assert_disagrees`.
- The command line: :func:`verify_against_command` (``policy-kernel verify
  --against-command CMD``); the kernel as a protocol server:
  ``python -m oracle.conformance.kernel_server``.

>>> from policy import slice_grant_expired
>>> report = check_grant_expiry(slice_grant_expired, bounds="quick")
>>> report.verdict, report.cases
('PASS', 578)
"""

from oracle.conformance.bounds import (
    EDGE_VALUES,
    BoundsChoice,
    FlagBounds,
    GrantOrderBounds,
    HeaderBounds,
    NumberBounds,
    ProtocolBounds,
    SelectionBounds,
    SettingBounds,
)
from oracle.conformance.checks import (
    CHECKS,
    check_admission_attempt,
    check_alternation,
    check_backlog_cap,
    check_budget_setting,
    check_grant_expiry,
    check_grant_order,
    check_lane_header,
    check_selection,
    check_tick_protocol,
    run_conformance,
)
from oracle.conformance.command import CommandImplementation, verify_against_command
from oracle.conformance.decisions import DECISIONS, PROTOCOL_VERSION
from oracle.conformance.implementations import (
    Alternation,
    ApplyEvent,
    AttemptAdmission,
    BacklogAppend,
    BacklogCap,
    BudgetSetting,
    Failed,
    GrantExpiry,
    Handler,
    Implementation,
    ImplementationBroken,
    LaneHeader,
    NextGrantIndex,
    NotApplicable,
    NotApplicableError,
    SelectWaiting,
    TakeNextGrantee,
    from_callables,
    from_handlers,
    kernel_implementation,
)
from oracle.conformance.report import ConformanceReport, Disagreement
from oracle.conformance.testing import assert_conforms, assert_disagrees

__all__ = [
    "CHECKS",
    "DECISIONS",
    "EDGE_VALUES",
    "PROTOCOL_VERSION",
    "Alternation",
    "ApplyEvent",
    "AttemptAdmission",
    "BacklogAppend",
    "BacklogCap",
    "BoundsChoice",
    "BudgetSetting",
    "CommandImplementation",
    "ConformanceReport",
    "Disagreement",
    "Failed",
    "FlagBounds",
    "GrantExpiry",
    "GrantOrderBounds",
    "Handler",
    "HeaderBounds",
    "Implementation",
    "ImplementationBroken",
    "LaneHeader",
    "NextGrantIndex",
    "NotApplicable",
    "NotApplicableError",
    "NumberBounds",
    "ProtocolBounds",
    "SelectWaiting",
    "SelectionBounds",
    "SettingBounds",
    "TakeNextGrantee",
    "assert_conforms",
    "assert_disagrees",
    "check_admission_attempt",
    "check_alternation",
    "check_backlog_cap",
    "check_budget_setting",
    "check_grant_expiry",
    "check_grant_order",
    "check_lane_header",
    "check_selection",
    "check_tick_protocol",
    "from_callables",
    "from_handlers",
    "kernel_implementation",
    "run_conformance",
    "verify_against_command",
]
