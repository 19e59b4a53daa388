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
        as_json: Annotated[bool, typer.Option("--json", help="print every verdict as JSON")] = False,
        verbose: Annotated[bool, typer.Option(
            "--verbose", "-v", help="also list PASS counts per check and every subject of each UNAVAILABLE group")]
            = False,
        show_all: Annotated[bool, typer.Option("--all", help="one entry per verdict (no grouping)")] = False,
        timings: Annotated[bool, typer.Option("--timings", help="print wall time per stage")] = False,
        explain: Annotated[bool, typer.Option(
            "--explain", help="print the attested fields (what no file can confirm, and why) and exit")] = False,
        list_checks: Annotated[bool, typer.Option(
            "--list-checks", help="list every check id the verifier can emit (id, basis, tolerance) and exit")] = False,
        check: Annotated[str | None, typer.Option(
            "--check", metavar="ID", help="print the catalog entry of one check id (or pattern) and exit")] = None,
    ) -> None:
        # typer keeps the line breaks inside a help paragraph: each paragraph is one line.
        """Verify evidence archives offline: integrity first, then every figure recomputed from raw fields.

        Prints one summary line per archive, then every FAIL and every group of UNAVAILABLE verdicts that share a reason (with its count; a reason found in several archives is printed once, after them, with its count over all), and last one total line over all archives (with the seconds taken); --verbose adds the PASS counts, --json gives every verdict. Exit status 1 when anything FAILs.
        """
        if list_checks or check is not None:
            typer.echo(catalog_text(check, as_json=as_json))
            return
        if explain:
            if as_json:
                typer.echo(explain_json())
                return
            from verify.coverage import explain_lines

            typer.echo("\n".join(explain_lines()))
            return
        import time

        from protocol.errors import BundleError

        started = time.perf_counter()
        for path in archives or ():
            if path.is_file():
                root = next((p for p in path.absolute().parents if (p / "manifest.json").is_file()), None)
                hint = (f"pass the archive folder that holds it (rev88 verify {root})" if root is not None else
                        "pass an archive folder, the one that holds manifest.json (rev88 verify evidence/<run-id>)")
                raise BundleError(f"{path} is a file, not an archive folder: {hint}")
        from rich.console import Console
        from rich.text import Text

        from bundle.commands.console import DelayedProgress
        from verify.registry import discover_archives, stage_count, verify_archives
        from verify.render import STYLES, render_json, render_text

        paths = list(archives) if archives else discover_archives(DEFAULT_EVIDENCE)
        total = sum(stage_count(p) for p in paths if Path(p).is_dir())
        with DelayedProgress("verify", total=total) as progress:
            def on_progress(stage: str, advance: int) -> None:
                progress.update(f"verify {stage}", advance=advance)

            reports = verify_archives(paths, on_progress=on_progress)  # archives in parallel, one per core
        console = Console()
        if as_json:
            typer.echo(render_json(reports))
        elif console.is_terminal:
            def styled(line: str) -> None:
                text = Text(line)
                text.highlight_words(list(STYLES)[:3], "bold")
                for word, style in STYLES.items():
                    text.highlight_regex(rf"(?<![\w.]){word}(?![\w.])", style)
                console.print(text, soft_wrap=True)

            render_text(reports, styled, width=console.width, verbose=verbose, show_all=show_all, timings=timings,
                        seconds=time.perf_counter() - started)
        else:  # a pipe, make or CI: the same lines, plain, wrapped to the console width (80 unless COLUMNS)
            render_text(reports, typer.echo, width=console.width, verbose=verbose, show_all=show_all,
                        timings=timings, seconds=time.perf_counter() - started)
        if not all(r.ok for r in reports):
            raise typer.Exit(code=1)

    @app.command("report")
    @one_line_errors
    def report_cmd(
        archive: Annotated[Path, typer.Argument(help="a verified run archive (evidence/<run-id>)")],
        out: Annotated[Path, typer.Option("--out", help="folder for REPORT.md and the PNG figures")] = Path("report"),
        original: Annotated[Path | None, typer.Option(
            help="the original archive for the A100 reference figures (default: $REV88_ORIGINAL_DIR, else the "
                 "checkout's evidence/rev88-original, else the image's copy)")] = None,
        baseline: Annotated[Path | None, typer.Option(
            help="for a rev88-fused archive: a run archive of the frozen learner whose profile gives rev88's "
                 "traffic per task beside the variant's")] = None,
    ) -> None:
        # typer keeps the line breaks inside a help paragraph: each paragraph is one line.
        """Write REPORT.md and PNG figures from verified figures only.

        An archive that fails integrity gets no report. One whose other checks fail gets a report that lists the failures and shows the affected figures as "not verified", and the command exits 1.
        """
        from bundle.commands.console import DelayedProgress
        from protocol.errors import BundleError
        from verify.checks.run_common import ORIGINAL_ROOT
        from verify.report import write_report

        if not archive.is_dir():
            raise BundleError(f"{archive} is not a folder: pass a run archive folder (evidence/<run-id>, the one that "
                              "holds manifest.json)")
        if original is not None and not original.is_dir():
            raise BundleError(f"--original {original} is not a folder: pass evidence/rev88-original or leave it out")
        original = original if original is not None else ORIGINAL_ROOT
        refuse_out_inside(out, archive)

        with DelayedProgress("report") as progress:
            written = write_report(archive, out, original=original, on_stage=progress.update, baseline=baseline)
        for path in written:
            typer.echo(f"wrote {path}")
        if "## Failed checks" in written[0].read_text(encoding="utf-8"):
            typer.echo(f"rev88: error: {archive} fails verification: the report lists the failed checks and marks "
                       "their figures 'not verified'; run `rev88 verify` on it", err=True)
            raise typer.Exit(code=1)


