"""The replay harness: the imperative shell around the kernel.

JSON field reading with paths (``fields``), scenario files (``scenarios``,
``rotation_scenario``, ``admission_scenario``), the rotation driver
(``rotation_replay``, which plays the kernel or any other rotation engine),
exact event lists (``rotation_events``), the admission engines
(``pool_engine``, ``step_engine``, ``attempt_engine``, ``admission_replay``,
``admission_run``) and verdicts against ``expect`` (``verdicts``).
"""
