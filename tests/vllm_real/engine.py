"""vLLM 0.33's real ``Scheduler``, driven as vLLM's engine core drives it, with a
stand-in model: the tests of tests/vllm_real, written from vLLM's public API.

Nothing here imports vLLM at import time (the project's own suite imports this
module without it); every vLLM object is ``Any``, its names come from
:class:`oracle.bench.vllm_step.Vllm`, and the model is the benchmark's
hand-written ``config.json`` (a one-layer Llama: only its shape is read, no
weights, no tokenizer, no hub).

A step is what the engine core does once: ``schedule()``, the model's output
(one sampled token for every request whose prompt is fully computed this step,
none for a partial prefill chunk, as vLLM's model runner returns), then
``update_from_output``. :class:`Step` records everything the waiting queues
decide: which requests were admitted from them, in order, which were
preempted, which finished, and the queues' order after the step.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from oracle.bench.vllm_step import Vllm, kv_cache_config, vllm_config

#: The scheduler class an operator names (``--scheduler-cls``).
KERNEL_SCHEDULER: Final = "policy.adapters.vllm_scheduler.KernelScheduler"
#: Tokens per KV block in these tests (a prompt of 32 tokens takes two).
BLOCK_SIZE: Final = 16
VOCAB: Final = 1024


@dataclass(frozen=True, slots=True)
class Setup:
    """One scheduler configuration: vLLM's ``policy``, the scheduler class
    (``None``: vLLM's own), the limits and the KV blocks."""

    policy: str = "fcfs"
    scheduler_cls: str | None = None
    max_num_seqs: int = 8
    max_num_batched_tokens: int = 512
    blocks: int = 256
    prefix_caching: bool = False
    #: None: vLLM decides (off on this CPU platform); True as a GPU platform leaves it
    async_scheduling: bool | None = None
    #: ``additional_config["policy_kernel_queue"]`` (``--additional-config``), if not None
    config_queue: str | None = None


@dataclass(frozen=True, slots=True)
class Spec:
    """What a request is made from (each scheduler gets its own ``Request``)."""

    request_id: str
    prompt: int = 16
    max_tokens: int = 4
    priority: int = 0
    arrival_time: float = 0.0
    first_token: int = -1  # -1: a prompt of its own (from the id); otherwise shared
    resumable: bool = False

    def tokens(self) -> list[int]:
        start = self.first_token if self.first_token >= 0 else sum(map(ord, self.request_id))
        return [(start + k * 7) % VOCAB for k in range(self.prompt)]


@dataclass(frozen=True, slots=True)
class Step:
    """What one engine step did, as the waiting queues decided it.

    ``scheduled``: every request scheduled, in vLLM's order (running first, then
    the admitted ones in admission order), with its token count; ``admitted``:
    the ones taken from a waiting queue this step, in order; ``preempted``,
    ``finished``: ids (sorted); ``waiting``, ``kv_holding``: the two queues'
    iteration order after the step.
    """

    scheduled: tuple[tuple[str, int], ...]
    admitted: tuple[str, ...]
    preempted: tuple[str, ...]
    finished: tuple[str, ...]
    waiting: tuple[str, ...]
    kv_holding: tuple[str, ...]


@contextmanager
def queue_env(value: str | None) -> Iterator[None]:
    """``POLICY_KERNEL_QUEUE`` set to ``value`` (unset for ``None``) inside the block."""
    name = "POLICY_KERNEL_QUEUE"
    before = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def build(v: Vllm, folder: Path, setup: Setup) -> Any:
    """A scheduler as vLLM's engine core builds one: the class from
    ``SchedulerConfig.get_scheduler_cls()`` (so ``scheduler_cls`` is resolved by
    vLLM from its text), then ``Scheduler(vllm_config=..., ...)``."""
    config = vllm_config(
        v,
        folder,
        setup.policy,
        max_num_seqs=setup.max_num_seqs,
        max_num_batched_tokens=setup.max_num_batched_tokens,
        block_size=BLOCK_SIZE,
        prefix_caching=setup.prefix_caching,
        scheduler_cls=setup.scheduler_cls,
    )
    if setup.async_scheduling is not None:  # after VllmConfig's checks, which turn it off here
        config.scheduler_config.async_scheduling = setup.async_scheduling
    if setup.config_queue is not None:
        config.additional_config = {"policy_kernel_queue": setup.config_queue}
    kv_cache = kv_cache_config(v, config, setup.blocks)
    made = config.scheduler_config.get_scheduler_cls()
    return made(
        vllm_config=config,
        kv_cache_config=kv_cache,
        structured_output_manager=v.StructuredOutputManager(config),
        block_size=BLOCK_SIZE,
        log_stats=False,
    )


def ids(requests: Iterable[Any]) -> tuple[str, ...]:
    return tuple(request.request_id for request in requests)


class Driver:
    """One scheduler, stepped as the engine core steps it (see the module's docstring)."""

    def __init__(self, v: Vllm, scheduler: Any) -> None:
        self.v = v
        self.scheduler = scheduler
        self.outputs: Any = importlib.import_module("vllm.v1.outputs").ModelRunnerOutput

    def request(self, spec: Spec) -> Any:
        return self.v.Request(
            request_id=spec.request_id,
            prompt_token_ids=spec.tokens(),
            sampling_params=self.v.SamplingParams(max_tokens=spec.max_tokens, ignore_eos=True),
            pooling_params=None,
            arrival_time=spec.arrival_time,
            priority=spec.priority,
            resumable=spec.resumable,
        )

    def add(self, *specs: Spec) -> None:
        for spec in specs:
            self.scheduler.add_request(self.request(spec))

    def abort(self, *request_ids: str) -> None:
        self.scheduler.finish_requests(list(request_ids), self.v.RequestStatus.FINISHED_ABORTED)

    def step(self) -> Step:
        scheduler = self.scheduler
        output = scheduler.schedule()
        scheduled = tuple(output.num_scheduled_tokens.items())
        new = {data.req_id for data in output.scheduled_new_reqs}
        resumed = set(output.scheduled_cached_reqs.resumed_req_ids)
        admitted = tuple(name for name, _ in scheduled if name in new or name in resumed)
        preempted = tuple(sorted(output.preempted_req_ids or ()))
        sampled = []
        for name, _ in scheduled:
            request = scheduler.requests[name]
            done = request.num_computed_tokens >= request.num_tokens
            sampled.append([1] if done else [])  # a partial prefill chunk samples nothing
        names = [name for name, _ in scheduled]
        model_output = self.outputs(
            req_ids=names,
            req_id_to_index={name: k for k, name in enumerate(names)},
            sampled_token_ids=sampled,
        )
        before = set(scheduler.requests)
        scheduler.update_from_output(output, model_output)
        finished = tuple(sorted(before - set(scheduler.requests)))
        return Step(
            scheduled,
            admitted,
            preempted,
            finished,
            ids(scheduler.waiting),
            ids(scheduler.kv_holding_waiting),
        )

    def run(self, steps: int) -> list[Step]:
        return [self.step() for _ in range(steps)]

    def run_until_idle(self, limit: int = 500) -> list[Step]:
        """Steps until nothing is waiting or running (at most ``limit``)."""
        done: list[Step] = []
        while self.scheduler.has_unfinished_requests():
            if len(done) >= limit:
                raise AssertionError(f"not idle after {limit} steps")
            done.append(self.step())
        return done


def admissions(steps: Sequence[Step]) -> list[str]:
    """Every admission of a run, in order (a preempted request again when re-admitted)."""
    return [name for step in steps for name in step.admitted]


#: A scenario: what is done to a driver, and the steps it records.
Scenario = Callable[[Driver], list[Step]]


def kernel_driver(v: Vllm, folder: Path, setup: Setup, queue: str | None = None) -> Driver:
    """A ``KernelScheduler`` (named as an operator names it) with ``POLICY_KERNEL_QUEUE``
    set to ``queue`` (unset: vLLM's own semantics) while it is made."""
    with queue_env(queue):
        return Driver(v, build(v, folder, replace(setup, scheduler_cls=KERNEL_SCHEDULER)))


def native_driver(v: Vllm, folder: Path, setup: Setup) -> Driver:
    """vLLM's own ``Scheduler`` with its own queues."""
    return Driver(v, build(v, folder, replace(setup, scheduler_cls=None)))


def both(
    v: Vllm, folder: Path, setup: Setup, scenario: Scenario, queue: str | None = None
) -> tuple[list[Step], list[Step]]:
    """``scenario`` on vLLM's own scheduler and on a ``KernelScheduler``: their steps."""
    return scenario(native_driver(v, folder, setup)), scenario(
        kernel_driver(v, folder, setup, queue)
    )
