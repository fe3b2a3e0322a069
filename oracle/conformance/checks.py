"""The exhaustive conformance checks: every case of a check's domain, asked of the
implementation and compared with the executable spec.

Each ``check_*`` function takes the implementation as a callable with the
kernel's signature (or any :class:`~oracle.conformance.implementations.Implementation`,
such as a command) and bounds (a level's, or smaller ones given by hand), and
returns a :class:`~oracle.conformance.report.ConformanceReport`.

>>> from policy import backlog_admits
>>> check_backlog_cap(backlog_admits, bounds=NumberBounds(3, edges=())).passed
True
>>> report = check_backlog_cap(lambda length, budget: length <= 2, bounds=NumberBounds(3, ()))
>>> report.disagreements, report.smallest.where
(6, 'backlog_len 0, budget 0')
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, Protocol

from oracle.checks.framework import KEPT_COUNTEREXAMPLES, Level, level_named
from oracle.conformance.bounds import (
    BoundsChoice,
    FlagBounds,
    GrantOrderBounds,
    HeaderBounds,
    NumberBounds,
    ProtocolBounds,
    SelectionBounds,
    SettingBounds,
)
from oracle.conformance.cases import (
    Case,
    Counts,
    alternation_cases,
    backlog_cap_cases,
    budget_setting_cases,
    grant_expiry_cases,
    grant_order_cases,
    lane_header_cases,
    protocol_cases,
    selection_cases,
)
from oracle.conformance.decisions import normal_answer
from oracle.conformance.implementations import (
    Alternation,
    Answer,
    ApplyEvent,
    AttemptAdmission,
    BacklogAppend,
    BacklogCap,
    BudgetSetting,
    Failed,
    GrantExpiry,
    Implementation,
    ImplementationBroken,
    LaneHeader,
    NextGrantIndex,
    NotApplicable,
    SelectWaiting,
    TakeNextGrantee,
    as_implementation,
)
from oracle.conformance.own_policies import OwnPolicy
from oracle.conformance.report import Cause, ConformanceReport, Disagreement, cause_of
from oracle.conformance.wire import JSON, WireError
from oracle.spec.protocol import SEED_RULES

__all__ = [
    "CHECKS",
    "CheckDefinition",
    "check_admission_attempt",
    "check_alternation",
    "check_backlog_cap",
    "check_budget_setting",
    "check_grant_expiry",
    "check_grant_order",
    "check_lane_header",
    "check_selection",
    "check_tick_protocol",
    "judge",
    "run_conformance",
]

#: No bound chosen: every check at its level's bounds.
LEVEL_BOUNDS = BoundsChoice()

#: Requests sent to the implementation at once (a process answers them in a stream).
BATCH = 256


@dataclass(frozen=True, slots=True)
class CheckDefinition:
    """One conformance check: its decisions, its bounds at each level and how it
    enumerates its cases within given bounds."""

    name: str
    description: str
    decisions: tuple[str, ...]
    bounds_at: Callable[[Level], Any]  # the bounds class's ``at``: a level's bounds
    enumerate: Callable[[Any, Counts], Iterator[Case]]  # every case within bounds


#: Every check, in the order ``verify --against-command`` runs them.
CHECKS: tuple[CheckDefinition, ...] = (
    CheckDefinition(
        "grant expiry",
        "slice_grant_expired on every small count and budget and the integer edges",
        ("slice_grant_expired",),
        NumberBounds.at,
        grant_expiry_cases,
    ),
    CheckDefinition(
        "backlog cap",
        "backlog_admits on every small backlog length and budget and the integer edges",
        ("backlog_admits",),
        NumberBounds.at,
        backlog_cap_cases,
    ),
    CheckDefinition(
        "alternation",
        "slice_takes_tick on every pair of flags",
        ("slice_takes_tick",),
        FlagBounds.at,
        alternation_cases,
    ),
    CheckDefinition(
        "budget setting",
        "parse_grant_rounds on short setting texts of digits, signs, separators, white space"
        " and look-alike digits, and the range's edges",
        ("parse_grant_rounds",),
        SettingBounds.at,
        budget_setting_cases,
    ),
    CheckDefinition(
        "lane header",
        "parse_lane on every case of the lane names, wrapped in white space, and near misses",
        ("parse_lane",),
        HeaderBounds.at,
        lane_header_cases,
    ),
    CheckDefinition(
        "grant order",
        "next_grant_index, take_next_grantee (skip accounting) and re-entry on every small backlog",
        ("next_grant_index", "take_next_grantee", "backlog_append"),
        GrantOrderBounds.at,
        grant_order_cases,
    ),
    CheckDefinition(
        "tick protocol",
        "apply_event on every reachable state of the spec's tick protocol, every event",
        ("apply_event",),
        ProtocolBounds.at,
        protocol_cases,
    ),
    CheckDefinition(
        "selection",
        "select_waiting on every small waiting queue, policy and moment",
        ("select_waiting",),
        SelectionBounds.at,
        partial(selection_cases, attempts=False),
    ),
    CheckDefinition(
        "admission attempt",
        "one attempt_admission (fits always, never, all but the selected) on every small"
        " waiting queue",
        ("attempt_admission",),
        SelectionBounds.at,
        partial(selection_cases, attempts=True),
    ),
)
_BY_NAME = {check.name: check for check in CHECKS}


def judge(implementation: Implementation, case: Case, answer: Answer) -> tuple[str, JSON] | None:
    """None when ``answer`` agrees with the spec's on ``case`` or does not apply (a
    "not applicable" answer compares nothing: the exhaustive checks count it apart);
    else why not, and the answer in normal form (None when there is none). A
    malformed answer of an implementation whose malformed answers end the run raises
    :class:`~oracle.conformance.implementations.ImplementationBroken`."""
    if isinstance(answer, NotApplicable):
        return None
    if isinstance(answer, Failed):
        return (f"no answer: {answer.reason}", None)
    if implementation.answers_normal and answer == case.expected:
        return None
    try:
        normal = normal_answer(case.decision, answer)
    except WireError as error:
        if implementation.malformed_ends_run:
            raise ImplementationBroken(f"malformed answer to {case.decision}: {error}") from None
        return (f"malformed answer: {error}", None)
    if normal == case.expected:
        return None
    expected = case.expected
    if isinstance(normal, dict) and isinstance(expected, dict):
        fields = sorted(
            name for name in {*normal, *expected} if normal.get(name) != expected.get(name)
        )
        return (f"answered differently ({', '.join(fields)})", normal)
    return ("answered differently", normal)


#: Distinct "not applicable" reasons kept per report (an implementation may give one per case).
_MOST_REASONS = 20

#: A disagreement as kept: (size, order found, case, problem, answer in normal form).
_Kept = tuple[int, int, Case, str, JSON]


@dataclass(slots=True)
class _Found:
    """The disagreements counted, the smallest kept (by size, then order found), and
    per cause (decision, kind of difference) a count and the smallest."""

    disagreements: int = 0
    kept: list[_Kept] = field(default_factory=list)
    causes: dict[tuple[str, str], tuple[int, _Kept]] = field(default_factory=dict)

    def add(self, order: int, case: Case, problem: str, answered: JSON) -> None:
        self.disagreements += 1
        cause = (case.decision, cause_of(problem))
        seen = self.causes.get(cause)
        this = (case.size, order, case, problem, answered)
        if seen is None:
            self.causes[cause] = (1, this)
        else:
            count, smallest = seen
            self.causes[cause] = (count + 1, this if case.size < smallest[0] else smallest)
        kept = self.kept
        if len(kept) < KEPT_COUNTEREXAMPLES or case.size < kept[-1][0]:
            kept.append((case.size, order, case, problem, answered))
            kept.sort(key=lambda item: (item[0], item[1]))
            del kept[KEPT_COUNTEREXAMPLES:]


def _disagreement(
    check: str, implementation: Implementation, case: Case, problem: str, answered: JSON
) -> Disagreement:
    """A kept disagreement; a tick protocol case is asked again with the requests named
    as in its path of events, and shown so if the implementation still disagrees."""
    inputs, expected = case.inputs, case.expected
    if case.renamed is not None:
        renamed_inputs, renamed_expected = case.renamed()
        renamed = Case(case.decision, renamed_inputs, renamed_expected, case.size, case.where)
        verdict = judge(
            implementation, renamed, implementation.answer(case.decision, renamed_inputs)
        )
        if verdict is not None:
            inputs, expected, (problem, answered) = renamed_inputs, renamed_expected, verdict
    return Disagreement(
        check,
        case.decision,
        case.where(),
        inputs,
        expected,
        answered,
        problem,
        case.size,
        case.events(),
        case.scenario(),
    )


def run_cases(  # noqa: PLR0917 - the parts of one report
    name: str,
    description: str,
    decisions: Sequence[str],
    implementation: Implementation,
    cases: Callable[[Counts], Iterable[Case]],
    bounds: Mapping[str, str],
    level: Level | None,
    kind: Literal["exhaustive", "property"] = "exhaustive",
) -> ConformanceReport:
    """Ask ``implementation`` every case of ``cases`` whose decision it answers (in
    batches), compare each answer with the spec's, and report."""
    answered = implementation.decisions()
    checked = tuple(d for d in decisions if d in answered)
    missing = tuple(d for d in decisions if d not in answered)
    started = time.perf_counter()
    counts: Counts = {}
    found = _Found()
    total = not_applicable = 0
    reasons: dict[str, str] = {}  # each reason given, with the first case it was given for
    if checked:
        wanted = frozenset(checked)
        selected = (case for case in cases(counts) if case.decision in wanted)
        asked: deque[list[Case]] = deque()  # the batches sent and not yet answered

        def requests() -> Iterator[list[tuple[str, Mapping[str, JSON]]]]:
            while batch := list(itertools.islice(selected, BATCH)):
                asked.append(batch)
                yield [(case.decision, case.inputs) for case in batch]

        for answers in implementation.stream(requests()):
            batch = asked.popleft()
            if len(answers) != len(batch):  # pragma: no cover - the kit's own answer each
                raise ImplementationBroken(f"{len(answers)} answers to {len(batch)} requests")
            for case, answer in zip(batch, answers, strict=True):
                if isinstance(answer, NotApplicable):  # counted apart, not compared
                    not_applicable += 1
                    if len(reasons) < _MOST_REASONS:
                        reasons.setdefault(answer.reason, case.where())
                    continue
                total += 1
                counts[f"{case.decision} cases"] = counts.get(f"{case.decision} cases", 0) + 1
                verdict = judge(implementation, case, answer)
                if verdict is not None:
                    found.add(total, case, *verdict)
    counterexamples = tuple(
        _disagreement(name, implementation, case, problem, answered_value)
        for _, _, case, problem, answered_value in found.kept
    )
    by_count = sorted(found.causes.items(), key=lambda item: (-item[1][0], item[1][1][:2]))
    causes = tuple(
        Cause(decision, kind, count, _disagreement(name, implementation, *smallest[2:]))
        for (decision, kind), (count, smallest) in by_count
    )
    return ConformanceReport(
        check=name,
        description=description,
        kind=kind,
        level=level,
        bounds=bounds,
        decisions=checked,
        not_answered=missing,
        cases=total,
        counts=counts,
        disagreements=found.disagreements,
        counterexamples=counterexamples,
        seconds=time.perf_counter() - started,
        causes=causes,
        not_applicable=not_applicable,
        not_applicable_reasons=tuple(reasons.items()),
    )


