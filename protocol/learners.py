"""Learner constants the verifier checks records against without importing the learners (torch).

The writer's modules take these values from here (``bundle.fused_learner`` assigns its
``TIMING_SCOPE`` from :data:`FUSED_TIMING_SCOPE`), so writer and verifier cannot disagree.
"""

from __future__ import annotations

FUSED_LEARNER = "rev88-fused"
"""``bundle.fused_learner.LEARNER_NAME``: the name records give the fused learner."""

FUSED_TIMING_SCOPE = ("run = one train_kernel launch (reset from the initial copy, all updates) + one predict_kernel "
                      "launch; excludes setup, compilation, CPU permutation generation, allocation and transfer.")
"""What one timed run of the fused learner covers: its records' ``timing_scope`` (metadata blocks).
With ``ctas >= 2`` the "train_kernel launch" is the grid kernel's launch preceded by the memset of
its barrier counter."""
