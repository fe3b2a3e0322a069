"""Rows: a waiting entry as the queue stores it, a plain tuple the collector lets be.

A *row* is a :class:`~policy.waiting.entry.WaitingEntry`'s fields in the
same order, held in a ``tuple`` itself rather than in the named tuple. The
queue keeps rows (in its lines and its identity index) and gives
``WaitingEntry`` records at its interface (:func:`as_entry`, about 0.2 µs),
so a reader meets only named fields.

Why: CPython's collector stops tracking a tuple, of exactly the type
``tuple``, whose items it need not track (numbers, text, ``None``, tuples
already untracked), at the first collection the tuple survives; a
``WaitingEntry``, a subclass, stays tracked for life, and every full
collection visits it and each object it holds. Measured in vLLM's serving
loop (``oracle.bench.vllm_loop``, FCFS, collector on): a full collection
took about 520 ms at 100,000 waiting with the queue's entries tracked and
about 360 ms untracked, vLLM's own deque 330 ms; at 10,000 waiting, 70, 58
and 55 ms. A row's lines and index (tuples of rows) go untracked with it.
A host that has the queue carry a tracked object (``carried``) keeps that
row tracked, and nothing else changes.

The positions below read a row and a ``WaitingEntry`` alike (it is a tuple
with the same fields), so the fast layer's code takes either.

>>> from policy.waiting.entry import make_entry, same_entry
>>> entry = make_entry("a", {"prompt": 2}, 0, 1.0)
>>> row = tuple(entry)
>>> row[IDENTITY], same_entry(as_entry(row), entry)
('a', True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from operator import itemgetter
from typing import Final, TypeAlias, cast

from policy.identity import RequestId
from policy.waiting.entry import AttributeValue, WaitingEntry

__all__ = [
    "CARRIED",
    "ENQUEUED_AT",
    "ENQUEUE_KEYS",
    "IDENTITY",
    "NAMES",
    "RESUMED",
    "SERIAL",
    "TICKET",
    "VALUES",
    "Row",
    "as_entry",
    "ticket_of",
]

#: A row: ``WaitingEntry``'s fields, in its order, in a plain tuple.
Row: TypeAlias = tuple[
    RequestId,
    tuple[str, ...],
    tuple[AttributeValue, ...],
    int,
    float,
    bool,
    tuple[float, ...] | None,
    int,
    object,
]

# The field positions, as in WaitingEntry (tests/waiting/fast/test_rows.py checks).
IDENTITY: Final = 0
NAMES: Final = 1
VALUES: Final = 2
SERIAL: Final = 3
ENQUEUED_AT: Final = 4
RESUMED: Final = 5
ENQUEUE_KEYS: Final = 6
TICKET: Final = 7
CARRIED: Final = 8

#: The record of a row, as the queue's interface gives it: what
#: ``WaitingEntry._make`` does, without its Python frame and its length check (a
#: row has the fields) — 0.20 against 0.24 µs, once per entry read.
as_entry: Final = cast(
    Callable[[Iterable[object]], WaitingEntry], partial(tuple.__new__, WaitingEntry)
)

#: A row's ticket, read in C (a key function: a Python one costs a frame per row).
ticket_of: Final[Callable[[tuple[object, ...]], int]] = itemgetter(TICKET)
