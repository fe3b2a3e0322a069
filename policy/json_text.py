"""The one JSON reader: every refusal names its JSON path and its line and column.

Both JSON entry points (a queue-policy document, a scenario file) read text
through :func:`read_json`, so the same text is accepted or refused the same
way everywhere. Beyond RFC 8259 syntax it refuses, each at the place it occurs:

- a key given twice in one object (a silent "last one wins" hides typos);
- ``NaN``, ``Infinity`` and ``-Infinity`` (not JSON);
- a number beyond the float range (magnitude above 1.8e308), integer or not: no engine
  here could carry it, and Python could not even print one of 4300 digits;
- nesting deeper than :data:`MAX_NESTING` arrays and objects.

It reads with an explicit stack, never by recursion, and does no I/O: the text
is given. Strings are decoded by the standard library's own JSON string reader.

>>> read_json('{"a": [1, 2.5, "x"]}').unwrap()
{'a': [1, 2.5, 'x']}
>>> str(read_json('{"a": {"b": 1, "b": 2}}').failure())
'a.b: line 1, column 16: duplicate key "b" (each key may appear once in an object)'
>>> str(read_json('[1, NaN]').failure())
'[1]: line 1, column 5: NaN is not JSON (numbers must be finite)'
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from returns.result import Failure, Result, Success

from policy.text import QUOTE_WIDTH, printable, quote

__all__ = [
    "MAX_NESTING",
    "JsonError",
    "JsonValue",
    "element_path",
    "member_path",
    "read_json",
]

#: What :func:`read_json` returns: dicts, lists, str, int, float, bool, None.
JsonValue: TypeAlias = Any

#: Deepest nesting of arrays and objects read.
MAX_NESTING: Final = 256

_SPACE: Final = re.compile(r"[ \t\n\r]*")
_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_SIMPLE_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NOT_NUMBERS: Final = ("NaN", "Infinity", "-Infinity")
# The standard library decodes strings (escapes, surrogates, control characters).
_STRINGS: Final = json.JSONDecoder(strict=True)
_LITERALS: Final[tuple[tuple[str, JsonValue], ...]] = (
    ("true", True),
    ("false", False),
    ("null", None),
)


@dataclass(frozen=True, slots=True)
class JsonError:
    """Why JSON text was refused: where (JSON path, 1-based line and column) and why.

    >>> str(JsonError("", "expected a value, found end of text", 1, 1))
    'line 1, column 1: expected a value, found end of text'
    """

    path: str
    message: str
    line: int
    column: int

    def __str__(self) -> str:
        where = f"line {self.line}, column {self.column}"
        return f"{self.path}: {where}: {self.message}" if self.path else f"{where}: {self.message}"


def member_path(parent: str, key: str) -> str:
    """The JSON path of member ``key`` of the object at ``parent``: ``a.b`` for a
    plain name, else the key quoted as JSON (always one printable line; a key
    longer than :data:`~policy.text.QUOTE_WIDTH` is cut by :func:`~policy.text.quote`).

    >>> member_path("", "requests"), member_path("policy", "let"), member_path("a", "x.y\\n")
    ('requests', 'policy.let', 'a["x.y\\\\n"]')
    """
    if len(key) <= QUOTE_WIDTH and _SIMPLE_NAME.fullmatch(key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{quote(key, write=json.dumps)}]"


def element_path(parent: str, index: int) -> str:
    """The JSON path of element ``index`` of the array at ``parent``.

    >>> element_path("requests", 2), element_path("", 0)
    ('requests[2]', '[0]')
    """
    return f"{parent}[{index}]"


class _Refused(Exception):
    def __init__(self, at: int, message: str, path: str) -> None:
        super().__init__(message)
        self.at = at
        self.message = message
        self.path = path


class _Object:
    __slots__ = ("key", "value")

    def __init__(self) -> None:
        self.value: dict[str, JsonValue] = {}
        self.key = ""

    def child_path(self, path: str) -> str:
        return member_path(path, self.key)


class _Array:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: list[JsonValue] = []

    def child_path(self, path: str) -> str:
        return element_path(path, len(self.value))


def _path_of(frames: list[_Object | _Array]) -> str:
    # Built only for a refusal: a path kept per container would cost its length
    # for every container below it (a long key above many small objects).
    path = ""
    for frame in frames:
        path = frame.child_path(path)
    return path


def _found(text: str, at: int) -> str:
    return "end of text" if at >= len(text) else printable(repr(text[at]))


class _Reader:
    """One pass over ``text``; :meth:`document` returns the value or raises _Refused."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.stack: list[_Object | _Array] = []

    def path(self) -> str:
        """The JSON path of the value being read."""
        return _path_of(self.stack)

    def container_path(self) -> str:
        """The JSON path of the innermost open container."""
        return _path_of(self.stack[:-1])

    def refuse(self, at: int, message: str, path: str | None = None) -> _Refused:
        return _Refused(at, message, self.path() if path is None else path)

    def space(self, at: int) -> int:
        matched = _SPACE.match(self.text, at)
        return matched.end() if matched else at

    def string(self, at: int) -> tuple[str, int]:
        """The string whose opening quote is at ``at``, and the position after it."""
        try:
            value, after = _STRINGS.raw_decode(self.text, at)
            return str(value), after
        except json.JSONDecodeError as error:
            reason = error.msg.removesuffix(" at").removesuffix(" starting").lower()
            raise self.refuse(error.pos, reason) from None

    def key(self, frame: _Object, at: int) -> int:
        """Read ``"key":`` into ``frame``; the position of its value."""
        if self.text.startswith('"', at):
            key, after = self.string(at)
        else:
            message = f"expected a key in double quotes, found {_found(self.text, at)}"
            raise self.refuse(at, message, self.container_path())
        if key in frame.value:
            message = (
                f"duplicate key {quote(key, write=json.dumps)}"
                " (each key may appear once in an object)"
            )
            raise self.refuse(at, message, member_path(self.container_path(), key))
        frame.key = key
        after = self.space(after)
        if not self.text.startswith(":", after):
            raise self.refuse(
                after, f"expected ':' after the key, found {_found(self.text, after)}"
            )
        return self.space(after + 1)

    def number(self, at: int) -> tuple[JsonValue, int] | None:
        matched = _NUMBER.match(self.text, at)
        if matched is None:
            return None
        literal = matched.group()
        # float() reads any length; anything beyond its range is refused before int()
        # (which raises for more than 4300 digits) or an engine ever sees it.
        magnitude = float(literal)
        if math.isinf(magnitude):  # the regex reads no NaN
            digits = len(literal.lstrip("-"))
            raise self.refuse(
                at,
                f"number out of range ({digits} characters): beyond the float range (1.8e308)",
            )
        if matched.group(1) or matched.group(2):
            return magnitude, matched.end()
        return int(literal), matched.end()

    def scalar(self, at: int) -> tuple[JsonValue, int]:
        text = self.text
        if text.startswith('"', at):
            return self.string(at)
        if text[at : at + 1] in "NI-":  # the first letters of _NOT_NUMBERS (or the end)
            for word in _NOT_NUMBERS:
                if text.startswith(word, at):
                    raise self.refuse(at, f"{word} is not JSON (numbers must be finite)")
        number = self.number(at)
        if number is not None:
            return number
        for word, value in _LITERALS:
            if text.startswith(word, at):
                return value, at + len(word)
        raise self.refuse(at, f"expected a value, found {_found(text, at)}")

    def document(self) -> JsonValue:
        text, stack = self.text, self.stack
        at = self.space(0)
        while True:
            # A value starts at ``at``: open a container or read a scalar.
            opener = text[at : at + 1]
            if opener in ("{", "["):
                if len(stack) >= MAX_NESTING:
                    raise self.refuse(at, f"nested deeper than {MAX_NESTING} arrays and objects")
                inner = self.space(at + 1)
                if text.startswith("}" if opener == "{" else "]", inner):
                    value: JsonValue = {} if opener == "{" else []
                    at = inner + 1
                else:
                    if opener == "{":
                        frame = _Object()
                        stack.append(frame)
                        at = self.key(frame, inner)
                    else:
                        stack.append(_Array())
                        at = inner
                    continue
            else:
                value, at = self.scalar(at)
            # A value ended: store it, then close every container that ends here.
            while True:
                at = self.space(at)
                if not stack:
                    if at != len(text):
                        raise self.refuse(
                            at, f"extra text after the JSON value: {_found(text, at)}"
                        )
                    return value
                top = stack[-1]
                if isinstance(top, _Object):
                    top.value[top.key] = value
                    closer = "}"
                else:
                    top.value.append(value)
                    closer = "]"
                if text.startswith(",", at):
                    at = self.space(at + 1)
                    if isinstance(top, _Object):
                        at = self.key(top, at)
                    break
                if not text.startswith(closer, at):
                    message = f"expected ',' or '{closer}', found {_found(text, at)}"
                    raise self.refuse(at, message, self.container_path())
                stack.pop()
                value = top.value
                at += 1


def _line_and_column(text: str, at: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, at) + 1
    return text.count("\n", 0, at) + 1, at - line_start + 1


def read_json(text: str) -> Result[JsonValue, JsonError]:
    """The JSON value of ``text``, or the first reason it is refused and where.

    ``text`` must be a ``str`` (a ``TypeError`` otherwise: bytes are decoded by
    whoever read them, who knows the encoding).

    >>> str(read_json('{"n": 1' + "0" * 400 + '}').failure())
    'n: line 1, column 7: number out of range (401 characters): beyond the float range (1.8e308)'
    >>> str(read_json("[1,]").failure())
    "[1]: line 1, column 4: expected a value, found ']'"
    """
    if not isinstance(text, str):
        raise TypeError(f"read_json reads text (str), not {type(text).__name__}")
    reader = _Reader(text)
    try:
        return Success(reader.document())
    except _Refused as refused:
        line, column = _line_and_column(text, refused.at)
        return Failure(JsonError(refused.path, refused.message, line, column))