class _Bounds(Protocol):
    def describe(self) -> Mapping[str, str]: ...


def _check(
    name: str,
    implementation: Implementation,
    bounds: Level | _Bounds,
    level_of_bounds: Level | None = None,
) -> ConformanceReport:
    """Run the check ``name`` within ``bounds``: a level, or bounds of its own type
    (a level's own bounds when ``level_of_bounds`` names it)."""
    check = _BY_NAME[name]
    if isinstance(bounds, str):
        named = level_named(bounds)
        level: Level | None = named
        chosen: _Bounds = check.bounds_at(named)
    else:
        level, chosen = level_of_bounds, bounds
    return run_cases(
        check.name,
        check.description,
        check.decisions,
        implementation,
        partial(check.enumerate, chosen),
        chosen.describe(),
        level,
    )


def check_grant_expiry(
    slice_grant_expired: Implementation | GrantExpiry,
    *,
    bounds: NumberBounds | Level = "default",
) -> ConformanceReport:
    """``slice_grant_expired(slices_in_grant, budget, backlog_pending)`` on every count
    and budget of ``bounds``, both flags, against the spec."""
    implementation = as_implementation(slice_grant_expired, "slice_grant_expired")
    return _check("grant expiry", implementation, bounds)


def check_backlog_cap(
    backlog_admits: Implementation | BacklogCap,
    *,
    bounds: NumberBounds | Level = "default",
) -> ConformanceReport:
    """``backlog_admits(backlog_len, budget)`` on every length and budget of ``bounds``."""
    return _check("backlog cap", as_implementation(backlog_admits, "backlog_admits"), bounds)


