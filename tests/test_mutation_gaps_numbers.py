"""Numbers and values in messages: rules mutation testing found unasserted (docs/mutation.md).

``digits`` counts decimal digits without converting to text; ``shown`` is ``repr``, short
(at most ``SHOWN_LIMIT`` characters) and never raising, eliding long and deep values
(docs/waiting.md: "values in it are shown short").
"""

from __future__ import annotations

import pytest

from policy.waiting.errors import PolicyError
from policy.waiting.numbers import SHOWN_LIMIT, digits, name_shown, shown


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
