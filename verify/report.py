"""``rev88 report``: REPORT.md and PNG figures built only from verified figures.

The archive is verified first; an archive whose integrity fails is refused (nothing is
written). Every number comes from a PASSed verdict's recomputed value (:func:`_values`);
a figure whose check did not pass reads "not verified", a phase the archive does not
hold reads "not run", and the report opens with any FAIL verdicts.

Labels come from the archive's own records: the platform of each phase (the GPU name, or
"CPU" with the CPU model when no GPU was used) is read from the verified execution
records in ``environment.json.gz``; nothing assumes an H200. The original's A100 figures
come from verifying ``evidence/rev88-original`` the same way.

Numbers have one format: thousands separators everywhere, a fixed number of decimals per
quantity (percent 2, mJ 1, ratios 3, bytes 0). Figures compare bars on one axis only when
they were measured on the same board under the same protocol; other comparisons are
separate panels (:mod:`verify.report_plots`, matplotlib, imported lazily).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocol.atomic_write import atomic_write_bytes
from protocol.errors import BundleError
from verify import report_plots as plots
from verify.arith.energy import t_quantile_975
from verify.checks.run_energy import LEGACY_LAYOUTS
from verify.registry import verify_archive
from verify.render import unavailable_groups
from verify.result import Status, VerifyReport

PHASES = ("validate", "compare", "qualify", "energy", "profile")
WORKSPACES = (":4096:8", ":16:8", ":0:0")
FIGURES = ("accuracy.png", "peak_memory.png", "energy.png", "profiles.png")
NOT_RUN = "not run"
NOT_VERIFIED = "not verified"
DRAWS = 11
REQUIRED_CORRECT = 96_800
TOTAL = 110_000
A100_ENERGY = ((":4096:8", "original draw 0, original protocol", "original draw-00 :4096:8", None),
               (":4096:8", "cache audit", "cache baseline :4096:8", "summary baseline"),
               (":16:8", "cache audit", "cache small-workspace :16:8", "summary small-workspace"),
               (":0:0", "cache audit", "cache zero-workspace :0:0", "summary zero-workspace"))
A100_PEAKS = {":4096:8": "cache baseline :4096:8", ":16:8": "cache small-workspace :16:8",
              ":0:0": "cache zero-workspace :0:0"}
PROFILES = (("workspace-4096-8-task", ":4096:8", "task", "profile-baseline-task :4096:8"),
            ("workspace-4096-8-training", ":4096:8", "training", "profile-baseline-training :4096:8"),
            ("workspace-16-8-task", ":16:8", "task", "profile-small-task :16:8"),
            ("workspace-16-8-training", ":16:8", "training", "profile-small-training :16:8"))
A100_TRIALS = 3
MIB = 2**20


# --- formatting: one format per quantity --------------------------------------------------

def count(value: object) -> str:
    """An integer with thousands separators (``98,208``); ``not verified`` for None."""
    return NOT_VERIFIED if value is None else f"{int(value):,}"  # type: ignore[call-overload]


def fixed(value: object, decimals: int) -> str:
    """A number with thousands separators and *decimals* decimals (``1,101.2``); ``not verified`` for None."""
    return NOT_VERIFIED if value is None else f"{float(value):,.{decimals}f}"  # type: ignore[arg-type]


def yes_no(value: object) -> str:
    """``yes`` / ``no`` for booleans, ``not verified`` for None."""
    return NOT_VERIFIED if value is None else ("yes" if value else "no")


def interval(low: object, high: object, decimals: int) -> str:
    """``[low, high]`` with :func:`fixed` numbers."""
    if low is None or high is None:
        return NOT_VERIFIED
    return f"[{fixed(low, decimals)}, {fixed(high, decimals)}]"


def _values(report: VerifyReport | None, check_id: str) -> dict[str, Any]:
    """subject -> verified value of every PASSed verdict with ``check_id``."""
    if report is None:
        return {}
    return {r.subject: r.recomputed for r in report if r.check_id == check_id and r.status is Status.PASS}


def _by_workspace(values: dict[str, Any]) -> dict[str, Any]:
    return {subject.split()[-1]: v for subject, v in values.items()}


# --- where each phase ran -----------------------------------------------------------------

@dataclass(frozen=True)
class Platform:
    """Where one or more phases ran, as the archive's verified execution record says.

    Attributes:
        phases: the phases of the record.
        short: a column label: the GPU name without "NVIDIA " (``H200``), or ``CPU``.
        long: the full description (GPU name and UUID, or the CPU model and threads).
        execution: the verified execution record.
    """

    phases: tuple[str, ...]
    short: str
    long: str
    execution: dict[str, Any]


def _cpu_text(cpu: object) -> str:
    if not isinstance(cpu, dict):
        return "CPU (model not recorded)"
    threads = cpu.get("torch_num_threads")
    logical = cpu.get("logical_cpus")
    parts = [f"{count(logical)} logical CPUs" if logical else None, f"{count(threads)} torch threads" if threads else None]
    detail = ", ".join(p for p in parts if p)
    return f"CPU {cpu.get('model') or '(model not recorded)'}" + (f" ({detail})" if detail else "")


def platforms(report: VerifyReport) -> list[Platform]:
    """One :class:`Platform` per verified execution record of *report*, in record order."""
    out = []
    for execution in _values(report, "consistency.environment.statement").values():
        if not isinstance(execution, dict):
            continue
        gpu = execution.get("gpu")
        if gpu:
            short = str(gpu).removeprefix("NVIDIA ").strip() or str(gpu)
            uuid = execution.get("gpu_uuid")
            long = f"{gpu} (`{uuid}`)" if uuid else str(gpu)
        else:
            short, long = "CPU", _cpu_text(execution.get("cpu"))
        out.append(Platform(tuple(execution.get("phases") or ()), short, long, execution))
    return out


def phase_platform(plats: list[Platform], phase: str) -> Platform | None:
    """The platform *phase* ran on, or None when no verified record names it."""
    return next((p for p in plats if phase in p.phases), None)


def _label(plats: list[Platform], phase: str) -> str:
    p = phase_platform(plats, phase)
    return f"this run, {p.short}" if p else "this run"


# --- the report ---------------------------------------------------------------------------

def write_report(archive: Path, out: Path, *, original: Path | None = None,
                 on_stage: Callable[[str], None] | None = None, baseline: Path | None = None) -> list[Path]:
    """Verify *archive* (and *original*, *baseline*), then write ``out/REPORT.md`` and PNG figures.

    Args:
        archive: one of our run archives (``evidence/<run-id>``).
        out: the report folder (created).
        original: the original archive for the A100 reference figures (skipped when absent).
        baseline: for an archive with the learners energy design (``energy/learners.json.gz``), a
            run archive of the frozen learner whose profile gives rev88's DRAM and L2 traffic per
            task beside the variant's (its verified figures only; another board).
        on_stage: called with a short description before each stage (progress display).

    Returns:
        Every file written, REPORT.md first. Figures of earlier reports in *out* that this
        archive does not produce (e.g. peak_memory.png for a qualify-only archive) are removed.

    Raises:
        BundleError: the archive's integrity fails, *out* is an existing file or cannot be
            created, or matplotlib is missing (nothing is written). REPORT.md and each PNG are
            written atomically (temporary file, then rename).
    """
    stage = on_stage or (lambda _text: None)
    archive, out = Path(archive), Path(out)
    if out.exists() and not out.is_dir():
        raise BundleError(f"--out {out} is an existing file, not a folder: pass a folder for REPORT.md and the figures")
    plots.require_matplotlib()
    rep = verify_archive(archive, on_stage=lambda s: stage(f"verify {archive.name}: {s}"))
    if any(r.status is Status.FAIL and r.check_id.startswith("integrity.") for r in rep):
        raise BundleError(f"archive fails integrity ({archive}): run `rev88 verify {archive}`; no report is built "
                          "from unverified bytes")
    base = None
    if baseline is not None:
        if not Path(baseline).is_dir():
            raise BundleError(f"--baseline {baseline} is not a run archive folder: pass evidence/<run-id> of the "
                              "frozen learner")
        base = verify_archive(Path(baseline), on_stage=lambda s: stage(f"verify {Path(baseline).name}: {s}"))
        if any(r.status is Status.FAIL and r.check_id.startswith("integrity.") for r in base):
            raise BundleError(f"--baseline {baseline} fails integrity: run `rev88 verify {baseline}`; no report is "
                              "built from unverified bytes")
        learner = next(iter(_values(base, "profile.summary.learner").values()), "absent")
        if learner is not None:
            raise BundleError(f"--baseline {baseline} is not a verified profile of the frozen learner (its profile "
                              f"names {learner.get('name') if isinstance(learner, dict) else learner!r}): pass a rev88 run archive "
                              "such as evidence/h200-20261202")
    orig = None
    if original is not None and Path(original).is_dir():
        orig = verify_archive(Path(original), on_stage=lambda s: stage(f"verify {Path(original).name}: {s}"))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BundleError(f"cannot create the report folder {out} ({exc.strerror}): pass a writable --out folder") from None
    ctx = _Context(rep, orig, platforms(rep), {p: (archive / p).is_dir() for p in PHASES}, out, archive)
    counts = ", ".join(f"{count(rep.count(s))} {s.value}" for s in Status)
    lines = [f"# rev88 reproduction report: `{archive.name}`", "",
             f"Verification: **{'passed' if rep.ok else 'FAILED'}** ({counts}). Every figure below is a value the "
             "offline verifier recomputed from raw evidence and whose check passed; anything else reads \"not "
             "verified\", and a phase this archive does not hold reads \"not run\". The original study's A100 "
             "figures are verified the same way.", ""]
    if not rep.ok:
        lines += ["## Failed checks", ""] + [f"- `{r.check_id}` ({r.subject}): {r.reason}" for r in rep.failures()] + [""]
    lines += _environment(ctx)
    figures = []
    for name, section in (("qualify", _accuracy), ("validate", _validation), ("compare", _memory),
                          ("energy", _energy), ("profile", _profiles)):
        stage(f"section {name}")
        figures.append(section(ctx, lines))
    if (archive / "energy" / "learners.json.gz").is_file():
        stage("section learners")
        _learners(ctx, lines, base, Path(baseline).name if baseline is not None else None)
    groups = unavailable_groups(rep)
    if groups:
        lines += ["## Not evaluated (UNAVAILABLE)", ""]
        lines += [f"- {count(len(g))} × `{'`, `'.join(dict.fromkeys(r.check_id for r in g))}`: {reason}"
                  for reason, g in groups] + [""]
    written = [f for f in figures if f]
    lines += ["## Figures", ""]
    lines += [f"![{f}]({f})" for f in written] if written else ["No figures: no phase with a figure ran."]
    lines.append("")
    stage("write REPORT.md")
    path = atomic_write_bytes(out / "REPORT.md", "\n".join(lines).encode("utf-8"))
    path.chmod(0o644)
    for stale in FIGURES:
        if stale not in written:
            (out / stale).unlink(missing_ok=True)
    return [path, *(out / f for f in written)]


def build_report(archive: Path, out: Path, *, original: Path | None = None) -> Path:
    """:func:`write_report`, returning only the path of REPORT.md.

    Raises:
        BundleError: see :func:`write_report`.
    """
    return write_report(archive, out, original=original)[0]


@dataclass
class _Context:
    rep: VerifyReport
    orig: VerifyReport | None
    plats: list[Platform]
    ran: dict[str, bool]
    out: Path
    archive: Path

    def label(self, phase: str) -> str:
        return _label(self.plats, phase)

    def missing(self, phase: str, value: object, text: Callable[[Any], str]) -> str:
        """*text(value)*, or "not run" when the phase is absent, or "not verified"."""
        if not self.ran[phase]:
            return NOT_RUN
        return NOT_VERIFIED if value is None else text(value)


def _environment(ctx: _Context) -> list[str]:
    lines = ["## Where it ran", ""]
    if ctx.plats:
        lines += ["| phases | platform | driver | engine | software | pinned image |", "|---|---|---|---|---|---|"]
        for p in ctx.plats:
            ex, sw = p.execution, p.execution.get("software") or {}
            if p.short == "CPU":  # a CUDA build of torch run on the CPU says so: no GPU did the work
                cuda = f" (CUDA {sw['cuda']} build, run on the CPU)" if sw.get("cuda") else " (CPU build)"
            else:
                cuda = f", CUDA {sw['cuda']}" if sw.get("cuda") else ""
            engine = ex.get("engine") or NOT_VERIFIED
            if ex.get("image_reference"):
                engine += f" (`{ex['image_reference']}`)"
            lines.append(f"| {', '.join(p.phases)} | {p.long} | {ex.get('driver_version') or 'none'} | {engine} | "
                         f"torch {sw.get('torch')}{cuda}, Python {sw.get('python')}, numpy {sw.get('numpy')} | "
                         f"{yes_no(ex.get('pinned_image'))} |")
        lines.append("")
        lines += [f"- {', '.join(p.phases)}: \"{p.execution.get('statement')}\"" for p in ctx.plats]
    else:
        lines.append("- environment record not verified")
    ncu = next(iter(_values(ctx.rep, "profile.ncu_version").values()), None)
    if ncu:
        lines.append(f"- Nsight Compute {ncu['ncu_version']} (the original used {ncu['pinned_ncu_version']}; "
                     f"{'the pinned version' if ncu['ncu_version_is_pinned'] else 'not the pinned version'}). "
                     "Counter definitions may differ between releases.")
    if ctx.orig is not None:
        hw = ctx.orig.verified("original.submission.a100.hardware") or {}
        lines.append(f"- The original (frozen reference): {hw.get('gpu') or NOT_VERIFIED}, driver "
                     f"{hw.get('driver') or NOT_VERIFIED}, torch 2.5.1 + CUDA 12.4, Nsight Compute 2025.1.1 "
                     f"(its archive's verification {'passed' if ctx.orig.ok else 'FAILED'}).")
    lines += ["", "| phase | in this archive | ran on |", "|---|---|---|"]
    for phase in PHASES:
        p = phase_platform(ctx.plats, phase)
        lines.append(f"| {phase} | {'yes' if ctx.ran[phase] else NOT_RUN} | "
                     f"{p.short if p else ('—' if not ctx.ran[phase] else NOT_VERIFIED)} |")
    return lines + [""]


def _accuracy(ctx: _Context, lines: list[str]) -> str | None:
    ours = _values(ctx.rep, "accuracy.draw.correct")
    frozen = _values(ctx.orig, "original.accuracy.row.accuracy_percent")
    same = _values(ctx.rep, "draws.frozen_predictions_sha256")
    mine = ctx.label("qualify")
    lines += ["## Accuracy per draw (qualify)", "",
              f"| draw | {mine}: correct of 10,000 | {mine}: % | A100 original (frozen): % | "
              "predictions equal to the frozen ones |", "|---:|---:|---:|---:|---|"]
    rows = []
    for i in range(DRAWS):
        d = f"draw-{i:02d}"
        correct = ours.get(d) if isinstance(ours.get(d), int) else None
        if ctx.ran["qualify"] and not (ctx.archive / "qualify" / f"{d}.predictions.npy").is_file():
            cells = (NOT_RUN, NOT_RUN, NOT_RUN)  # a partial qualification: this draw was not run
        else:
            cells = (ctx.missing("qualify", correct, count), ctx.missing("qualify", correct, lambda c: fixed(c / 100, 2)),
                     ctx.missing("qualify", f"qualify/draw-{i:02d}.predictions.npy" in same or None, yes_no))
        lines.append(f"| {i} | {cells[0]} | {cells[1]} | {fixed(frozen.get(d), 2)} | {cells[2]} |")
        rows.append((str(i), None if correct is None else correct / 100, None, frozen.get(d), None))
    lines.append("")
    if ctx.ran["qualify"]:
        agg = ctx.rep.verified("accuracy.aggregate.correct")
        total = ctx.rep.verified("accuracy.aggregate.total")
        complete = ctx.rep.verified("accuracy.record.complete_protocol")
        required = ctx.rep.verified("accuracy.record.required_correct")
        pct = ctx.rep.verified("accuracy.aggregate.accuracy_percent")
        text = (f"Aggregate: {count(agg)} of {count(total)} correct ({fixed(pct, 2)} %)" if agg is not None
                else "Aggregate: not verified")
        if complete:
            meets = ctx.rep.verified("accuracy.aggregate.meets_12_percent_error_target")
            verdict = NOT_VERIFIED if meets is None else ("meets" if meets else "misses")
            text += f"; the 12 % error target needs {count(required)} of {count(TOTAL)}: {verdict}."
        else:
            text += (f"; a partial qualification (the target is defined over all {DRAWS} draws, "
                     f"{count(REQUIRED_CORRECT)} of {count(TOTAL)}), so no verdict.")
        lines += [text, ""]
    else:
        lines += [f"Qualification {NOT_RUN} in this archive.", ""]
    if not any(r[1] is not None for r in rows):
        return None
    plots.paired_bars(ctx.out / "accuracy.png", f"Accuracy per draw: {mine} vs the original's frozen predictions "
                      "(A100)", "accuracy (%; the axis starts at 87.5)", rows, (mine, "A100 original (frozen)"), ylim=(87.5, 90.6),
                      xlabel="qualification draw", reference=(88.0, "88 %: the 12 % error target (applies to all 11 draws together)"))
    return "accuracy.png"


def _validation(ctx: _Context, lines: list[str]) -> None:
    label = ctx.label("validate")
    checks = ctx.rep.verified("validate.check_count")
    err = ctx.rep.verified("validate.maximum_abs_error")
    passed = ctx.rep.verified("validate.passed")
    lines += ["## Runtime validation (validate)", "", f"| figure | {label} |", "|---|---:|",
              f"| replay checks | {ctx.missing('validate', checks, count)} |",
              f"| maximum absolute difference | {ctx.missing('validate', err, lambda v: f'{v:.4e}')} |",
              f"| passed | {ctx.missing('validate', passed, yes_no)} |", "",
              "The original's own record (`evidence/rev88-original/cache-audit/cuda-validation.json`) says 212 "
              "checks with a maximum absolute difference of 1.9073e-06 on the A100; the verifier does not "
              "recompute that file's figures.", ""]
    return None


def _memory(ctx: _Context, lines: list[str]) -> str | None:
    ours = _by_workspace(_values(ctx.rep, "compare.peak_allocated_bytes"))
    a100 = _values(ctx.orig, "memory.peak_allocated_bytes")
    mine = ctx.label("compare")
    lines += ["## Peak allocated memory per cuBLAS workspace configuration (compare, draw 0)", "",
              f"| workspace | {mine}: bytes | {mine}: MiB | A100 original: bytes | A100 original: MiB |",
              "|---|---:|---:|---:|---:|"]
    for ws in WORKSPACES:
        a = a100.get(A100_PEAKS[ws])
        lines.append(f"| `{ws}` | {ctx.missing('compare', ours.get(ws), count)} | "
                     f"{ctx.missing('compare', ours.get(ws), lambda v: fixed(v / MIB, 2))} | {count(a)} | "
                     f"{fixed(None if a is None else a / MIB, 2)} |")
    lines += ["", "Prepare plus first invocation, tensor allocator only. The original ran each workspace on a "
              "different A100 board.", ""]
    if not ctx.ran["compare"] or not ours:
        return None
    panels = [plots.Panel(f"{mine} (one board)", [plots.Bar(ws, ours[ws] / MIB, color=plots.WORKSPACE_COLORS[ws])
                                                  for ws in WORKSPACES if ws in ours], "peak allocated (MiB)",
                          value_format=lambda v: f"{v:,.2f}")]
    a100_bars = [plots.Bar(ws, a100[A100_PEAKS[ws]] / MIB, color=plots.WORKSPACE_COLORS[ws])
                 for ws in WORKSPACES if A100_PEAKS[ws] in a100]
    if a100_bars:
        panels.append(plots.Panel("A100 original (one board per workspace)", a100_bars, "peak allocated (MiB)",
                                  value_format=lambda v: f"{v:,.2f}"))
    plots.panel_figure(ctx.out / "peak_memory.png", "Peak allocated memory per cuBLAS workspace configuration",
                       [panels], share_y_rows=True)
    return "peak_memory.png"


def _a100_interval(mean: float | None, sd: float | None, n: int = A100_TRIALS) -> tuple[float, float] | None:
    """95 % t interval of a mean from its verified mean and SD over n trials (as verify.arith.energy.summary)."""
    if mean is None or sd is None:
        return None
    half = t_quantile_975(n - 1) * sd / math.sqrt(n)
    return mean - half, mean + half


def _board(uuid: object) -> str:
    return str(uuid)[:12] if uuid else "board not verified"


def _energy(ctx: _Context, lines: list[str]) -> str | None:
    key = "idle_adjusted_mj_per_task"
    inter = _by_workspace(_values(ctx.rep, f"energy.interleaved.summary.{key}"))
    proto = _by_workspace(_values(ctx.rep, f"energy.original_protocol.summary.{key}"))
    ratios = _by_workspace(_values(ctx.rep, f"energy.interleaved.ratio.{key}"))
    means = _values(ctx.orig, f"energy.summary.{key}.mean")
    sds = _values(ctx.orig, f"energy.summary.{key}.sample_sd")
    a100_hw = _values(ctx.orig, "original.cache.summary.energy_hardware")
    a100_first = (ctx.orig.verified("original.submission.a100.hardware") or {}) if ctx.orig else {}
    plat = phase_platform(ctx.plats, "energy")
    mine = ctx.label("energy")
    board = _board(plat.execution.get("gpu_uuid")) if plat else "board not verified"
    lines += ["## Idle-adjusted energy per task (energy; mJ/task, mean and 95 % t interval over trials)", "",
              "| measurement | board | workspace | trials | mean | 95 % interval | ratio to `:4096:8` (95 % Fieller) |",
              "|---|---|---|---:|---:|---|---|"]
    panels: list[plots.Panel] = []
    has_interleaved = (ctx.archive / "energy" / "interleaved.json.gz").is_file()
    if ctx.ran["energy"] and not has_interleaved and not proto:
        lines.append(f"| {mine}, interleaved | — | — | {NOT_RUN} | {NOT_RUN} | {NOT_RUN} | {NOT_RUN} |")
    if ctx.ran["energy"] and has_interleaved and (inter or not proto):
        bars = []
        for ws in WORKSPACES:
            s, r = inter.get(ws), ratios.get(ws)
            ratio = "—" if ws == ":4096:8" else ctx.missing(
                "energy", r, lambda r: f"{fixed(r['ratio'], 3)} {interval(r['ci95_low'], r['ci95_high'], 3)}")
            lines.append(f"| {mine}, interleaved | `{board}` | `{ws}` | {ctx.missing('energy', s, lambda s: count(s['count']))} | "
                         f"{ctx.missing('energy', s, lambda s: fixed(s['mean'], 1))} | "
                         f"{ctx.missing('energy', s, lambda s: interval(s['ci95_low'], s['ci95_high'], 1))} | {ratio} |")
            if s:
                bars.append(plots.Bar(ws, s["mean"], s["ci95_low"], s["ci95_high"], plots.WORKSPACE_COLORS[ws]))
        if bars:
            panels.append(plots.Panel(f"{mine}, interleaved\n(board {board}, n = {bars and inter[bars[0].label]['count']} each)",
                                      bars, "idle-adjusted mJ/task"))
    for ws, s in proto.items():
        lines.append(f"| {mine}, original protocol | `{board}` | `{ws}` | {count(s['count'])} | {fixed(s['mean'], 1)} | "
                     f"{interval(s['ci95_low'], s['ci95_high'], 1)} | — |")
        panels.append(plots.Panel(f"{mine}, original protocol\n(board {board}, n = {s['count']})",
                                  [plots.Bar(ws, s["mean"], s["ci95_low"], s["ci95_high"], plots.WORKSPACE_COLORS[ws])],
                                  "idle-adjusted mJ/task"))
    if not ctx.ran["energy"]:
        lines.append(f"| {mine} | — | — | {NOT_RUN} | {NOT_RUN} | {NOT_RUN} | {NOT_RUN} |")
    a100_groups: dict[str, list[plots.Bar]] = {}
    for ws, label, subject, hw_subject in A100_ENERGY:
        m, ci = means.get(subject), _a100_interval(means.get(subject), sds.get(subject))
        uuid = (a100_hw.get(hw_subject) or {}).get("uuid") if hw_subject else a100_first.get("uuid")
        lines.append(f"| A100 {label} | `{_board(uuid)}` | `{ws}` | {A100_TRIALS} | {fixed(m, 1)} | "
                     f"{interval(*(ci or (None, None)), 1)} | — |")
        if m is not None and ci is not None:
            a100_groups.setdefault(label, []).append(
                plots.Bar(f"{ws}\n{_board(uuid)}", m, ci[0], ci[1], plots.WORKSPACE_COLORS[ws]))
    lines += ["", "A100 intervals are mean ± t(0.975, 2) × SD / √3 from the verified mean and SD of the original's "
              "three trials. The measurements differ in board and idle model (interleaved: paired idle after a 2 s "
              "settle, aligned stamps; original protocol: 3 s settle, unaligned), so compare only within a "
              "group; the figure draws each group in its own panel with its own scale. The A100 cache-audit group "
              "itself spans three boards (one per workspace), so its differences mix board and workspace.", ""]
    if not panels:
        return None
    for label, bars in a100_groups.items():
        panels.append(plots.Panel(f"A100 {label}\n({'one board' if len(bars) == 1 else 'one board per workspace'})",
                                  bars, "idle-adjusted mJ/task"))
    plots.panel_figure(ctx.out / "energy.png", "Idle-adjusted energy per task (mean, 95 % interval); one panel "
                       "per board and protocol, own scales", [panels])
    return "energy.png"


def _task_traffic(rep: VerifyReport | None) -> dict[str, dict[str, float]]:
    """Verified task-scope profile means (per task), keyed by workspace config (``:16:8``)."""
    out = {}
    for key, v in _by_workspace(_values(rep, "profile.summary.mean_sd")).items():
        for pkey, ws, scope, _ in PROFILES:
            if key == pkey and scope == "task" and isinstance(v, dict) and "mean" in v:
                out[ws] = v["mean"]
    return out


def _slices_text(slices: Any) -> str:
    """The products' summation order of a fused archive, from the verifier's recomputed ``product_slices``."""
    if slices is None:
        return "product slices not recorded (records made before they were)"
    if not isinstance(slices, dict):
        return f"product slices {slices}"
    extent = slices.get("feature_extent")
    return (f"products summed in slices of {slices.get('features')} over features"
            + (f" ({extent} of the 64 tile columns)" if extent is not None else "")
            + f" and {slices.get('rows')} over batch rows")


def _mean_ci(summary: dict[str, Any], decimals: int) -> str:
    return f"{fixed(summary['mean'], decimals)} {interval(summary['ci95_low'], summary['ci95_high'], decimals)}"


def _learners(ctx: _Context, lines: list[str], base: VerifyReport | None, base_name: str | None) -> None:
    """rev88 and rev88-fused side by side: the learners energy design, peaks, predictions, traffic per task."""
    summ = {s.split(" ", 1)[1]: v for s, v in _values(ctx.rep, "energy.learners.summary.idle_adjusted_mj_per_task").items()}
    ms = {s.split(" ", 1)[1]: v for s, v in _values(ctx.rep, "energy.learners.summary.cuda_ms_per_task").items()}
    ratio = {s.split(" ", 1)[1]: v for s, v in _values(ctx.rep, "energy.learners.ratio.idle_adjusted_mj_per_task").items()}
    peaks = _values(ctx.rep, "memory.peak_allocated_bytes")
    preds = _values(ctx.rep, "draws.frozen_predictions_sha256")
    plat = phase_platform(ctx.plats, "energy")
    board = _board(plat.execution.get("gpu_uuid")) if plat else "board not verified"
    lines += ["## rev88 and rev88-fused side by side (learners energy design, one board)", "",
              f"Board `{board}`; one fresh process per trial, K rounds in rotating order, the interleaved protocol's "
              "windows. CUDA ms/task and idle-adjusted mJ/task: mean and 95 % t interval over trials; ratio to "
              "`rev88 :16:8` with its 95 % Fieller interval; peak allocated bytes of each trial's fresh process; "
              "predictions: trials whose predictions equal the frozen draw-0 predictions.", "",
              "| arm | trials | CUDA ms/task | idle-adjusted mJ/task | ratio to `rev88 :16:8` | peak allocated bytes "
              "| predictions = frozen |", "|---|---:|---:|---:|---|---:|---:|"]
    from protocol.energy_design import LEARNER_ARMS, LEARNERS_BASELINE, arm_label, learners_trial_stem  # noqa: PLC0415

    for learner, workspace in LEARNER_ARMS:
        arm = arm_label(learner, workspace)
        s, m, r = summ.get(arm), ms.get(arm), ratio.get(arm)
        stem = learners_trial_stem(0, learner, workspace).split("-", 2)[2]  # without its round
        arm_peaks = sorted({v for k, v in peaks.items() if f"-{stem}.json.gz" in k and k.startswith("energy/trial-")})
        equal = sum(1 for k in preds if k.startswith("energy/trial-") and k.endswith(f"-{stem}.predictions.npy"))
        ratio_text = "—" if arm == LEARNERS_BASELINE else (
            f"{fixed(r['ratio'], 4)} {interval(r['ci95_low'], r['ci95_high'], 4)}" if r else NOT_VERIFIED)
        lines.append(
            f"| `{arm}` | {count(s['count']) if s else NOT_VERIFIED} | {_mean_ci(m, 3) if m else NOT_VERIFIED} | "
            f"{_mean_ci(s, 2) if s else NOT_VERIFIED} | {ratio_text} | "
            f"{', '.join(count(p) for p in arm_peaks) if arm_peaks else NOT_VERIFIED} | "
            f"{count(equal)} of {count(s['count']) if s else '?'} |")
    draws = [k for k in preds if k.startswith("qualify/draw-")]
    correct = next(iter(_values(ctx.rep, "accuracy.aggregate.correct").values()), None)
    lines += ["", f"Qualification in this archive ({ctx.label('qualify')}): {count(len(draws))} of {DRAWS} draws' "
              f"predictions are bit-equal to the frozen ones, {count(correct)} correct in all.", ""]
    shape = {key: next(iter(_values(ctx.rep, f"energy.learners.{key}").values()), NOT_VERIFIED)
             for key in ("train_programs", "train_num_warps", "triton_version", "kernel_source_sha256", "kernel_tool",
                         "cupy", "split_update", "cluster_update", "train_threads", "rows_per_program", "exchange")}
    if shape["kernel_tool"] == "cuda":
        cupy = shape["cupy"] if isinstance(shape["cupy"], dict) else {}
        lines += [f"rev88-fused's kernel tool and launch shape, one across every record of the archive: CUDA C++ "
                  f"(`bundle/fused_cuda.cu`, source sha256 `{str(shape['kernel_source_sha256'])[:16]}…`) compiled by "
                  f"NVRTC {cupy.get('nvrtc', NOT_VERIFIED)} through CuPy {cupy.get('cupy', NOT_VERIFIED)}; "
                  f"{shape['train_programs']} training blocks of {shape['train_threads']} threads, "
                  f"{shape['rows_per_program']} batch rows each, "
                  f"{_cuda_update_text(shape)}; "
                  f"float32 FMAs; {_cuda_layout_text(ctx.rep, shape['kernel_source_sha256'])}.", ""]
        _traffic_lines(ctx, lines, base, base_name)
        return
    programs = shape["train_programs"]
    programs_text = ("1 (the single-CTA kernel; not recorded by this archive's code)" if programs is None
                     else f"{programs} ({'the single-CTA kernel' if programs == 1 else 'the multi-CTA grid kernel'})"
                     if isinstance(programs, int) else NOT_VERIFIED)
    lines += [f"rev88-fused's launch shape, one across every record of the archive: training programs (CTAs) "
              f"{programs_text}, warps per program {shape['train_num_warps'] if shape['train_num_warps'] is not None else 'not recorded'}, "
              f"Triton {shape['triton_version']}, kernel source sha256 `{str(shape['kernel_source_sha256'])[:16]}…`, "
              f"{_slices_text(next(iter(_values(ctx.rep, 'energy.learners.product_slices').values()), NOT_VERIFIED))}.",
              ""]
    _traffic_lines(ctx, lines, base, base_name)


def _cuda_update_text(shape: dict) -> str:
    """How the CUDA tool's blocks combined their partial gradients, from the launch fields."""
    if shape.get("split_update") is True and shape.get("cluster_update") is True and shape.get("exchange") == "push":
        return ("the blocks one thread-block cluster, each block updating one slice of the state; the partials and "
                "the new slices moved by bulk copies into the blocks' shared memory as each phase ends, counted by "
                "transaction barriers (no cluster barrier per step)")
    if shape.get("split_update") is True and shape.get("cluster_update") is True:
        return ("the blocks one thread-block cluster, each block updating one slice of the state from the partials "
                "in the blocks' shared memory and every block gathering the slices (two hardware cluster barriers "
                "per step)")
    if shape.get("split_update") is True:
        return "a sliced update (two grid barriers per step)"
    if shape.get("cluster_update") is True:
        return ("the blocks one thread-block cluster, every block updating its own state copy from the partials in "
                "the blocks' shared memory (one hardware cluster barrier per step)")
    return "every block updating its own state copy (one grid barrier per step)"


