"""Policy comparison on a seeded synthetic workload (``policy-kernel simulate``, issue 10).

:mod:`oracle.simulate.workload` builds the workloads (the only randomness, a
``random.Random(seed)``), :mod:`oracle.simulate.run` plays them through the step
engine and the rotation driver and reports per policy and request class.
"""
