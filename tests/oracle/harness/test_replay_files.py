"""The files ``policy-kernel replay`` reads (``oracle.harness.replay_files``):
every path a user can give is replayed or refused on one line, and nothing blocks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from oracle.harness.scenarios import MAX_SCENARIO_BYTES
from tests.replay_helpers import (
    PASSING,
    TIMEOUT,
    cli,
    one_line,
    replay_captured,
    rotation_doc,
    write,
)

# --- found by hardening (issue 9)


def test_an_empty_argument_is_refused(tmp_path: Path) -> None:
    status, out, err = replay_captured("")
    assert status == 2
    assert one_line(err) == 'policy-kernel: "": an empty argument names no file or folder'
    assert out == "replay: 0 passed, 0 failed, 1 bad, 0 without expect\n"  # not the working folder
    status, out, err = replay_captured("", str(write(tmp_path, rotation_doc("kept"))))
    assert status == 2
    assert "kept (rotation)" in out
    one_line(err)


def test_a_missing_path_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    status, _, err = replay_captured(str(missing))
    assert status == 2
    assert one_line(err) == f"policy-kernel: {missing}: cannot read: No such file or directory"


@pytest.mark.parametrize("shape", ["long name", "long path"])
def test_a_name_too_long_is_one_line(tmp_path: Path, shape: str) -> None:
    name = (
        str(tmp_path / ("n" * 300 + ".json"))
        if shape == "long name"
        else str(tmp_path) + "/d" * 3000 + ".json"
    )
    status, _, err = replay_captured(name)
    assert status == 2
    assert one_line(err) == f"policy-kernel: {name}: cannot read: File name too long"


def test_a_folder_without_scenarios_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("{}")
    (tmp_path / "sub").mkdir()
    status, _, err = replay_captured(str(tmp_path))
    assert status == 2
    assert one_line(err) == f"policy-kernel: {tmp_path}: no *.json file in this folder or below it"


def test_a_folder_named_json_is_searched_not_read(tmp_path: Path) -> None:
    (tmp_path / "sub.json").mkdir()
    write(tmp_path / "sub.json", rotation_doc("inside", expect=PASSING))
    status, out, err = replay_captured(str(tmp_path))
    assert (status, err) == (0, "")
    assert "inside (rotation)" in out


@contextmanager
def folder_chain(top: Path, depth: int, name: str) -> Iterator[int]:
    """A chain of ``depth`` folders ``top/name/name/...``, yielding the bottom
    one's descriptor. Made and removed through descriptors, one open at a time:
    no path need reach the bottom, and nothing recurses per level (Path.mkdir
    with parents and shutil.rmtree do, and pytest's clean-up would fail on it)."""
    folder = os.open(top, os.O_RDONLY)
    made = 0
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=folder)
            made += 1
            below = os.open(name, os.O_RDONLY, dir_fd=folder)
            os.close(folder)
            folder = below
        yield folder
    finally:
        for level in range(made, 0, -1):
            if level == made:  # files are at the bottom; the folders above hold only the chain
                for entry in os.scandir(folder):
                    os.unlink(entry.name, dir_fd=folder)
            above = os.open("..", os.O_RDONLY, dir_fd=folder)
            os.close(folder)
            folder = above
            os.rmdir(name, dir_fd=folder)
        os.close(folder)


def test_a_tree_deeper_than_the_recursion_limit_is_walked(tmp_path: Path) -> None:
    depth = sys.getrecursionlimit() + 200  # Path.rglob recursed once per level
    with folder_chain(tmp_path, depth, "d") as bottom:
        scenario = json.dumps(rotation_doc("deep", expect=PASSING)).encode()
        descriptor = os.open("case.json", os.O_WRONLY | os.O_CREAT, dir_fd=bottom)
        os.write(descriptor, scenario)
        os.close(descriptor)
        status, out, err = replay_captured(str(tmp_path))
    assert (status, err) == (0, "")
    assert "deep (rotation)" in out