def _cuda_layout_text(rep: VerifyReport, sha: object) -> str:
    """The launch layout the CUDA kernel source declares, in words: from the verified copy the archive carries
    (``energy.learners.kernel_source``'s recomputed layout), else from the verifier's legacy entry for *sha*
    (:data:`verify.checks.run_energy.LEGACY_LAYOUTS`), else that the report does not know it."""
    layout = next(iter(_values(rep, "energy.learners.kernel_source").values()), None)
    where = "the kernel source the archive carries declares"
    if not isinstance(layout, dict):
        layout = LEGACY_LAYOUTS.get(sha) if isinstance(sha, str) else None
        where = "the verifier's legacy entry for this source (it predates archived sources) gives"
    if not isinstance(layout, dict):
        return "a launch layout this report does not know (the archive carries no verified kernel source)"
    threads, shared = layout["threads"], layout["shared"]
    update = ("the cluster update" + (" (which may be split" + (", with the pushed exchange)" if layout["push"] else ")")
                                      if layout["cluster_split"] else "")) if layout["cluster"] else "no cluster update"
    return (f"{where} blocks of {threads['unit']} x {threads['least']} to {threads['most']} threads, {update}, "
            f"partial buffers {shared['partial_floats']:,} floats apart"
            f"{', 16-row arrays for blocks of up to 16 rows' if shared['rows16'] else ''}")


