"""The replay harness: the imperative shell around the kernel.

JSON field reading with paths (``fields``), scenario files (``scenarios``,
``rotation_scenario``, ``admission_scenario``), the rotation driver
(``rotation_replay``), the admission engines (``pool_engine``, ``step_engine``,
``admission_replay``, ``admission_run``) and verdicts against ``expect``
(``verdicts``).
"""
