"""Loading scenario files: one clear error per bad file, never a traceback.

Reading is bounded and never blocks: only regular files are read, by the
project's one file rule (:func:`policy.adapters.regular_files.read_regular_file`:
a FIFO or a device named ``*.json`` is refused unopened, and one swapped in
after the check cannot block either), at most :data:`MAX_SCENARIO_BYTES` bytes, decoded as
UTF-8 (a bad byte is named by its offset) and parsed by the library's one JSON
reader, :func:`policy.json_text.read_json`. Folders are walked iteratively,
without following directory symlinks, so a deep tree or a symlink loop costs
neither the stack nor for ever.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Final

from returns.result import Failure, Result, Success

from oracle.harness.admission_scenario import AdmissionScenario, read_admission
from oracle.harness.fields import FieldError, Node
from oracle.harness.rotation_events import RotationEventsScenario, read_rotation_events
from oracle.harness.rotation_scenario import RotationScenario, read_rotation
from policy.adapters.regular_files import read_regular_file
from policy.json_text import read_json
from policy.text import printable

__all__ = [
    "MAX_SCENARIO_BYTES",
    "Scenario",
    "ScenarioError",
    "expand_paths",
    "golden_paths",
    "load_scenario",
    "os_reason",
]

Scenario = RotationScenario | RotationEventsScenario | AdmissionScenario

#: Largest scenario file read (4 MiB): the golden files are a few KiB, and an
#: endless file (``/dev/zero`` behind a symlink, a growing log) must end.
MAX_SCENARIO_BYTES: Final = 4 * 1024 * 1024

_KINDS = ("rotation", "admission")


@dataclass(frozen=True, slots=True)
class ScenarioError:
    """Why a scenario file (or a path argument) cannot be used: the file, the JSON
    path, the line and column when the JSON reader knows them, the reason.

    Shown on one printable line whatever the file name, keys or values hold:
    every part goes through :func:`policy.text.printable` here, the one place a
    refusal becomes text.

    >>> str(ScenarioError("a\\nb.json", 'x["k\\n"]', "unknown field", 3, 7))
    'a\\\\nb.json: x["k\\\\n"]: line 3, column 7: unknown field'
    """

    file: str
    path: str
    reason: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        parts = [printable(self.file)]
        if self.path:
            parts.append(printable(self.path))
        if self.line is not None:
            parts.append(f"line {self.line}, column {self.column}")
        parts.append(printable(self.reason))
        return ": ".join(parts)


def read_scenario(doc: object) -> Scenario:
    """A scenario from a parsed JSON document (raises FieldError)."""
    root = Node(doc)
    if not isinstance(doc, dict):
        raise root.fail("a scenario file must hold one JSON object")
    kind = root.child("kind")
    if not root.has("kind"):  # a null kind is given: it gets the line for a wrong kind
        raise kind.fail("is required")
    if kind.value == "rotation":
        # Two forms: driven ticks from ``requests``, or an exact ``events`` list.
        return read_rotation_events(root) if root.has("events") else read_rotation(root)
    if kind.value == "admission":
        return read_admission(root)
    raise kind.fail(f"must be one of {', '.join(map(repr, _KINDS))}")


def load_scenario(path: Path) -> Result[Scenario, ScenarioError]:
    """Read and validate one scenario file."""
    name = str(path)
    read = _read_bytes(path)
    if isinstance(read, ScenarioError):
        return Failure(read)
    try:
        text = read.decode("utf-8")
    except UnicodeDecodeError as error:
        return Failure(
            ScenarioError(
                name,
                "",
                f"not UTF-8 text: byte 0x{read[error.start]:02x} at byte offset {error.start}",
            )
        )
    parsed = read_json(text)
    if isinstance(parsed, Failure):
        refused = parsed.failure()
        return Failure(
            ScenarioError(name, refused.path, refused.message, refused.line, refused.column)
        )
    try:
        return Success(read_scenario(parsed.unwrap()))
    except FieldError as error:
        return Failure(ScenarioError(name, error.path, error.reason))


def os_reason(error: OSError | ValueError) -> str:
    """An operating-system error as a reason, without the file name ``str(error)``
    repeats (the message names the file once, first)."""
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error)  # ValueError: an embedded NUL in a name given in-process


def _read_bytes(path: Path) -> bytes | ScenarioError:
    """At most MAX_SCENARIO_BYTES bytes of the regular file ``path``, never blocking."""
    name = str(path)
    read = read_regular_file(path, MAX_SCENARIO_BYTES)
    if isinstance(read, Failure):
        refused = read.failure()
        reason = refused.reason if refused.kind is not None else f"cannot read: {refused.reason}"
        return ScenarioError(name, "", reason)
    data = read.unwrap()
    if len(data) > MAX_SCENARIO_BYTES:
        return ScenarioError(
            name,
            "",
            f"larger than the {MAX_SCENARIO_BYTES // (1024 * 1024)} MiB limit for a scenario file",
        )
    return data


def golden_paths() -> list[Path]:
    """Every golden scenario shipped in the package, in a stable order."""
    root = Path(str(resources.files("oracle") / "golden"))
    return [found for found in _walk(root) if isinstance(found, Path)]


def expand_paths(arguments: Iterable[str]) -> Iterator[Path | ScenarioError]:
    """What each argument names, in argument order: a file as it is; a folder as
    every ``*.json`` below it, sorted; an argument or folder that cannot be used
    (empty, unreadable, holding no ``*.json``) as the error to report."""
    for argument in arguments:
        if not argument:
            # Path("") is the working folder: an unset shell variable must not replay it.
            yield ScenarioError('""', "", "an empty argument names no file or folder")
            continue
        path = Path(argument)
        try:
            is_folder = stat.S_ISDIR(os.stat(path).st_mode)
        except (OSError, ValueError):
            is_folder = False  # load_scenario says why the name cannot be read
        if not is_folder:
            yield path
            continue
        found = _walk(path)
        if found:
            yield from found
        else:
            yield ScenarioError(argument, "", "no *.json file in this folder or below it")


def _walk(folder: Path) -> list[Path | ScenarioError]:
    """Every ``*.json`` entry below ``folder`` that is not a folder, and an error
    for each folder that cannot be listed, in sorted path order.

    Iterative (a deep tree cannot exhaust the stack, as ``Path.rglob`` can) and
    not following directory symlinks (a loop cannot make it endless).
    """
    found: list[tuple[Path, Path | ScenarioError]] = []
    pending = [folder]
    while pending:
        current = pending.pop()
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    path = current / entry.name
                    try:
                        is_folder = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_folder = False
                    if is_folder:
                        pending.append(path)
                    elif entry.name.endswith(".json"):
                        found.append((path, path))  # FIFOs too: load_scenario refuses them
        except OSError as error:
            reason = f"cannot read folder: {os_reason(error)}"
            found.append((current, ScenarioError(str(current), "", reason)))
    found.sort(key=lambda pair: pair[0])
    return [item for _, item in found]
