"""``KernelScheduler``'s choice of queues (``POLICY_KERNEL_QUEUE``), its start-up
refusals and ``install_waiting_queue`` with a function, without vLLM (the class
itself against vLLM's real scheduler is in tests/vllm_real)."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from policy.adapters import vllm_scheduler as adapter
from policy.adapters.policy_file import MAX_POLICY_BYTES
from policy.adapters.vllm import WaitingRequestQueue, fcfs_queue, install_waiting_queue
from policy.adapters.vllm_scheduler import (
    CONFIG_KEY,
    ENV_VAR,
    READY_MADE,
    PolicyRefused,
    _classes,
    install_kernel_queues,
    queue_choice,
)
from policy.waiting import selection_path
from tests.adapters.stand_ins import DequeQueue, FakeClock, Req
from tests.replay_helpers import printed_by


def _choice(value: str) -> str:
    """The path of the queue ``value`` names, for vLLM's ``fcfs`` and ``priority``."""
    choice = queue_choice({ENV_VAR: value})
    fcfs, priority = choice.make("fcfs").policy, choice.make("priority").policy
    return f"{selection_path(fcfs)}/{selection_path(priority)}"


def test_unset_or_empty_is_vllms_own_semantics_of_the_configured_policy() -> None:
    for environ in ({}, {ENV_VAR: ""}, {ENV_VAR: "  "}, {"OTHER": "x"}):
        choice = queue_choice(environ)
        assert choice.source.startswith("default")
        assert selection_path(choice.make("fcfs").policy) == "fifo"
        assert selection_path(choice.make("priority").policy) == "static"


def test_the_default_priority_queue_re_inserts_a_preempted_request_by_its_keys() -> None:
    queue = queue_choice({}).make("priority")
    for name, priority in (("a", 0), ("b", 1)):
        queue.add_request(Req(name, priority=priority, arrival_time=float(priority)))
    queue.prepend_request(Req("preempted", priority=5, arrival_time=-1.0))
    assert [r.request_id for r in queue] == ["a", "b", "preempted"]  # as vLLM's heap


def test_every_ready_made_name() -> None:
    assert list(READY_MADE) == [
        "vllm",
        "fcfs",
        "priority",
        "priority-preempted-first",
        "short-first",
    ]
    assert _choice("vllm") == "fifo/static"
    assert _choice("fcfs") == "fifo/fifo"
    assert _choice("priority") == "static/static"
    assert _choice("priority-preempted-first") == "static/static"
    assert _choice(" short-first ") == "lanes/lanes"
    queue = queue_choice({ENV_VAR: "short-first: threshold=2, long_max_wait_ms=60000.5"}).make(
        "fcfs"
    )
    queue.add_request(Req("long", num_prompt_tokens=3))
    queue.add_request(Req("short", num_prompt_tokens=2))
    assert next(r.request_id for r in queue) == "short"


def test_the_preempted_first_priority_queue_puts_a_prepended_request_first() -> None:
    queue = queue_choice({ENV_VAR: "priority-preempted-first"}).make("fcfs")
    queue.add_request(Req("a", priority=5, arrival_time=0.0))
    queue.prepend_request(Req("preempted", priority=5, arrival_time=1.0))
    assert [r.request_id for r in queue] == ["preempted", "a"]


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("fifo", "unknown policy name 'fifo': the ready-made names are vllm, fcfs"),
        ("fcfs:threshold=3", "fcfs takes no arguments (name:key=value,...), not 'threshold=3'"),
        ("short-first:limit=3", "short-first takes threshold, long_max_wait_ms"),
        ("short-first:threshold", "not 'threshold'"),
        ("short-first:threshold=many", "threshold must be a number in ASCII digits, not 'many'"),
        ("short-first:threshold=1_000", "threshold must be a number in ASCII digits, not '1_000'"),
        ("short-first:threshold=\u0665", "threshold must be a number in ASCII digits"),
        ("short-first:threshold=5,threshold=6", "threshold is given twice"),
        ("short-first:threshold=-1", "threshold must be a non-negative int, not -1"),
        ("short-first:threshold=2.5", "threshold must be an int (prompt tokens), not 2.5"),
        ("short-first:long_max_wait_ms=inf", "long_max_wait_ms must be a number in ASCII digits"),
        ("./nowhere/policy.json", "cannot read the policy file: No such file or directory"),
    ],
)
def test_a_bad_value_is_refused_in_one_line(value: str, reason: str) -> None:
    with pytest.raises(PolicyRefused) as refused:
        queue_choice({ENV_VAR: value})
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{ENV_VAR}={value.strip()!r}: ")
    assert reason in message
    assert isinstance(refused.value, ValueError)


