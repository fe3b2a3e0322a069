"""Rotation scenario files: the data a grant schedule is replayed from."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Literal

from oracle.harness.fields import (
    SCENARIO_FIELDS,
    Node,
    check_distinct_ids,
    check_total,
    read_description,
)
from oracle.harness.limits import REQUESTS, TOTAL_SLICES
from policy import Ending, Lane, RequestId, RulesProfile, parse_grant_rounds, parse_lane
from policy.rotation import SKIP_CAP
from policy.waiting.numbers import shown

__all__ = [
    "CancelAfterPark",
    "CancelAtTick",
    "CancelRule",
    "RotationExpect",
    "RotationRequest",
    "RotationScenario",
    "read_expected_grants",
    "read_expected_outcomes",
    "read_rotation",
]

_OUTCOMES = {ending.value: ending for ending in Ending}


@dataclass(frozen=True, slots=True)
class CancelAtTick:
    """Cancel at the given tick, after that tick's arrivals."""

    tick: int


@dataclass(frozen=True, slots=True)
class CancelAfterPark:
    """Cancel right after the request's n-th park."""

    parks: int


#: ``"waiting"``: cancel right after the request enters the backlog.
CancelRule = Literal["waiting"] | CancelAtTick | CancelAfterPark


@dataclass(frozen=True, slots=True)
class RotationRequest:
    id: RequestId
    lane: Lane
    slices: int  # total slices, slice 0 included
    arrive: int = 0
    may_wait: bool = True
    declined_at_promotion: bool = False
    cancel: CancelRule | None = None


@dataclass(frozen=True, slots=True)
class RotationExpect:
    grants: tuple[tuple[RequestId, int], ...] | None
    outcomes: Mapping[RequestId, Ending] | None


@dataclass(frozen=True, slots=True)
class RotationScenario:
    name: str
    description: str
    budget: int
    skip_cap: int
    classic_work: Literal["never", "always"] | frozenset[int]
    requests: tuple[RotationRequest, ...]
    expect: RotationExpect | None
    profile: RulesProfile = RulesProfile.SEED

    def has_classic_work(self, tick: int) -> bool:
        """Whether other requests have classic work at ``tick``."""
        match self.classic_work:
            case "never":
                return False
            case "always":
                return True
            case ticks:
                return tick in ticks


def read_rotation(doc: Node) -> RotationScenario:
    """A rotation scenario from its parsed document (raises FieldError)."""
    doc.object(
        {"kind", "name"},
        SCENARIO_FIELDS
        | {"requests", "budget", "budget_setting", "skip_cap", "classic_work", "profile"},
    )
    if not doc.has("requests"):  # the events form is read by oracle.harness.rotation_events
        raise doc.child("requests").fail('is required (or give "events", an exact event list)')
    if doc.has("budget") and doc.has("budget_setting"):
        raise doc.child("budget_setting").fail(
            "give budget (an integer) or budget_setting (raw text), not both"
        )
    budget_node = doc.optional("budget")
    setting_node = doc.optional("budget_setting")
    if budget_node is not None:
        budget = budget_node.integer(0)
    else:  # raw text as the host reads it; no setting at all is the unset default
        budget = parse_grant_rounds(None if setting_node is None else setting_node.string())
    skip_cap_node = doc.optional("skip_cap")
    requests_node = doc.child("requests")
    requests = tuple(_read_request(node) for node in requests_node.items(REQUESTS))
    if not requests:
        raise requests_node.fail("must list at least one request")
    # The driver runs about one tick per slice (two with classic work): bound them all.
    check_total(
        ((requests_node.child(i).child("slices"), r.slices) for i, r in enumerate(requests)),
        TOTAL_SLICES,
    )
    ids = [request.id for request in requests]
    check_distinct_ids(ids, doc.child("requests"))
    expect_node = doc.optional("expect")
    return RotationScenario(
        name=doc.child("name").name(),
        description=read_description(doc),
        budget=budget,
        skip_cap=SKIP_CAP if skip_cap_node is None else skip_cap_node.integer(1),
        classic_work=_read_classic_work(doc.optional("classic_work")),
        requests=requests,
        expect=None if expect_node is None else _read_expect(expect_node, set(ids)),
        profile=read_profile(doc),
    )


