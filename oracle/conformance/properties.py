"""Property checks: random inputs far beyond the exhaustive bounds, shrunk to the
smallest disagreement (needs ``hypothesis``, a test dependency).

Each check draws inputs with the oracle's public strategies (:mod:`oracle.strategies`),
asks the implementation and the spec, and searches with :func:`hypothesis.find`
for an input on which they disagree; a disagreement found is shrunk to a
smallest one, which the report shows. The inputs are those of
``tests/oracle/spec/test_differential.py``:

- tick protocol: runs of up to ``max_events`` random events (legal or not, over
  five request ids, budgets -1..4, declined subsets) at skip caps 1..3, every
  step asked from the spec's state before it;
- grant order: backlogs of up to 8 entries with any lanes, kinds, skip counts
  0..4 and cancel marks (states the protocol never reaches, too), skip caps 1..4;
- selection: random policies (key trees of the whole language, both timings,
  FIFO), queues of up to ``max_entries`` entries with awkward numbers, moments
  with any clock and budgets, and a random set of fitting entries.

A report's ``cases`` (and ``counts["requests"]``) counts the requests compared,
``counts["not applicable"]`` those answered not applicable, ``counts["examples"]``
the inputs tried, shrinking included; ``disagreements`` counts the disagreeing
requests of the smallest failing input. A search that compared no request is
``SKIPPED``, never ``PASS``; no example (``examples=0``) or runs of no event is a
``ValueError``.

>>> from policy import backlog_admits, take_next_grantee
>>> property_check_grant_order(take_next_grantee, examples=20).passed
True
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from oracle.checks.convert import spec_entry, spec_event, spec_policy, spec_queue_entry
from oracle.checks.observe import LANE_LABELS, events_scenario, spec_observation
from oracle.conformance.cases import Case, admission_json, backlog_text
from oracle.conformance.checks import judge, run_cases
from oracle.conformance.decisions import key_value_json
from oracle.conformance.implementations import (
    ApplyEvent,
    AttemptAdmission,
    BacklogAppend,
    Implementation,
    NextGrantIndex,
    NotApplicable,
    SelectWaiting,
    TakeNextGrantee,
    as_implementation,
)
from oracle.conformance.report import ConformanceReport
from oracle.conformance.wire import (
    JSON,
    backlog_json,
    entry_json,
    mapping_json,
    number_json,
    queue_json,
    state_json,
    taken_json,
)
from oracle.harness.rotation_events import event_json, event_text
from oracle.spec import grant_order as spec_order
from oracle.spec import protocol as spec
from oracle.spec import selection as spec_selection
from oracle.strategies import backlogs, moments, queue_policies, rotation_events, waiting_queues
from policy import BacklogEntry, EntryKind, Event, GrantBacklog, Lane, RulesProfile
from policy.text import shown
from policy.waiting import Moment, QueuePolicy, WaitingQueue, dump_policy, expr_to_json

__all__ = [
    "property_check_grant_order",
    "property_check_selection",
    "property_check_tick_protocol",
]

#: Requests of one input asked at once (a long run stops at the first chunk that disagrees).
_CHUNK = 32


def _at_least(name: str, value: object, least: int) -> None:
    """A ``ValueError`` naming the argument unless it is an integer >= ``least``: a
    search of no example, or of runs of no event, would compare nothing."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be an integer >= {least}, not {shown(value)}")


