"""Request ids (``policy.identity``): what both halves take as a request id, and
what they refuse at once."""

from __future__ import annotations

import math

import pytest
from returns.result import Failure, Success

from policy import (
    ActiveJob,
    Arrival,
    BacklogEntry,
    Cancel,
    EntryKind,
    Lane,
    ProtocolErrorKind,
    SliceKind,
    apply_event,
    initial_state,
)
from policy.identity import is_request_id
from policy.text import represent
from policy.waiting import (
    QueueError,
    WaitingQueue,
    fifo,
    make_entry,
)

# --- found by hardening (issue 9)


def _queue() -> WaitingQueue:
    return WaitingQueue().append(fifo(), "a", {"n": 1}, serial=0, now=0.0).unwrap()


HUGE = 10**5000  # more digits than Python writes in decimal (4300)


def one_printable_line(text: str) -> bool:
    return text.isprintable()


class _NeverEqual(str):
    """A text id that equals nothing, itself included (hashable, as its text)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = str.__hash__


class _FailingEq:
    """An id whose equality raises; its hash is that of the queue's "a" so that a
    lookup always collides and calls ``__eq__`` (a random collision once failed CI)."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no equality")

    def __hash__(self) -> int:
        return hash("a")


NAN = math.nan  # one object: found by identity in a dict, equal to nothing by ==


NOT_IDS = [NAN, float("nan"), _NeverEqual("A"), _FailingEq(), ["A"], {"A": 1}]


IDS = ["A", 3, HUGE, 1.5, ("A", 1), (NAN,), frozenset({"A"})]


def test_show_once_a_nan_id_is_hashable_and_found_by_identity_yet_equal_to_nothing() -> None:
    assert hash(NAN) == hash(NAN)
    assert {NAN: 1}[NAN] == 1  # a dict tries `is` first
    assert NAN != NAN  # noqa: PLR0124 - the point: == does not find it
    assert (NAN,) == (NAN,)  # a tuple compares its items by identity first: a usable id


@pytest.mark.parametrize("value", NOT_IDS + IDS, ids=represent)
def test_is_request_id_is_hashable_and_equal_to_itself(value: object) -> None:
    assert is_request_id(value) is any(value is usable for usable in IDS)


@pytest.mark.parametrize("request_id", NOT_IDS, ids=represent)
def test_rotation_refuses_an_id_that_is_not_equal_to_itself_at_once(request_id: object) -> None:
    state = initial_state()
    for event in (Arrival(request_id, Lane.NORMAL, 2), Cancel(request_id)):  # type: ignore[arg-type]
        refused = apply_event(state, event)
        assert isinstance(refused, Failure)
        assert refused.failure().kind is ProtocolErrorKind.UNHASHABLE_REQUEST
        assert refused.failure().event is event
        assert one_printable_line(str(refused.failure()))
    for make in (
        lambda: BacklogEntry(request_id, Lane.HIGH, EntryKind.WAITER),  # type: ignore[arg-type]
        lambda: ActiveJob(request_id, Lane.HIGH, 0, 2, SliceKind.ROUND),  # type: ignore[arg-type]
    ):
        with pytest.raises(TypeError, match=r"\.request must be hashable and equal to itself"):
            make()


def test_the_same_nan_arriving_twice_is_no_longer_two_live_requests() -> None:
    # The review's case: twice a Success, live_requests (nan, nan), then UNKNOWN_REQUEST.
    first = apply_event(initial_state(), Arrival(NAN, Lane.NORMAL, 2))  # type: ignore[arg-type]
    assert first.failure().kind is ProtocolErrorKind.UNHASHABLE_REQUEST


@pytest.mark.parametrize("request_id", IDS, ids=represent)
def test_every_request_id_is_a_request_on_both_halves(request_id: object) -> None:
    state = apply_event(initial_state(), Arrival(request_id, Lane.NORMAL, 2)).unwrap().state  # type: ignore[arg-type]
    again = apply_event(state, Arrival(request_id, Lane.NORMAL, 2))  # type: ignore[arg-type]
    assert again.failure().kind is ProtocolErrorKind.DUPLICATE_REQUEST
    assert isinstance(apply_event(state, Cancel(request_id)), Success)  # type: ignore[arg-type]
    queue = WaitingQueue().append(fifo(), request_id, {}, serial=0, now=0.0).unwrap()  # type: ignore[arg-type]
    again_queued = queue.append(fifo(), request_id, {}, serial=1, now=0.0)  # type: ignore[arg-type]
    assert again_queued.failure().message == "is already waiting"
    assert len(queue.remove(request_id).unwrap()) == 0  # type: ignore[arg-type]


@pytest.mark.parametrize("identity", NOT_IDS, ids=represent)
def test_the_queue_refuses_an_identity_that_is_not_equal_to_itself(identity: object) -> None:
    message = "an identity must be hashable and equal to itself"
    queue = _queue()
    for operation in (queue.append, queue.requeue_preempted, WaitingQueue().append):
        refused = operation(fifo(), identity, {}, serial=1, now=1.0)  # type: ignore[arg-type]
        assert isinstance(refused.failure(), QueueError)
        assert refused.failure().message == message
        assert one_printable_line(str(refused.failure()))
    assert queue.remove(identity).failure().message == message  # type: ignore[arg-type]
    assert queue.index_of(identity).value_or(None) is None  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"WaitingEntry\.identity must be hashable and equal"):
        make_entry(identity, {}, 0, 0.0)  # type: ignore[arg-type]
