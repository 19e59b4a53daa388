"""Check families of the verifier, one module per evidence family (style-examples section 9).

Every ``check_*`` function takes parsed records and returns a list of
:class:`verify.result.CheckResult`; none opens files or raises for a failed comparison
(malformed records raise :class:`verify.records.RecordError`, which the runner turns into
one FAIL line).
"""

FLOAT_REL_TOL = 1e-12
"""Relative tolerance for recomputed floats. The original computed energy summaries with
``statistics`` in some records and numpy in others (spec 10.6), which differ in the last
bit; 1e-12 admits that and nothing larger."""

FLOAT_ABS_TOL = 1e-9
"""Absolute tolerance paired with :data:`FLOAT_REL_TOL` (for values near zero)."""