def check_grant_order(
    take_next_grantee: Implementation | TakeNextGrantee | None = None,
    *,
    next_grant_index: NextGrantIndex | None = None,
    backlog_append: BacklogAppend | None = None,
    bounds: GrantOrderBounds | Level = "default",
) -> ConformanceReport:
    """The grant order with its skip accounting on every backlog of ``bounds``:
    ``take_next_grantee(backlog, skip_cap)`` (the chosen entry and every other
    entry's skip count), and, when given, ``next_grant_index(entries, skip_cap)`` and
    ``backlog_append(backlog, entry)`` (re-entry at the back with no skips). With an
    :class:`~oracle.conformance.implementations.Implementation`, every one of the three
    it answers."""
    implementation = as_implementation(
        take_next_grantee,
        "take_next_grantee",
        next_grant_index=next_grant_index,
        backlog_append=backlog_append,
    )
    return _check("grant order", implementation, bounds)


def check_alternation(
    slice_takes_tick: Implementation | Alternation,
    *,
    bounds: FlagBounds | Level = "default",
) -> ConformanceReport:
    """``slice_takes_tick(yielded, others_have_work)`` on all four pairs, against the spec."""
    implementation = as_implementation(slice_takes_tick, "slice_takes_tick")
    return _check("alternation", implementation, bounds)


