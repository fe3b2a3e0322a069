"""The JSON document of a queue policy: every validation rule, and round trips."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from returns.result import Success

from oracle.strategies import ATTRIBUTES, CONSTANTS, finite_numbers, huge_integers, trees
from policy.waiting import (
    FORMAT,
    VERSION,
    Attr,
    Binary,
    Bool,
    Call,
    Const,
    Expr,
    Num,
    PolicyError,
    QueuePolicy,
    Timing,
    Var,
    Visibility,
    ascend_fcfs_lanes,
    dump_policy,
    dump_policy_text,
    expr_from_json,
    expr_to_json,
    fifo,
    load_policy,
    load_policy_text,
    make_policy,
    static_priority,
    unparse,
)
from policy.waiting.expr import walk

AGING_KEY = (
    "immediate ? 0 : prompt > short_tokens && waited >= 3 ? 1 : prompt <= short_tokens ? 2 : 3"
)


def harness_policy(**changes: Any) -> dict[str, Any]:
    """The policy object of harness.md's aging-regression scenario, with changes."""
    doc: dict[str, Any] = {
        "let": {"short_tokens": 128},
        "attributes": {"prompt": "visible", "immediate": "visible", "out": "hidden"},
        "keys": [AGING_KEY],
        "timing": "selection",
    }
    doc.update(changes)
    return doc


def refusal(doc: object) -> PolicyError:
    return load_policy(doc).failure()


def test_the_harness_policy_loads_without_format_and_version() -> None:
    policy = load_policy(harness_policy()).unwrap()
    assert policy.constants == {"short_tokens": 128.0}
    assert policy.timing == "selection"
    assert unparse(policy.keys[0]) == AGING_KEY
    assert policy.attributes_read == {"immediate", "prompt"}


def test_format_and_version_when_given_must_be_these() -> None:
    assert isinstance(load_policy(harness_policy(format=FORMAT, version=VERSION)), Success)
    assert str(refusal(harness_policy(version=2))) == (
        "version: this library reads queue-policy version 1, not 2"
    )
    assert str(refusal(harness_policy(version="1"))) == "version: must be an integer, not '1'"
    assert str(refusal(harness_policy(version=True))) == "version: must be an integer, not True"
    assert str(refusal(harness_policy(format="other/thing"))) == (
        "format: must be 'serving-policy-kernel/queue-policy', not 'other/thing'"
    )


def test_a_wrong_version_is_reported_before_anything_else() -> None:
    assert refusal(harness_policy(version=9, keys=[])).path == "version"
    assert refusal({"version": 2, "x": 1, "format": "other"}).path == "version"


def test_keys_left_out_is_fifo_and_an_empty_list_is_refused() -> None:
    assert load_policy({}).unwrap() == fifo()
    assert load_policy({"timing": "enqueue"}).unwrap().is_fifo
    error = refusal(harness_policy(keys=[]))
    assert str(error) == (
        'keys: a queue policy needs at least one key (for FIFO, leave "keys" out: no keys at all)'
    )
    assert str(refusal(harness_policy(keys=None))) == (
        "keys: must be a list of keys (text or trees); leave it out for FIFO"
    )
    assert str(make_policy([]).failure()) == str(error)


def test_unknown_name_names_the_key_and_the_name() -> None:
    error = refusal(harness_policy(keys=["serial", "prompt + prmpt"]))
    assert str(error) == (
        "keys[1]: unknown name 'prmpt': not a declared attribute, constant or context variable"
        " (in key `prompt + prmpt`)"
    )


def test_hidden_attribute_is_refused() -> None:
    error = refusal(harness_policy(keys=["prompt + out"]))
    assert str(error) == (
        "keys[0]: attribute 'out' is hidden: keys may not read it"
        " (store a prediction in a visible attribute instead) (in key `prompt + out`)"
    )


