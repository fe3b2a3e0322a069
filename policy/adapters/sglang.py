"""SGLang's waiting list in the kernel's order: an SGLang plugin.

Theory of operation
-------------------

SGLang keeps its waiting requests in a plain ``list`` (``Scheduler.waiting_queue``)
that about fifteen places append to, filter and reassign; there is no queue
object to replace. Once per prefill pass it calls
``SchedulePolicy.calc_priority(waiting_queue, running_batch, processed_tokens)``,
which sorts that list in place, and its admission loop then walks the list and
stops at the first request that does not fit: the kernel's own rule (only the
selected request is tested for fit). So the list's order after ``calc_priority``
is the whole decision, and this module decides it.

:func:`plugin` is the ``sglang.srt.plugins`` entry point (``pyproject.toml``).
SGLang calls it at the start of each of its processes. With
:data:`ENV_VAR` unset or empty it does nothing: SGLang runs as without it. With
a policy named (a ready-made name of :data:`READY_MADE`, or a policy file's
path), it checks the policy at once (a bad one ends the process with one line
naming the setting and the reason) and registers an around-hook on
``calc_priority`` (:data:`HOOKED`). The hook:

1. notes, before SGLang's own method runs, the requests it sees for the first
   time, in list order: that order (the order SGLang appended them) breaks
   ties, as SGLang's stable sorts break them;
2. calls SGLang's own method, so that its side effects happen as always (prefix
   matching, which makes ``num_matched_prefix_tokens`` fresh; cache touches);
3. brings the kernel queue it keeps for this ``SchedulePolicy`` in step with the
   list (by request id: requests gone leave, new ones join, a request whose
   matched prefix changed is queued again), then puts the list, in place, in
   the kernel's dispatch order at ``now`` = ``processed_tokens``.

Every rank of a tensor-parallel group runs its own scheduler, and all must
decide alike. So the clock is a count every rank has alike: ``now`` is the
prefill tokens SGLang has processed (the ``processed_tokens`` it passes), and a
request joins at ``req.arrival_processed_tokens`` (what SGLang's own ``hrrn``
policy ages on), so ``waited`` counts processed tokens, never seconds. Nothing
here reads wall time or random numbers.

If ordering a pass fails (a request whose attribute the kernel refuses, two
requests with one id), the hook logs one warning, leaves SGLang's own order for
that pass and starts afresh at the next: no request is ever dropped or added.
"""

from __future__ import annotations

import importlib
import logging
import os
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from returns.result import Failure

from policy.adapters.policy_file import read_policy_file
from policy.adapters.settings import ENV_VAR, is_policy_file, read_ready_made
from policy.text import quote, shown
from policy.waiting import Moment, QueuePolicy, WaitingQueue, fifo, make_policy
from policy.waiting.fast import plan_of, selection_path
from policy.waiting.fast.plan import ordering
from policy.waiting.numbers import finite_number

__all__ = [
    "ATTRIBUTES",
    "ENV_VAR",
    "HOOKED",
    "READY_MADE",
    "ListOrder",
    "SglangConfig",
    "around_calc_priority",
    "plugin",
    "policy_choice",
]

#: The method the hook wraps.
HOOKED: Final = "sglang.srt.managers.schedule_policy.SchedulePolicy.calc_priority"

#: A child of SGLang's ``sglang`` logger, whose handler SGLang configures.
_LOG: Final = logging.getLogger("sglang.policy_kernel")


@dataclass(frozen=True, slots=True)
class SglangConfig:
    """What SGLang was started with that a policy depends on: its
    ``--schedule-policy`` (``"fcfs"``, ``"lof"``, ``"lpm"``, ...), whether priority
    scheduling is on, and whether low priority values go first."""

    schedule_policy: str
    priority_scheduling: bool
    low_values_first: bool

    @property
    def priority_sign(self) -> int:
        """1 when low priority values go first, -1 otherwise (SGLang's own sign)."""
        return 1 if self.low_values_first else -1

    @classmethod
    def of(cls, schedule_policy: Any) -> SglangConfig:
        """The configuration of SGLang's ``SchedulePolicy`` object (its public fields)."""
        chosen = schedule_policy.policy
        return cls(
            schedule_policy=str(getattr(chosen, "value", chosen)),
            priority_scheduling=bool(schedule_policy.enable_priority_scheduling),
            low_values_first=bool(schedule_policy.schedule_low_priority_values_first),
        )


