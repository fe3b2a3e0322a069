"""What a drop-in queue counts of its admissions, and the one warning it logs.

Every admission (a pop) is counted by its *class*: ``"resumed"`` for a
resumed request, ``"fifo"`` under a policy without keys, otherwise the value
of the policy's first key (named by ``class_names`` when given: the Ascend
lanes' ``immediate``, ``aged long``, ``short``, ``long``). One class may be
watched (``run_class``): a run of :data:`RUN_WARNING` consecutive admissions
of it is logged once per queue, with the queue's advice if it has one (the
Ascend lanes': long requests are overtaking short ones).

This module logs, on the logger ``policy.adapters.vllm``; pyproject.toml's
``kernel-pure`` contract allows exactly its ``logging`` import.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from policy.waiting import WaitingEntry

__all__ = ["MAX_CLASSES", "RUN_WARNING", "AdmissionCounts", "QueueStats", "class_label"]

_LOG: Final = logging.getLogger("policy.adapters.vllm")

#: Distinct classes counted; admissions of any further class are counted as
#: ``"other"``, so a policy whose first key takes many values (a continuous score)
#: cannot grow the counts without bound.
MAX_CLASSES: Final = 64

#: A run of this many consecutive admissions of the watched class is logged once.
RUN_WARNING: Final = 3


@dataclass(frozen=True, slots=True)
class QueueStats:
    """Admissions per class of the policy's first key, and the current run.

    ``admissions`` counts, by class name, the requests popped since the queue
    was made: ``"resumed"`` for a prepended (resumed) request, ``"fifo"`` under
    a policy without keys, otherwise the name of the first key's value
    (``class_names``, or the value itself). ``run`` is the number of
    consecutive admissions, up to now, of the class named ``run_class`` (for
    the Ascend lanes: aged long requests); 0 when no class is watched.
    ``waiting`` is how many requests wait.
    """

    admissions: Mapping[str, int]
    run_class: str | None
    run: int
    waiting: int


def class_label(value: object, names: Mapping[float, str]) -> str:
    """The name of a class: a name of ``names``, a whole number without ``.0``,
    any other value by ``repr``.

    >>> class_label(3.0, {}), class_label(1.0, {1.0: "aged long"}), class_label("fifo", {})
    ('3', 'aged long', 'fifo')
    """
    if isinstance(value, str):
        return value
    assert isinstance(value, float)
    named = names.get(value)
    if named is not None:
        return named
    if math.isfinite(value) and value == int(value):
        return str(int(value))  # "3", not "3.0": classes are usually whole numbers
    return repr(value)


class AdmissionCounts:
    """The admissions of one queue by class, and the run of the watched class.

    Not thread-safe on its own: the queue calls it under its lock.

    >>> counts = AdmissionCounts({0.0: "zero"}, run_class=None)
    >>> from policy.waiting import make_entry
    >>> entry = make_entry("a", {}, 0, 0.0)
    >>> counts.counted(entry, (0.0,)), counts.counted(entry, ()), counts.stats(waiting=2)
    (False, False, QueueStats(admissions={'zero': 1, 'fifo': 1}, run_class=None, run=0, waiting=2))
    """

    __slots__ = ("_admissions", "_advice", "_names", "_run", "_warned", "_watched")

    def __init__(
        self, class_names: Mapping[float, str], run_class: float | None, run_advice: str = ""
    ) -> None:
        self._names = class_names
        self._watched = run_class
        self._advice = run_advice
        self._admissions: dict[object, int] = {}
        self._run = 0
        self._warned = False

    def counted(self, entry: WaitingEntry, keys: tuple[float, ...]) -> bool:
        """Count one admission (``keys``: the key values it was selected by); whether
        the run's warning is due now (the caller logs it with :meth:`warn`, outside
        its lock)."""
        kind = self._tallied(((entry, keys),))
        watched = self._watched
        if watched is None:
            return False
        if kind == watched:
            self._run += 1
            if self._run == RUN_WARNING and not self._warned:
                self._warned = True
                return True
        else:
            self._run = 0
        return False

    @property
    def watches_run(self) -> bool:
        """Whether a class is watched (then each admission is counted as it happens,
        so that the warning comes at its admission)."""
        return self._watched is not None

    def counted_all(self, admitted: Iterable[tuple[WaitingEntry, tuple[float, ...]]]) -> None:
        """Count admissions, in order, none watched (no warning can be due)."""
        self._tallied(admitted)

    def _tallied(self, admitted: Iterable[tuple[WaitingEntry, tuple[float, ...]]]) -> object:
        """Count each admission in its class (one loop for a chunk of them); the last
        one's class."""
        counts = self._admissions
        kind: object = None
        for entry, keys in admitted:
            if entry.resumed:
                kind = "resumed"
            elif not keys:
                kind = "fifo"
            else:
                first = keys[0]
                kind = first if first == first else "nan"  # noqa: PLR0124 - NaNs hash apart: one class
            seen = counts.get(kind)
            if seen is None:
                if len(counts) >= MAX_CLASSES:
                    kind = "other"
                seen = counts.get(kind, 0)
            counts[kind] = seen + 1
        return kind

    def warn(self) -> None:
        """Log the run of consecutive admissions of the watched class: what it says of
        the other classes, then the queue's advice, if it has one."""
        assert self._watched is not None
        _LOG.warning(
            "%d consecutive admissions of class %s, the watched class: requests of the"
            " other classes wait meanwhile%s",
            RUN_WARNING,
            class_label(self._watched, self._names),
            f"; {self._advice}" if self._advice else "",
        )

    def stats(self, waiting: int) -> QueueStats:
        """The counts so far, by class name."""
        admissions: dict[str, int] = {}
        for kind, count in self._admissions.items():
            label = class_label(kind, self._names)
            admissions[label] = admissions.get(label, 0) + count
        watched = self._watched
        run_class = None if watched is None else class_label(watched, self._names)
        return QueueStats(admissions, run_class, self._run, waiting)
