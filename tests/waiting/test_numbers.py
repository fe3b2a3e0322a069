"""Numbers at the boundary: nothing raises where a Result or a value is promised.

Python integers are unbounded and floats are not. In a policy, a number must be a
finite float (anything else is a PolicyError); at run time, an integer beyond the
float range is ±infinity, a boolean is 1 or 0 (waiting.md, "Numbers").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from oracle.strategies import ATTRIBUTES, CONSTANTS, STAGES, any_numbers, huge_integers, trees
from policy.waiting import (
    Admitted,
    Blocked,
    Expr,
    Moment,
    PolicyError,
    QueueEmpty,
    QueueError,
    QueuePolicy,
    Scope,
    Timing,
    WaitingQueue,
    attempt_admission,
    evaluate,
    expr_from_json,
    load_policy,
    load_policy_text,
    make_policy,
    select_waiting,
)
from policy.waiting.numbers import SHOWN_LIMIT, digits, name_shown, shown
from tests.number_stand_ins import Int64

from .test_parse import parsed
from .test_select import same_values

BIG = 10**5000  # more digits than Python converts to text (4300)
DIGITS = "1" + "0" * 5000


# --- in a policy: refused with a PolicyError, never a ValueError ---------------------------


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ('{"version": ' + DIGITS + "}", 1, 13),
        ('{"let": {"k": -' + DIGITS + "}}", 1, 15),
        ('{"keys": ["' + DIGITS + '", {"num":\n ' + DIGITS + "}]}", 2, 2),
        ('{"keys": [{"num": ' + "9" * 310 + "}]}", 1, 19),  # beyond floats, within Python's limit
    ],
)
def test_json_text_with_an_integer_beyond_the_float_range(
    text: str, line: int, column: int
) -> None:
    error = load_policy_text(text).failure()
    assert (error.line, error.column) == (line, column)
    assert "number out of range" in error.message
    assert "beyond the float range (1.8e308)" in error.message
    assert len(str(error)) < 120  # short: the JSON path, the place and the reason


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"version": BIG}, "version: this library reads queue-policy version 1, not a 5001-digit"),
        ({"format": BIG}, "format: must be 'serving-policy-kernel/queue-policy', not a 5001-"),
        ({"timing": -BIG}, 'timing: must be "selection" or "enqueue", not a negative 5001-digit'),
        ({"let": {"k": BIG}}, "let.k: must be a finite number, not a 5001-digit integer"),
        ({"let": {"k": 10**400}}, "let.k: must be a finite number, not a 401-digit integer"),
        ({"let": {BIG: 1}}, "let.a 5001-digit integer: a 5001-digit integer cannot name a"),
        ({"attributes": {"a": BIG}}, 'attributes.a: must be "visible" or "hidden", not a 5001-'),
        ({BIG: 1}, "a 5001-digit integer: unknown field"),
        ({"keys": [BIG]}, "keys[0]: a key must be expression text or a JSON tree, not a 5001-"),
        ({"keys": [{"num": BIG}]}, "keys[0].num: must be a finite number, not a 5001-digit"),
        ({"keys": [{"num": [BIG]}]}, "keys[0].num: must be a finite number, not [a 5001-digit"),
        ({"keys": [{"bool": BIG}]}, "keys[0].bool: must be true or false, not a 5001-digit"),
        ({"keys": [{"attr": BIG}]}, "keys[0].attr: a 5001-digit integer cannot name an attribute"),
        ({"keys": [{"var": BIG}]}, 'keys[0].var: must be "serial", "now" or "waited", not a 5001'),
        ({"keys": [{"op": BIG, "args": []}]}, "keys[0].op: must be an operator name, not a 5001"),
        ({"keys": [{"num": 1, BIG: 2}]}, "keys[0].a 5001-digit integer: unknown field"),
    ],
)
def test_a_document_with_a_huge_integer_anywhere_gives_a_policy_error(
    doc: dict[Any, Any], expected: str
) -> None:
    error = load_policy(doc).failure()
    assert isinstance(error, PolicyError)
    assert str(error).startswith(expected)


def test_make_policy_and_trees_refuse_huge_integers() -> None:
    assert str(make_policy(None, constants={"k": -BIG}).failure()) == (
        "let.k: must be a finite number, not a negative 5001-digit integer"
    )
    assert str(expr_from_json({"num": BIG}).failure()) == (
        "num: must be a finite number, not a 5001-digit integer"
    )
    assert isinstance(make_policy(None, constants={"k": 10**300}), Success)  # a finite float


# --- at run time: ±infinity, never an OverflowError ------------------------------------------


def one_entry(policy: QueuePolicy, attributes: dict[str, Any], serial: Any = 0) -> WaitingQueue:
    return WaitingQueue().append(policy, 1, attributes, serial=serial, now=0.0).unwrap()


@pytest.mark.parametrize("timing", ["selection", "enqueue"])
def test_huge_integers_in_a_request_read_as_infinities(timing: Timing) -> None:
    policy = make_policy(["prompt", "-prompt", "serial"], attributes=["prompt"], timing=timing)
    queue = one_entry(policy.unwrap(), {"prompt": 10**400}, serial=-BIG)
    assert queue.entries[0].attributes["prompt"] == math.inf  # stored as a float
    selection = select_waiting(queue, policy.unwrap(), Moment(1.0)).unwrap()
    assert selection.keys == (math.inf, -math.inf, -math.inf)


def test_huge_integers_in_the_moment_read_as_infinities() -> None:
    policy = make_policy(["now", "waited", "budget_left(engine)"]).unwrap()
    queue = WaitingQueue().append(policy, 1, {}, serial=0, now=-BIG).unwrap()
    assert queue.entries[0].enqueued_at == -math.inf
    moment = Moment(BIG, {"engine": -(10**400)})
    assert (moment.now, moment.budget_left["engine"]) == (math.inf, -math.inf)
    selection = select_waiting(queue, policy, moment).unwrap()
    assert selection.keys == (math.inf, math.inf, -math.inf)
    assert same_values(
        select_waiting(queue, policy, Moment(1, {"engine": True})).unwrap().keys,
        (1.0, math.inf, 1.0),
    )


@pytest.mark.parametrize(
    ("given", "read"),
    [
        (Int64(3), 3.0),
        (Int64(2**53 + 1), 2.0**53),
        (Int64(-(10**400)), -math.inf),
        (Fraction(1, 4), 0.25),
        (Fraction(10**400, 3), math.inf),
    ],
    ids=["Int64(3)", "Int64(2**53 + 1)", "Int64(-10**400)", "1/4", "10**400/3"],
)
def test_real_numbers_of_any_type_read_as_ints_and_floats_do(given: Any, read: float) -> None:
    # Issue 30: numpy's numbers (numbers.Integral, numbers.Real) were "not a number".
    policy = make_policy(["a", "serial", "now", "budget_left(engine)"], attributes=["a"]).unwrap()
    queue = WaitingQueue().append(policy, 1, {"a": given}, serial=given, now=given).unwrap()
    entry = queue.entries[0]
    assert (entry.attributes["a"], entry.enqueued_at) == (read, read)
    assert type(entry.attributes["a"]) is float
    keys = select_waiting(queue, policy, Moment(given, {"engine": given})).unwrap().keys
    assert same_values(keys, (read, read, read, read))
    finite = math.isfinite(read)
    assert isinstance(make_policy(None, constants={"k": given}), Success) is finite
    assert isinstance(expr_from_json({"num": given}), Success) is finite


@pytest.mark.parametrize("given", [1j, Decimal(1)], ids=["complex", "Decimal"])
def test_numbers_that_are_not_real_are_still_refused(given: Any) -> None:
    policy = make_policy(["a"], attributes=["a"]).unwrap()
    refused = WaitingQueue().append(policy, 1, {"a": given}, serial=0, now=0.0)
    assert str(refused.failure()) == "request 1: attribute 'a' must be a number or a boolean"


def test_evaluation_reads_huge_integers_and_booleans_from_any_scope() -> None:
    scope = Scope({"a": BIG, "b": True}, BIG, now=BIG, waited=-BIG, budget_left={}, constants={})
    assert evaluate(parsed("a + b"), scope) == math.inf
    assert evaluate(parsed("b + b"), scope) == 2.0
    assert evaluate(parsed("serial - now"), scope) != 0  # inf - inf: NaN, not an error
    assert evaluate(parsed("waited"), scope) == -math.inf


def test_what_is_not_a_number_is_refused_where_it_enters() -> None:
    policy = make_policy(["serial"]).unwrap()
    assert str(WaitingQueue().append(policy, 1, {}, serial="1", now=0.0).failure()) == (  # type: ignore[arg-type]
        "request 1: serial must be a number, not '1'"
    )
    assert str(WaitingQueue().append(policy, 1, {}, serial=1, now=None).failure()) == (  # type: ignore[arg-type]
        "request 1: now must be a number, not None"
    )
    with pytest.raises(TypeError, match="now must be a number"):
        Moment("0")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"budget_left\['engine'\] must be a number"):
        Moment(0.0, {"engine": "96"})  # type: ignore[dict-item]
    assert str(QueueError(BIG, "is not waiting")) == "request a 5001-digit integer: is not waiting"


# --- the rule, checked on generated queues -----------------------------------------------


def as_documented(value: Any) -> float:
    """waiting.md's rule, written out: bools 1/0, integers beyond floats ±infinity."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    # the largest float is 2**1024 - 2**971; from halfway to the next power, floats round up
    if isinstance(value, int) and abs(value) >= 2**1024 - 2**970:
        return math.inf if value > 0 else -math.inf
    return float(value)


