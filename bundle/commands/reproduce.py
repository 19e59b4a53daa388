"""`rev88 reproduce`: every phase through one engine (native or one container per job), then verify."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bundle.commands import one_line_errors, report_stop


def register(app: typer.Typer) -> None:
    """Register ``rev88 reproduce`` on *app*."""

    @app.command("reproduce")
    @one_line_errors
    def reproduce(
        out: Annotated[Path, typer.Option("--out", help="run archive folder (evidence/<run-id>)")],
        engine: Annotated[str, typer.Option("--engine", help="native (this host) | docker (one container per job) | slurm (one batch job per job)")]
        = "native",
        phases: Annotated[str | None, typer.Option(
            "--phases", help="comma-separated subset of validate,compare,qualify,energy,profile (order is fixed)")]
        = None,
        image: Annotated[str | None, typer.Option(
            "--image", help="GPU image for --engine docker (default $REV88_GPU_IMAGE or rev88/gpu:local)")] = None,
        device: Annotated[str, typer.Option("--device", help="cuda (protocol) | cpu (diagnostic)")] = "cuda",
        force: Annotated[bool, typer.Option("--force", help="rerun phases that are already complete")] = False,
        slurm_config: Annotated[Path | None, typer.Option(
            "--slurm-config", help="TOML file of slurm engine options (docs/gpu-hosts.md, Clusters)")] = None,
        partition: Annotated[str | None, typer.Option("--partition", help="Slurm partition (--engine slurm)")] = None,
        account: Annotated[str | None, typer.Option("--account", help="Slurm account (--engine slurm)")] = None,
        slurm_python: Annotated[str | None, typer.Option(
            "--slurm-python", help="interpreter command on the nodes (--engine slurm; default: this one)")] = None,
        gpus: Annotated[str | None, typer.Option(
            "--gpus", help="boards to use: all | N (the first N) | GPU-uuid,… or NVML indices; jobs are placed "
                           "one board each (default: no placement, the engine's default device)")] = None,
    ) -> None:
        """Run the selected phases in protocol order into OUT, then run the offline verifier on it."""
        from rich.console import Console  # noqa: PLC0415
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn  # noqa: PLC0415

        from bundle import preflight  # noqa: PLC0415
        from bundle.commands.console import print_table  # noqa: PLC0415
        from bundle.jobs import Terminated  # noqa: PLC0415
        from bundle.phases.reproduce import make_engine, parse_phases, run_reproduce  # noqa: PLC0415
        from protocol.errors import BundleError  # noqa: PLC0415

        if device not in ("cuda", "cpu"):
            raise BundleError(f"--device {device!r} is not supported: use cuda or cpu")
        if image is not None and engine != "docker":
            raise BundleError("--image is only used with --engine docker: drop it or add --engine docker")
        selected = parse_phases(phases)
        preflight.needs_for(selected, device)  # GPU-only phases on the CPU: refused before anything else
        slurm_given = any(v is not None for v in (slurm_config, partition, account, slurm_python))
        if slurm_given and engine != "slurm":
            raise BundleError("--slurm-config/--partition/--account/--slurm-python are only used with "
                              "--engine slurm: drop them or add --engine slurm")
        slurm_options = None
        if engine == "slurm":
            from bundle.slurm_engine import load_options  # noqa: PLC0415

            slurm_options = load_options(slurm_config, partition=partition, account=account, python=slurm_python)
        run_dir = out.resolve()
        job_engine = make_engine(engine, image=image, run_dir=run_dir, slurm_options=slurm_options)
        console = Console(stderr=True)
        where = (f"docker image {job_engine.image_reference}" if job_engine.kind == "docker"
                 else "Slurm batch jobs" if job_engine.kind == "slurm" else "this host")
        header = f"reproduce: {', '.join(selected)} -> {run_dir} ({engine} engine, {where})"
        printed = []  # the header appears once the probe passed, so a refusal stays one line
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                      TextColumn("[dim]{task.fields[line]}"), console=console, transient=True,
                      disable=not console.is_terminal) as progress:
            task = progress.add_task("probe", line="")

            def on_phase(phase: str, state: str) -> None:
                if not printed:
                    console.print(header, soft_wrap=True, markup=False, highlight=False)
                    printed.append(True)
                if state == "start":
                    progress.update(task, description=phase, line="")
                else:
                    console.print(f"  {phase}: {'already complete, skipped' if state == 'skip' else 'done'}")

            def on_line(line: str) -> None:
                progress.update(task, line=line.strip()[:80])

            try:
                result = run_reproduce(run_dir, engine=job_engine, phases=selected, device=device, force=force,
                                       on_phase=on_phase, on_line=on_line, gpus=gpus)
            except KeyboardInterrupt as exc:
                progress.stop()
                terminated = isinstance(exc, Terminated)
                jobs = {"docker": "its running containers were killed and removed",
                        "slurm": "its queued and running Slurm jobs were cancelled"}.get(
                            job_engine.kind, "its running jobs were killed")
                recorded = (f"the invocation is recorded in {run_dir / 'environment.json.gz'}"
                            if getattr(exc, "invocation_recorded", False) else "nothing was recorded")
                raise report_stop(f"rev88: error: reproduce {'stopped by SIGTERM' if terminated else 'interrupted (Ctrl-C)'}: "
                                  f"{jobs}; {recorded}; run the same command to resume",
                                  143 if terminated else 130) from None
        if result.get("nothing_to_do"):
            names = [row["phase"] for row in result["phases"]]
            print(f"nothing to do: {', '.join(names)} already complete in {run_dir} (nothing was run or written; "
                  f"--force reruns {'it' if len(names) == 1 else 'them'})")
            return
        rows = [(row["phase"], row["status"], f"{row['duration_s']:,.1f}") for row in result["phases"]]
        rows.append(("total (phases)", f"{len([r for r in result['phases'] if r['status'] == 'ran'])} phase(s) ran",
                     f"{result['total_s']:,.1f}"))
        print_table(Console(), f"rev88 reproduce: {run_dir}", ("phase", "status", "duration s"), rows,
                    right_align_from=2)
        if result["boards"]:
            print("boards: " + ", ".join(f"{b['uuid']} ({b['pci_bus_id'] or 'bus id not discovered'})"
                                         for b in result["boards"]))
        print(result["verdict"] or "(the verifier printed nothing)")
        if result["verify_exit_code"] != 0:
            raise typer.Exit(code=result["verify_exit_code"])
