"""The selection and admission checks under an implementer's own policies.

The kit's selection domain is the selection check's twelve policies over two
made-up attributes. An implementer checks its selection under its own policies
instead (vLLM's priority order, the Ascend lanes with aging and the clock:
``policy-kernel verify --against-command CMD --policy FILE``, repeatable). From
each policy document the kit derives a small domain that reaches the policy's
own decisions:

- **attribute values**, per attribute: 0, 1, 2, and for every number a key
  compares the attribute with (literals and ``let`` constants: ``prompt <=
  short_tokens``) the number and its neighbours (``c``, ``c + 1``, ``c - 1``,
  each number's own first), at most as many as keep a queue entry's choices at
  :data:`MOST_CELLS`, and NaN;
- **queues**: every queue of up to as many entries as keep the queues of one
  resumed prefix at :data:`MOST_QUEUES` (at most the bounds' one-key length),
  entry ``i`` enqueued at ``i`` with serial ``i``, every resumed prefix;
- **moments**: ``now`` the queue's length, and for the numbers a key compares
  ``waited`` or ``now`` with, ``c`` and ``c + 1`` (entries are enqueued at 0, 1,
  ..., so a ``waited >= c`` rule is seen on both sides), :data:`MOST_NOWS`
  values at most; every stage a key reads absent, and at 1 and the numbers a key
  compares it with (and their neighbours), :data:`MOST_NOWS` values at most.

The expected answers are the executable spec's, as everywhere in the kit.

>>> policy = own_policy("lanes", {"attributes": {"prompt": "visible", "urgent": "visible"},
...     "keys": ["urgent ? 0 : waited >= 3 ? 1 : prompt <= 128 ? 2 : 3"]})
>>> policy.attributes, policy.values["prompt"], policy.values["urgent"], policy.nows
(('prompt', 'urgent'), (0.0, 1.0, 2.0, 127.0, 128.0, 129.0, nan), (0.0, 1.0, 2.0, nan), (3.0, 4.0))
>>> own_policy("bad", {"keys": ["nope +"]})
Traceback (most recent call last):
...
ValueError: policy bad: keys[0]: ...
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from returns.result import Failure

from oracle.checks.convert import spec_policy
from oracle.conformance.wire import JSON, number_json
from oracle.spec import selection as spec_selection
from policy.text import cut
from policy.waiting import dump_policy, expr_to_json, load_policy

__all__ = [
    "MOST_CELLS",
    "MOST_ENTRY_VALUES",
    "MOST_NOWS",
    "MOST_QUEUES",
    "MOST_TREE_DEPTH",
    "OwnPolicy",
    "own_policy",
]

#: The most choices of one queue entry (attribute values to the power of attributes).
MOST_CELLS = 64
#: The most queues of one length bound and resumed prefix.
MOST_QUEUES = 4096
#: The most values of ``now`` per queue.
MOST_NOWS = 3
#: The most values of one queue entry (the product of each attribute's values): the
#: queues of one entry, all of which are checked, and built up front.
MOST_ENTRY_VALUES = 65_536
#: The deepest key tree taken: the executable spec, the kit's reference, reads a tree by
#: recursion (oracle/spec/expressions.py) and copies a policy's trees recursively, four
#: frames a level; a chain ``a + b + c + ...`` is one level per term.
MOST_TREE_DEPTH = 100


@dataclass(frozen=True, slots=True)
class OwnPolicy:
    """One implementer's policy and the domain derived from it (see the module)."""

    name: str
    document: Mapping[str, JSON]  # as given: the request's ``policy``
    key_trees: tuple[JSON, ...] | None  # every key as a JSON tree; None for FIFO
    spec: spec_selection.SpecPolicy
    attributes: tuple[str, ...]
    values: Mapping[str, tuple[float, ...]]  # each attribute's, NaN last
    nows: tuple[float, ...]
    stages: tuple[str, ...]
    stage_values: tuple[float, ...]  # budget left for every stage, besides absent


def _walk(tree: JSON) -> Iterator[Mapping[str, JSON]]:
    """Every node of ``tree``, each before its arguments, with a stack of its own: a
    chain ``a + b + c + ...`` of the 20,000 nodes a key may have is that deep."""
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            yield node
            pending.extend(reversed(node.get("args", ()) or ()))


def _depth(tree: JSON) -> int:
    """How many nodes deep ``tree`` is (a leaf is 1), without recursion."""
    deepest, pending = 0, [(tree, 1)]
    while pending:
        node, depth = pending.pop()
        deepest = max(deepest, depth)
        if isinstance(node, dict):
            pending.extend((argument, depth + 1) for argument in node.get("args", ()) or ())
    return deepest


_COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})
_TIME = "the clock"  # the name under which numbers compared with waited or now are kept


