"""``KernelScheduler``: vLLM's ``Scheduler`` with every waiting queue from a kernel policy.

An operator selects it without editing vLLM (``SchedulerConfig.scheduler_cls``)::

    POLICY_KERNEL_QUEUE=short-first vllm serve MODEL \\
        --scheduler-cls policy.adapters.vllm_scheduler.KernelScheduler

``KernelScheduler`` (and, for async scheduling, ``KernelAsyncScheduler``,
which ``KernelScheduler`` becomes when async scheduling is on) is made on
first use (:func:`kernel_scheduler_class`, through this module's
``__getattr__``), so that this module imports without vLLM; vLLM's classes are
then looked up with ``importlib`` and typed ``Any`` (vLLM is not installed
where this project is type-checked), and the subclasses are made with
``type(...)``, so no ``type: ignore`` is needed for an ``Any`` base.

The policy is named by the environment variable :data:`ENV_VAR`, or, when it
is unset or empty, by vLLM's ``additional_config[CONFIG_KEY]``
(``--additional-config '{"policy_kernel_queue": "short-first"}'``;
:func:`queue_choice` reads both): neither, vLLM's own semantics for the
scheduler's configured ``policy`` (``fcfs``: ``fcfs_queue()``; ``priority``:
``priority_queue(preempted_first=False)``, which re-inserts a preempted
request by its keys as vLLM's heap does); a ready-made name
(:data:`READY_MADE`), with ``name:key=value,...`` arguments where the
constructor takes any; or the path of a JSON policy document (a value ending
in ``.json`` or holding a ``/``). A bad value is refused when the scheduler is
made, before vLLM's own start-up work, with a :class:`PolicyRefused` whose
message is one line naming the variable and the reason. The scheduler logs the
policy and its selection path (``selection_path``) at INFO on the logger
``vllm.policy_kernel`` (a child of vLLM's logger, so ``vllm serve`` shows it).

This module reads the environment, and logs: pyproject.toml's ``kernel-pure``
contract allows exactly its ``os`` and ``logging`` imports. A policy file is
read by :func:`policy.adapters.policy_file.read_policy_file`.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from policy.adapters.policy_file import read_policy_file
from policy.adapters.settings import ENV_VAR, is_policy_file, read_ready_made
from policy.adapters.vllm import (
    FACTORY_QUEUES,
    WaitingRequestQueue,
    fcfs_queue,
    install_waiting_queue,
    priority_queue,
    queue_from_policy,
    short_request_first_queue,
)
from policy.text import quote, shown
from policy.waiting import QueuePolicy, selection_path

__all__ = [
    "CONFIG_KEY",
    "ENV_VAR",
    "READY_MADE",
    "KernelAsyncScheduler",
    "KernelScheduler",
    "PolicyRefused",
    "QueueChoice",
    "install_kernel_queues",
    "kernel_scheduler_class",
    "queue_choice",
]

#: The key of vLLM's ``additional_config`` (``--additional-config``) that names it
#: when the environment variable is unset or empty.
CONFIG_KEY: Final = "policy_kernel_queue"

#: The logger: a child of vLLM's ``vllm`` logger, whose handler ``vllm serve`` configures.
_LOG: Final = logging.getLogger("vllm.policy_kernel")

#: Makes one queue for vLLM's configured scheduling policy (``"fcfs"`` or ``"priority"``).
Make = Callable[[str], WaitingRequestQueue[Any]]


class PolicyRefused(ValueError):
    """A policy the scheduler will not run: the message is one line naming where
    it was named (:data:`ENV_VAR`, or ``additional_config[CONFIG_KEY]``), the
    value and the reason."""


@dataclass(frozen=True, slots=True)
class QueueChoice:
    """What a ``KernelScheduler`` builds its queues from: ``source`` says where the
    choice came from (as logged), ``make`` makes one empty queue for vLLM's
    configured scheduling policy."""

    source: str
    make: Make


def _vllm_own(configured: str) -> WaitingRequestQueue[Any]:
    """vLLM's own semantics for the configured policy (the default)."""
    if configured == "priority":
        return priority_queue(preempted_first=False)
    return fcfs_queue()


def _priority(configured: str) -> WaitingRequestQueue[Any]:
    del configured
    return priority_queue(preempted_first=False)


def _priority_preempted_first(configured: str) -> WaitingRequestQueue[Any]:
    del configured
    return priority_queue(preempted_first=True)


def _fcfs(configured: str) -> WaitingRequestQueue[Any]:
    del configured
    return fcfs_queue()


