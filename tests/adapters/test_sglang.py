"""The SGLang plugin (``policy.adapters.sglang``) with duck-typed stand-ins for
SGLang's ``Req`` and ``SchedulePolicy``; the same checks on SGLang's real objects
are tests/sglang_real (``./dev test-sglang``).

The stand-in ``calc_priority`` sorts as SGLang 0.5.23's does for ``fcfs`` and
``lof`` (stable sorts of the list as it is: by ``priority * sign`` and entry
time, or by ``-max_new_tokens`` after the priority), so the mirror policy
``sglang`` must leave every list exactly as SGLang's own method leaves it."""

from __future__ import annotations

import gc
import json
import os
import sys
import types
import weakref
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policy.adapters import sglang
from policy.adapters.sglang import (
    ENV_VAR,
    HOOKED,
    ListOrder,
    SglangConfig,
    around_calc_priority,
    lpm_aging,
    plugin,
    policy_choice,
    sglang_order,
)
from policy.waiting import make_policy
from tests.replay_helpers import printed_by


@dataclass
class Sampling:
    max_new_tokens: int | None = 16


@dataclass
class TimeStats:
    wait_queue_entry_time: float = 0.0


@dataclass(eq=False)
class Req:
    """The fields of SGLang's ``Req`` that the adapter reads."""

    rid: str
    origin_input_ids: array[int] = field(default_factory=lambda: array("q", [1, 2, 3]))
    priority: int | None = None
    sampling_params: Sampling = field(default_factory=Sampling)
    num_matched_prefix_tokens: int = 0
    arrival_processed_tokens: int = 0
    is_retracted: bool = False
    retraction_count: int = 0
    routing_key: str | None = None
    time_stats: TimeStats = field(default_factory=TimeStats)


@dataclass(frozen=True)
class Chosen:
    value: str


class SchedulePolicy:
    """SGLang's ``SchedulePolicy`` as far as the adapter reads it; ``calc_priority``
    sorts as SGLang's does for ``fcfs`` and ``lof`` (and leaves other lists alone)."""

    def __init__(self, name: str = "fcfs", priority: bool = False, low_first: bool = True):
        self.policy = Chosen(name)
        self.enable_priority_scheduling = priority
        self.schedule_low_priority_values_first = low_first
        self.priority_sign = 1 if low_first else -1
        self.calls = 0

    def calc_priority(
        self, waiting_queue: list[Req], running_batch: Any = None, processed_tokens: int = 0
    ) -> None:
        del running_batch, processed_tokens  # fcfs and lof read neither
        self.calls += 1
        sign = self.priority_sign
        if self.policy.value == "fcfs" and self.enable_priority_scheduling:
            waiting_queue.sort(
                key=lambda r: (r.priority * sign, r.time_stats.wait_queue_entry_time)  # type: ignore[operator]
            )
        elif self.policy.value == "lof":
            if self.enable_priority_scheduling:
                waiting_queue.sort(
                    key=lambda r: (r.priority * sign, -r.sampling_params.max_new_tokens)  # type: ignore[operator]
                )
            else:
                waiting_queue.sort(key=lambda r: -r.sampling_params.max_new_tokens)  # type: ignore[operator]


def hooked(schedule_policy: SchedulePolicy, value: str) -> Any:
    """``calc_priority`` of ``schedule_policy`` with the hook for the policy ``value`` names."""
    choice = policy_choice({ENV_VAR: value})
    assert choice is not None

    def call(waiting: list[Req], processed_tokens: int = 0) -> None:
        around_calc_priority(
            choice,
            SchedulePolicy.calc_priority,
            schedule_policy,
            waiting,
            None,
            processed_tokens=processed_tokens,
        )

    return call


def rids(waiting: list[Req]) -> list[str]:
    return [req.rid for req in waiting]


# --- naming a policy --------------------------------------------------------------------


