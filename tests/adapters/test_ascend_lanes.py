"""vLLM-Ascend's ShortRequestFirst behaviours, against ``short_request_first_queue``."""

from __future__ import annotations

import logging
import math

import pytest

from policy.adapters.vllm import QueueStats, short_request_first_queue
from tests.adapters.stand_ins import FakeClock, Req, drain, ids

THRESHOLD = 256


def short(name: str) -> Req:
    return Req(name, num_prompt_tokens=10)


def long(name: str) -> Req:
    return Req(name, num_prompt_tokens=THRESHOLD + 1000)


def test_immediate_then_short_then_long() -> None:
    queue = short_request_first_queue(THRESHOLD, clock=FakeClock())
    queue.add_request(long("long"))
    queue.add_request(short("short"))
    queue.add_request(Req("immediate", num_prompt_tokens=5000, num_computed_tokens=32))
    assert drain(queue) == ["immediate", "short", "long"]


def test_256_tokens_is_short_and_257_long() -> None:
    queue = short_request_first_queue(256, clock=FakeClock())
    queue.add_request(Req("257", num_prompt_tokens=257))
    queue.add_request(Req("256", num_prompt_tokens=256))
    assert drain(queue) == ["256", "257"]


def test_with_100_ms_a_long_request_that_waited_150_ms_beats_a_short_one() -> None:
    clock = FakeClock()
    queue = short_request_first_queue(THRESHOLD, long_max_wait_ms=100.0, clock=clock)
    queue.add_request(long("long"))
    queue.add_request(short("short"))
    clock.advance(0.05)
    assert ids(queue) == ["short", "long"]  # not aged yet
    clock.advance(0.10)  # waited 150 ms
    assert ids(queue) == ["long", "short"]
    assert drain(queue) == ["long", "short"]


def test_with_0_a_short_request_still_wins_after_10_s() -> None:
    clock = FakeClock()
    queue = short_request_first_queue(THRESHOLD, long_max_wait_ms=0.0, clock=clock)
    queue.add_request(long("long"))
    queue.add_request(short("short"))
    clock.advance(10.0)
    assert drain(queue) == ["short", "long"]


def test_peek_pins_through_a_clock_advance() -> None:
    clock = FakeClock()
    queue = short_request_first_queue(THRESHOLD, long_max_wait_ms=100.0, clock=clock)
    queue.add_request(long("long"))
    queue.add_request(short("short"))
    assert queue.peek_request().request_id == "short"
    clock.advance(0.2)  # the long one has aged in between
    assert queue.peek_request().request_id == "short"  # a second peek keeps the pin
    assert queue.pop_request().request_id == "short"
    assert queue.pop_request().request_id == "long"


def test_without_the_pin_the_aged_long_request_is_popped() -> None:
    clock = FakeClock()
    queue = short_request_first_queue(THRESHOLD, long_max_wait_ms=100.0, clock=clock)
    queue.add_request(long("long"))
    queue.add_request(short("short"))
    assert queue.peek_request().request_id == "short"
    clock.advance(0.2)
    queue.add_request(short("later"))  # any add clears the pin
    assert queue.pop_request().request_id == "long"


@pytest.mark.parametrize(
    "recovery",
    [
        Req("r", num_prompt_tokens=5000, status="PREEMPTED"),
        Req("r", num_prompt_tokens=5000, num_computed_tokens=1),
        Req("r", num_prompt_tokens=5000, num_output_tokens=3),
    ],
)
def test_recovery_requests_go_first(recovery: Req) -> None:
    clock = FakeClock()
    queue = short_request_first_queue(THRESHOLD, long_max_wait_ms=100.0, clock=clock)
    queue.add_request(long("aged"))
    queue.add_request(short("short"))
    clock.advance(1.0)
    queue.add_request(recovery)
    assert drain(queue) == ["r", "aged", "short"]


def test_a_prepended_request_goes_first_resumed() -> None:
    # The scheduler prepends what it preempted: resumed, ahead of every lane.
    queue = short_request_first_queue(THRESHOLD, clock=FakeClock())
    queue.add_request(Req("immediate", num_computed_tokens=8))
    queue.add_request(short("short"))
    queue.prepend_request(long("preempted"))
    assert drain(queue) == ["preempted", "immediate", "short"]


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"threshold": -1}, ValueError, "threshold must be a non-negative int, not -1"),
        (
            {"long_max_wait_ms": -1.0},
            ValueError,
            "long_max_wait_ms must be at least 0 (0 disables aging), not -1.0",
        ),
        ({"long_max_wait_ms": math.nan}, ValueError, "long_max_wait_ms must be at least 0"),
        ({"long_max_wait_ms": math.inf}, ValueError, "long_max_wait_ms must be finite"),
        ({"threshold": 25.6}, TypeError, "threshold must be an int (prompt tokens), not 25.6"),
        ({"threshold": True}, TypeError, "threshold must be an int"),
        ({"long_max_wait_ms": "100"}, TypeError, "long_max_wait_ms must be a number"),
    ],
)
def test_the_ascend_configuration_is_validated(
    arguments: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        short_request_first_queue(**arguments)  # type: ignore[arg-type]
    assert message in str(raised.value)


def test_defaults_are_the_ascend_defaults() -> None:
    queue = short_request_first_queue()
    assert queue.policy.constants["short_tokens"] == 256.0
    assert queue.policy.constants["max_wait"] == 0.0


def test_stats_count_the_lanes_and_the_aged_long_run(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    queue = short_request_first_queue(THRESHOLD, long_max_wait_ms=100.0, clock=clock)
    for k in range(4):
        queue.add_request(long(f"long-{k}"))
    queue.add_request(short("short"))
    queue.add_request(Req("immediate", num_output_tokens=1))
    clock.advance(0.5)
    queue.prepend_request(short("resumed"))
    with caplog.at_level(logging.WARNING, logger="policy.adapters.vllm"):
        popped = drain(queue)
    assert popped == ["resumed", "immediate", "long-0", "long-1", "long-2", "long-3", "short"]
    assert queue.stats() == QueueStats(
        {"resumed": 1, "immediate": 1, "aged long": 4, "short": 1},
        run_class="aged long",
        run=0,  # the short admission ended the run
        waiting=0,
    )
    warnings = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warnings) == 1  # once, at the third consecutive aged-long admission
    assert warnings[0].getMessage() == (
        "3 consecutive admissions of class aged long, the watched class: requests of the"
        " other classes wait meanwhile; long requests are overtaking short ones: consider a"
        " larger short threshold or a longer wait limit"
    )


def test_the_run_counts_consecutive_aged_long_admissions() -> None:
    clock = FakeClock()
    queue = short_request_first_queue(THRESHOLD, long_max_wait_ms=100.0, clock=clock)
    queue.add_request(long("a"))
    queue.add_request(long("b"))
    queue.add_request(short("s"))
    clock.advance(0.2)
    queue.pop_request()
    assert queue.stats().run == 1
    queue.pop_request()
    assert queue.stats().run == 2
    queue.pop_request()
    assert queue.stats().run == 0
