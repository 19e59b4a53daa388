"""``rev88 report``: REPORT.md and PNG figures built only from verified figures.

The archive is verified first; an archive whose integrity fails is refused (nothing is
written). Every number comes from a PASSed verdict's recomputed value
(:func:`_values`); a figure whose check did not pass is shown as "not verified", and the
report opens with any FAIL verdicts. The original's A100 figures come from verifying
``evidence/rev88-original`` the same way and are drawn side by side. Plots live in
:mod:`verify.report_plots` (matplotlib, Agg, imported lazily).
"""

from __future__ import annotations

import math
from pathlib import Path

from bundle import archive as archive_io
from bundle.energy import t_quantile_975
from bundle.errors import BundleError
from verify import report_plots as plots
from verify.registry import verify_archive
from verify.result import Status, VerifyReport

WORKSPACES = (":4096:8", ":16:8", ":0:0")
A100_ENERGY = {":4096:8": ("original draw-0, original protocol", "original draw-00 :4096:8"),
               ":4096:8 ": ("cache audit", "cache baseline :4096:8"),
               ":16:8": ("cache audit", "cache small-workspace :16:8"),
               ":0:0": ("cache audit", "cache zero-workspace :0:0")}
A100_PEAKS = {":4096:8": "cache baseline :4096:8", ":16:8": "cache small-workspace :16:8",
              ":0:0": "cache zero-workspace :0:0"}
PROFILES = {"workspace-4096-8-task": "profile-baseline-task :4096:8",
            "workspace-4096-8-training": "profile-baseline-training :4096:8",
            "workspace-16-8-task": "profile-small-task :16:8",
            "workspace-16-8-training": "profile-small-training :16:8"}
A100_TRIALS = 3


def _values(report: VerifyReport | None, check_id: str) -> dict[str, object]:
    """subject -> verified value of every PASSed verdict with ``check_id``."""
    if report is None:
        return {}
    return {r.subject: r.recomputed for r in report if r.check_id == check_id and r.status is Status.PASS}


def _fmt(value: object, digits: int = 6) -> str:
    if value is None:
        return "not verified"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int) or (isinstance(value, float) and abs(value) >= 1e4):
        return f"{value:,.0f}"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _a100_interval(mean: float | None, sd: float | None, n: int = A100_TRIALS) -> tuple[float, float] | None:
    """95 % t interval of a mean from its verified mean and SD over n trials (as bundle.energy.summarise)."""
    if mean is None or sd is None:
        return None
    half = t_quantile_975(n - 1) * sd / math.sqrt(n)
    return mean - half, mean + half


def _ci(interval: tuple[float, float] | None) -> str:
    return "not verified" if not interval else f"[{interval[0]:.1f}, {interval[1]:.1f}]"


def _environment_lines(rep: VerifyReport, orig: VerifyReport | None) -> list[str]:
    lines = ["## Hardware and software", ""]
    execs = _values(rep, "consistency.environment.statement")
    if not execs:
        lines.append("- environment record not verified")
    for ex in execs.values():
        sw = ex.get("software", {})
        lines.append(f"- phases {', '.join(ex.get('phases', []))}: {ex.get('gpu')} `{ex.get('gpu_uuid')}`, driver "
                     f"{ex.get('driver_version')}, engine {ex.get('engine')}, torch {sw.get('torch')} (CUDA "
                     f"{sw.get('cuda')}), Python {sw.get('python')}, numpy {sw.get('numpy')}; pinned image: "
                     f"{ex.get('pinned_image')} — \"{ex.get('statement')}\"")
    ncu = next(iter(_values(rep, "profile.ncu_version").values()), None)
    if ncu:
        lines.append(f"- Nsight Compute {ncu['ncu_version']} (the original used {ncu['pinned_ncu_version']}; "
                     f"pinned version: {ncu['ncu_version_is_pinned']}). Counter definitions may differ between releases.")
    lines.append("- Not the pinned CUDA 12.4 / PyTorch 2.5.1 container image unless a line above says pinned image: True.")
    if orig is not None:
        hw = orig.verified("original.submission.a100.hardware")
        lines.append(f"- Original (frozen reference): {_fmt(hw and hw.get('gpu'))}, driver "
                     f"{_fmt(hw and hw.get('driver'))}, torch 2.5.1 + CUDA 12.4, Nsight Compute 2025.1.1 "
                     f"(original archive verification {'passed' if orig.ok else 'FAILED'}).")
    return lines + [""]


