"""Replaying one scenario for the command line: its verdict, the table that shows
the run (one printable line per row), and the picture it can be drawn as."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TextIO

from oracle import plots
from oracle.harness.admission_replay import replay_admission
from oracle.harness.admission_run import AdmissionRun
from oracle.harness.admission_scenario import AttemptEngine, PoolEngine
from oracle.harness.attempt_engine import AttemptRun, attempt_queue
from oracle.harness.limits import EVENT_TEXT_WIDTH
from oracle.harness.rotation_events import (
    EventsRun,
    RotationEventsScenario,
    event_text,
    replay_events,
)
from oracle.harness.rotation_replay import RotationRun, replay_rotation
from oracle.harness.rotation_scenario import RotationScenario
from oracle.harness.scenarios import Scenario
from oracle.harness.verdicts import (
    Verdict,
    admission_result,
    events_result,
    format_grant_log,
    format_keys,
    format_number,
    format_value,
    json_line,
    rotation_result,
)
from policy.rotation import RotationState, RulesProfile
from policy.text import cut, printable

__all__ = ["Picture", "replay_scenario"]

#: Draws one replayed scenario into the given path; returns the path written.
Picture = Callable[[Path], Path]


def replay_scenario(
    scenario: Scenario, out: TextIO, as_json: bool
) -> tuple[Verdict, str, Picture | None]:
    """The verdict, and the scenario's picture (its name's suffix and how to draw it);
    an event-list scenario has no picture: its events are not a tick-by-tick run."""
    picture: Picture | None = None
    suffix = ""
    if isinstance(scenario, RotationScenario):
        run = replay_rotation(scenario)
        result = rotation_result(run)
        if not as_json:
            _render_rotation(run, result, out)
        picture, suffix = partial(_draw_grants, run), "grants"
    elif isinstance(scenario, RotationEventsScenario):
        events = replay_events(scenario)
        result = events_result(events)
        if not as_json:
            _render_events(events, result, out)
    else:
        admission = replay_admission(scenario)
        result = admission_result(admission)
        if not as_json:
            _render_admission(admission, result, out)
        picture, suffix = partial(_draw_admissions, admission), "admissions"
    if as_json:
        out.write(json_line(result.json) + "\n")
    return result, suffix, picture


# The pictures' data is computed only when a picture is asked for.


def _draw_grants(run: RotationRun[RotationState], path: Path) -> Path:
    return plots.write_grant_timeline_png(plots.grant_timeline_data(run), path)


def _draw_admissions(run: AdmissionRun, path: Path) -> Path:
    return plots.write_admission_timeline_png(plots.admission_timeline_data(run), path)


# The renderers show every value a scenario gave (names, ids, stage names, event
# text) through format_value or printable: one printable line per table row.


def _render_rotation(run: RotationRun[RotationState], result: Verdict, out: TextIO) -> None:
    scenario = run.scenario
    classic = scenario.classic_work
    classic_text = (
        classic
        if isinstance(classic, str)
        else f"at ticks [{', '.join(map(format_value, sorted(classic)))}]"
    )
    out.write(
        f"{format_value(scenario.name)} (rotation): budget {format_value(scenario.budget)}, "
        f"skip cap {format_value(scenario.skip_cap)}, classic work {classic_text}"
        f"{_rules_text(scenario.profile)}\n"
    )
    out.write(f"  grant log  {format_grant_log(run.grant_log)}\n")
    out.write(f"  {'request':<8} {'lane':<7} {'arrive':>6} {'slices':>6} {'grants':>6}  outcome\n")
    grants = Counter(grant.request for grant in run.grants)  # once, not a pass per row
    outcomes = run.outcomes
    for request in scenario.requests:
        out.write(
            f"  {format_value(request.id):<8} {request.lane.label:<7} "
            f"{format_value(request.arrive):>6} {format_value(request.slices):>6} "
            f"{grants[request.id]:>6}  {outcomes[request.id].value}\n"
        )
    _render_verdict(result, out)


def _rules_text(profile: RulesProfile) -> str:
    """The header's note of a rules profile other than the seed's."""
    return "" if profile is RulesProfile.SEED else f", {profile.value} rules"


def _render_events(run: EventsRun, result: Verdict, out: TextIO) -> None:
    scenario = run.scenario
    out.write(
        f"{format_value(scenario.name)} (rotation, events): "
        f"skip cap {format_value(scenario.skip_cap)}, {len(scenario.events)} events"
        f"{_rules_text(scenario.profile)}\n"
    )
    # Each row is at most EVENT_TEXT_WIDTH characters of event text (a tick may
    # decline thousands of requests): a longer text is cut, and the column never
    # grows wider, so a row costs a bounded number of bytes.
    texts = [cut(event_text(event), EVENT_TEXT_WIDTH) for event in scenario.events]
    width = max(len("event"), *map(len, texts))
    digits = max(1, len(str(len(texts) - 1)))
    out.write(f"  {'#':>{digits}}  {'event':<{width}}  result\n")
    for index, (text, step) in enumerate(zip(texts, run.steps, strict=True)):
        refused = step.get("refused")
        branches = step.get("branches")
        shown = (
            f"refused: {format_value(refused)}"
            if refused is not None
            else ", ".join(map(format_value, branches if isinstance(branches, list) else []))
        )
        out.write(f"  {index:>{digits}}  {text:<{width}}  {shown}\n")
    out.write(f"  grant log  {format_grant_log(run.grant_log)}\n")
    endings = ", ".join(
        f"{format_value(request)} {ending.value}" for request, ending in run.outcomes.items()
    )
    out.write(f"  outcomes   {endings or '(none ended)'}\n")
    _render_verdict(result, out)


def _render_attempt(run: AttemptRun, engine: AttemptEngine, result: Verdict, out: TextIO) -> None:
    scenario = run.scenario
    budgets = ", ".join(
        f"{format_value(stage)} {format_number(left)}" for stage, left in engine.budget_left.items()
    )
    out.write(
        f"{format_value(scenario.name)} (admission): one attempt at now "
        f"{format_number(engine.now)}, budget left {budgets or '(none)'}, "
        f"keys at {scenario.policy.timing}\n"
    )
    queue = ", ".join(
        f"{format_value(entry.identity)} (resumed)"
        if entry.resumed
        else format_value(entry.identity)
        for entry in attempt_queue(scenario)
    )
    out.write(f"  queue        {queue or '(empty)'}\n")
    out.write(f"  selected     {', '.join(map(format_value, run.selected)) or '(none)'}\n")
    out.write(f"  keys         {format_keys(run.keys)}\n")
    if not run.selected:
        verdict = "queue empty"
    elif run.admitted_at:
        verdict = f"admitted at {format_number(run.admitted_at[0])}"
    else:
        verdict = "blocked: the selected request does not fit"
    out.write(f"  result       {verdict}\n")
    _render_verdict(result, out)


def _render_admission(run: AdmissionRun, result: Verdict, out: TextIO) -> None:
    scenario = run.scenario
    engine = scenario.engine
    if isinstance(engine, AttemptEngine):
        assert isinstance(run, AttemptRun)  # replay_admission's run for this engine
        _render_attempt(run, engine, result, out)
        return
    if isinstance(engine, PoolEngine):
        setting = f"pool engine, cap {format_value(engine.cap)}"
    else:
        setting = (
            f"step engine, budget {format_value(engine.budget)}, "
            f"chunk {format_value(engine.chunk)}, "
            f"iteration {format_number(engine.iteration_cost)} s, max running "
            f"{format_value(engine.max_running)}, "
            f"KV {format_value(engine.blocks)} x {format_value(engine.block_size)}"
        )
    out.write(
        f"{format_value(scenario.name)} (admission): {setting}, keys at {scenario.policy.timing}\n"
    )
    out.write(f"  selected     {', '.join(map(format_value, run.selected))}\n")
    out.write(f"  admitted at  {', '.join(map(format_number, run.admitted_at))}\n")
    _render_verdict(result, out)


def _render_verdict(result: Verdict, out: TextIO) -> None:
    if result.mismatches is None:
        out.write("  (no expectation)\n\n")
    elif not result.mismatches:
        out.write("  PASS\n\n")
    else:
        for mismatch in result.mismatches:
            # verdicts.py builds these texts with format_value; printable keeps the
            # one-line rule for any text a Mismatch is given (it changes none of ours).
            field, expected, actual = map(
                printable, (mismatch.field, mismatch.expected, mismatch.actual)
            )
            if mismatch.block:
                out.write(f"  FAIL {field}:\n    expected {expected}\n    got      {actual}\n")
            else:
                out.write(f"  FAIL {field}: expected {expected}, got {actual}\n")
        out.write("\n")