def _short_first(configured: str, **arguments: Any) -> WaitingRequestQueue[Any]:
    del configured
    return short_request_first_queue(**arguments)


#: Ready-made names: the constructor (of the configured policy) and the
#: arguments it takes after ``name:`` (``key=value``, comma-separated).
READY_MADE: Final[Mapping[str, tuple[Callable[..., WaitingRequestQueue[Any]], tuple[str, ...]]]] = {
    "vllm": (_vllm_own, ()),
    "fcfs": (_fcfs, ()),
    "priority": (_priority, ()),
    "priority-preempted-first": (_priority_preempted_first, ()),
    "short-first": (_short_first, ("threshold", "long_max_wait_ms")),
}


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _ready_made(value: str) -> Make:
    """The ready-made queue ``value`` names; a ``ValueError`` with the reason."""
    name, arguments = read_ready_made(value, {n: keys for n, (_, keys) in READY_MADE.items()})
    return functools.partial(READY_MADE[name][0], **arguments)


def _policy_file(value: str) -> Make:
    """The queues of the policy file at ``value``; a ``ValueError`` with the reason."""
    _, policy = read_policy_file(value)
    return functools.partial(_from_file, policy)


def _from_file(policy: QueuePolicy, configured: str) -> WaitingRequestQueue[Any]:
    del configured
    return queue_from_policy(policy)


def _named(environ: Mapping[str, str], additional_config: object) -> tuple[str, object] | None:
    """Where the policy is named and the value found there: :data:`ENV_VAR` when it
    is set and not empty, else vLLM's ``additional_config[CONFIG_KEY]`` when
    present; None for neither."""
    value = environ.get(ENV_VAR, "").strip()
    if value:
        return ENV_VAR, value
    if isinstance(additional_config, Mapping) and CONFIG_KEY in additional_config:
        return f"additional_config[{CONFIG_KEY!r}]", additional_config[CONFIG_KEY]
    return None


def queue_choice(
    environ: Mapping[str, str] | None = None, additional_config: object = None
) -> QueueChoice:
    """The queue choice named by :data:`ENV_VAR` in ``environ`` (default
    ``os.environ``), or else by ``additional_config[CONFIG_KEY]`` (vLLM's
    ``--additional-config``); neither: vLLM's own semantics.

    A bad value is a :class:`PolicyRefused` with a one-line message naming where
    the value came from; a value whose queue a constructor refuses (a negative
    threshold, a policy reading an attribute the adapter does not know) is
    refused here too, since every choice makes one queue of each configured
    policy before it is returned.

    >>> queue_choice({}).source
    'default: vLLM semantics of the configured policy'
    >>> selection_path(queue_choice({ENV_VAR: "short-first:threshold=512"}).make("fcfs").policy)
    'lanes'
    >>> queue_choice({}, {CONFIG_KEY: "priority"}).source
    "ready-made 'priority' (additional_config['policy_kernel_queue'])"
    >>> queue_choice({ENV_VAR: "fcfss"})
    Traceback (most recent call last):
    ...
    policy.adapters.vllm_scheduler.PolicyRefused: POLICY_KERNEL_QUEUE='fcfss': unknown policy name 'fcfss': the ready-made names are vllm, fcfs, priority, priority-preempted-first, short-first; a policy file's path ends in .json or holds a '/'
    """  # noqa: E501 - a doctest's expected line
    named = _named(os.environ if environ is None else environ, additional_config)
    if named is None:
        return QueueChoice("default: vLLM semantics of the configured policy", _vllm_own)
    where, found = named
    if not isinstance(found, str) or not found.strip():
        raise PolicyRefused(
            _one_line(f"{where}={shown(found)}: must be a policy name or a policy file's path")
        )
    value = found.strip()
    is_file = is_policy_file(value, os.sep)
    try:
        make = _policy_file(value) if is_file else _ready_made(value)
        for configured in ("fcfs", "priority"):
            make(configured)
    except (TypeError, ValueError) as error:
        raise PolicyRefused(_one_line(f"{where}={quote(value)}: {error}")) from None
    kind = "policy file" if is_file else "ready-made"
    # whole: the value was read (a file's path, a name), and the log must name it exactly
    source = f"{kind} {value!r}" + ("" if where == ENV_VAR else f" ({where})")
    return QueueChoice(source, make)


