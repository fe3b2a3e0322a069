"""What a vLLM scheduler relies on: the errors, the pin, prepend order, removals,
iteration, membership, attributes, construction and installing the queue."""

from __future__ import annotations

import collections
import logging
import math
from collections.abc import Callable, Iterable
from types import SimpleNamespace
from typing import Any

import pytest

from policy.adapters.stats import RUN_WARNING
from policy.adapters.vllm import (
    DEFAULT_ATTRIBUTES,
    MAX_CLASSES,
    QueueStats,
    WaitingRequestQueue,
    fcfs_queue,
    install_waiting_queue,
    priority_queue,
    queue_from_policy,
    short_request_first_queue,
)
from policy.waiting import Moment, WaitingQueue, fifo, make_policy, select_waiting, vllm_priority
from tests.adapters.stand_ins import QUEUE_MAKERS, DequeQueue, FakeClock, Req, drain, ids

MAKERS = QUEUE_MAKERS


@pytest.fixture(params=sorted(MAKERS))
def queue(request: pytest.FixtureRequest) -> WaitingRequestQueue[Any]:
    return MAKERS[request.param](FakeClock())


def test_an_empty_queue_raises_index_error(queue: WaitingRequestQueue[Any]) -> None:
    assert not queue
    assert len(queue) == 0
    for _ in range(2):  # never filled, then emptied
        with pytest.raises(IndexError) as raised:
            queue.pop_request()
        assert str(raised.value) == "pop from an empty waiting queue"
        with pytest.raises(IndexError) as raised:
            queue.peek_request()
        assert str(raised.value) == "peek from an empty waiting queue"
        queue.add_request(Req("a"))
        queue.pop_request()


def test_removing_an_absent_request_is_a_value_error(queue: WaitingRequestQueue[Any]) -> None:
    queue.add_request(Req("a"))
    before = queue.snapshot
    with pytest.raises(ValueError, match="request 'b': is not waiting"):
        queue.remove_request(Req("b"))
    assert queue.snapshot is before
    queue.remove_request(Req("a"))  # by request id, as vLLM-Ascend removes
    assert not queue


def test_remove_requests_ignores_absent_ones(queue: WaitingRequestQueue[Any]) -> None:
    made = [Req(name) for name in "abcd"]
    for request in made:
        queue.add_request(request)
    finished = iter([made[1], Req("gone"), made[3], made[1], Req("x")])  # once-only, repeats
    queue.remove_requests(finished)
    assert sorted(ids(queue)) == ["a", "c"]
    queue.remove_requests([])
    queue.remove_requests([Req("never")])
    assert len(queue) == 2


def test_remove_requests_ignores_an_unhashable_id(queue: WaitingRequestQueue[Any]) -> None:
    queue.add_request(Req("a"))
    queue.remove_requests([SimpleNamespace(request_id=["not", "hashable"])])
    assert ids(queue) == ["a"]


def _sources(made: list[Req]) -> list[Iterable[Req]]:
    other = fcfs_queue(clock=FakeClock())
    for request in made:
        other.add_request(request)
    return [list(made), iter(made), collections.deque(made), other]


@pytest.mark.parametrize("source", range(4))
def test_prepend_requests_prepends_one_by_one_as_extendleft(source: int) -> None:
    existing = [Req(name) for name in ("e1", "e2")]
    made = [Req(name) for name in ("p1", "p2", "p3")]
    queue = fcfs_queue(clock=FakeClock())
    for request in existing:
        queue.add_request(request)
    queue.prepend_requests(_sources(made)[source])
    model = collections.deque(existing)
    model.extendleft(made)
    assert list(queue) == list(model)
    assert ids(queue) == ["p3", "p2", "p1", "e1", "e2"]


def test_the_schedulers_skip_and_restore_keeps_the_order() -> None:
    # vLLM's schedule(): a skipped request is popped and prepended to a vLLM FCFS
    # queue (reversed), which is prepended back (reversed again).
    queue = fcfs_queue(clock=FakeClock())
    made = [Req(name) for name in "abcde"]
    for request in made:
        queue.add_request(request)
    skipped = DequeQueue()
    admitted = []
    while queue:
        request = queue.peek_request()
        if request.request_id in {"a", "c", "d"}:  # waiting for remote KVs, say
            queue.pop_request()
            skipped.prepend_request(request)
            continue
        admitted.append(queue.pop_request().request_id)
    queue.prepend_requests(skipped)
    assert admitted == ["b", "e"]
    assert ids(queue) == ["a", "c", "d"]


