"""A queue policy: its keys, constants, declared attributes and key timing.

Build policies with :func:`make_policy` (or load them, see
:mod:`policy.waiting.document`): it applies every validation rule, so a policy
that exists never meets an undeclared or forbidden name when it is evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias

from pyrsistent import pmap
from pyrsistent.typing import PMap
from returns.result import Failure, Result, Success

from policy.waiting.errors import PolicyError
from policy.waiting.expr import Attr, BudgetLeft, Const, Expr, Var, is_name, walk
from policy.waiting.parse import MAX_DEPTH, depth, parse_expression, unparse
from policy.waiting.tree_json import finite_number

Timing: TypeAlias = Literal["selection", "enqueue"]
Visibility: TypeAlias = Literal["visible", "hidden"]

TIMINGS: Final[tuple[Timing, ...]] = ("selection", "enqueue")
VISIBILITIES: Final[tuple[Visibility, ...]] = ("visible", "hidden")

EMPTY_KEYS_MESSAGE: Final = (
    'a queue policy needs at least one key (for FIFO, leave "keys" out: no keys at all)'
)


@dataclass(frozen=True, slots=True)
class QueuePolicy:
    """How a waiting queue is ordered.

    ``keys`` empty means FIFO. ``constants`` are the ``let`` values,
    ``attributes`` the declared request attributes with their visibility, and
    ``timing`` says when keys are computed: at every ``selection`` or once at
    ``enqueue``. Build it with :func:`make_policy`, which validates.
    """

    keys: tuple[Expr, ...] = ()
    constants: PMap[str, float] = field(default_factory=pmap)
    attributes: PMap[str, Visibility] = field(default_factory=pmap)
    timing: Timing = "selection"

    @property
    def is_fifo(self) -> bool:
        """No keys: the front entry is always selected."""
        return not self.keys

    @property
    def attributes_read(self) -> frozenset[str]:
        """The attributes the keys read: every request must carry them.

        >>> make_policy(["a + min(b, 1)"]).unwrap().attributes_read == {"a", "b"}
        True
        """
        return frozenset(
            node.name for key in self.keys for node in walk(key) if isinstance(node, Attr)
        )


def _key_error(index: int, key: Expr, message: str) -> PolicyError:
    return PolicyError(f"keys[{index}]", f"{message} (in key `{unparse(key)}`)")


def _check_key(
    index: int,
    key: Expr,
    constants: Mapping[str, float],
    attributes: Mapping[str, Visibility],
    timing: Timing,
) -> PolicyError | None:
    if depth(key) > MAX_DEPTH:
        return PolicyError(f"keys[{index}]", f"expression nested deeper than {MAX_DEPTH} levels")
    for node in walk(key):
        match node:
            case Attr(name) if name not in attributes:
                return _key_error(
                    index,
                    key,
                    f"unknown name {name!r}:"
                    " not a declared attribute, constant or context variable",
                )
            case Attr(name) if attributes[name] == "hidden":
                return _key_error(
                    index,
                    key,
                    f"attribute {name!r} is hidden: keys may not read it"
                    " (store a prediction in a visible attribute instead)",
                )
            case Const(name) if name not in constants:
                return _key_error(index, key, f"unknown constant {name!r}: not declared with let")
            case Var("waited") if timing == "enqueue":
                return _key_error(
                    index, key, "'waited' cannot be read when keys are computed at enqueue"
                )
            case BudgetLeft(stage) if timing == "enqueue":
                return _key_error(
                    index,
                    key,
                    f"'budget_left({stage})' cannot be read when keys are computed at enqueue",
                )
            case _:
                pass
    return None


def _check_declarations(
    constants: Mapping[str, float], attributes: Mapping[str, str], timing: str
) -> PolicyError | None:
    for name, value in constants.items():
        if not isinstance(name, str) or not is_name(name):
            return PolicyError(f"let.{name}", f"{name!r} cannot name a constant")
        if finite_number(value) is None:
            return PolicyError(f"let.{name}", f"must be a finite number, not {value!r}")
    for name, visibility in attributes.items():
        if not isinstance(name, str) or not is_name(name):
            return PolicyError(f"attributes.{name}", f"{name!r} cannot name an attribute")
        if visibility not in VISIBILITIES:
            return PolicyError(
                f"attributes.{name}", f'must be "visible" or "hidden", not {visibility!r}'
            )
        if name in constants:
            return PolicyError(
                f"attributes.{name}", f"{name!r} is declared both as an attribute and a constant"
            )
    if timing not in TIMINGS:
        return PolicyError("timing", f'must be "selection" or "enqueue", not {timing!r}')
    return None


def make_policy(
    keys: Sequence[Expr | str] | None,
    *,
    constants: Mapping[str, float] | None = None,
    attributes: Mapping[str, Visibility] | None = None,
    timing: Timing = "selection",
) -> Result[QueuePolicy, PolicyError]:
    """A validated queue policy; ``keys=None`` is FIFO, key text is parsed.

    When ``attributes`` is None, every attribute the keys name is declared
    visible (convenient in code; documents always declare them).

    >>> make_policy(["waited"], timing="enqueue").failure().message
    "'waited' cannot be read when keys are computed at enqueue (in key `waited`)"
    >>> make_policy(["prompt"]).unwrap().attributes["prompt"]
    'visible'
    """
    constants = {} if constants is None else constants
    declared: Mapping[str, Visibility] = {} if attributes is None else attributes
    problem = _check_declarations(constants, declared, timing)
    if problem is not None:
        return Failure(problem)
    if keys is None:
        return Success(QueuePolicy((), pmap(constants), pmap(declared), timing))
    if isinstance(keys, str) or not keys:
        return Failure(PolicyError("keys", EMPTY_KEYS_MESSAGE))
    trees: list[Expr] = []
    for index, key in enumerate(keys):
        if isinstance(key, str):
            parsed = parse_expression(key, constants.keys())
            if isinstance(parsed, Failure):
                return Failure(parsed.failure().at(f"keys[{index}]"))
            trees.append(parsed.unwrap())
        else:
            trees.append(key)
    if attributes is None:
        declared = {
            node.name: "visible" for tree in trees for node in walk(tree) if isinstance(node, Attr)
        }
        problem = _check_declarations(constants, declared, timing)
        if problem is not None:
            return Failure(problem)
    for index, tree in enumerate(trees):
        problem = _check_key(index, tree, constants, declared, timing)
        if problem is not None:
            return Failure(problem)
    return Success(
        QueuePolicy(
            tuple(trees),
            pmap({name: float(value) for name, value in constants.items()}),
            pmap(declared),
            timing,
        )
    )
