"""The rotation kernel's fast paths build exactly what the plain constructors build.

The tick protocol builds its records in plain slotted shapes that become the
records (``policy.records.record_builder``; policy/rotation/backlog.py and
protocol.py, "record builders"), builds ``Success`` and ``Some`` through their
value's slot (``policy.records.value_setter``), chooses the grantee with the
rule's loop (``_grant_position``), and shares unchanged parts of a state. Each
of those is checked here against the plain definition; the behaviour of the
protocol as a whole is checked by the rest of the suite and by
``policy-kernel verify``.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from typing import Any, get_type_hints

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyrsistent import pvector
from returns.maybe import Some
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
    RulesProfile,
    SliceKind,
    Step,
    Tick,
    TickUse,
    apply_event,
    initial_state,
    live_requests,
    next_grant_index,
    take_next_grantee,
)
from policy.records import record_builder, shape_of, slot_setters, value_setter
from policy.rotation import backlog as backlog_module
from policy.rotation import decisions, protocol

requests = st.one_of(st.text(max_size=3), st.integers(-3, 3))
lanes = st.sampled_from(Lane)
counts = st.integers(0, 9)
skip_caps = st.integers(1, 9)  # a skip cap is at least 1 (decisions.at_least)
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
        st.builds(RotationState, st.none() | jobs, backlogs, flags, flags, skip_caps),
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


def test_every_builder_is_the_fast_one() -> None:
    # record_builder keeps a builder only when its probe holds: on this interpreter
    # every builder must be the shape-filling function itself, not the fallback.
    for builder, _ in BUILDERS:
        assert builder.__name__.startswith("_build_"), builder
    assert protocol._set_success is not None
    assert backlog_module._set_some is not None


def test_record_builder_keeps_the_setters_for_a_builder_that_does_not_hold() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Pair:
        left: object
        right: object

    shape = shape_of(Pair)

    def swapped(left: object, right: object) -> Pair:  # each value in the other field
        built: Any = shape()
        built.left = right
        built.right = left
        built.__class__ = Pair
        made: Pair = built
        return made

    def stays_a_shape(left: object, right: object) -> Pair:  # never becomes a Pair
        built: Any = shape()
        built.left = left
        built.right = right
        made: Pair = built
        return made

    def forgets_a_field(left: object, right: object) -> Pair:  # noqa: ARG001
        built: Any = shape()
        built.left = left
        built.__class__ = Pair
        made: Pair = built
        return made

    for wrong in (swapped, stays_a_shape, forgets_a_field):
        build = record_builder(Pair, wrong)
        assert build is not wrong
        same_record(build(1, "two"), Pair(1, "two"))

    def misnamed(right: object, left: object) -> Pair:
        return Pair(left, right)

    with pytest.raises(TypeError, match="must take the fields"):
        record_builder(Pair, misnamed)


def test_done_builds_success_of_a_step_as_the_constructors_do() -> None:
    state, outcome = initial_state(), Outcome((Branch.CONTINUE,))
    built, made = protocol._done(state, outcome), Success(Step(state, outcome))
    assert type(built) is Success
    assert built == made
    assert repr(built) == repr(made)
    assert hash(built) == hash(made)
    assert built.unwrap().state is state
    assert built.unwrap().outcome is outcome
    assert built.map(lambda s: s.state).unwrap() is state


states = st.builds(
    RotationState,
    st.none() | jobs,
    backlogs,
    flags,
    flags,
    skip_caps,
    st.sampled_from(RulesProfile),
)
outcomes = st.builds(
    Outcome,
    st.lists(st.sampled_from(Branch), max_size=3).map(tuple),
    st.none() | st.sampled_from(TickUse),
    st.none() | actions,
)


@pytest.mark.parametrize("build", [protocol._next_in_shapes, protocol._next_by_builders])
@given(state=states, outcome=outcomes)
def test_next_builds_success_of_a_step_of_a_new_state_as_the_constructors_do(
    build: Callable[..., Any], state: RotationState, outcome: Outcome
) -> None:
    active, backlog, yielded, acted, _, _ = fields_of(state)
    built = build(active, backlog, yielded, acted, state, outcome)  # the rules from ``state``
    made = Success(Step(state, outcome))
    assert type(built) is Success
    assert built == made
    assert repr(built) == repr(made)
    step = built.unwrap()
    assert type(step) is Step
    assert step == made.unwrap()
    same_record(step.state, state)  # a new state, every field the one given
    assert step.outcome is outcome
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.state = state  # type: ignore[misc]


def test_next_is_built_in_one_frame_on_this_interpreter() -> None:
    assert protocol._next is protocol._next_in_shapes


def test_take_next_grantee_builds_some_as_the_constructor_does() -> None:
    backlog = GrantBacklog(pvector([BacklogEntry("A", Lane.NORMAL, EntryKind.WAITER)]))
    taken = take_next_grantee(backlog)
    assert type(taken) is Some
    assert taken == Some((backlog.entries[0], GrantBacklog()))
    assert repr(taken) == repr(Some((backlog.entries[0], GrantBacklog())))


def test_value_setter_keeps_the_constructor_for_any_other_container() -> None:
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

    class Plain:  # the slot alone, set by the constructor: the setter agrees with it
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

    assert value_setter(NoSlot) is None
    assert value_setter(OtherLayout) is None
    set_value = value_setter(Plain)
    assert set_value is not None
    built = object.__new__(Plain)
    set_value(built, "x")
    assert built == Plain("x")


def reference_grant_index(entries: list[tuple[Lane, int]], skip_cap: int) -> int | None:
    """The rule as first written: ``max`` over (skipped, -position), then (lane, -position)."""
    if not entries:
        return None
    most = max(range(len(entries)), key=lambda i: (entries[i][1], -i))
    if entries[most][1] >= skip_cap:
        return most
    return max(range(len(entries)), key=lambda i: (entries[i][0], -i))


def test_grant_position_is_the_rule_on_every_small_backlog() -> None:
    pairs = [(lane, skipped) for lane in Lane for skipped in range(4)]
    checked = 0
    for length in range(5):
        for entries in itertools.product(pairs, repeat=length):
            for skip_cap in range(4):
                expected = reference_grant_index(list(entries), skip_cap)
                assert decisions._grant_position(entries, skip_cap) == expected, entries
                checked += 1
    assert checked == 4 * sum(12**n for n in range(5))


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
