"""Names and rules of the energy designs that the writer runs and the verifier checks.

The ``learners`` design runs three arms, (learner, workspace) pairs, in a rotating order; each
trial's record file has a stem built from its round, learner and workspace. These are the
protocol's facts (``docs/protocol.md`` §5), defined once for ``bundle.phases.energy``
(which runs the design) and ``verify`` (which checks the records against it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from protocol.workspaces import workspace_stem

ORIGINAL_TRIALS = 3
"""Trials of the original protocol (``docs/protocol.md`` §5)."""
ORIGINAL_TARGET_MS = 5000.0
"""Active-window target of the original protocol (ms): repeats = max(1, min(1000, ceil(5000 / calibration_ms)))."""
ORIGINAL_SETTLE_S = 3.0
"""Settle time before each idle window of the original protocol (s)."""
ORIGINAL_IDLE_S = 3.0
"""Idle window length of the original protocol (s)."""
PER_TASK_KEYS = ("idle_adjusted_mj_per_task", "unadjusted_mj_per_task", "cuda_ms_per_task", "wall_ms_per_task")
"""The per-task figures of a trial, in record order."""

LEARNER_ARMS = (("rev88", ":16:8"), ("rev88", ":0:0"), ("rev88-fused", ":16:8"))
"""The arms of the ``learners`` design, in design order: (learner, workspace); the first is the baseline."""

DEFAULT_LEARNER = "rev88"
"""The learner a fixture record without a ``learner`` block ran (the fixture's default)."""


def arm_label(learner: str, workspace: str) -> str:
    """Label of a ``learners`` arm: ``"rev88-fused :16:8"``."""
    return f"{learner} {workspace}"


LEARNERS_BASELINE = arm_label(*LEARNER_ARMS[0])
"""Label of the ``learners`` design's baseline arm (the denominator of its ratios)."""


def learners_trial_stem(round_index: int, learner: str, workspace: str) -> str:
    """File stem of one ``learners`` trial: ``trial-r00-rev88-fused-workspace-16-8`` (the learner's name
    sits before the workspace, so no stem equals an interleaved one, ``trial-r00-workspace-16-8``)."""
    return f"trial-r{round_index:02d}-{learner}-{workspace_stem(workspace)}"


def learner_of(record: Mapping[str, Any]) -> str:
    """The learner a fixture record names: its ``learner`` block's name, else :data:`DEFAULT_LEARNER`."""
    block = record.get("learner")
    return str(block.get("name")) if isinstance(block, Mapping) else DEFAULT_LEARNER


def executed_order(completed_at_utc: Sequence[str]) -> list[int]:
    """Design positions in the order the trials ran: by each trial record's ``completed_at_utc``.

    A trial holds the board's GPU from before CUDA initialisation until its process exits, so the
    order in which the trials completed is the order in which they used the GPU.

    Args:
        completed_at_utc: one ISO 8601 UTC stamp per trial, in design order.

    Returns:
        The design positions (0-based) sorted by their stamps.
    """
    return sorted(range(len(completed_at_utc)), key=lambda i: completed_at_utc[i])


ORDER_DEVIATION = ("the trials did not run in the design order (executed_order lists design positions in the "
                   "order they ran, from the records' completion stamps); the figures are per config and do "
                   "not depend on the order, the drift-spreading rotation does")
"""The deviation text an energy record carries when :func:`executed_order` is not the design order."""
