"""The waiting queue as a state machine, against a plain Python list.

The model is a list of :class:`Expected` (identity, resumed, enqueued_at,
attributes, serial, and the number of the operation that queued it) kept in the
order waiting.md specifies. Rules append, requeue preempted requests, remove by
identity and by index, make admission attempts (``attempt_admission``, whose
choice the model takes from the spec's ``select`` over the model's own entries),
and take the first entries of the dispatch order at once (``without_dispatched``,
against the spec's ``select`` repeated, each selected entry leaving).
After every step:

- the queue holds exactly the model's entries, in the model's order, each
  stored as the docs say (numbers as floats, booleans kept, ``serial`` as given);
- the order is as specified: resumed entries first, most recently preempted
  first, then the others in enqueue order; no identity twice;
- ``index_of`` agrees with the model for every identity seen and for absent ones;
- refusals agree: a duplicate identity and removing a missing one are refused
  and leave the queue as it was;
- old versions never change: a few earlier queues are kept with the contents
  they had, and checked again after every step;
- under enqueue timing the stored keys are the spec's keys at enqueue.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import event as note
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from returns.maybe import Nothing, Some
from returns.result import Failure, Result

from oracle.checks.convert import spec_policy
from oracle.spec import selection as spec_selection
from oracle.spec.expressions import same_value
from oracle.strategies import (
    ATTRIBUTES,
    HIDDEN,
    attribute_values,
    enqueue_times,
    moments,
    queue_policies,
    serials,
)
from policy.waiting import (
    Admitted,
    Blocked,
    Moment,
    QueueEmpty,
    QueueError,
    QueuePolicy,
    RequestId,
    WaitingEntry,
    WaitingQueue,
    attempt_admission,
)

#: Few identities, so that duplicates and removals of missing ones are common.
IDENTITIES: tuple[RequestId, ...] = (0, 1, 2, 3, 4, 5, 6, 7, "a", "b", "c", "0")
identities = st.sampled_from(IDENTITIES)
attribute_maps = st.fixed_dictionaries(
    dict.fromkeys(ATTRIBUTES, attribute_values), optional={HIDDEN: attribute_values}
)

#: How many earlier versions are kept and checked after every step.
KEPT = 5


@dataclass(frozen=True)
class Expected:
    """One waiting request as the model sees it (raw numbers, as the host gave them)."""

    identity: RequestId
    resumed: bool
    enqueued_at: float
    attributes: Mapping[str, float | bool]
    serial: int
    queued_by: int  # the number of the operation that queued it (orders the model)


def stored(value: object) -> float | bool:
    """A run-time number as the docs say the queue stores it: booleans stay
    booleans, other numbers become floats, integers beyond the float range ±inf."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    assert isinstance(value, float)
    return value


def same_number(got: object, expected: object) -> bool:
    """Equal, bit for bit: NaN is NaN, -0.0 is not 0.0, a boolean is not a float."""
    if isinstance(expected, bool) or isinstance(got, bool):
        return type(got) is type(expected) and got == expected
    assert isinstance(got, float), f"{got!r} is stored as a {type(got).__name__}"
    return isinstance(expected, float) and same_value(got, expected)


def matches(entry: WaitingEntry, expected: Expected) -> bool:
    """Whether the queue's ``entry`` is the model's ``expected``, stored as specified."""
    return (
        entry.identity == expected.identity
        and type(entry.identity) is type(expected.identity)
        and entry.resumed == expected.resumed
        and same_number(entry.enqueued_at, stored(expected.enqueued_at))
        and entry.serial == expected.serial
        and entry.attributes.keys() == expected.attributes.keys()
        and all(
            same_number(entry.attributes[name], stored(value))
            for name, value in expected.attributes.items()
        )
    )


def spec_entries(model: list[Expected]) -> tuple[spec_selection.SpecEntry, ...]:
    """The model's entries as the spec reads them (raw numbers: the spec converts)."""
    return tuple(
        spec_selection.SpecEntry(e.identity, e.attributes, e.serial, e.enqueued_at, e.resumed)
        for e in model
    )


@dataclass
class Version:
    """An earlier queue and what it held when it was current."""

    queue: WaitingQueue
    contents: list[Expected] = field(default_factory=list)