def test_a_long_or_huge_value_is_quoted_short() -> None:
    # Issue 30: a 100,000-character value was quoted whole; a 5000-digit threshold
    # gave Python's int-to-text limit as the reason.
    for value, reason in (
        ("x" * 100_000, "unknown policy name 'xxx"),
        ("short-first:threshold=" + "9" * 5000, "threshold must be a number of at most 4,300"),
    ):
        with pytest.raises(PolicyRefused) as refused:
            queue_choice({ENV_VAR: value})
        message = str(refused.value)
        assert message.startswith(f"{ENV_VAR}={value[:80]!r}... ({len(value):,} characters): ")
        assert reason in message
        assert len(message) < 400
    with pytest.raises(PolicyRefused) as refused:
        queue_choice({}, {CONFIG_KEY: 10**5000})
    assert str(refused.value).startswith(
        "additional_config['policy_kernel_queue']=a 5001-digit integer: must be a policy name"
    )


def _file(tmp_path: Path, content: str | bytes, name: str = "policy.json") -> str:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return str(path)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (
            '{"keys": ["prmpt"]}',
            "the policy file holds no valid policy: keys[0]: unknown name 'prmpt'",
        ),
        ("{not json", "the policy file is not JSON: "),
        ('{"keys": [\n"prompt"', "the policy file is not JSON: "),
        (b"\xff\xfe{}", "the policy file is not UTF-8 text"),
        (
            '{"attributes": {"score": "visible"}, "keys": ["score"]}',
            "the policy reads 'score', which the requests do not offer",
        ),
        (" " * (MAX_POLICY_BYTES + 1), "larger than 1,048,576 bytes"),
    ],
)
def test_a_bad_policy_file_is_refused_in_one_line(
    tmp_path: Path, content: str | bytes, reason: str
) -> None:
    with pytest.raises(PolicyRefused) as refused:
        queue_choice({ENV_VAR: _file(tmp_path, content)})
    message = str(refused.value)
    assert "\n" not in message
    assert reason in message


@pytest.mark.parametrize("name", ["request_id", "tenant"])
def test_a_policy_reading_what_vllms_requests_lack_is_refused_at_start_naming_the_offered(
    tmp_path: Path, name: str
) -> None:
    # request_id names the request (text in vLLM): read as a number, every request
    # would be refused; the server must not start with such a policy.
    document = {"attributes": {name: "visible"}, "keys": [name]}
    path = _file(tmp_path, json.dumps(document))
    with pytest.raises(PolicyRefused) as refused:
        queue_choice({ENV_VAR: path})
    message = str(refused.value)
    assert message.startswith(f"{ENV_VAR}={path!r}: the policy reads {name!r}, which the requests")
    assert message.endswith(
        "; the attributes offered are arrival_time, immediate, prepended, priority, prompt"
    )
    assert "\n" not in message


