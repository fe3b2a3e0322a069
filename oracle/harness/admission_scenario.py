"""Admission scenario files: waiting requests, a queue policy and an engine."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from returns.result import Failure

from oracle.harness.fields import (
    SCENARIO_FIELDS,
    FieldError,
    Node,
    check_distinct_ids,
    check_total,
    check_work,
    read_description,
)
from oracle.harness.limits import (
    FLOAT,
    KEY_WORK,
    REQUESTS,
    SELECTION_WORK,
    STEP_ITERATIONS,
    STEP_WORK,
)
from policy.identity import RequestId
from policy.waiting import PolicyError, QueuePolicy, is_stage_name, load_policy, selection_path
from policy.waiting.fast import plan_of
from policy.waiting.numbers import shown

__all__ = [
    "KEY_STRINGS",
    "AdmissionExpect",
    "AdmissionScenario",
    "AttemptEngine",
    "AttemptRequest",
    "PoolEngine",
    "PoolRequest",
    "StepEngine",
    "StepRequest",
    "admission_attempts",
    "check_key_work",
    "entries_per_attempt",
    "key_json",
    "policy_nodes",
    "read_admission",
    "same_keys",
]

AttributeValue = float | bool


@dataclass(frozen=True, slots=True)
class PoolEngine:
    """A capacity pool: a request holds ``units`` of ``cap`` for its ``hold``."""

    cap: int


@dataclass(frozen=True, slots=True)
class StepEngine:
    """A continuous-batching stage (semantics: docs/harness.md, 'Step engine')."""

    budget: int  # tokens per iteration
    chunk: int  # the most prefill tokens one request takes per iteration
    iteration_cost: float  # seconds per iteration
    max_running: int
    blocks: int  # KV blocks in the pool
    block_size: int  # tokens per block
    stage: str = "engine"  # the name keys use in budget_left(...)
    horizon: float | None = None  # no iteration starts at or after this time

    @property
    def kv_tokens(self) -> int:
        """Tokens the KV pool holds."""
        return self.blocks * self.block_size

    def iterations_as_oldest(self, request: StepRequest) -> int:
        """The most iterations ``request`` can spend as the oldest resident.

        The oldest resident is served first, with the whole budget, and is never
        preempted (victims come from the newest end, and alone it fits), so each
        of its iterations keeps its progress: a prefill chunk of ``min(chunk,
        budget)`` tokens (the rest of its prompt at the end), then one decode per
        output token after the first. Every iteration has an oldest resident, so
        the sum over requests bounds every run (docs/harness.md, "Limits").

        >>> StepEngine(4, 8, 1.0, 2, 8, 2).iterations_as_oldest(
        ...     StepRequest("r", 0, 0.0, {}, prompt=9, out=3))
        5
        """
        return -(-request.prompt // min(self.chunk, self.budget)) + request.out - 1


@dataclass(frozen=True, slots=True)
class AttemptEngine:
    """One admission attempt on a given queue (docs/harness.md, 'Attempt engine')."""

    now: float
    budget_left: Mapping[str, float]  # stage -> tokens left; a missing stage reads NaN
    fits: frozenset[RequestId]  # a selected request fits iff it is listed


@dataclass(frozen=True, slots=True)
class PoolRequest:
    id: str | int
    serial: int
    enqueue: float
    attrs: Mapping[str, AttributeValue]
    units: int
    hold: float


@dataclass(frozen=True, slots=True)
class StepRequest:
    id: str | int
    serial: int
    enqueue: float
    attrs: Mapping[str, AttributeValue]  # prompt and out included (keys may not read out)
    prompt: int
    out: int

    @property
    def kv_tokens_at_end(self) -> int:
        """KV tokens held while producing the last output token: the prompt and every
        output token but the last, which is never fed back (docs/harness.md)."""
        return self.prompt + self.out - 1


@dataclass(frozen=True, slots=True)
class AttemptRequest:
    """A request already waiting, in queue order; resumed requests form a prefix."""

    id: str | int
    serial: int
    enqueue: float
    attrs: Mapping[str, AttributeValue]
    resumed: bool = False


@dataclass(frozen=True, slots=True)
class AdmissionExpect:
    selected: tuple[str | int, ...] | None
    admitted_at: tuple[float, ...] | None
    keys: tuple[float, ...] | None = None  # the attempt engine only


@dataclass(frozen=True, slots=True)
class AdmissionScenario:
    name: str
    description: str
    engine: PoolEngine | StepEngine | AttemptEngine
    policy: QueuePolicy
    requests: tuple[PoolRequest | StepRequest | AttemptRequest, ...]
    expect: AdmissionExpect | None


_STEP_FIELDS = {"budget", "chunk", "iteration_cost", "max_running", "blocks", "block_size"}


_ENGINES = ("pool", "step", "attempt")


def read_admission(doc: Node) -> AdmissionScenario:
    """An admission scenario from its parsed document (raises FieldError)."""
    doc.object({"kind", "name", "engine", "policy", "requests"}, SCENARIO_FIELDS | set(_ENGINES))
    engine_name = doc.child("engine")
    if engine_name.value not in _ENGINES:
        raise engine_name.fail('must be "pool" or "step", or "attempt" (one admission attempt)')
    for other in _ENGINES:
        if other != engine_name.value and doc.has(other):
            raise doc.child(other).fail(f'belongs to engine "{other}"')
    engine: PoolEngine | StepEngine | AttemptEngine
    if engine_name.value == "pool":
        engine = _read_pool(doc.child("pool"))
    elif engine_name.value == "step":
        engine = _read_step(doc.child("step"))
    else:
        engine = _read_attempt_settings(doc.child("attempt"))
    policy = _read_policy(doc.child("policy"), hidden_out=isinstance(engine, StepEngine))
    requests_node = doc.child("requests")
    requests: tuple[PoolRequest | StepRequest | AttemptRequest, ...]
    if isinstance(engine, PoolEngine):
        requests = tuple(
            _read_pool_request(node, index, engine)
            for index, node in enumerate(requests_node.items(REQUESTS))
        )
    elif isinstance(engine, StepEngine):
        step_requests = tuple(
            _read_step_request(node, index, engine)
            for index, node in enumerate(requests_node.items(REQUESTS))
        )
        _check_step_work(engine, step_requests, requests_node)
        requests = step_requests
    else:
        requests = _read_attempt_requests(requests_node)
    if not requests and not isinstance(engine, AttemptEngine):
        raise requests_node.fail("must list at least one request")
    check_distinct_ids([request.id for request in requests], requests_node)
    check_key_work(policy, engine, requests, doc.child("policy"))
    for index, request in enumerate(requests):
        missing = sorted(policy.attributes_read - request.attrs.keys())
        if missing:
            raise (
                requests_node.child(index)
                .child("attrs")
                .fail(f"lacks attribute {shown(missing[0])}, which the policy's keys read")
            )
    ids = {r.id for r in requests}
    if isinstance(engine, AttemptEngine):
        fits = doc.child("attempt").child("fits")
        for index, request in enumerate(fits.value if isinstance(fits.value, list) else []):
            if request not in ids:
                raise fits.child(index).fail(f"names no request: {shown(request)}")
    expect_node = doc.optional("expect")
    return AdmissionScenario(
        name=doc.child("name").name(),
        description=read_description(doc),
        engine=engine,
        policy=policy,
        requests=requests,
        expect=None
        if expect_node is None
        else _read_expect(expect_node, ids, attempt=isinstance(engine, AttemptEngine)),
    )


def _read_policy(node: Node, *, hidden_out: bool) -> QueuePolicy:
    document = node.value
    if hidden_out and isinstance(document, dict):
        # A step request's true output length is unknown to a scheduler: the
        # engine declares ``out`` hidden, and the kernel refuses keys reading it.
        declared = node.child("attributes").child("out")
        if declared.value not in (None, "hidden"):
            raise declared.fail(
                "a step scenario's true output length is hidden from keys; "
                "store a prediction in another attribute"
            )
        attributes = document.get("attributes")
        if attributes is None or isinstance(attributes, dict):
            document = {**document, "attributes": {**(attributes or {}), "out": "hidden"}}
    loaded = load_policy(document)
    if isinstance(loaded, Failure):
        error: PolicyError = loaded.failure().within(node.path)
        raise FieldError(error.path, str(PolicyError("", error.message, error.line, error.column)))
    return loaded.unwrap()


def policy_nodes(policy: QueuePolicy) -> int:
    """The nodes of a policy's keys, each counted in the tree it spells (the kernel's
    ``size`` of each key: a sub-tree used twice counts twice, as evaluation walks it
    twice). FIFO has none.

    >>> from policy.waiting import make_policy
    >>> policy_nodes(make_policy(["waited", "-prompt"], attributes=["prompt"]).unwrap())
    3
    """
    return sum(key.size for key in policy.keys)


def admission_attempts(
    engine: PoolEngine | StepEngine | AttemptEngine,
    requests: tuple[PoolRequest | StepRequest | AttemptRequest, ...],
) -> int:
    """The most admission attempts (selections) a replay of these requests makes.

    - attempt engine: one;
    - pool: ``3 x requests``: one admission per request, and at each event time
      (an arrival or a release, at most two per request) one attempt that admits
      nothing;
    - step engine: ``iteration bound x (1 + min(max_running, budget, requests))``:
      in each iteration every admission takes a seat, a token and a waiting entry,
      and one attempt more may admit nothing.

    >>> admission_attempts(PoolEngine(1), (PoolRequest("a", 0, 0.0, {}, 1, 1.0),) * 2)
    6
    """
    count = len(requests)
    if isinstance(engine, AttemptEngine):
        return 1
    if isinstance(engine, PoolEngine):
        return 3 * count
    iterations = sum(
        engine.iterations_as_oldest(request)
        for request in requests
        if isinstance(request, StepRequest)
    )
    return iterations * (1 + min(engine.max_running, engine.budget, count))


def entries_per_attempt(
    policy: QueuePolicy, engine: PoolEngine | StepEngine | AttemptEngine, count: int
) -> int:
    """The most waiting entries whose keys one admission attempt evaluates, with
    ``count`` requests: every one on the ``scan`` path; one head per class on the
    ``lanes`` path (the pool and the step engine queue arrivals in time order, so
    each class's head is its oldest entry); one on the ``static`` path (the entry
    selected, or the one a preemption re-queues); none for FIFO. The attempt
    engine's queue is listed in any order: its one attempt may evaluate every entry.
    """
    if not policy.keys:
        return 0
    path = selection_path(policy)
    if isinstance(engine, AttemptEngine) or path == "scan":
        return count
    lanes = plan_of(policy).lanes
    if path == "lanes" and lanes is not None:
        return min(lanes.classes_bound, count)
    return 1


def check_key_work(
    policy: QueuePolicy,
    engine: PoolEngine | StepEngine | AttemptEngine,
    requests: tuple[PoolRequest | StepRequest | AttemptRequest, ...],
    node: Node,
) -> None:
    """Refuse, at the policy's ``node``, a scenario whose key evaluations exceed the
    key work bound (requests x policy nodes) or the selection work bound (admission
    attempts x entries an attempt evaluates x policy nodes): docs/harness.md, "Limits"."""
    nodes = policy_nodes(policy)
    count = len(requests)
    check_work(node, count * nodes, f"{count} requests x {nodes} key nodes", KEY_WORK)
    attempts = admission_attempts(engine, requests)
    entries = entries_per_attempt(policy, engine, count)
    check_work(
        node,
        attempts * entries * nodes,
        f"{attempts} admission attempts x {entries} entries each x {nodes} key nodes",
        SELECTION_WORK,
    )


def _read_pool(node: Node) -> PoolEngine:
    node.object({"cap"}, set())
    return PoolEngine(cap=node.child("cap").integer(1))


def _check_step_work(engine: StepEngine, requests: tuple[StepRequest, ...], node: Node) -> None:
    """Refuse a step scenario whose iteration bound or work bound exceeds its limit
    (docs/harness.md, "Limits"): the engine's run is bounded by these, never longer."""
    bounds = [engine.iterations_as_oldest(request) for request in requests]
    check_total(((node.child(i), bound) for i, bound in enumerate(bounds)), STEP_ITERATIONS)
    count = len(requests)
    check_total(((node.child(i), bound * count) for i, bound in enumerate(bounds)), STEP_WORK)


