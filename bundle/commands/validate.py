"""`rev88 validate`: runtime validation (replay checks, API vs CLI, the fixture's refusals)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bundle.commands import checked_engine, one_line_errors, require_module


def replay_label(numerical: dict) -> str:
    """What the record's replay check ran as, from its ``device`` and ``captured_graphs``:
    ``"CUDA graph replay"`` on the protocol path, ``"CPU replay (no CUDA graphs)"`` for a CPU diagnostic
    (the same comparisons against independent eager autograd, without graph capture)."""
    if numerical.get("captured_graphs"):
        return "CUDA graph replay"
    device = str(numerical.get("device") or "cpu")
    return f"{'CPU' if device == 'cpu' else device} replay (no CUDA graphs)"


def register(app: typer.Typer) -> None:
    """Register ``rev88 validate`` on *app*."""

    @app.command("validate")
    @one_line_errors
    def validate(
        out: Annotated[Path, typer.Option("--out", help="run archive folder")],
        engine: Annotated[str, typer.Option("--engine", help="native | docker")] = "native",
        device: Annotated[str, typer.Option("--device", help="cuda (protocol) | cpu (diagnostic)")] = "cuda",
        force: Annotated[bool, typer.Option("--force", help="replace a completed validate phase")] = False,
    ) -> None:
        """Check CUDA replay numerics, API = CLI outputs, and that bad inputs / late CUDA init are refused."""
        require_module("torch", "rev88 validate", ".venv/bin/pip install torch -e '.[gpu]' on a GPU host (or use the GPU image: make reproduce)")
        from rich.console import Console  # noqa: PLC0415

        from bundle.commands.console import print_table  # noqa: PLC0415
        from bundle.phases.validate import run_validate  # noqa: PLC0415
        from protocol.errors import BundleError  # noqa: PLC0415

        job_engine = checked_engine("validate", engine=engine, device=device, out=out,
                                    command=f"rev88 validate --device {device}")
        console = Console(stderr=True)
        record = run_validate(out, engine=job_engine, force=force, device=device,
                              on_job=lambda name: console.print(f"[bold]running[/] {name}"),
                              on_line=lambda line: console.print(f"  {line}", style="dim", markup=False,
                                                                 highlight=False))
        numerical = record["numerical_validation"] or {}
        smoke = record["api_cli_smoke"]
        yes = {True: "yes", False: "NO"}
        rows = [
            (f"{replay_label(numerical)} checks",
             f"{numerical.get('checks', '-')}, max abs err {numerical.get('maximum_abs_error', '-')}"),
            (f"{replay_label(numerical)} passed", yes.get(numerical.get("passed"), "not run")),
            ("CPU reconstruction self-test", yes[bool(record["cpu_reconstruction_selftest"]["passed"])]),
            ("API = CLI outputs", yes[bool(smoke["predictions_equal"] and smoke["scores_equal"]
                                           and smoke["final_parameters_equal"] and smoke["final_velocity_equal"])]),
            ("repeated replay byte-equal", yes[bool(smoke["repeated_api_replay_byte_equal"])]),
            ("npz with test_labels refused", yes[bool(smoke["query_label_archive_rejected"])]),
            ("late CUDA init refused", yes[bool(smoke["late_cuda_initialization_rejected"])]),
        ]
        print_table(Console(), f"runtime validation ({out}/validate, {record['workspace']}, "
                               f"{record['gpu'] or 'CPU'})", ("check", "result"), rows)
        if not record["passed"]:
            raise BundleError(f"runtime validation failed ({out}/validate/validation.json.gz): read the record")
        typer.echo("runtime validation passed")