class QueueMachine(RuleBasedStateMachine):
    """``WaitingQueue`` against a list of :class:`Expected`."""

    def __init__(self) -> None:
        super().__init__()
        self.policy: QueuePolicy = QueuePolicy()
        self.queue = WaitingQueue()
        self.model: list[Expected] = []
        self.operations = 0
        self.versions: list[Version] = []

    # hooks a test of the harness overrides with a wrong kernel
    def requeue(self, queue: WaitingQueue, **request: Any) -> Result[WaitingQueue, QueueError]:
        return queue.requeue_preempted(self.policy, **request)

    def append(self, queue: WaitingQueue, **request: Any) -> Result[WaitingQueue, QueueError]:
        return queue.append(self.policy, **request)

    # ------------------------------------------------------------------ helpers

    def become(self, queue: WaitingQueue, model: list[Expected]) -> None:
        """Move on to ``queue``; the version left behind is kept with its contents."""
        self.versions = [*self.versions[-(KEPT - 1) :], Version(self.queue, list(self.model))]
        self.queue, self.model = queue, model
        self.operations += 1

    def waiting(self, identity: RequestId) -> bool:
        return any(_same_identity(e.identity, identity) for e in self.model)

    def refused(self, result: Result[WaitingQueue, QueueError], message: str) -> None:
        assert isinstance(result, Failure), f"accepted, but the model expects: {message}"
        assert message in str(result.failure())

    def spec_choice(self, model: list[Expected], moment: Moment) -> tuple[int, Any] | None:
        """The spec's selection among ``model``'s entries at ``moment``: the position
        and the key values, or None for none."""
        return spec_selection.select(
            spec_entries(model), spec_policy(self.policy), moment.now, moment.budget_left
        )

    # ------------------------------------------------------------------ rules

    @initialize(policy=queue_policies())
    def start(self, policy: QueuePolicy) -> None:
        self.policy = policy
        note("fifo" if policy.is_fifo else f"{len(policy.keys)} keys, {policy.timing}")

    @rule(identity=identities, attributes=attribute_maps, serial=serials, now=enqueue_times)
    def append_request(
        self, identity: RequestId, attributes: dict[str, float | bool], serial: int, now: float
    ) -> None:
        made = self.append(
            self.queue, identity=identity, attributes=attributes, serial=serial, now=now
        )
        if self.waiting(identity):
            self.refused(made, "is already waiting")
            return
        queued = Expected(identity, False, now, dict(attributes), serial, self.operations)
        self.become(made.unwrap(), [*self.model, queued])

    @rule(identity=identities, attributes=attribute_maps, serial=serials, now=enqueue_times)
    def requeue_preempted(
        self, identity: RequestId, attributes: dict[str, float | bool], serial: int, now: float
    ) -> None:
        made = self.requeue(
            self.queue, identity=identity, attributes=attributes, serial=serial, now=now
        )
        if self.waiting(identity):
            self.refused(made, "is already waiting")
            return
        queued = Expected(identity, True, now, dict(attributes), serial, self.operations)
        self.become(made.unwrap(), [queued, *self.model])

    @rule(identity=identities)
    def remove(self, identity: RequestId) -> None:
        made = self.queue.remove(identity)
        if not self.waiting(identity):
            self.refused(made, "is not waiting")
            return
        rest = [e for e in self.model if not _same_identity(e.identity, identity)]
        self.become(made.unwrap(), rest)

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def without_index(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(0, len(self.model) - 1))
        self.become(self.queue.without_index(index), self.model[:index] + self.model[index + 1 :])

    @rule(moment=moments(), verdict=st.booleans() | st.just(True))
    def attempt(self, moment: Moment, verdict: bool) -> None:
        tested: list[WaitingEntry] = []

        def fits(entry: WaitingEntry) -> bool:
            tested.append(entry)
            return verdict

        outcome = attempt_admission(self.queue, self.policy, moment, fits)
        chosen = self.spec_choice(self.model, moment)
        if chosen is None:
            assert outcome == QueueEmpty()
            assert not tested
            return
        index, _ = chosen
        assert len(tested) == 1, "fits must be called once, on the selected entry"
        assert matches(tested[0], self.model[index]), "another entry was tested for fit"
        if not verdict:
            note("blocked")
            assert isinstance(outcome, Blocked)
            assert outcome.queue is self.queue, "a blocked attempt changed the queue"
            assert outcome.selection.index == index
            return
        note("admitted")
        assert isinstance(outcome, Admitted)
        assert outcome.selection.index == index
        assert matches(outcome.entry, self.model[index])
        self.become(outcome.queue, self.model[:index] + self.model[index + 1 :])

    def taken_in_turn(self, moment: Moment, count: int) -> list[int]:
        """The model's positions of the first ``count`` entries that repeated
        selections at ``moment`` take, each leaving before the next (the spec's)."""
        left, taken = list(range(len(self.model))), list[int]()
        while left and len(taken) < count:
            chosen = self.spec_choice([self.model[position] for position in left], moment)
            assert chosen is not None
            taken.append(left.pop(chosen[0]))
        return taken

    @rule(moment=moments(), count=st.integers(0, 8))
    def admit_at_once(self, moment: Moment, count: int) -> None:
        """The first ``count`` of the dispatch order leave together, as a step's
        admissions leave the drop-in (found by mutation testing: the paths that
        take them at once, and keys not stored at enqueue, were reached by no
        machine)."""
        taken = self.taken_in_turn(moment, count)
        order = self.queue.dispatched(self.policy, moment)
        for position in taken:
            entry, _ = next(order)
            assert matches(entry, self.model[position]), "the dispatch order is not the spec's"
        note(f"{len(taken)} admitted at once")
        made = self.queue.without_dispatched(self.policy, moment, count)
        leaving = set(taken)
        self.become(made, [e for at, e in enumerate(self.model) if at not in leaving])

    # ------------------------------------------------------------------ invariants

    @invariant()
    def the_queue_holds_the_model(self) -> None:
        assert len(self.queue) == len(self.model)
        for position, (entry, expected) in enumerate(zip(self.queue, self.model, strict=True)):
            assert matches(entry, expected), f"at {position}: {entry} is not the model's"

    @invariant()
    def order_is_as_specified(self) -> None:
        queued_by = {_key(e.identity): e.queued_by for e in self.model}
        resumed = [e.resumed for e in self.queue]
        prefix = resumed.count(True)
        assert resumed == [True] * prefix + [False] * (len(resumed) - prefix), (
            "resumed entries are not a prefix"
        )
        order = [queued_by[_key(e.identity)] for e in self.queue]
        assert order[:prefix] == sorted(order[:prefix], reverse=True), (
            "resumed entries are not most recent first"
        )
        assert order[prefix:] == sorted(order[prefix:]), "entries are not in enqueue order"

    @invariant()
    def nothing_lost_nothing_duplicated(self) -> None:
        keys = [_key(e.identity) for e in self.queue]
        assert len(keys) == len(set(keys)), "an identity waits twice"
        assert set(keys) == {_key(e.identity) for e in self.model}

    @invariant()
    def index_of_agrees(self) -> None:
        for identity in (*IDENTITIES, "absent", 99):
            found = [i for i, e in enumerate(self.model) if _same_identity(e.identity, identity)]
            assert self.queue.index_of(identity) == (Some(found[0]) if found else Nothing)

    @invariant()
    def old_versions_are_unchanged(self) -> None:
        for version in self.versions:
            assert len(version.queue) == len(version.contents), "an old version changed"
            for entry, expected in zip(version.queue, version.contents, strict=True):
                assert matches(entry, expected), "an old version changed"

    @invariant()
    def enqueue_keys_are_the_specs(self) -> None:
        if self.policy.timing != "enqueue" or self.policy.is_fifo:
            assert all(entry.enqueue_keys is None for entry in self.queue)
            return
        converted = spec_policy(self.policy)
        for entry, spec_entry in zip(self.queue, spec_entries(self.model), strict=True):
            expected = spec_selection.keys_of(converted, spec_entry, 0.0, {})
            assert entry.enqueue_keys is not None
            assert len(entry.enqueue_keys) == len(expected)
            assert all(map(same_value, entry.enqueue_keys, expected))


