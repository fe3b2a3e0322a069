"""The documented limits of scenario files, as data: one table, applied by one rule each.

Every number a scenario gives is read by :meth:`~oracle.harness.fields.Node.integer`
or :meth:`~oracle.harness.fields.Node.number`, each with a :class:`Limit` (the
default one unless the field says otherwise); every array and free-form object
by :meth:`~oracle.harness.fields.Node.items` / ``entries``, each with a count
limit; every id and name by :func:`~oracle.harness.fields.check_name`; and the
work a file implies by :func:`~oracle.harness.fields.check_total` and
:func:`~oracle.harness.fields.check_work`.
A value beyond its limit is refused when the file is loaded, at its JSON path,
with a reason that states the limit. docs/harness.md, "Limits", is this table.

Why these values make every engine's arithmetic safe:

- integers: at most :data:`INTEGER` (2**53) in magnitude, so each is exactly a
  float and every sum the engines form on them (KV tokens, ``used + units``,
  ``prompt + out - 1``) is an exact Python integer;
- times: each given time or duration is at most :data:`SECONDS` (1e12 s). A pool's
  event times are at most the latest arrival plus every hold, below
  ``1e12 * (1 + REQUESTS)`` (about 1e16); a step engine's times are at most
  ``base + n * iteration_cost`` with ``n`` at most the iteration bound, below
  ``1e12 * (1 + STEP_ITERATIONS)`` (about 1e18). Both are far inside the float range
  (1.8e308), so no time is ever infinite and every result is JSON;
- work: the rotation driver runs at most about two ticks per slice, the step engine
  at most its iteration bound, and one iteration visits each request at most a
  few times, so the totals below bound the replay's time and memory; the keys a
  replay evaluates are bounded by :data:`KEY_WORK` and :data:`SELECTION_WORK`
  (:func:`oracle.harness.admission_scenario.check_key_work`);
- output: every id and name is at most :data:`NAME` characters, and the events
  table cuts an event's text to :data:`EVENT_TEXT_WIDTH` characters, so what a
  replay prints is a bounded number of bytes per event, grant and request.

>>> INTEGER.value == 2**53 and float(INTEGER.value) == INTEGER.value
True
>>> SECONDS.value * (1 + STEP_ITERATIONS.value) < 1e19
True
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

__all__ = [
    "EVENT_TEXT_WIDTH",
    "FLOAT",
    "INTEGER",
    "ITEMS",
    "KEY_WORK",
    "LIMITS",
    "NAME",
    "REQUESTS",
    "SECONDS",
    "SELECTION_WORK",
    "STEP_ITERATIONS",
    "STEP_WORK",
    "TOTAL_SLICES",
    "Limit",
]


#: A limit's number: a count or an integer magnitude (int), or a float magnitude.
N = TypeVar("N", int, float)


@dataclass(frozen=True, slots=True)
class Limit(Generic[N]):
    """The largest magnitude or count a scenario may give, and why.

    >>> INTEGER.beyond()
    'beyond the limit of 2**53 = 9007199254740992 for every integer (exact as a float)'
    """

    applies_to: str  # what the limit bounds, as docs/harness.md names it
    value: N
    text: str  # the value as messages write it
    why: str  # the short reason messages give

    def beyond(self) -> str:
        """The end of a refusal: which limit a value exceeds, and why it exists."""
        return f"beyond the limit of {self.text} for {self.applies_to} ({self.why})"


#: Every integer a scenario gives (ids, serials, slices, ticks, budgets, tokens, units).
INTEGER: Final = Limit("every integer", 2**53, "2**53 = 9007199254740992", "exact as a float")

#: Every time and duration a scenario gives, in seconds (``enqueue``, ``hold``,
#: ``iteration_cost``, ``horizon``, an attempt's ``now``, in magnitude).
SECONDS: Final = Limit(
    "every time and duration",
    1e12,
    "1e12 seconds",
    "so that every time an engine adds up stays finite",
)

#: Values that are only compared or handed to keys (attributes, ``budget_left``,
#: expected times and keys): any float. An integer must still be exactly a float.
FLOAT: Final = Limit("a value", sys.float_info.max, "1.8e308", "the float range")

#: Elements of any array, members of any object that is a map (attributes,
#: ``budget_left``, expected outcomes); events of an event list included.
ITEMS: Final = Limit(
    "the elements of an array or members of a map",
    100_000,
    "100000",
    "each is read and replayed",
)

#: Requests of one scenario.
REQUESTS: Final = Limit(
    "the requests of a scenario",
    10_000,
    "10000",
    "each is queued, replayed and recorded",
)

#: Total ``slices`` of a rotation scenario's requests.
TOTAL_SLICES: Final = Limit(
    "the total slices of a rotation scenario",
    100_000,
    "100000",
    "each slice is a tick of the replay, two with classic work, each recorded",
)

#: The step engine's iteration bound: the sum over requests of
#: ``ceil(prompt / min(chunk, budget)) + out - 1`` (no run has more iterations).
STEP_ITERATIONS: Final = Limit(
    "the step engine's iteration bound",
    1_000_000,
    "1000000",
    "sum of ceil(prompt / min(chunk, budget)) + out - 1: no run has more iterations",
)

#: The step engine's iteration bound times the number of requests.
STEP_WORK: Final = Limit(
    "the step engine's work bound",
    10_000_000,
    "10000000",
    "iteration bound x requests: an iteration visits each request at most a few times",
)

#: Every id and name a scenario gives, in characters: request ids, the scenario's
#: ``name``, lanes, stage names and the member names of every object (attribute
#: names in ``attrs``, stages in ``budget_left``, ids in expected ``outcomes``).
NAME: Final = Limit(
    "every id and name",
    200,
    "200 characters",
    "each is shown whole, in every table row and result that names it",
)

#: Requests times the policy's key nodes: each request's keys are computed when
#: it is queued (and again when it leaves an index), at most a few times each.
KEY_WORK: Final = Limit(
    "the key work bound",
    2_000_000,
    "2000000",
    "each request's keys are computed when it is queued",
)

#: Admission attempts times the entries each attempt evaluates times the policy's
#: key nodes (docs/harness.md, "Limits", for each engine's attempts and each path's
#: entries).
SELECTION_WORK: Final = Limit(
    "the selection work bound",
    30_000_000,
    "30000000",
    "each attempt evaluates the keys of the entries it compares",
)

#: Every limit, in the order docs/harness.md lists them.
LIMITS: Final = (
    INTEGER,
    SECONDS,
    FLOAT,
    ITEMS,
    REQUESTS,
    NAME,
    TOTAL_SLICES,
    STEP_ITERATIONS,
    STEP_WORK,
    KEY_WORK,
    SELECTION_WORK,
)

#: Widest event text the events table shows, in characters (not a limit of the
#: file: a longer text is shown cut, ending in ``...``, and the column is never
#: padded wider).
EVENT_TEXT_WIDTH: Final = 80
