"""The queue whose index holds its order (issue 16): against a plain list.

Under the ``static`` path by class and the ``lanes`` path the queue keeps no
line of its non-resumed entries: the index's class lines hold them, and the
queue's order is the merge of those lines and the line of resumed entries by
ticket (``PathIndex.holds_order``). These tests build such queues large enough
(hundreds of entries over several classes, resumed entries among them, entries
removed from the middle) for every part of the merged view to be used: iteration,
``index_of`` (a count per line), ``without_index`` and ``__getitem__``-style
positions past the walked front (a bisection per line), ``entry_of`` on waiting
and departed entries, and the moves of the static index to its general B+tree
(an entry out of key order within its class) and back (the index emptied).
After every step the queue is compared, whole, with a plain list of the same
entries in the specified order.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from enum import IntEnum
from itertools import islice
from types import SimpleNamespace

import pytest

from policy.identity import RequestId
from policy.waiting import Moment, QueuePolicy, WaitingQueue, dispatch_entries, select_entry
from policy.waiting.line import Line
from policy.waiting.policies import ascend_fcfs_lanes, fifo, static_priority, vllm_priority
from tests.waiting.one_per_path import ONE_POLICY_PER_PATH

POLICIES = {
    "static priority": static_priority(),
    "vLLM priority": vllm_priority(),
    "Ascend lanes": ascend_fcfs_lanes(),
}


class Model:
    """The queue as a list: resumed entries first (latest first), then the others
    in enqueue order; each item is (identity, resumed)."""

    def __init__(self) -> None:
        self.items: list[tuple[RequestId, bool]] = []

    def append(self, identity: RequestId) -> None:
        self.items.append((identity, False))

    def requeue(self, identity: RequestId) -> None:
        self.items.insert(0, (identity, True))

    def remove(self, identity: RequestId) -> None:
        self.items = [item for item in self.items if item[0] != identity]


def attributes(rng: random.Random, serial: int, *, out_of_order: bool) -> dict[str, float]:
    """Attributes every policy here reads; arrivals rise with ``serial`` unless
    ``out_of_order`` (an arrival earlier than every other in its class)."""
    return {
        "priority": float(rng.randrange(4)),
        "arrival_time": -1.0 - serial if out_of_order else float(serial),
        "prompt": float(rng.choice((16, 4096))),
        "immediate": False,
    }


def check(queue: WaitingQueue, model: Model, departed: list[RequestId], rng: random.Random) -> None:
    """The queue holds exactly the model's entries in the model's order."""
    entries = queue.entries
    assert [(entry.identity, entry.resumed) for entry in entries] == model.items
    assert len(queue) == len(model.items)
    assert bool(queue) == bool(model.items)
    for position in sorted(rng.sample(range(len(entries)), min(len(entries), 12))):
        entry = entries[position]
        assert queue.entry_of(entry.identity) is entry
        assert queue.index_of(entry.identity).unwrap() == position
        after = queue.without_index(position)
        assert [e.identity for e in after] == [e.identity for e in entries if e is not entry]
    for identity in departed[-5:]:
        assert queue.entry_of(identity) is None
        assert queue.index_of(identity).value_or(None) is None


def scenario(policy: QueuePolicy, seed: int, *, out_of_order: bool) -> Iterator[WaitingQueue]:
    """A seeded run of appends, requeues, removals and admissions, checked after
    every step; yields each version."""
    rng = random.Random(seed)
    queue, model = WaitingQueue(), Model()
    departed: list[RequestId] = []
    serial = 0
    made_late = False
    for step in range(700):
        roll = rng.random()
        waiting = [identity for identity, _ in model.items]
        if roll < 0.62 or not waiting:
            identity = f"r{serial}"
            fresh = roll < 0.55 or not waiting  # else a preempted request, put back
            join = queue.append if fresh else queue.requeue_preempted
            late = fresh and out_of_order and not made_late and step >= 300
            made_late = made_late or late
            details = attributes(rng, serial, out_of_order=late)
            queue = join(policy, identity, details, serial=serial, now=float(serial)).unwrap()
            (model.append if fresh else model.requeue)(identity)
        elif roll < 0.64:
            # admissions of the front in one step (the drop-in's deferred fifo pops)
            count = min(rng.choice((1, 2, 3, 8)), len(waiting))
            queue = queue.without_first(count)
            departed.extend(identity for identity, _ in model.items[:count])
            model.items = model.items[count:]
        elif roll < 0.68:
            # the admissions of one moment at once (the drop-in's deferred pops), or
            # any entries (from the middle of their lines)
            count = min(rng.choice((2, 3, 9)), len(waiting))
            moment = Moment(float(serial))
            if rng.random() < 0.7:
                gone = [
                    entry for entry, _ in islice(dispatch_entries(queue, policy, moment), count)
                ]
            else:
                gone = rng.sample(list(queue), count)
            queue = queue.without_each(gone)
            for entry in gone:
                model.remove(entry.identity)
                departed.append(entry.identity)
        elif roll < 0.8:
            leaving = rng.choice(waiting)
            queue = queue.remove(leaving).unwrap()
            model.remove(leaving)
            departed.append(leaving)
        else:
            chosen = select_entry(queue, policy, Moment(float(serial)))
            assert chosen is not None
            queue = queue.without(chosen[0])
            model.remove(chosen[0].identity)
            departed.append(chosen[0].identity)
        serial += 1
        if step % 25 == 0 or step > 690:
            check(queue, model, departed, rng)
        yield queue
    while model.items:  # emptied: the static index keeps classes again
        chosen = select_entry(queue, policy, Moment(float(serial)))
        assert chosen is not None
        queue = queue.without(chosen[0])
        model.remove(chosen[0].identity)
    check(queue, model, departed, rng)
    yield queue


@pytest.mark.parametrize("name", sorted(POLICIES))
@pytest.mark.parametrize("out_of_order", [False, True], ids=["in order", "one out of order"])
def test_a_queue_whose_index_holds_its_order_is_the_list(name: str, out_of_order: bool) -> None:
    policy = POLICIES[name]
    run = scenario(policy, 7, out_of_order=out_of_order)
    held = [q._index is not None and q._index.holds_order for q in run]
    assert held[100]
    assert held[-1]
    if name == "vLLM priority":  # a second key: an arrival can be out of order in its class
        # the index left its class lines for the B+tree, and came back once emptied
        assert held[300] is not out_of_order


@pytest.mark.parametrize("policy", [fifo(), ONE_POLICY_PER_PATH["scan"]], ids=["fifo", "scan"])
def test_a_queue_of_one_line_is_the_list(policy: QueuePolicy) -> None:
    """The same run where one line holds every entry (``without_first`` in one step)."""
    assert policy.path in ("fifo", "scan")
    for _ in scenario(policy, 11, out_of_order=False):
        pass


def test_without_first_refuses_a_count_out_of_range() -> None:
    queue = WaitingQueue().extend(fifo(), [("a", {}, 0, 0.0)]).unwrap()
    assert queue.without_first(0) is queue
    assert not queue.without_first(1)
    for count in (-1, 2):
        with pytest.raises(IndexError):
            queue.without_first(count)
    wrong: object
    for wrong in (True, 1.0):
        with pytest.raises(TypeError, match=f"count must be an int, not {type(wrong).__name__}"):
            queue.without_first(wrong)  # type: ignore[arg-type]
    with pytest.raises(IndexError) as raised:
        queue.without_first(5)
    assert raised.value.args == (5,)
    # an int of another type (not a bool) counts as its value
    assert not queue.without_first(Count.ONE)
    assert queue.without_first(Count.NONE) is queue


class Count(IntEnum):
    NONE = 0
    ONE = 1


def test_dropped_all_of_the_general_index_is_one_dropped_per_entry() -> None:
    """``StaticIndex.dropped_all`` once the index keeps its entries in the general
    B+tree (an entry out of key order within its class): the index one
    ``dropped`` per entry gives (the queue itself takes them one by one there,
    so only the index's own interface reaches this)."""
    policy = vllm_priority()
    rows = [(f"r{k}", {"priority": k % 3, "arrival_time": float(10 - k)}, k, 0.0) for k in range(9)]
    queue = WaitingQueue().extend(policy, rows).unwrap()
    index = queue._index
    assert index is not None
    assert index.tracks
    assert not index.holds_order  # the B+tree
    leaving = [queue.entry_of(name) for name in ("r4", "r0", "r7")]
    one_by_one = index
    for entry in leaving:
        one_by_one = one_by_one.dropped(entry)  # type: ignore[arg-type]
    at_once = index.dropped_all(leaving)  # type: ignore[arg-type]
    moment = Moment(0.0)
    assert list(at_once.dispatched(0.0, moment.budget_left) or ()) == list(
        one_by_one.dispatched(0.0, moment.budget_left) or ()
    )
    assert at_once.size() == one_by_one.size() == 6


def test_without_each_refuses_what_does_not_wait_here() -> None:
    policy = static_priority()
    queue = WaitingQueue().extend(policy, [(n, {"priority": 1}, 0, 0.0) for n in "abc"]).unwrap()
    a, b, _ = queue.entries
    other = WaitingQueue().extend(policy, [("a", {"priority": 1}, 0, 0.0)]).unwrap()
    for leaving in ([a, a], [a, other.entries[0]], [b, a, b]):
        with pytest.raises(KeyError):
            queue.without_each(leaving)
    with pytest.raises(KeyError) as raised:  # the foreign entry's ticket, as without says
        queue.without_each([b, other.entries[0]])
    assert raised.value.args == (other.entries[0].ticket,)
    with pytest.raises(TypeError, match="entry must be a WaitingEntry, not str"):
        queue.without_each([a, "b"])  # type: ignore[list-item]
    assert queue.without_each([]) is queue


def test_a_version_is_unchanged_by_later_ones() -> None:
    """Persistence: a version taken early reads the same after many more steps."""
    run = scenario(static_priority(), 3, out_of_order=False)
    versions = [next(run) for _ in range(200)]
    kept = [(version, version.entries) for version in versions[::40]]
    for _ in run:
        pass
    for version, entries in kept:
        assert version.entries == entries
        assert [version.index_of(e.identity).unwrap() for e in entries] == list(range(len(entries)))


def test_count_before_is_the_list_count() -> None:
    """``Line.count_before`` against a list, tombstones and both ends included."""
    rng = random.Random(5)
    line: Line[SimpleNamespace] = Line.empty()
    alive: list[SimpleNamespace] = []
    back, front = 0, -1
    for _ in range(600):
        roll = rng.random()
        if roll < 0.45 or not alive:
            entry = SimpleNamespace(ticket=back)
            back += 1
            line, alive = line.joined_back(entry), [*alive, entry]
        elif roll < 0.6:
            entry = SimpleNamespace(ticket=front)
            front -= 1
            line, alive = line.joined_front(entry), [entry, *alive]
        else:
            entry = rng.choice(alive)
            line = line.without(entry)
            alive = [other for other in alive if other is not entry]
        for ticket in {front - 1, front, back, back + 1, *rng.choices(range(front, back + 1), k=5)}:
            assert line.count_before(ticket) == sum(1 for e in alive if e.ticket < ticket)


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_an_entry_laid_out_for_another_policy_is_a_key_error(name: str) -> None:
    """``without`` of an entry that does not wait here is a ``KeyError``, even one
    laid out for another policy, which the class lines could not even read
    (found by an outside review of this change)."""
    details = {"priority": 1.0, "arrival_time": 0.0, "prompt": 16.0, "immediate": False}
    older = WaitingQueue().append(fifo(), "a", details, serial=0, now=0.0).unwrap()
    stale = older.entry_of("a")
    assert stale is not None
    queue = older.append(POLICIES[name], "b", details, serial=1, now=1.0).unwrap()
    with pytest.raises(KeyError) as raised:
        queue.without(stale)
    assert raised.value.args == (stale.ticket,)  # the entry's ticket, as a line says
    assert [entry.identity for entry in queue] == ["a", "b"]
