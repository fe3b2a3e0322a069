"""The rotation kernel's fast paths build exactly what the plain constructors build.

The tick protocol builds its records with ``object.__new__`` and slot setters
(policy/rotation/backlog.py, "record builders"), builds ``Success`` through its
value's slot, and shares unchanged parts of a state. Each of those is checked
here against the plain definition; the behaviour of the protocol as a whole is
checked by the rest of the suite and by ``policy-kernel verify``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, get_type_hints

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyrsistent import pvector
from returns.result import Success

from policy import (
    ActiveJob,
    Arrival,
    BacklogEntry,
    Branch,
    Ended,
    Ending,
    EntryKind,
    GrantBacklog,
    GrantEnd,
    Lane,
    ModelAction,
    Outcome,
    ProtocolError,
    ProtocolErrorKind,
    RotationState,
    RoundResult,
    SliceKind,
    Step,
    Tick,
    TickUse,
    apply_event,
    initial_state,
    live_requests,
    next_grant_index,
)
from policy.records import slot_setters
from policy.rotation import backlog as backlog_module
from policy.rotation import protocol

requests = st.one_of(st.text(max_size=3), st.integers(-3, 3))
lanes = st.sampled_from(Lane)
counts = st.integers(0, 9)
flags = st.booleans()
entries = st.builds(BacklogEntry, requests, lanes, st.sampled_from(EntryKind), counts, flags)
backlogs = st.lists(entries, max_size=4).map(lambda made: GrantBacklog(pvector(made)))
jobs = st.builds(
    ActiveJob, requests, lanes, counts, counts, st.sampled_from([None, *SliceKind]), flags
)
actions = st.builds(ModelAction, requests, st.sampled_from(SliceKind))
endeds = st.builds(Ended, requests, st.sampled_from(Ending))
grant_ends = st.builds(GrantEnd, requests, counts, flags)


def same_record(built: object, made: object) -> None:
    """Equal, of the same type, alike in hash and repr, every field set, and frozen."""
    assert type(built) is type(made)
    assert built == made
    assert hash(built) == hash(made)
    assert repr(built) == repr(made)
    for field in dataclasses.fields(made):  # type: ignore[arg-type]
        assert getattr(built, field.name) is getattr(made, field.name)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(built, field.name, getattr(made, field.name))


def fields_of(record: object) -> list[Any]:
    return [getattr(record, field.name) for field in dataclasses.fields(record)]  # type: ignore[arg-type]


BUILDERS: list[tuple[Callable[..., object], st.SearchStrategy[Any]]] = [
    (backlog_module._entry, entries),
    (backlog_module._backlog, backlogs),
    (protocol._job, jobs),
    (
        protocol._state,
        st.builds(RotationState, st.none() | jobs, backlogs, flags, flags, counts),
    ),
    (protocol._action, actions),
    (protocol._ended, endeds),
    (protocol._grant_end, grant_ends),
    (
        protocol._outcome,
        st.builds(
            Outcome,
            st.lists(st.sampled_from(Branch), max_size=3).map(tuple),
            st.none() | st.sampled_from(TickUse),
            st.none() | actions,
            st.lists(endeds, max_size=2).map(tuple),
            st.lists(grant_ends, max_size=2).map(tuple),
        ),
    ),
    (
        protocol._step,
        st.builds(Step, st.builds(RotationState), st.builds(Outcome, st.just(()))),
    ),
    (
        protocol._error,
        st.builds(ProtocolError, st.sampled_from(ProtocolErrorKind), st.builds(RoundResult, flags)),
    ),
]


@pytest.mark.parametrize(
    ("builder", "records"), BUILDERS, ids=[builder.__name__ for builder, _ in BUILDERS]
)
@given(data=st.data())
def test_each_builder_builds_what_the_constructor_builds(
    builder: Callable[..., object], records: st.SearchStrategy[Any], data: st.DataObject
) -> None:
    made = data.draw(records)
    same_record(builder(*fields_of(made)), made)


def test_builders_cover_every_record_of_a_step() -> None:
    built = {get_type_hints(builder)["return"].__name__ for builder, _ in BUILDERS}
    assert built == {
        "BacklogEntry", "GrantBacklog", "ActiveJob", "RotationState", "ModelAction", "Ended",
        "GrantEnd", "Outcome", "Step", "ProtocolError",
    }  # fmt: skip


def test_slot_setters_refuse_a_field_list_that_is_not_the_records() -> None:
    setters = slot_setters
    names = ("request", "lane", "kind", "skipped", "cancelled")
    assert len(setters(BacklogEntry, names)) == len(names)
    with pytest.raises(TypeError, match="BacklogEntry has the fields"):
        setters(BacklogEntry, names[:-1])  # a builder that would leave a field unset
    with pytest.raises(TypeError):
        setters(BacklogEntry, (names[1], names[0], *names[2:]))  # or set them out of order


def test_success_is_built_through_its_slot_and_equals_the_constructor() -> None:
    assert protocol._success is not Success  # the fast path is in use with this returns
    step = Step(initial_state(), Outcome((Branch.CONTINUE,)))
    built, made = protocol._success(step), Success(step)
    assert type(built) is Success
    assert built == made
    assert repr(built) == repr(made)
    assert built.unwrap() is step
    assert built.map(lambda s: s.state).unwrap() is step.state


def test_success_builder_keeps_the_constructor_for_any_other_container() -> None:
    class NoSlot:  # keeps its value elsewhere
        def __init__(self, value: object) -> None:
            self.value = value

    class OtherLayout:  # the slot, but its constructor sets more than the slot
        __slots__ = ("_inner_value", "extra")

        def __init__(self, value: object) -> None:
            self._inner_value = value
            self.extra = 1

        def __eq__(self, other: object) -> bool:
            return isinstance(other, OtherLayout) and self.extra == other.extra

        __hash__ = object.__hash__

    class Plain:  # the slot alone, set by the constructor: the builder agrees with it
        __slots__ = ("_inner_value",)

        def __init__(self, value: object) -> None:
            self._inner_value = value

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Plain) and self._inner_value is other._inner_value

        def __hash__(self) -> int:
            return id(self._inner_value)

        def __repr__(self) -> str:
            return f"Plain({self._inner_value!r})"

        def unwrap(self) -> object:
            return self._inner_value

    def builder_for(container: type) -> object:
        return protocol._success_builder(container)

    assert builder_for(NoSlot) is NoSlot
    assert builder_for(OtherLayout) is OtherLayout
    assert builder_for(Plain) is not Plain
    fast = protocol._success_builder(Plain)
    step = Step(initial_state(), Outcome(()))
    assert fast(step) == Plain(step)


def test_next_grant_index_on_one_entry_and_on_long_backlogs() -> None:
    N, H = Lane.NORMAL, Lane.HIGH
    assert next_grant_index([(N, 0)]).unwrap() == 0
    assert next_grant_index([(N, 9)], 2).unwrap() == 0
    long = [(N, 0)] * 11 + [(H, 0)]
    assert next_grant_index(long).unwrap() == 11  # beyond the positions built once
    assert next_grant_index([*long[:-1], (N, 2)]).unwrap() == 11


def test_live_requests_in_every_shape() -> None:
    state = initial_state()
    assert live_requests(state) == ()
    state = apply_event(state, Arrival("A", Lane.NORMAL, 2)).unwrap().state
    assert live_requests(state) == ("A",)
    state = apply_event(state, Arrival("B", Lane.NORMAL, 2)).unwrap().state
    assert live_requests(state) == ("A", "B")
    state = apply_event(state, RoundResult(finished=True)).unwrap().state
    assert live_requests(state) == ("B",)


def test_a_step_shares_what_it_does_not_change() -> None:
    state = initial_state()
    for event in (Arrival("A", Lane.NORMAL, 2), RoundResult(False), Arrival("B", Lane.LOW, 2)):
        state = apply_event(state, event).unwrap().state  # A holds the slot, B waits
    admission = apply_event(state, Tick(2)).unwrap()  # the tick A's slice 0 took
    assert admission.state.active is state.active
    assert admission.state.backlog is state.backlog
    classic = apply_event(admission.state, Tick(2, classic_work=True)).unwrap()
    assert classic.outcome.branches == (Branch.CLASSIC_TICK,)  # alternation: classic's turn
    assert classic.state.active is state.active
    assert classic.state.backlog is state.backlog
    fallback = apply_event(classic.state, Arrival("C", Lane.HIGH, 0)).unwrap()
    assert fallback.outcome.branches == (Branch.CLASSIC_FALLBACK,)
    assert fallback.state is classic.state  # nothing changed: the very same state
    round_ = apply_event(classic.state, Tick(2, classic_work=True)).unwrap()
    assert round_.outcome.branches == (Branch.ROUND,)
    assert round_.state.backlog is state.backlog
    idle = initial_state()
    assert apply_event(idle, Tick(2)).unwrap().state is idle
    assert apply_event(idle, Tick(2, classic_work=True)).unwrap().state is idle
