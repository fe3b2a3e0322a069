"""The fast kernel against its plain definitions, as ``policy-kernel verify`` checks.

The kernel selects with compiled keys and per-policy paths (docs/performance.md);
the executable spec is compared with the plain definitions (the tree evaluator,
``select_reference``) by the other checks. These three close the loop:

- ``compiled keys``: compiled code equals the tree evaluator bit for bit on every
  small tree at every point of a small domain (:mod:`oracle.checks.compiled_keys`);
- ``lane analysis``: every key the analysis puts on the lane path keeps its
  contract on a grid (:mod:`oracle.checks.lanes`);
- ``selection paths``: selection, the dispatch order (whole, and at each
  position by ``dispatched_at``) and the admission pass equal the plain
  definition on every small queue (:mod:`oracle.checks.fast_paths`).

Their counterexamples are summaries (no scenario file): the plain definition
they are measured against is itself checked against the spec, and replaying a
scenario on the fast kernel shows the fault too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

from oracle.checks import compiled_keys, fast_paths, lanes
from oracle.checks.framework import Check, Counterexample, Level, Partial

_COMPILED_SIZES: Mapping[Level, int] = {"quick": 3, "default": 4, "deep": 4}
_LANE_SIZES: Mapping[Level, int] = {"quick": 3, "default": 4, "deep": 5}
#: Size-5 lane trees are many (708,488): the deep run spreads them over this many units.
_LANE_SHARDS = 24
_PATH_ENTRIES: Mapping[Level, int] = {"quick": 2, "default": 3, "deep": 4}


def _summary(check: str, size: int, what: str) -> Counterexample:
    return Counterexample(check, size, f"{check}, not replayable: {what}", {})


# ----------------------------------------------------------------------------- compiled keys


def _compiled_units(level: Level) -> Sequence[object]:
    return tuple(range(1, _COMPILED_SIZES[level] + 1))


def _compiled_run(level: Level, unit: object) -> Partial:
    del level
    assert isinstance(unit, int)
    found = Partial()
    for tree in compiled_keys.trees(unit):
        found.count("trees")
        mismatch = compiled_keys.disagreement(tree)
        if mismatch is not None:
            found.disagree(partial(_summary, "compiled keys", unit, str(mismatch)), unit)
    return found


COMPILED_KEYS = Check(
    name="compiled keys",
    description="compiled key code against the tree evaluator, every small tree and point",
    bounds=lambda level: {
        "trees": f"every tree of 1..{_COMPILED_SIZES[level]} nodes ({compiled_keys.GRAMMAR})",
        "points": compiled_keys.DOMAIN,
    },
    units=_compiled_units,
    run=_compiled_run,
    weight=2,
)


# ----------------------------------------------------------------------------- lane analysis


def _lane_units(level: Level) -> Sequence[object]:
    largest = _LANE_SIZES[level]
    units: list[object] = [(1, min(largest, 4), 0, 1)]
    if largest >= 5:
        units.extend((5, 5, part, _LANE_SHARDS) for part in range(_LANE_SHARDS))
    return tuple(units)


def _lane_run(level: Level, unit: object) -> Partial:
    del level
    assert isinstance(unit, tuple)
    smallest, largest, part, parts = unit
    run = lanes.run_lane_check(min_size=smallest, max_size=largest, shard=(part, parts))
    found = Partial()
    found.count("trees", run.trees)
    found.count("accepted for the lane path", run.accepted)
    found.count("evaluations", run.evaluations)
    for counterexample in run.counterexamples:
        size = counterexample.size
        found.disagree(partial(_summary, "lane analysis", size, str(counterexample)), size)
    return found


LANE_ANALYSIS = Check(
    name="lane analysis",
    description="each key put on the lane path keeps the lane contract on a grid",
    bounds=lambda level: {
        "trees": f"every tree of 1..{_LANE_SIZES[level]} nodes (oracle/checks/lanes.py)",
        "grid": "attribute values, waited, now and budgets as in oracle/checks/lanes.py",
    },
    units=_lane_units,
    run=_lane_run,
    weight=2,
)


# ----------------------------------------------------------------------------- selection paths


def _path_units(level: Level) -> Sequence[object]:
    del level
    return tuple(name for name, _ in fast_paths.policies_checked())


def _path_run(level: Level, unit: object) -> Partial:
    chosen = [(name, policy) for name, policy in fast_paths.policies_checked() if name == unit]
    entries = _PATH_ENTRIES[level]
    found = Partial()
    choices = len(fast_paths.ENTRY_CHOICES)
    found.count("queues", sum(choices**size for size in range(1, entries + 1)))
    for mismatch in fast_paths.check_paths(chosen, max_entries=entries):
        size = len(mismatch.choices)
        found.disagree(partial(_summary, "selection paths", size, str(mismatch)), size)
    return found


SELECTION_PATHS = Check(
    name="selection paths",
    description=(
        "fast selection, dispatch order (and dispatched_at) and admission pass"
        " against the plain definition"
    ),
    bounds=lambda level: {
        "queues": f"every queue of 1..{_PATH_ENTRIES[level]} entries over"
        f" {len(fast_paths.ENTRY_CHOICES)} entry choices, built in every order",
        "moments": ", ".join(str(now) for now in fast_paths.MOMENTS),
        "policies": ", ".join(name for name, _ in fast_paths.policies_checked()),
    },
    units=_path_units,
    run=_path_run,
    weight=3,
)
