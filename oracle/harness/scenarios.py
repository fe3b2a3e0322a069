"""Loading scenario files: one clear error per bad file, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from returns.result import Failure, Result, Success

from oracle.harness.admission_scenario import AdmissionScenario, read_admission
from oracle.harness.fields import FieldError, Node
from oracle.harness.rotation_events import RotationEventsScenario, read_rotation_events
from oracle.harness.rotation_scenario import RotationScenario, read_rotation

__all__ = ["Scenario", "ScenarioError", "expand_paths", "golden_paths", "load_scenario"]

Scenario = RotationScenario | RotationEventsScenario | AdmissionScenario

_KINDS = ("rotation", "admission")


@dataclass(frozen=True, slots=True)
class ScenarioError:
    """Why a scenario file cannot be used: the file, the JSON path, the reason."""

    file: str
    path: str
    reason: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.path}" if self.path else self.file
        return f"{where}: {self.reason}"


def read_scenario(doc: object) -> Scenario:
    """A scenario from a parsed JSON document (raises FieldError)."""
    root = Node(doc)
    if not isinstance(doc, dict):
        raise root.fail("a scenario file must hold one JSON object")
    kind = root.child("kind")
    if kind.value is None:
        raise kind.fail("is required")
    if kind.value == "rotation":
        # Two forms: driven ticks from ``requests``, or an exact ``events`` list.
        return read_rotation_events(root) if root.has("events") else read_rotation(root)
    if kind.value == "admission":
        return read_admission(root)
    raise kind.fail(f"must be one of {', '.join(map(repr, _KINDS))}")


def load_scenario(path: Path) -> Result[Scenario, ScenarioError]:
    """Read and validate one scenario file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return Failure(ScenarioError(str(path), "", f"cannot read: {error}"))
    try:
        doc = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
    except (json.JSONDecodeError, ValueError) as error:
        return Failure(ScenarioError(str(path), "", f"not valid JSON: {error}"))
    except RecursionError:
        return Failure(ScenarioError(str(path), "", "not valid JSON: nested too deeply"))
    try:
        return Success(read_scenario(doc))
    except FieldError as error:
        return Failure(ScenarioError(str(path), error.path, error.reason))


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    fields: dict[str, object] = {}
    for key, value in pairs:
        if key in fields:
            raise ValueError(f"duplicate key {key!r} in one object")
        fields[key] = value
    return fields


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def golden_paths() -> list[Path]:
    """Every golden scenario shipped in the package, in a stable order."""
    root = resources.files("oracle") / "golden"
    return sorted(Path(str(root)).rglob("*.json"))


def expand_paths(arguments: Iterable[str]) -> Iterator[Path]:
    """Files as given; folders as every ``*.json`` below them, sorted."""
    for argument in arguments:
        path = Path(argument)
        if path.is_dir():
            yield from sorted(path.rglob("*.json"))
        else:
            yield path
