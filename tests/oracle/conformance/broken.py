"""Deliberately broken implementations of each decision, for the kit to catch.

Each wraps the kernel and changes one rule, as ``tests/mutants.py`` breaks the
kernel's source; the tests check that the kit finds each with a counterexample
that shows the rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyrsistent import pvector
from returns.maybe import Maybe, Nothing, Some
from returns.result import Result

from policy import (
    BacklogEntry,
    Event,
    GrantBacklog,
    Lane,
    ProtocolError,
    RotationState,
    Step,
    Tick,
    apply_event,
    take_next_grantee,
)
from policy.waiting import (
    AdmissionOutcome,
    Admitted,
    Blocked,
    Moment,
    QueueEmpty,
    QueuePolicy,
    Selection,
    WaitingEntry,
    WaitingQueue,
    dispatch_order,
    entry_keys,
    key_list_order,
    select_waiting,
)


def expiry_strict(slices_in_grant: int, budget: int, backlog_pending: bool) -> bool:
    """Expiry with ``>`` for ``>=``: a holder runs one slice too many."""
    return budget > 0 and backlog_pending and slices_in_grant > budget


def backlog_one_more(backlog_len: int, budget: int) -> bool:
    """The backlog admits one entry more than its cap."""
    return budget > 0 and backlog_len <= 2


def alternation_ignored(yielded: bool, others_have_work: bool) -> bool:
    """Speculation takes every tick: classic work never gets one."""
    del yielded, others_have_work
    return True


def budget_read_by_isdigit(raw: str | None) -> int:
    """``str.isdigit`` and ``int()``: Unicode digits (U+0663, U+FF11) read as a budget."""
    text = "" if raw is None else raw.strip()
    return int(text) if text.isdigit() else 8


def lane_trimmed_of_ascii_only(header: str | None) -> Lane:
    """Trims ASCII white space only: a lane wrapped in U+3000 is unknown, so normal."""
    lanes = {lane.label: lane for lane in Lane}
    return Lane.NORMAL if header is None else lanes.get(header.strip(" \t\n").lower(), Lane.NORMAL)


def lowest_lane_first(entries: Sequence[tuple[Lane, int]], skip_cap: int) -> Maybe[int]:
    """The lane order flipped (the lowest lane wins); the skip rule kept."""
    if not entries:
        return Nothing
    most = max(range(len(entries)), key=lambda i: (entries[i][1], -i))
    if entries[most][1] >= skip_cap:
        return Some(most)
    return Some(min(range(len(entries)), key=lambda i: (entries[i][0], i)))


def no_skip_increment(
    backlog: GrantBacklog, skip_cap: int
) -> Maybe[tuple[BacklogEntry, GrantBacklog]]:
    """The grantee is chosen right, but the others' skip counts do not grow."""
    taken = take_next_grantee(backlog, skip_cap).value_or(None)
    if taken is None:
        return Nothing
    chosen, _ = taken
    rest = [entry for entry in backlog if entry.request != chosen.request]
    return Some((chosen, GrantBacklog(pvector(rest))))


def append_keeps_skips(backlog: GrantBacklog, entry: BacklogEntry) -> GrantBacklog:
    """Re-entry keeps the entry's skip count (it must restart at 0)."""
    return GrantBacklog(backlog.entries.append(entry))


def declined_ignored(state: RotationState, event: Event) -> Result[Step, ProtocolError]:
    """The host's declined verdict is ignored: a declined waiter is granted anyway."""
    if isinstance(event, Tick):
        event = Tick(event.budget, event.classic_work, frozenset())
    return apply_event(state, event)


def raising_on_cancel(state: RotationState, event: Event) -> Result[Step, ProtocolError]:
    """Crashes on every cancel."""
    if type(event).__name__ == "Cancel":
        raise RuntimeError("cancel not supported")
    return apply_event(state, event)


def later_entry_on_ties(
    queue: WaitingQueue, policy: QueuePolicy, moment: Moment
) -> Maybe[Selection]:
    """Ties on equal keys go to the later entry (they must go to the earlier)."""
    if not len(queue) or queue.entries[0].resumed or policy.is_fifo:
        return select_waiting(queue, policy, moment)
    keyed = [(entry_keys(policy, entry, moment), i) for i, entry in enumerate(queue.entries)]
    keys, index = min(keyed, key=lambda item: (key_list_order(item[0]), -item[1]))
    return Some(Selection(queue.entries[index], keys, queue))


def resumed_front_ignored(
    queue: WaitingQueue, policy: QueuePolicy, moment: Moment
) -> Maybe[Selection]:
    """A resumed front entry is ranked by its keys like any other."""
    if not len(queue) or policy.is_fifo:
        return select_waiting(queue, policy, moment)
    keyed = [(entry_keys(policy, entry, moment), i) for i, entry in enumerate(queue.entries)]
    keys, index = min(keyed, key=lambda item: (key_list_order(item[0]), item[1]))
    return Some(Selection(queue.entries[index], keys, queue))


def fit_first(
    queue: WaitingQueue,
    policy: QueuePolicy,
    moment: Moment,
    fits: Callable[[WaitingEntry], bool],
) -> AdmissionOutcome:
    """Fit-first skipping: admits the first entry in dispatch order that fits."""
    order = list(dispatch_order(queue, policy, moment))
    if not order:
        return QueueEmpty()
    for selection in order:
        if fits(selection.entry):
            rest = queue.remove(selection.entry.identity).unwrap()
            return Admitted(Selection(selection.entry, selection.keys, queue), rest)
    return Blocked(Selection(order[0].entry, order[0].keys, queue), queue)
