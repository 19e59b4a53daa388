"""`rev88 compare`: the cuBLAS workspace comparison (three fresh fixture processes on one draw)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bundle.commands import checked_engine, one_line_errors, require_module


def make_engine(name: str):  # noqa: ANN201  (an Engine)
    """The engine named on the command line: ``native`` (subprocess) or ``docker`` (one container per job).

    Raises:
        BundleError: unknown name or the docker engine is not available.
    """
    from protocol.errors import BundleError  # noqa: PLC0415

    if name == "native":
        from bundle.jobs import SubprocessEngine  # noqa: PLC0415

        return SubprocessEngine()
    if name == "docker":
        try:
            from bundle.docker_engine import DockerEngine  # noqa: PLC0415
        except ImportError as exc:
            raise BundleError(f"docker engine unavailable ({exc}): use --engine native") from None
        return DockerEngine()
    raise BundleError(f"unknown --engine {name!r}: use native or docker")


def register(app: typer.Typer) -> None:
    """Register ``rev88 compare`` on *app*."""

    @app.command("compare")
    @one_line_errors
    def compare(
        out: Annotated[Path, typer.Option("--out", help="run archive folder")],
        engine: Annotated[str, typer.Option("--engine", help="native | docker")] = "native",
        draw: Annotated[int, typer.Option("--draw", help="qualification draw (0-10)")] = 0,
        raw_dir: Annotated[Path | None, typer.Option("--raw-dir", help="raw MNIST folder")] = None,
        device: Annotated[str, typer.Option("--device", help="cuda (protocol) | cpu (diagnostic)")] = "cuda",
        force: Annotated[bool, typer.Option("--force", help="replace a completed compare phase")] = False,
    ) -> None:
        """Run the fixture at :4096:8, :16:8 and :0:0 in fresh processes and compare memory and outputs."""
        require_module("torch", "rev88 compare", ".venv/bin/pip install torch -e '.[gpu]' on a GPU host (or use the GPU image: make reproduce)")
        from rich.console import Console  # noqa: PLC0415

        from bundle.commands.console import print_table  # noqa: PLC0415
        from bundle.phases.compare import run_compare  # noqa: PLC0415

        job_engine = checked_engine("compare", engine=engine, device=device, out=out, command="rev88 compare",
                                    draw=draw)
        console = Console(stderr=True)
        result = run_compare(out, engine=job_engine, raw_dir=raw_dir, draw_index=draw, force=force,
                             device=device, on_job=lambda name: console.print(f"[bold]running[/] {name}"),
                             on_line=lambda line: console.print(f"  {line}", style="dim", markup=False,
                                                                highlight=False))
        rows = []
        for cfg in result["configs"]:
            mem = cfg["memory"] or {}
            red = result["reductions_vs_baseline"].get(cfg["workspace"])
            saved = (f"{red['peak_allocated_bytes_saved']:,} ({red['peak_allocated_reduction_percent']:.2f} %)"
                     if red else "-")
            ms = cfg["first_invocation_cuda_ms"]
            num = {k: (f"{v:,}" if isinstance(v, int) else f"{v:,.4f}") for k, v in mem.items()}
            rows.append((f"{cfg['workspace']} {cfg['role']}", num.get("peak_allocated_bytes", "-"),
                         num.get("peak_allocated_mib", "-"), num.get("live_allocated_bytes", "-"),
                         num.get("peak_reserved_bytes", "-"), num.get("unnamed_live_allocated_bytes", "-"),
                         saved, "-" if ms is None else f"{ms:,.2f}",
                         "-" if cfg["memory_audit"] is None else ("ok" if cfg["memory_audit"]["passed"] else "FAIL")))
        print_table(Console(), f"cuBLAS workspace comparison, draw {draw} ({out}/compare)",
                    ("workspace", "peak alloc B", "MiB", "live B", "peak reserved B", "unnamed B",
                     "saved vs baseline", "first run ms", "audit"), rows)
        frozen = result["predictions_bit_equal_to_frozen_reference"]
        yes = {True: "yes", False: "NO", None: "not applicable"}
        differing = result["state_fields_differing_from_baseline"]
        typer.echo(f"predictions bit-equal across configs: {yes[result['predictions_bit_equal_across_configs']]}; "
                   f"to the frozen original: {yes[frozen]}; state fields differing from the baseline: "
                   + "; ".join(f"{ws}: {', '.join(f) or 'none'}" for ws, f in differing.items()))