# --- what a policy can read from a request ------------------------------------------


def _number_or_zero(value: Any) -> Any:
    return 0 if value is None else value


def _prompt(req: Any) -> Any:
    return len(req.origin_input_ids)


def _cached(req: Any) -> Any:
    return req.num_matched_prefix_tokens


def _uncached(req: Any) -> Any:
    return max(0, len(req.origin_input_ids) - req.num_matched_prefix_tokens)


def _priority(req: Any) -> Any:
    return _number_or_zero(req.priority)


def _max_new_tokens(req: Any) -> Any:
    return _number_or_zero(req.sampling_params.max_new_tokens)


def _retracted(req: Any) -> Any:
    return bool(req.is_retracted)


def _retraction_count(req: Any) -> Any:
    return req.retraction_count


def _routed(req: Any) -> Any:
    return bool(req.routing_key)


def _entry_time(req: Any) -> Any:
    return req.time_stats.wait_queue_entry_time


#: An attribute: how it is read from SGLang's ``Req`` (given SGLang's configuration),
#: and whether it can change while the request waits (read again every pass).
@dataclass(frozen=True, slots=True)
class Attribute:
    read: Callable[[Any], Any]
    changes: bool
    means: str
    #: Multiplied by SGLang's priority sign (1 when low values go first, else -1).
    signed: bool = False


#: Every attribute a policy can name (docs/adapters.md has this table); the
#: built-in ``waited`` is the prefill tokens SGLang processed since the request
#: joined the list. A policy naming anything else is refused at start.
ATTRIBUTES: Final[Mapping[str, Attribute]] = {
    "prompt": Attribute(_prompt, False, "prompt tokens, len(origin_input_ids)"),
    "cached": Attribute(_cached, True, "tokens of the prompt found in the prefix cache"),
    "uncached": Attribute(_uncached, True, "prompt tokens not in the prefix cache"),
    "priority": Attribute(_priority, False, "the request's priority (None reads 0)"),
    "priority_rank": Attribute(
        _priority, False, "priority in SGLang's configured direction: lower goes first", True
    ),
    "max_new_tokens": Attribute(_max_new_tokens, False, "sampling_params.max_new_tokens"),
    "retracted": Attribute(_retracted, False, "true for a request SGLang retracted"),
    "retraction_count": Attribute(_retraction_count, False, "how often it was retracted"),
    "routed": Attribute(_routed, False, "true when the request has a routing key"),
    "entry_time": Attribute(
        _entry_time, False, "SGLang's wait_queue_entry_time (wall time: the mirror only)"
    ),
}


# --- ready-made policies --------------------------------------------------------------

#: The key that puts a retracted request first (within its priority, when there is one).
RETRACTED_FIRST_KEY: Final = "retracted ? 0 : 1"

#: Builds the kernel policy for SGLang's configuration; None keeps SGLang's own order.
Choice = Callable[[SglangConfig], QueuePolicy | None]


def _built(keys: Sequence[str], attributes: Sequence[str], **constants: float) -> QueuePolicy:
    made = make_policy(list(keys), constants=constants, attributes=list(attributes))
    if isinstance(made, Failure):  # the keys are this module's: a refusal is a defect
        raise AssertionError(f"a ready-made policy was refused: {made.failure()}")
    return made.unwrap()


def _with_retracted(keys: list[str], after_priority: bool) -> list[str]:
    return (
        [*keys[:1], RETRACTED_FIRST_KEY, *keys[1:]]
        if after_priority
        else [
            RETRACTED_FIRST_KEY,
            *keys,
        ]
    )


