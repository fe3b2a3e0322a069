"""The state-only invariants of rotation.md, as readable sentences.

rotation.md, "Invariants (every state, every tick)". Those that a single state can
show are checked here:

- "at most one active job": structural (``State.active`` is one ``Job`` or None);
- "the backlog holds ... at most BACKLOG_CAP + 1 [entries] between a park and the
  next promotion" — the bound that holds in every state;
- "live speculative sessions (active + parked + waiting) never exceed 3";
- no request is live twice (holder and backlog together): part of "every request
  ends exactly once ... none duplicated";
- skip counts are bounded. rotation.md states no bound on a count itself; its
  "a lower-lane entry is chosen at the latest at decision skip_cap + 1" is for the
  oldest entry, and docs/rotation.md extends it: 'an entry with k entries ahead of
  it ... is granted within skip_cap + 1 + k decisions'. So a count never exceeds
  skip_cap + k, and k is at most BACKLOG_CAP (the others of at most BACKLOG_CAP + 1
  entries). The tighter "skipped <= skip_cap" does NOT hold in every state: with a
  high-lane holder that parks after each slice and two normal-lane waiters, the
  waiters reach 2 skips together, the first is granted and the second has 3.

The others are per-transition and are checked by the caller:

- "at most one model action per tick (a round or a slice 0)";
- "the backlog holds at most BACKLOG_CAP entries after any admission";
- "an uncontended job never parks";
- "every request ends exactly once: completed, cancelled, aborted, routed to
  classic, or classic fallback — none lost, none duplicated";
- "rotation never changes what a job produces" (stream parity).
"""

from __future__ import annotations

from collections import Counter

from oracle.spec.grant_order import BACKLOG_CAP
from oracle.spec.protocol import State, live_requests

# "live speculative sessions (active + parked + waiting) never exceed 3"
MAX_LIVE_SESSIONS = 3


def invariant_violations(state: State) -> list[str]:
    """Every state-only invariant that ``state`` breaks, each as a sentence.

    >>> from oracle.spec.grant_order import SpecEntry
    >>> from oracle.spec.protocol import Job
    >>> invariant_violations(State())
    []
    >>> crowded = State(
    ...     active=Job("A", 1, 0, 2, None),
    ...     backlog=tuple(SpecEntry(r, 1, parked=False) for r in "BCDA"),
    ... )
    >>> for sentence in invariant_violations(crowded):
    ...     print(sentence)
    the backlog holds 4 entries, more than BACKLOG_CAP + 1 = 3
    5 live speculative sessions (active + parked + waiting), more than 3
    request 'A' is live 2 times (holder first, then backlog order: A, B, C, D, A)
    >>> invariant_violations(State(backlog=(SpecEntry("B", 1, parked=False, skipped=5),)))
    ["backlog entry 'B' has been skipped 5 times, more than skip_cap + BACKLOG_CAP = 4"]
    """
    violations: list[str] = []
    backlog_len = len(state.backlog)
    if backlog_len > BACKLOG_CAP + 1:
        violations.append(
            f"the backlog holds {backlog_len} entries, "
            f"more than BACKLOG_CAP + 1 = {BACKLOG_CAP + 1}"
        )
    live = live_requests(state)
    if len(live) > MAX_LIVE_SESSIONS:
        violations.append(
            f"{len(live)} live speculative sessions (active + parked + waiting), "
            f"more than {MAX_LIVE_SESSIONS}"
        )
    for entry in state.backlog:
        if entry.skipped < 0:
            violations.append(f"backlog entry {entry.request!r} has a negative skip count")
        if entry.skipped > state.skip_cap + BACKLOG_CAP:
            violations.append(
                f"backlog entry {entry.request!r} has been skipped {entry.skipped} times, "
                f"more than skip_cap + BACKLOG_CAP = {state.skip_cap + BACKLOG_CAP}"
            )
    counts = Counter(live)
    for request, count in counts.items():
        if count > 1:
            order = ", ".join(str(r) for r in live)
            violations.append(
                f"request {request!r} is live {count} times "
                f"(holder first, then backlog order: {order})"
            )
    return violations
