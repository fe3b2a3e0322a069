"""The JSON form of key expression trees.

Leaves are one-field objects, operators an ``op`` with its ``args``::

    {"num": 3}   {"bool": true}   {"attr": "prompt"}   {"const": "short_tokens"}
    {"var": "serial" | "now" | "waited"}   {"budget_left": "engine"}
    {"op": "-" | "!", "args": [x]}                  prefix operators
    {"op": "+", "args": [a, b]}                     any binary operator
    {"op": "?:", "args": [test, then, otherwise]}
    {"op": "min" | "max", "args": [x, ...]}         one or more

Trees are read and written with an explicit stack, not by recursion. A tree
is refused when its text form would nest deeper than the parser reads
(:data:`~policy.waiting.parse.MAX_DEPTH`); a long chain (``a + b + c ...``) is
deep as JSON but flat as text. JSON readers have their own nesting limits:
write long chains as text.

A tree given as Python objects may use one object in several places (a YAML
loader's anchors do), so the tree it spells can be exponentially larger than
the objects behind it. Before anything is built, :func:`expr_from_json` counts
the tree's nodes with each object counted once and its count reused
(memoized by identity: linear in the objects), and refuses a tree of more than
:data:`~policy.waiting.expr.MAX_NODES` nodes, or one that contains itself.
"""

from __future__ import annotations

from typing import Final, cast

from returns.result import Failure, Result, Success

from policy.json_text import JsonValue as JsonValue  # noqa: PLC0414 - re-exported (document.py)
from policy.json_text import element_path, member_path
from policy.text import quote
from policy.waiting.errors import PolicyError, Refused
from policy.waiting.expr import (
    BINARY_OPERATORS,
    CONTEXT_VARIABLES,
    MAX_NODES,
    TOO_LARGE,
    Attr,
    Binary,
    BinaryOperator,
    Bool,
    BudgetLeft,
    Call,
    Cond,
    Const,
    ContextVariable,
    Expr,
    Num,
    Unary,
    Var,
    children,
    is_name,
    require_expr,
)
from policy.waiting.numbers import finite_number, name_shown, shown
from policy.waiting.parse import TOO_DEEP, too_deep

_LEAVES: Final = ("num", "bool", "attr", "const", "var", "budget_left")


def _leaf_json(expr: Expr) -> dict[str, JsonValue]:
    match expr:
        case Num(value):
            return {"num": value}
        case Bool(value):
            return {"bool": value}
        case Attr(name):
            return {"attr": name}
        case Const(name):
            return {"const": name}
        case Var(name):
            return {"var": name}
        case BudgetLeft(stage):
            return {"budget_left": stage}
        case _:
            raise TypeError(f"not a leaf: {type(expr).__name__}")


def _operator_name(expr: Expr) -> str:
    match expr:
        case Unary(op, _) | Binary(op, _, _):
            return op
        case Cond():
            return "?:"
        case Call(function, _):
            return function
        case _:
            raise TypeError(f"not an operator: {type(expr).__name__}")


def expr_to_json(expr: Expr) -> dict[str, JsonValue]:
    """The JSON tree of ``expr`` (built without recursion: chains may be long).

    >>> expr_to_json(Binary("<=", Attr("prompt"), Const("short_tokens")))
    {'op': '<=', 'args': [{'attr': 'prompt'}, {'const': 'short_tokens'}]}
    """
    require_expr("expr_to_json", expr)
    built: list[dict[str, JsonValue]] = []
    pending: list[tuple[Expr, bool]] = [(expr, False)]
    while pending:
        node, ready = pending.pop()
        kids = children(node)
        if not kids:
            built.append(_leaf_json(node))
        elif not ready:
            pending.append((node, True))
            pending.extend((child, False) for child in reversed(kids))
        else:
            args = built[len(built) - len(kids) :]
            del built[len(built) - len(kids) :]
            built.append({"op": _operator_name(node), "args": args})
    return built[0]