def test_no_policy_named_is_sglang_alone() -> None:
    assert policy_choice({}) is None
    assert policy_choice({ENV_VAR: "  "}) is None


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("lpm", "unknown policy name 'lpm': the ready-made names are sglang, priority-aging"),
        ("sglang:age_tokens=3", "sglang takes retracted_first (name:key=value,...)"),
        ("lpm-aging:age_tokens=-3", "age_tokens must be a positive finite number, not -3"),
        ("lpm-aging:age_tokens=1_000", "age_tokens must be a number in ASCII digits, not '1_000'"),
        ("lpm-aging:age_tokens=\u0663", "age_tokens must be a number in ASCII digits"),
        ("priority-aging:age_tokens=0", "age_tokens must be a positive finite number"),
        ("sglang:retracted_first=2", "retracted_first must be 0 or 1, not 2"),
        # issue 30: Python's int-to-text limit and float range, not a message of ours
        ("sglang:retracted_first=" + "9" * 4300, "retracted_first must be 0 or 1, not a 4300-"),
        ("lpm-aging:age_tokens=" + "9" * 400, "age_tokens must be a positive finite number, not a"),
        (
            "lpm-aging:age_tokens=-" + "9" * 4300,
            "positive finite number, not a negative 4300-digit",
        ),
        (
            "lpm-aging:age_tokens=" + "9" * 4301,
            "age_tokens must be a number of at most 4,300 digits",
        ),
        ("sglang:retracted_first=1,retracted_first=1", "retracted_first is given twice"),
        ("/nonexistent/policy.json", "cannot read the policy file: No such file or directory"),
    ],
)
def test_a_bad_policy_is_one_line_naming_the_setting(value: str, said: str) -> None:
    with pytest.raises(ValueError, match=r"^POLICY_KERNEL_QUEUE=") as refused:
        policy_choice({ENV_VAR: value})
    message = str(refused.value)
    assert said in message, message
    assert message.isprintable()


def test_a_long_setting_is_quoted_short() -> None:
    with pytest.raises(ValueError, match="unknown policy name") as refused:
        policy_choice({ENV_VAR: "x" * 100_000})
    assert len(str(refused.value)) < 400


def test_a_policy_file_reading_an_attribute_sglang_lacks_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"keys": ["request_id"], "attributes": {"request_id": "visible"}}))
    with pytest.raises(ValueError, match="reads 'request_id', which SGLang's requests do not"):
        policy_choice({ENV_VAR: str(path)})
    path.write_text(
        json.dumps({"keys": ["-cached", "serial"], "attributes": {"cached": "visible"}})
    )
    choice = policy_choice({ENV_VAR: str(path)})
    assert choice is not None


def test_a_fifo_named_as_the_policy_file_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "queue.json"
    os.mkfifo(fifo)  # no writer ever comes: a blocking open waits for ever
    program = (
        "import sys\n"
        "from policy.adapters.sglang import ENV_VAR, policy_choice\n"
        "try:\n"
        "    policy_choice({ENV_VAR: sys.argv[1]})\n"
        "except ValueError as refused:\n"
        "    print(refused)\n"
    )
    assert printed_by(program, str(fifo)) == (
        f"{ENV_VAR}={str(fifo)!r}: cannot read the policy file: not a regular file (a FIFO)\n"
    )


def test_the_plugin_does_nothing_without_a_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setitem(sys.modules, "sglang.srt.plugins.hook_registry", None)  # not imported
    plugin()


def test_the_plugin_stops_a_bad_start_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "lpm-aging:age_tokens=0")
    with pytest.raises(SystemExit) as stopped:
        plugin()
    assert str(stopped.value).startswith("policy-kernel: POLICY_KERNEL_QUEUE='lpm-aging:age")
    assert "\n" not in str(stopped.value)


def test_the_plugin_registers_an_around_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    registered: list[tuple[str, Any, str]] = []
    registry = types.ModuleType("sglang.srt.plugins.hook_registry")
    registry.HookType = types.SimpleNamespace(AROUND="around")  # type: ignore[attr-defined]
    registry.HookRegistry = types.SimpleNamespace(  # type: ignore[attr-defined]
        register=lambda target, hook, kind: registered.append((target, hook, kind))
    )
    monkeypatch.setitem(sys.modules, "sglang.srt.plugins.hook_registry", registry)
    monkeypatch.setenv(ENV_VAR, "sglang")
    plugin()
    ((target, hook, kind),) = registered
    assert (target, kind) == (HOOKED, "around")
    schedule_policy = SchedulePolicy("lof")
    waiting = [Req("a"), Req("b", sampling_params=Sampling(64))]
    hook(SchedulePolicy.calc_priority, schedule_policy, waiting, None, processed_tokens=0)
    assert rids(waiting) == ["b", "a"]


# --- the mirror: SGLang's own order ------------------------------------------------------

CONFIGS = [
    (name, priority, low_first)
    for name in ("fcfs", "lof")
    for priority in (False, True)
    for low_first in (False, True)
]