def test_waited_and_budget_left_are_refused_under_enqueue_timing() -> None:
    waited = refusal(harness_policy(timing="enqueue"))
    assert waited.path == "keys[0]"
    assert "'waited' cannot be read when keys are computed at enqueue" in waited.message
    assert AGING_KEY in waited.message
    budget = refusal(harness_policy(timing="enqueue", keys=["now", "-budget_left(engine)"]))
    assert str(budget) == (
        "keys[1]: 'budget_left(engine)' cannot be read when keys are computed at enqueue"
        " (in key `-budget_left(engine)`)"
    )
    # the same keys are fine under selection timing
    assert isinstance(load_policy(harness_policy(keys=["now", "-budget_left(engine)"])), Success)


def test_malformed_text_points_into_the_key() -> None:
    error = refusal(harness_policy(keys=["serial", "prompt >\n  > 3"]))
    assert (error.path, error.line, error.column) == ("keys[1]", 2, 3)
    assert str(error) == (
        "keys[1]: line 2, column 3: expected an operand (number, name or '('), found '>'"
    )


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ([], "a queue policy must be a JSON object"),
        (harness_policy(fifo=True), "fifo: unknown field (expected one of format, version, let,"),
        (harness_policy(let=[1]), "let: must be a JSON object"),
        (harness_policy(let={"short_tokens": "128"}), "let.short_tokens: must be a finite number"),
        (harness_policy(let={"short_tokens": True}), "let.short_tokens: must be a finite number"),
        (harness_policy(let={"waited": 1}), "let.waited: 'waited' cannot name a constant"),
        (harness_policy(attributes=None), "attributes: must be a JSON object"),
        (
            harness_policy(attributes={"prompt": "shown"}),
            'attributes.prompt: must be "visible" or "hidden", not \'shown\'',
        ),
        (
            harness_policy(attributes={"now": "visible"}),
            "attributes.now: 'now' cannot name an attribute",
        ),
        (
            harness_policy(attributes={"short_tokens": "visible"}),
            "attributes.short_tokens: 'short_tokens' is declared both as an attribute"
            " and a constant",
        ),
        (harness_policy(timing="later"), 'timing: must be "selection" or "enqueue", not \'later\''),
        (harness_policy(keys=["serial", 3]), "keys[1]: a key must be expression text or a JSON"),
        (harness_policy(keys=[{"num": "3"}]), "keys[0].num: must be a finite number, not '3'"),
        (harness_policy(keys=[{"num": True}]), "keys[0].num: must be a finite number, not True"),
        (harness_policy(keys=[{"bool": 1}]), "keys[0].bool: must be true or false, not 1"),
        (harness_policy(keys=[{"var": "then"}]), 'keys[0].var: must be "serial", "now" or'),
        (harness_policy(keys=[{"attr": "min"}]), "keys[0].attr: 'min' cannot name an attribute"),
        (harness_policy(keys=[{"budget_left": 3}]), "keys[0].budget_left: 3 cannot name a stage"),
        (harness_policy(keys=[{"nums": 3}]), "keys[0].nums: unknown field: a node is one of num,"),
        (harness_policy(keys=[{"num": 3, "attr": "a"}]), "keys[0]: fields ['attr', 'num'] do not"),
        (harness_policy(keys=[{"op": "+"}]), "keys[0]: fields ['op'] do not fit"),
        (
            harness_policy(keys=[{"op": "+", "args": [{"num": 1}, {"attr": 5}]}]),
            "keys[0].args[1].attr: 5 cannot name an attribute",
        ),
        (
            harness_policy(keys=[{"op": "^", "args": [{"num": 1}, {"num": 2}]}]),
            "keys[0].op: unknown operator '^'",
        ),
        (harness_policy(keys=[{"op": 1, "args": []}]), "keys[0].op: must be an operator name"),
        (harness_policy(keys=[{"op": "min", "args": {}}]), "keys[0].args: must be a list"),
        (
            harness_policy(keys=[{"op": "min", "args": []}]),
            "keys[0].args: wrong number of arguments (0) for 'min'",
        ),
        (
            harness_policy(keys=[{"op": "?:", "args": [{"num": 1}, {"num": 2}]}]),
            "keys[0].args: wrong number of arguments (2) for '?:'",
        ),
        (
            harness_policy(keys=[{"op": "!", "args": [{"num": 1}, {"num": 2}]}]),
            "keys[0].args: wrong number of arguments (2) for '!'",
        ),
        (
            harness_policy(keys=[{"const": "max_wait"}]),
            "keys[0]: unknown constant 'max_wait': not declared with let",
        ),
        (
            harness_policy(keys=[{"attr": "short_tokens"}]),
            "keys[0]: 'short_tokens' is a policy constant (let), not an attribute:"
            ' read it with {"const": "short_tokens"}',
        ),
    ],
)
def test_each_rule_has_its_own_message(doc: object, expected: str) -> None:
    assert str(refusal(doc)).startswith(expected)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (
            {"attr": "short_tokens"},
            "keys[0]: 'short_tokens' is a policy constant (let), not an attribute:"
            ' read it with {"const": "short_tokens"}',
        ),
        (
            {"op": "+", "args": [{"attr": "prompt"}, {"const": "prompt"}]},
            "keys[0]: 'prompt' is an attribute, not a policy constant (let):"
            ' read it with {"attr": "prompt"}',
        ),
        (
            {"op": "-", "args": [{"const": "max_wait"}]},
            "keys[0]: unknown constant 'max_wait': not declared with let",
        ),
    ],
)
def test_a_tree_confusing_constants_and_attributes_is_told_which_is_which(
    key: object, expected: str
) -> None:
    # As text, `short_tokens` would be the constant and `max_wait` an attribute: the key
    # is not quoted as text, since that text would mean something else.
    assert str(refusal(harness_policy(keys=[key]))) == expected


