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
        jobs: Annotated[int, typer.Option("--jobs", help="draws trained at the same time (fresh processes; "
                                          "records say which ran beside which)")] = 1,
        boards: Annotated[str | None, typer.Option(
            "--boards", help="board UUIDs to place the fresh-process draws on, comma-separated (draw i on "
                             "board i mod B); set by rev88 reproduce --gpus")] = None,
        learner: Annotated[str, typer.Option(
            "--learner", help="rev88 (the frozen learner, default) or rev88-fused (fresh processes only; "
                              "on cpu through Triton's interpreter)")] = "rev88",
    ) -> None:
        """Train each draw freshly, write its predictions and record, then score all draws."""
        from rich.console import Console  # noqa: PLC0415
        from rich.progress import BarColumn, TextColumn, TimeElapsedColumn  # noqa: PLC0415

        from bundle import preflight  # noqa: PLC0415
        from bundle.archive import WORK_DIR, RunArchive  # noqa: PLC0415
        from bundle.commands.console import print_table, terminal_progress  # noqa: PLC0415
        from bundle.phases.qualify import InProcessRunner, parse_draws, run_qualification  # noqa: PLC0415
        from protocol.errors import BundleError  # noqa: PLC0415

        preflight.refuse_reference_out(out, command="rev88 qualify")
        selected = parse_draws(draws)
        require_module("torch", "rev88 qualify", "run `make qualify` (it installs torch) or .venv/bin/pip install torch==2.13.0 -e '.[learner]'")
        preflight.require(["qualify"], device=device, command=f"rev88 qualify --device {device}")
        preflight.require_frozen_reference(preflight.frozen_members(["qualify"], qualify_draws=selected))
        if RunArchive(out).is_complete("qualify") and not force:
            raise BundleError(f"phase 'qualify' is already complete ({out / 'qualify'}): pass --force to replace it "
                              "(make qualify PHASE_ARGS=--force) or use another --out folder")
        from bundle.fixture import LEARNERS  # noqa: PLC0415  (no torch at import)

        if learner not in LEARNERS:
            raise BundleError(f"unknown --learner {learner!r}: choose one of {', '.join(LEARNERS)}")
        if learner != "rev88" and fresh_process is False:
            raise BundleError(f"--learner {learner} runs in fresh fixture processes: drop --in-process")
        runner = InProcessRunner(device)
        fresh = fresh_process if fresh_process is not None else (device == "cuda" or learner != "rev88")
        if boards is not None and (not fresh or not boards.strip()):
            raise BundleError("--boards places fresh-process draws on named boards: " + (
                "give at least one board UUID (GPU-…)" if fresh else
                "drop it, or pass --fresh-process (the in-process run uses this process's device)"))
        if fresh:
            from bundle.boards import parse_board_list  # noqa: PLC0415
            from bundle.jobs import SubprocessEngine  # noqa: PLC0415
            from bundle.phases.fixture_runner import FreshProcessRunner  # noqa: PLC0415

            runner = FreshProcessRunner(SubprocessEngine(), Path(out).resolve() / WORK_DIR / "qualify", device=device,
                                        boards=parse_board_list(boards), learner=learner)
        console = Console()
        with terminal_progress(console, TextColumn("qualify {task.description}"), BarColumn(),
                               TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn()) as progress:
            bar = progress.add_task("draws", total=len(selected))

            def on_draw(index: int, status: str) -> None:
                progress.update(bar, description=f"draw {index:02d} ({status})")
                if status != "start":
                    progress.advance(bar)

            result = run_qualification(out, device=device, raw_dir=raw_dir, draws=selected, runner=runner,
                                       force=force, on_draw=on_draw, jobs=jobs)
        accuracy = result["accuracy"]
        frozen = {row["draw"]: row for row in accuracy["frozen_comparison"]["rows"]}
        rows = []
        for row in accuracy["rows"]:
            equal = result["records"][row["draw"]]["frozen_comparison"]["predictions_sha256_equal"]
            rows.append((str(row["draw"]), f"{row['correct']:,}", f"{frozen[row['draw']]['frozen_correct']:,}",
                         "yes" if equal else "NO"))
        print_table(console, f"qualify ({device})", ("draw", "correct", "frozen correct", "predictions hash equal"),
                    rows)
        for line in verdict_lines(accuracy, all_equal=result["all_predictions_equal_frozen"]):
            console.print(line, markup=False, highlight=False)
        if not result["all_predictions_equal_frozen"]:
            typer.echo("rev88: error: some draws' predictions differ from the frozen original "
                       f"({out}/qualify/draw-XX.json.gz frozen_comparison): investigate before using this run", err=True)
            raise typer.Exit(code=1)


def verdict_lines(accuracy: dict, *, all_equal: bool) -> list[str]:
    """The closing lines of ``rev88 qualify``: the count, and the 12 % verdict only for all 11 draws.

    Args:
        accuracy: the ``accuracy.json.gz`` record (``correct``, ``total``, ``accuracy_percent``,
            ``required_correct``, ``meets_12_percent_error_target``, ``draws``, ``complete_protocol``).
        all_equal: whether every draw's predictions equal the frozen ones.

    Returns:
        Lines to print. A partial run (``complete_protocol`` false) gets its count and no verdict,
        because the target is defined over the whole protocol (11 draws, 96,800 of 110,000).
    """
    count = (f"{accuracy['correct']:,} / {accuracy['total']:,} correct ({accuracy['accuracy_percent']:.2f} %)")
    frozen = f"predictions equal to the frozen ones: {'all' if all_equal else 'NOT all'}"
    if not accuracy.get("complete_protocol", len(accuracy.get("draws", [])) == 11):
        draws = accuracy.get("draws", [])
        return [f"{count} on {len(draws)} of 11 draws ({', '.join(str(d) for d in draws)}); {frozen}",
                "partial run: the 12 % error target is defined over all 11 draws (96,800 of 110,000), so no "
                "verdict is given; run --draws 0-10 for one"]
    verdict = "meets" if accuracy["meets_12_percent_error_target"] else "misses"
    return [f"{count}: {verdict} the 12 % error target (needs {accuracy['required_correct']:,}); {frozen}"]
