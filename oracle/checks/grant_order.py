"""Exhaustive check of the grant order and the skip accounting.

Every backlog of length 0..``L`` over the three lanes, each entry with a skip
count 0..``S``, under every skip cap 1..3: ``next_grant_index`` and
``take_next_grantee`` of the kernel against the spec's sort and its sentence
("EVERY other entry's skipped grows by one"), and ``GrantBacklog.append`` of an
entry with skips against "goes to the back with skipped = 0".

These disagreements have no replayable scenario: a backlog with arbitrary skip
counts is not a state a scenario can name, and the protocol never appends an
entry that has skips (so a kernel whose append kept them would be wrong only
for a host using the backlog directly). The rotation model check reaches the
same decisions through the protocol, with scenarios.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from functools import partial

from pyrsistent import pvector

from oracle.checks.convert import spec_entry
from oracle.checks.framework import Check, Counterexample, Level, Partial
from oracle.spec import grant_order as spec
from policy import BacklogEntry, EntryKind, GrantBacklog, Lane, next_grant_index, take_next_grantee

__all__ = ["DOMAIN", "GRANT_ORDER", "SKIP_CAPS"]

#: level -> (longest backlog, largest skip count)
DOMAIN: Mapping[Level, tuple[int, int]] = {"quick": (3, 4), "default": (4, 4), "deep": (5, 5)}
#: the skip caps every backlog is checked under
SKIP_CAPS = (1, 2, 3)


def _bounds(level: Level) -> Mapping[str, str]:
    longest, skips = DOMAIN[level]
    return {
        "backlog length": f"0..{longest}",
        "lanes": "low, normal, high",
        "skip counts": f"0..{skips}",
        "skip caps": "1..3",
        "entry kinds": "waiter, parked (alternating by position)",
    }


def _units(level: Level) -> Sequence[object]:
    longest, _ = DOMAIN[level]
    return [(cap, length) for cap in SKIP_CAPS for length in range(longest + 1)]


def _describe(entries: Sequence[tuple[Lane, int]], cap: int) -> str:
    shown = ", ".join(f"({lane.label}, {skipped})" for lane, skipped in entries)
    return f"backlog [{shown}] at skip cap {cap}"


def _run(level: Level, unit: object) -> Partial:
    assert isinstance(unit, tuple)
    cap, length = unit
    _, skips = DOMAIN[level]
    found = Partial()
    cells = [(lane, skipped) for lane in Lane for skipped in range(skips + 1)]
    # Every entry a backlog of this unit can hold, built once (kernel and spec side).
    kernel_cells = [
        [
            BacklogEntry(f"R{i}", lane, EntryKind.PARKED if i % 2 else EntryKind.WAITER, s)
            for lane, s in cells
        ]
        for i in range(length)
    ]
    spec_cells = [[spec_entry(entry) for entry in row] for row in kernel_cells]
    joining = BacklogEntry("J", Lane.LOW, EntryKind.PARKED, skipped=length + 1)
    for chosen in itertools.product(range(len(cells)), repeat=length):
        found.count("backlogs")
        entries = [cells[c] for c in chosen]
        backlog = GrantBacklog(pvector(kernel_cells[i][c] for i, c in enumerate(chosen)))
        spec_backlog = tuple(spec_cells[i][c] for i, c in enumerate(chosen))
        spec_index = spec.next_grant_index([(int(lane), s) for lane, s in entries], cap)
        spec_taken = spec.take_next_grantee(spec_backlog, cap)
        # Re-entry at the back with its count reset, for an entry with skips to lose.
        spec_joined = spec.re_enter(spec_backlog, spec_entry(joining))
        try:
            kernel_index = next_grant_index(entries, cap).value_or(None)
            kernel_taken = take_next_grantee(backlog, cap).value_or(None)
            kernel_joined = tuple(spec_entry(e) for e in backlog.append(joining))
        except Exception as error:  # the decisions never raise: that is a finding too
            summary = f"grant order: {_describe(entries, cap)}: kernel raised {error!r}"
            found.disagree(partial(Counterexample, "grant order", length, summary, {}), length)
            continue
        kernel_as_spec = (
            None
            if kernel_taken is None
            else (spec_entry(kernel_taken[0]), tuple(spec_entry(e) for e in kernel_taken[1]))
        )
        if kernel_joined != spec_joined:
            summary = f"grant order: {_describe(entries, cap)}: append keeps a skip count"
            found.disagree(partial(Counterexample, "grant order", length, summary, {}), length)
        if kernel_index != spec_index or kernel_as_spec != spec_taken:
            summary = (
                f"grant order: {_describe(entries, cap)}: kernel chose {kernel_index}"
                f" (rest {_rest(kernel_as_spec)}), spec {spec_index} (rest {_rest(spec_taken)})"
            )
            found.disagree(partial(Counterexample, "grant order", length, summary, {}), length)
    return found


def _rest(taken: tuple[spec.SpecEntry, tuple[spec.SpecEntry, ...]] | None) -> str:
    if taken is None:
        return "-"
    return "[" + ", ".join(f"{e.request}:{e.skipped}" for e in taken[1]) + "]"


GRANT_ORDER = Check(
    name="grant order",
    description="next_grant_index and take_next_grantee on every small backlog",
    bounds=_bounds,
    units=_units,
    run=_run,
)
