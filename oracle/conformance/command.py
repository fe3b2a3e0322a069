"""A foreign implementation as a process: the JSON-lines protocol, and
``policy-kernel verify --against-command``.

The kit starts the command and writes one request per line on its stdin; the
process writes one answer per line on its stdout, in the order of the requests
(docs/conformance.md):

.. code-block:: text

    -> {"id": 0, "decision": "hello", "inputs": {"protocol": 1}}
    <- {"id": 0, "answer": {"protocol": 1, "decisions": ["backlog_admits", "apply_event"]}}
    -> {"id": 1, "decision": "backlog_admits", "inputs": {"backlog_len": 2, "budget": 8}}
    <- {"id": 1, "answer": false}

An answer may instead be ``{"id": N, "error": "why"}``: no answer to that request
(a disagreement). Requests are sent ahead of the answers (a stream), so the process
must read and answer one line at a time and flush each answer. Its stderr is its
own (the kit keeps the last lines, to show if it dies). When the kit is done it
closes stdin; the process should then exit.

An answer that does not come within the timeout (with the command's exit, if it
has exited: a process it started holds its stdout), a process that closes its
stdout, a line that is not a JSON object with the request's ``id`` and an
``answer`` or ``error``, or an answer not of the decision's form ends the run:
:class:`~oracle.conformance.implementations.ImplementationBroken`, one line.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import math
import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, TextIO

from oracle.checks.framework import Level, level_named
from oracle.checks.verify import counterexample_file_json, write_counterexample
from oracle.conformance.bounds import BoundsChoice
from oracle.conformance.checks import LEVEL_BOUNDS, run_conformance
from oracle.conformance.decisions import DECISIONS, HELLO, PROTOCOL_VERSION, normal_answer
from oracle.conformance.implementations import (
    Answer,
    Failed,
    Implementation,
    ImplementationBroken,
    NotApplicable,
)
from oracle.conformance.own_policies import OwnPolicy
from oracle.conformance.report import ConformanceReport
from oracle.conformance.wire import JSON, WireError, encode, read_line
from oracle.spec.protocol import SEED_RULES
from policy.text import cut, printable

__all__ = [
    "DEFAULT_TIMEOUT",
    "ENDING_SIGNALS",
    "MAX_LINE",
    "MAX_TIMEOUT",
    "CommandImplementation",
    "checked_timeout",
    "verify_against_command",
]

#: Seconds to wait for each answer (the first one includes the process's start).
DEFAULT_TIMEOUT = 10.0
#: The longest timeout (a day): a longer one overflows the waits it is passed to.
MAX_TIMEOUT = 86400.0
#: The longest answer line read (bytes); a longer one is malformed.
MAX_LINE = 1 << 20
#: The signals by which a terminal, a user or a service manager ends a process
#: (its terminal gone, Ctrl-\, kill and systemd): during a run each ends the kit as
#: an exit, which ends the command's process group first. Ctrl-C (SIGINT) already
#: is Python's KeyboardInterrupt; SIGKILL cannot be caught.
ENDING_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGHUP, signal.SIGQUIT, signal.SIGTERM)
#: Seconds a process is given to exit after its stdin is closed, then its process
#: group to die when terminated (SIGTERM), before the group is killed (SIGKILL).
_EXIT_GRACE = 1.0
_TERM_GRACE = 0.5
#: How much of the process's stderr is kept: its last lines, each at most this long.
_STDERR_LINES = 5
_STDERR_WIDTH = 400
_LINE_END = re.compile(r"\r\n|\r|\n")
_EOF = b""
_CHUNK = 1 << 16


def _ended(status: int) -> str:
    """How a process with this exit status ended, for a message."""
    return f"exited with status {status}" if status >= 0 else f"was killed by signal {-status}"


def _compact(message: Mapping[str, JSON]) -> str:
    """One protocol line (compact JSON; numbers JSON has none of are already strings)."""
    return encode(message) + "\n"


def _shown(text: str, limit: int = 120) -> str:
    return cut(text, limit)


def checked_timeout(seconds: float) -> float:
    """``seconds`` if it is a timeout: a number in (0, :data:`MAX_TIMEOUT`]; else a
    ``ValueError`` (NaN, 0, negative, infinite, ``1e10``).

    >>> checked_timeout(2.5)
    2.5
    >>> checked_timeout(1e10)
    Traceback (most recent call last):
    ...
    ValueError: the timeout must be a number of seconds in (0, 86400], not 1e+10
    """
    if not 0 < seconds <= MAX_TIMEOUT:
        raise ValueError(
            f"the timeout must be a number of seconds in (0, {MAX_TIMEOUT:g}], not {seconds:g}"
        )
    return seconds


class CommandImplementation(Implementation):
    """An implementation in another process, speaking the JSON-lines protocol.

    ``command`` is a command line (split like a POSIX shell's words, without a
    shell: use ``sh -c '...'`` for pipes or variables) or a list of arguments.
    Use it as a context manager, or call :meth:`close`; the process is started
    at once, and asked which decisions it answers by the first request.
    """

    malformed_ends_run = True

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        checked_timeout(timeout)
        arguments = shlex.split(command) if isinstance(command, str) else list(command)
        if not arguments:
            raise ValueError("the command is empty")
        self.command = command if isinstance(command, str) else shlex.join(arguments)
        self.timeout = timeout
        self._next_id = 0
        self._decisions: frozenset[str] | None = None
        self._stderr: deque[str] = deque(maxlen=_STDERR_LINES)
        self._lines: queue.Queue[list[bytes]] = queue.Queue()  # lines, as they came
        self._ready: deque[bytes] = deque()  # lines come and not yet read
        self._outgoing: queue.Queue[bytes | None] = queue.Queue()
        self._broken: str | None = None
        try:
            self._process = subprocess.Popen(
                arguments,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=None if env is None else dict(env),
                # Its own process group: what it starts (a shell's children, its own
                # workers) is ended with it, whatever the exit path (close()).
                start_new_session=True,
            )
        except OSError as error:
            raise ImplementationBroken(
                f"cannot start {_shown(self.command)}: {error.strerror or error}"
            ) from None
        streams = (self._process.stdin, self._process.stdout, self._process.stderr)
        self._threads = [
            threading.Thread(target=work, args=(stream,), daemon=True)
            for work, stream in zip(
                (self._write, self._read, self._read_stderr), streams, strict=True
            )
        ]
        for thread in self._threads:
            thread.start()
        self._stderr_reader = self._threads[2]

    # ------------------------------------------------------------------ the streams

    def _write(self, stream: IO[bytes] | None) -> None:
        assert stream is not None  # every stream is a pipe
        try:
            while (line := self._outgoing.get()) is not None:
                stream.write(line)
                if self._outgoing.empty():
                    stream.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # the process is gone: the reader sees its stdout close
        finally:
            with contextlib.suppress(BrokenPipeError, OSError):
                stream.close()

    def _read(self, stream: IO[bytes] | None) -> None:
        """Hand the answer lines to :meth:`_receive`, as many as came at once."""
        assert stream is not None
        pending = b""
        try:
            while chunk := os.read(stream.fileno(), _CHUNK):
                *lines, pending = (pending + chunk).split(b"\n")
                if lines:
                    self._lines.put(lines)
                if len(pending) > MAX_LINE:  # no end of line in sight: _receive says so
                    self._lines.put([pending])
                    pending = b""
                    return
        except (OSError, ValueError):
            pass
        finally:
            self._lines.put([pending, _EOF] if pending else [_EOF])

    def _read_stderr(self, stream: IO[bytes] | None) -> None:
        """Keep the last :data:`_STDERR_LINES` lines of stderr, each cut to
        :data:`_STDERR_WIDTH` characters; a lone ``\\r`` ends a line too, so no
        stream (a progress bar's carriage returns) grows the memory kept."""
        assert stream is not None
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        pending = ""
        try:
            while chunk := os.read(stream.fileno(), _CHUNK):
                *lines, pending = _LINE_END.split(pending + decoder.decode(chunk))
                for line in lines:
                    self._keep_stderr(line)
                pending = pending[:_STDERR_WIDTH]
        except (OSError, ValueError):
            pass
        finally:
            self._keep_stderr(pending + decoder.decode(b"", final=True))

    def _keep_stderr(self, line: str) -> None:
        text = line[:_STDERR_WIDTH].strip()
        if text:
            self._stderr.append(text)

    # --------------------------------------------------------------------- requests

    def _fail(self, reason: str) -> ImplementationBroken:
        self._broken = reason
        return ImplementationBroken(reason)

    def _died(self, request: int, decision: str) -> ImplementationBroken:
        try:
            status: int | None = self._process.wait(timeout=_EXIT_GRACE)
        except subprocess.TimeoutExpired:
            status = None
        how = "closed its stdout" if status is None else _ended(status)
        return self._fail(
            f"the command {how} before answering request {request} ({decision})"
            + self._last_said(status)
        )

    def _last_said(self, status: int | None) -> str:
        """Its last stderr line, for a message, read to its end once the process has
        exited (bounded: a process it started may hold the pipe open)."""
        if status is not None:
            self._stderr_reader.join(timeout=_EXIT_GRACE)
        return f"; its last stderr line: {_shown(self._stderr[-1])}" if self._stderr else ""

    def _next_lines(self, request: int, decision: str) -> list[bytes]:
        """The next lines the process wrote, waiting at most the timeout.

        Answers are read until the command's stdout closes, so a command may hand
        over to a process it starts (a launcher) and exit. When none comes in time
        from a command that has exited, both are said: a process it started holds
        its stdout, so the pipe's end never came."""
        try:
            return self._lines.get(timeout=self.timeout)
        except queue.Empty:
            late = f"no answer within {self.timeout:g} s to request {request} ({decision})"
            status = self._process.poll()
            if status is not None:
                late += (
                    f"; the command had {_ended(status)} (a process it started holds its"
                    f" stdout){self._last_said(status)}"
                )
            raise self._fail(late) from None

    def _receive(self, request: int, decision: str) -> Answer:
        if not self._ready:
            self._ready.extend(self._next_lines(request, decision))
        line = self._ready.popleft()
        if line == _EOF:
            self._ready.append(_EOF)  # later requests see the end too
            raise self._died(request, decision)
        where = f"answer to request {request} ({decision})"
        if len(line) > MAX_LINE:
            raise self._fail(f"malformed {where}: a line longer than {MAX_LINE} bytes")
        try:
            message = read_line(line.rstrip(b"\r"))
        except WireError as error:
            raise self._fail(f"malformed {where}: {error}") from None
        identity = message.get("id")
        if type(identity) is not int or identity != request:  # not True, not 3.0
            raise self._fail(
                f"malformed {where}: its id is {_shown(json.dumps(identity))}"
                f" (answers come in the order of the requests)"
            )
        held = [kind for kind in ("answer", "error", "not_applicable") if kind in message]
        if len(held) != 1:
            raise self._fail(
                f"malformed {where}: it must hold exactly one of 'answer', 'error' and"
                " 'not_applicable'"
            )
        if "error" in message:
            return Failed(f"the implementation said: {_shown(str(message['error']), 300)}")
        if "not_applicable" in message:
            return NotApplicable(_shown(str(message["not_applicable"]), 300))
        answer: JSON = message["answer"]
        return answer

    def _send(self, requests: Sequence[tuple[str, Mapping[str, JSON]]]) -> tuple[int, list[str]]:
        if self._broken is not None:
            raise ImplementationBroken(self._broken)
        first = self._next_id
        self._next_id += len(requests)
        lines = [
            _compact({"id": first + offset, "decision": decision, "inputs": inputs})
            for offset, (decision, inputs) in enumerate(requests)
        ]
        self._outgoing.put("".join(lines).encode())
        return first, [decision for decision, _ in requests]

    def _collect(self, sent: tuple[int, list[str]]) -> list[Answer]:
        first, decisions = sent
        return [self._receive(first + offset, name) for offset, name in enumerate(decisions)]

    def answer_many(self, requests: Sequence[tuple[str, Mapping[str, JSON]]]) -> list[Answer]:
        return self._collect(self._send(requests))

    def stream(
        self, batches: Iterable[Sequence[tuple[str, Mapping[str, JSON]]]]
    ) -> Iterator[list[Answer]]:
        in_flight: deque[tuple[int, list[str]]] = deque()
        for batch in batches:
            in_flight.append(self._send(batch))
            if len(in_flight) > 1:
                yield self._collect(in_flight.popleft())
        while in_flight:
            yield self._collect(in_flight.popleft())

    def decisions(self) -> frozenset[str]:
        """The decisions the process answers (asked once, by the ``hello`` request)."""
        if self._decisions is None:
            (answer,) = self.answer_many([(HELLO, {"protocol": PROTOCOL_VERSION})])
            if isinstance(answer, Failed):
                raise self._fail(f"the command refused the hello request: {answer.reason}")
            if isinstance(answer, NotApplicable):  # the hello applies to every implementation
                raise self._fail(
                    "malformed answer to hello: it must be an answer, not 'not_applicable'"
                    f" ({answer.reason})"
                )
            try:
                hello = normal_answer(HELLO, answer)
            except WireError as error:
                raise self._fail(str(error)) from None
            assert isinstance(hello, dict)
            assert isinstance(hello["decisions"], list)
            self._decisions = frozenset(str(name) for name in hello["decisions"])
        return self._decisions

    def close(self) -> int | None:
        """Close the process's stdin, give it a second to exit, then end its whole
        process group (SIGTERM, half a second, SIGKILL): nothing it started outlives
        the run. Its exit status."""
        self._outgoing.put(None)
        process = self._process
        if self._broken is None:  # one that broke the protocol may be hung: not waited for
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=_EXIT_GRACE)
        self._signal_group(signal.SIGTERM)
        deadline = time.monotonic() + _TERM_GRACE
        while self._group_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        self._signal_group(signal.SIGKILL)
        process.wait()
        for thread in self._threads:
            thread.join(timeout=_EXIT_GRACE)
        return process.returncode

    def _signal_group(self, number: signal.Signals) -> None:
        # The group is the process's own (start_new_session): its id is the process's.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, number)

    def _group_alive(self) -> bool:
        """Whether a process of the group is still running (the leader reaped once it
        exited, so that it no longer counts)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=0)
        try:
            os.killpg(self._process.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def __enter__(self) -> CommandImplementation:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        del kind, error, traceback
        self.close()


# ---------------------------------------------------------------------- the command line

EXIT_AGREES = 0
EXIT_DISAGREES = 1
EXIT_BROKEN = 2


def _render_header(
    command: str, level: Level, profile: str, decisions: Collection[str], out: TextIO
) -> None:
    rules = "" if profile == SEED_RULES else f", {profile} rules"
    out.write(
        f"policy-kernel verify --against-command: {level} bounds{rules}, command {_shown(command)}"
        f" ({len(decisions)} of {len(DECISIONS)} decisions answered)\n\n"
    )


def verify_against_command(
    command: str,
    *,
    level: Level = "default",
    timeout: float = DEFAULT_TIMEOUT,
    as_json: bool = False,
    checks: Collection[str] | None = None,
    profile: str = SEED_RULES,
    policies: Sequence[OwnPolicy] = (),
    choice: BoundsChoice = LEVEL_BOUNDS,
    out_folder: Path | None = None,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Run the conformance checks at ``level`` (or those named in ``checks``) against
    the implementation that ``command`` starts, and report as ``policy-kernel verify``
    does; the tick protocol under the rules ``profile`` (``"seed"`` or ``"mlxcel"``),
    selection and admission under ``policies`` when given, within the bounds of
    ``choice`` where it sets them. With ``out_folder``, the smallest counterexample of
    each failing check is written there (``counterexample-conformance-CHECK.json``: a
    replayable events scenario for the tick protocol, else the disagreement's request
    and both answers). Progress goes to ``err`` when it is a terminal. Exit status: 0 every
    check agrees, 1 a disagreement, 2 the command cannot be started, dies, does not
    answer within ``timeout`` seconds, writes a malformed answer or answers none of
    the decisions (one line on ``err``).

    An unknown ``level`` is a ``ValueError`` before the command is started.

    A signal that would end this process during the run (:data:`ENDING_SIGNALS`:
    SIGTERM, SIGHUP, SIGQUIT; Ctrl-C is a ``KeyboardInterrupt``) ends it as
    ``SystemExit(128 + signal)`` (in the main thread), so the command's process
    group is ended first."""
    level = level_named(level)
    with _signals_as_exit():
        return _verify(
            command,
            level=level,
            timeout=timeout,
            as_json=as_json,
            checks=checks,
            profile=profile,
            policies=policies,
            choice=choice,
            out_folder=out_folder,
            out=out,
            err=err,
        )


