"""Every selection fast path against the plain definition.

- exhaustively, every small queue (``oracle.checks.fast_paths``), each path;
- on random large queues under random operations (appends out of time order,
  requeues, removals), selection, the dispatch order and the admission pass;
- each check once against a deliberately wrong fast path, which it must catch.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from oracle.checks.fast_paths import check_paths, policies_checked
from policy.waiting import (
    Admitted,
    Moment,
    QueuePolicy,
    RequestId,
    WaitingQueue,
    admit_many,
    ascend_fcfs_lanes,
    attempt_admission,
    dispatch_order,
    dispatched_at,
    fifo,
    make_policy,
    same_entry,
    select_reference,
    select_waiting,
    selection_path,
    static_priority,
)
from policy.waiting.fast import plan as plan_module
from policy.waiting.fast.analysis import LanePlan
from policy.waiting.fast.compiled import compile_expression
from policy.waiting.modes import Timing


@contextmanager
def _forced(path: str, lanes: LanePlan | None = None) -> Iterator[None]:
    """Every plan made meanwhile has its path forced, as a wrong analysis would choose
    it (the memo of plans is this module's to clear: plans are made once per policy)."""
    made = plan_module._made  # internal: where plans are made, the seam to force a path

    def forced(*arguments: object) -> plan_module.KeyPlan:
        plan = made(*arguments)  # type: ignore[arg-type]
        parts = (
            ()
            if lanes is None
            else tuple(
                (compile_expression(part.expr, plan.policy.constants, plan.names), part.truth)
                for part in lanes.components
            )
        )
        return dataclasses.replace(plan, path=path, lanes=lanes, components=parts)  # type: ignore[arg-type]

    plan_module._plan.cache_clear()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plan_module, "_made", forced)
        try:
            yield
        finally:
            plan_module._plan.cache_clear()


def test_every_small_queue_selects_as_the_definition() -> None:
    # two entries, as `verify --quick` (the main job); three are `verify`'s default
    # level (27 s here, a tenth of the suite: docs/oracle.md)
    assert check_paths(max_entries=2) == []


def test_paths_are_the_ones_the_checks_mean() -> None:
    paths = {name: selection_path(policy) for name, policy in policies_checked()}
    assert paths == {
        "ascend lanes, aging 1.5": "lanes",
        "ascend lanes, no aging": "lanes",
        "lanes: -waited within classes": "lanes",
        "static: prompt": "static",
        "static at enqueue: now + prompt": "static",
        "scan: waited - prompt": "scan",
        "scan: budget": "scan",
    }


def test_a_lane_path_for_a_key_worse_with_age_is_caught() -> None:
    aging = make_policy(["waited"]).unwrap()
    with _forced("lanes", LanePlan((), 1)):
        found = check_paths([("waited, forced onto lanes", aging)], max_entries=2)
    assert found, "a lane path for a key that gets worse with age must be caught"


def test_a_static_path_for_a_dynamic_key_is_caught() -> None:
    dynamic = make_policy(["waited - prompt"], attributes=["prompt", "immediate"]).unwrap()
    with _forced("static"):
        found = check_paths([("dynamic, forced static", dynamic)], max_entries=2)
    assert found


def _random_queue(
    draw: random.Random, policy: QueuePolicy, size: int, *, in_order: bool
) -> WaitingQueue:
    queue, clock = WaitingQueue(), 0.0
    for serial in range(size):
        clock += draw.random() if in_order else draw.uniform(-1.0, 1.0)
        attributes = {
            "immediate": draw.random() < 0.1,
            "prompt": draw.randint(1, 8),
            "priority": draw.randint(0, 3),
        }
        add = queue.requeue_preempted if draw.random() < 0.02 else queue.append
        queue = add(policy, f"r{serial}", attributes, serial=serial, now=clock).unwrap()
        if draw.random() < 0.2 and len(queue) > 1:
            victim = list(queue)[draw.randrange(len(queue))].identity
            queue = queue.remove(victim).unwrap()
    return queue


ATTRIBUTES = ["immediate", "prompt", "priority"]
ROOM = 30


class _Pool:
    """Room for ``room`` admissions: each fit test that passes takes a slot."""

    def __init__(self, room: int) -> None:
        self.left = room

    def __call__(self, _entry: object) -> bool:
        if self.left == 0:
            return False
        self.left -= 1
        return True


def _always(_entry: object) -> bool:
    return True