def _numbers_in(tree: JSON, constants: Mapping[str, float]) -> list[float]:
    found = []
    for node in _walk(tree):
        if "num" in node and isinstance(node["num"], int | float):
            found.append(float(node["num"]))
        elif "const" in node and node["const"] in constants:
            found.append(constants[str(node["const"])])
    return [n for n in found if math.isfinite(n)]


def _names_in(tree: JSON) -> set[str]:
    names = set()
    for node in _walk(tree):
        if "attr" in node:
            names.add(str(node["attr"]))
        elif node.get("var") in ("waited", "now"):
            names.add(_TIME)
        elif "budget_left" in node:
            names.add(_stage(str(node["budget_left"])))
    return names


def _stage(name: str) -> str:
    """The name under which numbers compared with ``budget_left(name)`` are kept."""
    return f"budget_left({name})"


def _compared(trees: Sequence[JSON], constants: Mapping[str, float]) -> dict[str, list[float]]:
    """For each attribute (and the clock), the numbers a comparison sets it against."""
    compared: dict[str, list[float]] = {}
    for tree in trees:
        for node in _walk(tree):
            arguments = node.get("args")
            if node.get("op") not in _COMPARISONS or not isinstance(arguments, list):
                continue
            left, right = arguments
            for one, other in ((left, right), (right, left)):
                for name in _names_in(one):
                    for number in _numbers_in(other, constants):
                        if number not in compared.setdefault(name, []):
                            compared[name].append(number)
    return compared


def _values(numbers: Sequence[float], most: int) -> tuple[float, ...]:
    """0, 1, 2, then each number, then each number + 1, then - 1: at most ``most``."""
    values = [0.0, 1.0, 2.0][:most]
    for shift in (0.0, 1.0, -1.0):
        for number in numbers:
            if len(values) < most and number + shift not in values:
                values.append(number + shift)
    return (*sorted(values), math.nan)


def _stage_values(stages: Sequence[str], compared: Mapping[str, list[float]]) -> tuple[float, ...]:
    """Budget left for every stage: each number a key compares a stage with and the
    one below it (both sides of ``>=``), then 1, :data:`MOST_NOWS` values at most."""
    values: list[float] = []
    for number in (n for stage in stages for n in compared.get(_stage(stage), ())):
        for near in (number, number - 1.0):
            if near not in values:
                values.append(near)
    if 1.0 not in values:
        values.append(1.0)
    return tuple(sorted(values[:MOST_NOWS]))


def own_policy(name: str, document: JSON) -> OwnPolicy:
    """``document`` (a parsed policy document) as a domain of the selection checks; a
    ``ValueError`` naming the policy when the kernel refuses the document."""
    if not isinstance(document, dict):
        raise ValueError(f"policy {cut(name, 80)}: a policy document is a JSON object")
    loaded = load_policy(document)
    if isinstance(loaded, Failure):
        raise ValueError(f"policy {cut(name, 80)}: {loaded.failure()}")
    policy = loaded.unwrap()
    trees = None if policy.is_fifo else tuple(expr_to_json(key) for key in policy.keys)
    for index, tree in enumerate(trees or ()):  # before the spec reads the trees
        depth = _depth(tree)
        if depth > MOST_TREE_DEPTH:
            raise ValueError(
                f"policy {cut(name, 80)}: keys[{index}] is a tree {depth:,} nodes deep (a chain"
                f" a + b + ... is one node per term); the kit's reference, the executable"
                f" spec, reads trees up to {MOST_TREE_DEPTH} deep"
            )
    attributes_named = dump_policy(policy).get("attributes", {})
    attributes = tuple(sorted(attributes_named)) if isinstance(attributes_named, dict) else ()
    per_attribute = max(2, round(MOST_CELLS ** (1 / max(len(attributes), 1))) - 1)  # + NaN
    entry_values = (per_attribute + 1) ** len(attributes)  # at most, counted before any is made
    if entry_values > MOST_ENTRY_VALUES:
        raise ValueError(
            f"policy {cut(name, 80)}: its {len(attributes):,} attributes make"
            f" {entry_values:,} values of one queue entry ({per_attribute + 1} each); the kit"
            f" checks at most {MOST_ENTRY_VALUES:,} (a policy of at most"
            f" {_most_attributes(per_attribute + 1)} attributes)"
        )
    spec = spec_policy(policy)
    compared = _compared(trees or (), spec.constants)
    nows: list[float] = []
    for shift in (0.0, 1.0):
        for number in compared.get(_TIME, ()):
            if number + shift > 0 and number + shift not in nows and len(nows) < MOST_NOWS - 1:
                nows.append(number + shift)
    stages = sorted(
        {
            str(node["budget_left"])
            for tree in trees or ()
            for node in _walk(tree)
            if "budget_left" in node
        }
    )
    return OwnPolicy(
        name=name,
        document=document,
        key_trees=trees,
        spec=spec,
        attributes=attributes,
        values={name: _values(compared.get(name, ()), per_attribute) for name in attributes},
        nows=tuple(sorted(nows)),  # and, per queue, the queue's length
        stages=tuple(stages),
        stage_values=_stage_values(stages, compared),
    )


