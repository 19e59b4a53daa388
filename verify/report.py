"""``rev88 report``: REPORT.md and PNG figures built only from verified figures.

The archive is verified first. An archive whose integrity fails is refused (nothing is
written); otherwise every figure is taken from a PASSed verdict
(:meth:`verify.result.VerifyReport.verified`), a figure whose check did not pass is shown
as "not verified", and the report opens with the list of FAIL verdicts. The original's
A100 figures come from verifying ``evidence/rev88-original`` the same way. matplotlib is
imported lazily with the Agg backend.
"""

from __future__ import annotations

import json
from pathlib import Path

from bundle import archive as archive_io
from bundle.errors import BundleError
from verify.registry import verify_archive
from verify.result import Status, VerifyReport

ORIGINAL_ENERGY_SUBJECTS = {":4096:8 (draw-0 original)": "original draw-00 :4096:8",
                            ":4096:8 (cache audit)": "cache baseline :4096:8",
                            ":16:8 (cache audit)": "cache small-workspace :16:8",
                            ":0:0 (cache audit)": "cache zero-workspace :0:0"}
ORIGINAL_PROFILES = ("profile-baseline-task :4096:8", "profile-baseline-training :4096:8",
                     "profile-small-task :16:8", "profile-small-training :16:8")


def _values(report: VerifyReport, check_id: str) -> dict[str, object]:
    """subject -> verified value of every PASSed verdict with ``check_id``."""
    return {r.subject: r.recomputed for r in report if r.check_id == check_id and r.status is Status.PASS}