def _traffic_lines(ctx: _Context, lines: list[str], base: VerifyReport | None, base_name: str | None) -> None:
    """The variant's task-scope traffic per task beside rev88's (from the baseline archive)."""
    mine = _task_traffic(ctx.rep)
    if mine:
        theirs = _task_traffic(base)
        lines += [f"Traffic per task (profile, task scope, mean over repeats; the variant from this archive, rev88 "
                  f"from {('`' + base_name + '`') if base_name else 'no baseline archive (pass --baseline)'}, another "
                  "board). L2 sectors are request bytes / 32.", "",
                  "| learner, workspace | DRAM bytes/task | L2 read sectors/task | L2 write sectors/task |",
                  "|---|---:|---:|---:|"]
        rows = [(learner, ws, traffic[ws]) for ws in WORKSPACES for learner, traffic in
                (("rev88-fused", mine), ("rev88", theirs)) if ws in traffic]
        for learner, ws, v in rows:
            lines.append(f"| `{learner} {ws}` | {count(round(v['dram_total_bytes_per_sequence']))} | "
                         f"{count(round(v['l2_read_request_bytes_per_sequence'] / 32))} | "
                         f"{count(round(v['l2_write_request_bytes_per_sequence'] / 32))} |")
        lines.append("")


def _profile_label(workspace: str, scope: str) -> str:
    return f"`{workspace}` {scope}"


