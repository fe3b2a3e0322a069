"""The examples in docs/waiting.md are real."""

from __future__ import annotations

import json
import re
from pathlib import Path

from policy.waiting import (
    ascend_fcfs_lanes,
    dump_policy,
    load_policy_text,
    parse_expression,
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