def _same_identity(a: RequestId, b: RequestId) -> bool:
    """Identities are equal values of the same type (``0`` and ``"0"`` differ)."""
    return type(a) is type(b) and a == b


def _key(identity: RequestId) -> tuple[str, RequestId]:
    return (type(identity).__name__, identity)


TestQueueMachine = QueueMachine.TestCase
TestQueueMachine.settings = settings(
    settings(), stateful_step_count=40, suppress_health_check=[HealthCheck.too_slow]
)


# ------------------------------------------------------------ the harness catches a bad kernel


class RequeuesAtTheBack(QueueMachine):
    """A wrong kernel: a preempted request joins at the back, as a new one does."""

    def requeue(self, queue: WaitingQueue, **request: Any) -> Result[WaitingQueue, QueueError]:
        return queue.append(self.policy, **request)


def test_the_machine_catches_a_wrong_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    quick = settings(
        max_examples=200,
        stateful_step_count=20,
        phases=[Phase.generate],
        database=None,
        derandomize=True,
        deadline=None,
    )
    with pytest.raises(AssertionError):
        run_state_machine_as_test(RequeuesAtTheBack, settings=quick)
    # and an old version that changes: a removal that turns the queue it was given
    # into the new version (every field of the version: its slots)
    original: Callable[[WaitingQueue, Any], WaitingQueue] = WaitingQueue.without

    def destructive(self: WaitingQueue, entry: Any) -> WaitingQueue:
        result = original(self, entry)
        for name in WaitingQueue.__slots__:
            object.__setattr__(self, name, getattr(result, name))
        return result

    monkeypatch.setattr(WaitingQueue, "without", destructive)
    with pytest.raises(AssertionError, match="old version"):
        run_state_machine_as_test(QueueMachine, settings=quick)
