"""The persistent line against a plain list, after every step.

As pyrsistent's own tests do: the same operations on the line and on a list
model, compared after each one, old versions included (they must never
change). Entries join at both ends and leave from anywhere, so tombstones,
resting ends, slot reuse past the live parts and rebuilds all happen; one test
shows a deliberately wrong line is caught.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from policy.waiting import line as line_module
from policy.waiting.line import Line


@dataclass(frozen=True, slots=True, eq=False)
class Item:
    ticket: int


def _compare(line: Line[Item], model: list[Item]) -> None:
    assert len(line) == len(model)
    assert bool(line) == bool(model)
    assert [item.ticket for item in line] == [item.ticket for item in model]
    assert all(a is b for a, b in zip(line, model, strict=True))
    if model:
        assert line.first() is model[0]
        assert line.last() is model[-1]
        for position in range(0, len(model), max(1, len(model) // 6)):
            assert line.rank(model[position]) == position
            assert line.at(position) is model[position]
            assert line.holds(model[position])
        assert line.rank(model[-1]) == len(model) - 1
        assert line.at(len(model) - 1) is model[-1]
    for outside in (-1, len(model)):
        with pytest.raises(IndexError):
            line.at(outside)
    # the slots stay within twice the live entries plus the slack (rebuilds)
    fields = line[:]
    assert fields[4] - fields[3] + fields[1] <= 2 * len(model) + 64 + 1
    assert not line.holds(Item(0))  # an equal ticket, another object


def _run(seed: int, steps: int, check: Callable[[Line[Item], list[Item]], None]) -> None:
    draw = random.Random(seed)
    line: Line[Item] = Line.empty()
    model: list[Item] = []
    kept: list[tuple[Line[Item], list[Item]]] = []
    low, high = -1, 0
    for step in range(steps):
        choice = draw.random()
        if choice < 0.5 or not model:
            if draw.random() < 0.7:
                item, high = Item(high), high + 1
                line, model = line.joined_back(item), [*model, item]
            else:
                item, low = Item(low), low - 1
                line, model = line.joined_front(item), [item, *model]
        elif choice < 0.56:
            # admissions at the front in one step (a host's deferred pops)
            count = draw.choice((0, 1, 2, 5, len(model))) if draw.random() < 0.9 else -1
            count = min(count, len(model))
            if count < 0:
                for outside in (-1, len(model) + 1):
                    with pytest.raises(IndexError) as raised:
                        line.without_first(outside)
                    assert raised.value.args == (outside,)
                count = 0
            line, model = line.without_first(count), model[count:]
        else:
            where = draw.random()
            if where < 0.35:
                at = 0
            elif where < 0.5:
                at = len(model) - 1
            else:
                at = draw.randrange(len(model))
            leaving = model[at]
            line, model = line.without(leaving), model[:at] + model[at + 1 :]
            assert not line.holds(leaving)
            with pytest.raises(KeyError):
                line.without(leaving)
        check(line, model)
        if step % 17 == 0:
            kept.append((line, list(model)))
    for old, old_model in kept:  # old versions never change
        check(old, old_model)


@pytest.mark.parametrize("seed", range(12))
def test_line_against_a_list(seed: int) -> None:
    _run(seed, 700, _compare)


def test_draining_from_the_middle_rebuilds_and_keeps_order() -> None:
    # the lanes path's pattern: the front stays, entries behind it leave
    items = [Item(ticket) for ticket in range(1000)]
    line: Line[Item] = Line.empty()
    for item in items:
        line = line.joined_back(item)
    for item in items[1:900]:
        line = line.without(item)
    _compare(line, [items[0], *items[900:]])
    # rebuilt: the vector holds at most twice the live entries, plus the slack
    assert len(line[:][2]) <= 2 * len(line) + 64 < 900


def test_without_first_skips_the_tombstones_and_rebuilds() -> None:
    items = [Item(ticket) for ticket in range(-3, 300)]
    line: Line[Item] = Line.empty()
    for item in items[3:]:
        line = line.joined_back(item)
    for item in reversed(items[:3]):
        line = line.joined_front(item)
    model = list(items)
    line, model = line.without(model[5]), model[:5] + model[6:]  # a tombstone
    line, model = line.without_first(7), model[7:]  # across it
    _compare(line, model)
    for _ in range(3):  # without tombstones: the ends move, then a rebuild
        line, model = line.without_first(90), model[90:]
        _compare(line, model)
    assert len(line[:][2]) <= 2 * len(line) + 64


def test_a_wrong_line_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A line whose removal at the front forgets to skip tombstones fails the check."""
    original = Line.without

    def forgetful(self: Line[Any], entry: Any) -> Line[Any]:
        made = original(self, entry)
        fields = made[:]
        back, head, tail = fields[2], fields[3], fields[4]
        if head > 0 and head < tail and type(back[head - 1]) is int:
            # step back onto the tombstone the real line skipped
            front, top, _, _, _, base, dead, size, waste = fields
            return line_module._made(front, top, back, head - 1, tail, base, dead, size, waste)
        return made

    monkeypatch.setattr(Line, "without", forgetful)

    def every_seed() -> None:
        for seed in range(12):
            _run(seed, 700, _compare)

    with pytest.raises(AssertionError):
        every_seed()