def _profile_lock_lines(ctx: _Context) -> list[str]:
    """How the ncu runs held the board (their verified ``placement.gpu_lock`` scopes), with its caveat."""
    scopes = sorted({str(v.get("scope")) for subject, v in _values(ctx.rep, "placement.gpu_lock").items()
                     if subject.startswith("profile/") and isinstance(v, dict)})
    if not scopes:
        return []
    text = {"process": "each fixture process held the board alone from before CUDA initialisation to its exit "
                       "(the serialised measurement)",
            "range": "the fixture processes shared the board while they prepared and each held it alone from its "
                     "warm-ups to its exit (`--lock-scope range`). Measured on one H200, this way reads 0.1-0.8 % "
                     "more L2 sectors per task than the serialised way, outside the serialised repeats' spread "
                     "(docs/protocol.md 8.4): compare its L2 figures with that in mind"}
    return [f"GPU lock of the ncu runs: {'; '.join(f'`{s}`: ' + text.get(s, 'unknown scope') for s in scopes)}.", ""]


def _profiles(ctx: _Context, lines: list[str]) -> str | None:
    stats = _by_workspace(_values(ctx.rep, "profile.summary.mean_sd"))
    learner = next(iter(_values(ctx.rep, "profile.summary.learner").values()), None)
    dram = _values(ctx.orig, "profile.dram_total_bytes_per_sequence")
    l2r = _values(ctx.orig, "profile.l2_read_request_bytes_per_sequence")
    l2w = _values(ctx.orig, "profile.l2_write_request_bytes_per_sequence")
    mine = ctx.label("profile") + (f", {learner['name']}" if isinstance(learner, dict) and "name" in learner else "")
    lines += ["## DRAM and L2 traffic per sequence (profile; bytes, this run mean ± sample SD over repeats, "
              "A100 single run)", "",
              f"| profile | {mine}: DRAM total | A100 original: DRAM total | {mine}: L2 read + write requests | "
              "A100 original: L2 read + write requests |", "|---|---:|---:|---:|---:|"]
    grid_ours: list[list[plots.Bar]] = [[], []]
    grid_a100: list[list[plots.Bar]] = [[], []]
    for key, ws, scope, subject in PROFILES:
        s = stats.get(key)
        mean, sd = (s["mean"], s["sample_sd"]) if s else ({}, {})
        l2m = (mean["l2_read_request_bytes_per_sequence"] + mean["l2_write_request_bytes_per_sequence"]) if s else None
        l2sd = math.hypot(sd["l2_read_request_bytes_per_sequence"], sd["l2_write_request_bytes_per_sequence"]) if s else None
        a_l2 = l2r[subject] + l2w[subject] if subject in l2r and subject in l2w else None
        dm, dsd = mean.get("dram_total_bytes_per_sequence"), sd.get("dram_total_bytes_per_sequence")
        ours_dram = ctx.missing("profile", dm, lambda v, sd=dsd: f"{count(round(v))} ± {count(round(sd))}")
        ours_l2 = ctx.missing("profile", l2m, lambda v, sd=l2sd: f"{count(round(v))} ± {count(round(sd))}")
        a_dram = dram.get(subject)
        lines.append(f"| {_profile_label(ws, scope)} | {ours_dram} | {count(None if a_dram is None else round(a_dram))} | "
                     f"{ours_l2} | {count(None if a_l2 is None else round(a_l2))} |")
        label = f"{ws}\n{scope}"
        color = plots.WORKSPACE_COLORS[ws]
        if dm is not None:
            grid_ours[0].append(plots.Bar(label, dm / 1e6, (dm - dsd) / 1e6, (dm + dsd) / 1e6, color))
            grid_ours[1].append(plots.Bar(label, l2m / 1e9, (l2m - l2sd) / 1e9, (l2m + l2sd) / 1e9, color))
        if a_dram is not None and a_l2 is not None:
            grid_a100[0].append(plots.Bar(label, a_dram / 1e6, color=color))
            grid_a100[1].append(plots.Bar(label, a_l2 / 1e9, color=color))
    lines += ["", "Task scope: per complete task (S = 16 tasks in the range); training scope: per two-epoch "
              "training sequence. The L2 SD combines the read and write SDs as if independent. The original's "
              "`:4096:8` task profile ran on an 80 GB A100, the others on 40 GB boards.", ""]
    lines += _profile_lock_lines(ctx)
    if not ctx.ran["profile"] or not grid_ours[0]:
        return None
    repeats = next(iter(_values(ctx.rep, "profile.summary.repeats").values()), {})
    n = f", n = {len(repeats['repeats'])}" if isinstance(repeats, dict) and isinstance(repeats.get("repeats"), list) else ""
    grid = []
    for row, (ylabel, fmt) in enumerate((("DRAM bytes per sequence (MB)", lambda v: f"{v:,.2f}"),
                                         ("L2 request bytes per sequence (GB)", lambda v: f"{v:,.3f}"))):
        cells = [plots.Panel(f"{mine} (mean ± SD{n})", grid_ours[row], ylabel, value_format=fmt)]
        if grid_a100[row]:
            cells.append(plots.Panel("A100 original (single run)", grid_a100[row], ylabel, value_format=fmt))
        grid.append(cells)
    plots.panel_figure(ctx.out / "profiles.png", "Nsight Compute counters per sequence; one panel per platform, "
                       "same scale per row", grid, share_y_rows=True, height=3.3)
    return "profiles.png"
