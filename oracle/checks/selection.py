"""Exhaustive check of ``select_waiting`` and one ``attempt_admission``, kernel against spec.

Every waiting queue within the bounds below is built with the kernel's two ways
in, exactly as the attempt engine builds a scenario's queue (the entries not
resumed appended in order, then the resumed ones re-queued at the front in
reverse order, each at its own enqueue time), and the same queue is written as
the spec's tuple of entries. For every policy and moment of the table below,
the kernel's ``select_waiting`` and two ``attempt_admission`` calls (the
selected entry always fits / never fits) are compared with the spec's
``select`` and ``admit``: the selected index, the key values (NaN equals NaN,
-0.0 differs from 0.0: ``same_value``), the outcome, and the queue returned
(``Admitted.queue``: the spec's remaining entries, each the very entry that was
waiting; ``Blocked.queue``: the queue given, unchanged).

**Queues.** Entry ``i`` (0-based, the front first) is request ``R<i>``,
serial ``i``, enqueued at time ``i``; the first ``r`` entries are resumed, for
every ``r`` in ``0..n``. Each entry carries one key value (one-key domain:
NaN, -inf, -1.0, -0.0, 0.0, 1.0, +inf) or two (two-key domain: NaN, -0.0, 0.0,
1.0, for each key), every combination.

**Key values as attributes.** A scenario can only give finite attribute
values, so that every counterexample replays exactly, a key value ``v`` is
carried by two finite attributes ``k``, ``d`` with ``k / d = v`` (NaN = 0/0,
+-inf = +-1/0, -1.0 = -1/1, -0.0 = -0.0/1, 0.0 = 0/1, 1.0 = 1/1; the second
key's are ``k2``, ``d2``), and the policies read ``k / d``. The check runs
exactly what its counterexamples replay. (Reading a non-finite attribute
directly is covered by the expressions check.)

**Policies and moments** (every attempt at ``now = 4``; "stage 4" is
``budget_left = {engine: 4}``, "no stage" an empty ``budget_left``):

==========================  ================================================  ========
policy (one-key domain)     keys                                              moment
==========================  ================================================  ========
fifo                        none (FIFO), selection timing                     no stage
fifo enqueue                none (FIFO), enqueue timing                       no stage
static                      ``k / d``                                         no stage
static enqueue              ``k / d``, enqueue timing (stored at enqueue)     no stage
aging                       ``waited >= 3 ? 0 : k / d - waited``              no stage
budget (stage 4)            ``budget_left(engine) > 1 ? k / d : -(k / d)``    stage 4
budget (no stage)           the same key                                      no stage
==========================  ================================================  ========

==========================  ================================================  ========
policy (two-key domain)     keys                                              moment
==========================  ================================================  ========
static                      ``k / d``, ``k2 / d2``                            no stage
static enqueue              the same, enqueue timing                          no stage
aging + budget (stage 4)    the aging key, then the budget key on k2, d2      stage 4
aging + budget (no stage)   the same keys                                     no stage
==========================  ================================================  ========

At ``now = 4`` the entries at positions 0 and 1 have waited 4 and 3 (aged:
key 0), the others 2, 1, 0 (key ``v - waited``; -0.0 - 0 stays -0.0). An
absent stage reads NaN, so the budget key negates every key value (-0.0
becomes 0.0, NaN stays NaN); with the stage at 4 it is ``v``.

**Levels** (longest queue over the one-key / the two-key domain): quick 3 / 2,
default 4 / 2, deep 5 / 4. Units are ``(domain, n, r, front value)``.

**Shared work.** The enumeration is not reduced: every queue, resumed prefix,
policy, moment and fit is run. Two things are computed once and shared, each
provably giving what computing it afresh would:

- One kernel queue serves every policy of a domain that stores no keys (every
  selection-timing policy, and FIFO at either timing): such an entry stores
  nothing that depends on the policy (its ``enqueue_keys`` are None), and
  every such policy reads only attributes every entry carries, so the attempt
  engine builds equal queues for them. The one keyed enqueue-timing policy of
  each domain gets its own queue, built with that policy.
- Queues are built incrementally (a queue with one more entry at the back
  extends the shorter one, and resumed entries are re-queued on top), which
  is what building each from scratch computes, since every queue operation
  is a pure function of the queue it is given.

Counterexamples are attempt scenarios (docs/harness.md, "Attempt engine") with
the spec's answer as ``expect`` (``selected``, ``admitted_at``, ``keys``);
each is replayed once when it is built, and its summary says so if the
replay does not fail (a disagreement only in ``select_waiting``, or only in
the queue returned, is not visible to a replay).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from oracle.checks.framework import Check, Counterexample, Level, Partial
from oracle.harness.admission_replay import replay_admission
from oracle.harness.admission_scenario import AdmissionScenario
from oracle.harness.attempt_engine import attempt_document
from oracle.harness.fields import FieldError
from oracle.harness.scenarios import read_scenario
from oracle.harness.verdicts import admission_result
from oracle.spec import selection as spec
from oracle.spec.expressions import same_value
from policy.waiting import (
    AdmissionOutcome,
    Admitted,
    Blocked,
    Moment,
    QueueEmpty,
    QueuePolicy,
    Selection,
    WaitingQueue,
    attempt_admission,
    load_policy,
    same_entry,
    select_waiting,
)

__all__ = [
    "DOMAIN",
    "ONE_KEY_DOMAIN",
    "SELECTION",
    "TWO_KEY_DOMAIN",
    "fits_text",
    "policy_cases",
    "replay_verdict",
    "run",
    "value_attributes",
]

NOW = 4.0
STAGE = "engine"

#: The key values, each with its label and its finite attributes (k, d), k / d = value.
ONE_KEY_DOMAIN: tuple[tuple[str, float, float], ...] = (
    ("NaN", 0.0, 0.0),
    ("-inf", -1.0, 0.0),
    ("-1", -1.0, 1.0),
    ("-0.0", -0.0, 1.0),
    ("0", 0.0, 1.0),
    ("1", 1.0, 1.0),
    ("inf", 1.0, 0.0),
)
TWO_KEY_DOMAIN: tuple[tuple[str, float, float], ...] = (
    ("NaN", 0.0, 0.0),
    ("-0.0", -0.0, 1.0),
    ("0", 0.0, 1.0),
    ("1", 1.0, 1.0),
)

#: level -> (longest queue over the one-key domain, longest over the two-key domain)
DOMAIN: Mapping[Level, tuple[int, int]] = {
    "quick": (3, 2),
    "default": (4, 2),
    "deep": (5, 4),
}

# ----------------------------------------------------------------------------- policies

_K = {"op": "/", "args": [{"attr": "k"}, {"attr": "d"}]}
_K2 = {"op": "/", "args": [{"attr": "k2"}, {"attr": "d2"}]}


def _aging_tree(key: object) -> dict[str, object]:
    waited = {"var": "waited"}
    return {
        "op": "?:",
        "args": [
            {"op": ">=", "args": [waited, {"num": 3}]},
            {"num": 0},
            {"op": "-", "args": [key, waited]},
        ],
    }


def _budget_tree(key: object) -> dict[str, object]:
    return {
        "op": "?:",
        "args": [
            {"op": ">", "args": [{"budget_left": STAGE}, {"num": 1}]},
            key,
            {"op": "-", "args": [key]},
        ],
    }


_AGING_TEXT = "waited >= 3 ? 0 : k / d - waited"
_CLOCK_TEXT = "k / d - now"
_CLOCK = {"op": "-", "args": [_K, {"var": "now"}]}
_BUDGET_TEXT = "budget_left(engine) > 1 ? k / d : -(k / d)"
_BUDGET2_TEXT = "budget_left(engine) > 1 ? k2 / d2 : -(k2 / d2)"


@dataclass(frozen=True, slots=True)
class _Case:
    """One policy at one moment: the kernel's policy, the spec's, and the scenario's."""

    name: str
    document: Mapping[str, object]  # the policy document, keys as text (the scenario's)
    spec_keys: tuple[object, ...] | None  # the same keys as JSON trees, written by hand
    budget_left: Mapping[str, float]

    @property
    def timing(self) -> str:
        return str(self.document.get("timing", "selection"))

    @property
    def stores_keys(self) -> bool:
        """Whether the queue stores key values at enqueue (a keyed enqueue-timing policy)."""
        return self.timing == "enqueue" and self.spec_keys is not None