@dataclass(frozen=True)
class Request:
    attributes: dict[str, Any]
    serial: Any
    now: Any
    resumed: bool


@st.composite
def numeric_cases(draw: st.DrawFn) -> tuple[QueuePolicy, list[Request], Any, dict[str, Any]]:
    timing: Timing = draw(st.sampled_from(["selection", "enqueue"]))
    keys: list[Expr | str] = draw(
        st.lists(
            trees | st.sampled_from(["a", "b - serial", "now", "waited", "budget_left(engine)"]),
            min_size=1,
            max_size=3,
        )
    )
    made = make_policy(
        keys,
        constants=dict.fromkeys(CONSTANTS, 2.0),
        attributes=dict.fromkeys(ATTRIBUTES, "visible"),
        timing=timing,
    )
    if isinstance(made, Failure):  # e.g. waited at enqueue
        made = make_policy(["a", "serial"], attributes=["a"], timing=timing)
    requests = [
        Request(
            {name: draw(any_numbers) for name in ATTRIBUTES},
            draw(st.integers() | huge_integers | st.booleans()),
            draw(any_numbers),
            draw(st.integers(0, 5)) == 0,
        )
        for _ in range(draw(st.integers(1, 5)))
    ]
    budget = {stage: draw(any_numbers) for stage in STAGES if draw(st.booleans())}
    return made.unwrap(), requests, draw(any_numbers), budget