def test_json_text() -> None:
    # Read by the one JSON reader (policy.json_text): path, line and column.
    error = load_policy_text('{"keys": [1,]}').failure()
    assert str(error) == "keys[1]: line 1, column 13: expected a value, found ']'"
    assert "nested deeper than 256" in str(load_policy_text("[" * 100_000).failure())
    assert str(load_policy_text('{"let": {"k": 1e999}}').failure()).startswith(
        "let.k: line 1, column 15: number out of range"
    )
    assert load_policy_text(dump_policy_text(ascend_fcfs_lanes())).unwrap() == ascend_fcfs_lanes()


def test_keys_as_trees_and_as_text_load_to_the_same_policy() -> None:
    as_text = load_policy(harness_policy()).unwrap()
    as_tree = load_policy(harness_policy(keys=[expr_to_json(as_text.keys[0])])).unwrap()
    assert as_tree == as_text


@pytest.mark.parametrize(
    "policy",
    [
        fifo(),
        static_priority(),
        static_priority("rank"),
        ascend_fcfs_lanes(),
        ascend_fcfs_lanes(short_tokens=64, max_wait=0),
        ascend_fcfs_lanes(max_wait=3),
    ],
)
def test_each_ready_made_policy_survives_a_json_round_trip(policy: QueuePolicy) -> None:
    doc = dump_policy(policy)
    assert (doc["format"], doc["version"]) == (FORMAT, VERSION)
    again = load_policy(json.loads(json.dumps(doc))).unwrap()
    assert again == policy
    assert dump_policy(again) == doc