def _later(_entry: object, _moment: Moment) -> Moment:
    return Moment(1.0)


def _policies() -> list[tuple[str, QueuePolicy]]:
    def made(keys: list[str], timing: Timing = "selection") -> QueuePolicy:
        return make_policy(
            keys, attributes=ATTRIBUTES, timing=timing, constants={"limit": 4}
        ).unwrap()

    return [
        ("fifo", fifo()),
        ("priority", static_priority()),
        ("static at selection", made(["priority", "-prompt"])),
        ("ascend", ascend_fcfs_lanes(short_tokens=4, max_wait=2.0)),
        ("priority then age", made(["priority", "-waited"])),
        ("age classes", made(["immediate ? 0 : prompt > limit && waited >= 3 ? 1 : 2"])),
        ("serial classes", made(["serial > 20 && waited >= 3 ? 1 : 2"])),
        ("clock", made(["priority * now + prompt"])),
        ("scan", made(["prompt / (1 + waited)"])),
        ("budget", made(["budget_left(engine) >= prompt ? 0 : 1", "serial"])),
        ("enqueue", made(["now - priority"], timing="enqueue")),
    ]


@pytest.mark.parametrize("in_order", [True, False])
@pytest.mark.parametrize(("name", "policy"), _policies(), ids=[name for name, _ in _policies()])
def test_random_large_queues(name: str, policy: QueuePolicy, in_order: bool) -> None:
    draw = random.Random(f"{name}-{in_order}")
    queue = _random_queue(draw, policy, 400, in_order=in_order)
    for now in (0.0, 50.0, 250.0, math.inf, math.nan):
        moment = Moment(now, {"engine": 4.0})
        fast = select_waiting(queue, policy, moment).unwrap()
        plain = select_reference(queue, policy, moment).unwrap()
        assert (fast.entry, fast.index) == (plain.entry, plain.index)
        assert [repr(k) for k in fast.keys] == [repr(k) for k in plain.keys]
        # the admission pass against repeated attempts, with a pool of 30 slots
        step, attempts = queue, []
        while True:
            outcome = attempt_admission(step, policy, moment, _Pool(ROOM))
            if not isinstance(outcome, Admitted):
                break
            attempts.append(outcome.entry.identity)
            step = outcome.queue
            if len(attempts) == ROOM:
                break
        done = admit_many(queue, policy, moment, _Pool(ROOM))
        assert [a.entry.identity for a in done.admitted] == attempts
        assert done.queue == step
        order = [s.entry for s in dispatch_order(queue, policy, moment)]
        assert [entry.identity for entry in order][:ROOM] == attempts
        # every 7th position and the last ones, by the path
        positions = [*range(0, len(order), 7), *range(len(order) - 3, len(order))]
        for position in positions:
            assert same_entry(dispatched_at(queue, policy, moment, position), order[position])


def test_admit_many_rereads_budgets_between_admissions() -> None:
    policy = make_policy(["budget_left(engine) >= prompt ? 0 : 1"], attributes=["prompt"]).unwrap()
    queue = WaitingQueue()
    for serial, prompt in enumerate([5, 1, 1, 5]):
        queue = queue.append(policy, serial, {"prompt": prompt}, serial=serial, now=0.0).unwrap()

    def spent(entry: object, moment: Moment) -> Moment:
        prompt = getattr(entry, "attributes")["prompt"]  # noqa: B009 - an entry
        return Moment(moment.now, {"engine": moment.budget_left["engine"] - prompt})

    done = admit_many(
        queue, policy, Moment(0.0, {"engine": 6.0}), _always, limit=3, next_moment=spent
    )
    # 6 left: the first 5 fits the budget key (0); then 1 left: the 1s; ...
    step, moment, wanted = queue, Moment(0.0, {"engine": 6.0}), []
    for _ in range(3):
        outcome = attempt_admission(step, policy, moment, _always)
        assert isinstance(outcome, Admitted)
        wanted.append(outcome.entry.identity)
        step, moment = outcome.queue, spent(outcome.entry, moment)
    assert [a.entry.identity for a in done.admitted] == wanted
    with pytest.raises(ValueError, match="keep now"):
        admit_many(queue, policy, Moment(0.0), _always, next_moment=_later)


