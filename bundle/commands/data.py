"""`rev88` commands for the data step (placeholder until implemented)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Register this module's commands on *app*."""
