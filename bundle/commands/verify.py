"""`rev88 verify` and `rev88 report`: the offline verifier and the report (no torch, no GPU)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bundle.commands import one_line_errors

DEFAULT_EVIDENCE = Path("evidence")


def register(app: typer.Typer) -> None:
    """Register ``verify`` and ``report`` on *app*."""

    @app.command("verify")
    @one_line_errors
    def verify_cmd(
        archives: Annotated[list[Path] | None, typer.Argument(
            help="archive folders; default: every archive under evidence/ (with manifest.json) "
                 "plus evidence/rev88-original")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="print the verdicts as JSON")] = False,
        show_all: Annotated[bool, typer.Option("--all", help="one row per verdict (no folding)")] = False,
        timings: Annotated[bool, typer.Option("--timings", help="print wall time and hashing share")] = False,
    ) -> None:
        """Verify evidence archives offline: integrity first, then every figure recomputed from raw fields.

        On a terminal the verdicts are a table; in a pipe one summary line per archive plus one line per FAIL.
        """
        from rich.console import Console

        from verify.registry import discover_archives, verify_archive
        from verify.render import render_compact, render_json, render_table

        paths = list(archives) if archives else discover_archives(DEFAULT_EVIDENCE)
        reports = [verify_archive(p) for p in paths]
        console = Console()
        if as_json:
            typer.echo(render_json(reports))
        elif console.is_terminal:
            render_table(reports, console, show_all=show_all, timings=timings)
        else:  # a pipe, make or CI: compact unwrapped lines, not an 80-column table
            render_compact(reports, typer.echo, show_all=show_all, timings=timings)
        if not all(r.ok for r in reports):
            raise typer.Exit(code=1)

    @app.command("report")
    @one_line_errors
    def report_cmd(
        archive: Annotated[Path, typer.Argument(help="a verified run archive (evidence/<run-id>)")],
        out: Annotated[Path, typer.Option("--out", help="folder for REPORT.md and the PNG figures")] = Path("report"),
        original: Annotated[Path, typer.Option(help="the original archive for side-by-side figures")] =
            DEFAULT_EVIDENCE / "rev88-original",
    ) -> None:
        """Write REPORT.md and PNG figures from verified figures only.

        An archive that fails integrity gets no report. One whose other checks fail gets a report
        that lists the failures and shows the affected figures as "not verified", and the command
        exits 1.
        """
        from verify.report import build_report

        path = build_report(archive, out, original=original)
        typer.echo(f"wrote {path}")
        if "## Failed checks" in path.read_text(encoding="utf-8"):
            typer.echo(f"rev88: error: {archive} fails verification: the report lists the failed checks and marks "
                       "their figures 'not verified'; run `rev88 verify` on it", err=True)
            raise typer.Exit(code=1)
