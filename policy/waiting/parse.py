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

Nesting is bounded (:data:`MAX_DEPTH`, measured by :func:`nesting`): the parser
is recursive, and every policy must print as text that reads back. Chains are
read in loops and do not nest, so ``a + a + ... + a`` may be as long as the
size limit allows (:data:`~policy.waiting.expr.MAX_NODES` nodes, about 10,000 terms).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Final, cast

from returns.result import Failure, Result, Success

from policy.text import cut, quote
from policy.waiting.errors import PolicyError, Refused
from policy.waiting.expr import (
    TOO_LARGE,
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
    TreeTooLarge,
    Unary,
    Var,
    children,
    is_name,
    require_expr,
)
from policy.waiting.numbers import shown

#: Deepest nesting the parser reads (and the loader accepts), see :func:`nesting`:
#: keeps the recursive parser far from Python's recursion limit. Everything else
#: (evaluation, printing, equality, JSON trees) walks trees without recursion.
MAX_DEPTH: Final = 50

TOO_DEEP: Final = (
    f"expression nested deeper than {MAX_DEPTH} levels of parentheses,"
    " prefix operators, '?' branches or min/max arguments"
)

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
        return "end of text" if self.kind == "end" else quote(self.text)


def _refuse(where: _Token, message: str) -> Refused:
    return Refused(PolicyError("", message, where.line, where.column))


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    line, line_start, at = 1, 0, 0
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None:
            bad = text[at]
            hint = f"; did you mean {_HINTS[bad]}?" if bad in _HINTS else ""
            where = _Token("op", bad, line, at - line_start + 1)
            raise _refuse(where, f"unexpected {quote(bad)}{hint}")
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

    def enter(self, where: _Token) -> None:
        """One level deeper, opened by the token ``where``; refused beyond MAX_DEPTH."""
        self.nesting += 1
        if self.nesting > MAX_DEPTH:
            raise _refuse(where, TOO_DEEP)

    def whole(self) -> Expr:
        tree = self.conditional(self.peek())
        end = self.peek()
        if end.kind != "end":
            raise _refuse(end, f"expected an operator or end of text, found {end.shown()}")
        return tree

    def conditional(self, opener: _Token) -> Expr:
        """``t1 ? a1 : t2 ? a2 : ... : otherwise``, one level deeper than its opener.

        The chain is read in a loop: only the branches between ``?`` and ``:`` nest.
        """
        self.enter(opener)
        branches: list[tuple[Expr, Expr]] = []
        while True:
            test = self.binary(_LEVEL["||"])
            question = self.peek()
            if question.kind != "op" or question.text != "?":
                break
            self.take()
            then = self.conditional(question)
            self.expect(":", f"of the '?' at line {question.line}, column {question.column}")
            branches.append((test, then))
        tree = test
        for condition, then in reversed(branches):
            tree = Cond(condition, then, tree)
        self.nesting -= 1
        return tree

    def binary(self, loosest: int) -> Expr:
        """Operators at least as tight as ``loosest``; a chain of them is read in a loop."""
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
        self.enter(token)
        operand = self.prefix()
        self.nesting -= 1
        return Unary("-" if token.text == "-" else "!", operand)

    def number(self, token: _Token, *, negative: bool) -> Num:
        value = float(token.text)  # any length of digits: float() has no digit limit
        if not math.isfinite(value):
            raise _refuse(token, f"number {cut(token.text, 24)} is out of range")
        return Num(-value if negative else value)

    def atom(self) -> Expr:
        token = self.take()
        if token.kind == "number":
            return self.number(token, negative=False)
        if token.kind == "op" and token.text == "(":
            inner = self.conditional(token)
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
                if not is_name(stage.text):
                    reserved = f"{quote(stage.text)} is a reserved word, not a stage name"
                    raise _refuse(stage, reserved)
                self.expect(")", "after the stage name")
                return BudgetLeft(stage.text)
            case "min" | "max":
                opener = self.expect("(", f"after {token.text}")
                args = [self.conditional(opener)]
                while self.peek().text == "," and self.peek().kind == "op":
                    args.append(self.conditional(self.take()))
                self.expect(")", f"or ',' in {token.text}(...)")
                return Call("min" if token.text == "min" else "max", tuple(args))
            case name if name in self.constants:
                return Const(name)
            case name:
                return Attr(name)


