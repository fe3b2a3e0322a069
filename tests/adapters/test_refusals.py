"""What the drop-in queue refuses at once rather than go wrong later (issue 18):
request ids that could change their hash while waiting, and integer attributes
the kernel's float keys cannot tell apart."""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace
from typing import Any

import pytest

from policy.adapters.vllm import (
    EXACT_INTEGER,
    ID_SHOWN,
    fcfs_queue,
    priority_queue,
    short_request_first_queue,
)
from tests.adapters.stand_ins import FakeClock, Req
from tests.number_stand_ins import Int64


class MutableId:
    """An id whose hash follows a field that changes (a mutable object as id)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MutableId) and other.name == self.name

    def __repr__(self) -> str:
        return f"MutableId({self.name!r})"


class HashedStr(str):
    """A str whose hash is its own (a custom ``__hash__`` on a str subclass)."""

    salt = 0

    def __hash__(self) -> int:
        return hash((str(self), HashedStr.salt))

    __eq__ = str.__eq__


@pytest.mark.parametrize(
    "identity",
    [MutableId("a"), HashedStr("a"), ("a", 1), 1.5, True, b"a", frozenset({"a"})],
    ids=["mutable object", "str subclass", "tuple", "float", "bool", "bytes", "frozenset"],
)
def test_an_id_not_exactly_str_or_int_is_refused_at_add(identity: object) -> None:
    for queue in (
        fcfs_queue(clock=FakeClock()),
        priority_queue(clock=FakeClock()),
        short_request_first_queue(clock=FakeClock()),
    ):
        request = SimpleNamespace(
            request_id=identity, priority=0, arrival_time=0.0, num_prompt_tokens=1
        )
        for enter in (queue.add_request, queue.prepend_request):
            with pytest.raises(TypeError, match="the exact types str and int") as raised:
                enter(request)
            assert type(identity).__name__ in str(raised.value)
        with pytest.raises(TypeError):
            queue.prepend_requests([Req("fine"), request])
        assert not queue  # nothing stuck: nothing was queued
        assert request not in queue
        queue.remove_requests([request])  # ignored, as any request not waiting
        with pytest.raises(ValueError, match="is not waiting"):
            queue.remove_request(request)


def test_an_id_whose_hash_changes_leaves_nothing_that_cannot_leave() -> None:
    # On 7a23c81 the add was taken; after the hash changed, remove_request said
    # "is not waiting" while the queue still held the entry, and no remove could
    # take it out.
    queue = fcfs_queue(clock=FakeClock())
    identity = MutableId("a")
    request = SimpleNamespace(request_id=identity)
    with pytest.raises(TypeError):
        queue.add_request(request)
    identity.name = "b"
    with pytest.raises(ValueError, match="is not waiting"):
        queue.remove_request(request)
    assert len(queue) == 0
    HashedStr.salt = 0
    other = SimpleNamespace(request_id=HashedStr("c"))
    with pytest.raises(TypeError, match="not HashedStr"):
        queue.add_request(other)
    assert len(queue) == 0


def test_the_refusal_quotes_a_long_id_cut() -> None:
    queue = fcfs_queue(clock=FakeClock())
    with pytest.raises(TypeError) as raised:
        queue.add_request(SimpleNamespace(request_id=HashedStr("x" * 10**6)))
    message = str(raised.value)
    quoted = message.split(": ", maxsplit=1)[0].removeprefix("request id ")
    # the one quoting rule (policy.text.quote): the head quoted, then the id's length
    assert quoted == repr("x" * ID_SHOWN) + "... (1,000,000 characters)"
    assert len(message) < 400


def test_str_and_int_ids_are_taken() -> None:
    queue = fcfs_queue(clock=FakeClock())
    queue.add_request(SimpleNamespace(request_id="a"))
    queue.add_request(SimpleNamespace(request_id=7))
    queue.add_request(SimpleNamespace(request_id=10**40))
    assert [request.request_id for request in queue] == ["a", 7, 10**40]


@pytest.mark.parametrize(
    "priority",
    [EXACT_INTEGER + 1, -EXACT_INTEGER - 1, 2**64, -(10**400)],
    ids=["2**53 + 1", "-(2**53 + 1)", "2**64", "-(10**400)"],
)
def test_an_integer_priority_beyond_2_53_is_refused_at_add(priority: int) -> None:
    # On 7a23c81 2**53 + 1 and 2**53 + 2 were taken as the one float 2**53 and tied;
    # vLLM compares them exactly.
    queue = priority_queue(clock=FakeClock())
    for enter in (queue.add_request, queue.prepend_request):
        with pytest.raises(ValueError, match=r"request 'big': attribute 'priority'") as raised:
            enter(Req("big", priority=priority))
        assert "2**53" in str(raised.value)
    assert not queue


def test_integer_priorities_up_to_2_53_order_exactly() -> None:
    queue = priority_queue(clock=FakeClock())
    made: list[Any] = [
        Req("top", priority=EXACT_INTEGER),
        Req("below", priority=EXACT_INTEGER - 1),
        Req("bottom", priority=-EXACT_INTEGER),
        Req("float", priority=2.0**60),  # type: ignore[arg-type]  # a float is exact as it is
    ]
    for request in made:
        queue.add_request(request)
    assert [r.request_id for r in queue] == ["bottom", "below", "top", "float"]


def test_numbers_of_numpy_s_kinds_are_taken_as_ints_and_floats_are() -> None:
    # Issue 30: vLLM's own queue takes numpy's numbers; the drop-in said "not a number".
    queue = priority_queue(clock=FakeClock())
    made: list[Any] = [
        Req("later", priority=Int64(1), arrival_time=Fraction(1, 2)),  # type: ignore[arg-type]
        Req("first", priority=Int64(0), arrival_time=Fraction(3, 4)),  # type: ignore[arg-type]
        Req("between", priority=1, arrival_time=0.25),
    ]
    for request in made:
        queue.add_request(request)
    assert [r.request_id for r in queue] == ["first", "between", "later"]
    for beyond in (Int64(EXACT_INTEGER + 1), Int64(-(10**400))):
        with pytest.raises(ValueError, match=r"attribute 'priority' is .*beyond the exact"):
            queue.add_request(Req("big", priority=beyond))  # type: ignore[arg-type]
    assert len(queue) == 3


def test_every_integer_attribute_the_keys_read_is_checked() -> None:
    queue = short_request_first_queue(clock=FakeClock())
    with pytest.raises(ValueError, match="attribute 'prompt'"):
        queue.add_request(Req("huge", num_prompt_tokens=2**60))
    fifo = fcfs_queue(clock=FakeClock())
    fifo.add_request(Req("any", priority=2**60))  # not read by a FIFO: not checked
    assert len(fifo) == 1
