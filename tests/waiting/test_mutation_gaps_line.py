"""What mutation testing of ``policy/waiting/line.py`` found untested (docs/mutation.md).

The line's theory of operation (its module docstring) states how it keeps its
slots: ``waste`` counts the slots that hold no live entry, the line is rebuilt
exactly when that count exceeds the live entries plus ``_SLACK``, the ends rest
on live entries, ``dead`` holds the tombstones' tickets, and a line whose back
tickets are dense finds an entry by its ticket (``ticket - base``) without a
binary search. ``tests/waiting/test_line.py`` compares what a line holds with a
list; these tests pin the bookkeeping too, and the line's identity semantics.
"""

from __future__ import annotations

import operator
import random
from bisect import bisect_left
from dataclasses import dataclass
from itertools import islice
from typing import Any

import pytest

from policy.waiting import line as line_module
from policy.waiting.line import Line


@dataclass(frozen=True, slots=True, eq=False)
class Item:
    ticket: int


def _live(slot: object) -> bool:
    return type(slot) is not int


def _check_bookkeeping(line: Line[Item]) -> None:
    """The invariants of the module docstring, on the line's fields."""
    front, top, back, head, tail, _, dead, size, waste = line[:]
    front_part, back_part = list(islice(front, 0, top)), list(islice(back, head, tail))
    assert 0 <= top <= len(front)
    assert 0 <= head <= tail <= len(back)
    assert size == sum(map(_live, front_part)) + sum(map(_live, back_part))
    if top:
        assert _live(front[top - 1])  # the first entry rests on a live slot
    if tail > head:
        assert _live(back[head])
        assert _live(back[tail - 1])
    tombstones = {slot for slot in (*front_part, *back_part) if not _live(slot)}
    assert set(dead.keys()) == tombstones
    assert waste == head + (len(back) - tail) + (len(front) - top) + len(tombstones)
    tickets = [slot if type(slot) is int else slot.ticket for slot in front_part[::-1]]
    tickets += [slot if type(slot) is int else slot.ticket for slot in back_part]
    assert tickets == sorted(tickets)
    assert len(set(tickets)) == len(tickets)


def _rebuilt_compactly(line: Line[Item]) -> bool:
    front, top, back, head, tail, _, dead, _, waste = line[:]
    return (head, waste, len(dead), top, tail) == (0, 0, 0, len(front), len(back))


def test_waste_is_counted_and_the_line_rebuilt_exactly_past_the_slack() -> None:
    for seed in range(6):
        draw = random.Random(seed)
        line: Line[Item] = Line.empty()
        model: list[Item] = []
        low, high = -1, 0
        for _ in range(1500):
            waste, top, tail = line[8], line[1], line[4]
            front_length, back_length = len(line[0]), len(line[2])
            if draw.random() < 0.45 or not model:
                if draw.random() < 0.7:
                    item, high = Item(high), high + 1
                    line, model = line.joined_back(item), [*model, item]
                    assert line[8] == waste - (tail < back_length)  # a reused slot
                else:
                    item, low = Item(low), low - 1
                    line, model = line.joined_front(item), [item, *model]
                    assert line[8] == waste - (top < front_length)
            else:
                at = draw.choice((0, len(model) - 1, draw.randrange(len(model))))
                line, model = line.without(model[at]), model[:at] + model[at + 1 :]
                if not model:
                    assert line is Line.empty()
                elif waste + 1 > len(model) + line_module._SLACK:
                    assert _rebuilt_compactly(line)
                else:
                    assert line[8] == waste + 1
            _check_bookkeeping(line)
            assert list(line) == model


