"""Pytest helpers: fail a test with the smallest counterexample of a conformance check.

They raise ``AssertionError`` (pytest shows the message as the failure), so
they need nothing from pytest and work under any test runner::

    from oracle.conformance import check_tick_protocol
    from oracle.conformance.testing import assert_conforms

    def test_my_scheduler_follows_the_tick_protocol():
        assert_conforms(check_tick_protocol(my_scheduler.apply_event, bounds="quick"))

>>> from oracle.conformance import NumberBounds, check_backlog_cap
>>> assert_conforms(check_backlog_cap(lambda length, budget: budget > 0 and length < 2))
>>> broken = check_backlog_cap(lambda length, budget: length < 2, bounds=NumberBounds(2, ()))
>>> assert_conforms(broken)
Traceback (most recent call last):
...
AssertionError: backlog cap: 2 disagreements in 9 cases; the smallest:
backlog cap: backlog_admits, backlog_len 0, budget 0: expected false, answered true
...
"""

from __future__ import annotations

from collections.abc import Iterable

from oracle.conformance.report import ConformanceReport, Disagreement

__all__ = ["assert_conforms", "assert_disagrees", "failure_text"]


def failure_text(report: ConformanceReport) -> str | None:
    """Why ``report`` fails, with its smallest counterexamples (None when it has no
    disagreement)."""
    if report.disagreements == 0:
        return None
    lines = [
        f"{report.check}: {report.disagreements:,} disagreements in {report.cases:,} cases;"
        " the smallest:"
    ]
    lines += [counterexample.text() for counterexample in report.counterexamples]
    bounds = "; ".join(f"{name}: {text}" for name, text in report.bounds.items())
    lines.append(f"(bounds: {bounds})")
    return "\n".join(lines)


def _reports(
    given: Iterable[ConformanceReport | Iterable[ConformanceReport]],
) -> list[ConformanceReport]:
    flat: list[ConformanceReport] = []
    for item in given:
        if isinstance(item, ConformanceReport):
            flat.append(item)
        else:
            flat.extend(item)
    return flat


def assert_conforms(
    *reports: ConformanceReport | Iterable[ConformanceReport], allow_not_run: bool = False
) -> None:
    """Fail with the smallest counterexample of every report that has a disagreement,
    and (unless ``allow_not_run``) for a check that compared nothing (the
    implementation answers none of its decisions, or no case was compared)."""
    flat = _reports(reports)
    problems = [text for report in flat if (text := failure_text(report)) is not None]
    if not allow_not_run:
        problems += [
            f"{report.check}: not run: {_not_run(report)}" for report in flat if not report.ran
        ]
    if problems:
        raise AssertionError("\n\n".join(problems))


def _not_run(report: ConformanceReport) -> str:
    if not report.decisions:
        return f"the implementation answers none of {', '.join(report.not_answered)}"
    if report.not_applicable:
        return f"every one of its {report.not_applicable:,} cases answered not applicable"
    return "no case to compare within its bounds"


def assert_disagrees(report: ConformanceReport) -> Disagreement:
    """The smallest counterexample of ``report``; fail if it has none (for a test that
    a deliberately broken implementation is caught)."""
    if not report.ran:
        raise AssertionError(f"{report.check}: not run: no decision of the check answered")
    smallest = report.smallest
    if smallest is None:
        raise AssertionError(
            f"{report.check}: the implementation agrees with the spec on all"
            f" {report.cases:,} cases; a disagreement was expected"
        )
    return smallest
