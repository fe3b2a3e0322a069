"""``--policy FILE``: the selection checks under an implementer's own policies, with
a domain derived from each policy, each shown to catch a broken implementation."""

from __future__ import annotations

import io
import json
import math
import os
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from returns.maybe import Maybe

from oracle.cli import main
from oracle.conformance import (
    SelectionBounds,
    assert_conforms,
    assert_disagrees,
    check_admission_attempt,
    check_selection,
    kernel_implementation,
    run_conformance,
)
from oracle.conformance.own_policies import (
    MOST_ENTRY_VALUES,
    MOST_TREE_DEPTH,
    OwnPolicy,
    own_policy,
)
from policy.waiting import (
    Moment,
    QueuePolicy,
    Selection,
    WaitingQueue,
    ascend_fcfs_lanes,
    dump_policy,
    select_waiting,
    vllm_priority,
)
from tests.oracle.conformance import broken
from tests.replay_helpers import cli, one_line

ASCEND = own_policy("ascend-aging", dict(dump_policy(ascend_fcfs_lanes(128, 3.0))))
VLLM = own_policy("vllm-priority", dict(dump_policy(vllm_priority())))
OWN = SelectionBounds(2, 0).with_policies((ASCEND, VLLM))


def test_the_domain_reaches_the_policys_own_thresholds() -> None:
    assert ASCEND.values["prompt"][3:6] == (127.0, 128.0, 129.0)  # both sides of short_tokens
    assert ASCEND.nows == (3.0, 4.0)  # waited >= max_wait, on both sides
    assert VLLM.attributes == ("arrival_time", "priority")
    assert "policies: yours: ascend-aging (immediate 0, 1, 2, nan;" in "\n".join(
        f"{k}: {v}" for k, v in OWN.describe().items()
    )


def test_the_kernel_conforms_under_its_own_policies() -> None:
    kernel = kernel_implementation()
    assert_conforms(
        check_selection(kernel, bounds=OWN), check_admission_attempt(kernel, bounds=OWN)
    )
    reports = run_conformance(kernel, level="quick", checks=("selection",), policies=(VLLM,))
    assert reports[0].bounds["policies"].startswith("yours: vllm-priority")


def _aging_ignored(queue: WaitingQueue, policy: QueuePolicy, moment: Moment) -> Maybe[Selection]:
    """Keys evaluated as if nobody had waited (the clock stopped at each enqueue)."""
    return select_waiting(queue, policy, Moment(now=0.0, budget_left=moment.budget_left))


def test_a_broken_selection_is_caught_under_the_implementers_policies() -> None:
    aging = assert_disagrees(check_selection(_aging_ignored, bounds=OWN))
    assert "policy ascend-aging, now 3" in aging.where
    ties = assert_disagrees(check_selection(broken.later_entry_on_ties, bounds=OWN))
    assert ties.where == (  # the smallest: two entries of equal keys
        "queue [(immediate 0, prompt 0), (immediate 0, prompt 0)] (0 resumed),"
        " policy ascend-aging, now 2"
    )
    assert ties.inputs["policy"] == ASCEND.document
    assert (ties.expected, ties.answered) == ({"index": 0, "keys": [2]}, {"index": 1, "keys": [2]})
    assert_disagrees(check_admission_attempt(broken.fit_first, bounds=OWN))


def test_a_refused_policy_names_itself() -> None:
    with pytest.raises(ValueError, match=r"^policy mine: keys\[0\]"):
        own_policy("mine", {"keys": ["prompt +"]})
    with pytest.raises(ValueError, match="a policy document is a JSON object"):
        own_policy("mine", [1])


def _chain(terms: int) -> dict[str, object]:
    """A key the kernel takes however long (chains do not nest): ``a + a + ...``."""
    return {"attributes": {"a": "visible"}, "keys": [" + ".join(["a"] * terms)]}


@settings(max_examples=25, deadline=None)
@given(terms=st.integers(min_value=1, max_value=10_000))
@example(terms=MOST_TREE_DEPTH)
@example(terms=10_000)
def test_every_chain_the_kernel_takes_is_taken_or_refused_in_one_line(terms: int) -> None:
    if terms > MOST_TREE_DEPTH:
        refused = f"^policy chain: keys\\[0\\] is a tree {terms:,} nodes deep [^\\n]*$"
        with pytest.raises(ValueError, match=refused):
            own_policy("chain", _chain(terms))
        return
    policy = own_policy("chain", _chain(terms))
    if terms == MOST_TREE_DEPTH:  # the deepest taken is read by the spec without a crash
        bounds = SelectionBounds(1, 0).with_policies((policy,))
        assert_conforms(check_selection(select_waiting, bounds=bounds))