def test_a_drained_middle_is_rebuilt_at_the_first_removal_past_the_slack() -> None:
    items = [Item(ticket) for ticket in range(200)]
    line: Line[Item] = Line.empty().joined_back_all(items)
    # removing k middle entries wastes k slots: rebuilt when k > (200 - k) + 64, at k = 133
    for count, item in enumerate(items[1:134], start=1):
        line = line.without(item)
        assert _rebuilt_compactly(line) == (count == 133)
        _check_bookkeeping(line)
    assert list(line) == [items[0], *items[134:]]
    assert line[5] == 0  # rebuilt: dense again from the first back entry's ticket


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The binary searches the line makes, counted."""
    made: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> int:
        made.append(1)
        return bisect_left(*args, **kwargs)

    monkeypatch.setattr(line_module, "bisect_left", counted)
    return made


def _emptied_back(first: int) -> Line[Item]:
    """A line with one front entry whose back part joined and left again: an empty
    back part that does not start at slot 0 (and a ``base`` from ``first``)."""
    line: Line[Item] = Line.empty().joined_front(Item(-1))
    a, b = Item(first), Item(first + 1)
    line = line.joined_back(a).joined_back(b).without(a).without(b)
    assert line[3] == line[4] == 2
    assert list(line) == [line.first()]
    return line


@pytest.mark.parametrize("first", [0, 10])
@pytest.mark.parametrize("gap", [0, 8])
def test_a_dense_back_part_finds_its_entries_without_a_search(
    searches: list[int], first: int, gap: int
) -> None:
    start = first + 2 + gap
    batch = [Item(ticket) for ticket in range(start, start + 6)]
    single = [Item(ticket) for ticket in range(start, start + 6)]
    for line in (
        _emptied_back(first).joined_back_all(batch),
        _line_of_single_joins(_emptied_back(first), single),
        Line.empty().joined_back_all(batch),
    ):
        searches.clear()
        members = list(line)
        for position, member in enumerate(members):
            assert line.rank(member) == position
            assert line.holds(member)
        assert searches == []
        _check_bookkeeping(line)


def test_a_rebuilt_line_is_dense_again(searches: list[int]) -> None:
    # admissions at the front waste the slots behind the head: rebuilt at the 133rd
    items = [Item(ticket) for ticket in range(200)]
    line: Line[Item] = Line.empty().joined_back_all(items)
    for item in items[:133]:
        line = line.without(item)
    assert _rebuilt_compactly(line)
    searches.clear()
    for position, item in enumerate(items[133:]):
        assert line.rank(item) == position
    assert searches == []  # found at ticket - base: base is the first ticket, 133
    # a line of front entries only, drained from the middle: rebuilt without a back part
    fronts = [Item(-ticket) for ticket in range(1, 201)]
    line = Line.empty()
    for item in fronts:
        line = line.joined_front(item)
    for item in fronts[1:134]:
        line = line.without(item)
    assert _rebuilt_compactly(line)
    assert list(line) == [*fronts[134:][::-1], fronts[0]]
    _check_bookkeeping(line)
    back = Item(0)
    assert list(line.joined_back(back)) == [*fronts[134:][::-1], fronts[0], back]


def _line_of_single_joins(line: Line[Item], items: list[Item]) -> Line[Item]:
    for item in items:
        line = line.joined_back(item)
    return line


def test_leaving_at_the_front_takes_the_inline_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """An admission at the front of a line without resumed entries never looks for
    the entry's slot (the module docstring's common case), tombstones or not."""
    items = [Item(ticket) for ticket in range(8)]
    line: Line[Item] = Line.empty().joined_back_all(items).without(items[1]).without(items[2])
    looked_up: list[object] = []
    original = Line._slot_of

    def counted(self: Line[Item], entry: Item) -> tuple[bool, int]:
        looked_up.append(entry)
        return original(self, entry)

    monkeypatch.setattr(Line, "_slot_of", counted)
    model = [items[0], *items[3:]]
    while len(model) > 1:
        line, model = line.without(model[0]), model[1:]
        assert list(line) == model
        _check_bookkeeping(line)
    assert looked_up == []
    # an entry that left at either end is not held, found so without a lookup
    assert not any(line.holds(item) for item in items[:7])
    assert not Line.empty().holds(items[0])
    assert looked_up == []
    assert line.without(model[0]) is Line.empty()  # the last one: the general path
    assert looked_up == model


def test_joining_many_where_nothing_is_overwritten_is_one_extension(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    singles: list[Item] = []
    original = Line.joined_back

    def counted(self: Line[Item], entry: Item) -> Line[Item]:
        singles.append(entry)
        return original(self, entry)

    monkeypatch.setattr(Line, "joined_back", counted)
    items = [Item(ticket) for ticket in range(5)]
    line = Line.empty().joined_back_all(items[:2]).joined_back_all(items[2:])
    assert singles == []
    assert list(line) == items
    # a slot past the live part to overwrite: one join per entry
    shorter = line.without(items[4]).without(items[3])
    again = [Item(3), Item(4), Item(5)]
    grown = shorter.joined_back_all(again)
    assert singles == again
    assert list(grown) == [*items[:3], *again]
    assert list(line) == items  # the old version keeps its slots
    _check_bookkeeping(grown)


def test_joining_many_onto_a_line_that_does_not_start_at_ticket_zero() -> None:
    # after the queue's line empties, its back part restarts at a later ticket
    line: Line[Item] = Line.empty().joined_back(Item(100))
    grown = line.joined_back_all([Item(101), Item(102)])
    assert [item.ticket for item in grown] == [100, 101, 102]
    assert grown.last().ticket == 102
    assert len(grown) == 3
    assert grown.at(2).ticket == 102
    assert [item.ticket for item in grown.without(grown.last())] == [100, 101]
    _check_bookkeeping(grown)
    assert line.joined_back_all([]) is line


def test_a_position_outside_the_line_is_named_in_the_index_error() -> None:
    line: Line[Item] = Line.empty().joined_back(Item(0))
    for position in (-1, 1, 7):
        with pytest.raises(IndexError) as raised:
            line.at(position)
        assert raised.value.args == (position,)


def test_leaving_a_line_one_is_not_in_is_a_key_error_naming_its_ticket() -> None:
    line: Line[Item] = Line.empty().joined_front(Item(-1)).joined_back_all([Item(0), Item(1)])
    for stranger in (Item(0), Item(-1), Item(5)):  # equal tickets, other objects; or none
        with pytest.raises(KeyError) as raised:
            line.without(stranger)
        assert raised.value.args == (stranger.ticket,)


def test_the_last_of_an_empty_line_is_an_index_error_saying_so() -> None:
    with pytest.raises(IndexError) as raised:
        Line.empty().last()
    assert raised.value.args == ("last of an empty line",)


def test_lines_are_compared_and_hashed_by_identity() -> None:
    a, b = Item(0), Item(1)
    line: Line[Item] = Line.empty().joined_back(a).joined_back(b)
    same = Line.empty().joined_back(a).joined_back(b)
    # each operator on its own (tuple's would compare the vectors slot by slot)
    assert operator.eq(line, line) is True
    assert operator.ne(line, line) is False
    assert operator.eq(line, same) is False
    assert operator.ne(line, same) is True
    assert hash(line) == hash(line)
    versions = [Line.empty().joined_back(Item(ticket)) for ticket in range(50)]
    assert len({hash(version) for version in versions}) == 50  # not one hash for all
    assert len(set(versions)) == 50
    assert repr(line) == f"Line({[a, b]!r})"
