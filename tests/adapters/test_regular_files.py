"""The one file rule (``policy.adapters.regular_files``): only regular files are read
or written, anything else in a file's place is refused on one line, and nothing
blocks, not even a FIFO swapped in after the check (the surfaces that use it have
their own tests: the policy file, scenario files, counterexample files)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from returns.result import Failure, Success

from policy.adapters import regular_files
from policy.adapters.regular_files import FileRefused, read_regular_file, write_regular_file
from tests.replay_helpers import printed_by

FIFO = Failure(FileRefused("not a regular file (a FIFO)", "a FIFO"))
_FIFO_SAID = "<Failure: FileRefused(reason='not a regular file (a FIFO)', kind='a FIFO')>\n"


def test_a_regular_file_is_read_to_one_byte_past_the_limit_and_written_whole(
    tmp_path: Path,
) -> None:
    path = tmp_path / "file.json"
    assert write_regular_file(path, b"0123456789") == Success(None)
    assert read_regular_file(path, 4) == Success(b"01234")  # more than 4: too long
    assert read_regular_file(path, 10) == Success(b"0123456789")
    assert write_regular_file(path, b"ab") == Success(None)  # the old content goes
    assert path.read_bytes() == b"ab"


def test_what_the_system_refuses_is_its_reason_on_one_line(tmp_path: Path) -> None:
    missing = Failure(FileRefused("No such file or directory"))
    assert read_regular_file(tmp_path / "missing.json", 10) == missing
    assert write_regular_file(tmp_path / "no" / "file.json", b"") == missing
    assert read_regular_file("a\0b", 10) == Failure(FileRefused("embedded null byte"))


@pytest.mark.parametrize("failing", ["fstat", "read", "write"])
def test_a_system_error_on_an_open_file_is_its_reason_and_the_file_is_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    # found by branch coverage: no test failed a call after the open (a disk error,
    # a file system gone); the descriptor must be closed all the same
    path = tmp_path / "file.json"
    path.write_bytes(b"{}")
    opened: list[int] = []

    def recording_open(*arguments: Any) -> int:
        descriptor = os.open(*arguments)
        opened.append(descriptor)
        return descriptor

    def closing(descriptor: int) -> None:
        opened.remove(descriptor)
        os.close(descriptor)

    def broken(*_: object) -> object:
        raise OSError(5, "Input/output error")

    # the module's own os only: pytest itself calls os.fstat meanwhile
    system = SimpleNamespace(**vars(os))
    system.open, system.close, system.__dict__[failing] = recording_open, closing, broken
    monkeypatch.setattr(regular_files, "os", system)
    io_error = Failure(FileRefused("Input/output error"))
    if failing != "write":
        assert read_regular_file(path, 10) == io_error
    if failing != "read":
        assert write_regular_file(path, b"[]") == io_error
    assert opened == []


@pytest.mark.parametrize(("device", "kind"), [("/dev/zero", "a character device")])
def test_a_device_or_folder_in_a_files_place_is_refused_unopened(
    tmp_path: Path, device: str, kind: str
) -> None:
    link = tmp_path / "file.json"
    link.symlink_to(device)  # endless to read, swallowing to write
    refused = Failure(FileRefused(f"not a regular file ({kind})", kind))
    assert read_regular_file(link, 10) == refused
    assert write_regular_file(link, b"x") == refused
    folder = Failure(FileRefused("not a regular file (a folder)", "a folder"))
    assert read_regular_file(tmp_path, 10) == folder
    assert write_regular_file(tmp_path, b"x") == folder


_BOTH = """
import sys
from policy.adapters.regular_files import read_regular_file, write_regular_file
print(read_regular_file(sys.argv[1], 10))
print(write_regular_file(sys.argv[1], b"x"))
"""


def test_a_fifo_is_refused_for_reading_and_writing_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)  # no other end ever comes: a blocking open waits for ever
    assert printed_by(_BOTH, str(fifo)) == _FIFO_SAID * 2


_SWAPPED = """
import os, sys
from policy.adapters.regular_files import read_regular_file
fifo, regular = sys.argv[1], os.stat(sys.argv[2])
real = os.stat
os.stat = lambda path, *a, **k: regular if str(path) == fifo else real(path, *a, **k)
print(read_regular_file(fifo, 10))
"""


def test_a_fifo_swapped_in_after_the_check_is_refused_on_what_was_opened(
    tmp_path: Path,
) -> None:
    # The stat says "regular file"; what is opened is a FIFO: the open must not wait
    # for its other end, and the check on the opened descriptor refuses it.
    fifo = tmp_path / "swapped.json"
    os.mkfifo(fifo)
    regular = tmp_path / "regular.json"
    regular.write_text("{}")
    said = printed_by(_SWAPPED, str(fifo), str(regular))
    assert said == _FIFO_SAID
    stat = os.stat
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader: opening to write succeeds
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(os, "stat", lambda path: stat(regular if path == fifo else path))
            assert write_regular_file(fifo, b"x") == FIFO
        assert os.read(reader, 1) == b""  # nothing was written to it (its writer is gone)
    finally:
        os.close(reader)
