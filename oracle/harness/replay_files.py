"""``policy-kernel replay``: scenario files replayed one by one, each file's table
or JSON line written whole, every file counted once, and each run drawn into
the ``--plot`` folder when asked. A file that cannot be read or replayed is
one line on standard error; the run goes on."""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Final, TextIO

from returns.result import Failure

from oracle import plots
from oracle.exits import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK
from oracle.harness.render import Picture, replay_scenario
from oracle.harness.scenarios import (
    ScenarioError,
    expand_paths,
    golden_paths,
    load_scenario,
    os_reason,
)
from oracle.simulate.run import Comparison
from policy.text import cut, printable

__all__ = ["bug_text", "draw_waits", "plot_folder", "replay_files"]

#: Longest description of an unexpected error kept in its one-line report.
BUG_TEXT_LIMIT: Final = 200


@dataclass
class Tally:
    """How the files of one replay ended; every file is counted once."""

    passed: int = 0
    failed: int = 0
    bad: int = 0
    unchecked: int = 0  # replayed, with no ``expect`` to check
    # With --plot: pictures written and not, and the files that have none.
    pictures_written: int = 0
    pictures_failed: int = 0
    no_picture: int = 0

    def summary(self) -> str:
        line = (
            f"replay: {self.passed} passed, {self.failed} failed, {self.bad} bad, "
            f"{self.unchecked} without expect"
        )
        if self.pictures_written or self.pictures_failed or self.no_picture:
            written = self.pictures_written
            line += f"; {written} picture{'' if written == 1 else 's'} written"
            if self.pictures_failed:
                line += f", {self.pictures_failed} not written"
            if self.no_picture:
                have = "scenario has" if self.no_picture == 1 else "scenarios have"
                line += f" ({self.no_picture} event-list {have} none)"
        return line

    def status(self) -> int:
        if self.bad or self.pictures_failed:
            return EXIT_BAD_INPUT
        return EXIT_FAILED if self.failed else EXIT_OK


@dataclass(frozen=True, slots=True)
class Replayed:
    text: str  # what the replay prints
    passed: bool | None  # None: the file has no ``expect``
    suffix: str  # of its picture's file name
    picture: Picture | None


def replay_file(path: Path, as_json: bool) -> Replayed | ScenarioError:
    """What replaying one file prints, its verdict and picture, or why it cannot be used.

    Output is collected first and written whole by the caller, so a file whose
    replay fails half-way leaves no partial table or JSON line on stdout.
    """
    try:
        loaded = load_scenario(path)
        if isinstance(loaded, Failure):
            refused: ScenarioError = loaded.failure()
            return refused
        buffer = io.StringIO()
        verdict, suffix, picture = replay_scenario(loaded.unwrap(), buffer, as_json)
        return Replayed(buffer.getvalue(), verdict.passed, suffix, picture)
    # One scenario's unexpected error (a bug, or a limit not yet checked at load
    # time) must not end the run: it is that file's one-line report. Exception,
    # not BaseException: Ctrl-C and SystemExit still end the command.
    except Exception as error:
        return ScenarioError(str(path), "", f"cannot replay: internal error: {bug_text(error)}")


def draw_waits(folder: Path, err: TextIO, comparison: Comparison) -> bool:
    mode = "-quick" if comparison.quick else ""
    target = folder / f"waits-seed{comparison.seed}{mode}.png"
    drawn = draw(
        partial(plots.write_wait_distribution_png, plots.wait_distribution_data(comparison)),
        target,
        "simulate",
        err,
    )
    if drawn:
        err.write(f"simulate: picture written to {printable(str(target))}\n")
    return drawn


def bug_text(error: Exception) -> str:
    try:
        detail = str(error)
    except Exception:  # str() of an exception may itself raise (a huge integer in its args)
        detail = ""
    text = printable(f"{type(error).__name__}: {detail}" if detail else type(error).__name__)
    return cut(text, BUG_TEXT_LIMIT)


def replay_files(
    paths: Sequence[str], as_json: bool, plot: Path | None, out: TextIO, err: TextIO
) -> int:
    sources = list(expand_paths(paths)) if paths else list(golden_paths())
    if not sources:
        err.write("policy-kernel: no scenario files found\n")
        return EXIT_BAD_INPUT
    tally = Tally()
    names = PictureNames(plot) if plot is not None else None
    for source in sources:
        replayed = source if isinstance(source, ScenarioError) else replay_file(source, as_json)
        if isinstance(replayed, ScenarioError):
            err.write(f"policy-kernel: {replayed}\n")
            tally.bad += 1
            continue
        out.write(replayed.text)
        if replayed.passed is None:
            tally.unchecked += 1
        elif replayed.passed:
            tally.passed += 1
        else:
            tally.failed += 1
        if names is not None:
            assert isinstance(source, Path)  # a bad source ended above
            if replayed.picture is None:
                tally.no_picture += 1
            else:
                target = names.take(source.stem, replayed.suffix)
                if draw(replayed.picture, target, str(source), err):
                    tally.pictures_written += 1
                else:
                    tally.pictures_failed += 1
    if not as_json:  # --json prints scenario objects only; the exit status sums them up
        out.write(tally.summary() + "\n")
    return tally.status()


#: Longest file stem kept in a picture's name, in bytes (a name is at most 255).
MOST_STEM_BYTES: Final = 200


class PictureNames:
    """File names in the --plot folder: a scenario file's stem, made unique within
    one run (two folders may each hold a ``budget-1.json``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.taken: set[str] = set()

    def take(self, stem: str, suffix: str) -> Path:
        # A file name is at most 255 bytes: a long stem is cut, the suffix kept.
        while len(os.fsencode(stem)) > MOST_STEM_BYTES:
            stem = stem[:-1]
        name, copy = f"{stem}-{suffix}", 1
        while name in self.taken:
            copy += 1
            name = f"{stem}-{suffix}-{copy}"
        self.taken.add(name)
        return self.folder / f"{name}.png"


def plot_folder(text: str, err: TextIO) -> Path | None:
    """The --plot folder, created; None, after one line on ``err``, when matplotlib is
    missing or the folder cannot be made. Checked before any run, so a missing
    extra costs nothing."""
    try:
        plots.require_matplotlib()
    except RuntimeError as error:
        err.write(f"policy-kernel: --plot: {error}\n")
        return None
    if not text:
        err.write("policy-kernel: --plot: an empty argument names no folder\n")
        return None
    folder = Path(text)
    if folder.exists() and not folder.is_dir():
        err.write(f"policy-kernel: --plot: not a folder: {printable(text)}\n")
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        reason = os_reason(error)
        where = f"{reason}: {error.filename}" if error.filename else reason
        err.write(f"policy-kernel: --plot: cannot make the folder: {printable(where)}\n")
        return None
    return folder


def draw(picture: Picture, target: Path, source: str, err: TextIO) -> bool:
    """Write one picture; a failure is one line on ``err`` and ``False``."""
    try:
        picture(target)
    except OSError as error:
        err.write(
            f"policy-kernel: {printable(source)}: cannot write the picture"
            f" {printable(str(target))}: {printable(os_reason(error))}\n"
        )
        return False
    except Exception as error:  # a drawing bug must not end the run (as for a replay)
        err.write(
            f"policy-kernel: {printable(source)}: cannot draw the picture: internal error:"
            f" {bug_text(error)}\n"
        )
        return False
    return True
