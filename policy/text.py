"""Text at the library's edges: the one trimming rule and the one escaping rule.

Two rules, each defined once and used everywhere:

- :func:`trim` strips Unicode White_Space from both ends, as a host's ``trim()``
  does. Every header or setting the kernel reads from raw text (a lane, the
  grant budget) is trimmed by it, so the two can never disagree.
- :func:`printable` turns any text into one printable line. Every message and
  table that shows user-supplied text (names, ids, keys, file names) passes it
  through this, so a newline cannot forge a second line and an escape sequence
  never reaches a terminal.

And one rule for showing values: :func:`represent` is ``repr`` on one printable
line that never raises, which every record holding a host's value (a request
id, an event) uses for its ``repr`` (:func:`record_repr`), so a kernel value can
always be printed, whatever the host gave it.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Final

__all__ = ["WHITESPACE", "cut", "printable", "record_repr", "represent", "trim"]

#: Unicode White_Space (25 code points). Python's ``str.strip()`` would also strip
#: the ASCII separators U+001C..U+001F, which are not white space.
WHITESPACE: Final = "".join(
    c for c in map(chr, range(0x3001)) if c.isspace() and c not in "\x1c\x1d\x1e\x1f"
)

_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def trim(raw: str) -> str:
    """``raw`` without surrounding Unicode white space.

    ``raw`` must be a ``str`` (a ``TypeError`` otherwise: trimming is for text).

    >>> trim(" \\t high\\u3000\\n"), trim("\\x1f8\\x1f")
    ('high', '\\x1f8\\x1f')
    """
    if not isinstance(raw, str):
        raise TypeError(f"trim reads text (str), not {type(raw).__name__}")
    return raw.strip(WHITESPACE)


def _escaped(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters: a longer one ends in ``...``.

    >>> cut("tick budget 2", 80), cut("cancel " + "x" * 90, 12)
    ('tick budget 2', 'cancel xx...')
    """
    return text if len(text) <= width else text[: width - 3] + "..."


def printable(text: str) -> str:
    """``text`` on one printable line: every character that is not printable
    (line breaks, controls, lone surrogates, separators) written as its escape.

    Printable text is returned as it is, so ordinary names read unchanged.

    >>> printable("req-1"), printable("a\\nb"), printable("\\x1b[2J"), printable("\\ud800")
    ('req-1', 'a\\\\nb', '\\\\x1b[2J', '\\\\ud800')
    """
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _escaped(char) for char in text)


def _fallback(value: object) -> str:
    """What :func:`represent` writes when ``repr(value)`` raised."""
    # Python refuses to write an integer of more than 4300 digits in decimal (the
    # conversion is quadratic); hexadecimal is linear, exact, and reads back.
    if isinstance(value, int):
        return hex(value)
    if isinstance(value, tuple):
        items = [represent(item) for item in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(represent(item) for item in value) + "]"
    if isinstance(value, frozenset | set):
        name = type(value).__name__
        members = ", ".join(represent(item) for item in value)
        return f"{name}({{{members}}})" if members else f"{name}()"
    if isinstance(value, dict):
        pairs = (f"{represent(key)}: {represent(item)}" for key, item in value.items())
        return "{" + ", ".join(pairs) + "}"
    return f"<{type(value).__name__}>"


def represent(value: object) -> str:
    """``repr(value)`` on one printable line, for any value; never raises.

    Where ``repr`` itself raises (an integer of more than 4300 digits, a
    container holding one, a ``__repr__`` that fails), the integer is written
    in hexadecimal, containers are written item by item, and anything else as
    ``<TypeName>``.

    >>> represent("a\\nb"), represent(10**5000)[:8], represent((10**5000, "x"))[-6:]
    ("'a\\\\nb'", '0x31e208', ", 'x')")
    """
    try:
        text = repr(value)
    except Exception:  # any repr may fail: showing a value must not
        try:
            text = _fallback(value)
        except Exception:  # e.g. nested too deeply to write item by item
            text = f"<{type(value).__name__}>"
    return printable(text)


def record_repr(record: object) -> str:
    """The dataclass ``repr`` of ``record`` with every field written by :func:`represent`.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Held:
    ...     request: object
    ...     __repr__ = record_repr
    >>> Held("a"), len(repr(Held(10**5000)))
    (Held(request='a'), 4169)
    """
    shown = ", ".join(
        f"{field.name}={represent(getattr(record, field.name))}"
        for field in fields(record)  # type: ignore[arg-type]
        if field.repr
    )
    return f"{type(record).__name__}({shown})"
