"""`rev88 profile`: Nsight Compute counters of the fixture (spec 6, 9.5).

Example::

    rev88 profile --out evidence/h200-run --repeats 3 --ncu /opt/nvidia/nsight-compute/2025.3.1/ncu
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bundle.commands import checked_engine, one_line_errors
from bundle.phases.profile import DEFAULT_OVERLAP, LOCK_SCOPE_DEFAULT, resolve_overlap
from protocol.errors import BundleError


def register(app: typer.Typer) -> None:
    """Register ``rev88 profile`` on *app*."""

    @app.command("profile")
    @one_line_errors
    def profile(
        out: Annotated[Path, typer.Option("--out", help="run folder; the phase writes RUN_DIR/profile/")],
        repeats: Annotated[int, typer.Option("--repeats", help="repeats of each of the 4 profiles (>= 3)")] = 3,
        ncu: Annotated[str | None, typer.Option(
            "--ncu", help="ncu executable (else $REV88_NCU, PATH, /opt/nvidia/nsight-compute/*/ncu, "
                          "/usr/local/cuda/bin/ncu)")] = None,
        raw_dir: Annotated[Path | None, typer.Option(
            "--scratch-dir", help="keep ncu's uncompressed outputs here (default: RUN_DIR/.work/profile, removed)")] = None,
        force: Annotated[bool, typer.Option("--force", help="replace a completed profile phase")] = False,
        keep_reports: Annotated[str, typer.Option(
            "--keep-reports", help="first: store the .ncu-rep of repeat 0 of each profile (all are "
                                   "cross-checked and hashed); all: store every report")] = "first",
        learner: Annotated[str, typer.Option(
            "--learner", help="rev88 (the frozen learner, default) or rev88-fused (the Triton variant)")] = "rev88",
        overlap: Annotated[int | None, typer.Option(
            "--overlap", help="ncu runs started at once (default: "
                              + ", ".join(f"{n} for --lock-scope {k}" for k, n in DEFAULT_OVERLAP.items())
                              + "); ranges never overlap")] = None,
        lock_scope: Annotated[str, typer.Option(
            "--lock-scope", help="process: each fixture process holds the board alone from before CUDA "
                                 "initialisation to exit (the protocol's measurement); range: preparations "
                                 "share it, each range alone (faster; measured to read 0.1-1.4 % more L2 "
                                 "sectors)")] = LOCK_SCOPE_DEFAULT,
    ) -> None:
        """Profile {:4096:8, :16:8} x {task, training} under ncu, R repeats each, interleaved."""
        from rich.console import Console  # noqa: PLC0415
        from rich.progress import Progress  # noqa: PLC0415

        from bundle.commands.console import print_table  # noqa: PLC0415
        from bundle.fixture import LEARNERS  # noqa: PLC0415  (torch-free at import)
        from bundle.phases.profile import plan_runs, run_profile  # noqa: PLC0415

        total = len(plan_runs(repeats))  # validates --repeats before anything starts
        if learner not in LEARNERS:
            raise BundleError(f"unknown --learner {learner!r}: choose one of {', '.join(LEARNERS)}")
        resolve_overlap(lock_scope, overlap)  # bad --lock-scope / --overlap fail before anything starts
        job_engine = checked_engine("profile", engine="native", device="cuda", out=out, command="rev88 profile",
                                    ncu=ncu)
        console = Console(stderr=True)
        with Progress(console=console, transient=True) as progress:
            bar = progress.add_task("ncu", total=total)

            def on_run(run, index: int, count: int) -> None:
                progress.update(bar, completed=index, description=f"ncu {run.name}")

            summary = run_profile(out, engine=job_engine, repeats=repeats, ncu=ncu, raw_dir=raw_dir,
                                  force=force, on_run=on_run, keep_reports=keep_reports, learner=learner,
                                  overlap=overlap, lock_scope=lock_scope)
            progress.update(bar, completed=total)
        fields = ("dram_read_bytes_per_sequence", "dram_write_bytes_per_sequence",
                  "l2_read_request_bytes_per_sequence", "l2_write_request_bytes_per_sequence",
                  "l2_sector_hit_rate_percent")
        rows = [(key, *(f"{entry['mean'][f]:,.2f} ± {entry['sample_sd'][f]:,.2f}" for f in fields))
                for key, entry in summary["profiles"].items()]
        print_table(Console(), f"profile (ncu {summary['ncu_version']}, mean ± sample SD over {repeats} repeats)",
                    ("profile", "DRAM read B/seq", "DRAM write B/seq", "L2 read B/seq", "L2 write B/seq", "hit %"),
                    rows)
        if not summary["ncu_version_is_pinned"]:
            console.print(f"note: {summary['ncu_version_note']}")
