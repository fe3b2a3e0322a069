"""A waiting entry (``policy.waiting.entry``): its attribute view (what an entry
carries, read as a mapping), its equality and hash, and the checks of an entry
built by hand (``make_entry``)."""

from __future__ import annotations

import pytest

from policy.waiting import WaitingQueue, fifo, make_policy
from policy.waiting.entry import AttributeView, make_entry

# --- found by hardening (issue 18): ranges and argument types


@pytest.mark.parametrize(
    ("arguments", "kind", "said"),
    [
        ((3, 3), TypeError, "AttributeView's names must be a tuple of names (str), not int"),
        (((1,), (1.0,)), TypeError, "AttributeView's names must be a tuple of names (str), not"),
        ((("a",), [1.0]), TypeError, "AttributeView's values must be a tuple, not list"),
        ((("a",), ("x",)), TypeError, "AttributeView's values must be numbers, not 'x'"),
        ((("a",), (None,)), TypeError, "AttributeView's values must be numbers, not None"),
        ((("a", "b"), (1.0,)), ValueError, "AttributeView needs one name per value: 2 names"),
    ],
)
def test_a_hand_built_attribute_view_checks_its_arguments(
    arguments: tuple[object, ...], kind: type[Exception], said: str
) -> None:
    with pytest.raises(kind) as refused:
        AttributeView(*arguments)  # type: ignore[arg-type]
    assert str(refused.value).startswith(said)


def test_an_entry_s_own_view_is_still_an_attribute_view() -> None:
    queue = WaitingQueue().append(fifo(), "r", {"prompt": 3}, serial=0, now=0.0).unwrap()
    (entry,) = queue
    view = entry.attributes
    assert type(view) is AttributeView
    assert (dict(view), repr(view)) == ({"prompt": 3.0}, "{'prompt': 3.0}")
    assert AttributeView(("prompt",), (3.0,)) == view


def test_an_attribute_an_entry_lacks_stays_out_of_its_view_under_a_policy_that_reads_it() -> None:
    # "r" joined under fifo without "prompt"; "s" under a policy reading it: the queue
    # lays "r" out for that policy with ABSENT (NaN to the keys), which the view skips
    reads_prompt = make_policy(["prompt"], attributes=["prompt"]).unwrap()
    queue = WaitingQueue().append(fifo(), "r", {"other": 2}, serial=0, now=0.0).unwrap()
    queue = queue.append(reads_prompt, "s", {"prompt": 1}, serial=1, now=0.0).unwrap()
    lacking = next(entry for entry in queue if entry.identity == "r").attributes
    assert (dict(lacking), len(lacking), list(lacking)) == ({"other": 2.0}, 1, ["other"])
    assert "prompt" not in lacking
    assert lacking.get("prompt") is None
    with pytest.raises(KeyError, match="prompt"):
        lacking["prompt"]
    plain = AttributeView(("other",), (2.0,))
    assert lacking == plain
    assert hash(lacking) == hash(plain)


def test_entries_equal_by_what_they_carry_hash_alike_and_a_non_entry_is_not_one() -> None:
    entry = make_entry("a", {"prompt": 1}, 0, 0.0)
    same = make_entry("a", {"prompt": 1.0}, 0, 0.0)
    other = make_entry("a", {"prompt": 2}, 0, 0.0)
    assert (entry == same, entry != same, hash(entry) == hash(same)) == (True, False, True)
    assert (entry == other, entry != other) == (False, True)
    assert (entry == "a", entry != "a") == (False, True)


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ((["a"], {}, 0, 0.0), "WaitingEntry.identity must be hashable and equal to itself"),
        (("a", [("p", 1)], 0, 0.0), "WaitingEntry.attributes must be a mapping"),
        (("a", {1: 1.0}, 0, 0.0), "WaitingEntry.attributes must be keyed by names (str)"),
        (("a", {"p": None}, 0, 0.0), "WaitingEntry.attributes['p'] must be a number"),
        (("a", {}, "0", 0.0), "WaitingEntry.serial must be a number"),
        (("a", {}, 0, None), "WaitingEntry.enqueued_at must be a number"),
        (("a", {}, 0, 0.0, 1), "WaitingEntry.resumed must be True or False"),
        (("a", {}, 0, 0.0, False, [1.0]), "WaitingEntry.enqueue_keys must be None or a tuple"),
        (("a", {}, 0, 0.0, False, ("x",)), "WaitingEntry.enqueue_keys must be None or a tuple"),
    ],
)
def test_a_hand_built_entry_checks_its_arguments(arguments: tuple[object, ...], said: str) -> None:
    with pytest.raises(TypeError) as refused:
        make_entry(*arguments)  # type: ignore[arg-type]
    assert str(refused.value).startswith(said)
