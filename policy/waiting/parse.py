"""The text form of key expressions: a parser and an unparser.

Precedence, loosest first (every binary operator is left-associative)::

    c ? a : b          right-associative
    ||
    &&
    ==  !=
    <  <=  >  >=
    +  -
    *  /
    -x  !x             prefix; ``-`` directly before a number is part of the literal
    literals, names, serial, now, waited, budget_left(stage), min(...), max(...), ( ... )

Names that are not words of the language are constants when the policy declares
them with ``let`` (passed as ``constants``), attributes otherwise.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Final, cast

from returns.result import Failure, Result, Success

from policy.waiting.errors import PolicyError
from policy.waiting.expr import (
    Attr,
    Binary,
    BinaryOperator,
    Bool,
    BudgetLeft,
    Call,
    Cond,
    Const,
    Expr,
    Num,
    Unary,
    Var,
    children,
)

#: Deepest tree the parser builds (and the loader accepts): keeps every
#: recursive walk over a key (evaluation, printing) far from Python's stack limit.
MAX_DEPTH: Final = 50

_TOKEN = re.compile(
    r"(?P<space>[ \t\r\n]+)"
    r"|(?P<number>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op><=|>=|==|!=|&&|\|\||[-+*/<>!?:(),])"
)

# Binding strength of binary operators; the conditional is 1, prefix operators 8, atoms 9.
_LEVEL: Final[dict[str, int]] = {
    "||": 2,
    "&&": 3,
    "==": 4,
    "!=": 4,
    "<": 5,
    "<=": 5,
    ">": 5,
    ">=": 5,
    "+": 6,
    "-": 6,
    "*": 7,
    "/": 7,
}
_CONDITIONAL: Final = 1
_PREFIX: Final = 8
_ATOM: Final = 9

_HINTS: Final[dict[str, str]] = {"=": "'=='", "&": "'&&'", "|": "'||'"}


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "number", "name", "op" or "end"
    text: str
    line: int
    column: int

    def shown(self) -> str:
        return "end of text" if self.kind == "end" else repr(self.text)


class _Refused(Exception):
    """Internal: unwinds the parser to :func:`parse_expression`, never escapes it."""

    def __init__(self, error: PolicyError) -> None:
        super().__init__(error.message)
        self.error = error


def _refuse(where: _Token, message: str) -> _Refused:
    return _Refused(PolicyError("", message, where.line, where.column))


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    line, line_start, at = 1, 0, 0
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None:
            bad = text[at]
            hint = f"; did you mean {_HINTS[bad]}?" if bad in _HINTS else ""
            raise _refuse(_Token("op", bad, line, at - line_start + 1), f"unexpected {bad!r}{hint}")
        kind = match.lastgroup or "op"
        if kind != "space":
            tokens.append(_Token(kind, match.group(), line, at - line_start + 1))
        else:
            newlines = match.group().count("\n")
            if newlines:
                line += newlines
                line_start = at + match.group().rindex("\n") + 1
        at = match.end()
    tokens.append(_Token("end", "", line, at - line_start + 1))
    return tokens


class _Parser:
    def __init__(self, text: str, constants: Collection[str]) -> None:
        self.tokens = _tokens(text)
        self.at = 0
        self.constants = constants
        self.nesting = 0

    def peek(self) -> _Token:
        return self.tokens[self.at]

    def take(self) -> _Token:
        token = self.tokens[self.at]
        self.at = min(self.at + 1, len(self.tokens) - 1)
        return token

    def expect(self, text: str, why: str) -> _Token:
        token = self.take()
        if token.text != text or token.kind != "op":
            raise _refuse(token, f"expected {text!r} {why}, found {token.shown()}")
        return token

    def nested(self, where: _Token) -> None:
        self.nesting += 1
        if self.nesting > MAX_DEPTH:
            raise _refuse(where, f"expression nested deeper than {MAX_DEPTH} levels")

    def whole(self) -> Expr:
        tree = self.conditional()
        end = self.peek()
        if end.kind != "end":
            raise _refuse(end, f"expected an operator or end of text, found {end.shown()}")
        return tree

    def conditional(self) -> Expr:
        self.nested(self.peek())
        test = self.binary(_LEVEL["||"])
        question = self.peek()
        if question.kind == "op" and question.text == "?":
            self.take()
            then = self.conditional()
            self.expect(":", f"of the '?' at line {question.line}, column {question.column}")
            otherwise = self.conditional()
            test = Cond(test, then, otherwise)
        self.nesting -= 1
        return test

    def binary(self, loosest: int) -> Expr:
        left = self.prefix()
        while True:
            token = self.peek()
            level = _LEVEL.get(token.text, 0) if token.kind == "op" else 0
            if level < loosest:
                return left
            self.take()
            right = self.binary(level + 1)
            left = Binary(cast(BinaryOperator, token.text), left, right)

    def prefix(self) -> Expr:
        token = self.peek()
        if token.kind != "op" or token.text not in ("-", "!"):
            return self.atom()
        self.take()
        if token.text == "-" and self.peek().kind == "number":
            return self.number(self.take(), negative=True)
        self.nested(token)
        operand = self.prefix()
        self.nesting -= 1
        return Unary("-" if token.text == "-" else "!", operand)

    def number(self, token: _Token, *, negative: bool) -> Num:
        value = float(token.text)
        if not math.isfinite(value):
            raise _refuse(token, f"number {token.text} is out of range")
        return Num(-value if negative else value)

    def atom(self) -> Expr:
        token = self.take()
        if token.kind == "number":
            return self.number(token, negative=False)
        if token.kind == "op" and token.text == "(":
            inner = self.conditional()
            self.expect(")", f"to close the '(' at line {token.line}, column {token.column}")
            return inner
        if token.kind != "name":
            raise _refuse(
                token, f"expected an operand (number, name or '('), found {token.shown()}"
            )
        match token.text:
            case "true" | "false":
                return Bool(token.text == "true")
            case "serial" | "now" | "waited":
                return Var(token.text)
            case "budget_left":
                self.expect("(", "after budget_left")
                stage = self.take()
                if stage.kind != "name":
                    raise _refuse(stage, f"expected a stage name, found {stage.shown()}")
                self.expect(")", "after the stage name")
                return BudgetLeft(stage.text)
            case "min" | "max":
                self.expect("(", f"after {token.text}")
                args = [self.conditional()]
                while self.peek().text == "," and self.peek().kind == "op":
                    self.take()
                    args.append(self.conditional())
                self.expect(")", f"or ',' in {token.text}(...)")
                return Call("min" if token.text == "min" else "max", tuple(args))
            case name if name in self.constants:
                return Const(name)
            case name:
                return Attr(name)


def depth(expr: Expr) -> int:
    """The number of nodes on the longest path from ``expr`` to a leaf.

    >>> depth(Num(1)), depth(Binary("+", Num(1), Unary("-", Var("now"))))
    (1, 3)
    """
    deepest = 0
    pending = [(expr, 1)]
    while pending:
        node, level = pending.pop()
        deepest = max(deepest, level)
        pending.extend((child, level + 1) for child in children(node))
    return deepest


def parse_expression(
    text: str, constants: Collection[str] = frozenset()
) -> Result[Expr, PolicyError]:
    """Read a key expression; names in ``constants`` become constants, others attributes.

    >>> parse_expression("prompt > short_tokens ? 1 : 2", {"short_tokens"}).unwrap()
    ... # doctest: +NORMALIZE_WHITESPACE
    Cond(test=Binary(op='>', left=Attr(name='prompt'), right=Const(name='short_tokens')),
         then=Num(value=1.0), otherwise=Num(value=2.0))
    >>> print(parse_expression("1 +").failure())
    line 1, column 4: expected an operand (number, name or '('), found end of text
    """
    try:
        tree = _Parser(text, constants).whole()
    except _Refused as refused:
        return Failure(refused.error)
    if depth(tree) > MAX_DEPTH:
        return Failure(PolicyError("", f"expression nested deeper than {MAX_DEPTH} levels", 1, 1))
    return Success(tree)


def _number_text(value: float) -> str:
    magnitude = abs(value)
    text = str(int(magnitude)) if magnitude.is_integer() and magnitude < 1e16 else repr(magnitude)
    return "-" + text if math.copysign(1.0, value) < 0 else text


def _unparse(expr: Expr) -> tuple[str, int]:
    """The text of ``expr`` and how tightly it binds (for deciding on parentheses)."""
    match expr:
        case Num(value):
            return _number_text(value), _ATOM
        case Bool(value):
            return ("true" if value else "false"), _ATOM
        case Attr(name) | Const(name) | Var(name):
            return name, _ATOM
        case BudgetLeft(stage):
            return f"budget_left({stage})", _ATOM
        case Unary(op, operand):
            text, level = _unparse(operand)
            # "-3" would read back as the literal -3, not as minus applied to 3.
            literal_follows = op == "-" and isinstance(operand, Num) and not text.startswith("-")
            if level < _PREFIX or literal_follows:
                text = f"({text})"
            return op + text, _PREFIX
        case Binary(op, left, right):
            level = _LEVEL[op]
            left_text, left_level = _unparse(left)
            right_text, right_level = _unparse(right)
            if left_level < level:
                left_text = f"({left_text})"
            if right_level <= level:
                right_text = f"({right_text})"
            return f"{left_text} {op} {right_text}", level
        case Cond(test, then, otherwise):
            test_text, test_level = _unparse(test)
            if test_level <= _CONDITIONAL:
                test_text = f"({test_text})"
            return (
                f"{test_text} ? {_unparse(then)[0]} : {_unparse(otherwise)[0]}",
                _CONDITIONAL,
            )
        case Call(function, args):
            return f"{function}({', '.join(_unparse(arg)[0] for arg in args)})", _ATOM


def unparse(expr: Expr) -> str:
    """The text of ``expr``, with only the parentheses it needs; it parses back to ``expr``.

    >>> unparse(Binary("*", Binary("+", Num(1), Num(2)), Unary("-", Num(3))))
    '(1 + 2) * -(3)'
    >>> unparse(Cond(Var("now"), Num(-0.0), Cond(Bool(True), Num(0.5), Num(1e20))))
    'now ? -0 : true ? 0.5 : 1e+20'
    """
    return _unparse(expr)[0]