@st.composite
def passes(draw: st.DrawFn) -> list[tuple[list[Req], int]]:
    """Passes of one waiting list: before each, some requests arrive (appended, as
    SGLang appends them: entry times increasing, sometimes tied) and some leave."""
    made: list[tuple[list[Req], int]] = []
    alive: list[Req] = []
    serial = 0
    clock = 0.0
    for _ in range(draw(st.integers(1, 5))):
        keep = draw(st.lists(st.booleans(), min_size=len(alive), max_size=len(alive)))
        alive = [req for req, kept in zip(alive, keep, strict=True) if kept]
        for _ in range(draw(st.integers(0, 6))):
            clock += draw(st.sampled_from([0.0, 1.0]))  # ties included
            alive.append(
                Req(
                    f"r{serial}",
                    priority=draw(st.integers(-2, 2)),
                    sampling_params=Sampling(draw(st.sampled_from([8, 16, 32]))),
                    time_stats=TimeStats(clock),
                )
            )
            serial += 1
        made.append((list(alive), serial))
    return made


@pytest.mark.parametrize(("name", "priority", "low_first"), CONFIGS)
@settings(max_examples=60, deadline=None)
@given(steps=passes())
def test_sglang_orders_every_list_as_sglang_does(
    name: str, priority: bool, low_first: bool, steps: list[tuple[list[Req], int]]
) -> None:
    own, kernel = (
        SchedulePolicy(name, priority, low_first),
        SchedulePolicy(name, priority, low_first),
    )
    call = hooked(kernel, "sglang")
    theirs: list[Req] = []
    ours: list[Req] = []
    for alive, _ in steps:
        # the list as SGLang keeps it: those that stay, in its last order, then arrivals
        theirs = [req for req in theirs if req in alive] + [r for r in alive if r not in theirs]
        ours = [req for req in ours if req in alive] + [r for r in alive if r not in ours]
        own.calc_priority(theirs)
        call(ours)
        assert rids(ours) == rids(theirs)


def test_sglang_keeps_sglang_s_own_method_for_its_other_policies() -> None:
    schedule_policy = SchedulePolicy("lpm")
    waiting = [Req("b"), Req("a")]
    hooked(schedule_policy, "sglang")(waiting)
    assert rids(waiting) == ["b", "a"]
    assert schedule_policy.calls == 1
    assert sglang_order(SglangConfig("random", False, True)) is None


def test_a_retracted_request_back_is_a_new_arrival_unless_retracted_first() -> None:
    # SGLang appends a retracted request at the tail with a fresh entry time
    first, second = Req("a", priority=0), Req("b", priority=0, time_stats=TimeStats(1.0))
    for value, expected in (("sglang", ["b", "a"]), ("sglang:retracted_first=1", ["a", "b"])):
        first.retraction_count, first.is_retracted = 0, False
        first.time_stats = TimeStats(0.0)
        call = hooked(SchedulePolicy("fcfs", True, True), value)
        waiting = [first, second]
        call(waiting)
        assert rids(waiting) == ["a", "b"]
        waiting.remove(first)  # admitted, then retracted
        call(waiting)
        first.retraction_count, first.is_retracted = 1, True
        first.time_stats = TimeStats(2.0)
        waiting.append(first)
        call(waiting)
        assert rids(waiting) == expected, value


def test_a_request_retracted_and_back_between_two_passes_is_a_new_arrival() -> None:
    # a is admitted after one pass and retracted before the next: the hook never sees
    # the list without it. SGLang appended it again with a fresh entry time: after b.
    for configured in (SchedulePolicy("fcfs"), SchedulePolicy("fcfs", True, True)):
        a, b = Req("a", priority=0), Req("b", priority=0, time_stats=TimeStats(1.0))
        call = hooked(configured, "sglang")
        waiting = [a, b]
        call(waiting)
        assert rids(waiting) == ["a", "b"]
        a.retraction_count, a.is_retracted, a.time_stats = 1, True, TimeStats(2.0)
        waiting = [b, a]  # SGLang's list after the admission and the retraction
        call(waiting)
        assert rids(waiting) == ["b", "a"]