def test_ready_made_policies() -> None:
    lanes = ascend_fcfs_lanes()
    assert [unparse(key) for key in lanes.keys] == [
        "immediate ? 0 : prompt > short_tokens && max_wait > 0 && waited >= max_wait ? 1"
        " : prompt <= short_tokens ? 2 : 3"
    ]
    assert lanes.constants == {"short_tokens": 128.0, "max_wait": 0.003}
    assert dict(lanes.attributes) == {"immediate": "visible", "prompt": "visible"}
    assert lanes.timing == "selection"
    priority = static_priority()
    assert priority.keys == (Attr("priority"),)
    assert priority.timing == "enqueue"


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: ascend_fcfs_lanes(short_tokens=True), TypeError, "short_tokens must be a number"),
        (
            lambda: ascend_fcfs_lanes(short_tokens="128"),  # type: ignore[arg-type]
            TypeError,
            "short_tokens must be a number",
        ),
        (
            lambda: ascend_fcfs_lanes(short_tokens=10**400),
            ValueError,
            "short_tokens must be a finite number, not a 401-digit integer",
        ),
        (lambda: ascend_fcfs_lanes(max_wait=math.nan), ValueError, "max_wait must be a finite"),
        (lambda: ascend_fcfs_lanes(max_wait=-math.inf), ValueError, "max_wait must be a finite"),
        (lambda: ascend_fcfs_lanes(max_wait=-1), ValueError, "max_wait must be at least 0"),
        (lambda: ascend_fcfs_lanes(max_wait=False), TypeError, "max_wait must be a number"),
        (lambda: static_priority("now"), ValueError, "attribute must be a name that is not a"),
        (lambda: static_priority("2x"), ValueError, "attribute must be a name"),
        (
            lambda: static_priority(3),  # type: ignore[arg-type]
            TypeError,
            "attribute must be a name",
        ),
    ],
)
def test_ready_made_policies_refuse_bad_arguments_by_name(
    make: Callable[[], QueuePolicy], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        make()
    assert type(raised.value) is error  # not UnwrapFailedError, not OverflowError
    assert str(raised.value).startswith(message)


@st.composite
def policies(draw: st.DrawFn) -> QueuePolicy:
    timing: Timing = draw(st.sampled_from(["selection", "enqueue"]))
    keys = draw(st.none() | st.lists(trees, min_size=1, max_size=3))
    read = {n.name for key in keys or [] for n in _nodes(key) if isinstance(n, Attr)}
    used_constants = {n.name for key in keys or [] for n in _nodes(key) if isinstance(n, Const)}
    constants = {
        name: draw(finite_numbers)
        for name in CONSTANTS
        if name in used_constants or draw(st.booleans())
    }
    visible: Visibility = "visible"
    hidden: Visibility = "hidden"
    attributes = dict.fromkeys(read, visible) | {
        name: hidden for name in ATTRIBUTES if name not in read and draw(st.booleans())
    }
    made = make_policy(keys, constants=constants, attributes=attributes, timing=timing)
    assume(isinstance(made, Success))  # e.g. enqueue timing with waited
    return made.unwrap()


def _nodes(key: Expr) -> list[Expr]:
    return list(walk(key))


@given(policies())
def test_policy_to_json_to_policy_is_the_identity(policy: QueuePolicy) -> None:
    text = json.dumps(dump_policy(policy))
    again = load_policy_text(text).unwrap()
    assert again == policy
    assert json.dumps(dump_policy(again)) == text  # also tells -0.0 constants from 0.0


@given(trees)
def test_tree_json_round_trip(tree: Expr) -> None:
    assert expr_from_json(json.loads(json.dumps(expr_to_json(tree)))) == Success(tree)


def test_make_policy_refuses_an_undeclared_name_when_the_policy_is_built() -> None:
    for attributes in (None, ["prompt"], {"prompt": "visible"}):
        error = make_policy(["prmpt + 1"], attributes=attributes).failure()
        assert str(error) == (
            "keys[0]: unknown name 'prmpt': not a declared attribute, constant or context"
            " variable (in key `prmpt + 1`)"
        )
    tree = make_policy([Binary("+", Attr("a"), Num(1)), "serial"]).failure()
    assert str(tree).startswith("keys[0]: unknown name 'a'")


def test_make_policy_declares_attributes_by_map_or_by_list_of_visible_names() -> None:
    listed = make_policy([Binary("+", Attr("a"), Num(1)), "serial"], attributes=["a", "b"])
    assert dict(listed.unwrap().attributes) == {"a": "visible", "b": "visible"}
    assert listed.unwrap().keys[1] == Var("serial")
    mapped = make_policy(["a"], attributes={"a": "visible", "out": "hidden"}).unwrap()
    assert dict(mapped.attributes) == {"a": "visible", "out": "hidden"}
    assert str(make_policy(["a"], attributes="a").failure()).startswith(
        "attributes: must map names to visibility, or list the visible names"
    )
    assert str(make_policy(["a"], attributes=["a", "now"]).failure()) == (
        "attributes.now: 'now' cannot name an attribute"
    )


@pytest.mark.parametrize("key", [3, None, 2.5, b"prompt", ["prompt"], {"attr": "prompt"}])
def test_make_policy_refuses_a_key_that_is_neither_text_nor_a_tree(key: object) -> None:
    made = make_policy(["prompt", key], attributes=["prompt"])  # type: ignore[list-item]
    error = made.failure()
    assert error.path == "keys[1]"
    assert error.message.startswith("a key must be expression text or a tree (Expr), not ")


def test_make_policy_wants_a_list_of_keys() -> None:
    assert str(make_policy("prompt", attributes=["prompt"]).failure()) == (
        "keys: must be a list of keys (text or trees), not 'prompt'"
    )
    assert str(make_policy(3, attributes=["prompt"]).failure()).startswith(  # type: ignore[arg-type]
        "keys: must be a list of keys"
    )


def test_a_tree_node_refuses_a_child_that_is_not_a_node() -> None:
    with pytest.raises(TypeError, match="needs expression nodes, not 3"):
        Binary("+", 3, Num(1))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="needs expression nodes, not None"):
        Call("min", (Num(1), None))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="True or False"):
        Bool(1)  # type: ignore[arg-type]


