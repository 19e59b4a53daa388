"""The verifier's own arithmetic: every figure it recomputes, written from ``docs/protocol.md``.

Nothing here comes from the writer (``bundle``): a mistake in the writer's arithmetic must not be
repeated by the verifier. ``tests/verify/test_differential.py`` runs both on the recorded logs and
the kept archives and states how far they may differ.

* :mod:`verify.arith.energy`: energy per window and per task from NVML counter stamps, the paired
  idle model, summaries with 95 % t intervals, Fieller ratio intervals, the between-board spread;
* :mod:`verify.arith.timing`: which spans overlap.
"""