def _search(
    implementation: Implementation,
    decisions: Sequence[str],
    strategy: st.SearchStrategy[object],
    cases_of: Callable[[object], list[Case]],
    *,
    examples: int,
    seed: int | None,
    counts: dict[str, int],
    shrink: Callable[[object, Callable[[object], int | None]], object] | None = None,
) -> list[Case]:
    """The cases of the smallest input found on which the implementation disagrees with
    the spec (none: no disagreement in ``examples`` inputs). Hypothesis shrinks the
    input, or, with ``shrink``, only finds one and ``shrink(example, first)`` makes it
    smaller (``first(example)``: the position of its first disagreeing case, or None)."""
    wanted = frozenset(decisions) & implementation.decisions()

    def asked(example: object) -> list[Case]:
        return [case for case in cases_of(example) if case.decision in wanted]

    def first(example: object) -> int | None:
        counts["examples"] = counts.get("examples", 0) + 1
        cases = asked(example)
        for start in range(0, len(cases), _CHUNK):  # a long run stops at its first chunk off
            chunk = cases[start : start + _CHUNK]
            answers = implementation.answer_many([(case.decision, case.inputs) for case in chunk])
            for offset, (case, answer) in enumerate(zip(chunk, answers, strict=True)):
                # only a compared request counts: a search of "not applicable" compared nothing
                kind = "not applicable" if isinstance(answer, NotApplicable) else "requests"
                counts[kind] = counts.get(kind, 0) + 1
                if judge(implementation, case, answer) is not None:
                    return start + offset
        return None

    if not wanted:
        return []
    chosen = settings(
        max_examples=examples,
        database=None,
        deadline=None,
        derandomize=seed is None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate] if shrink is not None else [Phase.generate, Phase.shrink],
    )
    try:
        found = find(
            strategy,
            lambda example: first(example) is not None,
            settings=chosen,
            random=None if seed is None else random.Random(seed),
        )
    except NoSuchExample:
        return []
    return asked(found if shrink is None else shrink(found, first))


def _report(
    name: str,
    description: str,
    decisions: tuple[str, ...],
    implementation: Implementation,
    *,
    strategy: st.SearchStrategy[object],
    cases_of: Callable[[object], list[Case]],
    examples: int,
    seed: int | None,
    bounds: Mapping[str, str],
    shrink: Callable[[object, Callable[[object], int | None]], object] | None = None,
) -> ConformanceReport:
    """Search (:func:`_search`), then ask the smallest input's cases again through the
    common report."""
    started = time.perf_counter()
    searched: dict[str, int] = {}
    smallest = _search(
        implementation,
        decisions,
        strategy,
        cases_of,
        examples=examples,
        seed=seed,
        counts=searched,
        shrink=shrink,
    )

    def cases(counts: dict[str, int]) -> list[Case]:
        del counts  # the report counts the search's inputs and requests
        return smallest

    report = run_cases(
        name, description, decisions, implementation, cases, bounds, None, "property"
    )
    return replace(
        report,
        cases=searched.get("requests", 0),
        counts=searched,
        seconds=time.perf_counter() - started,
    )


# ----------------------------------------------------------------------------- tick protocol


def _run_events(
    skip_cap: int, events: Sequence[Event], profile: str = spec.SEED_RULES
) -> list[Case]:
    state = spec.initial_state(skip_cap, profile)
    cases = []
    for position, event in enumerate(events):
        result = spec.step(state, spec_event(event))
        path = events[: position + 1]
        cases.append(
            Case(
                "apply_event",
                {"state": state_json(state), "event": event_json(event)},
                spec_observation(result),
                position + 1,
                partial(_step_text, position, skip_cap, profile, event),
                partial(_events_json, path),
                partial(_events_scenario, skip_cap, profile, path),
            )
        )
        if not isinstance(result, str):
            state = result[0]
    return cases


def _step_text(position: int, skip_cap: int, profile: str, event: Event) -> str:
    rules = "" if profile == spec.SEED_RULES else f" ({profile} rules)"
    return f"after {position} events at skip cap {skip_cap}{rules}, {event_text(event)}"


def _events_json(events: Sequence[Event]) -> tuple[JSON, ...]:
    return tuple(event_json(event) for event in events)


def _events_scenario(skip_cap: int, profile: str, events: Sequence[Event]) -> Mapping[str, JSON]:
    return events_scenario(
        f"conformance-property-{len(events)}-events",
        f"tick protocol property check, skip cap {skip_cap}, {profile} rules: the spec's"
        " observation after every event; an implementation disagreed at the last.",
        skip_cap,
        events,
        RulesProfile(profile),
    )


def _shrink_run(example: object, first: Callable[[object], int | None]) -> object:
    """A shorter run that still disagrees: cut after its first disagreement, then drop
    every event whose removal keeps a disagreement, until none can be dropped
    (Hypothesis's own shrinking of long event runs takes minutes)."""
    assert isinstance(example, tuple)
    skip_cap, events = example
    position = first(example)
    assert position is not None
    events = list(events[: position + 1])
    dropped = True
    while dropped:
        dropped = False
        for index in reversed(range(len(events))):
            candidate = events[:index] + events[index + 1 :]
            position = first((skip_cap, candidate))
            if position is not None:
                events = candidate[: position + 1]
                dropped = True
                break
    return (skip_cap, events)


