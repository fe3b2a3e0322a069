"""Implementations under test: how the kit asks a decision and reads the answer.

Every implementation answers the protocol's requests, a decision's name and its
JSON inputs (docs/conformance.md), with a JSON answer. Three kinds:

- :func:`from_callables`: Python callables with the kernel's signatures (a
  scheduler that reuses the kernel's types, or wraps its own decisions in them);
- :func:`from_handlers`: Python functions from a decision's JSON inputs to its
  JSON answer (a scheduler with types of its own: the small adapter is reading
  and writing the protocol's forms);
- :class:`~oracle.conformance.command.CommandImplementation`: a process in any
  language speaking the protocol as JSON lines on its stdin and stdout.

>>> kernel = kernel_implementation()
>>> kernel.answer("backlog_admits", {"backlog_len": 1, "budget": 8})
True
>>> broken = from_callables(backlog_admits=lambda length, budget: length < 3)
>>> sorted(broken.decisions())
['backlog_admits']
>>> from_callables(backlog_admits=lambda length, budget: 1 / 0).answer(
...     "backlog_admits", {"backlog_len": 1, "budget": 8})
Failed(reason='raised ZeroDivisionError: division by zero')
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar, Generic, TypeAlias, TypeVar

from returns.maybe import Maybe
from returns.result import Failure, Result, Success

from oracle.conformance.decisions import DECISIONS
from oracle.conformance.wire import (
    JSON,
    WireError,
    canonical,
    encode,
    kernel_entry_json,
    lane_of,
    number_json,
    read_backlog,
    read_entry,
    read_event,
    read_field,
    read_flag,
    read_int,
    read_list,
    read_moment,
    read_queue,
    read_request,
    read_state,
)
from oracle.harness.rotation_events import observe
from policy import (
    BacklogEntry,
    Event,
    GrantBacklog,
    Lane,
    ProtocolError,
    RotationState,
    Step,
    apply_event,
    backlog_admits,
    next_grant_index,
    parse_grant_rounds,
    parse_lane,
    slice_grant_expired,
    slice_takes_tick,
    take_next_grantee,
)
from policy.text import cut, shown
from policy.waiting import (
    AdmissionOutcome,
    Admitted,
    Blocked,
    Moment,
    QueueEmpty,
    QueuePolicy,
    Selection,
    WaitingEntry,
    WaitingQueue,
    attempt_admission,
    load_policy,
    select_waiting,
)

__all__ = [
    "Alternation",
    "Answer",
    "ApplyEvent",
    "AttemptAdmission",
    "BacklogAppend",
    "BacklogCap",
    "BudgetSetting",
    "Failed",
    "GrantExpiry",
    "Handler",
    "Implementation",
    "ImplementationBroken",
    "LaneHeader",
    "NextGrantIndex",
    "NotApplicable",
    "NotApplicableError",
    "SelectWaiting",
    "TakeNextGrantee",
    "as_implementation",
    "from_callables",
    "from_handlers",
    "kernel_implementation",
]

#: The kernel's signatures, one per decision. A decision the kernel answers with
#: a ``Maybe`` or a ``Result`` may also answer with the plain value (``None`` for
#: nothing, a ``ProtocolError`` for a refusal).
GrantExpiry: TypeAlias = Callable[[int, int, bool], bool]
BacklogCap: TypeAlias = Callable[[int, int], bool]
Alternation: TypeAlias = Callable[[bool, bool], bool]
BudgetSetting: TypeAlias = Callable[[str | None], int]
LaneHeader: TypeAlias = Callable[[str | None], Lane]
NextGrantIndex: TypeAlias = Callable[[Sequence[tuple[Lane, int]], int], Maybe[int] | int | None]
TakeNextGrantee: TypeAlias = Callable[
    [GrantBacklog, int],
    Maybe[tuple[BacklogEntry, GrantBacklog]] | tuple[BacklogEntry, GrantBacklog] | None,
]
BacklogAppend: TypeAlias = Callable[[GrantBacklog, BacklogEntry], GrantBacklog]
ApplyEvent: TypeAlias = Callable[
    [RotationState, Event], Result[Step, ProtocolError] | Step | ProtocolError
]
SelectWaiting: TypeAlias = Callable[
    [WaitingQueue, QueuePolicy, Moment], Maybe[Selection] | Selection | None
]
AttemptAdmission: TypeAlias = Callable[
    [WaitingQueue, QueuePolicy, Moment, Callable[[WaitingEntry], bool]], AdmissionOutcome
]
#: A decision as a function of its JSON inputs to its JSON answer.
Handler: TypeAlias = Callable[[Mapping[str, JSON]], JSON]

_Read = TypeVar("_Read")


@dataclass(frozen=True, slots=True)
class Failed:
    """The implementation gave no answer to one request (it raised, or said why)."""

    reason: str


@dataclass(frozen=True, slots=True)
class NotApplicable:
    """The implementation says the case does not apply to it (a fixed skip cap, a rules
    profile or a lane it does not have): counted apart and reported, not compared."""

    reason: str


class NotApplicableError(Exception):
    """Raised by a callable or handler for a case that does not apply to it: the kit
    takes it as :class:`NotApplicable` (its message is the reason)."""


#: What an implementation gives for one request.
Answer: TypeAlias = JSON | Failed | NotApplicable


class ImplementationBroken(Exception):
    """The implementation cannot go on answering: a process that died, did not answer
    in time or wrote a malformed answer. The message is one printable line."""


class Implementation(ABC):
    """Something that answers the protocol's requests (see the module docstring)."""

    #: Whether a malformed answer ends the run (:class:`ImplementationBroken`), as for a
    #: process, rather than counting as a disagreement, as for a Python callable.
    malformed_ends_run: ClassVar[bool] = False
    #: Whether every answer is already in normal form (written by the kit itself, as
    #: :func:`from_callables` writes them), so it is compared without being read again.
    answers_normal: bool = False

    @abstractmethod
    def decisions(self) -> frozenset[str]:
        """The names of the decisions this implementation answers."""

    @abstractmethod
    def answer_many(self, requests: Sequence[tuple[str, Mapping[str, JSON]]]) -> list[Answer]:
        """The answers to ``requests`` (each a decision's name and inputs), in order."""

    def answer(self, decision: str, inputs: Mapping[str, JSON]) -> Answer:
        """The answer to one request."""
        return self.answer_many([(decision, inputs)])[0]

    def stream(
        self, batches: Iterable[Sequence[tuple[str, Mapping[str, JSON]]]]
    ) -> Iterator[list[Answer]]:
        """The answers to each batch of requests, in order. A process is sent the next
        batch before the answers to this one are read, so both sides work at once."""
        for batch in batches:
            yield self.answer_many(batch)


