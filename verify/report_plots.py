"""matplotlib figures of ``rev88 report`` (Agg backend, imported lazily). Values come in verified."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from bundle.errors import BundleError

MISSING_MATPLOTLIB = "rev88 report needs matplotlib: pip install 'rev88-bundle[report]' or run `make report`"
Row = tuple[str, float | None, float | None, float | None, float | None]
"""(label, ours, ours SD or None, theirs, theirs SD or None)."""


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
            fig.savefig(fh, format="png", dpi=130)
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


def _pairs(ax, rows: list[Row], names: tuple[str, str], ylabel: str) -> None:
    width = 0.38
    for side, (offset, color) in enumerate(((-width / 2, "C0"), (width / 2, "C1"))):
        xs = [i + offset for i, r in enumerate(rows) if r[1 + 2 * side] is not None]
        ys = [r[1 + 2 * side] for r in rows if r[1 + 2 * side] is not None]
        errs = [r[2 + 2 * side] or 0.0 for r in rows if r[1 + 2 * side] is not None]
        ax.bar(xs, ys, width, yerr=errs if any(errs) else None, capsize=4, color=color, label=names[side])
    ax.set_xticks(range(len(rows)), [r[0] for r in rows], fontsize=9)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=9)


def paired_bars(path: Path, title: str, ylabel: str, rows: list[Row], names: tuple[str, str],
                ylim: tuple[float, float] | None = None) -> None:
    """Grouped bars: ours next to the original per label (error bars = SD when given)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 4.5))
    _pairs(ax, rows, names, ylabel)
    if ylim:
        ax.set_ylim(*ylim)
    ax.set_title(title)
    fig.tight_layout()
    _save(fig, path)


def interval_bars(path: Path, title: str, ylabel: str,
                  bars: list[tuple[str, float, tuple[float, float] | None, str]]) -> None:
    """One bar per measurement with its 95 % interval (asymmetric error bars)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(11, 5))
    for i, (_label, mean, ci, color) in enumerate(bars):
        err = [[mean - ci[0]], [ci[1] - mean]] if ci else None
        ax.bar(i, mean, yerr=err, capsize=5, color=color)
        ax.text(i, mean, f"{mean:.0f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(bars)), [b[0] for b in bars], fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    from matplotlib.patches import Patch  # noqa: PLC0415

    ax.legend(handles=[Patch(color="C0", label="H200 interleaved"), Patch(color="C2", label="H200 original protocol"),
                       Patch(color="C1", label="A100 (original study)")], fontsize=9)
    fig.tight_layout()
    _save(fig, path)


def two_panel_bars(path: Path, title: str, left: list[Row], right: list[Row], ylabels: tuple[str, str],
                   names: tuple[str, str]) -> None:
    """Two grouped-bar panels side by side (e.g. DRAM and L2)."""
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, rows, ylabel in zip(axes, (left, right), ylabels, strict=True):
        _pairs(ax, rows, names, ylabel)
    fig.suptitle(title)
    fig.tight_layout()
    _save(fig, path)