def _protocol_example(example: object, profile: str = spec.SEED_RULES) -> list[Case]:
    assert isinstance(example, tuple)
    skip_cap, events = example
    return _run_events(skip_cap, events, profile)


def property_check_tick_protocol(
    apply_event: Implementation | ApplyEvent,
    *,
    examples: int = 100,
    max_events: int = 100,
    seed: int | None = 0,
    profile: str = spec.SEED_RULES,
) -> ConformanceReport:
    """``apply_event`` along random runs of up to ``max_events`` events, every step asked
    from the spec's state before it (``seed``: None for a fixed derandomized search),
    under the rules ``profile`` (``"seed"`` or ``"mlxcel"``)."""
    _at_least("examples", examples, 1)
    _at_least("max_events", max_events, 1)
    if profile not in spec.PROFILES:
        raise ValueError(
            f"the rules profile is one of {', '.join(spec.PROFILES)}, not {shown(profile)}"
        )
    implementation = as_implementation(apply_event, "apply_event")
    # Run lengths uniform in 0..max_events (a plain list favours short ones), each run a
    # list of exactly that many events, so that shrinking drops events from the end.
    runs = st.integers(0, max_events).flatmap(
        lambda size: st.lists(rotation_events(), min_size=size, max_size=size)
    )
    strategy = st.tuples(st.sampled_from([2, 1, 3]), runs)
    return _report(
        "tick protocol",
        "apply_event along random event runs, every step from the spec's state",
        ("apply_event",),
        implementation,
        strategy=strategy,
        cases_of=partial(_protocol_example, profile=profile),
        examples=examples,
        seed=seed,
        shrink=_shrink_run,
        bounds={
            "examples": str(examples),
            "events per run": f"0..{max_events} (legal or not)",
            "skip caps": "1, 2, 3",
            "rules profile": profile,
            "requests": "A, B, C, D, 4",
            "budgets": "-1..4",
        },
    )


# ------------------------------------------------------------------------------- grant order

_POOL = tuple("ABCDEFGH")


def _grant_example(example: object) -> list[Case]:
    assert isinstance(example, tuple)
    backlog, skip_cap, joining = example
    assert isinstance(backlog, GrantBacklog)
    assert isinstance(joining, BacklogEntry)
    entries = tuple(spec_entry(entry) for entry in backlog)
    listed = backlog_json(entries)
    cells = [(entry.lane, entry.skipped) for entry in entries]
    size = len(entries)
    where = partial(backlog_text, cells, skip_cap)
    taken = spec_order.take_next_grantee(entries, skip_cap)
    joined = spec_order.re_enter(entries, spec_entry(joining))
    return [
        Case(
            "next_grant_index",
            {
                "entries": [{"lane": LANE_LABELS[lane], "skipped": s} for lane, s in cells],
                "skip_cap": skip_cap,
            },
            spec_order.next_grant_index(cells, skip_cap),
            size,
            where,
        ),
        Case(
            "take_next_grantee",
            {"backlog": listed, "skip_cap": skip_cap},
            taken_json(taken),
            size,
            where,
        ),
        Case(
            "backlog_append",
            {"backlog": listed, "entry": entry_json(spec_entry(joining))},
            backlog_json(joined),
            size,
            where,
        ),
    ]


