"""Texts and record facts of the profile phase that the verifier checks word for word.

The profile record states how each run held the board's GPU lock (:data:`GPU_LOCK_TEXT`, by the
lock scope a fixture record names) and, when Nsight Compute's version differs from the
original's, :data:`VERSION_NOTE`. Defined once for ``bundle.phases.profile`` and ``verify``.
"""

from __future__ import annotations

from typing import Any

GPU_LOCK_TEXT = {
    "range": ("each run's fixture processes take the board's GPU lock shared before CUDA initialisation "
              "(preparations of several runs overlap) and exclusively from the warm-ups before the range "
              "until they exit (no other job's GPU work meets a range); the metric query holds it shared"),
    "process": ("each run's fixture processes take the board's GPU lock exclusively before CUDA "
                "initialisation and hold it until they exit (no two use the GPU at once; the next run's "
                "ncu, interpreter and imports start meanwhile); the metric query holds it shared"),
}
"""The profile record's ``gpu_lock`` text per lock scope (``range`` or ``process``)."""

VERSION_NOTE = (
    "The original used Nsight Compute {pinned}; this run used {found}. Counter definitions "
    "can change between releases: compare figures across versions with that in mind."
)
"""Note (``str.format`` with ``pinned`` and ``found``) recorded when the ncu version differs from the pin."""


def lock_scope_of(fixture: dict[str, Any]) -> str | None:
    """The GPU lock scope a fixture record's process held (``process`` for a lock record without one,
    as before scopes existed), or ``None`` when it records no lock."""
    lock = (fixture.get("placement") or {}).get("gpu_lock")
    return str(lock.get("scope", "process")) if isinstance(lock, dict) else None
