"""Rendering of verify reports: a rich table for a terminal, compact lines for pipes, JSON for machines.

Rendering never decides a status. In the table PASS verdicts are folded per check family
(``energy.trial.*``: N checks), UNAVAILABLE verdicts sharing a check id and reason into one
row; every FAIL has its own row; ``show_all`` lists every verdict. When stdout is not a
terminal (a pipe, make, CI logs) :func:`render_compact` prints one summary line per archive,
one line per FAIL and the UNAVAILABLE check ids with their counts, never wrapped.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence

from rich.console import Console
from rich.table import Table

from verify.result import CheckResult, Status, VerifyReport

_STYLE = {Status.PASS: "green", Status.FAIL: "bold red", Status.UNAVAILABLE: "yellow"}


def _short(value: object, limit: int = 40) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _rows(report: VerifyReport, show_all: bool) -> list[tuple[CheckResult, int]]:
    if show_all:
        return [(r, 1) for r in report.results]
    groups: dict[tuple, list[CheckResult]] = {}
    order: list[tuple] = []
    for r in report.results:
        if r.status is Status.FAIL:
            key: tuple = (id(r),)
        elif r.status is Status.PASS:
            key = (".".join(r.check_id.split(".")[:2]), r.status)
        else:
            key = (r.check_id, r.status, r.reason)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(r)
    rows = []
    for k in order:
        first, n = groups[k][0], len(groups[k])
        if first.status is Status.PASS and n > 1:
            first = CheckResult(k[0] + ".*", f"{n} checks", Status.PASS, reason="all passed (--all lists them)")
            n = 1
        rows.append((first, n))
    return rows


def render_table(reports: Sequence[VerifyReport], console: Console, *, show_all: bool = False,
                 timings: bool = False) -> None:
    """Print one table per archive and a summary line each."""
    for report in reports:
        table = Table(title=f"{report.archive} ({report.kind})", show_lines=False, expand=False)
        for col in ("status", "check", "subject", "recorded", "recomputed", "tolerance", "reason"):
            table.add_column(col, overflow="fold")
        for r, n in _rows(report, show_all):
            subject = r.subject if n == 1 else f"{r.subject} (+{n - 1} more)"
            table.add_row(f"[{_STYLE[r.status]}]{r.status.value}[/]", r.check_id, subject, _short(r.recorded),
                          _short(r.recomputed), r.tolerance or "", r.reason)
        console.print(table)
        counts = ", ".join(f"{report.count(s)} {s.value}" for s in Status)
        verdict = "[green]verified[/]" if report.ok else "[bold red]FAILED[/]"
        console.print(f"{report.archive}: {verdict} ({counts})")
        if timings:
            total = report.timings_s.get("total", 0.0)
            hashing = report.timings_s.get("hashing", 0.0)
            share = 100.0 * hashing / total if total else 0.0
            console.print(f"  wall {total:.3f} s, hashing/decompressing {hashing:.3f} s ({share:.1f} %)")
            if "ncu_report_wait" in report.timings_s:
                console.print(f"  .ncu-rep reads: {report.timings_s['ncu_report_read_in_workers']:.3f} s in worker "
                              f"processes, {report.timings_s['ncu_report_wait']:.3f} s of wall spent waiting for them")


def _summary(report: VerifyReport) -> str:
    counts = ", ".join(f"{report.count(s)} {s.value}" for s in Status)
    return f"{report.archive} ({report.kind}): {'verified' if report.ok else 'FAILED'} ({counts})"


def _line(r: CheckResult) -> str:
    return f"  {r.status.value} {r.check_id} [{r.subject}]: {r.reason}".rstrip(": ")


def render_compact(reports: Sequence[VerifyReport], echo: Callable[[str], None], *, show_all: bool = False,
                   timings: bool = False) -> None:
    """Plain lines for a non-terminal stdout: per archive a summary, each FAIL, the UNAVAILABLE ids.

    Args:
        echo: prints one line (``typer.echo``).
        show_all: one line per verdict instead.
    """
    for report in reports:
        echo(_summary(report))
        if show_all:
            for r in report.results:
                echo(_line(r))
        else:
            for r in report.failures():
                echo(_line(r))
            ids = Counter(r.check_id for r in report.results if r.status is Status.UNAVAILABLE)
            if ids:
                echo(f"  {sum(ids.values())} UNAVAILABLE: " + ", ".join(f"{c} ({n})" for c, n in sorted(ids.items())))
        if timings:
            for key, value in report.timings_s.items():
                echo(f"  timing {key}: {value:.3f} s")


def render_json(reports: Sequence[VerifyReport]) -> str:
    """All reports as one JSON document (``{"passed": bool, "archives": [...]}``)."""
    return json.dumps({"passed": all(r.ok for r in reports), "archives": [r.to_json() for r in reports]},
                      indent=2, allow_nan=False)
