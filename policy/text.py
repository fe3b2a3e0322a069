"""Text at the library's edges: the one trimming rule and the one escaping rule.

Two rules, each defined once and used everywhere:

- :func:`trim` strips Unicode White_Space from both ends, as a host's ``trim()``
  does. Every header or setting the kernel reads from raw text (a lane, the
  grant budget) is trimmed by it, so the two can never disagree.
- :func:`printable` turns any text into one printable line. Every message and
  table that shows user-supplied text (names, ids, keys, file names) passes it
  through this, so a newline cannot forge a second line and an escape sequence
  never reaches a terminal.

And one rule for quoting a host's text in a message: :func:`cut` (and
:func:`quote`, the same with quotes) shows at most :data:`QUOTE_WIDTH` characters
of it, then ``... (N characters)``, so a 10 MB name makes a message of a line,
not of 10 MB. :func:`shown` and :func:`name_shown` quote any value and any name
by that rule.

And one rule for showing values: :func:`represent` is ``repr`` on one printable
line that never raises, which every record holding a host's value (a request
id, an event) uses for its ``repr`` (:func:`record_repr`), so a kernel value can
always be printed, whatever the host gave it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import fields
from typing import Final

__all__ = [
    "QUOTE_WIDTH",
    "SHOWN_LIMIT",
    "WHITESPACE",
    "cut",
    "digits",
    "name_shown",
    "printable",
    "quote",
    "record_repr",
    "represent",
    "shown",
    "trim",
]

#: How many characters of a host's text a message quotes (:func:`cut`).
QUOTE_WIDTH: Final = 80
#: How many characters of a value's representation :func:`shown` writes.
SHOWN_LIMIT: Final = QUOTE_WIDTH

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


def _beyond(text: str, width: int) -> str:
    return "" if len(text) <= width else f"... ({len(text):,} characters)"


def cut(text: str, width: int = QUOTE_WIDTH) -> str:
    """``text`` for a message: at most ``width`` of its characters, on one printable
    line (:func:`printable`), and for a longer text ``... (N characters)``, N its
    whole length. The one rule for every host's text a message shows.

    >>> cut("tick budget 2"), cut("cancel " + "x" * 90, 12), cut("a\\nb")
    ('tick budget 2', 'cancel xxxxx... (97 characters)', 'a\\\\nb')
    """
    return printable(text[:width]) + _beyond(text, width)


def quote(text: str, width: int = QUOTE_WIDTH, write: Callable[[str], str] = str.__repr__) -> str:
    """:func:`cut` in quotes: at most ``width`` characters of ``text`` quoted as
    ``write`` quotes text (``repr``, or ``json.dumps`` in a JSON path), and for a
    longer text ``... (N characters)``.

    >>> quote("prompt"), quote("n" * 100, 4), quote("a\\nb")
    ("'prompt'", "'nnnn'... (100 characters)", "'a\\\\nb'")
    """
    return write(str(text[:width])) + _beyond(text, width)


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


_LOG10_2: Final = math.log10(2)


def digits(number: int) -> int:
    """How many decimal digits ``abs(number)`` has, without converting it to text.

    >>> digits(0), digits(-999), digits(10**5000)
    (1, 3, 5001)
    """
    magnitude = abs(number)
    count = max(1, int(magnitude.bit_length() * _LOG10_2))
    while 10**count <= magnitude:
        count += 1
    while count > 1 and 10 ** (count - 1) > magnitude:
        count -= 1
    return count


def _shown(value: object, room: int) -> str:
    if value is None or isinstance(value, bool | float):
        return repr(value)
    if isinstance(value, int):
        count = digits(value)
        if count <= 30:
            return repr(value)
        return f"a {'negative ' if value < 0 else ''}{count}-digit integer"
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, list | tuple):
        # a tuple in parentheses: a caller of the Python API sees what it passed
        is_tuple = isinstance(value, tuple)
        opening, closing = ("(", ")") if is_tuple else ("[", "]")
        if room == 0:
            return f"{opening}...{closing}"
        items = [_shown(item, room - 1) for item in value[:4]]
        lone = "," if is_tuple and len(value) == 1 else ""
        return opening + ", ".join(items + (["..."] if len(value) > 4 else [])) + lone + closing
    if isinstance(value, dict):
        if room == 0:
            return "{...}"
        pairs = [f"{_shown(k, 0)}: {_shown(v, room - 1)}" for k, v in list(value.items())[:4]]
        return "{" + ", ".join(pairs + (["..."] if len(value) > 4 else [])) + "}"
    return represent(value)  # any repr may fail or span lines: the message must not


def shown(value: object) -> str:
    """``value`` for an error message: like ``repr``, short, and never raising (text
    by :func:`quote`, anything else cut to :data:`SHOWN_LIMIT` by :func:`cut`).

    >>> shown("128"), shown(True), shown(10**5000), shown([1, [2, [3, [4]]]])
    ("'128'", 'True', 'a 5001-digit integer', '[1, [2, [3, [...]]]]')
    >>> shown((1,)), shown((1, (2, (3, (4,))))), shown(tuple(range(9)))
    ('(1,)', '(1, (2, (3, (...))))', '(0, 1, 2, 3, ...)')
    >>> shown("x" * 100)[-22:]
    "x'... (100 characters)"
    """
    if isinstance(value, str):
        return quote(value)
    return cut(_shown(value, 3), SHOWN_LIMIT)


def name_shown(name: object) -> str:
    """A name as it appears in a JSON path: text by :func:`cut` (printable, at most
    :data:`QUOTE_WIDTH` characters of it), anything else :func:`shown`.

    >>> name_shown("short_tokens"), name_shown(10**400), name_shown("n" * 100)[-23:]
    ('short_tokens', 'a 401-digit integer', 'nnn... (100 characters)')
    >>> name_shown("a\\nb\\ud800")
    'a\\\\nb\\\\ud800'
    """
    if isinstance(name, str):
        return cut(name)
    return shown(name)
