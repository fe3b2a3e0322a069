"""The one quoting rule (policy/text.py): every host's text a message quotes is cut
by ``cut`` (at most 80 characters, then ``... (N characters)``), so a 10 MB name
makes a message of a line, not of 10 MB, wherever the message is made. (Found by
hardening, issue 18.)"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from returns.result import Failure

from policy import Cancel, apply_event, initial_state
from policy.json_text import member_path, read_json
from policy.text import QUOTE_WIDTH, cut, name_shown, quote, shown
from policy.waiting import (
    Attr,
    Const,
    WaitingQueue,
    load_policy,
    make_entry,
    make_policy,
    parse_expression,
)
from policy.waiting.expr import Var

NAME = "n" * 10_000_000  # a valid name of 10 MB
SUFFIX = "... (10,000,000 characters)"


def _message(make: Callable[[], object]) -> str:
    try:
        made = make()
    except (TypeError, ValueError) as error:
        return str(error)
    assert isinstance(made, Failure), made
    return str(made.failure())


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: make_policy([NAME], attributes=[]), id="unknown name"),
        pytest.param(lambda: make_policy([Attr(NAME)], constants={NAME: 1}), id="a constant"),
        pytest.param(
            lambda: make_policy([NAME], attributes={NAME: "hidden"}), id="a hidden attribute"
        ),
        pytest.param(lambda: make_policy([Const(NAME)], attributes=[NAME]), id="an attribute"),
        pytest.param(lambda: make_policy([Const(NAME)]), id="unknown constant"),
        pytest.param(
            lambda: make_policy(None, constants={NAME: 1}, attributes=[NAME]), id="declared twice"
        ),
        pytest.param(lambda: load_policy({NAME: 1}), id="a document's key"),
        pytest.param(lambda: load_policy({"keys": [{"op": NAME, "args": []}]}), id="an operator"),
        pytest.param(lambda: parse_expression("1 " + NAME), id="a token"),
        pytest.param(lambda: Var(NAME), id="a context variable"),  # type: ignore[arg-type]
        pytest.param(
            lambda: make_entry("a", {NAME: "x"}, 0, 0.0),  # type: ignore[dict-item]
            id="an entry's attribute",
        ),
        pytest.param(
            lambda: WaitingQueue().append(
                make_policy([NAME], attributes=[NAME]).unwrap(), "a", {}, serial=0, now=0.0
            ),
            id="a missing attribute",
        ),
    ],
)
def test_a_10_mb_name_makes_a_short_message(make: Callable[[], object]) -> None:
    message = _message(make)
    assert len(message) < 1_000
    assert message.count(SUFFIX) >= 1


def test_the_rule() -> None:
    exactly = "x" * QUOTE_WIDTH
    assert cut(exactly) == exactly
    assert quote(exactly) == repr(exactly)
    assert cut(exactly + "y") == exactly + "... (81 characters)"
    assert quote(exactly + "y") == repr(exactly) + "... (81 characters)"
    assert cut("a\nb") == "a\\nb"  # one printable line
    assert shown(NAME) == quote(NAME) == repr("n" * QUOTE_WIDTH) + SUFFIX
    assert name_shown(NAME) == "n" * QUOTE_WIDTH + SUFFIX


def test_a_protocol_error_shows_a_10_mb_request_id_short() -> None:
    refused = apply_event(initial_state(), Cancel(NAME)).failure()
    message = str(refused)
    assert message.startswith("the request is not on the speculative path: Cancel(request='nnn")
    assert message.endswith("... (10,000,018 characters)")  # of the event's repr
    assert len(message) < 300


def test_a_10_mb_json_key_makes_a_short_path_and_message() -> None:
    for text in (f'{{"{NAME}": 1, "{NAME}": 2}}', f'{{"{NAME}": [1, NaN]}}'):
        message = str(read_json(text).failure())
        assert len(message) < 400  # the path and the key, each cut
        assert message.startswith('["' + "n" * QUOTE_WIDTH + '"... (10,000,000 characters)]')
    assert member_path("a", "n" * QUOTE_WIDTH) == "a." + "n" * QUOTE_WIDTH