def sglang_order(config: SglangConfig, retracted_first: bool = False) -> QueuePolicy | None:
    """SGLang's own order for ``fcfs`` and ``lof``, with or without priority
    scheduling in either direction; None (SGLang's own method alone) for its other
    policies. Ties go by the order SGLang appended the requests, as its stable
    sorts keep them. With ``retracted_first``, a retracted request goes first
    within its priority.

    >>> from policy.waiting.parse import unparse
    >>> [unparse(key) for key in sglang_order(SglangConfig("lof", True, False)).keys]
    ['priority_rank', '-max_new_tokens']
    >>> sglang_order(SglangConfig("fcfs", False, True)).is_fifo
    True
    >>> sglang_order(SglangConfig("lpm", False, True)) is None
    True
    """
    # each key with the attribute it reads: SGLang's sort key, field by field
    priority = [("priority_rank", "priority_rank")] if config.priority_scheduling else []
    if config.schedule_policy == "fcfs":
        then = [("entry_time", "entry_time")] if priority else []
    elif config.schedule_policy == "lof":
        then = [("-max_new_tokens", "max_new_tokens")]
    else:
        return None
    retracted = [(RETRACTED_FIRST_KEY, "retracted")] if retracted_first else []
    keyed = [*priority, *retracted, *then]
    if not keyed:
        return fifo()
    return _built([key for key, _ in keyed], [name for _, name in keyed])


def priority_aging(
    config: SglangConfig, age_tokens: float = 4096, retracted_first: bool = False
) -> QueuePolicy:
    """Priority in SGLang's configured direction, where every ``age_tokens``
    prefill tokens processed while a request waits count as one priority class:
    ``priority_rank - waited / age_tokens``, lower first, ties by arrival.

    >>> from policy.waiting.parse import unparse
    >>> [unparse(k) for k in priority_aging(SglangConfig("fcfs", True, True), 100).keys]
    ['priority_rank - waited / age_tokens']
    """
    del config  # its direction is in priority_rank
    keys = ["priority_rank - waited / age_tokens"]
    if retracted_first:
        keys = _with_retracted(keys, after_priority=True)
    attributes = ["priority_rank", *(["retracted"] if retracted_first else [])]
    return _built(keys, attributes, age_tokens=_positive("age_tokens", age_tokens))


def lpm_aging(
    config: SglangConfig, age_tokens: float = 16384, retracted_first: bool = False
) -> QueuePolicy:
    """Longest cached prefix first, with aging: a request that has waited
    ``age_tokens`` processed prefill tokens goes ahead of every request that has
    not (the oldest first), so a request with no cached prefix is not starved
    (SGLang #31954). Ties by arrival (``serial``: a request whose matched prefix
    changed is queued again, and keeps its place among ties).

    >>> from policy.waiting.parse import unparse
    >>> [unparse(k) for k in lpm_aging(SglangConfig("lpm", False, True), 10).keys]
    ['waited >= age_tokens ? -waited : 0', '-cached', 'serial']
    """
    del config  # the same order under every configuration
    keys = ["waited >= age_tokens ? -waited : 0", "-cached", "serial"]
    if retracted_first:
        keys = _with_retracted(keys, after_priority=False)
    attributes = ["cached", *(["retracted"] if retracted_first else [])]
    return _built(keys, attributes, age_tokens=_positive("age_tokens", age_tokens))


def _positive(name: str, value: float) -> float:
    number = finite_number(value)  # a 400-digit integer too: beyond the floats
    if number is None or not number > 0:
        raise ValueError(f"{name} must be a positive finite number, not {shown(value)}")
    return number


