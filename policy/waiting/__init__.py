"""Waiting selection on the admission clock (see docs/waiting.md).

Read in this order: the policy language (``expr``, ``parse``, ``evaluate``,
``numbers``, ``tree_json``, ``document``, ``queue_policy``, ``policies``);
selection as defined (``reference``: ``select_reference``); the waiting queue
(``entry``, ``queue``); selection as computed (``select``). The fast layer
(``fast``: compiled keys, the selection paths' indexes, the persistent line)
sits behind one interface and is proven equal to the definition.
"""

from policy.identity import RequestId
from policy.waiting.document import (
    FORMAT,
    VERSION,
    dump_policy,
    dump_policy_text,
    load_policy,
    load_policy_text,
)
from policy.waiting.entry import AttributeView, WaitingEntry, make_entry, same_entry
from policy.waiting.errors import PolicyError
from policy.waiting.evaluate import Scope, divide, evaluate, is_true, key_list_order, order_key
from policy.waiting.expr import (
    MAX_NODES,
    Attr,
    Binary,
    Bool,
    BudgetLeft,
    Call,
    Cond,
    Const,
    Expr,
    Num,
    TreeTooLarge,
    Unary,
    Var,
)
from policy.waiting.fast import selection_path
from policy.waiting.modes import Timing, Visibility
from policy.waiting.parse import MAX_DEPTH, is_stage_name, nesting, parse_expression, unparse
from policy.waiting.policies import ascend_fcfs_lanes, fifo, static_priority, vllm_priority
from policy.waiting.queue import QueueError, WaitingQueue
from policy.waiting.queue_policy import MAX_NAMES, QueuePolicy, make_policy
from policy.waiting.reference import (
    Moment,
    Selection,
    entry_keys,
    keys_at_enqueue,
    select_reference,
)
from policy.waiting.select import (
    AdmissionOutcome,
    Admitted,
    Blocked,
    PassOutcome,
    QueueEmpty,
    admit_many,
    attempt_admission,
    dispatch_order,
    dispatched_at,
    select_waiting,
)
from policy.waiting.tree_json import expr_from_json, expr_to_json

__all__ = [
    "FORMAT",
    "MAX_DEPTH",
    "MAX_NAMES",
    "MAX_NODES",
    "VERSION",
    "AdmissionOutcome",
    "Admitted",
    "Attr",
    "AttributeView",
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
    "PassOutcome",
    "PolicyError",
    "QueueEmpty",
    "QueueError",
    "QueuePolicy",
    "RequestId",
    "Scope",
    "Selection",
    "Timing",
    "TreeTooLarge",
    "Unary",
    "Var",
    "Visibility",
    "WaitingEntry",
    "WaitingQueue",
    "admit_many",
    "ascend_fcfs_lanes",
    "attempt_admission",
    "dispatch_order",
    "dispatched_at",
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
    "make_entry",
    "make_policy",
    "nesting",
    "order_key",
    "parse_expression",
    "same_entry",
    "select_reference",
    "select_waiting",
    "selection_path",
    "static_priority",
    "unparse",
    "vllm_priority",
]
