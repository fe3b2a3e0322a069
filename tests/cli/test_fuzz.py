"""Any input replays (exit 0 or 1) or is refused: exit 2, one printable stderr line; no other error.

The conformance wire reader (``oracle.conformance.wire.read_line``, every line the
kit reads from a foreign process) is fuzzed the same way: any line is either the
JSON object it holds or a ``WireError`` of one printable, short line, within the
time limit; never another exception (no RecursionError, no OverflowError).

"Any other error" is an exception out of ``main``, a replay that does not end
within :data:`TIME_LIMIT` seconds, an ``internal error`` report (the isolation
of one scenario caught a bug), a word on stderr from a file that replayed,
text output that is not printable, or ``--json`` output that is not strict
JSON. Inputs: (a) JSON values of every shape, and golden scenarios with one to
three of their fields changed (mostly to a value of the same type, so many
inputs get past the first checks and reach the engines), replaced, deleted or
added, written as JSON text; (b) raw bytes, and golden files with bytes changed.

In the suite the examples are few, for a bounded run (under ~20 s); a longer
run explores many more, from fresh seeds:

    HYPOTHESIS_PROFILE=fuzz .venv/bin/python -m pytest tests/cli/test_fuzz.py
"""

from __future__ import annotations

import copy
import io
import json
import math
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import oracle.cli
import oracle.harness.replay_files
import oracle.harness.scenarios
from oracle.cli import main
from oracle.conformance.wire import MAX_DEPTH, WireError, read_line
from oracle.harness.scenarios import golden_paths

#: Seconds one replay may take: a replay that runs longer is a failure, not a hang.
TIME_LIMIT = 5.0

_FUZZING = os.environ.get("HYPOTHESIS_PROFILE") == "fuzz"


