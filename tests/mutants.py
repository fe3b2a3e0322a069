"""Deliberately broken kernels: each must make the suite fail.

A check that cannot fail is a defect. This script copies the project to a
scratch folder, applies one mutation of the kernel (or of a harness engine) at
a time, runs the whole
pytest suite against the copy and reports which tests caught it.

    .venv/bin/python -m tests.mutants            # every mutant, the whole suite each
                                                 # (about 4 minutes a mutant on 2 cores)
    .venv/bin/python -m tests.mutants --first    # each run stops at its first failing
                                                 # test: names one catcher, far quicker
    .venv/bin/python -m tests.mutants -k skip    # mutants whose name contains "skip"
    .venv/bin/python -m tests.mutants -k line --tests tests/waiting   # those tests only
    .venv/bin/python -m tests.mutants --verify   # policy-kernel verify --quick on each
                                                 # kernel mutant (about 20 s each)

Exit status 1 when a mutant survives. Not part of ``./dev test``: it runs the
suite once per mutant.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class Mutant:
    name: str
    file: str
    original: str
    broken: str
    #: Why no scenario can show this mutant (verify must still exit 1), if none can.
    not_replayable: str = ""


MUTANTS = [
    # rotation: the pure decisions
    Mutant(
        "lane order flipped",
        "policy/rotation/decisions.py",
        "if lane > best_lane:",
        "if lane < best_lane:",
    ),
    Mutant(
        "most skipped: latest among equals",
        "policy/rotation/decisions.py",
        "if skipped > most_skipped:",
        "if skipped >= most_skipped:",
    ),
    Mutant(
        "expiry with > instead of >=",
        "policy/rotation/decisions.py",
        "slices_in_grant >= budget",
        "slices_in_grant > budget",
    ),
    Mutant(
        "backlog admits one more",
        "policy/rotation/decisions.py",
        "backlog_len < BACKLOG_CAP",
        "backlog_len <= BACKLOG_CAP",
    ),
    Mutant(
        "alternation ignored",
        "policy/rotation/decisions.py",
        "return not others_have_work or not yielded",
        "return True",
    ),
    # rotation: the public wrappers alone (the protocol calls the bodies: only the
    # public decisions check sees these)
    Mutant(
        "public expiry off by one",
        "policy/rotation/decisions.py",
        "return grant_expired(slices_in_grant, budget, backlog_pending)",
        "return grant_expired(slices_in_grant - 1, budget, backlog_pending)",
        not_replayable="scenarios reach the expiry only through the protocol's body",
    ),
    Mutant(
        "public backlog cap ignores the budget",
        "policy/rotation/decisions.py",
        "return backlog_has_room(backlog_len, budget)",
        "return backlog_has_room(backlog_len, 1)",
        not_replayable="scenarios reach the backlog cap only through the protocol's body",
    ),
    Mutant(
        "public alternation ignores idle classic work",
        "policy/rotation/decisions.py",
        "return takes_tick(yielded, others_have_work)",
        "return takes_tick(yielded, True)",
        not_replayable="scenarios reach the alternation only through the protocol's body",
    ),
    Mutant(
        "budget setting untrimmed",
        "policy/rotation/decisions.py",
        "_GRANT_ROUNDS_SYNTAX.fullmatch(trim(raw))",
        "_GRANT_ROUNDS_SYNTAX.fullmatch(raw.strip())",
        not_replayable="scenarios give budgets as numbers, not setting texts",
    ),
    Mutant(
        "lane header untrimmed",
        "policy/rotation/lanes.py",
        "_LANES_BY_HEADER.get(trim(header).lower(), Lane.NORMAL)",
        "_LANES_BY_HEADER.get(header.lower(), Lane.NORMAL)",
        not_replayable="scenarios give lanes by name, not header texts",
    ),
    # rotation: the backlog
    Mutant(
        "missing skip increment",
        "policy/rotation/backlog.py",
        "replace(entry, skipped=entry.skipped + 1)",
        "replace(entry, skipped=entry.skipped)",
    ),
    Mutant(
        "skip count kept on re-entry",
        "policy/rotation/backlog.py",
        "self.entries.append(replace(entry, skipped=0))",
        "self.entries.append(entry)",
        not_replayable="the protocol only appends entries with 0 skips: only a host using"
        " GrantBacklog directly sees it (the grant order check does)",
    ),
    # rotation: the protocol
    Mutant(
        "admission slice 0 checked",
        "policy/rotation/protocol.py",
        "if job.in_flight is not SliceKind.ADMISSION_SLICE0 and expired:",
        "if expired:",
    ),
    Mutant(
        "second direct admission in one tick",
        "policy/rotation/protocol.py",
        "if active is None and not backlog.entries and not state.acted:",
        "if active is None and not backlog.entries:",
    ),
    Mutant(
        "park without contention",
        "policy/rotation/protocol.py",
        "grant_expired(slices, job.budget, bool(state.backlog.entries))",
        "grant_expired(slices, job.budget, True)",
    ),
    Mutant(
        "mlxcel direct admission sets yielded",
        "policy/rotation/protocol.py",
        "yielded=state.profile is RulesProfile.SEED,  # mlxcel's Prefill arm clears it",
        "yielded=True,",
    ),
    Mutant(
        "mlxcel empty promotion gives the tick away",
        "policy/rotation/protocol.py",
        "if state.profile is not RulesProfile.SEED:",
        "if False:",
    ),
    Mutant(
        "cancelled no-op slice not counted",
        "policy/rotation/protocol.py",
        "grants=(GrantEnd(request=request, slices=slices_in_grant + 1, parked=False),),",
        "grants=(GrantEnd(request=request, slices=slices_in_grant, parked=False),),",
    ),
    Mutant(
        "declined waiter aborted",
        "policy/rotation/protocol.py",
        "ended += (Ended(request=request, ending=Ending.ROUTED_CLASSIC),)",
        "ended += (Ended(request=request, ending=Ending.ABORTED),)",
    ),
    Mutant(
        "budget read every round",
        "policy/rotation/protocol.py",
        "job = replace(active, in_flight=SliceKind.ROUND)",
        "job = replace(active, in_flight=SliceKind.ROUND, budget=event.budget)",
    ),
    Mutant(
        "declined verdict applied to parked jobs",
        "policy/rotation/protocol.py",
        "            kind, branch = SliceKind.ROUND, Branch.PARKED_PROMOTION\n",
        "            kind, branch = SliceKind.ROUND, Branch.PARKED_PROMOTION\n"
        "            if request in event.declined:\n"
        "                branches += (Branch.DECLINED_WAITER,)\n"
        "                ended += (Ended(request=request, ending=Ending.ROUTED_CLASSIC),)\n"
        "                continue\n",
    ),
    # waiting selection: the fast paths, one per path and more (the plain definition
    # is select_reference)
    Mutant(
        "fifo path selects the last entry",
        "policy/waiting/fast/in_order.py",
        '        """The first entry (O(1))."""\n        return self.line.first()',
        '        """The first entry (O(1))."""\n        return self.line.at(len(self.line) - 1)',
    ),
    Mutant(
        "static path selects from the last class",
        "policy/waiting/fast/key_order.py",
        "run, rest, _ = self.classes[self.order.first()]",
        "run, rest, _ = self.classes[self.order.at(len(self.order) - 1)]",
    ),
    Mutant(
        "scan path takes the first row",
        "policy/waiting/fast/in_order.py",
        "        at, keys = plan.scan(rows, now, budget_left)\n        return rows[at], keys",
        "        at, keys = plan.scan(rows, now, budget_left)\n        return rows[0], keys",
    ),
    Mutant(
        "ties go to the later entry (class heads)",
        "policy/waiting/fast/lanes.py",
        "rank = ordering(keys, head[TICKET])",
        "rank = ordering(keys, -head[TICKET])",
    ),
    Mutant(
        "class heads without the time-order guard",
        "policy/waiting/fast/lanes.py",
        "        if not self.in_time_order:\n            return scan_selected(",
        "        if False:\n            return scan_selected(",
    ),
    Mutant(
        "resumed front ignored",
        "policy/waiting/queue.py",
        "        if self._resumed:\n            return as_entry(self._resumed.first()), ()",
        "        if False:\n            return as_entry(self._resumed.first()), ()",
    ),
    Mutant(
        "dynamic keys cached at enqueue",
        "policy/waiting/fast/plan.py",
        "path, lanes = path_and_plan(keys, constants, timing)",
        'path, lanes = ("static" if keys else "fifo"), None',
    ),
    Mutant(
        "keys evaluated at selection under enqueue timing",
        "policy/waiting/fast/plan.py",
        '        if self.policy.timing == "enqueue":\n            stored = entry[ENQUEUE_KEYS]\n'
        "            if stored is not None:",
        "        if False:\n            stored = entry[ENQUEUE_KEYS]\n"
        "            if stored is not None:",
    ),
    Mutant(
        "an arrival out of key order joins its class's run",
        "policy/waiting/fast/key_order.py",
        "                    if top is None or place > top:",
        "                    if True:",
    ),
    Mutant(
        "a dispatch position in a class bisected off by one",
        "policy/waiting/fast/key_order.py",
        "                low = taken + 1",
        "                low = taken + 2",
    ),
    Mutant(
        "a class's arrivals joined out of key order",
        "policy/waiting/fast/key_order.py",
        "if places == sorted(places) and (top is None or places[0] > top):",
        "if True:",
    ),
    Mutant(
        "admission pass ignores the resumed prefix",
        "policy/waiting/queue.py",
        "        if not self._resumed:\n            return fresh\n",
        "        if True:\n            return fresh\n",
    ),
    Mutant(
        "fit-first skipping",
        "policy/waiting/select.py",
        "    if not fits(selection.entry):\n"
        "        return Blocked(selection, queue)\n    return Admitted(",
        "    if not fits(selection.entry):\n"
        "        rest = queue.without(selection.entry)\n"
        "        if len(rest) and fits(rest.first()):\n"
        "            front = rest.first()\n"
        "            return Admitted(Selection(front, (), rest), rest.without(front))\n"
        "        return Blocked(selection, queue)\n    return Admitted(",
    ),
    # the queue and its line
    Mutant(
        "rows kept as named tuples the collector tracks",
        "policy/waiting/queue.py",
        "                entries.append((identity, order, values, serial, now, False, keys,"
        " ticket, carried))",
        "                entries.append(WaitingEntry._make(\n"
        "                    (identity, order, values, serial, now, False, keys, ticket, carried)\n"
        "                ))",
    ),
    Mutant(
        "a checked row kept as a named tuple the collector tracks",
        "policy/waiting/queue.py",
        "        row: Row = (identity, names, values, serial, at, resumed, keys, ticket, carried)",
        "        row: Row = WaitingEntry(\n"
        "            identity, names, values, serial, at, resumed, keys, ticket, carried\n"
        "        )",
    ),
    Mutant(
        "an entry that leaves stays in the identity index",
        "policy/waiting/queue.py",
        "        ids, stamp = self._claimed()\n        ids.entries.pop(entry[IDENTITY])\n",
        "        ids, stamp = self._claimed()\n",
    ),
    Mutant(
        "a refused batch's first requests stay in the identity index",
        "policy/waiting/queue.py",
        "            ids.dropped(entries)  # the batch joined the index: undone\n",
        "            pass\n",
    ),
    Mutant(
        "the first dispatched leave but stay in the identity index",
        "policy/waiting/queue.py",
        "        ids, stamp = self._claimed()\n        ids.dropped(rows)\n",
        "        ids, stamp = self._claimed()\n",
    ),
    Mutant(
        "the first dispatched leave without the resumed prefix",
        "policy/waiting/queue.py",
        "        leading = min(count, len(resumed))  # the resumed prefix leaves first",
        "        leading = 0",
    ),
    Mutant(
        "fifo's first dispatched leave one short",
        "policy/waiting/fast/in_order.py",
        "return InOrder(self.plan, self.line.without_first(count)), leaving",
        "return InOrder(self.plan, self.line.without_first(count - 1)), leaving",
    ),
    Mutant(
        "static's first dispatched named in queue order",
        "policy/waiting/fast/key_order.py",
        "        leaving = list(islice(self._in_key_order(), count))\n"
        "        return self._without_first(",
        "        leaving = list(islice(self.in_queue_order(), count))\n"
        "        return self._without_first(",
    ),
    Mutant(
        "an older version takes its successor's identity index",
        "policy/waiting/queue.py",
        "        if ids is not None and ids.claimed(stamp):\n",
        "        if ids is not None:\n",
    ),
    Mutant(
        "a merged branch loses its separator",
        "policy/waiting/fast/line.py",
        "joined = ((*a[0], seps[low], *b[0]), a[1] + b[1], a[2] + b[2])",
        "joined = ((*a[0], *b[0]), a[1] + b[1], a[2] + b[2])",
    ),
    Mutant(
        "the back leaf flushed without its last item",
        "policy/waiting/fast/line.py",
        "return self._with_last_leaf((keys[:-1], items[:-1]), (keys[-1:], items[-1:]), size)",
        "return self._with_last_leaf((keys[:-2], items[:-2]), (keys[-1:], items[-1:]), size)",
    ),
    Mutant(
        "NaN sorts first",
        "policy/waiting/evaluate.py",
        "return (1, 0.0)",
        "return (-1, 0.0)",
    ),
    Mutant(
        "-0.0 ordered below 0.0",
        "policy/waiting/evaluate.py",
        "return (0, value + 0.0)  # + 0.0 turns -0.0 into 0.0",
        "return (0, value, math.copysign(1.0, value))  # type: ignore[return-value]",
    ),
    Mutant(
        "min and max skip NaN",
        "policy/waiting/evaluate.py",
        "        if math.isnan(value):\n            return NAN\n        ranked.append(",
        "        if math.isnan(value):\n            continue\n        ranked.append(",
    ),
    Mutant(
        "preempted request held with the fresh ones",
        "policy/waiting/queue.py",
        "                queue._resumed.joined(made[TICKET], made),\n                queue._fresh,",
        "                queue._resumed,\n"
        "                queue._fresh.joined(made),  # type: ignore[union-attr]",
    ),
    # the drop-in's batches
    Mutant(
        "a step's arrivals joined in reverse",
        "policy/adapters/batches.py",
        "made = queue.extend(policy, self._waiting)",
        "made = queue.extend(policy, self._waiting[::-1])",
    ),
    Mutant(
        "a taken admission taken again",
        "policy/adapters/batches.py",
        "        else:\n            self._ahead = None\n        self._taken.append(chosen)",
        "        self._taken.append(chosen)",
    ),
    Mutant(
        "a popped request kept by the drop-in",
        "policy/adapters/vllm.py",
        "                request = self._requests.pop(chosen[0].identity)\n"
        "                if admissions.count >= CHUNK:",
        "                request = self._requests[chosen[0].identity]\n"
        "                if admissions.count >= CHUNK:",
    ),
    # the SGLang plugin
    Mutant(
        "the sglang mirror ties on priority alone",
        "policy/adapters/sglang.py",
        'then = [("entry_time", "entry_time")] if priority else []',
        "then = []",
    ),
    Mutant(
        "a retracted request back keeps its old stay",
        "policy/adapters/sglang.py",
        "if stay is not None and stay.retraction_count == req.retraction_count:",
        "if stay is not None:",
    ),
    Mutant(
        "the ranked order ties by arrival, not by queue order",
        "policy/adapters/sglang.py",
        "stays[rid].rank = ordering(keys, entry.ticket)",
        "stays[rid].rank = ordering(keys, stays[rid].serial)",
    ),
    Mutant(
        "a changed matched prefix is not read again",
        "policy/adapters/sglang.py",
        "        if self._changing:\n            fresh = ",
        "        if False:\n            fresh = ",
    ),
    # the harness engines (their checks are the golden files and the engine properties)
    Mutant(
        "pool admits before arrivals",
        "oracle/harness/pool_engine.py",
        "(pool.release_due, pool.queue_arrivals, pool.admit_while_fits)",
        "(pool.release_due, pool.admit_while_fits, pool.queue_arrivals, pool.admit_while_fits)",
    ),
    # Equivalent, so not listed: admitting between the arrivals and the releases
    # of one event time. Fit is monotone in free units and selection ignores the
    # pool, so whatever fits before a release is also what is selected after it.
    Mutant(
        "pool fit strict",
        "oracle/harness/pool_engine.py",
        "return self.used + self.requests[entry.identity].units <= self.cap",
        "return self.used + self.requests[entry.identity].units < self.cap",
    ),
    Mutant(
        "step preempts the oldest",
        "oracle/harness/step_engine.py",
        "victim = self.residents.pop()",
        "victim = self.residents.pop(0)",
    ),
    Mutant(
        "step admits before residents take tokens",
        "oracle/harness/step_engine.py",
        "left = stage.serve_residents(start, events)",
        "stage.admit(start, engine.budget, events)\n"
        "        left = stage.serve_residents(start, events)",
    ),
    Mutant(
        "step admits after a preemption",
        "oracle/harness/step_engine.py",
        "if not any(isinstance(event, Preemption) for event in events):",
        "if True:",
    ),
]


def _mutated_tree(mutant: Mutant, scratch: Path) -> Path:
    tree = scratch / "tree"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(
        ROOT,
        tree,
        ignore=shutil.ignore_patterns(".venv*", ".git", "*_cache", ".hypothesis", "__pycache__"),
    )
    target = tree / mutant.file
    text = target.read_text()
    if text.count(mutant.original) != 1:
        raise SystemExit(f"mutant {mutant.name!r}: its original text is not in {mutant.file} once")
    target.write_text(text.replace(mutant.original, mutant.broken))
    return tree


def _run(tree: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, *arguments], cwd=tree, env=env, capture_output=True, text=True, check=False
    )


def run_mutant(mutant: Mutant, scratch: Path, tests: list[str], first: bool = False) -> list[str]:
    """The tests (of ``tests``, or all) that fail with ``mutant`` applied (empty: it
    survived); with ``first``, only the first that fails."""
    tree = _mutated_tree(mutant, scratch)
    stop = ["-x"] if first else []
    # tests/test_mutants.py fails on every mutated tree (the mutant's original text is
    # gone from it): it would name itself the catcher of every mutant, survivors too
    pytest = ["-m", "pytest", "-p", "no:cacheprovider", "-q", "--tb=no", "-rf"]
    done = _run(tree, *pytest, "--deselect=tests/test_mutants.py", *stop, *tests)
    return sorted(
        {
            line.split()[1].split("[")[0]
            for line in done.stdout.splitlines()
            if line.startswith("FAILED")
        }
    )


def verify_mutant(mutant: Mutant, scratch: Path, level: str) -> str:
    """'' when ``policy-kernel verify`` catches ``mutant`` with a counterexample that
    replays (it fails on the mutant and passes on the real kernel); else what went wrong."""
    tree = _mutated_tree(mutant, scratch)
    out = scratch / "counterexamples"
    shutil.rmtree(out, ignore_errors=True)
    done = _run(tree, "-m", "oracle.cli", "verify", f"--{level}", "--out", str(out))
    if done.returncode != 1:
        return f"verify exited {done.returncode}"
    if mutant.not_replayable:
        return ""
    files = sorted(out.glob("*.json"))
    if not files:
        return "verify wrote no replayable counterexample"
    for file in files:
        on_mutant = _run(tree, "-m", "oracle.cli", "replay", str(file)).returncode
        on_kernel = _run(ROOT, "-m", "oracle.cli", "replay", str(file)).returncode
        if (on_mutant, on_kernel) == (1, 0):
            return ""
    return f"no counterexample fails on the mutant and passes on the kernel ({len(files)} files)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only mutants whose name contains this text")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="check that 'policy-kernel verify --quick' catches each kernel mutant"
        " (policy/ only) with a counterexample that replays, instead of running pytest",
    )
    parser.add_argument(
        "--first",
        action="store_true",
        help="stop each mutant's run at its first failing test (names one catcher)",
    )
    parser.add_argument("--level", default="quick", choices=["quick", "default", "deep"])
    parser.add_argument(
        "--tests",
        nargs="*",
        default=[],
        help="run only these test paths against each mutant (a quicker first look; the"
        " whole suite by default)",
    )
    arguments = parser.parse_args()
    chosen = [m for m in MUTANTS if arguments.k in m.name]
    if arguments.verify:
        chosen = [m for m in chosen if m.file.startswith("policy/")]
    survivors = 0
    with tempfile.TemporaryDirectory() as scratch:
        for mutant in chosen:
            if arguments.verify:
                problem = verify_mutant(mutant, Path(scratch), arguments.level)
                survivors += bool(problem)
                verdict = (
                    f"SURVIVED: {problem}"
                    if problem
                    else f"caught ({mutant.not_replayable})"
                    if mutant.not_replayable
                    else "caught, counterexample replays"
                )
            else:
                caught = run_mutant(mutant, Path(scratch), arguments.tests, arguments.first)
                survivors += not caught
                verdict = (
                    f"caught by {len(caught)}: {', '.join(caught[:3])}" if caught else "SURVIVED"
                )
            print(f"{mutant.name:40} {verdict}", flush=True)
    print(f"mutants: {len(chosen) - survivors} passed, {survivors} failed")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