class _Handlers(Implementation):
    """An implementation in-process: one handler per decision."""

    def __init__(self, handlers: Mapping[str, Handler], answers_normal: bool = False) -> None:
        unknown = sorted(set(handlers) - set(DECISIONS))
        if unknown:
            raise ValueError(f"no decision is named {', '.join(unknown)}")
        self._handlers = dict(handlers)
        self.answers_normal = answers_normal

    def decisions(self) -> frozenset[str]:
        return frozenset(self._handlers)

    def answer_many(self, requests: Sequence[tuple[str, Mapping[str, JSON]]]) -> list[Answer]:
        answers: list[Answer] = []
        for decision, inputs in requests:
            handler = self._handlers.get(decision)
            if handler is None:
                answers.append(Failed(f"does not answer {decision}"))
                continue
            try:
                answers.append(handler(inputs))
            except NotApplicableError as error:
                answers.append(NotApplicable(cut(str(error), 300)))
            except Exception as error:  # a raising implementation is a finding, not a crash
                # the exception's text quoted by the one rule (a callable's 10 MB message)
                answers.append(Failed(f"raised {type(error).__name__}: {cut(str(error), 300)}"))
        return answers


def from_handlers(handlers: Mapping[str, Handler]) -> Implementation:
    """An implementation answering each decision of ``handlers`` with its handler, a
    function of the decision's JSON inputs to its JSON answer (the protocol's forms,
    without a process). A handler that raises gives no answer to that request.

    >>> implementation = from_handlers({"backlog_admits": lambda inputs: inputs["budget"] > 0})
    >>> implementation.answer("backlog_admits", {"backlog_len": 5, "budget": 8})
    True
    """
    return _Handlers(handlers)