def _examples(in_suite: int) -> settings:
    """``in_suite`` examples, or the fuzz profile's own count for a long run."""
    return settings(
        max_examples=settings().max_examples if _FUZZING else in_suite,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


class _TooSlow(BaseException):
    """Raised by the alarm: a BaseException, so the CLI's isolation of one
    scenario (which catches Exception) cannot turn a hang into a report."""


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    def expired(_signum: int, _frame: FrameType | None) -> None:
        raise _TooSlow(f"the replay took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _strict_constant(name: str) -> object:
    raise AssertionError(f"--json wrote {name}, which is not JSON")


def check_invariant(path: Path, data: bytes, as_json: bool) -> int:
    """The invariant of this module, for ``data`` written to ``path``; the exit status."""
    path.write_bytes(data)
    out, err = io.StringIO(), io.StringIO()
    argv = ["replay", str(path), *(["--json"] if as_json else [])]
    with _time_limit(TIME_LIMIT):
        status = main(argv, out=out, err=err)
    errors = err.getvalue()
    if status in (0, 1):
        assert errors == "", errors
    else:
        assert status == 2, status
        assert errors.count("\n") == 1, errors
        assert errors.endswith("\n"), errors
        assert errors[:-1].isprintable(), errors
        assert errors.startswith(f"policy-kernel: {path}: "), errors
        assert "internal error" not in errors, errors
    lines = out.getvalue().splitlines()
    if as_json:
        for line in lines:
            json.loads(line, parse_constant=_strict_constant)
        assert len(lines) == (0 if status == 2 else 1), lines
    else:
        assert all(line.isprintable() for line in lines), lines
        assert lines[-1].startswith("replay: "), lines
    return status


def replayed(status: int) -> None:
    """Count the exit status (``--hypothesis-show-statistics``: how many inputs got
    past the checks)."""
    event(f"exit {status}")


@pytest.fixture(scope="module")
def fuzz_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the module: each example overwrites its test's one file."""
    return tmp_path_factory.mktemp("fuzz")


# ----------------------------------------------------------------- JSON values

# Values that sit on the edges the loaders check: signs, zero, magnitudes beyond
# what engines carry, the float range, text that breaks lines or encodings.
_EDGES = st.sampled_from(
    [
        0,
        -1,
        1,
        2,
        3,
        10**6,
        10**12,
        2**53 + 1,
        2**63,
        10**308,
        10**400,
        -(10**400),
        0.5,
        -0.0,
        1e-300,
        1e308,
        -1e308,
        float("nan"),
        float("inf"),
        "",
        " ",
        "A",
        "normal",
        "high",
        "low",
        "never",
        "always",
        "waiting",
        "a\nb",
        "\x1b[2J",
        "\ud800",
        "\u2028",
        "policy-kernel: forged",
        True,
        False,
        None,
    ]
)
_SCALARS = _EDGES | st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
JSON_VALUES = st.recursive(
    _SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)

GOLDEN: list[Any] = [json.loads(path.read_text(encoding="utf-8")) for path in golden_paths()]
GOLDEN_BYTES = [path.read_bytes() for path in golden_paths()]

Location = tuple[str | int, ...]


def _locations(value: object, at: Location = ()) -> Iterator[Location]:
    yield at
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _locations(child, (*at, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _locations(child, (*at, index))


def _container(doc: Any, at: Location) -> Any:
    for step in at:
        doc = doc[step]
    return doc


def _like(value: object) -> st.SearchStrategy[Any]:
    """Values of the same JSON type as ``value`` (so the loader's type check passes
    and the engines see the value), edges included."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return (
            st.integers(-3, 2 * abs(value) + 3)
            | st.integers()
            | _EDGES.filter(lambda edge: isinstance(edge, int))
        )
    if isinstance(value, float):  # an earlier change may have made it NaN or infinite
        near = st.floats(0, 2 * abs(value) + 3) if math.isfinite(value) else st.nothing()
        return st.floats() | near
    if isinstance(value, str):
        return st.text(max_size=12) | _EDGES.filter(lambda edge: isinstance(edge, str))
    if isinstance(value, list) and value:
        return st.lists(st.sampled_from(value), max_size=len(value) + 2)
    return JSON_VALUES


@st.composite
def mutated_goldens(draw: st.DrawFn) -> object:
    """A golden scenario with one to three fields changed (a value of the same
    type, mostly), replaced by any JSON value, deleted or added."""
    doc: Any = copy.deepcopy(draw(st.sampled_from(GOLDEN)))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.sampled_from(list(_locations(doc))))
        operation = draw(st.sampled_from(["nudge", "nudge", "nudge", "replace", "delete", "add"]))
        if not at:
            if operation == "replace":
                doc = draw(JSON_VALUES)
            continue
        parent = _container(doc, at[:-1])
        last = at[-1]
        if operation == "nudge":
            parent[last] = draw(_like(parent[last]))
        elif operation == "replace":
            parent[last] = draw(JSON_VALUES)
        elif operation == "delete":
            del parent[last]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=8))] = draw(JSON_VALUES)
        elif isinstance(parent, list):
            parent.insert(int(last), draw(JSON_VALUES))
    return doc


def _as_text(doc: object, ascii_only: bool) -> bytes:
    # NaN and Infinity tokens, non-ASCII text, and lone surrogates as raw (invalid
    # UTF-8) bytes: each is something the reader must refuse or read.
    return json.dumps(doc, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


@given(doc=JSON_VALUES, ascii_only=st.booleans(), as_json=st.booleans())
@_examples(200)
def test_any_json_value(fuzz_folder: Path, doc: object, ascii_only: bool, as_json: bool) -> None:
    path = fuzz_folder / "value.json"
    replayed(check_invariant(path, _as_text(doc, ascii_only), as_json))


@given(doc=mutated_goldens(), ascii_only=st.booleans(), as_json=st.booleans())
@_examples(600)
def test_golden_scenarios_with_fields_changed(
    fuzz_folder: Path, doc: object, ascii_only: bool, as_json: bool
) -> None:
    path = fuzz_folder / "golden.json"
    replayed(check_invariant(path, _as_text(doc, ascii_only), as_json))


# ------------------------------------------------------------------ raw bytes


@st.composite
def damaged_goldens(draw: st.DrawFn) -> bytes:
    """A golden file with a few bytes overwritten, inserted or cut off."""
    data = bytearray(draw(st.sampled_from(GOLDEN_BYTES)))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        operation = draw(st.sampled_from(["set", "insert", "cut"]))
        if operation == "cut":
            del data[at:]
        elif operation == "insert" or at == len(data):
            data[at:at] = draw(st.binary(min_size=1, max_size=4))
        else:
            data[at] = draw(st.integers(0, 255))
    return bytes(data)


@given(data=st.binary(max_size=200) | damaged_goldens(), as_json=st.booleans())
@_examples(400)
def test_any_bytes(fuzz_folder: Path, data: bytes, as_json: bool) -> None:
    path = fuzz_folder / "bytes.json"
    replayed(check_invariant(path, data, as_json))


# ------------------------------------------------------ the conformance wire reader


def check_wire_line(line: bytes) -> str:
    """The wire reader's invariant for ``line``: a JSON object, or a WireError of one
    short printable line; the outcome, for the statistics."""
    with _time_limit(TIME_LIMIT):
        try:
            message = read_line(line)
        except WireError as error:
            said = str(error)
            assert said.isprintable(), said
            assert len(said) < 400, said
            return "refused"
    assert isinstance(message, dict), message
    return "read"


_HOSTILE_NUMBERS = st.sampled_from(
    [
        "1e400",
        "-1e999",
        "NaN",
        "Infinity",
        "-Infinity",
        "1" + "0" * 5000,
        "[" * 100_000,
        "[" * 65 + '"' + '\\"' * 50_000,  # an open string of escaped quotes (linear time)
    ]
)


@st.composite
def hostile_lines(draw: st.DrawFn) -> bytes:
    """An answer line as a hostile process writes one: a protocol message around any
    JSON value (non-finite numbers written as JSON has none), nested around it to
    any depth, with brackets in strings, cut short or with bytes changed."""
    value = draw(JSON_VALUES)
    depth = draw(st.integers(0, 3 * MAX_DEPTH) | st.integers(0, 20_000))
    opener = draw(st.sampled_from(["[", '{"a":', '["[",', '{"}":[']))
    closer = {"[": "]", '{"a":': "}", '["[",': "]", '{"}":[': "]}"}[opener]
    body = json.dumps(value, allow_nan=True, ensure_ascii=draw(st.booleans()))
    body = opener * depth + body + closer * depth
    identity = draw(st.sampled_from(["0", "1", "1.0", "true", "1e400", '"1"', "-0"]))
    text = draw(
        st.sampled_from(
            [
                f'{{"id": {identity}, "answer": {body}}}',
                f'{{"id": {identity}, "error": {body}}}',
                body,
                f'{{"id": {identity}, "answer": {draw(_HOSTILE_NUMBERS)}}}',
            ]
        )
    )
    line = text.encode("utf-8", "surrogatepass")
    cut = draw(st.integers(0, len(line)))
    return draw(st.sampled_from([line, line[:cut], line[:cut] + b"\xff" + line[cut:]]))


@given(line=hostile_lines() | st.binary(max_size=200))
@_examples(300)
def test_any_line_from_a_process(line: bytes) -> None:
    event(check_wire_line(line))


# ------------------------------------------------- the invariant can fail (shown once)

_A_GOLDEN = json.loads(GOLDEN_BYTES[0])


@pytest.mark.parametrize(
    ("breakage", "data"),
    [
        # A bug in one replay that the isolation reports: "internal error" is a failure.
        ("replay raises", json.dumps(_A_GOLDEN).encode()),
        # A refusal on two lines (a message not escaped).
        ("two-line refusal", b"{"),
        # A hang: the alarm turns it into a failure.
        ("replay hangs", json.dumps(_A_GOLDEN).encode()),
    ],
)
def test_the_invariant_fails_on_a_broken_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, breakage: str, data: bytes
) -> None:
    if breakage == "replay raises":

        def broken(*_: object) -> object:
            raise ZeroDivisionError("a kernel bug")

        monkeypatch.setattr(oracle.harness.replay_files, "replay_scenario", broken)
    elif breakage == "two-line refusal":
        monkeypatch.setattr(
            oracle.harness.scenarios.ScenarioError, "__str__", lambda _: "bad\npolicy-kernel: x"
        )
    else:

        def endless(*_: object) -> object:
            while True:
                pass

        monkeypatch.setattr(oracle.harness.replay_files, "replay_scenario", endless)
        monkeypatch.setitem(globals(), "TIME_LIMIT", 0.5)
    with pytest.raises((AssertionError, _TooSlow)):
        check_invariant(tmp_path / "case.json", data, as_json=False)