@settings(max_examples=25, deadline=None)
@given(count=st.integers(min_value=1, max_value=1000))
def test_many_attributes_are_taken_with_a_bounded_domain_or_refused(count: int) -> None:
    document = {"attributes": {f"a{i}": "visible" for i in range(count)}, "keys": ["a0"]}
    try:
        policy: OwnPolicy | str = own_policy("wide", document)
    except ValueError as error:
        policy = str(error)
    if isinstance(policy, str):
        assert f"its {count:,} attributes make" in policy
        assert f"the kit checks at most {MOST_ENTRY_VALUES:,}" in policy
    else:
        assert math.prod(len(values) for values in policy.values.values()) <= MOST_ENTRY_VALUES


def test_the_command_line_reads_policy_files(
    tmp_path: Path, kit_options: dict[str, object]
) -> None:
    seen = kit_options
    good = tmp_path / "lanes.json"
    good.write_text(json.dumps(dict(dump_policy(ascend_fcfs_lanes(128, 3.0)))))
    arguments = ["verify", "--against-command", "x", "--policy", str(good), "--policy", str(good)]
    assert main(arguments, out=io.StringIO(), err=io.StringIO()) == 0
    policies = seen["policies"]
    assert isinstance(policies, list)
    assert [p.name for p in policies] == ["lanes", "lanes"]
    bad = tmp_path / "bad.json"
    for content, message in (
        ("{", "not JSON"),
        ('{"keys": ["prompt +"]}', "keys[0]"),
        ('{"keys": ["prompt"], "keys": ["-prompt"]}', 'duplicate key "keys"'),
        ('{"let": {"k": NaN}}', "not JSON"),
        (json.dumps(_chain(10_000)), "keys[0] is a tree 10,000 nodes deep"),
        (
            json.dumps({"attributes": dict.fromkeys(map("a{}".format, range(40)), "visible")}),
            "its 40 attributes make 12,157,665,459,056,928,801 values of one queue entry",
        ),
    ):
        bad.write_text(content)
        err = io.StringIO()
        status = main(
            ["verify", "--against-command", "x", "--policy", str(bad)], out=io.StringIO(), err=err
        )
        assert status == 2
        assert err.getvalue().count("\n") == 1
        assert message in err.getvalue()
    err = io.StringIO()
    assert (
        main(
            ["verify", "--against-command", "x", "--policy", str(tmp_path / "none.json")],
            out=io.StringIO(),
            err=err,
        )
        == 2
    )
    assert "No such file" in err.getvalue()
    err = io.StringIO()
    assert main(["verify", "--policy", str(good)], out=io.StringIO(), err=err) == 2
    assert err.getvalue() == "policy-kernel: --policy applies to --against-command\n"


def test_a_fifo_as_a_policy_file_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "mine.json"
    os.mkfifo(fifo)  # no writer ever comes: a blocking open waits for ever
    done = cli("verify", "--against-command", "x", "--policy", str(fifo))
    assert done.returncode == 2
    assert one_line(done.stderr.decode()) == (
        f"policy-kernel: --policy {fifo}: cannot read the policy file: not a regular file (a FIFO)"
    )


def test_stage_thresholds_are_tried_on_both_sides() -> None:
    staged = own_policy("staged", {"keys": ["budget_left(engine) >= 64 ? 0 : 1"]})
    assert staged.stage_values == (1.0, 63.0, 64.0)

    def off_by_one(queue: WaitingQueue, policy: QueuePolicy, moment: Moment) -> Maybe[Selection]:
        """Reads 63 left as 64 (the stage's threshold one too low)."""
        left = {s: v + 1 if v == 63 else v for s, v in moment.budget_left.items()}
        return select_waiting(queue, policy, Moment(now=moment.now, budget_left=left))

    bounds = SelectionBounds(2, 0).with_policies((staged,))
    assert_conforms(check_selection(kernel_implementation(), bounds=bounds))
    assert_disagrees(check_selection(off_by_one, bounds=bounds))
