"""`rev88 reproduce`: every phase through one engine (native or one container per job), then verify."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bundle.commands import one_line_errors


def register(app: typer.Typer) -> None:
    """Register ``rev88 reproduce`` on *app*."""

    @app.command("reproduce")
    @one_line_errors
    def reproduce(
        out: Annotated[Path, typer.Option("--out", help="run archive folder (evidence/<run-id>)")],
        engine: Annotated[str, typer.Option("--engine", help="native (this host) | docker (one container per job)")]
        = "native",
        phases: Annotated[str | None, typer.Option(
            "--phases", help="comma-separated subset of validate,compare,qualify,energy,profile (order is fixed)")]
        = None,
        image: Annotated[str | None, typer.Option(
            "--image", help="GPU image for --engine docker (default $REV88_GPU_IMAGE or rev88/gpu:local)")] = None,
        device: Annotated[str, typer.Option("--device", help="cuda (protocol) | cpu (diagnostic)")] = "cuda",
        force: Annotated[bool, typer.Option("--force", help="rerun phases that are already complete")] = False,
    ) -> None:
        """Run the selected phases in protocol order into OUT, then run the offline verifier on it."""
        from rich.console import Console  # noqa: PLC0415
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn  # noqa: PLC0415
        from rich.table import Table  # noqa: PLC0415

        from bundle.errors import BundleError  # noqa: PLC0415
        from bundle.phases.reproduce import make_engine, parse_phases, run_reproduce  # noqa: PLC0415

        if device not in ("cuda", "cpu"):
            raise BundleError(f"--device {device!r} is not supported: use cuda or cpu")
        if image is not None and engine != "docker":
            raise BundleError("--image is only used with --engine docker: drop it or add --engine docker")
        selected = parse_phases(phases)
        run_dir = out.resolve()
        job_engine = make_engine(engine, image=image, run_dir=run_dir)
        console = Console(stderr=True)
        where = f"docker image {job_engine.image_reference}" if job_engine.kind == "docker" else "this host"
        console.print(f"reproduce: {', '.join(selected)} -> {run_dir} ({engine} engine, {where})")
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                      TextColumn("[dim]{task.fields[line]}"), console=console, transient=True) as progress:
            task = progress.add_task("probe", line="")

            def on_phase(phase: str, state: str) -> None:
                if state == "start":
                    progress.update(task, description=phase, line="")
                else:
                    console.print(f"  {phase}: {'already complete, skipped' if state == 'skip' else 'done'}")

            def on_line(line: str) -> None:
                progress.update(task, line=line.strip()[:80])

            result = run_reproduce(run_dir, engine=job_engine, phases=selected, device=device, force=force,
                                   on_phase=on_phase, on_line=on_line)
        table = Table(title=f"rev88 reproduce: {run_dir}")
        for column in ("phase", "status", "duration_s"):
            table.add_column(column)
        for row in result["phases"]:
            table.add_row(row["phase"], row["status"], f"{row['duration_s']:.1f}")
        Console().print(table)
        print(result["verdict"] or "(the verifier printed nothing)")
        if result["verify_exit_code"] != 0:
            raise typer.Exit(code=result["verify_exit_code"])
