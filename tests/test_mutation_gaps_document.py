"""Policy documents, validation messages and ready-made policies: rules mutation testing found
unasserted (docs/mutation.md). Messages and paths are those of docs/waiting.md, "Validation"."""

from __future__ import annotations

import re

import pytest
from returns.result import Failure

from policy.waiting import (
    MAX_DEPTH,
    Attr,
    Binary,
    Expr,
    Num,
    PolicyError,
    Unary,
    ascend_fcfs_lanes,
    load_policy,
    load_policy_text,
    make_policy,
    parse_expression,
    static_priority,
)


def refused_text(text: str) -> PolicyError:
    result = load_policy_text(text)
    assert isinstance(result, Failure), text
    error: PolicyError = result.failure()
    return error


# --- errors about the whole document have the empty path -----------------------------------------


def test_a_document_that_is_not_an_object_is_refused_at_the_root() -> None:
    docs: list[object] = [[], "keys", 3, None]
    for doc in docs:
        result = load_policy(doc)
        assert isinstance(result, Failure)
        assert result.failure() == PolicyError("", "a queue policy must be a JSON object")
        assert str(result.failure()) == "a queue policy must be a JSON object"


# The text is read by policy.json_text.read_json (the one JSON reader): its refusals
# keep their JSON path, line and column.


def test_text_that_is_not_json_is_refused_at_its_position() -> None:
    error = refused_text('{"keys": [}')
    assert error == PolicyError("keys[0]", "expected a value, found '}'", 1, 11)


def test_json_nested_too_deeply_for_the_reader_is_refused_not_crashed() -> None:
    error = refused_text("[" * 100_000 + "]" * 100_000)
    assert error == PolicyError("[0]" * 256, "nested deeper than 256 arrays and objects", 1, 257)


def test_malformed_key_text_alone_has_the_empty_path() -> None:
    result = parse_expression("1 +")
    assert isinstance(result, Failure)
    assert result.failure().path == ""
    assert (result.failure().line, result.failure().column) == (1, 4)


# --- a number out of the float range in JSON text: where it is ----------------------------------

BIG = "1" + "0" * 400  # beyond the float range
OUT_OF_RANGE = "number out of range (401 characters): beyond the float range (1.8e308)"


def test_an_out_of_range_integer_is_found_on_its_line_and_column() -> None:
    text = '\n{"let":\n  {"k": ' + BIG + "}\n}\n"
    error = refused_text(text)
    assert error == PolicyError("let.k", OUT_OF_RANGE, 3, 9)


def test_an_out_of_range_integer_on_the_first_line_after_a_leading_newline() -> None:
    error = refused_text('\n{"version": ' + BIG + "}")
    assert (error.path, error.line, error.column) == ("version", 2, 13)


def test_an_out_of_range_integer_on_the_first_line_of_several() -> None:
    error = refused_text('{"version": ' + BIG + ',\n "keys": ["serial"]\n}')
    assert (error.line, error.column) == (1, 13)


def test_a_float_beyond_the_float_range_is_refused_where_it_is_like_an_integer() -> None:
    # The one reader refuses every number beyond the float range, integer or not: the
    # float 1000...0.5 on line 1 is refused before the integer on line 2.
    text = '{"let": {"a": ' + BIG + ".5,\n" + ' "b": ' + BIG + "}}"
    error = refused_text(text)
    assert (error.path, error.line, error.column) == ("let.a", 1, 15)
    text = '{"let": {"a": 1.5,\n' + ' "b": ' + BIG + "}}"
    assert (refused_text(text).path, refused_text(text).line) == ("let.b", 2)


def test_the_same_digits_inside_a_string_are_not_the_integer() -> None:
    text = '{"keys": ["' + BIG + '"],\n"version": ' + BIG + "}"
    error = refused_text(text)
    assert (error.line, error.column) == (2, 12)


def test_a_negative_out_of_range_integer_counts_its_digits_without_the_sign() -> None:
    error = refused_text('{"let": {"k": -' + BIG + "}}")
    assert error.message == OUT_OF_RANGE
    assert (error.line, error.column) == (1, 15)


# --- a quoted key is kept short ------------------------------------------------------------------


def _unknown_name_message(key: str) -> str:
    result = make_policy([key], attributes=["a"])
    assert isinstance(result, Failure)
    message: str = result.failure().message
    return message


def test_a_long_key_is_quoted_cut_to_200_characters() -> None:
    key = "a + " * 100 + "zz"  # 402 characters, reading the undeclared name zz
    message = _unknown_name_message(key)
    prefix = "unknown name 'zz': not a declared attribute, constant or context variable"
    assert message == f"{prefix} (in key `{key[:200]}... (402 characters)`)"


def test_a_key_of_200_characters_is_quoted_whole() -> None:
    key = "a + " * 49 + "zzzz"  # exactly 200 characters
    assert len(key) == 200
    message = _unknown_name_message(key)
    assert message.endswith(f" (in key `{key}`)")
    longer = key + "z"
    assert _unknown_name_message(longer).endswith(f" (in key `{key}... (201 characters)`)")