def _read_step(node: Node) -> StepEngine:
    node.object(_STEP_FIELDS, {"stage", "horizon"})
    stage = node.optional("stage")
    horizon = node.optional("horizon")
    cost = node.child("iteration_cost").number()
    if cost <= 0:
        raise node.child("iteration_cost").fail("must be a number > 0")
    return StepEngine(
        budget=node.child("budget").integer(1),
        chunk=node.child("chunk").integer(1),
        iteration_cost=cost,
        max_running=node.child("max_running").integer(1),
        blocks=node.child("blocks").integer(1),
        block_size=node.child("block_size").integer(1),
        stage="engine" if stage is None else _stage_name(stage),
        horizon=None if horizon is None else horizon.number(),
    )


def _read_attempt_settings(node: Node) -> AttemptEngine:
    node.object({"now"}, {"budget_left", "fits"})
    budgets: dict[str, float] = {}
    budget_node = node.optional("budget_left")
    for stage, left in () if budget_node is None else budget_node.entries():
        budgets[_stage_name(Node(stage, left.path))] = left.number(None, FLOAT)
    fits_node = node.optional("fits")
    fits = () if fits_node is None else tuple(item.identity() for item in fits_node.items())
    return AttemptEngine(
        now=node.child("now").number(None),
        budget_left=budgets,
        fits=frozenset(fits),
    )