def test_a_request_appended_with_an_older_entry_time_goes_where_its_time_says() -> None:
    # SGLang's pipeline-parallel path extends the list with requests it does not
    # stamp again: under priority, their old entry time places them, not their arrival
    own, kernel = SchedulePolicy("fcfs", True, True), SchedulePolicy("fcfs", True, True)
    call = hooked(kernel, "sglang")
    theirs = [Req("x", priority=0, time_stats=TimeStats(5.0))]
    ours = list(theirs)
    own.calc_priority(theirs)
    call(ours)
    back = Req("back", priority=0, time_stats=TimeStats(1.0))
    theirs.append(back)
    ours.append(back)
    own.calc_priority(theirs)
    call(ours)
    assert rids(ours) == rids(theirs) == ["back", "x"]


# --- the aging policies, by hand -------------------------------------------------------


def test_priority_aging_moves_a_waiting_request_up_a_class_per_age_tokens() -> None:
    # age_tokens 100, low values first. "low" (priority 1) joined at 0 tokens; "new"
    # (priority 0) joins at 50 in one run, at 150 in another. At 50, low ranks
    # 1 - 50/100 = 0.5 and new 0 - 0 = 0: new first. At 150, low ranks
    # 1 - 150/100 = -0.5 < 0: low has waited a class up, and goes first.
    for now, expected in ((50, ["new", "low"]), (150, ["low", "new"])):
        call = hooked(SchedulePolicy("fcfs", True, True), "priority-aging:age_tokens=100")
        waiting = [Req("low", priority=1), Req("new", priority=0, arrival_processed_tokens=now)]
        call(waiting, processed_tokens=now)
        assert rids(waiting) == expected, now


def test_priority_aging_follows_sglang_s_direction() -> None:
    call = hooked(SchedulePolicy("fcfs", True, False), "priority-aging:age_tokens=100")
    waiting = [Req("low", priority=1), Req("high", priority=5)]
    call(waiting)
    assert rids(waiting) == ["high", "low"]


def test_lpm_aging_puts_the_aged_first_then_the_longest_cached_prefix() -> None:
    # age 100 tokens: "cold" (no cached prefix) joined at 0, "warm" (8 cached) at 0,
    # "hot" (9 cached) at 60. At 50 nothing is aged: hot, warm, cold by prefix. At 120
    # cold and warm have waited 120 >= 100 (the oldest first; they joined together, so
    # by prefix), then hot, which has waited 60.
    call = hooked(SchedulePolicy("lpm"), "lpm-aging:age_tokens=100")
    cold = Req("cold", num_matched_prefix_tokens=0)
    warm = Req("warm", num_matched_prefix_tokens=8)
    hot = Req("hot", num_matched_prefix_tokens=9, arrival_processed_tokens=60)
    waiting = [cold, warm, hot]
    call(waiting, processed_tokens=50)
    assert rids(waiting) == ["hot", "warm", "cold"]
    call(waiting, processed_tokens=120)
    assert rids(waiting) == ["warm", "cold", "hot"]
    warm.arrival_processed_tokens = 10  # (read once, at joining: a new stay would see it)
    call(waiting, processed_tokens=300)
    assert rids(waiting) == ["warm", "cold", "hot"]


def test_retracted_first_breaks_a_tie_under_priority_aging_and_leads_under_lpm_aging() -> None:
    # SGLang's own passes here leave each list as it is, so every row reads the hook.
    # priority-aging (age 100 tokens, at 150): ranks high -1 - 150/100 = -2.5, new and
    # back 0 - 0 (both joined at 150); the retracted key comes after the rank, so it
    # puts "back" before "new", which it ties, and never before "high". lpm-aging: the
    # retracted key comes first, so "back" (0 cached, waited 0) passes "aged" (waited
    # 150 >= 100), which passes "hot" (9 cached, waited 0).
    def ordered(value: str, configured: SchedulePolicy, waiting: list[Req]) -> list[str]:
        hooked(configured, value)(waiting, processed_tokens=150)
        return rids(waiting)

    for value, expected in (
        ("priority-aging:age_tokens=100", ["high", "new", "back"]),
        ("priority-aging:age_tokens=100,retracted_first=1", ["high", "back", "new"]),
    ):
        new, high = Req("new", priority=0, arrival_processed_tokens=150), Req("high", priority=-1)
        back = Req("back", priority=0, arrival_processed_tokens=150, is_retracted=True)
        waiting = [new, back, high]
        assert ordered(value, SchedulePolicy("fcfs", False, True), waiting) == expected, value
    for value, expected in (
        ("lpm-aging:age_tokens=100", ["aged", "hot", "back"]),
        ("lpm-aging:age_tokens=100,retracted_first=1", ["back", "aged", "hot"]),
    ):
        aged = Req("aged")
        hot = Req("hot", num_matched_prefix_tokens=9, arrival_processed_tokens=150)
        back = Req("back", arrival_processed_tokens=150, is_retracted=True)
        assert ordered(value, SchedulePolicy("lpm"), [back, hot, aged]) == expected, value


