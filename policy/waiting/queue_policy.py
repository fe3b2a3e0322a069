"""A queue policy: its keys, constants, declared attributes and key timing.

Build policies with :func:`make_policy` (or load them, see
:mod:`policy.waiting.document`): it applies every validation rule, so a policy
it returns never meets an undeclared or forbidden name when it is evaluated.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias, cast

from pyrsistent import pmap
from pyrsistent.typing import PMap
from returns.result import Failure, Result, Success

from policy.text import cut, quote
from policy.waiting.errors import PolicyError
from policy.waiting.expr import (
    MAX_NODES,
    Attr,
    BudgetLeft,
    Const,
    Expr,
    Var,
    is_expr,
    is_name,
    walk,
)
from policy.waiting.modes import TIMINGS, VISIBILITIES, Timing, Visibility
from policy.waiting.numbers import as_float, finite_number, name_shown, shown
from policy.waiting.parse import TOO_DEEP, parse_expression, too_deep, unparse

#: Most constants (``let``) a policy declares, and most attributes: each entry of a
#: waiting queue stores one value per attribute, so memory is attributes x entries.
MAX_NAMES: Final = 1_000

#: The refusal of a policy whose keys have more than MAX_NODES nodes together.
KEYS_TOO_LARGE: Final = (
    f"the keys together have more than {MAX_NODES} nodes (counted as for one key:"
    " a sub-tree used more than once counts each time it is used)"
)

#: Reads ``keys[index]`` into a tree, given the names of the policy's constants.
KeyReader: TypeAlias = Callable[[int, object, Collection[str]], Result[Expr, PolicyError]]


@dataclass(frozen=True, slots=True)
class QueuePolicy:
    """How a waiting queue is ordered.

    ``keys`` empty means FIFO. ``constants`` are the ``let`` values,
    ``attributes`` the declared request attributes with their visibility, and
    ``timing`` says when keys are computed: at every ``selection`` or once at
    ``enqueue``. ``attributes_read``, derived from the keys, names the attributes
    every request must carry:

    >>> policy = make_policy(["a + min(b, 1)"], attributes=["a", "b", "c"]).unwrap()
    >>> policy.attributes_read == {"a", "b"}
    True

    Build it with :func:`make_policy` or :func:`~policy.waiting.document.load_policy`,
    which validate. Calling ``QueuePolicy(...)`` directly checks nothing: such a
    policy may read undeclared or hidden names, or ``waited`` at enqueue (a name
    it cannot find reads as NaN; selection still never raises).
    """

    keys: tuple[Expr, ...] = ()
    constants: PMap[str, float] = field(default_factory=pmap)
    attributes: PMap[str, Visibility] = field(default_factory=pmap)
    timing: Timing = "selection"
    #: Derived from ``keys`` once, at construction: the queue checks on every
    #: request that it carries these.
    attributes_read: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        read = frozenset(
            node.name for key in self.keys for node in walk(key) if isinstance(node, Attr)
        )
        object.__setattr__(self, "attributes_read", read)

    @property
    def is_fifo(self) -> bool:
        """No keys: the front entry is always selected."""
        return not self.keys


#: Longest key text quoted in an error message.
_QUOTED_LIMIT: Final = 200


def _in_key(key: Expr, constants: Mapping[str, float]) -> str:
    """`` (in key `text`)`` when the text reads back as ``key``, else nothing.

    A tree may read an attribute named like a constant, or a constant that is
    not declared: as text, that name would mean the other thing.
    """
    for node in walk(key):
        if (isinstance(node, Attr) and node.name in constants) or (
            isinstance(node, Const) and node.name not in constants
        ):
            return ""
    return f" (in key `{cut(unparse(key), _QUOTED_LIMIT)}`)"


def _key_error(index: int, key: Expr, constants: Mapping[str, float], message: str) -> PolicyError:
    return PolicyError(f"keys[{index}]", message + _in_key(key, constants))


def _check_key(
    index: int,
    key: Expr,
    constants: Mapping[str, float],
    attributes: Mapping[str, Visibility],
    timing: Timing,
) -> PolicyError | None:
    if too_deep(key) is not None:
        return PolicyError(f"keys[{index}]", TOO_DEEP)
    for node in walk(key):
        match node:
            case Attr(name) if name in constants:
                return _key_error(
                    index,
                    key,
                    constants,
                    f"{quote(name)} is a policy constant (let), not an attribute:"
                    f' read it with {{"const": {quote(name, write=json.dumps)}}}',
                )
            case Attr(name) if name not in attributes:
                return _key_error(
                    index,
                    key,
                    constants,
                    f"unknown name {quote(name)}:"
                    " not a declared attribute, constant or context variable",
                )
            case Attr(name) if attributes[name] == "hidden":
                return _key_error(
                    index,
                    key,
                    constants,
                    f"attribute {quote(name)} is hidden: keys may not read it"
                    " (store a prediction in a visible attribute instead)",
                )
            case Const(name) if name in attributes:
                return _key_error(
                    index,
                    key,
                    constants,
                    f"{quote(name)} is an attribute, not a policy constant (let):"
                    f' read it with {{"attr": {quote(name, write=json.dumps)}}}',
                )
            case Const(name) if name not in constants:
                return _key_error(
                    index, key, constants, f"unknown constant {quote(name)}: not declared with let"
                )
            case Var("waited") if timing == "enqueue":
                return _key_error(
                    index,
                    key,
                    constants,
                    "'waited' cannot be read when keys are computed at enqueue",
                )
            case BudgetLeft(stage) if timing == "enqueue":
                return _key_error(
                    index,
                    key,
                    constants,
                    f"{quote(f'budget_left({stage})')} cannot be read"
                    " when keys are computed at enqueue",
                )
            case _:
                pass
    return None


def _check_declarations(
    constants: Mapping[Any, object], attributes: Mapping[Any, object], timing: object
) -> PolicyError | None:
    for name, value in constants.items():
        where = f"let.{name_shown(name)}"
        if not isinstance(name, str) or not is_name(name):
            return PolicyError(where, f"{shown(name)} cannot name a constant")
        if finite_number(value) is None:
            return PolicyError(where, f"must be a finite number, not {shown(value)}")
    for name, visibility in attributes.items():
        where = f"attributes.{name_shown(name)}"
        if not isinstance(name, str) or not is_name(name):
            return PolicyError(where, f"{shown(name)} cannot name an attribute")
        if visibility not in VISIBILITIES:
            return PolicyError(where, f'must be "visible" or "hidden", not {shown(visibility)}')
        if name in constants:
            both = f"{quote(name)} is declared both as an attribute and a constant"
            return PolicyError(where, both)
    if timing not in TIMINGS:
        return PolicyError("timing", f'must be "selection" or "enqueue", not {shown(timing)}')
    return None


def _too_many_names(where: str, count: int, what: str) -> PolicyError | None:
    """The one rule of :data:`MAX_NAMES`, checked on the count alone: before any
    per-member work, so a map of 200,000 members is refused at once."""
    if count > MAX_NAMES:
        return PolicyError(where, f"{count} {what}: a policy declares at most {MAX_NAMES}")
    return None


def _declared(
    attributes: Mapping[str, Visibility] | Collection[str] | None,
) -> Result[Mapping[Any, object], PolicyError]:
    if attributes is None:
        return Success({})
    if isinstance(attributes, str) or not isinstance(attributes, Collection):
        return Failure(
            PolicyError(
                "attributes",
                f"must map names to visibility, or list the visible names, not {shown(attributes)}",
            )
        )
    too_many = _too_many_names("attributes", len(attributes), "attributes")
    if too_many is not None:
        return Failure(too_many)
    if isinstance(attributes, Mapping):
        return Success(attributes)
    listed: Collection[object] = attributes
    for name in listed:
        if not isinstance(name, str):  # and so hashable: dict.fromkeys may not raise
            return Failure(PolicyError("attributes", f"{shown(name)} cannot name an attribute"))
    return Success(dict.fromkeys(attributes, "visible"))


def read_key(index: int, key: object, constants: Collection[str]) -> Result[Expr, PolicyError]:
    """``keys[index]`` for :func:`make_policy`: text, parsed, or a tree (Expr)."""
    if isinstance(key, str):
        parsed = parse_expression(key, constants)
        if isinstance(parsed, Failure):
            return Failure(parsed.failure().at(f"keys[{index}]"))
        return parsed
    if is_expr(key):
        return Success(cast(Expr, key))
    return Failure(
        PolicyError(
            f"keys[{index}]", f"a key must be expression text or a tree (Expr), not {shown(key)}"
        )
    )


def _add_nodes(used: int, index: int, key: Expr) -> Result[int, PolicyError]:
    """The nodes of ``keys[0..index]``, from those before it (``used``) and the size of
    ``key`` (known to the node: no walk), or the refusal of keys of more than
    :data:`~policy.waiting.expr.MAX_NODES` nodes together, at ``keys[index]``."""
    total = used + key.size
    if total > MAX_NODES:
        return Failure(PolicyError(f"keys[{index}]", KEYS_TOO_LARGE))
    return Success(total)


def make_policy(
    keys: Sequence[Expr | str] | None,
    *,
    constants: Mapping[str, float] | None = None,
    attributes: Mapping[str, Visibility] | Collection[str] | None = None,
    timing: Timing = "selection",
) -> Result[QueuePolicy, PolicyError]:
    """A validated queue policy; ``keys=None`` is FIFO, key text is parsed.

    Every attribute a key reads must be declared: ``attributes`` maps names to
    ``"visible"``/``"hidden"``, or simply lists the visible names.

    Sizes are bounded: at most :data:`MAX_NAMES` constants and as many
    attributes, and the keys together have at most
    :data:`~policy.waiting.expr.MAX_NODES` nodes, counted as for one key.

    >>> make_policy(["prompt"], attributes=["prompt"]).unwrap().attributes["prompt"]
    'visible'
    >>> make_policy(["prmpt + 1"], attributes=["prompt"]).failure().path
    'keys[0]'
    >>> make_policy(["prmpt + 1"], attributes=["prompt"]).failure().message[:22]
    "unknown name 'prmpt': "
    >>> make_policy(["waited"], timing="enqueue").failure().message
    "'waited' cannot be read when keys are computed at enqueue (in key `waited`)"
    >>> str(make_policy(["1"] * 20_001).failure())  # doctest: +ELLIPSIS
    'keys: the keys together have more than 20000 nodes (counted as for one key: ...)'
    """
    return build_policy(keys, constants, attributes, timing, read_key)


def build_policy(
    keys: Sequence[object] | None,
    constants: Mapping[str, float] | None,
    attributes: Mapping[str, Visibility] | Collection[str] | None,
    timing: Timing,
    read_key: KeyReader,
) -> Result[QueuePolicy, PolicyError]:
    """:func:`make_policy`, reading each key with ``read_key`` (the JSON document
    reads trees too): every rule of a policy is applied here, and only here."""
    given_constants: object = {} if constants is None else constants
    if not isinstance(given_constants, Mapping):
        return Failure(
            PolicyError("let", f"must map names to numbers, not {shown(given_constants)}")
        )
    too_many = _too_many_names("let", len(given_constants), "constants")
    if too_many is not None:
        return Failure(too_many)
    declared = _declared(attributes)
    if isinstance(declared, Failure):
        return Failure(declared.failure())
    problem = _check_declarations(given_constants, declared.unwrap(), timing)
    if problem is not None:
        return Failure(problem)
    values = {str(name): as_float(value) for name, value in given_constants.items()}
    visibility = {str(name): cast(Visibility, seen) for name, seen in declared.unwrap().items()}
    if keys is None:
        return Success(QueuePolicy((), pmap(values), pmap(visibility), timing))
    if isinstance(keys, str) or not isinstance(keys, Sequence):
        return Failure(
            PolicyError("keys", f"must be a list of keys (text or trees), not {shown(keys)}")
        )
    if not keys:
        return Failure(
            PolicyError(
                "keys",
                "a queue policy needs at least one key"
                ' (for FIFO, leave "keys" out: no keys at all)',
            )
        )
    if len(keys) > MAX_NODES:  # each key has a node at least: refused before any is read
        return Failure(PolicyError("keys", KEYS_TOO_LARGE))
    trees: list[Expr] = []
    nodes = 0
    for index, key in enumerate(keys):
        read = read_key(index, key, values.keys())
        if isinstance(read, Failure):
            return Failure(read.failure())
        tree = read.unwrap()
        counted = _add_nodes(nodes, index, tree)  # before any walk of the tree
        if isinstance(counted, Failure):
            return Failure(counted.failure())
        nodes = counted.unwrap()
        problem = _check_key(index, tree, values, visibility, timing)
        if problem is not None:
            return Failure(problem)
        trees.append(tree)
    return Success(QueuePolicy(tuple(trees), pmap(values), pmap(visibility), timing))
