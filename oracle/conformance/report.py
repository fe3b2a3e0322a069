"""What a conformance check reports: cases run, bounds, and the smallest disagreements."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from oracle.checks.framework import Level
from oracle.conformance.wire import JSON, canonical
from policy.text import cut, represent

__all__ = ["Cause", "ConformanceReport", "Disagreement", "cause_of"]


#: The most characters of one JSON value a report line shows (an answer may be 1 MiB).
LINE_WIDTH = 2000


def _line(value: JSON) -> str:
    """``value`` on one line, cut by the one quoting rule at :data:`LINE_WIDTH`.

    >>> _line({"a": [1, 2]}), _line("x" * 3000)[-28:]
    ('{"a":[1,2]}', 'xxxx... (3,002 characters)')
    """
    try:
        text = canonical(value)
    except (TypeError, ValueError):  # not JSON, or an int of more than 4300 digits
        text = represent(value)
    return cut(text, LINE_WIDTH)


#: Reasons of "not applicable" answers the text report lists (JSON has them all).
KEPT_REASONS = 5

#: Answers shown in a summary line when together at most this long.
_SHORT = 60


@dataclass(frozen=True, slots=True)
class Disagreement:
    """One case on which the implementation and the spec disagree.

    ``inputs`` is the request's inputs as sent, ``expected`` the spec's answer and
    ``answered`` the implementation's (both in normal form; ``answered`` is None
    when it gave none, and ``problem`` says why). For the tick protocol,
    ``events`` leads from the initial state to the case's state (request names
    may differ from the state's, which are canonical), its own event last, and
    ``scenario`` is that run as an events scenario file expecting the spec's
    observation after every event (``policy-kernel replay`` replays it).
    """

    check: str
    decision: str
    where: str
    inputs: Mapping[str, JSON]
    expected: JSON
    answered: JSON
    problem: str
    size: int
    events: tuple[JSON, ...] = ()
    scenario: Mapping[str, JSON] = field(default_factory=dict)

    @property
    def request(self) -> dict[str, JSON]:
        """The request to send again to see it (the protocol's form, without an id)."""
        return {"decision": self.decision, "inputs": dict(self.inputs)}

    @property
    def summary(self) -> str:
        """One line: the decision, the case and what is wrong (both answers when short)."""
        head = f"{self.check}: {self.decision}, {self.where}: "
        expected, answered = _line(self.expected), _line(self.answered)
        if self.answered is not None and len(expected) + len(answered) <= _SHORT:
            return f"{head}expected {expected}, answered {answered}"
        return head + self.problem

    def text(self) -> str:
        """The summary, then the request, both answers and (tick protocol) the events,
        one per line, as a test failure or the command line shows them."""
        lines = [
            self.summary,
            f"  request:  {_line(self.request)}",
            f"  expected: {_line(self.expected)}",
            f"  answered: {self.problem if self.answered is None else _line(self.answered)}",
        ]
        if self.events:
            lines.append(
                f"  events from the initial state, its own last: {_line(list(self.events))}"
            )
        return "\n".join(lines)

    def to_json(self) -> dict[str, JSON]:
        """The disagreement as one JSON object."""
        return {
            "check": self.check,
            "decision": self.decision,
            "where": self.where,
            "request": self.request,
            "expected": self.expected,
            "answered": self.answered,
            "problem": self.problem,
            "size": self.size,
            "events": list(self.events) or None,
            "scenario": dict(self.scenario) or None,
        }


def cause_of(problem: str) -> str:
    """The kind of a disagreement's problem, what disagreements are grouped by: which
    fields differ, or that there was no answer (with the exception's type) or a
    malformed one.

    >>> cause_of("answered differently (use, yielded)"), cause_of("answered differently")
    ('answered differently (use, yielded)', 'answered differently')
    >>> cause_of("no answer: raised KeyError: 'lane'"), cause_of("malformed answer: not 1")
    ('no answer: raised KeyError', 'malformed answer')
    """
    if problem.startswith("no answer: raised "):
        return problem.split(":", 2)[0] + ":" + problem.split(":", 2)[1]
    for kind in ("no answer", "malformed answer"):
        if problem.startswith(kind + ":"):
            return kind
    return problem


@dataclass(frozen=True, slots=True)
class Cause:
    """The disagreements of one cause: a decision and a kind of difference
    (:func:`cause_of`), how many there were, and the smallest of them."""

    decision: str
    kind: str
    count: int
    smallest: Disagreement

    def text(self) -> str:
        """One line: how many, the cause, and the smallest case."""
        return f"{self.count:,} x {self.decision}: {self.kind}; smallest: {self.smallest.where}"

    def to_json(self) -> dict[str, JSON]:
        return {
            "decision": self.decision,
            "kind": self.kind,
            "count": self.count,
            "smallest": self.smallest.to_json(),
        }


@dataclass(frozen=True, slots=True)
class ConformanceReport:
    """One check of one implementation.

    ``decisions`` are the decisions checked, ``not_answered`` those of the check the
    implementation does not answer (a check with no decision answered ran
    nothing: :attr:`ran` is False). ``cases`` counts the requests compared;
    ``counts`` adds what was enumerated (per decision, and backlogs, states or
    queues). ``counterexamples`` holds the smallest disagreements, smallest first;
    ``causes`` groups every disagreement by its decision and kind of difference
    (:class:`Cause`), most frequent first, each with its count and smallest case.
    ``not_applicable`` counts the cases the implementation said do not apply to it
    (not compared, not in ``cases``), ``not_applicable_reasons`` each reason it gave
    with the first case it gave it for.
    """

    check: str
    description: str
    kind: Literal["exhaustive", "property"]
    level: Level | None
    bounds: Mapping[str, str]
    decisions: tuple[str, ...]
    not_answered: tuple[str, ...]
    cases: int
    counts: Mapping[str, int]
    disagreements: int
    counterexamples: tuple[Disagreement, ...]
    seconds: float
    causes: tuple[Cause, ...] = ()
    not_applicable: int = 0
    not_applicable_reasons: tuple[tuple[str, str], ...] = ()

    @property
    def ran(self) -> bool:
        """Whether the check compared anything: a decision of it was asked and at least
        one case compared (bounds that hold no case, a property check that drew no
        request, or "not applicable" throughout would pass a check on nothing)."""
        return bool(self.decisions) and self.cases > 0

    @property
    def passed(self) -> bool:
        """Something compared and no disagreement: a check that compared nothing does
        not pass (see :attr:`ran`)."""
        return self.ran and self.disagreements == 0

    @property
    def smallest(self) -> Disagreement | None:
        """The smallest counterexample, if any."""
        return self.counterexamples[0] if self.counterexamples else None

    @property
    def verdict(self) -> str:
        """``PASS``, ``FAIL`` or ``SKIPPED`` (no decision of the check answered, or every
        case answered not applicable)."""
        if not self.ran:
            return "SKIPPED"
        return "PASS" if self.passed else "FAIL"

    def text(self) -> str:
        """The report as the command line prints it."""
        head = f"{self.check}: {self.verdict}"
        if not self.decisions:
            return f"{head} (the implementation answers none of {', '.join(self.not_answered)})\n"
        if not self.ran and self.not_applicable:
            reason = self.not_applicable_reasons[0][0] if self.not_applicable_reasons else ""
            return (
                f"{head} (every one of its {self.not_applicable:,} cases answered not applicable:"
                f" {cut(reason, 200)})\n"
            )
        if not self.ran:
            return f"{head} (no case to compare within its bounds)\n"
        lines = [
            f"{head} ({self.cases:,} cases in {self.seconds:.1f} s, {self.kind})",
            f"  {self.description}",
        ]
        lines += [f"  bound   {name}: {text}" for name, text in self.bounds.items()]
        lines += [f"  count   {name}: {count:,}" for name, count in sorted(self.counts.items())]
        if self.not_answered:
            lines.append(f"  not answered (not checked): {', '.join(self.not_answered)}")
        if self.not_applicable:
            lines.append(f"  not applicable (not compared): {self.not_applicable:,} cases")
            lines += [
                f"    {cut(reason, 200)} (first: {where})"
                for reason, where in self.not_applicable_reasons[:KEPT_REASONS]
            ]
        if self.disagreements:
            lines.append(f"  {self.disagreements:,} disagreements; the smallest:")
            for counterexample in self.counterexamples:
                lines += ["    " + line for line in counterexample.text().splitlines()]
            if self.causes:
                lines.append(f"  by cause ({len(self.causes)}):")
                lines += [f"    {cause.text()}" for cause in self.causes]
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, JSON]:
        """The report as one JSON object."""
        return {
            "check": self.check,
            "description": self.description,
            "kind": self.kind,
            "level": self.level,
            "bounds": dict(self.bounds),
            "decisions": list(self.decisions),
            "not_answered": list(self.not_answered),
            "verdict": self.verdict,
            "cases": self.cases,
            "counts": dict(sorted(self.counts.items())),
            "disagreements": self.disagreements,
            "not_applicable": self.not_applicable,
            "not_applicable_reasons": [
                {"reason": reason, "first": where} for reason, where in self.not_applicable_reasons
            ],
            "counterexamples": [c.to_json() for c in self.counterexamples],
            "causes": [cause.to_json() for cause in self.causes],
            "seconds": round(self.seconds, 2),
            "passed": self.passed,
        }