def test_a_matched_prefix_that_changes_is_read_again_and_keeps_its_tie() -> None:
    call = hooked(SchedulePolicy("lpm"), "lpm-aging:age_tokens=1000")
    a, b, c = Req("a"), Req("b"), Req("c")
    waiting = [a, b, c]
    call(waiting)
    assert rids(waiting) == ["a", "b", "c"]
    c.num_matched_prefix_tokens = 5
    call(waiting)
    assert rids(waiting) == ["c", "a", "b"]
    a.num_matched_prefix_tokens = 5  # now ties with c: a arrived first
    call(waiting)
    assert rids(waiting) == ["a", "c", "b"]


# --- the ranked fast path: equal to the kernel's dispatch walk ---------------------------


def _static_policies() -> list[tuple[str, Any]]:
    configs = [SglangConfig(name, True, low) for name in ("fcfs", "lof") for low in (False, True)]
    made: list[tuple[str, Any]] = [(f"sglang {c}", (sglang_order(c), c)) for c in configs]
    made.append(("fifo", (sglang_order(SglangConfig("fcfs", False, True)), configs[0])))
    reads_cached = make_policy(
        ["-cached", "priority_rank"], attributes=["cached", "priority_rank"]
    ).unwrap()
    made.append(("cached then priority", (reads_cached, configs[1])))
    return made