def test_prepend_requests_is_all_or_nothing() -> None:
    queue = fcfs_queue(clock=FakeClock())
    queue.add_request(Req("a"))
    before = queue.snapshot
    with pytest.raises(ValueError, match="request 'a': is already waiting"):
        queue.prepend_requests([Req("x"), Req("a"), Req("y")])
    assert queue.snapshot is before
    assert "x" not in [r.request_id for r in queue]
    assert Req("x") not in queue


def test_a_request_already_waiting_is_refused(queue: WaitingRequestQueue[Any]) -> None:
    queue.add_request(Req("a"))
    with pytest.raises(ValueError, match="request 'a': is already waiting"):
        queue.add_request(Req("a"))
    with pytest.raises(ValueError, match="request 'a': is already waiting"):
        queue.prepend_request(Req("a"))
    assert len(queue) == 1


MUTATIONS: dict[str, Callable[[WaitingRequestQueue[Any]], None]] = {
    "add_request": lambda q: q.add_request(Req("new")),
    "prepend_request": lambda q: q.prepend_request(Req("new")),
    "prepend_requests": lambda q: q.prepend_requests([]),
    "remove_request": lambda q: q.remove_request(Req("other")),
    "remove_requests": lambda q: q.remove_requests([Req("absent")]),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_any_add_prepend_or_remove_clears_the_pin(mutation: str) -> None:
    clock = FakeClock()
    queue = short_request_first_queue(256, 100.0, clock=clock)
    queue.add_request(Req("long", num_prompt_tokens=1000))
    queue.add_request(Req("short"))
    queue.add_request(Req("other"))
    assert queue.peek_request().request_id == "short"
    clock.advance(0.2)
    MUTATIONS[mutation](queue)
    expected = "new" if mutation == "prepend_request" else "long"
    assert queue.peek_request().request_id == expected
    assert queue.pop_request().request_id == expected


def test_pop_after_peek_takes_the_pinned_request_once() -> None:
    clock = FakeClock()
    queue = short_request_first_queue(256, 100.0, clock=clock)
    queue.add_request(Req("long", num_prompt_tokens=1000))
    queue.add_request(Req("s1"))
    queue.add_request(Req("s2"))
    assert queue.peek_request().request_id == "s1"
    clock.advance(0.2)
    assert ids([queue.pop_request(), queue.pop_request(), queue.pop_request()]) == [
        "s1",  # pinned
        "long",  # selected afresh: aged
        "s2",
    ]


def test_iteration_is_the_dispatch_order_now_and_a_snapshot() -> None:
    clock = FakeClock()
    queue = short_request_first_queue(256, 100.0, clock=clock)
    for request in (Req("l1", num_prompt_tokens=999), Req("s1"), Req("s2")):
        queue.add_request(request)
    assert ids(queue) == ["s1", "s2", "l1"]
    clock.advance(0.2)
    assert ids(queue) == ["l1", "s1", "s2"]
    seen = iter(queue)
    assert next(seen).request_id == "l1"
    queue.remove_requests([Req("s1"), Req("s2")])  # iteration reads the version it began with
    queue.add_request(Req("late"))
    assert ids(seen) == ["s1", "s2"]
    assert ids(queue) == ["l1", "late"]


def test_iteration_ignores_the_pin() -> None:
    clock = FakeClock()
    queue = short_request_first_queue(256, 100.0, clock=clock)
    queue.add_request(Req("l", num_prompt_tokens=999))
    queue.add_request(Req("s"))
    assert queue.peek_request().request_id == "s"
    clock.advance(0.2)
    assert ids(queue) == ["l", "s"]  # the order now; pop still takes the pinned "s"
    assert queue.pop_request().request_id == "s"


def test_contains_looks_a_request_up_by_its_id(queue: WaitingRequestQueue[Any]) -> None:
    request = Req("a")
    queue.add_request(request)
    assert request in queue
    assert Req("a") in queue  # another object with the same id
    assert Req("b") not in queue
    assert object() not in queue  # no request_id
    assert SimpleNamespace(request_id=["unhashable"]) not in queue
    queue.pop_request()
    assert request not in queue


def test_the_snapshot_is_the_kernel_queue_and_never_changes() -> None:
    clock = FakeClock()
    queue = priority_queue(clock=clock)
    queue.add_request(Req("a", priority=2))
    queue.add_request(Req("b", priority=1))
    snapshot = queue.snapshot
    assert isinstance(snapshot, WaitingQueue)
    chosen = select_waiting(snapshot, queue.policy, Moment(clock.now)).unwrap()
    assert chosen.entry.identity == "b"
    drain(queue)
    assert len(snapshot) == 2
    assert repr(queue) == "WaitingRequestQueue(path='static', waiting=0)"


def test_attributes_are_read_through_a_replaceable_mapping() -> None:
    attributes = {**DEFAULT_ATTRIBUTES, "prompt": lambda r: len(r.prompt_token_ids)}
    queue = short_request_first_queue(4, attributes=attributes, clock=FakeClock())
    queue.add_request(SimpleNamespace(request_id="long", prompt_token_ids=[1] * 5))
    queue.add_request(SimpleNamespace(request_id="short", prompt_token_ids=[1] * 4))
    assert drain(queue) == ["short", "long"]
    named = {"request_id": lambda r: r["id"]}  # only what a FIFO reads
    plain = fcfs_queue(attributes=named, clock=FakeClock())
    plain.add_request({"id": 7})
    assert plain.pop_request() == {"id": 7}


def test_a_request_the_kernel_refuses_is_a_value_error() -> None:
    queue = priority_queue(clock=FakeClock())
    with pytest.raises(ValueError, match="attribute 'priority' must be a number or a boolean"):
        queue.add_request(Req("a", priority=None))  # type: ignore[arg-type]
    with pytest.raises(AttributeError):  # the getter's own error
        queue.add_request(SimpleNamespace(request_id="b"))
    assert not queue


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (
            lambda: WaitingRequestQueue("fifo"),  # type: ignore[arg-type]
            TypeError,
            "policy must be a QueuePolicy",
        ),
        (
            lambda: fcfs_queue(attributes={}),
            ValueError,
            "attributes lacks 'request_id', which names the request",
        ),
        (
            lambda: priority_queue(attributes={"request_id": id}),
            ValueError,
            "the policy reads 'arrival_time', which the requests do not offer as an attribute;"
            " the attributes offered are prepended",
        ),
        (
            lambda: fcfs_queue(attributes={"request_id": "request_id"}),  # type: ignore[dict-item]
            TypeError,
            "attributes['request_id'] must be callable",
        ),
        (
            lambda: fcfs_queue(attributes="request_id"),  # type: ignore[arg-type]
            TypeError,
            "attributes must map names to getters, not 'request_id'",
        ),
        (
            lambda: fcfs_queue(attributes=("request_id",)),  # type: ignore[arg-type]
            TypeError,
            "attributes must map names to getters, not ('request_id',)",  # a tuple, as given
        ),
        (
            lambda: fcfs_queue(attributes={**DEFAULT_ATTRIBUTES, "prepended": id}),
            ValueError,
            "attributes['prepended'] is the queue's own",
        ),
        (lambda: fcfs_queue(clock=1.0), TypeError, "clock must be callable"),  # type: ignore[arg-type]
        (
            lambda: WaitingRequestQueue(fifo(), prepend_resumed=1),  # type: ignore[arg-type]
            TypeError,
            "prepend_resumed must be True or False, not 1",
        ),
        (
            lambda: WaitingRequestQueue(fifo(), run_class=True),
            TypeError,
            "run_class must be a number or None, not True",
        ),
        (
            lambda: WaitingRequestQueue(fifo(), run_advice=None),  # type: ignore[arg-type]
            TypeError,
            "run_advice must be text, not None",
        ),
        (
            lambda: WaitingRequestQueue(fifo(), run_class="long"),  # type: ignore[arg-type]
            TypeError,
            "run_class must be a number or None, not 'long'",
        ),
        (
            lambda: priority_queue(1),  # type: ignore[arg-type]
            TypeError,
            "preempted_first must be True or False",
        ),
        (
            lambda: queue_from_policy("{", clock=FakeClock()),
            ValueError,
            "line 1, column 2",
        ),
        (
            lambda: queue_from_policy({"keys": ["prmpt"]}),
            ValueError,
            "unknown name 'prmpt'",
        ),
    ],
)
def test_construction_refuses_what_cannot_work(
    build: Callable[[], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        build()
    assert message in str(raised.value)


def test_queue_from_policy_takes_a_policy_or_a_document() -> None:
    document = {"attributes": {"prompt": "visible"}, "keys": ["-prompt"]}
    policy = make_policy(["-prompt"], attributes=["prompt"]).unwrap()
    for given in (policy, document, '{"attributes": {"prompt": "visible"}, "keys": ["-prompt"]}'):
        queue = queue_from_policy(given, clock=FakeClock())
        queue.add_request(Req("small", num_prompt_tokens=1))
        queue.add_request(Req("big", num_prompt_tokens=9))
        assert drain(queue) == ["big", "small"]


def test_stats_name_fifo_resumed_and_first_key_values() -> None:
    queue = fcfs_queue(clock=FakeClock())
    queue.add_request(Req("a"))
    queue.prepend_request(Req("b"))
    drain(queue)
    assert queue.stats().admissions == {"resumed": 1, "fifo": 1}
    assert queue.stats().run_class is None
    ranked = priority_queue(clock=FakeClock())
    for k, priority in enumerate([2, 0, 2]):
        ranked.add_request(Req(str(k), priority=priority))
    drain(ranked)
    assert ranked.stats().admissions == {"0": 1, "2": 2}


def test_a_watched_class_under_a_batched_policy_is_counted_once_per_pop() -> None:
    # found by branch coverage: a run watched under a policy whose pops are batched
    # (priority) counts each pop as it happens, and not again when its chunk leaves
    queue: WaitingRequestQueue[Req] = WaitingRequestQueue(
        vllm_priority(), clock=FakeClock(), run_class=0.0
    )
    for k, priority in enumerate([0, 0, 1, 0]):
        queue.add_request(Req(str(k), priority=priority, arrival_time=float(k)))
    assert [queue.pop_request().request_id for _ in range(3)] == ["0", "1", "3"]
    assert queue.stats() == QueueStats({"0": 3}, "0", 3, 1)  # the chunk leaves here
    queue.add_request(Req("4", priority=1, arrival_time=4.0))
    assert queue.stats() == QueueStats({"0": 3}, "0", 3, 2)
    queue.pop_request()
    assert queue.stats() == QueueStats({"0": 3, "1": 1}, "0", 0, 1)


@pytest.mark.parametrize("advice", ["", "give class 1 a share"])
def test_the_run_warning_gives_the_queues_own_advice(
    caplog: pytest.LogCaptureFixture, advice: str
) -> None:
    # a watched class of another policy is not "long requests overtaking short ones"
    queue: WaitingRequestQueue[Req] = WaitingRequestQueue(
        vllm_priority(), clock=FakeClock(), run_class=0.0, run_advice=advice
    )
    for k in range(RUN_WARNING):
        queue.add_request(Req(str(k), priority=0, arrival_time=float(k)))
    with caplog.at_level(logging.WARNING, logger="policy.adapters.vllm"):
        drain(queue)
    (record,) = caplog.records
    assert record.getMessage() == (
        "3 consecutive admissions of class 0, the watched class: requests of the other"
        " classes wait meanwhile" + (f"; {advice}" if advice else "")
    )


def test_stats_keep_at_most_max_classes() -> None:
    scores = make_policy(["score"], attributes=["score"]).unwrap()
    attributes = {"request_id": lambda r: r[0], "score": lambda r: r[1]}
    queue = queue_from_policy(scores, attributes, clock=FakeClock())
    values = [k + 0.5 for k in range(MAX_CLASSES + 10)] + [math.nan, math.nan]
    for k, value in enumerate(values):
        queue.add_request((k, value))
    while queue:
        queue.pop_request()
    admissions = queue.stats().admissions
    assert len(admissions) == MAX_CLASSES + 1
    assert admissions["other"] == len(values) - MAX_CLASSES
    assert sum(admissions.values()) == len(values)


def test_every_nan_first_key_is_one_class() -> None:
    scores = make_policy(["score"], attributes=["score"]).unwrap()
    attributes = {"request_id": lambda r: r[0], "score": lambda r: r[1]}
    queue = queue_from_policy(scores, attributes, clock=FakeClock())
    for k, value in enumerate([math.nan, 1.0, float("nan"), 2.5]):
        queue.add_request((k, value))
    while queue:
        queue.pop_request()
    assert queue.stats().admissions == {"1": 1, "2.5": 1, "nan": 2}


def test_install_replaces_an_empty_waiting_queue() -> None:
    scheduler = SimpleNamespace(waiting=DequeQueue())
    queue = fcfs_queue(clock=FakeClock())
    assert install_waiting_queue(scheduler, queue) is queue
    assert scheduler.waiting is queue
    assert install_waiting_queue(scheduler, queue) is queue  # again: nothing to do
    queue.add_request(Req("a"))
    assert install_waiting_queue(scheduler, queue) is queue


def test_install_refuses_a_waiting_queue_that_holds_requests() -> None:
    scheduler = SimpleNamespace(waiting=DequeQueue([Req("a")]))
    with pytest.raises(RuntimeError, match="still holds 1 request"):
        install_waiting_queue(scheduler, fcfs_queue())
    assert len(scheduler.waiting) == 1
    full = fcfs_queue(clock=FakeClock())
    full.add_request(Req("b"))
    with pytest.raises(RuntimeError, match="already holds 1 request"):
        install_waiting_queue(SimpleNamespace(waiting=[]), full)
    with pytest.raises(TypeError, match="scheduler must have a waiting queue"):
        install_waiting_queue(object(), fcfs_queue())
    with pytest.raises(TypeError, match="queue must be a WaitingRequestQueue"):
        install_waiting_queue(scheduler, DequeQueue())  # type: ignore[arg-type]