#: Ready-made names: the builder and the arguments it takes after ``name:``
#: (``key=value``, comma-separated; ``retracted_first`` is 0 or 1).
READY_MADE: Final[Mapping[str, tuple[Callable[..., QueuePolicy | None], tuple[str, ...]]]] = {
    "sglang": (sglang_order, ("retracted_first",)),
    "priority-aging": (priority_aging, ("age_tokens", "retracted_first")),
    "lpm-aging": (lpm_aging, ("age_tokens", "retracted_first")),
}

#: Every configuration a named policy is built for at start, so that a bad one
#: is refused before SGLang serves.
_CONFIGS: Final = tuple(
    SglangConfig(name, priority, low)
    for name in ("fcfs", "lof", "lpm")
    for priority in (False, True)
    for low in (False, True)
)


def _ready_made(value: str) -> Choice:
    name, arguments = read_ready_made(value, {n: keys for n, (_, keys) in READY_MADE.items()})
    flag = arguments.get("retracted_first", 0)
    if flag not in (0, 1) or type(flag) is not int:
        raise ValueError(f"retracted_first must be 0 or 1, not {shown(flag)}")
    build = READY_MADE[name][0]
    return lambda config: build(config, **arguments)


def _from_file(path: str) -> Choice:
    _, policy = read_policy_file(path)
    unknown = sorted(policy.attributes_read - ATTRIBUTES.keys())
    if unknown:
        raise ValueError(
            f"the policy reads {quote(unknown[0])}, which SGLang's requests do not offer;"
            f" the attributes are {', '.join(ATTRIBUTES)}"
        )
    return lambda _config: policy


def policy_choice(environ: Mapping[str, str] | None = None) -> Choice | None:
    """The policy :data:`ENV_VAR` names in ``environ`` (default ``os.environ``):
    None when it is unset or empty (SGLang's own order). A bad value is a
    ``ValueError`` whose message is one line naming the setting, the value and the
    reason; a ready-made name is built for every configuration SGLang can run it
    under before it is returned.

    >>> policy_choice({}) is None
    True
    >>> policy_choice({ENV_VAR: "lpm-aging:age_tokens=0"})
    Traceback (most recent call last):
    ...
    ValueError: POLICY_KERNEL_QUEUE='lpm-aging:age_tokens=0': age_tokens must be a positive finite number, not 0
    """  # noqa: E501 - a doctest's expected line
    value = (os.environ if environ is None else environ).get(ENV_VAR, "").strip()
    if not value:
        return None
    is_file = is_policy_file(value, os.sep)
    try:
        choice = _from_file(value) if is_file else _ready_made(value)
        for config in _CONFIGS:
            choice(config)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{ENV_VAR}={quote(value)}: {error}") from None
    return choice


# --- the kernel queue kept in step with one list ---------------------------------------


@dataclass(slots=True)
class _Stay:
    """One request's stay in the list: how it is told from a later stay (its
    retraction count), its tie-breaking serial, when it joined (processed tokens),
    and the attributes the policy reads, as last given to the kernel."""

    retraction_count: object
    serial: int
    joined: float
    attributes: dict[str, Any] | None = None
    #: Its place in the dispatch order of a policy whose order reads no moment:
    #: the kernel's ordering of its fixed keys and its ticket (None: not yet known).
    rank: tuple[Any, ...] | None = None


def _reader(attribute: Attribute, config: SglangConfig) -> Callable[[Any], Any]:
    if not attribute.signed or config.priority_sign == 1:
        return attribute.read
    return lambda req: -attribute.read(req)