@pytest.mark.parametrize(("name", "made"), _static_policies(), ids=lambda x: str(x)[:30])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_the_ranked_order_is_the_dispatch_walk(name: str, made: Any, data: st.DataObject) -> None:
    policy, config = made
    ranked, walked = ListOrder(policy, config), ListOrder(policy, config, ranked=False)
    alive: list[Req] = []
    serial = 0
    for _ in range(data.draw(st.integers(1, 5), label="passes")):
        alive = [req for req in alive if data.draw(st.booleans(), label="stays")]
        for _ in range(data.draw(st.integers(0, 6), label="arrivals")):
            priority = data.draw(st.sampled_from([0, 1, 2, -(2**60), 2**60]))
            alive.append(
                Req(f"r{serial}", priority=priority, time_stats=TimeStats(float(serial // 2)))
            )
            serial += 1
        for req in alive:  # prefixes matched anew
            if data.draw(st.booleans(), label="rematched"):
                req.num_matched_prefix_tokens = data.draw(st.integers(0, 3))
        ours, theirs = list(alive), list(alive)
        ranked.see(ours)
        walked.see(theirs)
        ranked.order(ours, 0)
        walked.order(theirs, 0)
        assert rids(ours) == rids(theirs), name


def test_a_request_queued_again_ties_behind_those_queued_before_it_ranked_or_walked() -> None:
    # b joins with 2 cached tokens, a with 0; then a's prefix matches 2 too: a is
    # queued again, after b, and ties behind it (queue order), as the walk says
    policy = make_policy(["-cached"], attributes=["cached"]).unwrap()
    config = SglangConfig("lpm", False, True)
    for order in (ListOrder(policy, config), ListOrder(policy, config, ranked=False)):
        a, b = Req("a"), Req("b", num_matched_prefix_tokens=2)
        waiting = [a, b]
        order.see(waiting)
        order.order(waiting, 0)
        assert rids(waiting) == ["b", "a"]
        a.num_matched_prefix_tokens = 2
        waiting = [a, b]
        order.see(waiting)
        order.order(waiting, 0)
        assert rids(waiting) == ["b", "a"]


# --- ranks, failures, memory ------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(steps=passes(), tokens=st.lists(st.integers(0, 500), min_size=5, max_size=5))
def test_two_ranks_fed_the_same_lists_decide_alike(
    steps: list[tuple[list[Req], int]], tokens: list[int]
) -> None:
    ranks = [hooked(SchedulePolicy("fcfs", True), "priority-aging:age_tokens=50") for _ in "ab"]
    lists: list[list[Req]] = [[], []]
    for (alive, _), now in zip(steps, tokens, strict=False):
        for rank, call in enumerate(ranks):
            kept = [req for req in lists[rank] if req in alive]
            lists[rank] = kept + [req for req in alive if req not in kept]
            call(lists[rank], processed_tokens=now)
        assert rids(lists[0]) == rids(lists[1])


@pytest.mark.parametrize("low_first", [True, False])
def test_a_pass_the_kernel_refuses_keeps_sglang_s_order_and_loses_nothing(
    low_first: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # priority scheduling off: SGLang's own fcfs leaves the list alone
    call = hooked(SchedulePolicy("fcfs", False, low_first), "priority-aging:age_tokens=50")
    bad = Req("bad", priority="high")  # type: ignore[arg-type]
    waiting = [Req("a", priority=2), bad, Req("c", priority=1)]
    with caplog.at_level("WARNING", logger="sglang.policy_kernel"):
        call(waiting)
    assert rids(waiting) == ["a", "bad", "c"]
    assert "SGLang's own order kept for this pass" in caplog.text
    waiting.remove(bad)
    call(waiting)  # afresh: ordered again
    assert rids(waiting) == (["c", "a"] if low_first else ["a", "c"])


def test_a_request_found_before_the_tail_keeps_sglang_s_order_then_all_are_read_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # only the tail after the last known request is read for new ones: "c" put at the
    # front is found only by the count, so that pass keeps SGLang's order (its lpm
    # stand-in leaves the list alone); the next pass reads every request anew
    call = hooked(SchedulePolicy("lpm"), "lpm-aging:age_tokens=1000")
    a, b = Req("a", num_matched_prefix_tokens=1), Req("b", num_matched_prefix_tokens=2)
    waiting = [a, b]
    call(waiting)
    assert rids(waiting) == ["b", "a"]
    waiting = [Req("c"), *waiting]
    with caplog.at_level("WARNING", logger="sglang.policy_kernel"):
        call(waiting)
    assert rids(waiting) == ["c", "b", "a"]
    assert "request 'c' joined the list out of its tail" in caplog.text
    call(waiting)
    assert rids(waiting) == ["b", "a", "c"]


def test_two_requests_with_one_id_keep_sglang_s_order(caplog: pytest.LogCaptureFixture) -> None:
    schedule_policy = SchedulePolicy("lof")
    waiting = [Req("a"), Req("a", sampling_params=Sampling(64))]
    with caplog.at_level("WARNING", logger="sglang.policy_kernel"):
        hooked(schedule_policy, "sglang")(waiting)
    assert [r.sampling_params.max_new_tokens for r in waiting] == [64, 16]  # SGLang's sort
    assert "two waiting requests have one id" in caplog.text


def test_a_request_that_left_is_not_kept_alive() -> None:
    schedule_policy = SchedulePolicy("lof")
    call = hooked(schedule_policy, "sglang")
    leaving = Req("gone")
    watch = weakref.ref(leaving)
    waiting = [leaving, Req("stays")]
    call(waiting)
    waiting.remove(leaving)
    call(waiting)
    del leaving
    gc.collect()
    assert watch() is None


def test_the_state_goes_with_sglang_s_schedule_policy() -> None:
    schedule_policy = SchedulePolicy("lof")
    hooked(schedule_policy, "sglang")([Req("a")])
    assert schedule_policy in sglang._ORDERS  # internal: the state this test watches go
    watch = weakref.ref(schedule_policy)
    del schedule_policy
    gc.collect()
    assert watch() is None


def test_the_attribute_table_is_what_a_policy_can_name() -> None:
    assert set(sglang.ATTRIBUTES) == {
        "prompt", "cached", "uncached", "priority", "priority_rank", "max_new_tokens",
        "retracted", "retraction_count", "routed", "entry_time",
    }  # fmt: skip
    req = Req("r", priority=None, num_matched_prefix_tokens=2, sampling_params=Sampling(None))
    read = {name: attribute.read(req) for name, attribute in sglang.ATTRIBUTES.items()}
    assert read == {
        "prompt": 3, "cached": 2, "uncached": 1, "priority": 0, "priority_rank": 0,
        "max_new_tokens": 0, "retracted": False, "retraction_count": 0, "routed": False,
        "entry_time": 0.0,
    }  # fmt: skip
    assert lpm_aging(SglangConfig("lpm", False, True)).attributes_read == {"cached"}