def policy_cases(two: bool) -> tuple[_Case, ...]:
    """The policies and moments of the one-key (or the two-key) domain."""
    names = ("k", "d", "k2", "d2") if two else ("k", "d")
    declared = dict.fromkeys(names, "visible")

    def doc(keys: list[str] | None, timing: str = "selection") -> dict[str, object]:
        made: dict[str, object] = {"attributes": declared}
        if timing != "selection":
            made["timing"] = timing
        if keys is not None:
            made["keys"] = keys
        return made

    present = {STAGE: 4.0}
    if not two:
        return (
            _Case("fifo", doc(None), None, {}),
            _Case("fifo enqueue", doc(None, "enqueue"), None, {}),
            _Case("static", doc(["k / d"]), (_K,), {}),
            _Case("static enqueue", doc(["k / d"], "enqueue"), (_K,), {}),
            # Reads the clock: at enqueue it is the entry's enqueue time, so a kernel
            # that evaluated keys at selection under enqueue timing would disagree.
            _Case("clock enqueue", doc([_CLOCK_TEXT], "enqueue"), (_CLOCK,), {}),
            _Case("aging", doc([_AGING_TEXT]), (_aging_tree(_K),), {}),
            _Case("budget (stage 4)", doc([_BUDGET_TEXT]), (_budget_tree(_K),), present),
            _Case("budget (no stage)", doc([_BUDGET_TEXT]), (_budget_tree(_K),), {}),
        )
    both = (_aging_tree(_K), _budget_tree(_K2))
    return (
        _Case("static", doc(["k / d", "k2 / d2"]), (_K, _K2), {}),
        _Case("static enqueue", doc(["k / d", "k2 / d2"], "enqueue"), (_K, _K2), {}),
        _Case("aging + budget (stage 4)", doc([_AGING_TEXT, _BUDGET2_TEXT]), both, present),
        _Case("aging + budget (no stage)", doc([_AGING_TEXT, _BUDGET2_TEXT]), both, {}),
    )


