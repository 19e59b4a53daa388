"""Scope texts a fixture record carries word for word (the original's, ``docs/protocol.md`` §4.1).

The fixture (:mod:`bundle.fixture`) writes them into its memory and inventory blocks; the verifier
checks the recorded texts against these.
"""

from __future__ import annotations

MEMORY_SCOPE = (
    "Fresh task preparation including CUDA graph capture plus one complete reset/train/predict "
    "invocation; tensor allocator only, excluding driver/context. Recorded before output "
    "diagnostics and profiling warmup."
)
"""``scope`` of a fixture record's peak-memory block."""

INVENTORY_SCOPE = (
    "Actual CUDA storages reachable through named task tensors, model parameters/gradients, initial "
    "copies and momentum. Counts aliases once. Unnamed graph-pool and library allocations are not "
    "assigned to named buffers."
)
"""``scope`` of a fixture record's buffer inventory."""
