"""Waiting selection on the admission clock: the policy language, the waiting
queue, ``select_waiting`` and one admission attempt (see docs/waiting.md)."""

from policy.identity import RequestId
from policy.waiting.document import (
    FORMAT,
    VERSION,
    dump_policy,
    dump_policy_text,
    load_policy,
    load_policy_text,
)
from policy.waiting.errors import PolicyError
from policy.waiting.evaluate import Scope, divide, evaluate, is_true, key_list_order, order_key
from policy.waiting.expr import (
    Attr,
    Binary,
    Bool,
    BudgetLeft,
    Call,
    Cond,
    Const,
    Expr,
    Num,
    Unary,
    Var,
)
from policy.waiting.parse import MAX_DEPTH, is_stage_name, nesting, parse_expression, unparse
from policy.waiting.policies import ascend_fcfs_lanes, fifo, static_priority
from policy.waiting.queue import (
    QueueError,
    WaitingEntry,
    WaitingQueue,
    keys_at_enqueue,
)
from policy.waiting.queue_policy import QueuePolicy, Timing, Visibility, make_policy
from policy.waiting.select import (
    AdmissionOutcome,
    Admitted,
    Blocked,
    Moment,
    QueueEmpty,
    Selection,
    attempt_admission,
    entry_keys,
    select_waiting,
)
from policy.waiting.tree_json import expr_from_json, expr_to_json

__all__ = [
    "FORMAT",
    "MAX_DEPTH",
    "VERSION",
    "AdmissionOutcome",
    "Admitted",
    "Attr",
    "Binary",
    "Blocked",
    "Bool",
    "BudgetLeft",
    "Call",
    "Cond",
    "Const",
    "Expr",
    "Moment",
    "Num",
    "PolicyError",
    "QueueEmpty",
    "QueueError",
    "QueuePolicy",
    "RequestId",
    "Scope",
    "Selection",
    "Timing",
    "Unary",
    "Var",
    "Visibility",
    "WaitingEntry",
    "WaitingQueue",
    "ascend_fcfs_lanes",
    "attempt_admission",
    "divide",
    "dump_policy",
    "dump_policy_text",
    "entry_keys",
    "evaluate",
    "expr_from_json",
    "expr_to_json",
    "fifo",
    "is_stage_name",
    "is_true",
    "key_list_order",
    "keys_at_enqueue",
    "load_policy",
    "load_policy_text",
    "make_policy",
    "nesting",
    "order_key",
    "parse_expression",
    "select_waiting",
    "static_priority",
    "unparse",
]
