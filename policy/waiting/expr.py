"""Key expressions as immutable typed trees.

Every node is a frozen, slotted dataclass; an expression is one of the node
types in :data:`Expr`. Nodes check their own invariants when built (a child
that is not a node is a ``TypeError``), so any tree that exists can be printed
as text and read back (see :mod:`policy.waiting.parse`), within the nesting
limit that :func:`policy.waiting.parse.nesting` measures.

Equality and ``repr`` of the operator nodes walk the tree with an explicit
stack, not by recursion: a chain of thousands of terms (``a + a + ... + a``) is
as deep as it is long, and must not reach Python's recursion limit. An operator
node's hash is made once, when it is built, from its own label and its
children's hashes (already made): a policy is hashed wherever it is memoised,
and walking its keys at every lookup would cost 28 µs for
``ascend_fcfs_lanes()`` against 0.5 µs so (``timeit`` of ``hash(policy)``).
String hashes differ between processes, so a pickled node is rebuilt by its
constructor, which makes its hash again.

Size is bounded where trees are built: every node knows its :attr:`size`, the
number of nodes of the tree it spells, and no node of more than
:data:`MAX_NODES` can be built (:class:`TreeTooLarge`). Python objects can share
a sub-tree (``x = a + a; y = x + x; ...``, or a YAML loader's anchors in a JSON
tree), so a tree's size can be exponential in the number of objects behind it,
and everything that walks it (evaluation, compiling, printing, equality) would
take that long: 30 shared levels would be 2**31 nodes. Counting as the
constructor does (each node adds its children's sizes, already known) costs one
addition per child, so the limit itself is checked in linear time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from typing import ClassVar, Final, Literal, TypeAlias, final

from policy.text import quote
from policy.waiting.numbers import as_float, is_number, shown

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


#: Most nodes a key may have, counted in the tree it spells: a sub-tree used twice
#: counts twice, since evaluation walks it twice. Text of up to about 10,000 terms
#: (``a + a + ...``) fits. The keys of one policy together have at most as many,
#: counted the same way (:func:`~policy.waiting.queue_policy.make_policy`).
MAX_NODES: Final = 20_000

TOO_LARGE: Final = (
    f"expression of more than {MAX_NODES} nodes"
    " (a sub-tree used more than once counts each time it is used)"
)


class TreeTooLarge(ValueError):
    """Building an operator node whose tree would have more than :data:`MAX_NODES` nodes.

    >>> tree = Attr("a")
    >>> for _ in range(30):  # doubling a shared sub-tree: refused at 2**15 - 1 nodes
    ...     tree = Binary("+", tree, tree)
    Traceback (most recent call last):
    ...
    policy.waiting.expr.TreeTooLarge: expression of more than 20000 nodes (a sub-tree used ...
    """


def is_name(text: str) -> bool:
    """Whether ``text`` can name an attribute, a constant or a stage.

    >>> is_name("short_tokens"), is_name("waited"), is_name("2x")
    (True, False, False)
    """
    return bool(_NAME.match(text)) and text not in RESERVED_WORDS


def _require_name(kind: str, name: str) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{kind} name must be text, not {shown(name)}")
    if not is_name(name):
        raise ValueError(f"{kind} {shown(name)} is not a usable name")


def _require_nodes(owner: str, node: Expr, nodes: tuple[object, ...]) -> None:
    """Refuse children that are not nodes; record ``node``'s size, refusing a tree
    of more than :data:`MAX_NODES` nodes, and its hash (the children's sizes and
    hashes are already known)."""
    size = 1
    for child in nodes:
        if not isinstance(child, _NODE_TYPES):
            raise TypeError(f"{owner} needs expression nodes, not {shown(child)}")
        size += child.size
    if size > MAX_NODES:
        raise TreeTooLarge(TOO_LARGE)
    object.__setattr__(node, "size", size)
    object.__setattr__(node, "_hash", hash((_label(node), *nodes)))


@final
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
    #: Nodes in the tree: a leaf is one.
    size: ClassVar[int] = 1

    def __post_init__(self) -> None:
        if isinstance(self.value, bool) or not is_number(self.value):
            raise TypeError(f"a number literal needs a float, not {shown(self.value)}")
        number = as_float(self.value)
        if not math.isfinite(number):
            raise ValueError(f"a number literal must be finite, not {shown(self.value)}")
        object.__setattr__(self, "value", number)

    def _identity(self) -> tuple[float, float]:
        return (self.value, math.copysign(1.0, self.value))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Num) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(("Num", self._identity()))


@final
@dataclass(frozen=True, slots=True)
class Bool:
    """``true`` or ``false``: 1 or 0 when evaluated."""

    value: bool
    size: ClassVar[int] = 1

    def __post_init__(self) -> None:
        if not isinstance(self.value, bool):
            raise TypeError(f"a boolean literal needs True or False, not {shown(self.value)}")


@final
@dataclass(frozen=True, slots=True)
class Attr:
    """A request attribute, read from the entry."""

    name: str
    size: ClassVar[int] = 1

    def __post_init__(self) -> None:
        _require_name("attribute", self.name)


@final
@dataclass(frozen=True, slots=True)
class Const:
    """A constant declared by the policy (``let``)."""

    name: str
    size: ClassVar[int] = 1

    def __post_init__(self) -> None:
        _require_name("constant", self.name)


@final
@dataclass(frozen=True, slots=True)
class Var:
    """A context variable: ``serial``, ``now`` or ``waited``."""

    name: ContextVariable
    size: ClassVar[int] = 1

    def __post_init__(self) -> None:
        if self.name not in CONTEXT_VARIABLES:
            raise ValueError(f"{quote(self.name)} is not a context variable")


@final
@dataclass(frozen=True, slots=True)
class BudgetLeft:
    """``budget_left(stage)``: tokens still free in the stage's current iteration."""

    stage: str
    size: ClassVar[int] = 1

    def __post_init__(self) -> None:
        _require_name("stage", self.stage)


class _Operator:
    """Equality, hash and ``repr`` of operator nodes, without recursion."""

    __slots__ = ()
    _hash: int  # made by the constructor (_require_nodes)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and same_tree(self, other)  # type: ignore[arg-type]

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        # rebuilt by the constructor: the hash is made again where it is used
        return type(self), tuple(getattr(self, f.name) for f in fields(self) if f.init)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return tree_repr(self)  # type: ignore[arg-type]


@final
@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Unary(_Operator):
    """``-x`` or ``!x``."""

    op: UnaryOperator
    operand: Expr
    #: Nodes in the tree this node spells (see :data:`MAX_NODES`).
    size: int = field(init=False, compare=False)
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.op not in UNARY_OPERATORS:
            raise ValueError(f"{shown(self.op)} is not a unary operator")
        _require_nodes(f"unary {self.op}", self, (self.operand,))


@final
@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Binary(_Operator):
    """An arithmetic, comparison or logical operator applied to two operands."""

    op: BinaryOperator
    left: Expr
    right: Expr
    size: int = field(init=False, compare=False)
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.op not in BINARY_OPERATORS:
            raise ValueError(f"{shown(self.op)} is not a binary operator")
        _require_nodes(f"operator {self.op}", self, (self.left, self.right))


@final
@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Cond(_Operator):
    """``test ? then : otherwise``."""

    test: Expr
    then: Expr
    otherwise: Expr
    size: int = field(init=False, compare=False)
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _require_nodes("a conditional", self, (self.test, self.then, self.otherwise))


@final
@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Call(_Operator):
    """``min(...)`` or ``max(...)`` over one or more arguments."""

    function: Extremum
    args: tuple[Expr, ...]
    size: int = field(init=False, compare=False)
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.function not in ("min", "max"):
            raise ValueError(f"{shown(self.function)} is not min or max")
        given: object = self.args
        if isinstance(given, str | bytes) or not isinstance(given, Iterable):
            raise TypeError(f"{self.function} needs a tuple of arguments, not {shown(given)}")
        object.__setattr__(self, "args", tuple(given))
        if not self.args:
            raise ValueError(f"{self.function} needs at least one argument")
        _require_nodes(self.function, self, self.args)


Expr: TypeAlias = Num | Bool | Attr | Const | Var | BudgetLeft | Unary | Binary | Cond | Call

_NODE_TYPES: Final = (Num, Bool, Attr, Const, Var, BudgetLeft, Unary, Binary, Cond, Call)


def is_expr(value: object) -> bool:
    """Whether ``value`` is an expression node (its children are nodes too, by construction).

    >>> is_expr(Num(1)), is_expr("1"), is_expr(None)
    (True, False, False)
    """
    return isinstance(value, _NODE_TYPES)


def require_expr(function: str, value: object) -> None:
    """The ``TypeError`` of a function of trees given something that is not a node.

    >>> require_expr("unparse", "a")
    Traceback (most recent call last):
    ...
    TypeError: unparse takes an expression node (Expr), not str
    """
    if not isinstance(value, _NODE_TYPES):
        raise TypeError(f"{function} takes an expression node (Expr), not {type(value).__name__}")


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


def _label(node: Expr) -> tuple[object, ...]:
    """``node`` without its children: a leaf itself, an operator its kind and arity."""
    match node:
        case Unary(op, _):
            return ("Unary", op)
        case Binary(op, _, _):
            return ("Binary", op)
        case Cond():
            return ("Cond",)
        case Call(function, args):
            return ("Call", function, len(args))
        case _:
            return (node,)


def same_tree(a: Expr, b: Expr) -> bool:
    """Structural equality (``a == b``), without recursion.

    >>> same_tree(Binary("+", Num(1), Attr("a")), Binary("+", Num(1), Attr("a")))
    True
    >>> same_tree(Unary("-", Num(0.0)), Unary("-", Num(-0.0)))
    False
    """
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if x is y:
            continue
        if _label(x) != _label(y):
            return False
        pending.extend(zip(children(x), children(y), strict=True))
    return True


def tree_repr(expr: Expr) -> str:
    """The ``repr`` of ``expr`` (the dataclass form), without recursion.

    >>> tree_repr(Call("min", (Unary("!", Var("now")),)))
    "Call(function='min', args=(Unary(op='!', operand=Var(name='now')),))"
    """
    out: list[str] = []
    pending: list[Expr | str] = [expr]
    while pending:
        item = pending.pop()
        parts: list[Expr | str]
        match item:
            case str():
                out.append(item)
                continue
            case Unary(op, operand):
                parts = [f"Unary(op={op!r}, operand=", operand, ")"]
            case Binary(op, left, right):
                parts = [f"Binary(op={op!r}, left=", left, ", right=", right, ")"]
            case Cond(test, then, otherwise):
                parts = ["Cond(test=", test, ", then=", then, ", otherwise=", otherwise, ")"]
            case Call(function, args):
                parts = [f"Call(function={function!r}, args=("]
                for index, arg in enumerate(args):
                    parts += [", ", arg] if index else [arg]
                parts.append(",))" if len(args) == 1 else "))")
            case _:
                out.append(repr(item))
                continue
        pending.extend(reversed(parts))
    return "".join(out)