def queue_from(policy: QueuePolicy, requests: list[Request], convert: bool) -> WaitingQueue:
    queue = WaitingQueue()
    for identity, request in enumerate(requests):
        attributes = {
            name: as_documented(value) if convert else value
            for name, value in request.attributes.items()
        }
        serial: Any = as_documented(request.serial) if convert else request.serial
        now = as_documented(request.now) if convert else request.now
        add = queue.requeue_preempted if request.resumed else queue.append
        queue = add(policy, identity, attributes, serial=serial, now=now).unwrap()
    return queue


@given(numeric_cases())
def test_any_number_anywhere_selects_as_its_documented_float(
    case: tuple[QueuePolicy, list[Request], Any, dict[str, Any]],
) -> None:
    policy, requests, now, budget = case
    raw = queue_from(policy, requests, convert=False)
    converted = queue_from(policy, requests, convert=True)
    moment = Moment(now, budget)
    expected = select_waiting(
        converted,
        policy,
        Moment(as_documented(now), {k: as_documented(v) for k, v in budget.items()}),
    ).unwrap()
    got = select_waiting(raw, policy, moment).unwrap()
    assert got.index == expected.index
    assert same_values(got.keys, expected.keys)
    assert all(isinstance(value, float) for value in got.keys)
    assert isinstance(attempt_admission(raw, policy, moment, lambda _: True), Admitted)
    assert isinstance(attempt_admission(raw, policy, moment, lambda _: False), Blocked)
    assert attempt_admission(WaitingQueue(), policy, moment, lambda _: True) == QueueEmpty()


# --- found by mutation testing (docs/mutation.md)
# Numbers and values in messages: rules mutation testing found unasserted (docs/mutation.md).
#
# ``digits`` counts decimal digits without converting to text; ``shown`` is ``repr``, short
# (at most ``SHOWN_LIMIT`` characters) and never raising, eliding long and deep values
# (docs/waiting.md: "values in it are shown short").