_WORDS = st.sampled_from(
    [
        "keys",
        "let",
        "attributes",
        "timing",
        "version",
        "format",
        "op",
        "args",
        "num",
        "attr",
        "var",
        "const",
        "bool",
        "budget_left",
        "prompt",
        "visible",
        "hidden",
        "enqueue",
        "+",
        "?:",
        "min",
        "waited",
        "short_tokens",
    ]
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | huge_integers
    | st.floats()
    | st.text(max_size=5)
    | _WORDS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(_WORDS | huge_integers, inner, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_any_json_value_loads_or_gives_a_policy_error(doc: object) -> None:
    result = load_policy(doc)
    if isinstance(result, Success):
        assert load_policy(dump_policy(result.unwrap())) == result
    else:
        assert isinstance(result.failure(), PolicyError)
        assert str(result.failure())


@pytest.mark.parametrize("node", [{"var": []}, {"num": 10**400}, {"op": ["+"], "args": []}])
def test_odd_tree_values_are_refused_not_crashed(node: object) -> None:
    assert isinstance(expr_from_json(node).failure(), PolicyError)


def test_a_long_chain_loads_and_dumps_as_text_and_as_a_tree() -> None:
    text = " + ".join(["prompt"] * 2000)
    policy = load_policy({"attributes": {"prompt": "visible"}, "keys": [text]}).unwrap()
    assert dump_policy(policy)["keys"] == [text]
    assert load_policy_text(dump_policy_text(policy)).unwrap() == policy
    as_tree = {"attributes": {"prompt": "visible"}, "keys": [expr_to_json(policy.keys[0])]}
    assert load_policy(as_tree).unwrap() == policy  # a Python dict: no JSON reader limit


def test_a_tree_nested_too_deeply_is_refused_at_the_node_that_crosses_the_limit() -> None:
    tree: dict[str, Any] = {"attr": "prompt"}
    for _ in range(60):
        tree = {"op": "-", "args": [tree]}
    error = refusal(harness_policy(keys=[tree]))
    assert error.message.startswith("expression nested deeper than 50 levels")
    # the root is level 1, each prefix operator one deeper: level 51 is the 51st node
    assert error.path == "keys[0]" + ".args[0]" * 50


def test_a_tree_that_contains_itself_is_refused() -> None:
    node: dict[str, Any] = {"op": "+", "args": [{"num": 1}]}
    node["args"].append(node)
    assert str(expr_from_json(node).failure()) == (
        "args[1]: an expression tree cannot contain itself"
    )