def test_a_fifo_named_as_the_policy_file_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "queue.json"
    os.mkfifo(fifo)  # no writer ever comes: a blocking open waits for ever
    program = (
        "import sys\n"
        "from policy.adapters.vllm_scheduler import ENV_VAR, PolicyRefused, queue_choice\n"
        "try:\n"
        "    queue_choice({ENV_VAR: sys.argv[1]})\n"
        "except PolicyRefused as refused:\n"
        "    print(refused)\n"
    )
    assert printed_by(program, str(fifo)) == (
        f"{ENV_VAR}={str(fifo)!r}: cannot read the policy file: not a regular file (a FIFO)\n"
    )


def test_a_folder_is_not_a_policy_file(tmp_path: Path) -> None:
    with pytest.raises(PolicyRefused, match="cannot read the policy file"):
        queue_choice({ENV_VAR: str(tmp_path) + "/"})


def test_a_policy_file_orders_the_queues(tmp_path: Path) -> None:
    document = {"attributes": {"prompt": "visible"}, "keys": ["-prompt"]}
    path = _file(tmp_path, json.dumps(document), name="longest-first.json")
    choice = queue_choice({ENV_VAR: path})
    assert choice.source == f"policy file {path!r}"
    queue = choice.make("priority")
    for name, tokens in (("a", 5), ("b", 50), ("c", 20)):
        queue.add_request(Req(name, num_prompt_tokens=tokens))
    assert [r.request_id for r in queue] == ["b", "c", "a"]
    assert choice.make("fcfs") is not queue  # a new queue each time


def test_a_relative_path_with_a_slash_is_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _file(tmp_path, "{}", name="plain")
    monkeypatch.chdir(tmp_path)
    assert selection_path(queue_choice({ENV_VAR: "./plain"}).make("fcfs").policy) == "fifo"


def test_the_environment_is_read_when_none_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "short-first")
    assert queue_choice().source == "ready-made 'short-first'"
    monkeypatch.delenv(ENV_VAR)
    assert queue_choice().source.startswith("default")


def test_vllms_additional_config_names_the_policy_when_the_variable_does_not() -> None:
    config = {CONFIG_KEY: "short-first:threshold=64", "other": 1}
    choice = queue_choice({}, config)
    assert (
        choice.source
        == "ready-made 'short-first:threshold=64' (additional_config['policy_kernel_queue'])"
    )
    assert selection_path(choice.make("fcfs").policy) == "lanes"
    assert selection_path(queue_choice({ENV_VAR: ""}, config).make("fcfs").policy) == "lanes"
    assert (
        queue_choice({ENV_VAR: "fcfs"}, config).source == "ready-made 'fcfs'"
    )  # the variable wins
    assert queue_choice({}, {"other": 1}).source.startswith("default")
    assert queue_choice({}, None).source.startswith("default")
    assert queue_choice({}, "not a mapping").source.startswith("default")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("fifo", "additional_config['policy_kernel_queue']='fifo': unknown policy name 'fifo'"),
        (3, "additional_config['policy_kernel_queue']=3: must be a policy name or a policy file"),
        ("", "additional_config['policy_kernel_queue']='': must be a policy name"),
    ],
)
def test_a_bad_additional_config_value_is_refused_in_one_line(value: object, reason: str) -> None:
    with pytest.raises(PolicyRefused) as refused:
        queue_choice({}, {CONFIG_KEY: value})
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(reason)


def _scheduler(policy: str = "priority", **queues: object) -> SimpleNamespace:
    made = {"waiting": DequeQueue(), "kv_holding_waiting": DequeQueue(), **queues}
    return SimpleNamespace(policy=SimpleNamespace(value=policy), **made)


def test_install_kernel_queues_replaces_both_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    scheduler = _scheduler()
    caplog.set_level(logging.INFO, logger="vllm.policy_kernel")
    waiting = install_kernel_queues(scheduler, queue_choice({}))
    assert waiting is scheduler.waiting
    assert isinstance(scheduler.kv_holding_waiting, WaitingRequestQueue)
    assert scheduler.kv_holding_waiting is not waiting
    assert selection_path(waiting.policy) == "static"
    [line] = [r.getMessage() for r in caplog.records if r.name == "vllm.policy_kernel"]
    assert line == (
        "policy-kernel queues: default: vLLM semantics of the configured policy;"
        " configured policy priority; selection path static;"
        " replaced waiting, kv_holding_waiting"
    )