#: Every rules profile by the name scenario files, the kit's states and the CLI give it.
PROFILES_BY_NAME = {profile.value: profile for profile in RulesProfile}


def read_profile(doc: Node) -> RulesProfile:
    """The scenario's ``profile``: the rules it runs by, ``"seed"`` when absent."""
    node = doc.optional("profile")
    if node is None:
        return RulesProfile.SEED
    profile = PROFILES_BY_NAME.get(node.string())
    if profile is None:
        raise node.fail(f"must be one of {', '.join(map(repr, PROFILES_BY_NAME))}")
    return profile


def _read_classic_work(node: Node | None) -> Literal["never", "always"] | frozenset[int]:
    if node is None:
        return "never"
    if node.value == "never":
        return "never"
    if node.value == "always":
        return "always"
    if isinstance(node.value, list):
        return frozenset(tick.integer(0) for tick in node.items())
    raise node.fail('must be "never", "always" or an array of tick numbers')


def _read_request(node: Node) -> RotationRequest:
    node.object({"id", "slices"}, {"lane", "arrive", "may_wait", "declined_at_promotion", "cancel"})
    lane = node.optional("lane")
    arrive = node.optional("arrive")
    may_wait = node.optional("may_wait")
    declined = node.optional("declined_at_promotion")
    cancel = node.optional("cancel")
    return RotationRequest(
        id=node.child("id").identity(),
        lane=Lane.NORMAL if lane is None else parse_lane(lane.name()),
        slices=node.child("slices").integer(1),
        arrive=0 if arrive is None else arrive.integer(0),
        may_wait=True if may_wait is None else may_wait.boolean(),
        declined_at_promotion=False if declined is None else declined.boolean(),
        cancel=None if cancel is None else _read_cancel(cancel),
    )


def _read_cancel(node: Node) -> CancelRule:
    if node.value == "waiting":
        return "waiting"
    if isinstance(node.value, dict) and len(node.value) == 1:
        if node.has("after_park"):
            return CancelAfterPark(node.child("after_park").integer(1))
        if node.has("tick"):
            return CancelAtTick(node.child("tick").integer(0))
    raise node.fail('must be "waiting", {"after_park": N} or {"tick": N}')


def _read_expect(node: Node, ids: set[RequestId]) -> RotationExpect:
    node.object(set(), {"grants", "outcomes"})
    return RotationExpect(
        read_expected_grants(node.optional("grants"), ids),
        read_expected_outcomes(node.optional("outcomes"), ids),
    )


def read_expected_grants(
    node: Node | None, ids: AbstractSet[RequestId]
) -> tuple[tuple[RequestId, int], ...] | None:
    """An expected grant log, ``[[request, slices], ...]``, naming only ``ids``."""
    if node is None:
        return None
    pairs = []
    for pair in node.items():
        if not isinstance(pair.value, list) or len(pair.value) != 2:
            raise pair.fail("must be a [request id, slices] pair")
        request = pair.child(0).identity()
        if request not in ids:
            raise pair.child(0).fail(f"names no request of the scenario: {shown(request)}")
        pairs.append((request, pair.child(1).integer(1)))
    return tuple(pairs)


def read_expected_outcomes(
    node: Node | None, ids: AbstractSet[RequestId]
) -> Mapping[RequestId, Ending] | None:
    """Expected outcomes, ``{"A": "completed", ...}``, naming only ``ids`` (by text)."""
    if node is None:
        return None
    outcomes: dict[RequestId, Ending] = {}
    by_text = {str(request): request for request in ids}
    for key, value in node.entries():
        if key not in by_text:
            raise value.fail(f"names no request of the scenario: {shown(key)}")
        text = value.string()
        if text not in _OUTCOMES:
            raise value.fail(f"must be one of {', '.join(_OUTCOMES)}")
        outcomes[by_text[key]] = _OUTCOMES[text]
    return outcomes
