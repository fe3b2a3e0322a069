"""The console around a command: closed or full standard streams, a closed pipe
and Ctrl-C end it with one line at most and the status a shell expects, never a
traceback."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable
from typing import NoReturn

from oracle.exits import EXIT_BAD_INPUT, EXIT_BROKEN_PIPE, EXIT_INTERRUPTED
from policy.text import printable

__all__ = ["Discarded", "run_console"]


class Discarded(io.StringIO):
    """Where output goes when the standard stream is closed (``>&-``): nowhere."""

    def write(self, text: str) -> int:
        return len(text)


def run_console(main: Callable[[], int]) -> NoReturn:
    """The console entry point, for every command: output the reader stopped
    reading ends the command quietly (status 141), and no stream error becomes
    a traceback."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            # printable() escapes what is not printable; this keeps printable text
            # that the terminal's encoding cannot show (LANG=C) from raising.
            stream.reconfigure(errors="backslashreplace")
    try:
        try:
            status = main()
        except SystemExit as done:  # argparse: --help (0) or a bad command line (2)
            status = done.code if isinstance(done.code, int) else EXIT_BAD_INPUT
        if sys.stdout is not None:
            sys.stdout.flush()  # inside the try: a closed pipe is often found only here
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback
        if sys.stderr is not None:
            with contextlib.suppress(OSError):
                sys.stderr.write("policy-kernel: interrupted\n")
                sys.stderr.flush()
        status = EXIT_INTERRUPTED
    except BrokenPipeError:
        # The Python docs' advice (signal module, "Note on SIGPIPE"): point the
        # standard streams at devnull so the flush at exit cannot raise again.
        # SIGPIPE itself stays ignored, as Python sets it.
        silence_standard_streams()
        status = EXIT_BROKEN_PIPE
    except OSError as error:  # a full disk (/dev/full) or a stream closed under us
        if sys.stderr is not None:
            with contextlib.suppress(OSError):  # stderr gone too: the status is all that is left
                sys.stderr.write(
                    f"policy-kernel: cannot write the output: {printable(str(error))}\n"
                )
                sys.stderr.flush()
        silence_standard_streams()
        status = EXIT_BAD_INPUT
    sys.exit(status)


def silence_standard_streams() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            # No descriptor (a replaced stream, or one already closed): nothing to silence.
            with contextlib.suppress(OSError, ValueError):
                os.dup2(devnull, stream.fileno())
    os.close(devnull)
