"""Key expressions as immutable typed trees.

Every node is a frozen, slotted dataclass; an expression is one of the node
types in :data:`Expr`. Nodes check their own invariants when built, so any tree
that exists can be printed as text and read back (see :mod:`policy.waiting.parse`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

#: Words of the language itself: they cannot name attributes, constants or each other.
RESERVED_WORDS: Final = frozenset(
    {"true", "false", "serial", "now", "waited", "budget_left", "min", "max"}
)

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

ContextVariable: TypeAlias = Literal["serial", "now", "waited"]
UnaryOperator: TypeAlias = Literal["-", "!"]
BinaryOperator: TypeAlias = Literal[
    "+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!=", "&&", "||"
]
Extremum: TypeAlias = Literal["min", "max"]

CONTEXT_VARIABLES: Final[frozenset[str]] = frozenset({"serial", "now", "waited"})
UNARY_OPERATORS: Final[frozenset[str]] = frozenset({"-", "!"})
BINARY_OPERATORS: Final[frozenset[str]] = frozenset(
    {"+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!=", "&&", "||"}
)


def is_name(text: str) -> bool:
    """Whether ``text`` can name an attribute, a constant or a stage.

    >>> is_name("short_tokens"), is_name("waited"), is_name("2x")
    (True, False, False)
    """
    return bool(_NAME.match(text)) and text not in RESERVED_WORDS


def _require_name(kind: str, name: str) -> None:
    if not is_name(name):
        raise ValueError(f"{kind} {name!r} is not a usable name")


@dataclass(frozen=True, slots=True, eq=False)
class Num:
    """A finite number literal.

    Non-finite values are refused: no literal can spell them, and JSON cannot
    hold them; ``1/0`` and ``0/0`` compute them instead. Equality tells -0.0
    from 0.0, because ``1/x`` does.

    >>> Num(-0.0) == Num(0.0)
    False
    """

    value: float

    def __post_init__(self) -> None:
        if isinstance(self.value, bool) or not isinstance(self.value, int | float):
            raise TypeError(f"a number literal needs a float, not {self.value!r}")
        if not math.isfinite(self.value):
            raise ValueError(f"a number literal must be finite, not {self.value!r}")
        object.__setattr__(self, "value", float(self.value))

    def _identity(self) -> tuple[float, float]:
        return (self.value, math.copysign(1.0, self.value))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Num) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(("Num", self._identity()))


@dataclass(frozen=True, slots=True)
class Bool:
    """``true`` or ``false``: 1 or 0 when evaluated."""

    value: bool


@dataclass(frozen=True, slots=True)
class Attr:
    """A request attribute, read from the entry."""

    name: str

    def __post_init__(self) -> None:
        _require_name("attribute", self.name)


@dataclass(frozen=True, slots=True)
class Const:
    """A constant declared by the policy (``let``)."""

    name: str

    def __post_init__(self) -> None:
        _require_name("constant", self.name)


@dataclass(frozen=True, slots=True)
class Var:
    """A context variable: ``serial``, ``now`` or ``waited``."""

    name: ContextVariable

    def __post_init__(self) -> None:
        if self.name not in CONTEXT_VARIABLES:
            raise ValueError(f"{self.name!r} is not a context variable")


@dataclass(frozen=True, slots=True)
class BudgetLeft:
    """``budget_left(stage)``: tokens still free in the stage's current iteration."""

    stage: str

    def __post_init__(self) -> None:
        _require_name("stage", self.stage)


@dataclass(frozen=True, slots=True)
class Unary:
    """``-x`` or ``!x``."""

    op: UnaryOperator
    operand: Expr

    def __post_init__(self) -> None:
        if self.op not in UNARY_OPERATORS:
            raise ValueError(f"{self.op!r} is not a unary operator")


@dataclass(frozen=True, slots=True)
class Binary:
    """An arithmetic, comparison or logical operator applied to two operands."""

    op: BinaryOperator
    left: Expr
    right: Expr

    def __post_init__(self) -> None:
        if self.op not in BINARY_OPERATORS:
            raise ValueError(f"{self.op!r} is not a binary operator")


@dataclass(frozen=True, slots=True)
class Cond:
    """``test ? then : otherwise``."""

    test: Expr
    then: Expr
    otherwise: Expr


@dataclass(frozen=True, slots=True)
class Call:
    """``min(...)`` or ``max(...)`` over one or more arguments."""

    function: Extremum
    args: tuple[Expr, ...]

    def __post_init__(self) -> None:
        if self.function not in ("min", "max"):
            raise ValueError(f"{self.function!r} is not min or max")
        if not self.args:
            raise ValueError(f"{self.function} needs at least one argument")
        object.__setattr__(self, "args", tuple(self.args))


Expr: TypeAlias = Num | Bool | Attr | Const | Var | BudgetLeft | Unary | Binary | Cond | Call


def children(expr: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of ``expr``, left to right.

    >>> children(Binary("+", Num(1), Attr("prompt")))
    (Num(value=1.0), Attr(name='prompt'))
    """
    match expr:
        case Unary(_, operand):
            return (operand,)
        case Binary(_, left, right):
            return (left, right)
        case Cond(test, then, otherwise):
            return (test, then, otherwise)
        case Call(_, args):
            return args
        case _:
            return ()


def walk(expr: Expr) -> Iterator[Expr]:
    """Every node of ``expr``, parents before children, left to right.

    >>> [type(n).__name__ for n in walk(Unary("-", Var("now")))]
    ['Unary', 'Var']
    """
    pending = [expr]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(reversed(children(node)))