def _field(path: str, name: str) -> str:
    # A name as shown in a refusal (already quoted by name_shown), never quoted again:
    # member_path would quote it as a JSON key; the fixed field names use member_path.
    return f"{path}.{name}" if path else name


def _name(value: JsonValue, path: str, what: str) -> str:
    if not isinstance(value, str) or not is_name(value):
        raise Refused(PolicyError(path, f"{shown(value)} cannot name {what}"))
    return value


_SHAPE: Final = f"a node is one of {', '.join(_LEAVES)} alone, or op with args"


def _leaf(value: JsonValue, path: str) -> Expr | None:
    """The leaf ``value`` is, None for an operator node; refuses anything else."""
    if not isinstance(value, dict):
        raise Refused(PolicyError(path, "an expression tree node must be a JSON object"))
    fields = set(value)
    leaf = [name for name in _LEAVES if name in fields]
    if leaf and fields == {leaf[0]}:
        kind, item, where = leaf[0], value[leaf[0]], member_path(path, leaf[0])
        match kind:
            case "num":
                number = finite_number(item)
                if number is None:
                    raise Refused(PolicyError(where, f"must be a finite number, not {shown(item)}"))
                return Num(number)
            case "bool":
                if not isinstance(item, bool):
                    raise Refused(PolicyError(where, f"must be true or false, not {shown(item)}"))
                return Bool(item)
            case "attr":
                return Attr(_name(item, where, "an attribute"))
            case "const":
                return Const(_name(item, where, "a constant"))
            case "budget_left":
                return BudgetLeft(_name(item, where, "a stage"))
            case _:
                if not isinstance(item, str) or item not in CONTEXT_VARIABLES:
                    raise Refused(
                        PolicyError(
                            where, f'must be "serial", "now" or "waited", not {shown(item)}'
                        )
                    )
                return Var(cast(ContextVariable, item))
    if fields != {"op", "args"}:
        unknown = sorted(name_shown(name) for name in fields - {*_LEAVES, "op", "args"})
        if unknown:
            raise Refused(PolicyError(_field(path, unknown[0]), f"unknown field: {_SHAPE}"))
        listed = sorted(name_shown(name) for name in fields)
        raise Refused(PolicyError(path, f"fields {listed} do not fit: {_SHAPE}"))
    op, raw_args = value["op"], value["args"]
    if not isinstance(op, str):
        raise Refused(
            PolicyError(member_path(path, "op"), f"must be an operator name, not {shown(op)}")
        )
    if not isinstance(raw_args, list):
        raise Refused(PolicyError(member_path(path, "args"), "must be a list of expression trees"))
    return None


def _operator(op: str, args: list[Expr], path: str) -> Expr:
    arity = len(args)
    if op in ("-", "!") and arity == 1:
        return Unary("-" if op == "-" else "!", args[0])
    if op in BINARY_OPERATORS and arity == 2:
        return Binary(cast(BinaryOperator, op), args[0], args[1])
    if op == "?:" and arity == 3:
        return Cond(args[0], args[1], args[2])
    if op in ("min", "max") and arity >= 1:
        return Call("min" if op == "min" else "max", tuple(args))
    if op in BINARY_OPERATORS or op in ("!", "?:", "min", "max"):
        raise Refused(
            PolicyError(
                member_path(path, "args"), f"wrong number of arguments ({arity}) for {quote(op)}"
            )
        )
    raise Refused(PolicyError(member_path(path, "op"), f"unknown operator {shown(op)}"))


def _arguments(value: JsonValue) -> list[JsonValue] | None:
    """The arguments of an operator object, None for anything else."""
    if isinstance(value, dict):
        args = value.get("args")
        if isinstance(args, list):
            return args
    return None