class ListOrder:
    """The kernel's order of one SGLang waiting list, for one ``SchedulePolicy``.

    Call :meth:`see` before SGLang's own method runs (it notes first sights, in
    list order: the order that breaks ties) and :meth:`order` after it.
    """

    __slots__ = (
        "_arrived", "_changing", "_next_serial", "_plan", "_queue", "_static", "_stays", "policy",
    )  # fmt: skip

    def __init__(self, policy: QueuePolicy, config: SglangConfig, *, ranked: bool = True) -> None:
        self.policy = policy
        # An order that reads no moment (the fifo and static paths) is each entry's
        # fixed rank, known when it joins: the list is sorted by it (a nearly sorted
        # list, in linear time) instead of walking the whole dispatch order each
        # pass, about 5 µs an entry (oracle.bench.sglang_pass, docs/performance.md).
        # tests/adapters/test_sglang.py shows the two equal. ``ranked=False`` walks.
        path = selection_path(policy)
        self._plan = plan_of(policy) if ranked and path in ("fifo", "static") else None
        names = sorted(policy.attributes_read)
        read = [(name, _reader(ATTRIBUTES[name], config)) for name in names]
        self._static = tuple((name, get) for name, get in read if not ATTRIBUTES[name].changes)
        self._changing = tuple((name, get) for name, get in read if ATTRIBUTES[name].changes)
        self._queue = WaitingQueue()
        self._stays: dict[str, _Stay] = {}
        self._next_serial = 0
        self._arrived: list[tuple[str, Any]] = []  # see()'s first sights, for order()

    def see(self, waiting: Sequence[Any]) -> None:
        """Note, in list order, each request seen for the first time in its stay (a
        retracted request that is back starts a new stay: SGLang appended it anew).

        SGLang only appends to the list (and removes from it) between passes, and
        reading a ``Req`` attribute costs about 0.5 µs: so only the tail after the
        last request already known is read. A request found elsewhere later makes
        :meth:`order` refuse the pass (then the next starts afresh)."""
        stays = self._stays
        arrived = []
        for req in reversed(waiting):
            stay = stays.get(req.rid)
            if stay is not None and stay.retraction_count == req.retraction_count:
                break
            arrived.append(req)
        for req in reversed(arrived):
            if req.rid in stays:
                self._leave(req.rid)
            stays[req.rid] = _Stay(req.retraction_count, self._next_serial, 0.0)
            self._next_serial += 1
        self._arrived = [(req.rid, req) for req in reversed(arrived)]

    def order(self, waiting: list[Any], processed_tokens: int) -> None:
        """Put ``waiting`` (the list :meth:`see` saw, sorted or not by SGLang since)
        in the kernel's dispatch order at ``now = processed_tokens``, in place. A
        ``ValueError`` leaves the list as it was (then call :meth:`reset`)."""
        arrived, self._arrived = self._arrived, []  # hold no request past the pass
        rids = [req.rid for req in waiting]
        present = set(rids)
        if len(present) != len(rids):
            raise ValueError("two waiting requests have one id")
        stays = self._stays
        leaving = []
        for gone in stays.keys() - present:
            entry = self._queue.entry_of(gone) if stays.pop(gone).attributes is not None else None
            if entry is not None:
                leaving.append(entry)
        if leaving:  # one pass for the pass's admissions
            self._queue = self._queue.without_each(leaving)
        if len(stays) != len(rids):
            unseen = next(rid for rid in rids if rid not in stays)
            raise ValueError(f"request {quote(str(unseen))} joined the list out of its tail")
        joining = []
        for rid, req in arrived:
            stay = stays[rid]
            attributes = {name: read(req) for name, read in self._static}
            for name, read in self._changing:
                attributes[name] = read(req)
            stay.attributes, stay.joined = attributes, float(req.arrival_processed_tokens)
            joining.append((rid, attributes, stay.serial, stay.joined))
        if self._changing:
            fresh = {rid for rid, _ in arrived}
            for rid, req in zip(rids, waiting, strict=True):
                stay = stays[rid]
                if rid in fresh or stay.attributes is None:
                    continue
                now_read = {name: read(req) for name, read in self._changing}
                if all(stay.attributes[name] == value for name, value in now_read.items()):
                    continue
                self._queue = self._removed(rid)
                stay.attributes = {**stay.attributes, **now_read}
                joining.append((rid, stay.attributes, stay.serial, stay.joined))
        if joining:
            made = self._queue.extend(self.policy, joining)
            if isinstance(made, Failure):
                raise ValueError(str(made.failure()))
            self._queue = made.unwrap()
        plan = self._plan
        if plan is not None:
            for rid, *_ in joining:
                entry = self._queue.entry_of(rid)
                assert entry is not None  # it just joined
                keys = plan.fixed_keys(entry) if self.policy.keys else ()
                stays[rid].rank = ordering(keys, entry.ticket)
            ranks = [stays[rid].rank for rid in rids]
            places = sorted(range(len(rids)), key=ranks.__getitem__)  # type: ignore[arg-type]
            waiting[:] = [waiting[place] for place in places]
            return
        # the queue's own dispatch (entry, keys) pairs: dispatch_order's Selection
        # records cost more than the rest of a pass (measured, oracle.bench.sglang_pass)
        by_id = dict(zip(rids, waiting, strict=True))
        now = Moment(float(processed_tokens))
        ordered = [by_id[entry.identity] for entry, _ in self._queue.dispatched(self.policy, now)]
        if len(ordered) != len(waiting):  # never drop or add a request
            raise ValueError(f"the kernel ordered {len(ordered)} of {len(waiting)} requests")
        waiting[:] = ordered

    def reset(self) -> None:
        """Forget every stay (after a failed pass: the next one starts afresh)."""
        self._queue = WaitingQueue()
        self._stays.clear()
        self._arrived = []

    def _leave(self, rid: str) -> None:
        stay = self._stays.pop(rid)
        if stay.attributes is not None:
            self._queue = self._removed(rid)

    def _removed(self, rid: str) -> WaitingQueue:
        made = self._queue.remove(rid)
        if isinstance(made, Failure):
            raise ValueError(str(made.failure()))
        return made.unwrap()