def _fmt(value: object, digits: int = 6) -> str:
    if value is None:
        return "not verified"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _plot_bars(path: Path, title: str, ylabel: str, groups: list[tuple[str, list[tuple[str, float, float | None]]]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    x = 0
    ticks, labels = [], []
    for gi, (group, bars) in enumerate(groups):
        for name, value, err in bars:
            ax.bar(x, value, yerr=err, capsize=4 if err else 0, color=f"C{gi}", label=group if name == bars[0][0] else None)
            ticks.append(x)
            labels.append(name)
            x += 1
        x += 0.5
    ax.set_xticks(ticks, labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def build_report(archive: Path, out: Path, *, original: Path | None = None) -> Path:
    """Verify *archive* (and *original*), then write ``out/REPORT.md`` and PNG figures.

    Returns:
        Path of REPORT.md.

    Raises:
        BundleError: the archive's integrity fails (nothing is written).
    """
    rep = verify_archive(Path(archive))
    if any(r.status is Status.FAIL and r.check_id.split(".")[0] in ("integrity",) or
           (r.status is Status.FAIL and ".integrity." in r.check_id) for r in rep):
        raise BundleError(f"archive fails integrity ({archive}): run `rev88 verify {archive}`; no report is built "
                          "from unverified bytes")
    orig = verify_archive(Path(original)) if original is not None and Path(original).is_dir() else None
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"# rev88 reproduction report: `{Path(archive).name}`", ""]
    counts = ", ".join(f"{rep.count(s)} {s.value}" for s in Status)
    lines += [f"Verification: **{'passed' if rep.ok else 'FAILED'}** ({counts}). Every figure below is a value "
              "the verifier recomputed from raw evidence and whose check passed; anything else reads "
              "\"not verified\".", ""]
    if not rep.ok:
        lines += ["## Failed checks", ""] + [f"- `{r.check_id}` ({r.subject}): {r.reason}" for r in rep.failures()] + [""]
    env = rep.verified("run.environment")
    lines += ["## Where this ran", ""]
    if env:
        for ex in env:
            lines.append("- " + json.dumps({k: ex.get(k) for k in ex if k in ("phases", "engine", "hardware", "software",
                                                                           "image", "host")}, default=str))
    else:
        lines.append("- environment record not verified")
    if orig is not None:
        hw = orig.verified("original.submission.a100.hardware")
        lines += ["", f"Original (frozen reference): {_fmt(hw and hw.get('gpu'))}, driver {_fmt(hw and hw.get('driver'))}; "
                  f"original archive verification {'passed' if orig.ok else 'FAILED'}."]
    figures = []
    # Accuracy per draw
    ours = _values(rep, "accuracy.draw.correct")
    frozen = _values(orig, "original.accuracy.row.accuracy_percent") if orig else {}
    lines += ["", "## Accuracy per draw (percent)", "", "| draw | ours | original (frozen, consistency-checked) |",
              "|---:|---:|---:|"]
    acc_bars: list[tuple[str, list]] = [("ours", []), ("original", [])]
    for i in range(11):
        d = f"draw-{i:02d}"
        mine = ours.get(d) / 100.0 if isinstance(ours.get(d), int) else None
        lines.append(f"| {i} | {_fmt(mine)} | {_fmt(frozen.get(d))} |")
        if mine is not None:
            acc_bars[0][1].append((d, mine, None))
        if frozen.get(d) is not None:
            acc_bars[1][1].append((d + " (A100)", frozen[d], None))
    agg = rep.verified("accuracy.aggregate.correct")
    lines.append(f"\nAggregate correct: {_fmt(agg)} of 110000 (required 96800).")
    if any(b for _, b in acc_bars):
        _plot_bars(out / "accuracy.png", "Accuracy per draw", "accuracy %", [g for g in acc_bars if g[1]])
        figures.append("accuracy.png")
    # Peak memory per workspace
    peaks = _values(rep, "memory.peak_allocated_bytes")
    opeaks = {k: v for k, v in (_values(orig, "memory.peak_allocated_bytes") if orig else {}).items()
              if not k.startswith("cache qualify")}
    lines += ["", "## Peak allocated bytes per workspace config", "", "| record | peak allocated bytes |", "|---|---:|"]
    lines += [f"| {k} | {v} |" for k, v in peaks.items()] + [f"| original {k} | {v} |" for k, v in opeaks.items()]
    if peaks or opeaks:
        _plot_bars(out / "peak_memory.png", "Peak allocated memory", "MiB",
                   [g for g in (("ours", [(k, v / 2**20, None) for k, v in peaks.items()]),
                                ("original A100", [(k, v / 2**20, None) for k, v in opeaks.items()])) if g[1]])
        figures.append("peak_memory.png")
    # Energy
    means = _values(rep, "energy.summary.idle_adjusted_mj_per_task.mean")
    sds = _values(rep, "energy.summary.idle_adjusted_mj_per_task.sample_sd")
    omeans = _values(orig, "energy.summary.idle_adjusted_mj_per_task.mean") if orig else {}
    osds = _values(orig, "energy.summary.idle_adjusted_mj_per_task.sample_sd") if orig else {}
    lines += ["", "## Idle-adjusted energy (mJ/task, mean ± sample SD over trials)", "", "| record | mean | SD |",
              "|---|---:|---:|"]
    lines += [f"| {k} | {_fmt(v)} | {_fmt(sds.get(k))} |" for k, v in means.items()]
    lines += [f"| original {label} | {_fmt(omeans.get(s))} | {_fmt(osds.get(s))} |"
              for label, s in ORIGINAL_ENERGY_SUBJECTS.items()]
    ebars = [("ours", [(k, v, sds.get(k)) for k, v in means.items()]),
             ("original A100", [(label, omeans[s], osds.get(s)) for label, s in ORIGINAL_ENERGY_SUBJECTS.items()
                                if s in omeans])]
    if any(b for _, b in ebars):
        _plot_bars(out / "energy.png", "Idle-adjusted energy per task", "mJ/task", [g for g in ebars if g[1]])
        figures.append("energy.png")
    # Profiles
    dram = _values(rep, "profile.dram_total_bytes_per_sequence")
    l2r = _values(rep, "profile.l2_read_request_bytes_per_sequence")
    odram = _values(orig, "profile.dram_total_bytes_per_sequence") if orig else {}
    ol2r = _values(orig, "profile.l2_read_request_bytes_per_sequence") if orig else {}
    lines += ["", "## DRAM and L2 traffic per sequence (bytes)", "", "| profile | DRAM total | L2 read requests |",
              "|---|---:|---:|"]
    lines += [f"| {k} | {_fmt(v)} | {_fmt(l2r.get(k))} |" for k, v in dram.items()]
    lines += [f"| original {k} | {_fmt(odram.get(k))} | {_fmt(ol2r.get(k))} |" for k in ORIGINAL_PROFILES]
    pbars = [("ours", [(k, v / 1e6, None) for k, v in dram.items()]),
             ("original A100", [(k, odram[k] / 1e6, None) for k in ORIGINAL_PROFILES if k in odram])]
    if any(b for _, b in pbars):
        _plot_bars(out / "dram.png", "DRAM bytes per sequence", "MB", [g for g in pbars if g[1]])
        figures.append("dram.png")
    lines += ["", "## Figures", ""] + [f"![{f}]({f})" for f in figures] + [""]
    return archive_io.atomic_write_bytes(out / "REPORT.md", "\n".join(lines).encode("utf-8"))