def catalog_text(check_id: str | None, *, as_json: bool = False) -> str:
    """The catalog of checks (``--list-checks``) or one entry (``--check ID``), as text or JSON.

    Args:
        check_id: None for the whole list, else a concrete check id or a pattern as the catalog writes it.
        as_json: one object per concrete id (``id``, ``pattern``, ``family``, ``basis``, ``tolerance``,
            ``why``, ``compares``, ``recomputes``, ``where``), or that one entry's object.

    Raises:
        BundleError: *check_id* is not in :data:`verify.catalog.CATALOG`.
    """
    import json

    from protocol.errors import BundleError
    from verify import catalog

    def obj(cid: str, c: catalog.Check) -> dict:
        return {"id": cid, "pattern": c.id if c.values else None, "family": c.family, "basis": c.basis,
                "tolerance": c.tolerance, "why": c.why, "compares": c.compares, "recomputes": c.recomputes,
                "where": f"verify/{c.where}"}

    if check_id is None:
        if as_json:
            return json.dumps([obj(cid, c) for cid, c in sorted(catalog.all_ids().items())], indent=2)
        return "\n".join(catalog.list_lines())
    entry = catalog.lookup(check_id)
    if entry is None:
        raise BundleError(f"--check {check_id}: not a check id of the verifier; `rev88 verify --list-checks` lists "
                          "them")
    return json.dumps(obj(check_id, entry), indent=2) if as_json else "\n".join(catalog.entry_lines(entry, check_id))


def explain_json() -> str:
    """The attestation registry (``rev88 verify --explain --json``) as a JSON list.

    Returns:
        One object per :data:`verify.coverage.ATTESTATIONS` entry, in registry order, with
        ``layout`` (``"run"``, ``"original"`` or ``"*"`` for both), ``records``, ``field`` and
        ``reason``.
    """
    import json

    from verify.coverage import ATTESTATIONS

    return json.dumps([{"layout": a.layout, "records": a.records, "field": a.field, "reason": a.reason}
                       for a in ATTESTATIONS], indent=2)


def refuse_out_inside(out: Path, archive: Path) -> None:
    """Refuse a report folder that is *archive* itself or lies inside it (before anything is written).

    Raises:
        BundleError: ``out`` resolves to *archive* or to a folder under it (the report would
            overwrite the evidence).
    """
    from protocol.errors import BundleError

    target, evidence = out.resolve(), archive.resolve()
    if target.is_relative_to(evidence):
        where = "is the archive" if target == evidence else "is inside the archive"
        raise BundleError(f"--out {out} {where} {archive}: the report would be written into the evidence; "
                          "pass a folder outside it (e.g. --out report)")