# --- ready-made policies: the messages name the argument and the value ----------------------------


def test_static_priority_messages() -> None:
    with pytest.raises(TypeError) as wrong_type:
        static_priority(3)  # type: ignore[arg-type]
    assert str(wrong_type.value) == "attribute must be a name (text), not 3"
    with pytest.raises(ValueError, match=r"^attribute must be a name that is not a reserved word"):
        static_priority("waited")
    expected = (
        "attribute must be a name (ASCII letters, digits and _, not starting with a digit),"
        " not '2x'"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        static_priority("2x")


def test_ascend_lanes_refuses_a_negative_max_wait_showing_it() -> None:
    expected = "max_wait must be at least 0 (0 disables aging), not -1"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        ascend_fcfs_lanes(max_wait=-1)
    assert ascend_fcfs_lanes(max_wait=0).constants["max_wait"] == 0.0


def test_a_tree_key_nested_too_deeply_is_refused_with_the_depth_message() -> None:
    tree: Expr = Attr("a")
    for _ in range(MAX_DEPTH):
        tree = Unary("-", tree)  # the operand of a prefix operator is one level deeper
    result = make_policy([Num(1), tree], attributes=["a"])
    assert isinstance(result, Failure)
    assert result.failure() == PolicyError(
        "keys[1]",
        "expression nested deeper than 50 levels of parentheses, prefix operators,"
        " '?' branches or min/max arguments",
    )


@pytest.mark.parametrize(
    ("op", "count", "expected"),
    [
        ("max", 0, "keys[0].args: wrong number of arguments (0) for 'max'"),
        ("min", 0, "keys[0].args: wrong number of arguments (0) for 'min'"),
        ("!", 2, "keys[0].args: wrong number of arguments (2) for '!'"),
        ("?:", 2, "keys[0].args: wrong number of arguments (2) for '?:'"),
        ("-", 3, "keys[0].args: wrong number of arguments (3) for '-'"),
        ("+", 1, "keys[0].args: wrong number of arguments (1) for '+'"),
        ("avg", 1, "keys[0].op: unknown operator 'avg'"),
    ],
)
def test_a_known_operator_with_the_wrong_arity_is_not_an_unknown_operator(
    op: str, count: int, expected: str
) -> None:
    result = load_policy({"keys": [{"op": op, "args": [{"num": 1}] * count}]})
    assert isinstance(result, Failure)
    assert str(result.failure()) == expected


SHAPE = "a node is one of num, bool, attr, const, var, budget_left alone, or op with args"


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        (
            {"op": "+", "args": [{"num": 1}, {"num": 2}], "extra": 1},
            f"keys[0].extra: unknown field: {SHAPE}",
        ),
        ({"args": [{"num": 1}]}, f"keys[0]: fields ['args'] do not fit: {SHAPE}"),
        (
            {"op": "-", "args": [3]},
            "keys[0].args[0]: an expression tree node must be a JSON object",
        ),
        ({"const": 3}, "keys[0].const: 3 cannot name a constant"),
        ({"attr": "now"}, "keys[0].attr: 'now' cannot name an attribute"),
        ({"budget_left": ""}, "keys[0].budget_left: '' cannot name a stage"),
    ],
)
def test_a_bad_tree_node_is_refused_at_its_path(node: object, expected: str) -> None:
    result = load_policy({"keys": [node]})
    assert isinstance(result, Failure)
    assert str(result.failure()) == expected


def test_a_subtree_shared_twice_is_not_a_tree_that_contains_itself() -> None:
    shared = {"op": "-", "args": [{"attr": "a"}]}
    result = load_policy(
        {"attributes": {"a": "visible"}, "keys": [{"op": "+", "args": [shared, shared]}]}
    )
    assert result.unwrap().keys == (Binary("+", Unary("-", Attr("a")), Unary("-", Attr("a"))),)


def test_declarations_that_are_not_mappings_are_refused_by_field() -> None:
    bad_attributes = make_policy(["1"], attributes=3)  # type: ignore[arg-type]
    assert isinstance(bad_attributes, Failure)
    assert bad_attributes.failure() == PolicyError(
        "attributes", "must map names to visibility, or list the visible names, not 3"
    )
    bad_constants = make_policy(["1"], constants=[1])  # type: ignore[arg-type]
    assert isinstance(bad_constants, Failure)
    assert bad_constants.failure() == PolicyError("let", "must map names to numbers, not [1]")


def test_a_fifo_policy_keeps_its_constants_attributes_and_timing() -> None:
    policy = make_policy(None, constants={"k": 1}, attributes=["a"], timing="enqueue").unwrap()
    assert policy.is_fifo
    assert policy.constants == {"k": 1.0}
    assert policy.attributes == {"a": "visible"}
    assert policy.timing == "enqueue"
    loaded = load_policy({"let": {"k": 2}, "timing": "enqueue"}).unwrap()
    assert loaded.is_fifo
    assert loaded.constants == {"k": 2.0}
    assert loaded.timing == "enqueue"