@pytest.mark.parametrize("exponent", [*range(0, 60), 299, 300, 301, 400, 1000, 5000])
def test_digits_counts_decimal_digits_at_every_power_of_ten(exponent: int) -> None:
    power = 10**exponent
    below = max(exponent, 1)  # 10**k - 1 has k digits (0 has one)
    expected = {
        power - 1: below,
        power: exponent + 1,
        power + 1: exponent + 1 if exponent else 1,
        2 * power: exponent + 1,
        10 * power - 1: exponent + 1,
        -power: exponent + 1,
        -(power - 1): below,
    }
    for number, count in expected.items():
        assert digits(number) == count, (exponent, number)


def test_digits_of_small_numbers() -> None:
    assert [digits(n) for n in (0, 1, 5, 9, 10, 11, 99, 100, 999, 1000)] == [
        1, 1, 1, 1, 2, 2, 2, 3, 3, 4,
    ]  # fmt: skip


def test_huge_integers_are_shown_by_their_digit_count() -> None:
    assert shown(10**40) == "a 41-digit integer"
    assert shown(-(10**40)) == "a negative 41-digit integer"
    assert shown(-(10**5000)) == "a negative 5001-digit integer"
    assert shown(12345) == "12345"
    assert shown(-7) == "-7"


def test_plain_values_are_their_repr() -> None:
    for value in (None, True, False, 1.5, float("inf"), "", "prompt", 0, -0.0):
        assert shown(value) == repr(value)
    assert shown(b"ab") == "b'ab'"  # any other value: its repr


def test_text_is_cut_at_the_limit() -> None:
    exactly = "x" * SHOWN_LIMIT  # SHOWN_LIMIT characters: quoted whole
    assert shown(exactly) == repr(exactly)
    longer = "x" * 100
    assert shown(longer) == repr("x" * SHOWN_LIMIT) + "... (100 characters)"
    assert shown("x" * 10_000_000) == repr("x" * SHOWN_LIMIT) + "... (10,000,000 characters)"
    assert shown(list(range(100))) == "[0, 1, 2, 3, ...]"
    long_repr = shown([b"y" * 100])  # a representation is cut by the same rule
    assert long_repr == f"[b'{'y' * (SHOWN_LIMIT - 3)}... (105 characters)"


def test_lists_show_four_items_and_three_levels() -> None:
    assert shown([1, 2, 3, 4]) == "[1, 2, 3, 4]"
    assert shown([1, 2, 3, 4, 5]) == "[1, 2, 3, 4, ...]"
    assert shown([[1]]) == "[[1]]"
    assert shown([1, [2, [3, [4]]]]) == "[1, [2, [3, [...]]]]"
    assert shown([1, [2, [3]]]) == "[1, [2, [3]]]"


def test_dicts_show_four_entries_and_three_levels() -> None:
    assert shown({"a": 1}) == "{'a': 1}"
    assert shown({"a": 1, "b": 2}) == "{'a': 1, 'b': 2}"
    four = {"a": 1, "b": 2, "c": 3, "d": 4}
    assert shown(four) == "{'a': 1, 'b': 2, 'c': 3, 'd': 4}"
    assert shown({**four, "e": 5}) == "{'a': 1, 'b': 2, 'c': 3, 'd': 4, ...}"
    assert shown({"a": [1]}) == "{'a': [1]}"
    assert shown({"a": {"b": {"c": {"d": 1}}}}) == "{'a': {'b': {'c': {...}}}}"
    assert shown({"a": {"b": {"c": 1}}}) == "{'a': {'b': {'c': 1}}}"


def test_shown_never_raises() -> None:
    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    assert shown(Broken()) == "<Broken>"
    assert len(shown({(1, 2): 3})) <= SHOWN_LIMIT  # a key that is itself a sequence
    assert shown([Broken()]) == "[<Broken>]"


def test_name_shown() -> None:
    assert name_shown("k" * SHOWN_LIMIT) == "k" * SHOWN_LIMIT
    assert name_shown("k" * (SHOWN_LIMIT + 1)) == "k" * SHOWN_LIMIT + "... (81 characters)"
    assert name_shown(3) == "3"
    assert name_shown(None) == "None"


def test_policy_error_without_a_full_position_prints_none() -> None:
    # line and column are printed together, for malformed text only.
    assert str(PolicyError("keys[0]", "bad", 2, None)) == "keys[0]: bad"
    assert str(PolicyError("keys[0]", "bad", None, 3)) == "keys[0]: bad"
    assert str(PolicyError("keys[0]", "bad", 2, 3)) == "keys[0]: line 2, column 3: bad"
