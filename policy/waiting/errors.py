"""The one error type of policy building, parsing and loading."""

from __future__ import annotations

from dataclasses import dataclass

from policy.text import printable


@dataclass(frozen=True, slots=True)
class PolicyError:
    """Why a key expression or a queue-policy document was refused.

    ``path`` is a JSON path into the document (``""`` for the whole document or
    for bare expression text), ``message`` says what is wrong in one line, and
    ``line``/``column`` (1-based) point into key text when the text is malformed.
    Its ``str`` is always one printable line (:func:`~policy.text.printable`).

    >>> str(PolicyError("keys[0]", "unknown name 'x'"))
    "keys[0]: unknown name 'x'"
    >>> str(PolicyError("", "expected an operand", 1, 4))
    'line 1, column 4: expected an operand'
    >>> str(PolicyError("let.a\\nb", "bad"))
    'let.a\\\\nb: bad'
    """

    path: str
    message: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = [self.path] if self.path else []
        if self.line is not None and self.column is not None:
            where.append(f"line {self.line}, column {self.column}")
        return printable(": ".join([*where, self.message]))

    def at(self, path: str) -> PolicyError:
        """The same error, placed under ``path`` (for errors found inside a document).

        >>> str(PolicyError("", "bad", 1, 2).at("keys[3]"))
        'keys[3]: line 1, column 2: bad'
        """
        return PolicyError(path, self.message, self.line, self.column)

    def within(self, prefix: str) -> PolicyError:
        """The same error, its path prefixed (for a policy embedded in a larger document).

        >>> str(PolicyError("keys[0]", "bad").within("policy"))
        'policy.keys[0]: bad'
        >>> str(PolicyError("", "not an object").within("policy"))
        'policy: not an object'
        """
        return self.at(f"{prefix}.{self.path}" if self.path else prefix)


class Refused(Exception):
    """Internal: carries a :class:`PolicyError` out of a reader (the key parser, the
    tree reader) to its entry point, which returns it; it never escapes the library."""

    def __init__(self, error: PolicyError) -> None:
        super().__init__(error.message)
        self.error = error