def _most_attributes(values_each: int) -> int:
    """The most attributes of ``values_each`` values that keep an entry's values at
    :data:`MOST_ENTRY_VALUES`."""
    count = 0
    while values_each ** (count + 1) <= MOST_ENTRY_VALUES:
        count += 1
    return count


def longest_queue(policy: OwnPolicy, longest: int) -> int:
    """The longest queue checked under ``policy``: at most ``longest`` entries, and at
    most :data:`MOST_QUEUES` queues of that length."""
    cells = math.prod(len(values) for values in policy.values.values())
    length = 0
    while length < longest and cells ** (length + 1) <= MOST_QUEUES:
        length += 1
    return max(length, 1)


def describe(policies: Sequence[OwnPolicy], longest: int) -> dict[str, str]:
    """The bounds of the selection checks under ``policies``, in words."""
    shown = []
    for policy in policies:
        values = "; ".join(
            f"{name} {', '.join(f'{v:g}' for v in policy.values[name])}"
            for name in policy.attributes
        )
        shown.append(
            f"{cut(policy.name, 80)} ({values or 'no attributes'};"
            f" queues of 0..{longest_queue(policy, longest)} entries)"
        )
    return {
        "policies": "yours: " + "; ".join(shown),
        "resumed prefixes": "every one: 0..n entries resumed at the front",
        "moments": "entry i enqueued at i with serial i; now the queue's length and the"
        " numbers the keys compare waited or now with (and each + 1), at most 3; each stage"
        " a key reads absent, and at 1 and the numbers a key compares it with, at most 3",
    }


def _describe(labels: Sequence[str], resumed: int, name: str, now: float, fits: str) -> str:
    shown = f"queue [{', '.join(labels)}] ({resumed} resumed), policy {cut(name, 80)}, now {now:g}"
    return shown if not fits else f"{shown}, fits {fits}"


@dataclass(frozen=True, slots=True)
class OwnCase:
    """One selection question under an implementer's policy (the kit builds its Case)."""

    inputs: dict[str, JSON]
    queue: tuple[spec_selection.SpecEntry, ...]
    policy: OwnPolicy
    now: float
    budget_left: Mapping[str, float]
    size: int
    where: partial[str]
    every: tuple[str, ...]

    def described(self, fits: str) -> partial[str]:
        """The case's words with the entries that fit."""
        return partial(self.where.func, *self.where.args[:-1], fits)


def own_cases(policies: Sequence[OwnPolicy], longest: int) -> Iterator[OwnCase]:
    """Every queue and moment of the domain of each of ``policies``."""
    for policy in policies:
        cells = [
            dict(zip(policy.attributes, chosen, strict=True))
            for chosen in itertools.product(*(policy.values[name] for name in policy.attributes))
        ]
        labels = [", ".join(f"{name} {value:g}" for name, value in cell.items()) for cell in cells]
        budgets: list[dict[str, float]] = [{}]  # absent: every stage reads NaN
        if policy.stages:
            budgets += [dict.fromkeys(policy.stages, value) for value in policy.stage_values]
        for length in range(longest_queue(policy, longest) + 1):
            nows = sorted({float(length), *policy.nows})
            for chosen in itertools.product(range(len(cells)), repeat=length):
                listed: list[JSON] = [
                    {
                        "id": f"R{i}",
                        "attrs": {name: number_json(x) for name, x in cells[c].items()},
                        "serial": i,
                        "enqueued_at": i,
                        "resumed": False,
                    }
                    for i, c in enumerate(chosen)
                ]
                shown = [f"({labels[c]})" if labels[c] else "()" for c in chosen]
                for resumed in range(length + 1):
                    queue = tuple(
                        spec_selection.SpecEntry(f"R{i}", cells[c], float(i), float(i), i < resumed)
                        for i, c in enumerate(chosen)
                    )
                    written = [
                        {**entry, "resumed": i < resumed}  # type: ignore[dict-item]
                        for i, entry in enumerate(listed)
                    ]
                    for now, budget in itertools.product(nows, budgets):
                        yield OwnCase(
                            {
                                "policy": dict(policy.document),
                                "key_trees": None
                                if policy.key_trees is None
                                else list(policy.key_trees),
                                "queue": written,
                                "moment": {
                                    "now": number_json(now),
                                    "budget_left": {s: number_json(v) for s, v in budget.items()},
                                },
                            },
                            queue,
                            policy,
                            now,
                            budget,
                            length,
                            partial(_describe, shown, resumed, policy.name, now, ""),
                            tuple(f"R{i}" for i in range(length)),
                        )