def _check_size(root: JsonValue, root_path: str) -> None:
    """Refuse a tree of more than MAX_NODES nodes, or one that contains itself, in
    time linear in its distinct objects: each object's count is computed once (by
    ``id``; ``root`` keeps every object alive meanwhile) and reused wherever the
    object appears again. Shapes are not checked here (:func:`_tree` does): an
    object that is not an operator counts as one node."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # operator objects whose arguments are being counted
    pending: list[tuple[JsonValue, str, bool]] = [(root, root_path, False)]
    while pending:
        value, path, ready = pending.pop()
        args = _arguments(value)
        if args is None:
            continue  # one node, counted by its parent
        key = id(value)
        if ready:
            open_nodes.discard(key)
            size = 1 + sum(sizes.get(id(arg), 1) for arg in args)
            if size > MAX_NODES:
                raise Refused(PolicyError(path, TOO_LARGE))
            sizes[key] = size
        elif key in open_nodes:
            raise Refused(PolicyError(path, "an expression tree cannot contain itself"))
        elif key not in sizes:
            open_nodes.add(key)
            pending.append((value, path, True))
            arguments = member_path(path, "args")
            pending.extend(
                (arg, element_path(arguments, index), False)
                for index, arg in reversed(list(enumerate(args)))
                if id(arg) not in sizes
            )


def _tree(root: JsonValue, root_path: str) -> tuple[Expr, dict[int, str]]:
    """The tree ``root`` spells, and the JSON path of each of its nodes (by ``id``).

    Nodes are checked in the order a recursive reader would check them (the
    arguments of an operator, left to right, before the operator itself), but
    with an explicit stack: a long chain is as deep as it is long. ``root`` has
    passed :func:`_check_size`, so this builds at most MAX_NODES nodes.
    """
    built: list[Expr] = []
    paths: dict[int, str] = {}
    pending: list[tuple[JsonValue, str, bool]] = [(root, root_path, False)]
    while pending:
        value, path, ready = pending.pop()
        if ready:
            count = len(value["args"])
            args = built[len(built) - count :]
            del built[len(built) - count :]
            node = _operator(value["op"], args, path)
        else:
            leaf = _leaf(value, path)
            if leaf is None:
                pending.append((value, path, True))
                arguments = member_path(path, "args")
                pending.extend(
                    (arg, element_path(arguments, index), False)
                    for index, arg in reversed(list(enumerate(value["args"])))
                )
                continue
            node = leaf
        built.append(node)
        paths[id(node)] = path
    return built[0], paths


def expr_from_json(value: JsonValue, path: str = "") -> Result[Expr, PolicyError]:
    """Read a JSON expression tree; errors carry the JSON path of the bad node.

    A tree nested deeper than the text form allows (see
    :func:`~policy.waiting.parse.nesting`) is refused at the first node too deep.

    >>> expr_from_json({"op": "max", "args": [{"var": "now"}, {"num": 2}]}).unwrap()
    Call(function='max', args=(Var(name='now'), Num(value=2.0)))
    >>> str(expr_from_json({"op": "+", "args": [{"num": 1}]}, "keys[0]").failure())
    "keys[0].args: wrong number of arguments (1) for '+'"

    A tree of more than :data:`~policy.waiting.expr.MAX_NODES` nodes, counting a
    shared object each time it is used, is refused at the first node too large:

    >>> tree = {"attr": "a"}
    >>> for _ in range(30):
    ...     tree = {"op": "+", "args": [tree, tree]}
    >>> str(expr_from_json(tree, "keys[0]").failure())  # doctest: +ELLIPSIS
    'keys[0].args[0]...args[0]: expression of more than 20000 nodes (a sub-tree used ...'
    """
    try:
        _check_size(value, path)
        tree, paths = _tree(value, path)
    except Refused as refused:
        return Failure(refused.error)
    deep = too_deep(tree)
    if deep is not None:
        return Failure(PolicyError(paths[id(deep)], TOO_DEEP))
    return Success(tree)
