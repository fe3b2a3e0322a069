"""The persistent ordered map against a plain sorted list, after every step.

As pyrsistent's own tests do: the same operations on the structure and on a
list model, compared after each one, old versions included (they must never
change). A small fanout makes the trees deep, so splits, emptied nodes and
root changes all happen; one test shows a deliberately wrong tree is caught.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Callable
from typing import Any

import pytest

from policy.waiting import ordered
from policy.waiting.ordered import OrderedMap


def _compare(tree: OrderedMap[int, int], model: list[int]) -> None:
    assert len(tree) == len(model)
    assert list(tree.keys()) == model
    assert list(tree.values()) == [-key for key in model]
    if model:
        assert tree.first() == (model[0], -model[0])
        assert tree.last() == (model[-1], -model[-1])
        for key in model[:: max(1, len(model) // 7)]:
            assert tree.rank(key) == model.index(key)
            assert tree.get(key) == -key
            assert key in tree
            assert tree.rank(key + 1) == bisect.bisect_left(model, key + 1)
        for position in range(0, len(model), max(1, len(model) // 5)):
            assert tree.at(position) == (model[position], -model[position])
    assert tree.get(10**12) is None
    assert 10**12 not in tree


def _run(seed: int, steps: int, check: Callable[[OrderedMap[int, int], list[int]], None]) -> None:
    draw = random.Random(seed)
    tree: OrderedMap[int, int] = OrderedMap()
    model: list[int] = []
    kept: list[tuple[OrderedMap[int, int], list[int]]] = []
    low, high = 0, 0
    for step in range(steps):
        choice = draw.random()
        if choice < 0.55 or not model:
            kind = draw.random()
            if kind < 0.4:
                key, high = high, high + 1  # an append
            elif kind < 0.6:
                low -= 1  # a requeue
                key = low
            else:
                key = draw.randrange(-(10**6), 10**6) * 2 + 1
            if key in model:
                continue
            tree = tree.insert(key, -key)
            bisect.insort(model, key)
        else:
            key = model[0] if draw.random() < 0.4 else draw.choice(model)
            tree = tree.remove(key)
            model.remove(key)
        check(tree, model)
        if step % 50 == 0:
            kept.append((tree, list(model)))
    for old, contents in kept:  # persistence: earlier versions are as they were
        check(old, contents)


@pytest.mark.parametrize("fanout", [4, 5, 64])
def test_against_a_sorted_list(monkeypatch: pytest.MonkeyPatch, fanout: int) -> None:
    monkeypatch.setattr(ordered, "FANOUT", fanout)
    for seed in range(4):
        _run(seed, 1500, _compare)


def test_a_wrong_tree_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A removal that forgets to update the sizes on its path breaks ``rank``."""
    monkeypatch.setattr(ordered, "FANOUT", 4)
    original = ordered._remove

    def forgetful(node: Any, height: int, key: Any) -> Any:
        found = original(node, height, key)
        if found is None or height == 0 or len(found[0]) < 2:
            return found
        slots = list(found[1])
        slots[1::2] = [size + 1 for size in slots[1::2]]
        return (found[0], tuple(slots))

    monkeypatch.setattr(ordered, "_remove", forgetful)
    with pytest.raises(AssertionError):
        _run(0, 1500, _compare)


def test_build_in_order_fills_leaves() -> None:
    tree: OrderedMap[int, int] = OrderedMap()
    for key in range(10_000):
        tree = tree.insert(key, key)
    assert tree._height <= 2  # 64 keys a leaf: 157 leaves under 3 inner nodes


def test_a_thinned_tree_is_rebuilt_no_taller_than_its_size_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Increasing keys, then one kept per subtree: without rebuilding, height grew
    with the number of inserts (7 levels for 16 keys at fanout 4)."""
    monkeypatch.setattr(ordered, "FANOUT", 4)
    tree: OrderedMap[int, int] = OrderedMap()
    for key in range(4000):
        tree = tree.insert(key, -key)
    model = list(range(4000))
    for key in range(4000):
        if key % 250:
            tree = tree.remove(key)
            model.remove(key)
            if key % 97 == 0:
                _compare(tree, model)
    _compare(tree, model)
    assert tree._height <= 3  # 16 keys: within two levels of log4(16)


def test_removing_a_missing_key_is_an_error() -> None:
    tree: OrderedMap[int, str] = OrderedMap()
    tree = tree.insert(1, "a").insert(3, "c")
    with pytest.raises(KeyError):
        tree.remove(2)
    assert list(tree.items()) == [(1, "a"), (3, "c")]