def property_check_grant_order(
    take_next_grantee: Implementation | TakeNextGrantee | None = None,
    *,
    next_grant_index: NextGrantIndex | None = None,
    backlog_append: BacklogAppend | None = None,
    examples: int = 200,
    seed: int | None = 0,
) -> ConformanceReport:
    """The grant order on random backlogs of up to 8 entries (any skip counts and marks)."""
    _at_least("examples", examples, 1)
    implementation = as_implementation(
        take_next_grantee,
        "take_next_grantee",
        next_grant_index=next_grant_index,
        backlog_append=backlog_append,
    )
    joining = st.builds(
        BacklogEntry,
        st.just("J"),
        st.sampled_from(list(Lane)),
        st.sampled_from(list(EntryKind)),
        st.integers(0, 4),
        st.booleans(),
    )
    strategy = st.tuples(backlogs(max_size=8, requests=_POOL), st.integers(1, 4), joining)
    decisions = ("next_grant_index", "take_next_grantee", "backlog_append")
    return _report(
        "grant order",
        "next_grant_index, take_next_grantee and re-entry on random backlogs",
        decisions,
        implementation,
        strategy=strategy,
        cases_of=_grant_example,
        examples=examples,
        seed=seed,
        bounds={
            "examples": str(examples),
            "backlogs": "0..8 entries, any lane, kind, skip count 0..4 and cancel mark",
            "skip caps": "1..4",
        },
    )


# --------------------------------------------------------------------------------- selection


@st.composite
def _selection_inputs(
    draw: st.DrawFn, max_entries: int
) -> tuple[QueuePolicy, WaitingQueue, Moment, frozenset[object]]:
    policy = draw(queue_policies())
    queue = draw(waiting_queues(policy, max_size=max_entries))
    moment = draw(moments())
    identities = [entry.identity for entry in queue]
    fitting = draw(st.sets(st.sampled_from(identities))) if identities else set()
    return policy, queue, moment, frozenset(fitting)


def _selection_example(example: object) -> list[Case]:
    assert isinstance(example, tuple)
    policy, queue, moment, fitting = example
    assert isinstance(policy, QueuePolicy)
    assert isinstance(queue, WaitingQueue)
    assert isinstance(moment, Moment)
    document = dict(dump_policy(policy))
    trees = None if policy.is_fifo else [expr_to_json(key) for key in policy.keys]
    inputs: dict[str, JSON] = {
        "policy": document,
        "key_trees": trees,
        "queue": queue_json(queue.entries),
        "moment": {
            "now": number_json(moment.now),
            "budget_left": mapping_json(moment.budget_left),
        },
    }
    reference = spec_policy(policy)
    entries = tuple(spec_queue_entry(entry) for entry in queue)
    budget = dict(moment.budget_left)
    answer = spec_selection.select(entries, reference, moment.now, budget)
    keys = [] if answer is None else [key_value_json(key) for key in answer[1]]
    admitted = spec_selection.admit(
        entries, reference, moment.now, budget, lambda entry: entry.identity in fitting
    )
    where = partial(_queue_text, len(entries), sum(e.resumed for e in entries), policy.is_fifo)
    return [
        Case(
            "select_waiting",
            inputs,
            None if answer is None else {"index": answer[0], "keys": keys},
            len(entries),
            where,
        ),
        Case(
            "attempt_admission",
            {**inputs, "fits": sorted(fitting, key=str)},
            admission_json(admitted, keys),
            len(entries),
            where,
        ),
    ]


def _queue_text(size: int, resumed: int, fifo: bool) -> str:
    kind = "FIFO policy" if fifo else "keyed policy"
    return f"a queue of {size} entries ({resumed} resumed), {kind}"


def property_check_selection(
    select_waiting: Implementation | SelectWaiting | None = None,
    *,
    attempt_admission: AttemptAdmission | None = None,
    examples: int = 200,
    max_entries: int = 30,
    seed: int | None = 0,
) -> ConformanceReport:
    """``select_waiting`` and one ``attempt_admission`` on random policies, queues of up
    to ``max_entries`` entries, moments and fitting sets."""
    _at_least("examples", examples, 1)
    _at_least("max_entries", max_entries, 0)
    implementation = as_implementation(
        select_waiting, "select_waiting", attempt_admission=attempt_admission
    )
    decisions = ("select_waiting", "attempt_admission")
    strategy = _selection_inputs(max_entries)
    return _report(
        "selection",
        "select_waiting and attempt_admission on random policies, queues and moments",
        decisions,
        implementation,
        strategy=strategy,
        cases_of=_selection_example,
        examples=examples,
        seed=seed,
        bounds={
            "examples": str(examples),
            "policies": "random key trees of the whole language, both timings, FIFO",
            "queues": f"0..{max_entries} entries, awkward numbers, resumed entries",
            "moments": "any clock and budgets, stages present or absent",
        },
    )
