"""The text form of keys: parsing, errors with positions, and printing back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from oracle.strategies import CONSTANTS, trees
from policy.waiting import (
    Attr,
    Binary,
    Bool,
    BudgetLeft,
    Call,
    Cond,
    Const,
    Expr,
    Num,
    PolicyError,
    Scope,
    Unary,
    Var,
    evaluate,
    expr_from_json,
    expr_to_json,
    is_stage_name,
    make_policy,
    nesting,
    parse_expression,
    unparse,
)
from policy.waiting.parse import MAX_DEPTH


def parsed(text: str, constants: frozenset[str] = frozenset(CONSTANTS)) -> Expr:
    return parse_expression(text, constants).unwrap()


def refused(text: str) -> PolicyError:
    return parse_expression(text).failure()


def test_the_aging_key_of_the_issue() -> None:
    key = parsed("immediate ? 0 : prompt > 128 && waited >= 3 ? 1 : prompt <= 128 ? 2 : 3")
    assert key == Cond(
        Attr("immediate"),
        Num(0),
        Cond(
            Binary(
                "&&",
                Binary(">", Attr("prompt"), Num(128)),
                Binary(">=", Var("waited"), Num(3)),
            ),
            Num(1),
            Cond(Binary("<=", Attr("prompt"), Num(128)), Num(2), Num(3)),
        ),
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 + 2 * 3", Binary("+", Num(1), Binary("*", Num(2), Num(3)))),
        ("1 - 2 - 3", Binary("-", Binary("-", Num(1), Num(2)), Num(3))),
        ("8 / 4 / 2", Binary("/", Binary("/", Num(8), Num(4)), Num(2))),
        (
            "a < b == b < a",
            Binary("==", Binary("<", Attr("a"), Attr("b")), Binary("<", Attr("b"), Attr("a"))),
        ),
        ("a || b && c", Binary("||", Attr("a"), Binary("&&", Attr("b"), Attr("c")))),
        (
            "a == 1 && b != 2",
            Binary("&&", Binary("==", Attr("a"), Num(1)), Binary("!=", Attr("b"), Num(2))),
        ),
        ("!a && b", Binary("&&", Unary("!", Attr("a")), Attr("b"))),
        ("-a * b", Binary("*", Unary("-", Attr("a")), Attr("b"))),
        ("a ? b : c ? d : e", Cond(Attr("a"), Attr("b"), Cond(Attr("c"), Attr("d"), Attr("e")))),
        ("a ? b ? c : d : e", Cond(Attr("a"), Cond(Attr("b"), Attr("c"), Attr("d")), Attr("e"))),
        ("(a ? b : c) ? d : e", Cond(Cond(Attr("a"), Attr("b"), Attr("c")), Attr("d"), Attr("e"))),
        ("-3", Num(-3)),
        ("-(3)", Unary("-", Num(3))),
        ("--3", Unary("-", Num(-3))),
        ("- -x", Unary("-", Unary("-", Attr("x")))),
        ("2 - -3", Binary("-", Num(2), Num(-3))),
        ("1.5e3 + .5 + 2.", Binary("+", Binary("+", Num(1500), Num(0.5)), Num(2))),
        ("true && !false", Binary("&&", Bool(True), Unary("!", Bool(False)))),
        ("min(a)", Call("min", (Attr("a"),))),
        ("max(1, serial, now)", Call("max", (Num(1), Var("serial"), Var("now")))),
        ("budget_left(engine) - k", Binary("-", BudgetLeft("engine"), Const("k"))),
        ("short_tokens", Const("short_tokens")),
        ("short_token", Attr("short_token")),
        ("\n  a\n+\tb ", Binary("+", Attr("a"), Attr("b"))),
    ],
)
def test_precedence_and_forms(text: str, expected: Expr) -> None:
    assert parsed(text) == expected


def test_negative_zero_literal_keeps_its_sign() -> None:
    assert parsed("-0") == Num(-0.0)
    assert parsed("-0") != Num(0.0)


@pytest.mark.parametrize(
    ("text", "line", "column", "fragment"),
    [
        ("", 1, 1, "expected an operand (number, name or '('), found end of text"),
        ("1 +", 1, 4, "expected an operand"),
        ("1 2", 1, 3, "expected an operator or end of text, found '2'"),
        ("(1 + 2", 1, 7, "expected ')' to close the '(' at line 1, column 1, found end of text"),
        ("a ? b", 1, 6, "expected ':' of the '?' at line 1, column 3"),
        ("a\n  + )", 2, 5, "expected an operand (number, name or '('), found ')'"),
        ("a = b", 1, 3, "unexpected '='; did you mean '=='?"),
        ("a & b", 1, 3, "did you mean '&&'?"),
        ("a | b", 1, 3, "did you mean '||'?"),
        ("a $ b", 1, 3, "unexpected '$'"),
        ("min()", 1, 5, "expected an operand"),
        ("min 1", 1, 5, "expected '(' after min"),
        ("max(1, 2", 1, 9, "expected ')' or ',' in max(...)"),
        ("budget_left(3)", 1, 13, "expected a stage name, found '3'"),
        ("budget_left(engine", 1, 19, "expected ')' after the stage name"),
        ("budget_left", 1, 12, "expected '(' after budget_left"),
        ("1e999", 1, 1, "number 1e999 is out of range"),
        ("-1e999", 1, 2, "number 1e999 is out of range"),
        ("٣", 1, 1, "unexpected '٣'"),
    ],
)
def test_malformed_text_points_at_line_and_column(
    text: str, line: int, column: int, fragment: str
) -> None:
    error = refused(text)
    assert (error.line, error.column) == (line, column)
    assert fragment in error.message
    assert str(error).startswith(f"line {line}, column {column}: ")


@pytest.mark.parametrize(
    ("text", "column"),
    [
        ("(" * MAX_DEPTH + "1" + ")" * MAX_DEPTH, MAX_DEPTH),  # the 50th '(' is level 51
        ("-" * MAX_DEPTH + "x", MAX_DEPTH),
        ("!" * MAX_DEPTH + "x", MAX_DEPTH),
        ("min(" * MAX_DEPTH + "1" + ")" * MAX_DEPTH, 4 * MAX_DEPTH),  # at the last '('
        ("a ? " * MAX_DEPTH + "1" + " : 2" * MAX_DEPTH, 4 * MAX_DEPTH - 1),  # at the last '?'
        ("1 + (" * 60 + "1" + ")" * 60, 5 * MAX_DEPTH),
    ],
)
def test_genuine_nesting_is_refused_at_the_token_that_crosses_the_limit(
    text: str, column: int
) -> None:
    error = refused(text)
    assert error.message.startswith(f"expression nested deeper than {MAX_DEPTH} levels")
    assert (error.line, error.column) == (1, column)


def test_nesting_up_to_the_limit_is_read() -> None:
    for text in (
        "(" * (MAX_DEPTH - 1) + "1" + ")" * (MAX_DEPTH - 1),
        "-" * (MAX_DEPTH - 1) + "x",
        "a ? " * (MAX_DEPTH - 1) + "1" + " : 2" * (MAX_DEPTH - 1),
    ):
        assert isinstance(parse_expression(text), Success), text
    assert isinstance(parse_expression("-" * 10_000 + "x"), Failure)
    assert isinstance(parse_expression("(" * 100_000), Failure)


def flat_sum(terms: int) -> Expr:
    tree: Expr = Attr("a")
    for _ in range(terms - 1):
        tree = Binary("+", tree, Attr("a"))
    return tree


@pytest.mark.parametrize("terms", [MAX_DEPTH + 1, 500, 5000])
def test_a_flat_chain_of_any_length_is_not_nesting(terms: int) -> None:
    text = " + ".join(["a"] * terms)
    tree = parsed(text)
    assert tree == flat_sum(terms)
    assert hash(tree) == hash(flat_sum(terms))
    assert repr(tree).startswith("Binary(op='+', left=Binary(op='+', left=")
    assert unparse(tree) == text
    assert evaluate(tree, Scope({"a": 1.0}, 0, 0.0, 0.0, {}, {})) == terms
    assert expr_from_json(expr_to_json(tree)) == Success(tree)


@pytest.mark.parametrize("terms", [MAX_DEPTH + 1, 500])
def test_chains_of_mixed_operators_and_of_conditionals_are_flat_too(terms: int) -> None:
    mixed = " - ".join(f"a * {i} / 2 + -b" for i in range(terms))
    assert unparse(parsed(mixed)) == mixed
    lanes = " : ".join(f"a == {i} ? {i}" for i in range(terms)) + " : -1"
    tree = parsed(lanes)
    assert unparse(tree) == lanes
    assert evaluate(tree, Scope({"a": 7.0}, 0, 0.0, 0.0, {}, {})) == 7.0
    assert evaluate(tree, Scope({"a": 0.5}, 0, 0.0, 0.0, {}, {})) == -1.0


def test_the_deepest_text_of_every_kind_is_read_evaluated_and_printed() -> None:
    # every level goes through all seven binary precedences, a prefix operator and
    # parentheses: the most work per level for the recursive parser
    level = "a || b && c == d < e + f * -("
    text = level * ((MAX_DEPTH - 1) // 2) + "x + y" + ")" * ((MAX_DEPTH - 1) // 2)
    tree = parsed(text)
    assert unparse(tree) == text
    assert evaluate(tree, Scope({}, 0, 0.0, 0.0, {}, {})) == 1.0  # a || ... with a NaN: true
    assert isinstance(refused(level + text + ")"), PolicyError)


@pytest.mark.parametrize(
    ("tree", "text"),
    [
        (Binary("*", Binary("+", Num(1), Num(2)), Unary("-", Num(3))), "(1 + 2) * -(3)"),
        (Binary("-", Attr("a"), Binary("-", Attr("b"), Attr("c"))), "a - (b - c)"),
        (Binary("-", Binary("-", Attr("a"), Attr("b")), Attr("c")), "a - b - c"),
        (Unary("-", Num(-3)), "--3"),
        (Unary("!", Cond(Attr("a"), Num(1), Num(2))), "!(a ? 1 : 2)"),
        (Cond(Cond(Attr("a"), Num(1), Num(2)), Num(3), Num(4)), "(a ? 1 : 2) ? 3 : 4"),
        (Num(0.1), "0.1"),
        (Num(1e16), "1e+16"),
        (Num(-0.0), "-0"),
        (Call("min", (Cond(Attr("a"), Num(1), Num(2)), Num(3))), "min(a ? 1 : 2, 3)"),
    ],
)
def test_unparse_uses_only_needed_parentheses(tree: Expr, text: str) -> None:
    assert unparse(tree) == text
    assert parsed(text) == tree


def test_trees_refuse_what_no_text_can_spell() -> None:
    with pytest.raises(ValueError, match="finite"):
        Num(float("inf"))
    with pytest.raises(ValueError, match="usable name"):
        Attr("waited")
    with pytest.raises(ValueError, match="at least one"):
        Call("min", ())


@given(trees)
def test_unparse_then_parse_is_the_identity(tree: Expr) -> None:
    text = unparse(tree)
    assert parse_expression(text, frozenset(CONSTANTS)) == Success(tree), text


_SOUP = st.lists(
    st.sampled_from(
        [
            "a",
            "k",
            "1",
            "-",
            "!",
            "+",
            "*",
            "/",
            "<",
            "<=",
            "==",
            "&&",
            "||",
            "?",
            ":",
            "(",
            ")",
            ",",
            "min",
            "max",
            "budget_left",
            "true",
            "waited",
            "-2.5e3",
            "\n",
            "=",
        ]
    ),
    max_size=25,
).map(" ".join)


@given(st.one_of(st.text(), _SOUP))
def test_any_text_parses_or_gives_a_policy_error(text: str) -> None:
    result = parse_expression(text, frozenset(CONSTANTS))
    if isinstance(result, Failure):
        error = result.failure()
        assert isinstance(error, PolicyError)
        assert (error.line or 0) >= 1
        assert (error.column or 0) >= 1
    else:
        # whatever parsed prints back to something that parses to the same tree
        tree = result.unwrap()
        assert parse_expression(unparse(tree), frozenset(CONSTANTS)) == Success(tree)


@pytest.mark.parametrize("word", ["now", "waited", "serial", "min", "max", "true", "budget_left"])
def test_a_reserved_word_is_not_a_stage(word: str) -> None:
    error = refused(f"budget_left({word})")
    assert (error.line, error.column) == (1, 13)
    assert error.message == f"{word!r} is a reserved word, not a stage name"


def wrapped(tree: Expr, levels: int) -> Expr:
    """``tree`` inside ``levels`` calls of min: each argument is exactly one level deeper."""
    for _ in range(levels):
        tree = Call("min", (tree,))
    return tree


@given(trees)
def test_the_nesting_of_a_tree_is_what_the_parser_counts(tree: Expr) -> None:
    assert 1 <= nesting(tree) <= MAX_DEPTH
    deepest = wrapped(tree, MAX_DEPTH - nesting(tree))
    assert nesting(deepest) == MAX_DEPTH
    text = unparse(deepest)
    assert parse_expression(text, frozenset(CONSTANTS)) == Success(deepest)
    too_deep = Call("max", (deepest,))
    error = parse_expression(unparse(too_deep), frozenset(CONSTANTS)).failure()
    assert error.message.startswith("expression nested deeper than")
    # a tree that text could not hold is refused as a key and as a JSON tree
    assert make_policy([too_deep], constants=dict.fromkeys(CONSTANTS, 1.0)).failure().path == (
        "keys[0]"
    )
    assert "nested deeper" in expr_from_json(expr_to_json(too_deep)).failure().message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("engine", True),
        ("prefill_2", True),
        ("_", True),
        ("now", False),
        ("budget_left", False),
        ("true", False),
        ("2x", False),
        ("étape", False),
        ("a-b", False),
        ("", False),
        ("engine\n", False),
    ],
)
def test_is_stage_name(text: str, expected: bool) -> None:
    assert is_stage_name(text) is expected


@given(st.one_of(st.text(max_size=8), st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)))
def test_is_stage_name_says_what_budget_left_reads(text: str) -> None:
    read = parse_expression(f"budget_left({text})")
    stage = read.map(lambda tree: tree.stage if isinstance(tree, BudgetLeft) else None)
    assert is_stage_name(text) == (stage == Success(text))


@given(trees, trees)
def test_equality_and_hash_of_trees_follow_their_text(a: Expr, b: Expr) -> None:
    # equal trees print alike; trees that print alike are equal (signed zeros included)
    assert (a == b) == (unparse(a) == unparse(b))
    copy = parse_expression(unparse(a), frozenset(CONSTANTS)).unwrap()
    assert copy == a
    assert hash(copy) == hash(a)
    assert repr(copy) == repr(a)


# --- found by mutation testing (docs/mutation.md)
# The key language's parser: rules mutation testing found unasserted (docs/mutation.md).
#
# Each error is the one docs/waiting.md describes: 1-based line and column, and what was
# expected where.


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


# --- found by hardening (issue 9)


@pytest.mark.parametrize("constants", [None, 3, "abc", b"abc"])
def test_parse_expression_refuses_constants_that_are_not_names_with_a_failure(
    constants: object,
) -> None:
    error = parse_expression("a", constants).failure()  # type: ignore[arg-type]
    assert error.message.startswith("constants must be a collection of names, not ")
