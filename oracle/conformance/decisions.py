"""The decisions of the conformance protocol, and what a well-formed answer to each is.

Each decision has a name (the request's ``decision``), JSON inputs and a JSON
answer (docs/conformance.md). :func:`normal_answer` reads an answer: it raises
:class:`~oracle.conformance.wire.WireError` for one that is not of the
decision's form (a *malformed* answer), and otherwise returns it in a normal
form in which two answers agree exactly when they are equal: only the fields
the protocol defines, every float in one spelling (``1`` and ``1.0`` are one
number, NaN equals NaN, and ``-0.0`` equals ``0.0``: key values are compared as
the key order compares them, docs/waiting.md, where the two tie).

>>> normal_answer("select_waiting", {"index": 0, "keys": [1.0, "NaN", "-0.0"], "note": "x"})
{'index': 0, 'keys': [1, 'NaN', 0]}
>>> normal_answer("backlog_admits", 1)
Traceback (most recent call last):
...
oracle.conformance.wire.WireError: backlog_admits: true or false, not 1
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from oracle.conformance.wire import (
    JSON,
    WireError,
    number_json,
    read_flag,
    read_float,
    read_int,
    read_list,
    read_request,
)
from oracle.conformance.wire import shown as _shown
from policy.text import cut

__all__ = [
    "DECISIONS",
    "HELLO",
    "PROTOCOL_VERSION",
    "key_value_json",
    "normal_answer",
]

#: The protocol's version, exchanged by the ``hello`` request.
PROTOCOL_VERSION = 1
#: The first request of a session: which decisions does the implementation answer?
HELLO = "hello"


def _fail(what: str, wanted: str, value: JSON) -> WireError:
    return WireError(f"{what}: {wanted}, not {_shown(value)}")


def _text(value: JSON, what: str) -> str:
    if not isinstance(value, str):
        raise _fail(what, "a string", value)
    return value


def _object(value: JSON, what: str, fields: tuple[str, ...]) -> Mapping[str, JSON]:
    if not isinstance(value, dict):
        raise _fail(what, "an object", value)
    missing = [name for name in fields if name not in value]
    if missing:
        raise _fail(what, "an object with " + ", ".join(map(repr, missing)), value)
    return value


def _tuple(value: JSON, what: str, size: int) -> list[JSON]:
    items = read_list(value, what)
    if len(items) != size:
        raise _fail(what, f"a list of {size}", value)
    return items


def key_value_json(value: float) -> float | int | str:
    """A key value in its normal form: the protocol's float form, with -0.0 as 0
    (the two zeros tie in the key order, so an answer may give either).

    >>> key_value_json(-0.0), key_value_json(2.5), key_value_json(float("-inf"))
    (0, 2.5, '-Infinity')
    """
    return number_json(value + 0.0)  # -0.0 + 0.0 is 0.0 (round to nearest)


def _number(value: JSON, what: str) -> float | int | str:
    try:
        return key_value_json(read_float(value))
    except WireError as error:
        raise WireError(f"{what}: {error}") from None


# --------------------------------------------------------------------------- rotation

_ENTRY = ("request", "lane", "kind", "skipped", "cancelled")
_ACTIVE = ("request", "lane", "slices", "budget", "in_flight", "cancelled")
_OBSERVATION = (
    "branches", "use", "action", "ended", "grants", "active", "backlog", "yielded", "acted",
)  # fmt: skip


def _entry(value: JSON, what: str) -> dict[str, JSON]:
    entry = _object(value, what, _ENTRY)
    return {
        "request": read_request(entry["request"], what + ".request"),
        "lane": _text(entry["lane"], what + ".lane"),
        "kind": _text(entry["kind"], what + ".kind"),
        "skipped": read_int(entry["skipped"], what + ".skipped"),
        "cancelled": read_flag(entry["cancelled"], what + ".cancelled"),
    }


def _backlog(value: JSON, what: str) -> list[JSON]:
    return [_entry(item, f"{what}[{i}]") for i, item in enumerate(read_list(value, what))]


def _grant_index(answer: JSON) -> JSON:
    return None if answer is None else read_int(answer, "next_grant_index")


def _take(answer: JSON) -> JSON:
    if answer is None:
        return None
    taken = _object(answer, "take_next_grantee", ("chosen", "backlog"))
    return {
        "chosen": _entry(taken["chosen"], "chosen"),
        "backlog": _backlog(taken["backlog"], "backlog"),
    }


def _optional_text(value: JSON, what: str) -> str | None:
    return None if value is None else _text(value, what)


def _observation(answer: JSON) -> JSON:
    if isinstance(answer, dict) and "refused" in answer:
        return {"refused": _text(answer["refused"], "refused")}
    seen = _object(answer, "apply_event", _OBSERVATION)
    action = seen["action"]
    if action is not None:
        request, kind = _tuple(action, "action", 2)
        action = [read_request(request, "action[0]"), _text(kind, "action[1]")]
    ended = []
    for i, item in enumerate(read_list(seen["ended"], "ended")):
        request, ending = _tuple(item, f"ended[{i}]", 2)
        ended.append([read_request(request, f"ended[{i}][0]"), _text(ending, f"ended[{i}][1]")])
    grants = []
    for i, item in enumerate(read_list(seen["grants"], "grants")):
        request, slices, parked = _tuple(item, f"grants[{i}]", 3)
        grants.append(
            [
                read_request(request, f"grants[{i}][0]"),
                read_int(slices, f"grants[{i}][1]"),
                read_flag(parked, f"grants[{i}][2]"),
            ]
        )
    active = seen["active"]
    if active is not None:
        job = _object(active, "active", _ACTIVE)
        active = {
            "request": read_request(job["request"], "active.request"),
            "lane": _text(job["lane"], "active.lane"),
            "slices": read_int(job["slices"], "active.slices"),
            "budget": read_int(job["budget"], "active.budget"),
            "in_flight": _optional_text(job["in_flight"], "active.in_flight"),
            "cancelled": read_flag(job["cancelled"], "active.cancelled"),
        }
    return {
        "branches": [
            _text(branch, f"branches[{i}]")
            for i, branch in enumerate(read_list(seen["branches"], "branches"))
        ],
        "use": _optional_text(seen["use"], "use"),
        "action": action,
        "ended": ended,
        "grants": grants,
        "active": active,
        "backlog": _backlog(seen["backlog"], "backlog"),
        "yielded": read_flag(seen["yielded"], "yielded"),
        "acted": read_flag(seen["acted"], "acted"),
    }


# ---------------------------------------------------------------------------- selection


def _keys(value: JSON) -> list[JSON]:
    return [_number(key, f"keys[{i}]") for i, key in enumerate(read_list(value, "keys"))]


def _selection(answer: JSON) -> JSON:
    if answer is None:
        return None
    chosen = _object(answer, "select_waiting", ("index", "keys"))
    return {"index": read_int(chosen["index"], "index"), "keys": _keys(chosen["keys"])}


_OUTCOMES = ("admitted", "blocked")


def _attempt(answer: JSON) -> JSON:
    outcome = _text(_object(answer, "attempt_admission", ("outcome",))["outcome"], "outcome")
    assert isinstance(answer, dict)
    if outcome == "empty":
        return {"outcome": "empty"}
    if outcome not in _OUTCOMES:
        raise _fail("outcome", "empty, admitted or blocked", outcome)
    fields = _object(answer, "attempt_admission", ("index", "keys", "queue"))
    return {
        "outcome": outcome,
        "index": read_int(fields["index"], "index"),
        "keys": _keys(fields["keys"]),
        "queue": [
            read_request(item, f"queue[{i}]")
            for i, item in enumerate(read_list(fields["queue"], "queue"))
        ],
    }


def _boolean(name: str) -> Callable[[JSON], JSON]:
    def read(answer: JSON) -> JSON:
        return read_flag(answer, name)

    return read


_LANE_NAMES = ("low", "normal", "high")


def _budget(answer: JSON) -> JSON:
    budget = read_int(answer, "parse_grant_rounds")
    if budget < 0:
        raise _fail("parse_grant_rounds", "a budget >= 0", answer)
    return budget


def _lane(answer: JSON) -> JSON:
    if not isinstance(answer, str) or answer not in _LANE_NAMES:
        raise _fail("parse_lane", '"low", "normal" or "high"', answer)
    return answer


#: Every decision of the protocol, in the order the checks run them, with the
#: function reading its answer into the normal form.
DECISIONS: Mapping[str, Callable[[JSON], JSON]] = {
    "slice_grant_expired": _boolean("slice_grant_expired"),
    "backlog_admits": _boolean("backlog_admits"),
    "slice_takes_tick": _boolean("slice_takes_tick"),
    "parse_grant_rounds": _budget,
    "parse_lane": _lane,
    "next_grant_index": _grant_index,
    "take_next_grantee": _take,
    "backlog_append": lambda answer: _backlog(answer, "backlog_append"),
    "apply_event": _observation,
    "select_waiting": _selection,
    "attempt_admission": _attempt,
}


def _hello(answer: JSON) -> JSON:
    """The hello's answer: the protocol version (exactly the integer 1: not ``true``,
    not ``1.0``) and the decisions answered, each a name this kit knows (a misspelt
    one would silently leave its check unrun)."""
    if not isinstance(answer, dict) or not isinstance(answer.get("decisions"), list):
        raise WireError(
            "malformed answer to hello: it must be"
            f' {{"protocol": {PROTOCOL_VERSION}, "decisions": [names...]}}, not {_shown(answer)}'
        )
    version = answer.get("protocol")
    if type(version) is not int or version != PROTOCOL_VERSION:
        raise WireError(
            f"the command speaks protocol {_shown(version)}, this kit speaks {PROTOCOL_VERSION}"
        )
    named = answer["decisions"]
    odd = [name for name in named if not isinstance(name, str)]
    if odd:  # a list or an object is no name (and cannot be looked up)
        raise WireError(
            f"malformed answer to hello: each decision name must be text, not {_shown(odd[0])}"
        )
    unknown = [name for name in named if name not in DECISIONS]
    if unknown:
        raise WireError(
            f"the hello names a decision this kit does not know: {cut(unknown[0], 120)}"
            f" (the decisions: {', '.join(DECISIONS)})"
        )
    return {"protocol": PROTOCOL_VERSION, "decisions": sorted(set(named))}


def normal_answer(decision: str, answer: JSON) -> JSON:
    """``answer`` to ``decision`` (or to the ``hello``) in normal form; a ``WireError``
    when it is malformed. The one reading of an answer, total: for every JSON value
    (as :func:`~oracle.conformance.wire.read_line` reads them) it returns or raises
    ``WireError``, nothing else.

    >>> normal_answer("hello", {"protocol": 1, "decisions": ["backlog_admits"]})
    {'protocol': 1, 'decisions': ['backlog_admits']}
    """
    read = _hello if decision == HELLO else DECISIONS.get(decision)
    if read is None:
        raise WireError(f"no decision is named {_shown(decision)}")
    return read(answer)