def test_a_queue_used_with_another_policy_still_selects_as_the_definition() -> None:
    draw = random.Random(3)
    first, second = static_priority(), ascend_fcfs_lanes(short_tokens=4, max_wait=2.0)
    queue = _random_queue(draw, first, 60, in_order=True)
    moment = Moment(100.0)
    assert (
        select_waiting(queue, second, moment).unwrap().entry
        == select_reference(queue, second, moment).unwrap().entry
    )
    grown = queue.append(
        second, "late", {"immediate": False, "prompt": 1, "priority": 0}, serial=99, now=99.0
    ).unwrap()
    assert list(grown)[:-1] == list(queue)  # the rebuild keeps every entry and the order
    assert (
        select_waiting(grown, second, moment).unwrap().entry
        == select_reference(grown, second, moment).unwrap().entry
    )


def _in_turn(
    queue: WaitingQueue, policy: QueuePolicy, moment: Moment, count: int
) -> list[RequestId]:
    """The first ``count`` identities repeated plain selections take, each leaving."""
    taken: list[RequestId] = []
    while queue and len(taken) < count:
        chosen = select_reference(queue, policy, moment).unwrap().entry
        taken.append(chosen.identity)
        queue = queue.without(chosen)
    return taken


def _agrees_in_turn(queue: WaitingQueue, policy: QueuePolicy, moment: Moment) -> None:
    """Selection, the dispatch order, positions in it and the removal of its first
    entries (at once, then one at a time) are the plain definition's."""
    wanted = _in_turn(queue, policy, moment, 15)
    order = itertools.islice(queue.dispatched(policy, moment), 15)
    assert [entry.identity for entry, _ in order] == wanted
    for position, identity in enumerate(wanted):
        assert dispatched_at(queue, policy, moment, position).identity == identity
    left = queue.without_dispatched(policy, moment, 3)
    assert [entry.identity for entry in left] == [
        entry.identity for entry in queue if entry.identity not in wanted[:3]
    ]
    current = queue  # the index handed on answers for what is left, each time
    for identity in wanted:
        assert select_waiting(current, policy, moment).unwrap().entry.identity == identity
        current = current.without_dispatched(policy, moment, 1)
        assert len(current.index_for(policy)) == sum(not entry.resumed for entry in current)


