"""The static path's batched index (``StaticIndex.added_all``, what ``extend`` uses)
is the index one ``added`` per entry gives: per class when every entry keeps its
class's key order, and the same fallbacks as one by one (an entry out of key
order within its class, more than ``MAX_STATIC_CLASSES`` classes, entries of a
policy without keys) wherever in the batch they come.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policy.waiting import WaitingQueue, load_policy, vllm_priority
from policy.waiting.path_static import MAX_STATIC_CLASSES, StaticIndex
from tests.waiting.test_mutation_gaps_queue_line import _shown

#: A static policy whose first key takes as many values as the requests bring.
_MANY_CLASSES = load_policy(
    {
        "attributes": {"score": "visible", "arrival_time": "visible"},
        "keys": ["score", "arrival_time"],
    }
).unwrap()


def _index_state(index: Any) -> dict[str, object]:
    return {
        field.name: _shown(getattr(index, field.name))
        for field in dataclasses.fields(index)
        if field.name != "policy"
    }


def _batches(policy: Any, base_size: int, rows: list[tuple[int, float]]) -> tuple[Any, Any]:
    """A queue of ``base_size`` entries and the batch of ``rows`` (first key, arrival)
    after it, as entries of one ``extend``: the batched index and the one-by-one one."""
    name = "score" if policy is _MANY_CLASSES else "priority"
    items = [
        (f"r{serial}", {name: key, "arrival_time": at}, serial, float(serial))
        for serial, (key, at) in enumerate(rows)
    ]
    base = WaitingQueue().extend(policy, items[:base_size]).unwrap()
    entries = list(base.extend(policy, items[base_size:]).unwrap())[base_size:]
    index = base._bound(policy)._index
    assert isinstance(index, StaticIndex)
    return index.added_all(entries, None), index._added_each(entries, None)


_ROWS = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from([0.0, 1.0, 2.0, 3.0])), min_size=1, max_size=30
)


@settings(max_examples=200)
@given(rows=_ROWS, base_size=st.integers(0, 10))
def test_a_batch_indexes_as_one_by_one_adds(rows: list[tuple[int, float]], base_size: int) -> None:
    base_size = min(base_size, len(rows))
    batched, each = _batches(vllm_priority(), base_size, rows)
    assert _index_state(batched) == _index_state(each)


@pytest.mark.parametrize("base_size", [0, MAX_STATIC_CLASSES - 3, MAX_STATIC_CLASSES + 2])
def test_a_batch_past_the_class_limit_falls_back_as_one_by_one(base_size: int) -> None:
    rows = [(key, float(key)) for key in range(MAX_STATIC_CLASSES + 8)]
    batched, each = _batches(_MANY_CLASSES, base_size, rows)
    assert _index_state(batched) == _index_state(each)
    assert not batched.by_class  # the general index, as one by one


def test_a_broken_batch_is_caught() -> None:
    """The check above fails on a batch that loses its key order check."""
    rows = [(1, 3.0), (1, 1.0)]  # out of key order within class 1
    batched, each = _batches(vllm_priority(), 0, rows)
    assert _index_state(batched) == _index_state(each)
    assert not each.by_class
    kept = StaticIndex._added_each
    try:
        StaticIndex._added_each = lambda self, *_: self  # type: ignore[method-assign]
        broken, _ = _batches(vllm_priority(), 0, rows)
    finally:
        StaticIndex._added_each = kept  # type: ignore[method-assign]
    assert _index_state(broken) != _index_state(each)


@pytest.mark.parametrize(
    "total", [MAX_STATIC_CLASSES - 1, MAX_STATIC_CLASSES, MAX_STATIC_CLASSES + 1]
)
def test_a_batch_at_the_class_limit_keeps_or_leaves_classes_as_one_by_one(total: int) -> None:
    """The limit itself (found by mutation testing): a batch that brings the classes to
    exactly ``MAX_STATIC_CLASSES`` keeps them, one more leaves them, as one by one
    does; the batch also brings entries of classes already there, which are not new."""
    base_classes = MAX_STATIC_CLASSES - 4
    rows = [(key, float(key)) for key in range(base_classes)]
    rows += [(key, 100.0 + key) for key in range(total)]  # old classes again, then new ones
    batched, each = _batches(_MANY_CLASSES, base_classes, rows)
    assert _index_state(batched) == _index_state(each)
    assert batched.by_class is (total <= MAX_STATIC_CLASSES)
