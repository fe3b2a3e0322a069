"""The examples in docs/waiting.md are real."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from returns.result import Success

from policy.waiting import (
    ascend_fcfs_lanes,
    dump_policy,
    load_policy,
    load_policy_text,
    make_policy,
    parse_expression,
    static_priority,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "waiting.md"


def test_the_json_example_loads_and_round_trips() -> None:
    (example,) = re.findall(r"```json\n(.*?)```", DOC.read_text(), re.DOTALL)
    policy = load_policy_text(example).unwrap()
    assert policy.keys[0] == ascend_fcfs_lanes(max_wait=3).keys[0]
    assert load_policy_text(json.dumps(dump_policy(policy))).unwrap() == policy


def test_the_error_examples_are_what_the_parser_says() -> None:
    text = DOC.read_text()
    for source in ("1 +", "a ?\n  b", "a = b"):
        assert str(parse_expression(source).failure()) in text


def flat(text: str) -> str:
    return " ".join(text.split())


def test_the_messages_quoted_in_the_doc_are_what_the_library_says() -> None:
    text = flat(DOC.read_text())
    policy = {"let": {"short_tokens": 128}, "attributes": {"prompt": "visible"}}
    messages = [
        parse_expression("(" * 50 + "1" + ")" * 50).failure(),
        load_policy(policy | {"keys": [{"attr": "short_tokens"}]}).failure(),
        load_policy(policy | {"keys": [{"const": "prompt"}]}).failure(),
        load_policy(policy | {"keys": [{"const": "max_wait"}]}).failure(),
        load_policy({"let": {"k": 10**400}}).failure(),
        load_policy_text('{"version": 1' + "0" * 5000 + "}").failure(),
        make_policy([3]).failure(),  # type: ignore[list-item]
        make_policy(
            [" + ".join(["a"] * 5000), "-(" + " + ".join(["a"] * 5000) + ")", "1", "a"],
            attributes=["a"],
        ).failure(),
        make_policy(None, constants=dict.fromkeys([f"c{i}" for i in range(200_000)], 1)).failure(),
        make_policy(None, attributes=[f"a{i}" for i in range(1001)]).failure(),
    ]
    for message in messages:
        assert flat(str(message)) in text
    makers: list[Callable[[], object]] = [
        lambda: ascend_fcfs_lanes(short_tokens=True),
        lambda: static_priority("now"),
    ]
    for make in makers:
        with pytest.raises((TypeError, ValueError)) as raised:
            make()
        assert str(raised.value) in text


def test_the_python_examples_run() -> None:
    for block in re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL):
        for line in block.splitlines():
            assert isinstance(eval(line, {"make_policy": make_policy}), Success), line