def _write_counterexample(report: ConformanceReport, folder: Path) -> Path | str | None:
    """The smallest counterexample of a failing check, written into ``folder`` as
    ``verify`` writes its own: a replayable scenario when there is one, else the
    disagreement. The path, or why it could not be written (the report shows the
    case anyway)."""
    smallest = report.smallest
    if smallest is None:
        return None
    document = dict(smallest.scenario) if smallest.scenario else smallest.to_json()
    return write_counterexample(folder, f"conformance {report.check}", document)


def _exit_on_signal(number: int, frame: FrameType | None) -> None:
    del frame
    raise SystemExit(128 + number)


@contextlib.contextmanager
def _signals_as_exit() -> Iterator[None]:
    """Each of :data:`ENDING_SIGNALS` raises ``SystemExit`` while the run lasts: the
    ``with`` blocks that hold the command then end its process group, which the
    signal's default action (ending this process at once) would leave running."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set a handler
        return
    previous = {number: signal.signal(number, _exit_on_signal) for number in ENDING_SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)


def _verify(
    command: str,
    *,
    level: Level,
    timeout: float,
    as_json: bool,
    checks: Collection[str] | None,
    profile: str,
    policies: Sequence[OwnPolicy],
    choice: BoundsChoice,
    out_folder: Path | None,
    out: TextIO,
    err: TextIO,
) -> int:
    started = time.perf_counter()
    terminal = err.isatty()
    try:
        implementation = CommandImplementation(command, timeout=timeout)
    except (ValueError, ImplementationBroken) as error:
        err.write(f"policy-kernel verify: {error}\n")
        return EXIT_BROKEN
    reports: tuple[ConformanceReport, ...] = ()
    files: dict[str, Path | str] = {}  # check -> its counterexample file, or why none was
    with implementation:
        try:
            decisions = implementation.decisions()
            if not decisions:
                err.write(
                    "policy-kernel verify: the command answers none of the decisions"
                    f" ({', '.join(DECISIONS)})\n"
                )
                return EXIT_BROKEN
            if not as_json:
                _render_header(command, level, profile, decisions, out)

            def show(report: ConformanceReport) -> None:
                if terminal:
                    err.write("\r\x1b[K")  # the progress line goes
                    err.flush()
                written = None if out_folder is None else _write_counterexample(report, out_folder)
                if written is not None:
                    files[report.check] = written
                if not as_json:
                    out.write(report.text())
                    if isinstance(written, Path):
                        out.write(f"  counterexample: {printable(str(written))}\n")
                    elif written is not None:
                        out.write(f"  counterexample not written: {written}\n")
                    out.write("\n")
                    out.flush()

            def starting(check: str) -> None:
                if terminal:
                    err.write(f"\rverify --against-command: {check} ...")
                    err.flush()

            reports = run_conformance(
                implementation,
                level=level,
                checks=checks,
                progress=show,
                profile=profile,
                policies=policies,
                choice=choice,
                starting=starting,
            )
        except ImplementationBroken as error:
            out.flush()
            if terminal:
                err.write("\r\x1b[K")  # not glued to the progress line
            err.write(f"policy-kernel verify: {error}\n")
            return EXIT_BROKEN
    wall = time.perf_counter() - started
    failed = sum(report.verdict == "FAIL" for report in reports)
    skipped = sum(not report.ran for report in reports)
    passed = len(reports) - failed - skipped
    if reports and passed == failed == 0:  # every check skipped: nothing was compared
        err.write(
            "policy-kernel verify: no check compared anything (every one answered none of its"
            " decisions, or not applicable throughout)\n"
        )
        return EXIT_BROKEN
    if as_json:
        document = {
            "command": command,
            "level": level,
            "profile": profile,
            "checks": [
                {**report.to_json(), **counterexample_file_json(files.get(report.check))}
                for report in reports
            ],
            "wall_seconds": round(wall, 2),
            "passed": failed == 0,
        }
        out.write(json.dumps(document, allow_nan=False) + "\n")
    else:
        out.write(
            f"verify --against-command: {passed} passed, {failed} failed, {skipped} skipped"
            f" in {math.ceil(wall)} s\n"
        )
    return EXIT_AGREES if failed == 0 else EXIT_DISAGREES
