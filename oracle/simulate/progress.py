"""How ``policy-kernel simulate`` tells its progress on stderr.

A progress bar (tqdm, the optional ``[progress]`` extra) when stderr is a
terminal and tqdm is installed; otherwise one plain line per finished run, which
a log or a pipe keeps readable. Nothing here is needed to compute a comparison.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol, TextIO

__all__ = ["Progress", "progress_on"]


class Progress(Protocol):
    def __call__(self, done: int, total: int, what: str, seconds: float) -> None:
        """Run ``done`` of ``total`` (``what``) finished ``seconds`` after the start."""

    def close(self) -> None: ...


class _Lines:
    """``simulate: [3/11] step engine, ascend-no-aging (0.5 s)``, one per run."""

    def __init__(self, err: TextIO) -> None:
        self.err = err

    def __call__(self, done: int, total: int, what: str, seconds: float) -> None:
        print(f"simulate: [{done}/{total}] {what} ({seconds:.1f} s)", file=self.err, flush=True)

    def close(self) -> None:
        pass


class _Bar:
    """One tqdm bar, made at the first finished run (when the total is known)."""

    def __init__(self, err: TextIO, tqdm: Any) -> None:
        self.err, self.tqdm = err, tqdm
        self.bar: Any = None

    def __call__(self, done: int, total: int, what: str, seconds: float) -> None:  # noqa: ARG002
        if self.bar is None:
            self.bar = self.tqdm(total=total, file=self.err, desc="simulate", unit="run")
        self.bar.set_postfix_str(what, refresh=False)
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def progress_on(err: TextIO) -> Progress:
    """A bar on a terminal when tqdm is installed; plain lines otherwise."""
    if not err.isatty():
        return _Lines(err)
    try:
        # Imported by name: tqdm is an optional extra, absent from the suite's environment.
        module = importlib.import_module("tqdm")
    except ImportError:
        return _Lines(err)
    return _Bar(err, module.tqdm)
