"""serving-policy-kernel: pure decisions for LLM-serving schedulers.

Two halves, each a package of its own: speculative slot rotation,
:mod:`policy.rotation` (lanes, the pure decisions, the grant backlog and the
tick state machine), and waiting selection on the admission clock,
:mod:`policy.waiting` (the queue policy language, the waiting queue,
``select_waiting`` and one admission attempt). Nothing in this package does
I/O or reads hidden inputs.

This module exports both halves' names, each loaded when first asked, so that
``import policy.waiting`` loads no rotation module and ``import
policy.rotation`` no waiting one.

>>> import policy
>>> policy.SKIP_CAP >= 1, policy.fifo().keys
(True, ())
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from policy.identity import RequestId as RequestId

if TYPE_CHECKING:  # what a type checker sees; at run time, __getattr__ below
    from policy.rotation import *  # noqa: F403
    from policy.waiting import *  # noqa: F403
else:
    #: The halves, in the order a name is looked for.
    _HALVES = ("policy.rotation", "policy.waiting")

    def __getattr__(name: str) -> Any:
        """A name of one half, loaded from it when first asked."""
        if name == "__all__":  # for ``from policy import *``
            halves = [importlib.import_module(half) for half in _HALVES]
            names = sorted({"RequestId"}.union(*(half.__all__ for half in halves)))
            globals()["__all__"] = names
            return names
        for half in _HALVES:
            module = importlib.import_module(half)  # a half's names are its __all__
            if name in module.__all__:
                value = getattr(module, name)
                globals()[name] = value  # the next look-up finds it directly
                return value
        raise AttributeError(f"module 'policy' has no attribute {name!r}")
