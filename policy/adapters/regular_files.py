"""The one rule for opening the files the project reads or writes: regular files only.

Every file read (a policy file, a scenario file) and every file written (a
counterexample, a picture) is opened here, so that nothing in a file's place
blocks or has effects: a FIFO would wait for its other end for ever, a device
may be endless (``/dev/zero``) or act when opened. So:

- the name is checked with a ``stat`` before any ``open``: what is not a
  regular file is refused, unopened, with a one-line reason (``not a regular
  file (a FIFO)``);
- the ``open`` is non-blocking (``O_NONBLOCK``), so a FIFO swapped in after
  the check cannot block it either;
- the opened descriptor is checked again (``fstat``), so what is read or
  written is what was checked; a file written is emptied only then
  (``ftruncate``, never ``O_TRUNC`` on whatever the name held at the open).

Each refusal is a :class:`FileRefused` in a ``returns`` ``Failure``; the
caller says which file of its own it was (the policy file, a scenario, ...).

This module opens files: pyproject.toml's ``kernel-pure`` contract allows its
``os`` import, and tests/test_kernel_purity.py its opens.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Final

from returns.result import Failure, Result, Success

from policy.text import printable

__all__ = ["FileRefused", "read_regular_file", "write_regular_file"]

_READ_CHUNK: Final = 1 << 16
# O_NOCTTY: a terminal named as a file never becomes the controlling terminal.
_COMMON_FLAGS: Final = os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_READ_FLAGS: Final = os.O_RDONLY | _COMMON_FLAGS
_WRITE_FLAGS: Final = os.O_WRONLY | os.O_CREAT | _COMMON_FLAGS
_FILE_KINDS: Final = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


@dataclass(frozen=True, slots=True)
class FileRefused:
    """Why a file was not read or written, on one printable line: ``reason`` is
    ``not a regular file (KIND)`` when ``kind`` names what is in its place (a
    FIFO, a device, ...), else the system's reason (``kind`` is None).

    >>> FileRefused("No such file or directory")
    FileRefused(reason='No such file or directory', kind=None)
    """

    reason: str
    kind: str | None = None


def _not_regular(mode: int) -> FileRefused | None:
    if stat.S_ISREG(mode):
        return None
    kind = next((kind for test, kind in _FILE_KINDS if test(mode)), "not a regular file")
    return FileRefused(f"not a regular file ({kind})", kind)


def _system(error: OSError | ValueError) -> FileRefused:
    """The system's reason, without the file name ``str(error)`` repeats."""
    if isinstance(error, OSError) and error.strerror:
        return FileRefused(printable(error.strerror))
    return FileRefused(printable(str(error)))  # ValueError: a NUL in a name given in-process


def _opened(path: str | os.PathLike[str], flags: int) -> Result[int, FileRefused]:
    """A descriptor of the regular file at ``path``, opened with ``flags``."""
    try:
        # stat first: a FIFO or a device is never opened (opening may have effects).
        refused = _not_regular(os.stat(path).st_mode)
    except FileNotFoundError:
        refused = None  # made when written; when read, the open says it is missing
    except (OSError, ValueError) as error:
        return Failure(_system(error))
    if refused is not None:
        return Failure(refused)
    try:
        descriptor = os.open(path, flags, 0o666)
    except (OSError, ValueError) as error:
        return Failure(_system(error))
    try:
        # Checked again on what was opened: the name may have been replaced since.
        refused = _not_regular(os.fstat(descriptor).st_mode)
    except OSError as error:
        refused = _system(error)
    if refused is not None:
        os.close(descriptor)
        return Failure(refused)
    return Success(descriptor)


def read_regular_file(path: str | os.PathLike[str], limit: int) -> Result[bytes, FileRefused]:
    """The bytes of the regular file at ``path``, at most ``limit + 1`` of them (more
    than ``limit`` tells the caller the file is too long); never blocking.

    >>> read_regular_file("/dev/zero", 10)
    <Failure: FileRefused(reason='not a regular file (a character device)', kind='a character device')>
    """  # noqa: E501 - a doctest's expected line
    opened = _opened(path, _READ_FLAGS)
    if isinstance(opened, Failure):
        return opened
    descriptor = opened.unwrap()
    chunks: list[bytes] = []
    size = 0
    try:
        try:
            while size <= limit:
                chunk = os.read(descriptor, min(_READ_CHUNK, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        finally:
            os.close(descriptor)
    except OSError as error:
        return Failure(_system(error))
    return Success(b"".join(chunks))


def write_regular_file(path: str | os.PathLike[str], data: bytes) -> Result[None, FileRefused]:
    """``data`` as the whole content of the regular file at ``path`` (made when
    missing); never blocking, and nothing but a regular file is written to.

    >>> write_regular_file("/dev/null", b"x")
    <Failure: FileRefused(reason='not a regular file (a character device)', kind='a character device')>
    """  # noqa: E501 - a doctest's expected line
    opened = _opened(path, _WRITE_FLAGS)
    if isinstance(opened, Failure):
        return opened
    descriptor = opened.unwrap()
    try:
        try:
            os.ftruncate(descriptor, 0)  # only now: what is emptied is the file checked
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view) :]
        finally:
            os.close(descriptor)  # its error too: the data may not have been written
    except OSError as error:
        return Failure(_system(error))
    return Success(None)
