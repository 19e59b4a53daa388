"""The cuBLAS workspace configurations the study compares, and their file stems.

``CUBLAS_WORKSPACE_CONFIG`` strings (``docs/protocol.md``, "Workspaces"): the library default under
which the original ran, the preferred one and a diagnostic one. Defined once for the writer's
phases and the verifier.
"""

from __future__ import annotations

WORKSPACES = ((":4096:8", "baseline"), (":16:8", "preferred"), (":0:0", "diagnostic"))
"""(``CUBLAS_WORKSPACE_CONFIG`` value, role) in the compare phase's order."""


def workspace_stem(workspace: str) -> str:
    """File stem of a workspace config: ``:16:8`` -> ``workspace-16-8``."""
    return "workspace" + workspace.replace(":", "-")