# ------------------------------------------------------------------ kernel-typed callables


def _boolean(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise WireError(f"{name} returned {shown(value)}, not True or False")
    return value


def _maybe(value: object) -> object:
    """A ``Maybe``'s value (None for nothing); a plain value as it is."""
    if isinstance(value, Maybe):
        return value.value_or(None)
    return value


def _step_result(value: object) -> Result[Step, ProtocolError]:
    if isinstance(value, Success | Failure):
        return value
    if isinstance(value, Step):
        return Success(value)
    if isinstance(value, ProtocolError):
        return Failure(value)
    raise WireError(f"apply_event returned {shown(value)}, not a Result, a Step or a ProtocolError")


def _selection_json(selection: object) -> dict[str, JSON]:
    if not isinstance(selection, Selection):
        raise WireError(f"returned {shown(selection)}, not a Selection")
    return {"index": selection.index, "keys": [number_json(key) for key in selection.keys]}


def _attempt_json(outcome: object) -> dict[str, JSON]:
    if isinstance(outcome, QueueEmpty):
        return {"outcome": "empty"}
    if isinstance(outcome, Admitted | Blocked):
        return {
            "outcome": "admitted" if isinstance(outcome, Admitted) else "blocked",
            **_selection_json(outcome.selection),
            "queue": [entry.identity for entry in outcome.queue],
        }
    raise WireError(f"attempt_admission returned {shown(outcome)}, not an AdmissionOutcome")


class _Memo(Generic[_Read]):
    """Values read from JSON documents, remembered by the document object (the kit
    passes the same objects again and again) and by its text (a process reads a new
    object from every line). Values are pure functions of their document, and read
    documents are held, so an object's id stays its own while it is remembered."""

    def __init__(self, read: Callable[[JSON], _Read], size: int) -> None:
        self._read = read
        self._size = size
        self._by_object: dict[int, tuple[JSON, _Read]] = {}
        self._by_text: dict[str, _Read] = {}

    def get(self, document: JSON) -> _Read:
        held = self._by_object.get(id(document))
        if held is not None and held[0] is document:
            return held[1]
        text = encode(document)  # one writer writes equal documents alike
        value = self._by_text.get(text)
        if value is None:
            value = self._read(document)
            if len(self._by_text) >= self._size:
                self._by_text.clear()
            self._by_text[text] = value
        if len(self._by_object) >= self._size:
            self._by_object.clear()
        self._by_object[id(document)] = (document, value)
        return value


def _read_policy(document: JSON) -> QueuePolicy:
    if not isinstance(document, dict):
        raise WireError(f"policy: a policy document, not {canonical(document)}")
    loaded = load_policy(document)
    if isinstance(loaded, Failure):
        raise WireError(f"policy: {loaded.failure()}")
    return loaded.unwrap()


class _Queues:
    """Kernel policies, queues and moments read from a selection's inputs."""

    def __init__(self) -> None:
        self._policies = _Memo(_read_policy, 64)
        self._moments = _Memo(read_moment, 64)
        self._queues: dict[int, _Memo[WaitingQueue]] = {}

    def read(self, inputs: Mapping[str, JSON]) -> tuple[QueuePolicy, WaitingQueue, Moment]:
        policy = self._policies.get(inputs["policy"])
        queues = self._queues.get(id(policy))
        if queues is None:  # a queue is read under its policy (enqueue-time keys)
            if len(self._queues) >= 64:
                self._queues.clear()
            queues = self._queues[id(policy)] = _Memo(partial(read_queue, policy=policy), 512)
        return policy, queues.get(inputs["queue"]), self._moments.get(inputs["moment"])


def _fits(inputs: Mapping[str, JSON]) -> Callable[[WaitingEntry], bool]:
    chosen = frozenset(read_request(item, "fits") for item in read_list(inputs["fits"], "fits"))

    def fits(entry: WaitingEntry) -> bool:
        return entry.identity in chosen

    return fits


def from_callables(  # noqa: PLR0917 - one optional callable per decision
    slice_grant_expired: GrantExpiry | None = None,
    backlog_admits: BacklogCap | None = None,
    slice_takes_tick: Alternation | None = None,
    parse_grant_rounds: BudgetSetting | None = None,
    parse_lane: LaneHeader | None = None,
    next_grant_index: NextGrantIndex | None = None,
    take_next_grantee: TakeNextGrantee | None = None,
    backlog_append: BacklogAppend | None = None,
    apply_event: ApplyEvent | None = None,
    select_waiting: SelectWaiting | None = None,
    attempt_admission: AttemptAdmission | None = None,
) -> Implementation:
    """An implementation answering each decision given with a callable of the kernel's
    signature (see the aliases above): the kit reads each request's inputs into the
    kernel's values (:mod:`oracle.conformance.wire`), calls, and writes the result in
    the protocol's form. ``backlog_append(backlog, entry)`` is
    :meth:`policy.GrantBacklog.append` for the kernel. A callable that raises, or
    returns a value of another type, gives no answer to that request (a
    disagreement, with the reason)."""
    handlers: dict[str, Handler] = {}
    if slice_grant_expired is not None:
        expired = slice_grant_expired

        def expiry(inputs: Mapping[str, JSON]) -> JSON:
            slices = read_int(inputs["slices_in_grant"], "slices_in_grant")
            budget = read_int(inputs["budget"], "budget")
            pending = read_flag(inputs["backlog_pending"], "backlog_pending")
            return _boolean("slice_grant_expired", expired(slices, budget, pending))

        handlers["slice_grant_expired"] = expiry
    if backlog_admits is not None:
        admits = backlog_admits

        def cap(inputs: Mapping[str, JSON]) -> JSON:
            length = read_int(inputs["backlog_len"], "backlog_len")
            budget = read_int(inputs["budget"], "budget")
            return _boolean("backlog_admits", admits(length, budget))

        handlers["backlog_admits"] = cap
    if slice_takes_tick is not None:
        takes = slice_takes_tick

        def alternation(inputs: Mapping[str, JSON]) -> JSON:
            yielded = read_flag(inputs["yielded"], "yielded")
            others = read_flag(inputs["others_have_work"], "others_have_work")
            return _boolean("slice_takes_tick", takes(yielded, others))

        handlers["slice_takes_tick"] = alternation
    if parse_grant_rounds is not None:
        parse_budget = parse_grant_rounds

        def budget_setting(inputs: Mapping[str, JSON]) -> JSON:
            budget = parse_budget(_optional_text(inputs["raw"], "raw"))
            if isinstance(budget, bool) or not isinstance(budget, int):
                raise WireError(f"parse_grant_rounds returned {shown(budget)}, not an int")
            return budget

        handlers["parse_grant_rounds"] = budget_setting
    if parse_lane is not None:
        parse_header = parse_lane

        def lane_header(inputs: Mapping[str, JSON]) -> JSON:
            lane = parse_header(_optional_text(inputs["header"], "header"))
            if not isinstance(lane, Lane):
                raise WireError(f"parse_lane returned {shown(lane)}, not a Lane")
            return lane.label

        handlers["parse_lane"] = lane_header
    if next_grant_index is not None:
        index_of = next_grant_index

        def grant_index(inputs: Mapping[str, JSON]) -> JSON:
            entries = [
                (
                    lane_of(read_field(item, "lane")),
                    read_int(read_field(item, "skipped"), "skipped"),
                )
                for item in read_list(inputs["entries"], "entries")
            ]
            chosen = _maybe(index_of(entries, read_int(inputs["skip_cap"], "skip_cap")))
            if chosen is not None and (isinstance(chosen, bool) or not isinstance(chosen, int)):
                raise WireError(f"next_grant_index returned {shown(chosen)}, not an index")
            return chosen

        handlers["next_grant_index"] = grant_index
    if take_next_grantee is not None:
        take = take_next_grantee

        def grantee(inputs: Mapping[str, JSON]) -> JSON:
            skip_cap = read_int(inputs["skip_cap"], "skip_cap")
            taken = _maybe(take(read_backlog(inputs["backlog"]), skip_cap))
            if taken is None:
                return None
            if not (isinstance(taken, tuple) and len(taken) == 2):
                raise WireError(f"take_next_grantee returned {shown(taken)}")
            chosen, rest = taken
            if not isinstance(chosen, BacklogEntry) or not isinstance(rest, GrantBacklog):
                raise WireError(f"take_next_grantee returned {shown(taken)}")
            return {
                "chosen": kernel_entry_json(chosen),
                "backlog": [kernel_entry_json(entry) for entry in rest],
            }

        handlers["take_next_grantee"] = grantee
    if backlog_append is not None:
        append = backlog_append

        def re_enter(inputs: Mapping[str, JSON]) -> JSON:
            joined = append(read_backlog(inputs["backlog"]), read_entry(inputs["entry"]))
            if not isinstance(joined, GrantBacklog):
                raise WireError(f"backlog_append returned {shown(joined)}, not a GrantBacklog")
            return [kernel_entry_json(entry) for entry in joined]

        handlers["backlog_append"] = re_enter
    if apply_event is not None:
        step = apply_event
        states = _Memo(read_state, 256)
        events = _Memo(read_event, 4096)

        def protocol(inputs: Mapping[str, JSON]) -> JSON:
            state = states.get(inputs["state"])
            return observe(_step_result(step(state, events.get(inputs["event"]))))

        handlers["apply_event"] = protocol
    queues = _Queues()
    if select_waiting is not None:
        select = select_waiting

        def selection(inputs: Mapping[str, JSON]) -> JSON:
            policy, queue, moment = queues.read(inputs)
            chosen = _maybe(select(queue, policy, moment))
            return None if chosen is None else _selection_json(chosen)

        handlers["select_waiting"] = selection
    if attempt_admission is not None:
        attempt = attempt_admission

        def admission(inputs: Mapping[str, JSON]) -> JSON:
            policy, queue, moment = queues.read(inputs)
            return _attempt_json(attempt(queue, policy, moment, _fits(inputs)))

        handlers["attempt_admission"] = admission
    return _Handlers(handlers, answers_normal=True)


def _optional_text(value: JSON, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise WireError(f"{what}: text or null, not {canonical(value)}")
    return value


def _append(backlog: GrantBacklog, entry: BacklogEntry) -> GrantBacklog:
    return backlog.append(entry)


def as_implementation(
    given: Implementation | Callable[..., object] | None, decision: str, **more: object
) -> Implementation:
    """``given`` itself when it is an :class:`Implementation`, else one answering the
    callable ``given`` as ``decision`` (and the callables in ``more``, by decision).
    The public checks type each callable; this is where they meet one adapter."""
    if isinstance(given, Implementation):
        return given
    callables: dict[str, Any] = {decision: given, **more}
    return from_callables(**callables)


def kernel_implementation() -> Implementation:
    """The kernel itself, answering every decision (it agrees with the spec: that is
    what ``policy-kernel verify`` shows)."""
    return from_callables(
        slice_grant_expired=slice_grant_expired,
        backlog_admits=backlog_admits,
        slice_takes_tick=slice_takes_tick,
        parse_grant_rounds=parse_grant_rounds,
        parse_lane=parse_lane,
        next_grant_index=next_grant_index,
        take_next_grantee=take_next_grantee,
        backlog_append=_append,
        apply_event=apply_event,
        select_waiting=select_waiting,
        attempt_admission=attempt_admission,
    )
