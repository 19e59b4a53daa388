"""Rendering of verify reports as wrapped text lines (terminal and pipe alike) or JSON.

Rendering never decides a status. For each archive :func:`render_lines` gives:

1. one summary line (``<archive> (<kind>): verified (N PASS, N FAIL, N UNAVAILABLE)``),
   never wrapped, so scripts and CI logs can pick it out;
2. every FAIL on its own, with its check id, subject and reason;
3. every UNAVAILABLE *group*: the verdicts that share one reason, with their count, their
   check ids and the first subject (``verbose`` lists every subject); a reason that recurs in
   other archives gets one short line pointing to its shared entry instead;
4. only with ``verbose``: one line per PASSed check id with its count; with ``show_all``:
   one entry per verdict instead of groups.

After the archives, :func:`render_text` prints each UNAVAILABLE reason shared by several archives
once (:func:`shared_reasons`), with its count over all of them and each archive's count, then one
grand-total line (:func:`total_line`): archives, PASS/FAIL/UNAVAILABLE over all of them, seconds.

Lines are word-wrapped to a width (80 columns in a pipe, the terminal's width on one) with
a hanging indent; words, paths and check ids are never broken (a token longer than the
line stays whole). :func:`render_json` gives every verdict for machines.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence

from verify.result import CheckResult, Status, VerifyReport

MIN_WIDTH = 40
"""Narrowest layout; a narrower console still gets 40-column lines."""

SUBJECTS_SHOWN = 1
"""Subjects listed per UNAVAILABLE group without ``verbose``."""

HINT = "(--verbose lists every subject and the PASS count per check; --json gives every verdict)"
"""Closing line when subjects were left out."""

STYLES = {Status.PASS.value: "green", Status.FAIL.value: "bold red", Status.UNAVAILABLE.value: "yellow",
          "verified": "green", "FAILED": "bold red"}
"""Rich styles of the status words when printing to a terminal."""


def summary_line(report: VerifyReport) -> str:
    """``<archive> (<kind>): verified|FAILED (N PASS, N FAIL, N UNAVAILABLE)``."""
    counts = ", ".join(f"{report.count(s)} {s.value}" for s in Status)
    return f"{report.archive} ({report.kind}): {'verified' if report.ok else 'FAILED'} ({counts})"


def _wrap(text: str, width: int, indent: str, hanging: str) -> list[str]:
    return textwrap.wrap(text, width=max(width, MIN_WIDTH), initial_indent=indent, subsequent_indent=hanging,
                         break_long_words=False, break_on_hyphens=False) or [indent.rstrip()]


def _ordered_unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _value(value: object, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def unavailable_groups(report: VerifyReport) -> list[tuple[str, list[CheckResult]]]:
    """The UNAVAILABLE verdicts of *report* grouped by reason, in first-seen order.

    Returns:
        ``[(reason, [verdicts with that reason]), ...]``.
    """
    groups: dict[str, list[CheckResult]] = {}
    for r in report.results:
        if r.status is Status.UNAVAILABLE:
            groups.setdefault(r.reason, []).append(r)
    return list(groups.items())


def shared_reasons(reports: Sequence[VerifyReport]) -> dict[str, list[tuple[VerifyReport, list[CheckResult]]]]:
    """The UNAVAILABLE reasons that occur in more than one of *reports*, in first-seen order.

    Returns:
        ``{reason: [(report, its verdicts with that reason), ...]}``, one entry per archive that
        has the reason (two at least).
    """
    by_reason: dict[str, list[tuple[VerifyReport, list[CheckResult]]]] = {}
    for report in reports:
        for reason, group in unavailable_groups(report):
            by_reason.setdefault(reason, []).append((report, group))
    return {reason: entries for reason, entries in by_reason.items() if len(entries) > 1}


def _subject_lines(subjects: list[str], width: int, verbose: bool) -> list[str]:
    shown = subjects if verbose else subjects[:SUBJECTS_SHOWN]
    text = "; ".join(shown)
    if len(subjects) > len(shown):
        text += f" and {len(subjects) - len(shown)} more"
    return _wrap(f"{'subject' if len(subjects) == 1 else 'subjects'}: {text}", width, "      ", "        ")


def shared_lines(shared: Mapping[str, list[tuple[VerifyReport, list[CheckResult]]]], *, width: int = 80,
                 verbose: bool = False) -> list[str]:
    """Each reason of :func:`shared_reasons` once: ``[n] UNAVAILABLE (count in k archives) ids: reason``,
    the archives with their counts, and the subjects (distinct over the archives; ``verbose``: all)."""
    if not shared:
        return []
    lines = ["UNAVAILABLE reasons shared by several archives:"]
    for n, (reason, entries) in enumerate(shared.items(), 1):
        group = [r for _, g in entries for r in g]
        ids = _ordered_unique(r.check_id for r in group)
        lines += _wrap(f"[{n}] UNAVAILABLE ({len(group)} in {len(entries)} archives) {', '.join(ids)}: {reason}",
                       width, "  ", "      ")
        lines += _wrap("archives: " + "; ".join(f"{rep.archive} ({len(g)})" for rep, g in entries), width,
                       "      ", "        ")
        lines += _subject_lines(_ordered_unique(r.subject for r in group), width, verbose)
    return lines


def total_line(reports: Sequence[VerifyReport], seconds: float | None = None) -> str:
    """``total (N archives): verified|FAILED (N PASS, N FAIL, N UNAVAILABLE)[ in S s]`` over *reports*
    (FAILED when any archive FAILs); never wrapped, like :func:`summary_line`.

    Args:
        reports: every archive's verdicts.
        seconds: wall time of the whole verification (s), if measured.
    """
    counts = ", ".join(f"{sum(r.count(s) for r in reports)} {s.value}" for s in Status)
    verdict = "verified" if all(r.ok for r in reports) else "FAILED"
    took = f" in {seconds:.1f} s" if seconds is not None else ""
    return f"total ({len(reports)} archive{'s' if len(reports) != 1 else ''}): {verdict} ({counts}){took}"


def _verdict_lines(r: CheckResult, width: int, *, values: bool) -> list[str]:
    head = f"{r.status.value} {r.check_id} [{r.subject}]"
    lines = _wrap(f"{head}: {r.reason}" if r.reason else head, width, "  ", "      ")
    if values and (r.recorded is not None or r.recomputed is not None):
        extra = f"recorded {_value(r.recorded)}; recomputed {_value(r.recomputed)}"
        if r.tolerance:
            extra += f"; tolerance {r.tolerance}"
        lines += _wrap(extra, width, "      ", "      ")
    return lines


def render_lines(report: VerifyReport, *, width: int = 80, verbose: bool = False,
                 show_all: bool = False, shared: Sequence[str] = ()) -> list[str]:
    """The text lines for one archive (see the module docstring).

    Args:
        report: the archive's verdicts.
        width: line width in columns (at least :data:`MIN_WIDTH` is used).
        verbose: also list PASS counts per check id and every subject of each UNAVAILABLE group.
        show_all: one entry per verdict (FAIL, UNAVAILABLE and PASS alike) instead of groups.
        shared: reasons printed once for several archives (:func:`shared_lines`), in their order;
            a group with one of them gets one line naming its entry (``see [n] below``).

    Returns:
        Lines without trailing newlines; the first is :func:`summary_line`.
    """
    lines = [summary_line(report)]
    if show_all:
        for r in report.results:
            lines += _verdict_lines(r, width, values=True)
        return lines
    for r in report.failures():
        lines += _verdict_lines(r, width, values=True)
    for reason, group in unavailable_groups(report):
        ids = _ordered_unique(r.check_id for r in group)
        if reason in shared:
            lines += _wrap(f"UNAVAILABLE ({len(group)}) {', '.join(ids)}: see [{list(shared).index(reason) + 1}] below",
                           width, "  ", "      ")
            continue
        lines += _wrap(f"UNAVAILABLE ({len(group)}) {', '.join(ids)}: {reason}", width, "  ", "      ")
        lines += _subject_lines(_ordered_unique(r.subject for r in group), width, verbose)
    if verbose:
        passed: dict[str, int] = {}
        for r in report.results:
            if r.status is Status.PASS:
                passed[r.check_id] = passed.get(r.check_id, 0) + 1
        for check_id, n in passed.items():
            lines += _wrap(f"PASS ({n}) {check_id}", width, "  ", "      ")
    return lines


def timing_lines(report: VerifyReport) -> list[str]:
    """``  timing <stage>: <seconds> s`` for each recorded stage of *report*."""
    return [f"  timing {key}: {value:.3f} s" for key, value in report.timings_s.items()]


def render_text(reports: Sequence[VerifyReport], echo: Callable[[str], None], *, width: int = 80,
                verbose: bool = False, show_all: bool = False, timings: bool = False,
                seconds: float | None = None) -> None:
    """Print every archive's lines through *echo* (one call per line), then the reasons shared by
    several archives (once each), the hint when subjects were left out, and the grand-total line.

    Args:
        reports: the archives' verdicts, in order.
        echo: prints one line (``typer.echo``, or a styled terminal printer).
        width: line width in columns.
        verbose: see :func:`render_lines`.
        show_all: see :func:`render_lines` (every verdict under its archive; nothing is shared).
        timings: add the wall time per stage after each archive.
        seconds: the whole verification's wall time, for :func:`total_line`.
    """
    shared = {} if show_all else shared_reasons(reports)
    for report in reports:
        for line in render_lines(report, width=width, verbose=verbose, show_all=show_all, shared=list(shared)):
            echo(line)
        if timings:
            for line in timing_lines(report):
                echo(line)
    for line in shared_lines(shared, width=width, verbose=verbose):
        echo(line)
    if not (verbose or show_all) and any(len(g) > SUBJECTS_SHOWN for r in reports for _, g in unavailable_groups(r)):
        for line in _wrap(HINT, width, "", ""):
            echo(line)
    echo(total_line(reports, seconds))


def render_json(reports: Sequence[VerifyReport]) -> str:
    """All reports as one JSON document (``{"passed": bool, "archives": [...]}``)."""
    return json.dumps({"passed": all(r.ok for r in reports), "archives": [r.to_json() for r in reports]},
                      indent=2, allow_nan=False)
