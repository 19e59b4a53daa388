"""`rev88 fixture`: the fresh-process measuring entry (same as ``python -m bundle.fixture``).

Run it only with ``CUBLAS_WORKSPACE_CONFIG`` already in the environment; phases start it
through an engine, one fresh process per workspace configuration (spec 4.3).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bundle.commands import one_line_errors, require_module


def register(app: typer.Typer) -> None:
    """Register ``rev88 fixture`` on *app*."""

    @app.command("fixture")
    @one_line_errors
    def fixture(
        input: Annotated[Path, typer.Option("--input", help="input npz: exactly train_images, train_labels, test_images")],
        config: Annotated[Path, typer.Option("--config", help="config JSON (epochs must be 2)")],
        output: Annotated[Path, typer.Option("--output", help="record path (.json.gz or .json)")],
        mode: Annotated[str, typer.Option("--mode", help="measure | profile")],
        scope: Annotated[str, typer.Option("--scope", help="task | training")] = "task",
        repeats: Annotated[int, typer.Option("--repeats", help="run()s inside a task-scope profile range")] = 16,
        energy: Annotated[str, typer.Option("--energy", help="none | original | trial")] = "none",
        energy_config: Annotated[Path | None, typer.Option("--energy-config", help="energy settings JSON")] = None,
        device: Annotated[str, typer.Option("--device", help="cuda (protocol) | cpu (diagnostic)")] = "cuda",
    ) -> None:
        """Prepare one task in this fresh process, measure it and write its record (spec 4.1)."""
        require_module("torch", "rev88 fixture", ".venv/bin/pip install torch -e '.[gpu]' on a GPU host (or use the GPU image: make reproduce)")
        from bundle.fixture import run_fixture  # noqa: PLC0415  (imports torch after the env check)

        record = run_fixture(input, config, output, mode=mode, scope=scope, repeats=repeats, energy=energy,
                             energy_config_path=energy_config, device=device)
        memory = record.get("memory") or {}
        typer.echo(f"wrote {output} (peak allocated {memory.get('prepare_and_invoke_peak_allocated_bytes')} B, "
                   f"predictions {record['metadata']['predictions_sha256']})")
