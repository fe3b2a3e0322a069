"""The one quoting rule (policy/text.py): every host's text a message quotes is cut
by ``cut`` (at most 80 characters, then ``... (N characters)``), so a 10 MB name
makes a message of a line, not of 10 MB, wherever the message is made. (Found by
hardening, issue 18.)"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from returns.result import Failure

from policy import (
    Arrival,
    Cancel,
    Lane,
    ProtocolError,
    ProtocolErrorKind,
    RoundResult,
    Tick,
    apply_event,
    initial_state,
    parse_grant_rounds,
    parse_lane,
)
from policy.json_text import member_path, read_json
from policy.rotation import decisions
from policy.text import (
    QUOTE_WIDTH,
    WHITESPACE,
    cut,
    name_shown,
    printable,
    quote,
    represent,
    shown,
    trim,
)
from policy.waiting import (
    Attr,
    Const,
    Moment,
    PolicyError,
    WaitingQueue,
    fifo,
    load_policy,
    make_entry,
    make_policy,
    parse_expression,
    select_waiting,
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


# --- found by hardening (issue 9)


HUGE = 10**5000  # more digits than Python writes in decimal (4300)


ODD = "a\nb\x1b[2J\ud800"  # a newline, an escape sequence and a lone surrogate


def one_printable_line(text: str) -> bool:
    return text.isprintable()


SEPARATORS = "\x1c\x1d\x1e\x1f"  # ASCII separators: str.strip() strips them, trim() does not


def test_show_once_the_old_readings_disagreed() -> None:
    # str.strip() (the old parse_lane) strips the separators; JSON's own reader keeps the
    # last of two equal keys: both readings the issue found.
    assert "\x1fhigh\x1f".strip() == "high"
    assert json.loads('{"keys": ["serial"], "keys": ["now"]}') == {"keys": ["now"]}


@pytest.mark.parametrize("char", [*WHITESPACE, *SEPARATORS, "x"])
def test_lane_and_budget_trim_exactly_the_same_characters(char: str) -> None:
    trimmed = char in WHITESPACE
    assert (parse_lane(f"{char}high{char}") is Lane.HIGH) is trimmed
    assert (parse_grant_rounds(f"{char}4{char}") == 4) is trimmed


def test_only_text_is_trimmed() -> None:
    with pytest.raises(TypeError, match=r"^trim reads text \(str\), not int$"):
        trim(3)  # type: ignore[arg-type]


def test_the_grant_budget_has_no_trimming_table_of_its_own() -> None:
    assert not hasattr(decisions, "_WHITESPACE")


def test_show_once_python_refuses_to_write_a_huge_integer() -> None:
    with pytest.raises(ValueError, match="4300"):
        repr(HUGE)
    assert represent(HUGE) == hex(HUGE)
    assert int(represent(HUGE), 16) == HUGE  # exact: it reads back


class _Unwritable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_a_container_python_cannot_write_is_written_item_by_item() -> None:
    assert represent([HUGE, "x"]) == f"[{hex(HUGE)}, 'x']"
    assert represent((HUGE,)) == f"({hex(HUGE)},)"
    assert represent({HUGE}) == f"set({{{hex(HUGE)}}})"
    assert represent(frozenset({HUGE})) == f"frozenset({{{hex(HUGE)}}})"
    assert represent({"k": HUGE}) == f"{{'k': {hex(HUGE)}}}"
    assert represent([_Unwritable()]) == "[<_Unwritable>]"


def test_a_value_too_deep_to_write_item_by_item_is_cut_to_its_type_name() -> None:
    nested: list[object] = [HUGE]
    for _ in range(100_000):  # deeper than writing it item by item can recurse
        nested = [nested]
    written = represent(nested)
    assert written.startswith("[[[")
    assert written.endswith("]]]")
    assert "<list>" in written


@pytest.mark.parametrize(
    "request_id", [HUGE, -HUGE, ODD, (HUGE, ODD)], ids=["huge", "negative", "odd", "tuple"]
)
def test_rotation_values_show_any_request_id(request_id: object) -> None:
    state = initial_state()
    step = apply_event(state, Arrival(request_id, Lane.HIGH, 2)).unwrap()  # type: ignore[arg-type]
    step = apply_event(step.state, Arrival("B", Lane.LOW, 2)).unwrap()
    step = apply_event(step.state, RoundResult(finished=False)).unwrap()
    step = apply_event(step.state, Tick(2)).unwrap()
    step = apply_event(step.state, Arrival("C", Lane.LOW, 2)).unwrap()
    for value in (step, step.state, step.state.active, *step.state.backlog):
        assert one_printable_line(repr(value))
    refused = apply_event(step.state, Arrival(request_id, Lane.HIGH, 2))  # type: ignore[arg-type]
    error: ProtocolError = refused.failure()
    assert error.kind is ProtocolErrorKind.DUPLICATE_REQUEST
    for text in (str(error), repr(error), str(apply_event(state, Cancel(request_id)).failure())):  # type: ignore[arg-type]
        assert one_printable_line(text)


@pytest.mark.parametrize("identity", [HUGE, ODD], ids=["huge", "odd"])
def test_waiting_values_show_any_identity(identity: object) -> None:
    queue = WaitingQueue().append(fifo(), identity, {"n": HUGE}, serial=HUGE, now=0.0).unwrap()  # type: ignore[arg-type]
    selection = select_waiting(queue, fifo(), Moment(0.0)).unwrap()
    entry = make_entry(identity, {"n": HUGE}, HUGE, HUGE)  # type: ignore[arg-type]
    refused = queue.append(fifo(), identity, {}, serial=0, now=0.0).failure()  # type: ignore[arg-type]
    for text in (repr(queue), repr(selection), repr(entry), str(refused), repr(refused)):
        assert one_printable_line(text)
    assert str(refused).endswith(": is already waiting")


def test_policy_errors_escape_names() -> None:
    errors = [
        make_policy(None, constants={ODD: 1}).failure(),
        make_policy(None, attributes={ODD: "visible"}).failure(),
        load_policy({ODD: 1}).failure(),
        PolicyError(ODD, ODD),
    ]
    for error in errors:
        assert one_printable_line(str(error))
    assert name_shown("a\nb") == "a\\nb"
    assert printable(ODD) == "a\\nb\\x1b[2J\\ud800"


def test_a_tuple_is_shown_as_a_tuple() -> None:
    # a caller of the Python API who passed a tuple must not read that it passed a list
    assert shown(()) == "()"
    assert shown((1,)) == "(1,)"
    assert shown((1, [2, (3,)])) == "(1, [2, (3,)])"
    assert shown(((((1,),),),)) == "((((...),),),)"
    assert shown(tuple(range(5))) == "(0, 1, 2, 3, ...)"
    assert shown([1, (2,)]) == "[1, (2,)]"
