"""One benchmark figure: a measured ratio, its target and whether it is met."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Row:
    """``ratio`` = ``kernel_seconds / baseline_seconds`` (both measured in the same run).

    A target is met when the ratio is at most ``target``, or at least ``target``
    for a speed-up (``higher_is_better``). A row without a target only informs.

    >>> Row("x", 10, 2.0, 1.0, 2.0, 3.0, "").met, Row("y", None, 4.0, 1.0, 4.0, 30.0, "", True).met
    (True, False)
    """

    name: str
    n: int | None
    kernel_seconds: float
    baseline_seconds: float
    ratio: float
    target: float | None
    note: str
    higher_is_better: bool = False

    @property
    def met(self) -> bool | None:
        """Whether the target holds (None without a target)."""
        if self.target is None:
            return None
        return self.ratio >= self.target if self.higher_is_better else self.ratio <= self.target
