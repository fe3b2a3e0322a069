"""The adapter's benchmark rows are well formed and do what they say (no timed
assertion anywhere: the ratios are reported by ``policy-kernel bench``)."""

from __future__ import annotations

import math

from oracle.bench import adapter
from oracle.bench.run import sections
from tests.adapters.stand_ins import ids


def test_every_queue_and_operation_has_a_row() -> None:
    rows = adapter.adapter_rows([200], quick=True)
    operations = [
        "add_request",
        "add_request, absorbed",
        "pop_request",
        "peek+pop",
        "prepend_request",
        "remove_request",
        f"remove_requests of {adapter.BATCH}",
        f"iterate first {adapter.ITERATED}",
    ]
    expected = [
        f"adapter {name} {operation}, N=200" for name in adapter.QUEUES for operation in operations
    ]
    assert [row.name for row in rows] == expected
    for row in rows:
        assert row.n == 200
        assert row.target == adapter.TARGET
        assert not row.higher_is_better
        assert row.kernel_seconds > 0
        assert row.baseline_seconds > 0
        assert math.isclose(row.ratio, row.kernel_seconds / row.baseline_seconds)
        assert "it wraps" in row.note


def test_the_section_is_registered() -> None:
    assert "drop-in vLLM queue" in [title for title, _ in sections(quick=True)]


def test_restoring_brings_the_adapter_back_to_its_requests() -> None:
    # internal: the bench's own setup and work are what these tests check
    for name in adapter.QUEUES:
        setup = adapter._setup(name, 300, 100)
        before = sorted(ids(setup.queue))
        for measured in adapter._work(setup, 100):
            measured.adapter()
            measured.restore()
            assert sorted(ids(setup.queue)) == before, (name, measured.operation)


def test_the_kernel_side_does_the_same_work() -> None:
    # internal (_setup, _work): the bench's own parts. Each kernel run is fed the
    # adapter's own version; it must accept it and not raise.
    for name in adapter.QUEUES:
        setup = adapter._setup(name, 300, 100)
        for measured in adapter._work(setup, 100):
            measured.kernel(setup.queue.snapshot)