def _read_attempt_requests(node: Node) -> tuple[AttemptRequest, ...]:
    requests: list[AttemptRequest] = []
    for index, item in enumerate(node.items(REQUESTS)):
        item.object({"id"}, {"serial", "enqueue", "attrs", "resumed"})
        identity, serial, enqueue = _read_common(item, index)
        resumed = item.optional("resumed")
        request = AttemptRequest(
            identity,
            serial,
            enqueue,
            _read_attrs(item.optional("attrs"), frozenset()),
            resumed=False if resumed is None else resumed.boolean(),
        )
        if request.resumed and requests and not requests[-1].resumed:
            raise item.child("resumed").fail(
                "resumed requests form the front of the queue: list them before every"
                " request that is not resumed"
            )
        requests.append(request)
    return tuple(requests)


def _stage_name(node: Node) -> str:
    name = node.name()
    if not is_stage_name(name):
        raise node.fail(
            "must be a name keys can write in budget_left(...): ASCII letters, digits and"
            " underscores, not starting with a digit, not a reserved word"
        )
    return name


def _read_attrs(node: Node | None, reserved: frozenset[str]) -> dict[str, AttributeValue]:
    attrs: dict[str, AttributeValue] = {}
    if node is None:
        return attrs
    for name, value in node.entries():
        if name in reserved:
            raise value.fail(f"is set by the engine from the request's {name!r} field")
        if isinstance(value.value, bool):
            attrs[name] = value.value
        elif isinstance(value.value, int | float):
            attrs[name] = value.number(None, FLOAT)
        else:
            raise value.fail("must be a number or true/false")
    return attrs


