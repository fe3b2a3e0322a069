"""How the host names a request, shared by both halves of the kernel."""

from __future__ import annotations

from typing import TypeAlias

__all__ = ["RequestId"]

#: A request's identity as the host names it (vLLM uses strings; tests use both).
RequestId: TypeAlias = str | int