def build_report(archive: Path, out: Path, *, original: Path | None = None) -> Path:
    """Verify *archive* (and *original*), then write ``out/REPORT.md`` and PNG figures.

    Returns:
        Path of REPORT.md.

    Raises:
        BundleError: the archive's integrity fails, *out* is an existing file or cannot be
            created, or matplotlib is missing (nothing is written). REPORT.md and each PNG are
            written atomically (temporary file, then rename).
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BundleError(f"--out {out} is an existing file, not a folder: pass a folder for REPORT.md and the figures")
    plots.require_matplotlib()
    rep = verify_archive(Path(archive))
    if any(r.status is Status.FAIL and r.check_id.startswith("integrity.") for r in rep):
        raise BundleError(f"archive fails integrity ({archive}): run `rev88 verify {archive}`; no report is built "
                          "from unverified bytes")
    orig = verify_archive(Path(original)) if original is not None and Path(original).is_dir() else None
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BundleError(f"cannot create the report folder {out} ({exc.strerror}): pass a writable --out folder") from None
    counts = ", ".join(f"{rep.count(s)} {s.value}" for s in Status)
    lines = [f"# rev88 reproduction report: `{Path(archive).name}`", "",
             f"Verification: **{'passed' if rep.ok else 'FAILED'}** ({counts}). Every figure below is a value the "
             "offline verifier recomputed from raw evidence and whose check passed; anything else reads \"not "
             "verified\". A100 figures are the original study's, verified the same way.", ""]
    if not rep.ok:
        lines += ["## Failed checks", ""] + [f"- `{r.check_id}` ({r.subject}): {r.reason}" for r in rep.failures()] + [""]
    lines += _environment_lines(rep, orig)
    figures = [_accuracy(rep, orig, out, lines), _memory(rep, orig, out, lines), _energy(rep, orig, out, lines),
               _profiles(rep, orig, out, lines)]
    unavailable = sorted({(r.check_id, r.reason) for r in rep if r.status is Status.UNAVAILABLE})
    if unavailable:
        lines += ["## Not evaluated (UNAVAILABLE)", ""] + [f"- `{c}`: {why}" for c, why in unavailable] + [""]
    lines += ["## Figures", ""] + [f"![{f}]({f})" for f in figures if f] + [""]
    path = archive_io.atomic_write_bytes(out / "REPORT.md", "\n".join(lines).encode("utf-8"))
    path.chmod(0o644)
    return path


def _accuracy(rep: VerifyReport, orig: VerifyReport | None, out: Path, lines: list[str]) -> str | None:
    ours = _values(rep, "accuracy.draw.correct")
    frozen = _values(orig, "original.accuracy.row.accuracy_percent")
    same = _values(rep, "draws.frozen_predictions_sha256")
    lines += ["## Accuracy per draw", "", "| draw | H200 (rescored) % | A100 frozen % | predictions equal to frozen |",
              "|---:|---:|---:|---|"]
    rows = []
    for i in range(11):
        d = f"draw-{i:02d}"
        mine = ours[d] / 100.0 if isinstance(ours.get(d), int) else None
        eq = f"qualify/draw-{i:02d}.predictions.npy" in same
        lines.append(f"| {i} | {_fmt(mine)} | {_fmt(frozen.get(d))} | {'yes (sha256)' if eq else 'not verified'} |")
        rows.append((str(i), mine, frozen.get(d)))
    agg = rep.verified("accuracy.aggregate.correct")
    lines += ["", f"Aggregate correct: {_fmt(agg)} of 110000 (required 96800).", ""]
    if not any(r[1] is not None or r[2] is not None for r in rows):
        return None
    plots.paired_bars(out / "accuracy.png", "Accuracy per draw: H200 rescored vs A100 frozen", "accuracy (%)",
                      [(lab, a, None, b, None) for lab, a, b in rows], ("H200", "A100 (frozen)"), ylim=(88.0, 90.5))
    return "accuracy.png"


def _memory(rep: VerifyReport, orig: VerifyReport | None, out: Path, lines: list[str]) -> str | None:
    ours = {s.split()[-1]: v for s, v in _values(rep, "compare.peak_allocated_bytes").items()}
    a100 = _values(orig, "memory.peak_allocated_bytes")
    lines += ["## Peak allocated memory per cuBLAS workspace config (draw 0)", "",
              "| workspace | H200 peak allocated bytes | A100 peak allocated bytes |", "|---|---:|---:|"]
    rows = []
    for ws in WORKSPACES:
        a = a100.get(A100_PEAKS[ws])
        lines.append(f"| `{ws}` | {_fmt(ours.get(ws))} | {_fmt(a)} |")
        rows.append((ws, ours[ws] / 2**20 if ws in ours else None, None, a / 2**20 if a else None, None))
    lines.append("")
    if not any(r[1] or r[3] for r in rows):
        return None
    plots.paired_bars(out / "peak_memory.png", "Peak allocated memory (prepare + first invocation)", "MiB", rows,
                      ("H200", "A100"))
    return "peak_memory.png"


def _energy(rep: VerifyReport, orig: VerifyReport | None, out: Path, lines: list[str]) -> str | None:
    key = "idle_adjusted_mj_per_task"
    inter = {s.split()[-1]: v for s, v in _values(rep, f"energy.interleaved.summary.{key}").items()}
    proto = {s.split()[-1]: v for s, v in _values(rep, f"energy.original_protocol.summary.{key}").items()}
    means = _values(orig, f"energy.summary.{key}.mean")
    sds = _values(orig, f"energy.summary.{key}.sample_sd")
    ratios = {s.split()[-1]: v for s, v in _values(rep, f"energy.interleaved.ratio.{key}").items()}
    lines += ["## Idle-adjusted energy per task (mJ/task, mean and 95 % t interval over trials)", "",
              "| measurement | workspace | trials | mean | 95 % interval | ratio to `:4096:8` (95 % Fieller) |",
              "|---|---|---:|---:|---|---|"]
    bars = []
    for ws in WORKSPACES:
        s = inter.get(ws)
        r = ratios.get(ws)
        ratio = "—" if ws == ":4096:8" else ("not verified" if r is None else
                                             f"{r['ratio']:.3f} [{_fmt(r['ci95_low'], 4)}, {_fmt(r['ci95_high'], 4)}]")
        lines.append(f"| H200 interleaved | `{ws}` | {_fmt(s and s['count'])} | {_fmt(s and s['mean'])} | "
                     f"{_ci(s and (s['ci95_low'], s['ci95_high']))} | {ratio} |")
        if s:
            bars.append((f"H200 interleaved\n{ws}", s["mean"], (s["ci95_low"], s["ci95_high"]), "C0"))
    for ws, s in proto.items():
        lines.append(f"| H200 original protocol | `{ws}` | {s['count']} | {_fmt(s['mean'])} | "
                     f"{_ci((s['ci95_low'], s['ci95_high']))} | — |")
        bars.append((f"H200 original\nprotocol {ws}", s["mean"], (s["ci95_low"], s["ci95_high"]), "C2"))
    for ws, (label, subject) in A100_ENERGY.items():
        m, ci = means.get(subject), _a100_interval(means.get(subject), sds.get(subject))
        lines.append(f"| A100 {label} | `{ws.strip()}` | {A100_TRIALS} | {_fmt(m)} | "
                     f"{_ci(ci)} | — |")
        if m is not None:
            bars.append((f"A100 {label.split(',')[0]}\n{ws.strip()}", m, ci, "C1"))
    lines += ["", "A100 intervals are mean ± t(0.975, 2) × SD / √3 from the verified mean and SD of the original's "
              "three trials. H200 and A100 idle models differ (interleaved: paired idle after a 2 s settle, aligned "
              "stamps; original protocol: 3 s settle, unaligned), so compare within a row group.", ""]
    if not bars:
        return None
    plots.interval_bars(out / "energy.png", "Idle-adjusted energy per task (95 % intervals)", "mJ/task", bars)
    return "energy.png"


def _profiles(rep: VerifyReport, orig: VerifyReport | None, out: Path, lines: list[str]) -> str | None:
    stats = {s.split()[-1]: v for s, v in _values(rep, "profile.summary.mean_sd").items()}
    dram = _values(orig, "profile.dram_total_bytes_per_sequence")
    l2r = _values(orig, "profile.l2_read_request_bytes_per_sequence")
    l2w = _values(orig, "profile.l2_write_request_bytes_per_sequence")
    lines += ["## DRAM and L2 traffic per sequence (bytes; H200 mean ± SD over repeats, A100 single run)", "",
              "| profile | H200 DRAM total | A100 DRAM total | H200 L2 read+write requests | A100 L2 read+write requests |",
              "|---|---:|---:|---:|---:|"]
    rows_dram, rows_l2 = [], []
    for key, subject in PROFILES.items():
        s = stats.get(key)
        mean, sd = (s["mean"], s["sample_sd"]) if s else ({}, {})
        l2m = (mean["l2_read_request_bytes_per_sequence"] + mean["l2_write_request_bytes_per_sequence"]) if s else None
        l2sd = math.hypot(sd["l2_read_request_bytes_per_sequence"], sd["l2_write_request_bytes_per_sequence"]) if s else None
        a_l2 = l2r[subject] + l2w[subject] if subject in l2r and subject in l2w else None
        dm, dsd = (mean.get("dram_total_bytes_per_sequence"), sd.get("dram_total_bytes_per_sequence"))
        lines.append(f"| {key} | {_fmt(dm)} ± {_fmt(dsd, 3)} | {_fmt(dram.get(subject))} | {_fmt(l2m)} ± "
                     f"{_fmt(l2sd, 3)} | {_fmt(a_l2)} |")
        label = key.replace("workspace-", "").replace("-task", "\ntask").replace("-training", "\ntraining")
        rows_dram.append((label, dm and dm / 1e6, dsd and dsd / 1e6, dram.get(subject) and dram[subject] / 1e6, None))
        rows_l2.append((label, l2m and l2m / 1e9, l2sd and l2sd / 1e9, a_l2 and a_l2 / 1e9, None))
    lines += ["", "L2 SD combines read and write SDs as if independent (an approximation for the plot only). "
              "Task scope: per complete task (S = 16 in range); training scope: per two-epoch training sequence.", ""]
    if not any(r[1] or r[3] for r in rows_dram):
        return None
    plots.two_panel_bars(out / "profiles.png", "Nsight Compute counters per sequence", rows_dram, rows_l2,
                         ("DRAM bytes (MB)", "L2 request bytes (GB)"), ("H200 (mean ± SD)", "A100 (single run)"))
    return "profiles.png"
