"""The key language's parser: rules mutation testing found unasserted (docs/mutation.md).

Each error is the one docs/waiting.md describes: 1-based line and column, and what was
expected where.
"""

from __future__ import annotations

import pytest
from returns.result import Failure

from policy.waiting import PolicyError, parse_expression


def error_of(text: str, constants: frozenset[str] = frozenset()) -> PolicyError:
    result = parse_expression(text, constants)
    assert isinstance(result, Failure), text
    error: PolicyError = result.failure()
    return error


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a specific operator expected, another one found
        ("a ? b , c", "line 1, column 7: expected ':' of the '?' at line 1, column 3, found ','"),
        ("a ? b ) c", "line 1, column 7: expected ':' of the '?' at line 1, column 3, found ')'"),
        (
            "(a : b",
            "line 1, column 4: expected ')' to close the '(' at line 1, column 1, found ':'",
        ),
        ("min(a : b)", "line 1, column 7: expected ')' or ',' in min(...), found ':'"),
        (
            "max(a ? b : c ,)",
            "line 1, column 16: expected an operand (number, name or '('), found ')'",
        ),
        ("budget_left x", "line 1, column 13: expected '(' after budget_left, found 'x'"),
        ("budget_left(x y", "line 1, column 15: expected ')' after the stage name, found 'y'"),
        ("budget_left(x,", "line 1, column 14: expected ')' after the stage name, found ','"),
        ("min a", "line 1, column 5: expected '(' after min, found 'a'"),
        # a name where an operator was expected is not an operator of the same spelling
        ("a ? b c", "line 1, column 7: expected ':' of the '?' at line 1, column 3, found 'c'"),
        ("(a b", "line 1, column 4: expected ')' to close the '(' at line 1, column 1, found 'b'"),
    ],
)
def test_a_wrong_token_where_a_specific_one_is_expected(text: str, expected: str) -> None:
    assert str(error_of(text)) == expected


def test_a_name_is_not_taken_for_a_punctuation_token() -> None:
    # ':' expected: the end of text is reported as such.
    assert str(error_of("a ? b")) == (
        "line 1, column 6: expected ':' of the '?' at line 1, column 3, found end of text"
    )


def test_an_out_of_range_literal_is_quoted_short() -> None:
    assert str(error_of("1e999")) == "line 1, column 1: number 1e999 is out of range"
    long_literal = "9" * 400
    assert str(error_of("1 + " + long_literal)) == (
        f"line 1, column 5: number {'9' * 24}... (400 characters) is out of range"
    )
    assert str(error_of("-" + long_literal)) == (
        f"line 1, column 2: number {'9' * 24}... (400 characters) is out of range"
    )


def test_parse_errors_have_the_empty_path_and_point_into_the_text() -> None:
    error = error_of("a +\n  * b")
    assert error == PolicyError(
        "", "expected an operand (number, name or '('), found '*'", line=2, column=3
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a # b", "line 1, column 3: unexpected '#'"),
        ("a = b", "line 1, column 3: unexpected '='; did you mean '=='?"),
        ("a & b", "line 1, column 3: unexpected '&'; did you mean '&&'?"),
        ("a | b", "line 1, column 3: unexpected '|'; did you mean '||'?"),
        ("a\n  #", "line 2, column 3: unexpected '#'"),
        ("a \n  #", "line 2, column 3: unexpected '#'"),
        ("a\n\n  #", "line 3, column 3: unexpected '#'"),
        ("a \t\n \n\t  # b", "line 3, column 4: unexpected '#'"),
        ("a +\n b\n  * #", "line 3, column 5: unexpected '#'"),
    ],
)
def test_an_unexpected_character_is_reported_at_its_line_and_column(
    text: str, expected: str
) -> None:
    assert str(error_of(text)) == expected