def test_install_kernel_queues_before_vllm_0_33_replaces_waiting_only() -> None:
    scheduler = _scheduler("fcfs", kv_holding_waiting=None)
    install_kernel_queues(scheduler, queue_choice({ENV_VAR: "short-first"}))
    assert selection_path(scheduler.waiting.policy) == "lanes"
    assert scheduler.kv_holding_waiting is None


# --- install_waiting_queue with a function ---------------------------------------------


def test_a_function_gives_each_factory_queue_a_queue_of_its_own() -> None:
    scheduler = _scheduler()
    made: list[WaitingRequestQueue[object]] = []

    def make() -> WaitingRequestQueue[object]:
        made.append(fcfs_queue(clock=FakeClock()))
        return made[-1]

    assert install_waiting_queue(scheduler, make) is made[0]
    assert (scheduler.waiting, scheduler.kv_holding_waiting) == (made[0], made[1])
    assert len(made) == 2


def test_a_function_is_all_or_none() -> None:
    scheduler = _scheduler(kv_holding_waiting=DequeQueue([Req("holding")]))
    waiting = scheduler.waiting
    with pytest.raises(RuntimeError, match=r"^kv_holding_waiting: .* still holds 1 request"):
        install_waiting_queue(scheduler, fcfs_queue)
    assert scheduler.waiting is waiting  # not replaced either


def test_a_function_that_makes_a_full_queue_or_the_same_queue_is_refused() -> None:
    full = fcfs_queue(clock=FakeClock())
    full.add_request(Req("a"))
    with pytest.raises(RuntimeError, match=r"^waiting: the queue to install already holds 1"):
        install_waiting_queue(_scheduler(), lambda: full)
    one = fcfs_queue()
    with pytest.raises(RuntimeError, match="same queue twice"):
        install_waiting_queue(_scheduler(), lambda: one)
    with pytest.raises(TypeError, match="make must return a WaitingRequestQueue, not list"):
        install_waiting_queue(_scheduler(), list)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="scheduler must have a waiting queue"):
        install_waiting_queue(object(), fcfs_queue)


def test_a_function_again_keeps_the_queues_installed() -> None:
    scheduler = _scheduler()
    queues = iter([fcfs_queue(), fcfs_queue()])
    install_waiting_queue(scheduler, lambda: next(queues))
    installed = [scheduler.waiting, scheduler.kv_holding_waiting]
    installed[0].add_request(Req("a"))
    again = iter(installed)
    assert install_waiting_queue(scheduler, lambda: next(again)) is installed[0]
    assert [scheduler.waiting, scheduler.kv_holding_waiting] == installed


def test_one_queue_is_refused_for_a_scheduler_with_two() -> None:
    scheduler = _scheduler()
    with pytest.raises(RuntimeError, match="also has kv_holding_waiting: pass a function"):
        install_waiting_queue(scheduler, fcfs_queue())
    assert isinstance(scheduler.waiting, DequeQueue)


# --- the class, without vLLM -------------------------------------------------------------


def test_the_class_without_vllm_is_one_clear_import_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # what an environment without vLLM gives
    _classes.cache_clear()
    try:
        for name in ("KernelScheduler", "KernelAsyncScheduler"):
            with pytest.raises(ImportError) as refused:
                getattr(adapter, name)
            message = str(refused.value)
            assert "\n" not in message
            assert message.startswith("policy.adapters.vllm_scheduler.KernelScheduler needs vLLM")
    finally:
        _classes.cache_clear()


def test_other_missing_names_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'KernelSchedulr'"):
        getattr(adapter, "KernelSchedulr")  # noqa: B009 - the module's __getattr__ itself
    assert not hasattr(adapter, "__test__")
