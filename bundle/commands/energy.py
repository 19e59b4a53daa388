"""`rev88 energy`: the original 3-trial protocol, the interleaved workspace protocol or the interleaved
learner protocol (NVML)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bundle.commands import checked_engine, one_line_errors, require_module
from protocol.errors import BundleError


def register(app: typer.Typer) -> None:
    """Register ``rev88 energy`` on *app*."""

    @app.command("energy")
    @one_line_errors
    def energy(
        out: Annotated[Path, typer.Option("--out", help="run archive folder")],
        protocol: Annotated[str, typer.Option("--protocol", help="original | interleaved | both | learners")] = "interleaved",
        engine: Annotated[str, typer.Option("--engine", help="native | docker")] = "native",
        draw: Annotated[int, typer.Option("--draw", help="qualification draw (0-10)")] = 0,
        raw_dir: Annotated[Path | None, typer.Option("--raw-dir", help="raw MNIST folder")] = None,
        rounds: Annotated[int, typer.Option("--rounds", help="interleaved/learners rounds K (3 trials each)")] = 5,
        active_seconds: Annotated[float, typer.Option("--active-seconds", help="active window, s")] = 10.0,
        idle_seconds: Annotated[float, typer.Option("--idle-seconds", help="each idle window, s")] = 3.0,
        settle_seconds: Annotated[float, typer.Option("--settle-seconds", help="settle before idle, s")] = 2.0,
        record_nvml: Annotated[bool, typer.Option("--record-nvml", help="archive every NVML reading")] = False,
        force: Annotated[bool, typer.Option("--force", help="replace a completed energy protocol")] = False,
    ) -> None:
        """Measure idle-adjusted energy per task with NVML in fresh fixture processes."""
        from rich.console import Console  # noqa: PLC0415

        from bundle.commands.console import print_table  # noqa: PLC0415
        from bundle.phases.energy import PROTOCOLS, run_energy  # noqa: PLC0415  (torch-free)

        if protocol not in PROTOCOLS:
            raise BundleError(f"unknown --protocol {protocol!r}: use {', '.join(PROTOCOLS)}")
        require_module("torch", "rev88 energy", ".venv/bin/pip install torch -e '.[gpu]' on a GPU host (or use the GPU image: make reproduce)")
        job_engine = checked_engine("energy", engine=engine, device="cuda", out=out, command="rev88 energy")
        console = Console(stderr=True)
        result = run_energy(out, engine=job_engine, protocol=protocol, raw_dir=raw_dir, draw_index=draw,
                            rounds=rounds, active_seconds=active_seconds, idle_seconds=idle_seconds,
                            settle_seconds=settle_seconds, record_nvml=record_nvml, force=force,
                            on_job=lambda name: console.print(f"[bold]running[/] {name}"),
                            on_line=lambda line: console.print(f"  {line}", style="dim", markup=False,
                                                               highlight=False))
        rows = []
        if result["original"]:
            rows.append(("original", result["original"]["workspace"], result["original"]["summaries"], None))
        for proto in ("interleaved", "learners"):
            design = result.get(proto)
            for arm, summ in (design or {}).get("summaries", {}).items():
                rows.append((proto, arm, summ, design["ratios_vs_baseline"].get(arm)))
        cells = []
        for proto, ws, summ, ratio in rows:
            s, ms = summ["idle_adjusted_mj_per_task"], summ["cuda_ms_per_task"]
            r = ratio["idle_adjusted_mj_per_task"] if ratio else None
            rtext = "-" if r is None else (f"{r['ratio']:.4f} [{r['ci95_low']:.4f}, {r['ci95_high']:.4f}]"
                                           if r["bounded"] else f"{r['ratio']:.4f} [unbounded]")
            cells.append((f"{proto} {ws}", str(s["count"]), f"{s['mean']:,.2f}", f"{s['sample_sd']:,.2f}",
                          "-" if s["relative_sd"] is None else f"{100 * s['relative_sd']:.1f}",
                          f"[{s['ci95_low']:,.1f}, {s['ci95_high']:,.1f}]", rtext,
                          "-" if ms["mean"] is None else f"{ms['mean']:,.3f}"))
        print_table(Console(), f"idle-adjusted energy, draw {draw} ({out}/energy)",
                    ("protocol, arm", "n", "mJ/task mean", "SD", "rel SD %", "95 % CI", "ratio vs baseline",
                     "CUDA ms/task"), cells)