def _read_common(node: Node, index: int) -> tuple[str | int, int, float]:
    serial = node.optional("serial")
    enqueue = node.optional("enqueue")
    return (
        node.child("id").identity(),
        index if serial is None else serial.integer(0),
        0.0 if enqueue is None else enqueue.number(),
    )


def _read_pool_request(node: Node, index: int, engine: PoolEngine) -> PoolRequest:
    node.object({"id", "hold"}, {"serial", "enqueue", "attrs", "units"})
    identity, serial, enqueue = _read_common(node, index)
    units_node = node.optional("units")
    units = 1 if units_node is None else units_node.integer(1)
    if units > engine.cap:
        raise node.child("units").fail(
            f"{units} units can never fit in a pool of capacity {engine.cap}"
        )
    return PoolRequest(
        identity,
        serial,
        enqueue,
        _read_attrs(node.optional("attrs"), frozenset()),
        units,
        node.child("hold").number(),
    )


def _read_step_request(node: Node, index: int, engine: StepEngine) -> StepRequest:
    node.object({"id", "prompt", "out"}, {"serial", "enqueue", "attrs"})
    identity, serial, enqueue = _read_common(node, index)
    prompt = node.child("prompt").integer(1)
    out = node.child("out").integer(1)
    attrs = _read_attrs(node.optional("attrs"), frozenset({"prompt", "out"}))
    attrs |= {"prompt": float(prompt), "out": float(out)}
    request = StepRequest(identity, serial, enqueue, attrs, prompt, out)
    if request.kv_tokens_at_end > engine.kv_tokens:
        raise node.fail(
            f"needs {request.kv_tokens_at_end} tokens of KV for its last output token "
            f"(prompt {prompt} + out {out} - 1), more than the pool's {engine.blocks} x "
            f"{engine.block_size} = {engine.kv_tokens}: it could never finish"
        )
    return request