def is_stage_name(text: object) -> bool:
    """Whether ``text`` names a stage the way ``budget_left(stage)`` reads it: ASCII
    letters, digits and underscores, not starting with a digit, not a reserved word.

    >>> is_stage_name("engine"), is_stage_name("prefill_2"), is_stage_name("now")
    (True, True, False)
    >>> is_stage_name("2x"), is_stage_name("étape"), is_stage_name(""), is_stage_name(3)
    (False, False, False, False)
    """
    return isinstance(text, str) and is_name(text)


def _binding(expr: Expr) -> int:
    """How tightly the text of ``expr`` binds (its loosest operator)."""
    match expr:
        case Unary():
            return _PREFIX
        case Binary(op, _, _):
            return _LEVEL[op]
        case Cond():
            return _CONDITIONAL
        case _:
            return _ATOM


def _parenthesized(parent: Expr, index: int, child: Expr) -> bool:
    """Whether the text of ``parent`` puts its child number ``index`` in parentheses."""
    match parent:
        case Unary(op, _):
            # "-3" would read back as the literal -3, not as minus applied to 3.
            literal_follows = (
                op == "-" and isinstance(child, Num) and math.copysign(1.0, child.value) > 0
            )
            return _binding(child) < _PREFIX or literal_follows
        case Binary(op, _, _):
            level = _LEVEL[op]
            return _binding(child) < level if index == 0 else _binding(child) <= level
        case Cond():
            return index == 0 and _binding(child) <= _CONDITIONAL
        case _:
            return False


def _opens(parent: Expr, index: int) -> int:
    """Levels the child number ``index`` of ``parent`` is deeper, parentheses aside."""
    match parent:
        case Unary() | Call():
            return 1
        case Cond():
            return 1 if index == 1 else 0  # the 'then' branch; a chain of tests does not nest
        case _:
            return 0  # operands of a binary operator: chains do not nest


def _levels(expr: Expr) -> Iterator[tuple[Expr, int]]:
    """Every node with its nesting level (``expr`` is at 1), parents first, left to right."""
    pending = [(expr, 1)]
    while pending:
        node, level = pending.pop()
        yield node, level
        kids = children(node)
        pending.extend(
            (child, level + _opens(node, index) + _parenthesized(node, index, child))
            for index, child in reversed(list(enumerate(kids)))
        )


def nesting(expr: Expr) -> int:
    """How deeply the text of ``expr`` nests, counted as the parser counts.

    The whole expression is level 1; a parenthesised group, the operand of a
    prefix operator, the branch between ``?`` and ``:`` and each ``min``/``max``
    argument are one level deeper. Chains do not nest: neither ``a + b + c``
    nor ``a ? 1 : b ? 2 : 3``. :func:`parse_expression` refuses text deeper
    than :data:`MAX_DEPTH`, and this is the depth of ``unparse(expr)``.

    >>> nesting(parse_expression(" + ".join(["a"] * 500)).unwrap())
    1
    >>> nesting(parse_expression("-(a + min(b, (c)))").unwrap())
    4
    """
    require_expr("nesting", expr)
    return max(level for _, level in _levels(expr))


def too_deep(expr: Expr) -> Expr | None:
    """The first node (parents first, left to right) deeper than :data:`MAX_DEPTH`, if any.

    >>> tree = parse_expression("-" * (MAX_DEPTH - 1) + "x").unwrap()
    >>> too_deep(tree) is None, too_deep(Unary("!", tree))
    (True, Attr(name='x'))
    """
    require_expr("too_deep", expr)
    return next((node for node, level in _levels(expr) if level > MAX_DEPTH), None)