def _kernel_policy(case: _Case) -> QueuePolicy:
    return load_policy(dict(case.document)).unwrap()


def _spec_policy(case: _Case) -> spec.SpecPolicy:
    return spec.SpecPolicy(case.spec_keys, {}, case.timing)


# ----------------------------------------------------------------------------- levels and units


def _bounds(level: Level) -> Mapping[str, str]:
    one, two = DOMAIN[level]
    return {
        "one-key queues": f"0..{one} entries, each key NaN, -inf, -1.0, -0.0, 0.0, 1.0, +inf",
        "two-key queues": f"0..{two} entries, each key NaN, -0.0, 0.0, 1.0",
        "resumed prefixes": "every one: 0..n entries resumed at the front",
        "policies (one key)": "fifo (both timings), k / d (both timings), k / d - now"
        " (enqueue timing: the clock at enqueue), aging on waited,"
        " budget_left(engine) with the stage present and absent",
        "policies (two keys)": "k / d, k2 / d2 (both timings); aging and budget keys,"
        " stage present and absent",
        "attempts": "select_waiting, and attempt_admission with fits always, never, and"
        " every entry but the selected one",
        "moment": "now 4; entry i enqueued at i; budget_left(engine) 4 or absent",
    }


def _units(level: Level) -> Sequence[object]:
    one, two = DOMAIN[level]
    units: list[object] = []
    for domain, longest in (("one", one), ("two", two)):
        cells = len(ONE_KEY_DOMAIN) if domain == "one" else len(TWO_KEY_DOMAIN) ** 2
        units.append((domain, 0, 0, None))
        units += [
            (domain, n, r, first)
            for n in range(1, longest + 1)
            for r in range(n + 1)
            for first in range(cells)
        ]
    return units


# ----------------------------------------------------------------------------- the queues


def _always(_entry: object) -> bool:
    return True


def _never(_entry: object) -> bool:
    return False


def value_attributes(
    domain: Sequence[tuple[str, float, float]], two: bool
) -> tuple[dict[str, float], ...]:
    """The attributes of every cell: a value index (one key) or a pair of them (two)."""
    if not two:
        return tuple({"k": k, "d": d} for _, k, d in domain)
    return tuple(
        {"k": k, "d": d, "k2": k2, "d2": d2}
        for (_, k, d), (_, k2, d2) in itertools.product(domain, domain)
    )


