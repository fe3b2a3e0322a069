"""One policy per selection path, for tests that compare every path's queue."""

from __future__ import annotations

from typing import Final

from policy.waiting import QueuePolicy, ascend_fcfs_lanes, fifo, make_policy, vllm_priority

#: ``fifo``, ``static`` (vLLM's priority), ``lanes`` (the Ascend lanes with aging) and
#: ``scan`` (a key that gets better with age at a rate set by each entry).
ONE_POLICY_PER_PATH: Final[dict[str, QueuePolicy]] = {
    "fifo": fifo(),
    "static": vllm_priority(),
    "lanes": ascend_fcfs_lanes(short_tokens=100, max_wait=2.0),
    "scan": make_policy(["prompt / (1 + waited)"], attributes=["prompt"]).unwrap(),
}
