"""The identity index (policy/waiting/fast/identities.py): the same operations on
the index and on plain dicts, compared; and every version of a queue answering
by identity as if it held a map of its own, whichever version each new one is
made from."""

from __future__ import annotations

from typing import cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policy.waiting import (
    Moment,
    WaitingEntry,
    WaitingQueue,
    fifo,
    same_entry,
    static_priority,
)
from policy.waiting.fast.identities import SHARDS, Identities, Shards
from policy.waiting.fast.rows import Row
from policy.waiting.queue_policy import QueuePolicy

KEYS = st.one_of(st.integers(-300, 300), st.text(max_size=3))


@given(st.lists(st.tuples(st.sampled_from(["set", "added", "pop"]), KEYS, st.integers(0, 3))))
def test_shards_answer_as_one_dict(operations: list[tuple[str, object, int]]) -> None:
    shards: Shards[object, int] = Shards()
    plain: dict[object, int] = {}
    for operation, key, value in operations:
        if operation == "set":
            shards[key] = value
            plain[key] = value
        elif operation == "added":
            assert shards.added(key, value) == (key not in plain)
            plain.setdefault(key, value)
        elif key in plain:
            assert shards.pop(key) == plain.pop(key)
        assert len(shards) == shards.size == len(plain)
        assert bool(shards) == bool(plain)
        assert (key in shards) == (key in plain)
        assert shards.get(key) == plain.get(key)
    assert sorted(map(repr, shards.values())) == sorted(map(repr, plain.values()))


def test_shards_spread_integer_keys_over_every_shard() -> None:
    shards: Shards[int, int] = Shards((key, key) for key in range(SHARDS * 4))
    assert len(shards) == SHARDS * 4
    assert all(shards[key] == key for key in range(SHARDS * 4))


def test_the_index_goes_to_one_version_at_a_time() -> None:
    index = Identities()
    assert index.handed_on(0) == 1
    assert index.held_by(1)
    assert not index.claimed(0)  # the maker's stamp holds nothing
    assert index.claimed(1)
    assert not index.held_by(1)
    assert not index.claimed(1)  # a second version made from the same one copies
    index.given_back(1)
    assert index.held_by(1)


def _row(entry: WaitingEntry) -> Row:
    return cast("Row", tuple(entry))  # an entry's fields are its row's (entry.py)


def test_entries_leave_all_or_nothing_and_the_count_follows() -> None:
    # found by mutation testing: a batch refused part-way must put back the rows
    # taken before the stray, each in its own shard, and the count must follow
    # ids 0 to 4: each in its own shard (an int's hash is itself)
    queue = WaitingQueue().extend(fifo(), [(name, {}, 0, 0.0) for name in range(5)]).unwrap()
    a, b, c, d, e = list(queue)
    index = Identities(_row(entry) for entry in (a, b, c, d, e))
    assert index.left([a, b, a]) == 2  # a given twice: the third refused
    assert index.entries.size == 5
    assert all(index.entries.get(entry.identity) == tuple(entry) for entry in (a, b, c, d, e))
    assert index.left([a, b, tuple(c)]) == 2  # a row, not an entry (branch coverage)
    assert index.entries.size == 5
    assert all(index.entries.get(entry.identity) == tuple(entry) for entry in (a, b, c, d, e))
    assert index.left([b, c]) == -1
    assert index.entries.size == 3 == len(list(index.entries.values()))
    assert index.entries.get(1) is None
    index.dropped([_row(d)])
    assert index.entries.size == 2 == len(list(index.entries.values()))
    assert sorted(map(str, index.entries.values())) == sorted(map(str, [tuple(a), tuple(e)]))


def test_a_version_whose_index_went_on_refuses_entries_not_its_own() -> None:
    # found by mutation testing: a version asked again after a newer one took its
    # index (a branch) checks each leaving entry against its own rows
    base = WaitingQueue().append(fifo(), "a", {}, serial=0, now=0.0).unwrap()
    base.append(fifo(), "b", {}, serial=1, now=1.0).unwrap()  # takes base's index
    stranger = WaitingQueue().append(fifo(), "a", {}, serial=7, now=0.0).unwrap().first()
    own = base.first()
    assert (stranger.identity, stranger.ticket) == (own.identity, own.ticket)
    for leaving in ([stranger], [own, own]):
        with pytest.raises(KeyError):
            base.without_each(leaving)
    assert len(base.without_each([own])) == 0
    assert [entry.serial for entry in base] == [0]


POLICIES = [fifo(), static_priority()]


def _entries_by_id(queue: WaitingQueue) -> dict[object, WaitingEntry]:
    return {entry.identity: entry for entry in queue}


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(POLICIES),
    st.lists(
        st.tuples(
            st.integers(0, 30),  # which existing version the next is made from
            st.sampled_from(
                [
                    "append",
                    "requeue",
                    "extend",
                    "without",
                    "without_each",
                    "without_dispatched",
                    "twice",
                ]
            ),
            st.integers(0, 7),  # an identity
        ),
        max_size=40,
    ),
)
def test_every_version_answers_by_identity_as_its_own_map(
    policy: QueuePolicy, operations: list[tuple[int, str, int]]
) -> None:
    """Each operation is applied to any version made so far (an older one too,
    so that versions branch); afterwards every version still answers ``len``,
    iteration and ``entry_of`` for its own entries, and refuses and accepts
    duplicates as its own entries say."""
    versions = [WaitingQueue()]
    contents: list[dict[object, WaitingEntry]] = [{}]
    serial = 0
    for pick, operation, identity in operations:
        source = versions[pick % len(versions)]
        serial += 1
        attributes = {"priority": identity % 3}
        if operation in ("append", "requeue", "extend"):
            if operation == "append":
                made = source.append(policy, identity, attributes, serial=serial, now=0.0)
            elif operation == "requeue":
                made = source.requeue_preempted(
                    policy, identity, attributes, serial=serial, now=0.0
                )
            else:
                made = source.extend(
                    policy,
                    [
                        (identity, attributes, serial, 0.0),
                        (identity + 100, attributes, serial, 0.0),
                    ],
                )
            waiting = set(_entries_by_id(source))
            if identity in waiting or (operation == "extend" and identity + 100 in waiting):
                assert str(made.failure()).endswith("is already waiting")
                continue
            version = made.unwrap()
        elif operation == "without_dispatched":  # the first of the dispatch order, at once
            version = source.without_dispatched(policy, Moment(0.0), identity % 3)
        else:
            entry = source.entry_of(identity)
            if entry is None:
                continue
            other = [e for e in source if not same_entry(e, entry)][:1]
            if operation == "twice":  # refused part-way: the version is as it was
                with pytest.raises(KeyError):
                    source.without_each([*other, entry, entry])
                version = source
            elif operation == "without":
                version = source.without(entry)
            else:
                version = source.without_each([entry, *other])
        versions.append(version)
        contents.append(_entries_by_id(version))
        for queue, content in zip(versions, contents, strict=True):
            assert _entries_by_id(queue) == content  # iteration is unchanged
            assert len(queue) == len(content)
            for known in range(8):
                for name in (known, known + 100):
                    found, known_entry = queue.entry_of(name), content.get(name)
                    assert (found is None and known_entry is None) or (
                        found is not None
                        and known_entry is not None
                        and same_entry(found, known_entry)
                    )
