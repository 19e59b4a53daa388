"""matplotlib figures of ``rev88 report`` (Agg backend, imported lazily). Values come in verified.

Two kinds of figure:

* :func:`paired_bars`: one axis, two series side by side per label (used where both series
  measure the same thing on the same data, e.g. accuracy per draw of this run and the
  original's frozen predictions);
* :func:`panel_figure`: one panel per board or platform (a grid of :class:`Panel`), so bars
  measured on different hardware or under different protocols never share an axis unless
  the caller asks for a shared scale per row (same metric, same unit).

Every PNG is written atomically (temporary file in the same folder, then ``os.replace``).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from protocol.errors import BundleError

MISSING_MATPLOTLIB = "rev88 report needs matplotlib: pip install 'rev88-bundle[report]' or run `make report`"
Row = tuple[str, float | None, float | None, float | None, float | None]
"""(label, ours, ours SD or None, theirs, theirs SD or None)."""

WORKSPACE_COLORS = {":4096:8": "#4C72B0", ":16:8": "#DD8452", ":0:0": "#55A868"}
"""One colour per cuBLAS workspace configuration, the same in every figure."""
OTHER_COLOR = "#8C8C8C"
DPI = 130


def _plt():
    """matplotlib.pyplot on the Agg backend.

    Raises:
        BundleError: matplotlib is not installed (the ``report`` extra).
    """
    try:
        import matplotlib  # noqa: PLC0415

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        raise BundleError(MISSING_MATPLOTLIB) from None
    return plt


def require_matplotlib() -> None:
    """Fail early, before any work, when matplotlib is missing.

    Raises:
        BundleError: one line saying how to install it.
    """
    _plt()


def _save(fig, path: Path) -> None:
    """Write *fig* as PNG atomically: a temporary file in the same folder, then ``os.replace``."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fig.savefig(fh, format="png", dpi=DPI)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        _plt().close(fig)


def paired_bars(path: Path, title: str, ylabel: str, rows: list[Row], names: tuple[str, str],
                ylim: tuple[float, float] | None = None, value_format: str = "{:.2f}", xlabel: str = "",
                reference: tuple[float, str] | None = None) -> None:
    """Grouped bars on one axis: the first series next to the second per label.

    Args:
        path: the PNG to write.
        title: figure title.
        ylabel: y axis label with its unit.
        rows: ``(label, first, first SD or None, second, second SD or None)``; a ``None`` value
            draws no bar.
        names: legend names of the two series (only series with a bar get a legend entry).
        ylim: y range, or None for matplotlib's.
        value_format: how the value printed above each bar reads.
        xlabel: x axis label.
        reference: ``(y, label)`` of a dashed horizontal line (e.g. a target), or None.
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(10, 5.0))
    width = 0.38
    for side, (offset, color) in enumerate(((-width / 2, "#4C72B0"), (width / 2, OTHER_COLOR))):
        xs = [i + offset for i, r in enumerate(rows) if r[1 + 2 * side] is not None]
        ys = [r[1 + 2 * side] for r in rows if r[1 + 2 * side] is not None]
        errs = [r[2 + 2 * side] or 0.0 for r in rows if r[1 + 2 * side] is not None]
        if not ys:
            continue
        bars = ax.bar(xs, ys, width, yerr=errs if any(errs) else None, capsize=4, color=color, label=names[side])
        for bar, y in zip(bars, ys, strict=True):
            ax.annotate(value_format.format(y), (bar.get_x() + bar.get_width() / 2, y), ha="center", va="bottom",
                        fontsize=7, rotation=90, xytext=(0, 2), textcoords="offset points")
    if reference is not None:
        ax.axhline(reference[0], color="#C44E52", linestyle="--", linewidth=1, label=reference[1])
    ax.set_xticks(range(len(rows)), [r[0] for r in rows], fontsize=9)
    ax.set_ylabel(ylabel)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylim:
        ax.set_ylim(*ylim)
    ax.grid(axis="y", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # below the axis, so it never covers a bar or its value
        ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, frameon=False)
    ax.set_title(title)
    fig.tight_layout()
    _save(fig, path)


@dataclass(frozen=True)
class Bar:
    """One bar: label under it, value, optional error bar (absolute low/high), colour."""

    label: str
    value: float
    low: float | None = None
    high: float | None = None
    color: str = OTHER_COLOR


@dataclass(frozen=True)
class Panel:
    """One axis of a :func:`panel_figure`: a title (the board or platform), bars, a y label, a note."""

    title: str
    bars: Sequence[Bar]
    ylabel: str = ""
    note: str = ""
    value_format: Callable[[float], str] = field(default=lambda v: f"{v:,.1f}")


def panel_figure(path: Path, title: str, grid: Sequence[Sequence[Panel]], *, share_y_rows: bool = False,
                 panel_width: float = 1.2, height: float = 3.6) -> None:
    """One panel per board/platform, in rows; panel widths follow their bar counts.

    Args:
        path: the PNG to write.
        title: figure title.
        grid: rows of panels (every row has the same number of panels; an empty panel list
            is not allowed).
        share_y_rows: give the panels of one row the same y scale (same metric and unit on
            different hardware); otherwise each panel has its own.
        panel_width: inches per bar.
        height: inches per row.

    Raises:
        BundleError: an empty grid (a caller bug).
    """
    if not grid or not all(grid):
        raise BundleError("panel_figure needs at least one panel per row: this is a bug in the report")
    plt = _plt()
    columns = len(grid[0])
    widths = [max(len(p.bars) for p in (row[c] for row in grid)) + 0.8 for c in range(columns)]
    fig, axes = plt.subplots(len(grid), columns, squeeze=False, sharey="row" if share_y_rows else False,
                             figsize=(max(6.5, panel_width * sum(widths) + 1.2), height * len(grid) + 0.7),
                             gridspec_kw={"width_ratios": widths})
    for r, row in enumerate(grid):
        for c, panel in enumerate(row):
            ax = axes[r][c]
            xs = range(len(panel.bars))
            for x, bar in zip(xs, panel.bars, strict=True):
                err = None
                if bar.low is not None and bar.high is not None:
                    err = [[bar.value - bar.low], [bar.high - bar.value]]
                ax.bar(x, bar.value, 0.7, yerr=err, capsize=4, color=bar.color)
                top = bar.high if bar.high is not None else bar.value
                ax.annotate(panel.value_format(bar.value), (x, top), ha="center", va="bottom", fontsize=7,
                            xytext=(0, 2), textcoords="offset points")
            ax.set_xticks(list(xs), [b.label for b in panel.bars], fontsize=8)
            ax.set_xlim(-0.6, len(panel.bars) - 0.4)
            ax.set_title(panel.title, fontsize=9)
            if panel.ylabel and (c == 0 or not share_y_rows):
                ax.set_ylabel(panel.ylabel, fontsize=9)
            if panel.note:
                ax.set_xlabel(panel.note, fontsize=7, color="#555555")
            ax.grid(axis="y", alpha=0.3)
            ax.margins(y=0.12)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    _save(fig, path)