# --- the hook --------------------------------------------------------------------------

#: The order kept for each of SGLang's ``SchedulePolicy`` objects (None: SGLang's own
#: order for its configuration), released with it.
_ORDERS: weakref.WeakKeyDictionary[Any, ListOrder | None] = weakref.WeakKeyDictionary()


def around_calc_priority(
    choice: Choice,
    original: Callable[..., Any],
    schedule_policy: Any,
    waiting_queue: list[Any],
    *args: Any,
    **kwargs: Any,
) -> Any:
    """SGLang's ``calc_priority(waiting_queue, running_batch=None,
    processed_tokens=0)`` called with the arguments it was given, then
    ``waiting_queue`` in the order ``choice`` gives for this ``SchedulePolicy``'s
    configuration (the module's docstring)."""
    if schedule_policy in _ORDERS:
        kept = _ORDERS[schedule_policy]
    else:
        config = SglangConfig.of(schedule_policy)
        policy = choice(config)
        kept = _ORDERS[schedule_policy] = None if policy is None else ListOrder(policy, config)
    if kept is not None:
        kept.see(waiting_queue)
    result = original(schedule_policy, waiting_queue, *args, **kwargs)
    if kept is not None:
        processed_tokens = kwargs.get("processed_tokens", args[1] if len(args) > 1 else 0)
        try:
            kept.order(waiting_queue, processed_tokens)
        except (TypeError, ValueError) as error:
            kept.reset()
            _LOG.warning(
                "policy-kernel: SGLang's own order kept for this pass: %s", quote(str(error), 200)
            )
    return result


def plugin() -> None:
    """The ``sglang.srt.plugins`` entry point: with a policy named, check it (a bad
    one ends the process with one line) and hook ``calc_priority``; otherwise
    nothing."""
    try:
        choice = policy_choice()
    except ValueError as error:
        raise SystemExit(f"policy-kernel: {error}") from None
    if choice is None:
        return
    registry: Any = importlib.import_module("sglang.srt.plugins.hook_registry")

    def hook(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return around_calc_priority(choice, original, *args, **kwargs)

    registry.HookRegistry.register(HOOKED, hook, registry.HookType.AROUND)
    _LOG.info("policy-kernel: SGLang's waiting list ordered by %s", quote(os.environ[ENV_VAR]))
