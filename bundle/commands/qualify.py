"""`rev88 qualify`: train and score the 11 qualification draws into a run archive."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bundle.commands import one_line_errors, require_module


def register(app: typer.Typer) -> None:
    """Register ``rev88 qualify`` on *app*."""

    @app.command("qualify")
    @one_line_errors
    def qualify(
        out: Annotated[Path, typer.Option("--out", help="run archive folder (qualify/ is written inside)")],
        device: Annotated[str, typer.Option("--device", help="cpu (eager) or cuda (captured graphs)")] = "cuda",
        raw_dir: Annotated[Path | None, typer.Option("--raw-dir", help="raw MNIST folder")] = None,
        draws: Annotated[str, typer.Option("--draws", help="draws to run, e.g. 0-10, 0,3 or 4")] = "0-10",
        force: Annotated[bool, typer.Option("--force", help="replace a completed qualify phase")] = False,
        fresh_process: Annotated[bool | None, typer.Option(
            "--fresh-process/--in-process",
            help="run each draw in its own fixture process at :16:8 (default for --device cuda)")] = None,
    ) -> None:
        """Train each draw freshly, write its predictions and record, then score all draws."""
        from rich.console import Console  # noqa: PLC0415
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: PLC0415
        from rich.table import Table  # noqa: PLC0415

        from bundle.archive import WORK_DIR, RunArchive  # noqa: PLC0415
        from bundle.errors import BundleError  # noqa: PLC0415
        from bundle.phases.qualify import InProcessRunner, parse_draws, run_qualification  # noqa: PLC0415

        selected = parse_draws(draws)
        require_module("torch", "rev88 qualify", "run `make qualify` (it installs torch) or pip install torch==2.13.0 '.[learner]'")
        if RunArchive(out).is_complete("qualify") and not force:
            raise BundleError(f"phase 'qualify' is already complete ({out / 'qualify'}): pass --force to replace it "
                              "(make qualify PHASE_ARGS=--force) or use another --out folder")
        runner = InProcessRunner(device)
        if fresh_process if fresh_process is not None else device == "cuda":
            from bundle.jobs import SubprocessEngine  # noqa: PLC0415
            from bundle.phases.fixture_runner import FreshProcessRunner  # noqa: PLC0415

            runner = FreshProcessRunner(SubprocessEngine(), Path(out).resolve() / WORK_DIR / "qualify", device=device)
        console = Console()
        with Progress(TextColumn("qualify {task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      TimeElapsedColumn(), console=console) as progress:
            bar = progress.add_task("draws", total=len(selected))

            def on_draw(index: int, status: str) -> None:
                progress.update(bar, description=f"draw {index:02d} ({status})")
                if status != "start":
                    progress.advance(bar)

            result = run_qualification(out, device=device, raw_dir=raw_dir, draws=selected, runner=runner,
                                       force=force, on_draw=on_draw)
        accuracy = result["accuracy"]
        table = Table(title=f"qualify ({device})")
        for column in ("draw", "correct", "frozen correct", "predictions hash equal"):
            table.add_column(column, justify="right")
        frozen = {row["draw"]: row for row in accuracy["frozen_comparison"]["rows"]}
        for row in accuracy["rows"]:
            equal = result["records"][row["draw"]]["frozen_comparison"]["predictions_sha256_equal"]
            table.add_row(str(row["draw"]), f"{row['correct']:,}", f"{frozen[row['draw']]['frozen_correct']:,}",
                          "yes" if equal else "NO")
        console.print(table)
        verdict = "meets" if accuracy["meets_12_percent_error_target"] else "misses"
        console.print(f"{accuracy['correct']:,} / {accuracy['total']:,} correct ({accuracy['accuracy_percent']:.2f} %): "
                      f"{verdict} the 12 % error target (needs {accuracy['required_correct']:,}); "
                      f"predictions equal to the frozen ones: {'all' if result['all_predictions_equal_frozen'] else 'NOT all'}")
        if not result["all_predictions_equal_frozen"]:
            typer.echo("rev88: error: some draws' predictions differ from the frozen original "
                       f"({out}/qualify/draw-XX.json.gz frozen_comparison): investigate before using this run", err=True)
            raise typer.Exit(code=1)