class _Queues:
    """Kernel queues of one unit, built incrementally (see the module's reductions)."""

    def __init__(self, policy: QueuePolicy, cells: Sequence[Mapping[str, float]], resumed: int):
        self._policy = policy
        self._cells = cells
        self._resumed = resumed
        self._built: dict[tuple[int, tuple[int, ...]], WaitingQueue] = {}

    def queue(self, values: tuple[int, ...]) -> WaitingQueue:
        return self._from(0, values)

    def _from(self, start: int, values: tuple[int, ...]) -> WaitingQueue:
        """The queue of positions ``start``.. holding ``values``."""
        key = (start, values)
        found = self._built.get(key)
        if found is not None:
            return found
        policy = self._policy
        if not values:
            made = WaitingQueue()
        elif start < self._resumed:
            made = (
                self._from(start + 1, values[1:])
                .requeue_preempted(
                    policy, f"R{start}", self._cells[values[0]], serial=start, now=float(start)
                )
                .unwrap()
            )
        else:
            last = start + len(values) - 1
            made = (
                self._from(start, values[:-1])
                .append(policy, f"R{last}", self._cells[values[-1]], serial=last, now=float(last))
                .unwrap()
            )
        self._built[key] = made
        return made


# ----------------------------------------------------------------------------- comparing


def _same_keys(a: Sequence[float], b: Sequence[float]) -> bool:
    return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))


def _keys_text(keys: Sequence[float]) -> str:
    return "(" + ", ".join(_number_text(k) for k in keys) + ")"