@pytest.fixture
def beyond_path_max(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path/top`` holding a scenario and a chain of folders whose full path is
    longer than PATH_MAX."""
    top = tmp_path / "top"
    top.mkdir()
    write(top, rotation_doc("reachable", expect=PASSING))
    with folder_chain(top, 1500, "ddd"):  # 1500 x "/ddd" = 6000 characters
        yield top


def test_a_folder_that_cannot_be_listed_is_one_line(beyond_path_max: Path) -> None:
    status, out, err = replay_captured(str(beyond_path_max))
    assert status == 2
    line = one_line(err)
    assert line.startswith(f"policy-kernel: {beyond_path_max}/ddd/ddd/")
    assert line.endswith(": cannot read folder: File name too long")
    assert "reachable (rotation)" in out
    assert out.endswith("replay: 1 passed, 0 failed, 1 bad, 0 without expect\n")


def test_a_symlink_loop_is_not_followed(tmp_path: Path) -> None:
    write(tmp_path, rotation_doc("once", expect=PASSING))
    (tmp_path / "loop").symlink_to(tmp_path)
    status, out, err = replay_captured(str(tmp_path))
    assert (status, err) == (0, "")
    assert out.count("once (rotation)") == 1


def test_a_device_named_json_is_refused_unopened(tmp_path: Path) -> None:
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")  # endless: read, it would never end
    status, _, err = replay_captured(str(zero))
    assert status == 2
    assert one_line(err) == f"policy-kernel: {zero}: not a regular file (a character device)"


def test_a_fifo_named_json_is_refused_without_blocking(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    fifo = folder / "pipe.json"
    os.mkfifo(fifo)
    write(folder, rotation_doc("beside", expect=PASSING), "ok.json")
    for argument in (fifo, folder):  # named, and found in a folder
        done = cli("replay", str(argument))  # no writer ever comes: a blocking read hangs
        assert done.returncode == 2
        assert one_line(done.stderr.decode()) == (
            f"policy-kernel: {fifo}: not a regular file (a FIFO)"
        )
    assert b"beside (rotation)" in done.stdout


_SWAPPED = """
import os, sys
from oracle.cli import main
fifo, regular = sys.argv[1], os.stat(sys.argv[2])
real = os.stat
os.stat = lambda path, *a, **k: regular if str(path) == fifo else real(path, *a, **k)
sys.exit(main(["replay", fifo]))
"""


def test_a_fifo_swapped_in_after_the_check_does_not_block(tmp_path: Path) -> None:
    # The stat says "regular file"; what is opened is a FIFO: the open must not wait
    # for a writer, and the check on the opened file refuses it.
    fifo = tmp_path / "swapped.json"
    os.mkfifo(fifo)
    regular = write(tmp_path, rotation_doc(), "regular.json")
    done = subprocess.run(
        [sys.executable, "-c", _SWAPPED, str(fifo), str(regular)],
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 2
    assert one_line(done.stderr.decode()) == f"policy-kernel: {fifo}: not a regular file (a FIFO)"


def test_the_size_cap(tmp_path: Path) -> None:
    text = json.dumps(rotation_doc("at the cap", expect=PASSING))
    at_cap = tmp_path / "at-cap.json"
    at_cap.write_text(text + " " * (MAX_SCENARIO_BYTES - len(text)))
    status, out, _ = replay_captured(str(at_cap))
    assert status == 0
    assert "at the cap (rotation)" in out
    beyond = tmp_path / "beyond.json"
    beyond.write_text(text + " " * (MAX_SCENARIO_BYTES + 1 - len(text)))
    status, _, err = replay_captured(str(beyond))
    assert status == 2
    assert one_line(err) == (
        f"policy-kernel: {beyond}: larger than the 4 MiB limit for a scenario file"
    )


def test_bytes_that_are_not_utf8_are_named_by_offset(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"kind": "rotation", "name": "caf\xe9"}')
    status, _, err = replay_captured(str(path))
    assert status == 2
    assert one_line(err) == f"policy-kernel: {path}: not UTF-8 text: byte 0xe9 at byte offset 33"
