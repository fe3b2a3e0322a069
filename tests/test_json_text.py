"""The one JSON reader (policy/json_text.py) against the standard library's, which
it must agree with on every document both accept, and its own refusals."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

import policy.json_text
from policy.json_text import MAX_NESTING, read_json
from policy.waiting import (
    PolicyError,
    load_policy_text,
)

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
JSON_VALUES: st.SearchStrategy[Any] = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(JSON_VALUES, st.sampled_from([None, 0, 2]), st.booleans())
def test_reads_what_the_standard_library_writes(
    value: object, indent: int | None, ascii_only: bool
) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    assert read_json(text) == Success(json.loads(text))


def _strict(name: str) -> object:
    raise ValueError(name)


def _unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
    if len({key for key, _ in pairs}) != len(pairs):
        raise ValueError("duplicate key")
    return dict(pairs)


@given(st.text(alphabet='{}[]",:0123456789.eE-+ \n\\tuaflsrnNI', max_size=24))
def test_accepts_exactly_the_strict_standard_reading(text: str) -> None:
    """Arbitrary text: read_json accepts it exactly when the standard reader does with
    NaN, Infinity and duplicate keys refused and every number finite, and agrees."""
    try:
        expected: object = json.loads(text, parse_constant=_strict, object_pairs_hook=_unique)
        standard_ok = all(
            not isinstance(number, float) or math.isfinite(number) for number in _numbers(expected)
        )
    except (ValueError, RecursionError):
        standard_ok = False
    result = read_json(text)
    if standard_ok:
        assert result == Success(expected)
    else:
        assert isinstance(result, Failure)
        assert str(result.failure()).isprintable()


def _numbers(value: object) -> list[object]:
    if isinstance(value, dict):
        return [n for item in value.values() for n in _numbers(item)]
    if isinstance(value, list):
        return [n for item in value for n in _numbers(item)]
    return [value]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1, "a": 2}', 'a: line 1, column 10: duplicate key "a"'),
        ('{"a": [NaN]}', "a[0]: line 1, column 8: NaN is not JSON"),
        ('{"a": -Infinity}', "a: line 1, column 7: -Infinity is not JSON"),
        ("1e400", "line 1, column 1: number out of range"),
        ("[" + "9" * 5000 + "]", "[0]: line 1, column 2: number out of range (5000 characters)"),
        ('{"k\\n": {"x": nul}}', '["k\\n"].x: line 1, column 15: expected a value'),
        ("[" * (MAX_NESTING + 1), f"nested deeper than {MAX_NESTING}"),
        ('"abc', "line 1, column 1: unterminated string"),
    ],
)
def test_each_refusal_names_its_place(text: str, message: str) -> None:
    refused = str(read_json(text).failure())
    assert message in refused, refused
    assert refused.isprintable()


def test_a_path_is_built_only_for_a_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A path kept per container would cost its length for each container below it:
    a 1 MB key above 350,000 small objects took 81 s to read (3.8 MB, under the cap)."""
    calls: list[str] = []

    def counted(parent: str, key: str) -> str:
        calls.append(key)
        return f"{parent}.{key}"

    monkeypatch.setattr(policy.json_text, "member_path", counted)
    text = '{"' + "k" * 10_000 + '": [' + ",".join(['{"a": 0}'] * 1_000) + "]}"
    assert isinstance(read_json(text), Success)
    assert calls == []
    assert isinstance(read_json(text[:-2] + ",}"), Failure)
    assert len(calls) <= 2


def test_text_only() -> None:
    with pytest.raises(TypeError, match="bytes"):
        read_json(b"{}")  # type: ignore[arg-type]


# --- found by hardening (issue 9)


def test_a_duplicate_key_in_policy_text_is_refused_like_the_reader_refuses_it() -> None:
    text = '{"let": {"k": 1, "k": 2}, "keys": ["k"]}'
    json_error = read_json(text).failure()
    error = load_policy_text(text).failure()
    assert error == PolicyError(json_error.path, json_error.message, json_error.line, 18)
    assert str(error).startswith('let.k: line 1, column 18: duplicate key "k"')


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('{"keys": [NaN]}', "keys[0]"),
        ('{"let": {"k": -Infinity}}', "let.k"),
        ('{"version": 1' + "0" * 5000 + "}", "version"),
        ('{"keys": [{"num": 1e999}]}', "keys[0].num"),
    ],
)
def test_every_json_refusal_names_its_path_line_and_column(text: str, path: str) -> None:
    error = load_policy_text(text).failure()
    assert error.path == path
    assert error.line == 1
    assert error.column is not None
    assert error.column > 1
