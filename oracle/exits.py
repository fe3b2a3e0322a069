"""The exit statuses of ``policy-kernel``, one meaning each."""

from __future__ import annotations

import signal
from typing import Final

__all__ = ["EXIT_BAD_INPUT", "EXIT_BROKEN_PIPE", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK"]

#: Every expectation holds.
EXIT_OK: Final = 0
#: An expectation, a check or a conformance case fails.
EXIT_FAILED: Final = 1
#: A file, an option or the command line is bad.
EXIT_BAD_INPUT: Final = 2
#: A reader closed standard output early: what a shell shows for a filter SIGPIPE ended.
EXIT_BROKEN_PIPE: Final = 128 + signal.SIGPIPE
#: Ctrl-C: the shell's status for a command SIGINT ended.
EXIT_INTERRUPTED: Final = 128 + signal.SIGINT