def parse_expression(
    text: str, constants: Collection[str] = frozenset()
) -> Result[Expr, PolicyError]:
    """Read a key expression; names in ``constants`` become constants, others attributes.

    >>> parse_expression("prompt > short_tokens ? 1 : 2", {"short_tokens"}).unwrap()
    ... # doctest: +NORMALIZE_WHITESPACE
    Cond(test=Binary(op='>', left=Attr(name='prompt'), right=Const(name='short_tokens')),
         then=Num(value=1.0), otherwise=Num(value=2.0))
    >>> str(parse_expression("1 +").failure())
    "line 1, column 4: expected an operand (number, name or '('), found end of text"

    Like every function here that returns a ``Result``, it never raises: text
    that is not a ``str``, or ``constants`` that is not a collection of names, is
    a ``Failure`` too. A key of more than :data:`~policy.waiting.expr.MAX_NODES`
    nodes is refused at the token where the parser has read too many:

    >>> str(parse_expression(" + ".join(["a"] * 12000)).failure())[:60]
    'line 1, column 40003: expression of more than 20000 nodes (a'
    """
    given: object = text  # typed str, yet any object may come (a Result never raises)
    if not isinstance(given, str):
        return Failure(PolicyError("", f"key text must be a str, not {shown(given)}"))
    names: object = constants
    if isinstance(names, str | bytes) or not isinstance(names, Collection):
        return Failure(
            PolicyError("", f"constants must be a collection of names, not {shown(constants)}")
        )
    try:
        parser = _Parser(text, constants)
    except Refused as refused:
        return Failure(refused.error)
    try:
        return Success(parser.whole())
    except Refused as refused:
        return Failure(refused.error)
    except TreeTooLarge:
        where = parser.peek()  # the token after the operand that made the tree too large
        return Failure(PolicyError("", TOO_LARGE, where.line, where.column))


def _number_text(value: float) -> str:
    magnitude = abs(value)
    text = str(int(magnitude)) if magnitude.is_integer() and magnitude < 1e16 else repr(magnitude)
    return "-" + text if math.copysign(1.0, value) < 0 else text


def _leaf_text(expr: Expr) -> str:
    match expr:
        case Num(value):
            return _number_text(value)
        case Bool(value):
            return "true" if value else "false"
        case Attr(name) | Const(name) | Var(name):
            return name
        case BudgetLeft(stage):
            return f"budget_left({stage})"
        case _:
            raise TypeError(f"not a leaf: {type(expr).__name__}")


def unparse(expr: Expr) -> str:
    """The text of ``expr``, with only the parentheses it needs; it parses back to ``expr``.

    Written in one pass with an explicit stack: a chain of any length prints
    without recursion, in time proportional to its length.

    >>> unparse(Binary("*", Binary("+", Num(1), Num(2)), Unary("-", Num(3))))
    '(1 + 2) * -(3)'
    >>> unparse(Cond(Var("now"), Num(-0.0), Cond(Bool(True), Num(0.5), Num(1e20))))
    'now ? -0 : true ? 0.5 : 1e+20'
    """
    require_expr("unparse", expr)
    out: list[str] = []
    pending: list[Expr | str] = [expr]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        operands: list[list[Expr | str]] = [
            ["(", child, ")"] if _parenthesized(item, index, child) else [child]
            for index, child in enumerate(children(item))
        ]
        parts: list[Expr | str]
        match item:
            case Unary(op, _):
                parts = [op, *operands[0]]
            case Binary(op, _, _):
                parts = [*operands[0], f" {op} ", *operands[1]]
            case Cond():
                parts = [*operands[0], " ? ", *operands[1], " : ", *operands[2]]
            case Call(function, _):
                parts = [f"{function}("]
                for index, operand in enumerate(operands):
                    parts += [", ", *operand] if index else operand
                parts.append(")")
            case _:
                out.append(_leaf_text(item))
                continue
        pending.extend(reversed(parts))
    return "".join(out)