def install_kernel_queues(scheduler: Any, choice: QueueChoice) -> WaitingRequestQueue[Any]:
    """Give every queue ``scheduler`` built from vLLM's factory (``waiting`` and, from
    vLLM 0.33 on, ``kv_holding_waiting``) a queue of ``choice`` for its configured
    policy, through :func:`~policy.adapters.vllm.install_waiting_queue` and its
    checks; log what it runs. Returns the ``waiting`` queue."""
    configured = str(getattr(scheduler.policy, "value", scheduler.policy))
    waiting = install_waiting_queue(scheduler, lambda: choice.make(configured))
    replaced = [name for name in FACTORY_QUEUES if getattr(scheduler, name, None) is not None]
    _LOG.info(
        "policy-kernel queues: %s; configured policy %s; selection path %s; replaced %s",
        choice.source,
        configured,
        selection_path(waiting.policy),
        ", ".join(replaced),
    )
    return waiting


def _config(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """The ``vllm_config`` a scheduler is made with (None if there is none)."""
    return kwargs.get("vllm_config", args[0] if args else None)


def _asynchronous(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
    """Whether the ``vllm_config`` a scheduler is made with asks for async scheduling."""
    config = _config(args, kwargs)
    return getattr(getattr(config, "scheduler_config", None), "async_scheduling", None) is True


def kernel_scheduler_class(asynchronous: bool = False) -> type[Any]:
    """``KernelScheduler``, a subclass of vLLM's ``Scheduler``; with
    ``asynchronous``, ``KernelAsyncScheduler``, a subclass of it and of vLLM's
    ``AsyncScheduler``. Made once; vLLM is imported then (without it, an
    ``ImportError`` with a one-line message).

    ``KernelScheduler(...)`` made with a configuration that asks for async
    scheduling (``scheduler_config.async_scheduling``, vLLM's default where the
    platform supports it) is a ``KernelAsyncScheduler``, as vLLM itself picks
    ``AsyncScheduler`` then: one class path serves both. Their ``__init__``
    reads :data:`ENV_VAR` first (a bad policy is refused before vLLM's own
    start-up work), then runs vLLM's, then replaces the queues vLLM built
    (:func:`install_kernel_queues`). Nothing else of vLLM's scheduler changes.
    Both are named in this module (whose ``__getattr__`` finds them, and so
    pickle does too).
    """
    return _classes()[asynchronous]


@functools.cache
def _classes() -> dict[bool, type[Any]]:
    try:
        scheduler: Any = importlib.import_module("vllm.v1.core.sched.scheduler").Scheduler
        asynchronous: Any = importlib.import_module(
            "vllm.v1.core.sched.async_scheduler"
        ).AsyncScheduler
    except ImportError as error:
        raise ImportError(
            f"policy.adapters.vllm_scheduler.KernelScheduler needs vLLM ({error}): install this"
            " project into vLLM's environment (pip install /path/to/serving-policy-kernel)"
        ) from error

    def __new__(cls: type[Any], *args: Any, **kwargs: Any) -> Any:
        if cls is kernel and _asynchronous(args, kwargs):
            cls = kernel_async
        return object.__new__(cls)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        config = _config(args, kwargs)
        choice = queue_choice(additional_config=getattr(config, "additional_config", None))
        super(kernel, self).__init__(*args, **kwargs)  # AsyncScheduler's, then Scheduler's
        self.kernel_queue_choice = choice
        install_kernel_queues(self, choice)

    def named(name: str, base: str) -> dict[str, object]:
        return {
            "__module__": __name__,
            "__qualname__": name,
            "__doc__": f"vLLM's ``{base}`` with every waiting queue from the kernel policy"
            f" named by ``{ENV_VAR}`` (docs/adapters.md).",
        }

    kernel: type[Any] = type(
        "KernelScheduler",
        (scheduler,),
        {"__new__": __new__, "__init__": __init__, **named("KernelScheduler", "Scheduler")},
    )
    kernel_async: type[Any] = type(
        "KernelAsyncScheduler",
        (kernel, asynchronous),
        named("KernelAsyncScheduler", "AsyncScheduler"),
    )
    return {False: kernel, True: kernel_async}


if TYPE_CHECKING:
    #: vLLM's ``Scheduler`` (``AsyncScheduler``) with every waiting queue from a kernel
    #: policy (docs/adapters.md, "Running vLLM with the kernel's queues").
    KernelScheduler: type[Any]
    KernelAsyncScheduler: type[Any]
else:

    def __getattr__(name: str) -> Any:
        """``KernelScheduler`` and ``KernelAsyncScheduler``, made on first use: this
        module imports without vLLM."""
        if name in ("KernelScheduler", "KernelAsyncScheduler"):
            return kernel_scheduler_class(asynchronous=name == "KernelAsyncScheduler")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