def _read_expect(node: Node, ids: set[str | int], *, attempt: bool) -> AdmissionExpect:
    node.object(set(), {"selected", "admitted_at", "keys"})
    keys_node = node.optional("keys")
    if keys_node is not None and not attempt:
        raise keys_node.fail('only engine "attempt" reports the selection\'s keys')
    selected_node = node.optional("selected")
    admitted_node = node.optional("admitted_at")
    selected = None
    if selected_node is not None:
        selected = tuple(item.identity() for item in selected_node.items())
        for index, request in enumerate(selected):
            if request not in ids:
                raise selected_node.child(index).fail(f"names no request: {shown(request)}")
    admitted = None
    if admitted_node is not None:
        # Expected times are only compared (to 1e-9): any float, of any sign for an
        # attempt, whose ``now`` may be negative.
        least = None if attempt else 0.0
        admitted = tuple(item.number(least, FLOAT) for item in admitted_node.items())
    keys = None if keys_node is None else tuple(_read_key(item) for item in keys_node.items())
    return AdmissionExpect(selected, admitted, keys)


#: Key values JSON has no number for, written as these strings (``key_json``).
KEY_STRINGS: Mapping[str, float] = {
    "NaN": math.nan,
    "Infinity": math.inf,
    "-Infinity": -math.inf,
    "-0.0": -0.0,
}


def key_json(value: float) -> float | int | str:
    """A key value for a JSON document, exactly: a JSON number (an integer when integral),
    or for NaN, the infinities and -0.0, their name in :data:`KEY_STRINGS`.

    >>> [key_json(v) for v in (2.0, 0.5, -0.0, 0.0, float("nan"), float("-inf"))]
    [2, 0.5, '-0.0', 0, 'NaN', '-Infinity']
    """
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 and math.copysign(1.0, value) < 0:
        return "-0.0"
    return int(value) if value.is_integer() else value


def same_keys(expected: tuple[float, ...], actual: tuple[float, ...]) -> bool:
    """Key lists equal value by value, exactly: NaN equals NaN, -0.0 differs from 0.0.

    >>> same_keys((float("nan"), -0.0), (float("nan"), -0.0)), same_keys((-0.0,), (0.0,))
    (True, False)
    """
    return len(expected) == len(actual) and all(
        key_json(e) == key_json(a) for e, a in zip(expected, actual, strict=True)
    )


def _read_key(node: Node) -> float:
    value = node.value
    if isinstance(value, str) and value in KEY_STRINGS:
        return KEY_STRINGS[value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        # Compared exactly, so read by the one number rule: an integer a float equals.
        return node.number(None, FLOAT)
    raise node.fail('must be a number or one of "NaN", "Infinity", "-Infinity", "-0.0"')
