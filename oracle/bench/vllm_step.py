"""``policy-kernel bench --vllm``: vLLM's real scheduler step, its own waiting queue
against the drop-in (:mod:`policy.adapters.vllm`).

For each configuration (a policy, ``fcfs`` or ``priority``, and a waiting count
N) two vLLM ``Scheduler`` objects are built from the same configuration: one
keeps vLLM's own queues, the other gets the drop-in installed on ``waiting``
and on ``kv_holding_waiting`` (the second queue vLLM builds from the same
factory) before any request. Both are filled with the same N seeded requests
(16-token prompts; priorities 0 to 9, arrivals 1 ms apart), then run the same
steps, interleaved (the order alternates each step):

- ``schedule()``, timed alone, admits ``BATCH`` (256) requests: the scheduler is
  sized so that exactly 256 are admitted and nothing is preempted
  (``max_num_seqs`` = 256, a token budget and KV blocks to spare);
- untimed, the admitted requests are finished (``finish_requests``, aborted),
  which frees their blocks and leaves nothing running;
- 256 fresh requests are added with ``scheduler.add_request``, timed per
  request, so N requests wait again before the next step. Nothing reads the
  queues between those adds and the next ``schedule()`` (the sizes are checked
  right after each step), so the drop-in's deferred adds are absorbed inside
  the timed step, as they are in vLLM.

Reported per configuration: the median step time of each scheduler and their
ratio (targets: FCFS at most 1.15x, priority at most 1.25x), the median
``add_request`` time per request and its ratio (target at most 2x), and
whether both schedulers admitted the same requests in the same order at every
step. Prefix caching and statistics logging are off (they cost both the same
and would only dilute the ratio).

vLLM is a heavy optional dependency that this project does not install: this
module imports nothing from it at import time (every vLLM object is ``Any``),
and without it :func:`bench_vllm` prints one line saying how to install it and
returns 2. No model, tokenizer or weights are read: the model configuration is
a hand-written ``config.json`` (a one-layer Llama) in a temporary folder, and
the Hugging Face hub is switched to offline mode.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final, TextIO

from returns.result import Failure

from oracle.bench.run import machine
from policy.adapters.regular_files import write_regular_file
from policy.adapters.vllm import (
    WaitingRequestQueue,
    fcfs_queue,
    install_waiting_queue,
    priority_queue,
)

#: Waiting counts of the full run and of ``--quick``.
SIZES: Final = (1_000, 10_000, 100_000)
QUICK_SIZES: Final = (1_000, 10_000)
#: Timed steps per configuration (after ``WARMUP`` untimed ones).
STEPS: Final = 30
QUICK_STEPS: Final = 12
WARMUP: Final = 2
#: Requests admitted per step (and added back after it).
BATCH: Final = 256
#: Tokens per prompt, and per KV block (32: what vLLM's CPU backend prefers; a prompt fits one).
PROMPT_TOKENS: Final = 16
BLOCK_SIZE: Final = 32
MAX_MODEL_LEN: Final = 2048
#: Targets of the issue: step time ratio per policy, add_request ratio.
STEP_TARGETS: Final = {"fcfs": 1.15, "priority": 1.25}
ADD_TARGET: Final = 2.0
POLICIES: Final = ("fcfs", "priority")
#: The queues the drop-in replaces.
REPLACED_QUEUES: Final = ("waiting", "kv_holding_waiting")
EXIT_NO_VLLM: Final = 2
SEED: Final = 33

INSTALL_HINT: Final = (
    "policy-kernel bench --vllm: vllm is not importable{reason}; install it in a separate"
    " venv: python3.11 -m venv vllm-venv && vllm-venv/bin/pip install vllm==0.33.0"
    " && vllm-venv/bin/pip install -e . ; then run VLLM_TARGET_DEVICE=cpu"
    " vllm-venv/bin/policy-kernel bench --vllm (docs/performance.md, 'The real vLLM step')"
)

#: A tiny Llama: only its shape is read (max_model_len, layers, heads), never weights.
MODEL_CONFIG: Final = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "num_hidden_layers": 1,
    "vocab_size": 1024,
    "max_position_embeddings": MAX_MODEL_LEN,
    "rms_norm_eps": 1e-6,
    "torch_dtype": "float32",
}

#: Environment defaults set before vLLM is imported: offline, CPU, logs on stderr
#: (the JSON document goes to stdout), warnings only.
ENVIRONMENT: Final = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_TARGET_DEVICE": "cpu",
    "VLLM_LOGGING_STREAM": "ext://sys.stderr",
    "VLLM_LOGGING_LEVEL": "WARNING",
}


@dataclass(frozen=True, slots=True)
class StepRow:
    """One configuration: seconds per ``schedule()`` (median) and per ``add_request``
    (median of per-step batches), native and drop-in, with their ratios.

    >>> row = StepRow("fcfs", 1000, 3, 256, 0.010, 0.011, 1.1, 1.15, 2e-6, 3e-6, 1.5, 2.0, True)
    >>> row.step_met, row.add_met
    (True, True)
    """

    policy: str
    n: int
    steps: int
    admitted: int
    native_step_seconds: float
    dropin_step_seconds: float
    step_ratio: float
    step_target: float
    native_add_seconds: float
    dropin_add_seconds: float
    add_ratio: float
    add_target: float
    same_order: bool

    @property
    def step_met(self) -> bool:
        """Whether the step ratio is within its target."""
        return self.step_ratio <= self.step_target

    @property
    def add_met(self) -> bool:
        """Whether the add_request ratio is within its target."""
        return self.add_ratio <= self.add_target


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """What a request is made from; each scheduler gets its own ``Request`` object."""

    request_id: str
    token: int
    priority: int
    arrival_time: float


class Vllm:
    """The vLLM names the benchmark uses, imported when made (all ``Any``)."""

    def __init__(self) -> None:
        for name, value in ENVIRONMENT.items():
            os.environ.setdefault(name, value)
        self.version: str = importlib.import_module("vllm").__version__
        config = importlib.import_module("vllm.config")
        self.ModelConfig: Any = config.ModelConfig
        self.SchedulerConfig: Any = config.SchedulerConfig
        self.CacheConfig: Any = config.CacheConfig
        self.VllmConfig: Any = config.VllmConfig
        interface = importlib.import_module("vllm.v1.kv_cache_interface")
        self.FullAttentionSpec: Any = interface.FullAttentionSpec
        self.KVCacheConfig: Any = interface.KVCacheConfig
        self.KVCacheGroupSpec: Any = interface.KVCacheGroupSpec
        self.Scheduler: Any = importlib.import_module("vllm.v1.core.sched.scheduler").Scheduler
        self.StructuredOutputManager: Any = importlib.import_module(
            "vllm.v1.structured_output"
        ).StructuredOutputManager
        request = importlib.import_module("vllm.v1.request")
        self.Request: Any = request.Request
        self.RequestStatus: Any = request.RequestStatus
        self.SamplingParams: Any = importlib.import_module("vllm.sampling_params").SamplingParams
        self.float32: Any = importlib.import_module("torch").float32


def vllm_missing() -> str | None:
    """None when vLLM imports, otherwise why not (the refusal line's reason)."""
    try:
        importlib.import_module("vllm")
    except ImportError as error:  # ModuleNotFoundError too
        return str(error)
    return None


def refusal(reason: str | None = None) -> str:
    """The one line printed when vLLM cannot be imported.

    >>> refusal().startswith("policy-kernel bench --vllm: vllm is not importable; install it")
    True
    """
    return INSTALL_HINT.format(reason=f" ({reason})" if reason else "")


# --- building the schedulers ----------------------------------------------------------


def model_folder(folder: Path) -> Path:
    """Write the tiny model's ``config.json`` into ``folder`` (by the project's one
    file rule: a regular file only); returns ``folder``, or raises an ``OSError``."""
    text = json.dumps(MODEL_CONFIG, indent=2) + "\n"
    written = write_regular_file(folder / "config.json", text.encode("utf-8"))
    if isinstance(written, Failure):
        raise OSError(None, written.failure().reason)
    return folder


def vllm_config(
    v: Vllm,
    folder: Path,
    policy: str,
    *,
    max_num_seqs: int = BATCH,
    max_num_batched_tokens: int = 2 * BATCH * PROMPT_TOKENS,
    block_size: int = BLOCK_SIZE,
    prefix_caching: bool = False,
    scheduler_cls: str | None = None,
) -> Any:
    """vLLM's configuration for ``policy``: no tokenizer, dummy weights; by default
    room for ``BATCH`` admissions per step (``max_num_seqs`` is the binding limit).
    The tests against the real scheduler (tests/vllm_real) pass their own limits."""
    model = v.ModelConfig(
        model=str(folder),
        tokenizer=str(folder),
        skip_tokenizer_init=True,
        dtype="float32",
        seed=0,
        max_model_len=MAX_MODEL_LEN,
    )
    scheduler = v.SchedulerConfig(
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        max_model_len=MAX_MODEL_LEN,
        is_encoder_decoder=False,
        policy=policy,
        scheduler_cls=scheduler_cls,
    )
    cache = v.CacheConfig(block_size=block_size, enable_prefix_caching=prefix_caching)
    return v.VllmConfig(model_config=model, scheduler_config=scheduler, cache_config=cache)


def kv_cache_config(v: Vllm, config: Any, blocks: int) -> Any:
    """``blocks`` KV blocks of one full-attention group for ``config`` (whose
    ``num_gpu_blocks`` it sets too, as vLLM's engine core does after profiling)."""
    block_size = config.cache_config.block_size
    config.cache_config.num_gpu_blocks = blocks
    spec = v.FullAttentionSpec(block_size=block_size, num_kv_heads=1, head_size=1, dtype=v.float32)
    return v.KVCacheConfig(
        num_blocks=blocks,
        kv_cache_tensors=[],
        kv_cache_groups=[v.KVCacheGroupSpec(["layer"], spec)],
    )


def build_scheduler(v: Vllm, config: Any, drop_in: bool) -> Any:
    """A ``Scheduler`` on ``config`` with KV blocks for 4 blocks per admitted request;
    with ``drop_in``, the adapter's queue (``fcfs_queue()`` or ``priority_queue()``)
    installed on ``waiting`` and on ``kv_holding_waiting`` before any request."""
    scheduler = v.Scheduler(
        vllm_config=config,
        kv_cache_config=kv_cache_config(v, config, 4 * BATCH + 1),
        structured_output_manager=v.StructuredOutputManager(config),
        block_size=BLOCK_SIZE,
        log_stats=False,
    )
    if drop_in:
        make: Callable[[], WaitingRequestQueue[Any]] = (
            priority_queue if config.scheduler_config.policy == "priority" else fcfs_queue
        )
        install_waiting_queue(scheduler, make)  # a queue of its own on each queue vLLM built
    return scheduler


def request_specs(rng: random.Random, start: int, count: int) -> list[RequestSpec]:
    """``count`` seeded requests numbered from ``start``: priority 0 to 9, one arrival
    per millisecond (so no two share ``(priority, arrival_time)``)."""
    return [
        RequestSpec(f"req-{serial}", serial % 1024, rng.randrange(10), 1_000.0 + serial * 1e-3)
        for serial in range(start, start + count)
    ]


def make_requests(v: Vllm, specs: Sequence[RequestSpec], sampling: Any) -> list[Any]:
    """vLLM ``Request`` objects for ``specs`` (a fresh object per scheduler)."""
    return [
        v.Request(
            request_id=spec.request_id,
            prompt_token_ids=[spec.token] * PROMPT_TOKENS,
            sampling_params=sampling,
            pooling_params=None,
            arrival_time=spec.arrival_time,
            priority=spec.priority,
        )
        for spec in specs
    ]


def timed_adds(scheduler: Any, requests: Sequence[Any]) -> float:
    """Add ``requests`` with ``scheduler.add_request``; seconds per request."""
    add = scheduler.add_request
    clock = time.perf_counter
    started = clock()
    for request in requests:
        add(request)
    return (clock() - started) / max(len(requests), 1)


def timed_step(v: Vllm, scheduler: Any) -> tuple[float, list[str]]:
    """One ``schedule()`` (timed), then, untimed, finish what it admitted; returns the
    seconds and the admitted ids in order."""
    clock = time.perf_counter
    started = clock()
    output = scheduler.schedule()
    seconds = clock() - started
    admitted = [data.req_id for data in output.scheduled_new_reqs]
    if output.scheduled_cached_reqs.num_reqs or len(scheduler.running) != len(admitted):
        raise RuntimeError("the benchmark step scheduled running or resumed requests")
    scheduler.finish_requests(admitted, v.RequestStatus.FINISHED_ABORTED)
    if scheduler.running:
        raise RuntimeError("requests are still running after the step was finished")
    return seconds, admitted


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Freeze what exists (as vLLM's engine does after start-up) and keep the
    cyclic collector off; :func:`gc.collect` is called between steps, untimed."""
    enabled = gc.isenabled()
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()


def run_configuration(
    v: Vllm,
    folder: Path,
    policy: str,
    n: int,
    steps: int,
    *,
    warmup: int = WARMUP,
) -> StepRow:
    """Measure one configuration (see the module's docstring)."""
    config = {"native": vllm_config(v, folder, policy), "drop-in": vllm_config(v, folder, policy)}
    schedulers = {name: build_scheduler(v, config[name], name == "drop-in") for name in config}
    sampling = v.SamplingParams(max_tokens=16)
    rng = random.Random(f"{SEED}-{policy}-{n}")
    serial = 0
    specs = request_specs(rng, serial, n)
    serial += n
    for scheduler in schedulers.values():
        timed_adds(scheduler, make_requests(v, specs, sampling))
    del specs
    times: dict[str, list[float]] = {name: [] for name in schedulers}
    adds: dict[str, list[float]] = {name: [] for name in schedulers}
    same_order = True
    admitted_counts: list[int] = []
    with _collector_paused():
        for step in range(warmup + steps):
            order = list(schedulers) if step % 2 == 0 else list(reversed(schedulers))
            gc.collect()
            admitted: dict[str, list[str]] = {}
            for name in order:
                seconds, admitted[name] = timed_step(v, schedulers[name])
                if step >= warmup:
                    times[name].append(seconds)
            same_order = same_order and admitted["native"] == admitted["drop-in"]
            count = len(admitted["native"])
            admitted_counts.append(count)
            # Checked here, after the step, not after the adds: the drop-in defers its
            # adds until the next read, and this untimed read would absorb them out
            # of the step that, in vLLM, absorbs them (its first bool or peek).
            for name, scheduler in schedulers.items():
                if len(scheduler.waiting) != n - count:
                    raise RuntimeError(f"{name}: {len(scheduler.waiting)} waiting, not {n - count}")
            specs = request_specs(rng, serial, count)
            serial += count
            fresh = {name: make_requests(v, specs, sampling) for name in order}
            for name in order:
                seconds = timed_adds(schedulers[name], fresh[name])
                if step >= warmup:
                    adds[name].append(seconds)
    native_step = statistics.median(times["native"])
    dropin_step = statistics.median(times["drop-in"])
    native_add = statistics.median(adds["native"])
    dropin_add = statistics.median(adds["drop-in"])
    return StepRow(
        policy=policy,
        n=n,
        steps=steps,
        admitted=min(admitted_counts),
        native_step_seconds=native_step,
        dropin_step_seconds=dropin_step,
        step_ratio=dropin_step / native_step,
        step_target=STEP_TARGETS[policy],
        native_add_seconds=native_add,
        dropin_add_seconds=dropin_add,
        add_ratio=dropin_add / native_add,
        add_target=ADD_TARGET,
        same_order=same_order,
    )


def measure(
    v: Vllm,
    sizes: Sequence[int],
    steps: int,
    *,
    policies: Sequence[str] = POLICIES,
    progress: TextIO | None = None,
) -> list[StepRow]:
    """Every configuration, sizes outermost; progress lines on ``progress``."""
    rows: list[StepRow] = []
    with tempfile.TemporaryDirectory(prefix="policy-kernel-vllm-") as where:
        folder = model_folder(Path(where))
        for n in sizes:
            for policy in policies:
                if progress is not None:
                    progress.write(f"bench --vllm: {policy} N={n:,} ...\n")
                    progress.flush()
                rows.append(run_configuration(v, folder, policy, n, steps))
                gc.collect()
    return rows


# --- reporting ------------------------------------------------------------------------


def _time(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.2f} µs"


def table(rows: Sequence[StepRow]) -> str:
    """The rows as a plain text table.

    >>> print(table([StepRow("fcfs", 1000, 3, 256, 0.01, 0.0125, 1.25, 1.15, 2e-6, 3e-6,
    ...                      1.5, 2.0, True)]))  # doctest: +NORMALIZE_WHITESPACE
    policy        N steps admitted step native step drop-in ratio  target verdict  add native add drop-in ratio target verdict same order
    fcfs      1,000     3      256    10.00 ms     12.50 ms  1.25 <= 1.15 NOT MET     2.00 µs     3.00 µs  1.50 <= 2.0 met     yes
    """  # noqa: E501 - a doctest's expected line
    lines = [
        f"{'policy':<8} {'N':>8} {'steps':>5} {'admitted':>8} {'step native':>11}"
        f" {'step drop-in':>12} {'ratio':>5} {'target':>7} {'verdict':<8}"
        f" {'add native':>11} {'add drop-in':>11} {'ratio':>5} {'target':>6} {'verdict':<7}"
        " same order"
    ]
    for row in rows:
        lines.append(
            f"{row.policy:<8} {row.n:>8,} {row.steps:>5} {row.admitted:>8}"
            f" {_time(row.native_step_seconds):>11} {_time(row.dropin_step_seconds):>12}"
            f" {row.step_ratio:>5.2f} {'<= ' + format(row.step_target, '.2f'):>7}"
            f" {'met' if row.step_met else 'NOT MET':<8}"
            f" {_time(row.native_add_seconds):>11} {_time(row.dropin_add_seconds):>11}"
            f" {row.add_ratio:>5.2f} {'<= ' + format(row.add_target, '.1f'):>6}"
            f" {'met' if row.add_met else 'NOT MET':<7} {'yes' if row.same_order else 'NO'}"
        )
    return "\n".join(lines)


def document(rows: Sequence[StepRow], version: str, quick: bool) -> dict[str, object]:
    """The JSON document of a run."""
    return {
        "vllm": version,
        "machine": machine(),
        "quick": quick,
        "batch": BATCH,
        "prompt_tokens": PROMPT_TOKENS,
        "replaced_queues": list(REPLACED_QUEUES),
        "rows": [{**asdict(row), "step_met": row.step_met, "add_met": row.add_met} for row in rows],
    }


def bench_vllm(quick: bool, as_json: bool, out: TextIO, err: TextIO) -> int:
    """Run every configuration and print the table (or one JSON document): exit
    status 0; 2 (and one line on ``err``) when vLLM cannot be imported."""
    reason = vllm_missing()
    if reason is not None:
        err.write(refusal(reason) + "\n")
        return EXIT_NO_VLLM
    v = Vllm()
    rows = measure(
        v,
        QUICK_SIZES if quick else SIZES,
        QUICK_STEPS if quick else STEPS,
        progress=None if as_json else err,
    )
    if as_json:
        out.write(json.dumps(document(rows, v.version, quick), indent=2) + "\n")
        return 0
    out.write(
        f"vLLM {v.version} Scheduler.schedule() with {BATCH} admissions per step;"
        f" drop-in on {' and '.join(REPLACED_QUEUES)}\n"
    )
    out.write(table(rows) + "\n")
    met = sum(row.step_met for row in rows) + sum(row.add_met for row in rows)
    out.write(f"bench --vllm: {met} of {2 * len(rows)} targets met ({machine()})\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m oracle.bench.vllm_step [--quick] [--json]``."""
    parser = argparse.ArgumentParser(prog="python -m oracle.bench.vllm_step")
    parser.add_argument("--quick", action="store_true", help="N = 1,000 and 10,000 only")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead")
    arguments = parser.parse_args(argv)
    return bench_vllm(arguments.quick, arguments.json, sys.stdout, sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