def check_budget_setting(
    parse_grant_rounds: Implementation | BudgetSetting,
    *,
    bounds: SettingBounds | Level = "default",
) -> ConformanceReport:
    """``parse_grant_rounds(raw)`` on every setting text of ``bounds``, against the spec."""
    implementation = as_implementation(parse_grant_rounds, "parse_grant_rounds")
    return _check("budget setting", implementation, bounds)


def check_lane_header(
    parse_lane: Implementation | LaneHeader,
    *,
    bounds: HeaderBounds | Level = "default",
) -> ConformanceReport:
    """``parse_lane(header)`` on every lane header of the domain, against the spec."""
    return _check("lane header", as_implementation(parse_lane, "parse_lane"), bounds)


def check_tick_protocol(
    apply_event: Implementation | ApplyEvent,
    *,
    bounds: ProtocolBounds | Level = "default",
) -> ConformanceReport:
    """``apply_event(state, event)`` (a step function over the event types) on every
    state of the spec reachable within ``bounds`` and every event of the model check's
    domain there: the new state and outcome, or the refusal, must be the spec's."""
    return _check("tick protocol", as_implementation(apply_event, "apply_event"), bounds)


def check_selection(
    select_waiting: Implementation | SelectWaiting,
    *,
    bounds: SelectionBounds | Level = "default",
) -> ConformanceReport:
    """``select_waiting(queue, policy, moment)`` on every queue, policy and moment of
    ``bounds``: the entry selected and its key values."""
    return _check("selection", as_implementation(select_waiting, "select_waiting"), bounds)


def check_admission_attempt(
    attempt_admission: Implementation | AttemptAdmission,
    *,
    bounds: SelectionBounds | Level = "default",
) -> ConformanceReport:
    """One ``attempt_admission(queue, policy, moment, fits)`` on every queue, policy and
    moment of ``bounds``, with the selected entry fitting, not fitting, and every
    entry but the selected one fitting (no fit-first skipping): the outcome, the entry,
    its key values and the queue left."""
    implementation = as_implementation(attempt_admission, "attempt_admission")
    return _check("admission attempt", implementation, bounds)


def run_conformance(
    implementation: Implementation,
    *,
    level: Level = "default",
    checks: Collection[str] | None = None,
    progress: Callable[[ConformanceReport], None] | None = None,
    profile: str = SEED_RULES,
    policies: Sequence[OwnPolicy] = (),
    choice: BoundsChoice = LEVEL_BOUNDS,
    starting: Callable[[str], None] | None = None,
) -> tuple[ConformanceReport, ...]:
    """Every check (or those named in ``checks``) at ``level``, in order; a check whose
    decisions the implementation answers none of is reported as not run. ``progress``
    is called with each report as soon as it is made. The tick protocol is checked
    under the rules ``profile`` (``"seed"`` or ``"mlxcel"``, docs/rotation.md); with
    ``policies`` (:func:`oracle.conformance.own_policies.own_policy`), selection and
    the admission attempt are checked under those instead of the kit's own; ``choice``
    sets bounds instead of the level's (:class:`~oracle.conformance.bounds.BoundsChoice`);
    ``starting`` is called with each check's name before it runs (progress)."""
    level = level_named(level)
    ProtocolBounds.at(level, profile)  # refuses an unknown profile before anything runs
    unknown = sorted(set(checks or ()) - set(_BY_NAME))
    if unknown:
        raise ValueError(
            f"no check is named {', '.join(unknown)} (the checks: {', '.join(_BY_NAME)})"
        )
    reports = []
    for check in CHECKS:
        if checks is not None and check.name not in checks:
            continue
        if starting is not None:
            starting(check.name)
        bounds = check.bounds_at(level)
        if isinstance(bounds, ProtocolBounds):
            bounds = ProtocolBounds.at(level, profile)
        if isinstance(bounds, SelectionBounds) and policies:
            bounds = bounds.with_policies(tuple(policies))
        report = _check(check.name, implementation, choice.applied(bounds), level)
        reports.append(report)
        if progress is not None:
            progress(report)
    return tuple(reports)
