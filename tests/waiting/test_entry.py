"""The entry's attribute view (``policy.waiting.entry.AttributeView``): what an
entry carries, read as a mapping."""

from __future__ import annotations

import pytest

from policy.waiting import WaitingQueue, fifo
from policy.waiting.entry import AttributeView

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