@pytest.mark.parametrize("in_order", [True, False])
def test_every_policy_selects_as_the_definition_on_a_queue_made_for_any_other(
    in_order: bool,
) -> None:
    """Each policy on a queue made for each policy (its entries laid out for that
    one, keys stored or not), as it is and once a request joins it under the
    policy (its index rebuilt for it), at a late moment and at one amid the
    enqueue times, with budgets: the plain definition (found by mutation
    testing: an index built from another policy's entries, the budgets read on
    that way, keys not stored at enqueue, a class whose in-order run has left,
    and lanes out of time order after a removal were in no test)."""
    policies = _policies()
    for made_name, made_for in policies:
        queue = _random_queue(
            random.Random(f"{made_name}-{in_order}"), made_for, 40, in_order=in_order
        )
        times = sorted(entry.enqueued_at for entry in queue)
        moments = [
            Moment(30.0, {"engine": 5.0}),
            Moment(times[len(times) // 2] + 2.5, {"engine": 3.0}),
        ]
        late = {"immediate": False, "prompt": 3, "priority": 1}
        for name, policy in policies:
            joined = queue.append(policy, "late", late, serial=99, now=times[0]).unwrap()
            for moment in moments:
                for current in (queue, joined):
                    try:
                        _agrees_in_turn(current, policy, moment)
                    except AssertionError as failed:
                        failed.add_note(f"made for {made_name}, selected by {name} at {moment}")
                        raise


def test_an_entry_whose_first_key_is_nan_leaves_its_class() -> None:
    # found by mutation testing: the static path files every NaN first key in one
    # class, after all others, and an entry leaves it from there
    policy = static_priority()
    queue = WaitingQueue()
    for serial, priority in enumerate([math.nan, 1.0, math.nan, 0.0]):
        attributes = {"priority": priority}
        queue = queue.append(policy, serial, attributes, serial=serial, now=0.0).unwrap()
    for identity, left in ((2, [3, 1, 0]), (3, [1, 0]), (0, [1])):
        entry = queue.entry_of(identity)
        assert entry is not None
        queue = queue.without(entry)
        assert [entry.identity for entry, _ in queue.dispatched(policy, Moment(0.0))] == left
        assert select_waiting(queue, policy, Moment(0.0)).unwrap().entry.identity == left[0]


# ------------------------------------------- found by an outside review, kept as regressions


def test_static_keys_follow_the_current_policy_timing() -> None:
    stored_at_enqueue = static_priority()
    at_selection = make_policy(["-priority"], attributes=["priority"]).unwrap()
    queue = WaitingQueue()
    for serial, priority in enumerate([1, 5]):
        attributes = {"priority": priority}
        queue = queue.append(stored_at_enqueue, serial, attributes, serial=serial, now=0.0).unwrap()
    queue = queue.append(at_selection, 2, {"priority": 3}, serial=2, now=0.0).unwrap()
    moment = Moment(1.0)
    fast = select_waiting(queue, at_selection, moment).unwrap()
    assert (fast.entry.identity, fast.keys) == (1, (-5.0,))
    order = [s.entry.identity for s in dispatch_order(queue, at_selection, moment)]
    assert order == [1, 2, 0]


def test_constants_that_differ_only_in_the_sign_of_zero_are_different_policies() -> None:
    plus = make_policy(["prompt / k"], constants={"k": 0.0}, attributes=["prompt"]).unwrap()
    minus = make_policy(["prompt / k"], constants={"k": -0.0}, attributes=["prompt"]).unwrap()
    assert plus == minus  # pmap equality: -0.0 == 0.0
    queue = WaitingQueue()
    for serial, prompt in enumerate([1.0, -1.0]):
        queue = queue.append(plus, serial, {"prompt": prompt}, serial=serial, now=0.0).unwrap()
    for policy in (plus, minus):
        moment = Moment(1.0)
        wanted = select_reference(queue, policy, moment).unwrap()
        assert select_waiting(queue, policy, moment).unwrap().entry == wanted.entry


def test_an_unhashable_identity_is_refused_even_by_an_empty_queue() -> None:
    refused = WaitingQueue().append(fifo(), [1], {}, serial=0, now=0.0)  # type: ignore[arg-type]
    assert "hashable" in str(refused.failure())


def test_a_rebuild_for_another_policy_invents_no_attribute() -> None:
    reads_prompt = make_policy(["prompt"], attributes=["prompt"]).unwrap()
    queue = WaitingQueue().append(fifo(), "a", {}, serial=0, now=0.0).unwrap()
    grown = queue.append(reads_prompt, "b", {"prompt": 1.0}, serial=1, now=1.0).unwrap()
    assert [dict(entry.attributes) for entry in grown] == [{}, {"prompt": 1.0}]
    assert grown.remove("b").unwrap() == queue


LANE_CHOICES = (  # (immediate, prompt, enqueued at): four classes, two ages, any order
    (True, 3, 0.0),
    (True, 1, 2.0),
    (False, 1, 0.0),
    (False, 1, 2.0),
    (False, 3, 0.0),
    (False, 3, 2.0),
)


def _lane_heads_disagree(policy: QueuePolicy, max_entries: int) -> list[str]:
    found = []
    for size in range(1, max_entries + 1):
        for choices in itertools.product(LANE_CHOICES, repeat=size):
            queue = WaitingQueue()
            for serial, (immediate, prompt, at) in enumerate(choices):
                attributes = {"immediate": immediate, "prompt": prompt}
                queue = queue.append(policy, serial, attributes, serial=serial, now=at).unwrap()
            for now in (2.0, 3.5, math.nan):
                fast = select_waiting(queue, policy, Moment(now)).unwrap()
                plain = select_reference(queue, policy, Moment(now)).unwrap()
                if fast.entry != plain.entry or fast.index != plain.index:
                    found.append(
                        f"{choices} at {now}: {fast.entry.identity} != {plain.entry.identity}"
                    )
    return found


@pytest.mark.parametrize("max_wait", [1.5, 0.0])
def test_lane_heads_equal_the_full_scan_on_every_queue_of_up_to_five(max_wait: float) -> None:
    policy = ascend_fcfs_lanes(short_tokens=2, max_wait=max_wait)
    assert selection_path(policy) == "lanes"
    assert _lane_heads_disagree(policy, 5) == []


def test_lane_heads_catch_a_key_that_gets_worse_with_age() -> None:
    worse = make_policy(["immediate ? 0 : waited"], attributes=["immediate", "prompt"]).unwrap()
    assert selection_path(worse) == "scan"
    with _forced("lanes", LanePlan((), 1)):
        assert _lane_heads_disagree(worse, 2)
