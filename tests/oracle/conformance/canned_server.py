"""A stand-in process that answers each request line with the next of its arguments,
as given (``python -m tests.oracle.conformance.canned_server LINE...``), then reads until
its stdin closes: for answers no real implementation would write."""

from __future__ import annotations

import sys


def main(lines: list[str]) -> None:
    for line in lines:
        if not sys.stdin.readline():
            return
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    for _ in sys.stdin:
        pass


if __name__ == "__main__":
    main(sys.argv[1:])