def _number_text(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if x == 0 and math.copysign(1.0, x) < 0:
        return "-0.0"
    return f"{x:g}"


def _selection_problem(
    kernel: Selection | None, queue: WaitingQueue, answer: tuple[int, tuple[float, ...]] | None
) -> str | None:
    """What is wrong with the kernel's selection, or None."""
    if kernel is None or answer is None:
        if kernel is None and answer is None:
            return None
        return f"kernel {_selection_text(kernel)}, spec {_answer_text(answer)}"
    index, keys = answer
    if (
        kernel.index != index
        or not _same_keys(kernel.keys, keys)
        or kernel.index >= len(queue)
        or not same_entry(kernel.entry, queue.entries[kernel.index])
    ):
        return f"kernel {_selection_text(kernel)}, spec {_answer_text(answer)}"
    return None


def _selection_text(kernel: Selection | None) -> str:
    if kernel is None:
        return "nothing"
    return f"R{kernel.index} keys {_keys_text(kernel.keys)}"


def _answer_text(answer: tuple[int, tuple[float, ...]] | None) -> str:
    if answer is None:
        return "nothing"
    return f"R{answer[0]} keys {_keys_text(answer[1])}"


def _raised(error: Exception) -> str:
    return f"kernel raised {type(error).__name__}: {error}"


def _attempt(  # noqa: PLR0917 - one attempt, both sides
    queue: WaitingQueue,
    policy: QueuePolicy,
    moment: Moment,
    fits: Callable[[object], bool],
    answer: tuple[str, int | None, tuple[spec.SpecEntry, ...]],
    keys: tuple[float, ...],
) -> str | None:
    """What is wrong with the kernel's ``attempt_admission``, or None."""
    try:
        outcome = attempt_admission(queue, policy, moment, fits)
    except Exception as error:  # selection never raises
        return _raised(error)
    return _attempt_problem(outcome, queue, answer, keys)


def _attempt_problem(
    kernel: AdmissionOutcome,
    queue: WaitingQueue,
    answer: tuple[str, int | None, tuple[spec.SpecEntry, ...]],
    keys: tuple[float, ...],
) -> str | None:
    """What is wrong with the kernel's attempt, or None (``keys``: the spec's)."""
    outcome, index, rest = answer
    if outcome == "empty":
        if isinstance(kernel, QueueEmpty):
            return None
        return _attempt_text(kernel, answer, keys)
    assert index is not None
    wanted = Admitted if outcome == "admitted" else Blocked
    if not isinstance(kernel, wanted) or (
        _selection_problem(kernel.selection, queue, (index, keys)) is not None
    ):
        return _attempt_text(kernel, answer, keys)
    if isinstance(kernel, Blocked):
        if kernel.queue is queue or kernel.queue == queue:
            return None
        return f"kernel {_outcome_text(kernel)} but changed the queue"
    remaining = kernel.queue.entries
    if len(remaining) == len(rest) and all(
        entry.identity == wanted_entry.identity and same_entry(entry, queue.entries[position])
        for entry, wanted_entry, position in zip(
            remaining, rest, (i if i < index else i + 1 for i in range(len(rest))), strict=True
        )
    ):
        return None
    shown = ", ".join(str(e.identity) for e in remaining)
    wanted_rest = ", ".join(str(e.identity) for e in rest)
    return f"kernel left [{shown}] after {_outcome_text(kernel)}, spec left [{wanted_rest}]"


def _attempt_text(
    kernel: AdmissionOutcome,
    answer: tuple[str, int | None, tuple[spec.SpecEntry, ...]],
    keys: tuple[float, ...],
) -> str:
    outcome, index, _ = answer
    spec_text = "queue empty" if index is None else f"{outcome} {_answer_text((index, keys))}"
    return f"kernel {_outcome_text(kernel)}, spec {spec_text}"


def _outcome_text(kernel: AdmissionOutcome) -> str:
    if isinstance(kernel, QueueEmpty):
        return "queue empty"
    verb = "admitted" if isinstance(kernel, Admitted) else "blocked"
    return f"{verb} {_selection_text(kernel.selection)}"


# ----------------------------------------------------------------------------- counterexamples


def replay_verdict(document: Mapping[str, object]) -> bool | None:
    """Whether the scenario ``document`` passes on the current kernel (None: no
    ``expect``, or not a loadable scenario; False when the kernel raises)."""
    try:
        scenario = read_scenario(dict(document))
    except FieldError:
        return None
    if not isinstance(scenario, AdmissionScenario):
        return None
    try:
        return admission_result(replay_admission(scenario)).passed
    except Exception:  # a kernel that raises does not pass (the finding says what it raised)
        return False


def _attr_json(value: float) -> float | int:
    if value == 0 and math.copysign(1.0, value) < 0:
        return -0.0
    return int(value) if value.is_integer() else value


@dataclass(frozen=True, slots=True)
class _Found:
    """One disagreement, enough to write its counterexample."""

    case: _Case
    labels: tuple[str, ...]  # the key values of each entry, as text
    cells: tuple[Mapping[str, float], ...]  # each entry's attributes
    resumed: int
    fits: tuple[str, ...]  # the requests that fit
    answer: tuple[int, tuple[float, ...]] | None  # the spec's selection
    problem: str
    attempt: bool  # found in an attempt (else only in select_waiting)


def _fits_unless(chosen: object, entry: object) -> bool:
    return getattr(entry, "identity", None) != chosen


def fits_text(fits: tuple[str, ...], size: int) -> str:
    """Which of a queue of ``size`` entries fit, in words."""
    if not fits:
        return "never"
    if len(fits) == size:
        return "always"
    return "only " + ", ".join(fits)


def _counterexample(found: _Found) -> Counterexample:
    size = len(found.cells)
    requests: list[dict[str, object]] = []
    for i, cell in enumerate(found.cells):
        request: dict[str, object] = {"id": f"R{i}", "serial": i, "enqueue": i}
        if i < found.resumed:
            request["resumed"] = True
        request["attrs"] = {name: _attr_json(value) for name, value in cell.items()}
        requests.append(request)
    answer = found.answer
    expect: dict[str, object] = {
        "selected": [] if answer is None else [f"R{answer[0]}"],
        "admitted_at": [int(NOW)] if answer is not None and f"R{answer[0]}" in found.fits else [],
        "keys": [] if answer is None else list(answer[1]),
    }
    summary = (
        f"selection: [{', '.join(found.labels)}] ({found.resumed} resumed), policy"
        f" {found.case.name}, fits {fits_text(found.fits, size)}: {found.problem}"
    )
    document = attempt_document(
        f"selection-{size}-entries",
        summary,
        found.case.document,
        requests,
        int(NOW),
        {stage: int(left) for stage, left in found.case.budget_left.items()},
        list(found.fits),
        expect,
    )
    verdict = replay_verdict(document)
    if verdict is not False:
        where = "the attempts agree" if not found.attempt else "only the queue returned differs"
        summary += f" (not visible to a replay: {where})"
        document["description"] = summary
    return Counterexample("selection", size, summary, document)


# ----------------------------------------------------------------------------- the run


def run(level: Level, unit: object) -> Partial:
    """Every queue of one unit ``(domain, n, r, first)``: ``n`` entries, the first ``r``
    resumed, the front entry's value(s) ``first`` (``None`` for the empty queue)."""
    del level  # a unit's domain does not depend on the level
    assert isinstance(unit, tuple)
    domain_name, length, resumed, first = unit
    two = domain_name == "two"
    domain = TWO_KEY_DOMAIN if two else ONE_KEY_DOMAIN
    labels = tuple(
        f"({a}, {b})" for (a, _, _), (b, _, _) in itertools.product(domain, domain)
    ) if two else tuple(label for label, _, _ in domain)  # fmt: skip
    cells = value_attributes(domain, two)
    cases = policy_cases(two)
    kernel_policies = [_kernel_policy(case) for case in cases]
    spec_policies = [_spec_policy(case) for case in cases]
    moments = [Moment(NOW, case.budget_left) for case in cases]
    selection_builder = next(p for c, p in zip(cases, kernel_policies, strict=True)
                             if c.timing == "selection" and c.spec_keys is not None)  # fmt: skip
    selection_queues = _Queues(selection_builder, cells, resumed)
    # A policy that stores keys at enqueue needs queues built with that policy.
    builders = {
        case.name: _Queues(policy, cells, resumed) if case.stores_keys else selection_queues
        for case, policy in zip(cases, kernel_policies, strict=True)
    }
    spec_cells: dict[tuple[int, int], spec.SpecEntry] = {}

    def spec_entry(position: int, value: int) -> spec.SpecEntry:
        made = spec_cells.get((position, value))
        if made is None:
            made = spec.SpecEntry(
                f"R{position}", cells[value], float(position), float(position), position < resumed
            )
            spec_cells[(position, value)] = made
        return made

    found = Partial()
    plan = [
        (case, kernel_policy, spec_policy, moment, case.budget_left, builders[case.name])
        for case, kernel_policy, spec_policy, moment in zip(
            cases, kernel_policies, spec_policies, moments, strict=True
        )
    ]
    count = compared = 0
    fronts = [()] if first is None else [(first,)]
    for front, rest in itertools.product(
        fronts, itertools.product(range(len(cells)), repeat=max(length - 1, 0))
    ):
        values = front + rest
        count += 1
        spec_queue = tuple(spec_entry(i, v) for i, v in enumerate(values))
        for case, kernel_policy, spec_policy, moment, budget, builder in plan:
            queue = builder.queue(values)
            answer = spec.select(spec_queue, spec_policy, NOW, budget)
            try:
                kernel = select_waiting(queue, kernel_policy, moment).value_or(None)
            except Exception as error:  # selection never raises
                problem: str | None = _raised(error)
            else:
                problem = _selection_problem(kernel, queue, answer)
            keys = () if answer is None else answer[1]
            admitted_problem = _attempt(
                queue, kernel_policy, moment, _always,
                spec.admit(spec_queue, spec_policy, NOW, budget, _always), keys,
            )  # fmt: skip
            blocked_problem = _attempt(
                queue, kernel_policy, moment, _never,
                spec.admit(spec_queue, spec_policy, NOW, budget, _never), keys,
            )  # fmt: skip
            # Every entry fits but the selected one: the attempt must still block
            # (no fit-first skipping to an entry that would fit).
            compared += 3
            others: tuple[str, ...] = ()
            others_problem = None
            if answer is not None and len(values) > 1:
                chosen = spec_queue[answer[0]].identity
                others = tuple(str(e.identity) for e in spec_queue if e.identity != chosen)
                but_chosen = partial(_fits_unless, chosen)
                compared += 1
                others_problem = _attempt(
                    queue, kernel_policy, moment, but_chosen,
                    spec.admit(spec_queue, spec_policy, NOW, budget, but_chosen), keys,
                )  # fmt: skip
            if (
                problem is None
                and admitted_problem is None
                and blocked_problem is None
                and others_problem is None
            ):
                continue
            report = partial(_Found, case, tuple(labels[v] for v in values),
                             tuple(cells[v] for v in values), resumed)  # fmt: skip
            every = tuple(str(e.identity) for e in spec_queue)
            for fitting, attempt_problem in (
                (every, admitted_problem),
                ((), blocked_problem),
                (others, others_problem),
            ):
                if attempt_problem is not None:
                    found.disagree(
                        partial(_counterexample, report(fitting, answer, attempt_problem, True)),
                        length,
                    )
            if problem is not None and admitted_problem is None and blocked_problem is None:
                only = report(every, answer, "select_waiting: " + problem, False)
                found.disagree(partial(_counterexample, only), length)
    found.count("queues", count)
    found.count("policy-moment cases", count * len(plan))
    found.count("selections and attempts compared", compared)
    return found


SELECTION = Check(
    name="selection",
    description="select_waiting and one attempt_admission on every small waiting queue",
    bounds=_bounds,
    units=_units,
    run=run,
)
