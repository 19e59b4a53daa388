"""Energy phase of a run archive: each record against the protocol settings it states, and the
summaries (``interleaved.json.gz``, ``learners.json.gz``, ``original-summary.json.gz``) recomputed
from raw stamps.

A fixture record's ``energy.settings.mode`` says which protocol wrote it:

* ``original`` (spec 5): 3 trials, ~5 s active windows (invocations = ceil(5000 /
  calibration_ms), at most 1000), 3 s settle, 3 s idle. The settings must be exactly those.
* ``trial`` (one interleaved trial, docs/evidence-format.md): invocations =
  ceil(active_seconds × 1000 / calibration_ms); settle and idle are the record's own
  ``settings``, which must equal the phase's ``interleaved.json.gz`` settings and the job's
  ``<stem>.energy-config.json``; stamps are aligned to counter updates (``polls`` ≥ 2).

``learners.json.gz`` (the ``learners`` design: (learner, workspace) arms on one board) is checked
as an interleaved summary is, plus each trial's learner (its record's ``learner`` block) and one
kernel source sha256 across every ``rev88-fused`` record of the archive.

Trial figures, summaries and Fieller ratios are recomputed with the verifier's own arithmetic
(:mod:`verify.arith.energy`, exact t quantiles); a recorded t quantile may differ from the exact one
by the writer's table rounding (:data:`T_TABLE_REL_TOL`) or interpolation (:data:`T_INTERPOLATED_REL_TOL`),
and the interval is then checked against the quantile the record states.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

from protocol import energy_design as design
from protocol.archive_format import KERNEL_SOURCE_REL
from verify.arith import energy as arith
from verify.checks import energy, run_common
from verify.checks.run_common import compare_fields, json_record, qualify_records, stored_sha
from verify.integrity import ArchiveFiles
from verify.records import get, get_dict, get_float, get_int, get_list, get_str
from verify.result import CheckResult, check_equal, check_true, failed, guarded, passed, unavailable

IDLE_SLACK_S = 0.1
"""An idle window may be this much shorter than the requested idle time (the original's
verifier accepted 2.9 s for 3 s)."""

ORIGINAL_PROTOCOL = {"trials": design.ORIGINAL_TRIALS, "target_ms": design.ORIGINAL_TARGET_MS,
                     "settle_seconds": design.ORIGINAL_SETTLE_S, "idle_seconds": design.ORIGINAL_IDLE_S}
INTERLEAVED_KEYS = ("settle_seconds", "idle_seconds", "active_seconds", "sample_interval_s")
RATIO_KEYS = ("idle_adjusted_mj_per_task", "unadjusted_mj_per_task", "cuda_ms_per_task")
BASELINE = ":4096:8"
WORKSPACES = (":4096:8", ":16:8", ":0:0")
SPREAD_KEYS = ("idle_adjusted_mj_per_task", "cuda_ms_per_task")
"""The per-task figures whose per-board means the between-board spread summarises."""

T_TABLE_REL_TOL = 5e-7
"""How far a recorded t quantile at an integer df (a summary over n values, df = n - 1) may lie from
the exact t(0.975, df): the writer takes it from a table rounded to 6 decimals (half a unit of the
6th decimal over the smallest quantile, 1.96, is 2.6e-7)."""
T_INTERPOLATED_REL_TOL = 5e-3
"""How far a recorded t quantile at a non-integer df (a Fieller ratio's Welch-Satterthwaite df) may lie
from the exact t(0.975, df): the writer interpolates linearly in 1/df between the table's integer rows,
which is off by up to 3.6e-3 for df in [3, 4] (1.6e-2 in [2, 3], 1.2e-3 in [4, 6], 2.5e-4 in [6, 10];
measured against mpmath at 60 points per range). The kept archives' ratios have df 3.0 to 7.9. A
ratio with df below 3 whose recorded t is the interpolated one fails here, and says so."""


def _dig(obj: Any, *keys: str) -> Any:
    """``obj[k1][k2]...``, or None where a level is missing or not an object."""
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _with_recorded_t(recorded: Any, compute: Any, rel_tol: float) -> dict[str, Any]:
    """What a summary or ratio should hold: computed with the exact t quantile, unless the record's
    ``t_quantile`` lies within *rel_tol* of it; then with the recorded quantile, so that its interval,
    ``g`` and bounds are checked to the bit against the quantile the record states."""
    exact = compute(None)
    stated = recorded.get("t_quantile") if isinstance(recorded, dict) else None
    if (isinstance(stated, float) and math.isfinite(stated)
            and math.isclose(stated, exact["t_quantile"], rel_tol=rel_tol)):
        return compute(stated)
    return exact


def check_record_energy(rec: dict, *, subject: str, where: str) -> list[CheckResult]:
    """The ``energy`` object of one fixture record, against the protocol its settings name."""
    e = get_dict(rec, "energy", where)
    settings = get_dict(e, "settings", where)
    mode = get_str(settings, "mode", where)
    out = energy.check_hardware(get_dict(e, "hardware", where), subject=subject, where=where)
    out.append(check_equal("energy.hardware.uuid", subject, get(e, "hardware.uuid", str, where),
                           get(rec, "hardware.uuid", str, where), what="NVML handle uuid vs the fixture's device"))
    if mode == "original":
        stated = {k: settings.get(k) for k in ORIGINAL_PROTOCOL}
        out.append(check_true("energy.settings.original_protocol", subject,
                              all(isinstance(stated[k], int | float) and stated[k] == v
                                  for k, v in ORIGINAL_PROTOCOL.items()),
                              f"original-protocol record states {stated}, the original protocol is {ORIGINAL_PROTOCOL}",
                              recorded=stated))
        return out + energy.check_energy_block(e, subject=subject, where=where, trials_expected=design.ORIGINAL_TRIALS)
    if mode != "trial":
        return out + [failed("energy.settings.mode", subject, f"unknown energy mode {mode!r}: expected 'original' "
                             "or 'trial'", recorded=mode)]
    calibration = get_float(e, "calibration_ms", where)
    active_s = get_float(settings, "active_seconds", where)
    repeats = get_int(e, "repeats_per_trial", where)
    out.append(check_equal("energy.repeats_per_trial", subject, repeats,
                           max(1, math.ceil(active_s * 1000.0 / calibration)),
                           what="invocations = ceil(active_seconds × 1000 / calibration_ms)"))
    trials = get_list(e, "trials", where)
    out.append(check_equal("energy.trial_count", subject, len(trials), 1, what="one trial per interleaved record"))
    settle = get_float(settings, "settle_seconds", where)
    min_idle = get_float(settings, "idle_seconds", where) - IDLE_SLACK_S
    for i, trial in enumerate(trials):
        w = f"{where}: trials.{i}"
        out += energy.check_trial(trial, index=get_int(settings, "trial", where), repeats=repeats, subject=subject,
                                  where=w, settle_s=settle, min_idle_s=min_idle,
                                  sample_interval_s=settings.get("sample_interval_s"))
        if get(settings, "align_stamps", bool, where):
            polls = [get(trial, f"{win}.{end}.polls", int, w) for win in ("idle_before", "active", "idle_after")
                     for end in ("start", "end")]
            out.append(check_true("energy.interval.aligned", f"{subject} trial {i}", min(polls) >= 2,
                                  f"align_stamps is set but a stamp took {min(polls)} poll(s): it was not taken "
                                  "at a counter update edge", recomputed=polls))
    for flag in ("repeat_predictions_equal", "repeat_state_hashes_equal"):
        out.append(check_equal(f"energy.{flag}", subject, get(e, flag, None, where), True, what=flag))
    return out


def _figures(rec: dict, where: str) -> list[dict[str, Any]]:
    return [arith.trial(t) for t in get_list(rec, "energy.trials", where)]


def check_interleaved(f: ArchiveFiles, rel: str = "energy/interleaved.json.gz") -> list[CheckResult]:
    """One design's summary (``energy/interleaved.json.gz``, or ``interleaved-bNN.json.gz`` of a
    further board): order, records, per-trial figures, summaries and ratios."""
    summary = json_record(f, rel)
    if summary is None:
        return []
    rounds = get_int(get_dict(summary, "settings", rel), "rounds", rel)
    expected = [(r, WORKSPACES[(r + i) % 3]) for r in range(rounds) for i in range(3)]
    return _check_design(f, rel, summary, "interleaved", expected, WORKSPACES, BASELINE,
                         lambda t, w: (get_str(t, "workspace", w),), lambda t, w: get_str(t, "workspace", w))[0]


LEARNERS = "energy/learners.json.gz"
HEX64 = re.compile(r"[0-9a-f]{64}")


def check_learners(f: ArchiveFiles) -> list[CheckResult]:
    """``energy/learners.json.gz`` as an interleaved summary is checked (order of its (learner,
    workspace) arms, records, per-trial figures, summaries and ratios against ``rev88 :16:8``), and
    each trial's learner: the record's ``learner`` block names the arm's learner (absent for
    ``rev88``), the arm's recorded block equals its records', and every ``rev88-fused`` record of the
    archive carries one 64-hex ``kernel_source_sha256`` and one Triton version."""
    from protocol.energy_design import LEARNER_ARMS, LEARNERS_BASELINE, arm_label  # noqa: PLC0415

    summary = json_record(f, LEARNERS)
    if summary is None:
        return []
    rounds = get_int(get_dict(summary, "settings", LEARNERS), "rounds", LEARNERS)
    n = len(LEARNER_ARMS)
    expected = [(r, *LEARNER_ARMS[(r + i) % n]) for r in range(rounds) for i in range(n)]
    labels = tuple(arm_label(*a) for a in LEARNER_ARMS)
    out, records = _check_design(f, LEARNERS, summary, "learners", expected, labels, LEARNERS_BASELINE,
                                 lambda t, w: (get_str(t, "learner", w), get_str(t, "workspace", w)),
                                 lambda t, w: get_str(t, "arm", w))
    blocks: dict[str, Any] = {}
    for t, record_rel, rec in records:
        w = f"{LEARNERS}: trials.{get(t, 'position', int, LEARNERS)}"
        learner, ws = get_str(t, "learner", w), get_str(t, "workspace", w)
        block = rec.get("learner")
        out.append(check_equal("energy.learners.trial_learner", record_rel,
                               {"arm": get_str(t, "arm", w), "record_learner": None if block is None else block.get("name")},
                               {"arm": arm_label(learner, ws), "record_learner": None if learner == "rev88" else learner},
                               what="the trial's arm label and the learner its record names (no block for rev88)"))
        blocks.setdefault(arm_label(learner, ws), block)
    arms = get_list(summary, "arms", LEARNERS)
    want = [{"label": arm_label(learner, ws), "learner": learner, "workspace": ws,
             "learner_block": blocks.get(arm_label(learner, ws))} for learner, ws in LEARNER_ARMS]
    out.append(check_equal("energy.learners.arms", LEARNERS, arms, want,
                           what="the arms in design order, each with its records' learner block"))
    return out


def fused_blocks(f: ArchiveFiles) -> list[tuple[str, dict, str | None, dict]]:
    """(path, learner block, device, record) of every record of the archive that ran ``rev88-fused``
    (a qualification record's block sits in its ``fixture``)."""
    found = [(rel, rec.get("learner"), rec.get("device"), rec) for rel, rec in run_common.fixture_records(f)]
    for rel in qualify_records(f):
        rec = f.json(rel)
        found.append((rel, (rec.get("fixture") or {}).get("learner"), None, rec))
    return [(rel, b, dev, rec) for rel, b, dev, rec in found if isinstance(b, dict) and b.get("name") == "rev88-fused"]


#: buffers the fused learner allocates only for the multi-CTA kernel (``FusedTask.named_tensors``)
GRID_ONLY_BUFFERS = ("barrier_count", "state_map")
#: buffers of the CUDA kernel tool's task (``bundle.fused_cuda.CudaFusedTask.named_tensors``), at every G
CUDA_BUFFERS = ("barrier_count", "partials", "published")
LAUNCH_KEYS = ("kernel_tool", "kernel_source_sha256", "triton_version", "cupy", "train_programs", "train_num_warps",
               "product_precision", "split_update", "cluster_update", "train_threads", "rows_per_program", "exchange")
#: ``tl.dot`` input precisions the fused learner names (bundle.fused_learner.PRODUCT_PRECISIONS)
PRODUCT_PRECISIONS = ("ieee", "tf32x3")
#: kernel tools of the fused learner (bundle.jobs.FUSED_KERNEL_TOOLS; absent in records before it was recorded)
KERNEL_TOOLS = ("triton", "cuda")
BATCH_SIZE = 128   # the frozen batch (spec 2.5): the CUDA tool's rows per block are ceil(128 / G)
#: the line of that source that declares its launch layout: the mark, then one JSON object (:func:`parse_layout`)
LAYOUT_MARK = "// rev88-layout: "
# --- legacy: remove when the two kept fused archives are remade with their kernel source (issue 44) ----------------------------------------------------
#: The layouts of the two kernel sources that the kept fused archives ran, made before archives carried their
#: source: 0ac8be88… (evidence/h200-fused-cuda-20261204e, G = 2) and 9da9db69… (evidence/h200-fused-cuda-20261205,
#: G = 8). Both are bundle/fused_cuda.cu of git history, before it declared its layout; each entry is the block
#: the current source declares (its code differs from 9da9db69… in no line nvcc compiles: tests/test_fused_cuda.py),
#: less the pushed exchange for 0ac8be88…, which came after it.
LEGACY_LAYOUTS = {
    "0ac8be88a18f761d3bbdd8e97b10805182246bf99ee473ad15d6eb1cec60f1bc": {
        "threads": {"unit": 32, "least": 5, "most": 16}, "cluster": True, "cluster_split": True, "push": False,
        "shared": {"partial_floats": 7556, "rows16": True}},
    "9da9db69e68ac4f874179804bb4c492737a753d506dbd1a65cd0a8c9deda1f4a": {
        "threads": {"unit": 32, "least": 5, "most": 16}, "cluster": True, "cluster_split": True, "push": True,
        "shared": {"partial_floats": 7556, "rows16": True}},
}
# --- end of legacy --------------------------------------------------------------------------------------------
#: a source whose layout is unknown (an archive without its source: energy.learners.kernel_source FAILs it):
#: whole warps, at most CUDA's 1,024 threads per block, no cluster rule, no shared-memory figure
GENERIC_LAYOUT = {"threads": {"unit": 32, "least": 1, "most": 32}}


class LayoutError(ValueError):
    """A kernel source's layout block is missing or malformed (the message says what and where)."""


def parse_layout(source: str) -> dict[str, Any]:
    """The launch layout a CUDA kernel source declares: the one line that starts with :data:`LAYOUT_MARK`,
    then a JSON object with exactly ``threads`` (``unit``, ``least``, ``most``: positive ints, least <= most:
    threads per training block are unit x least..most), ``cluster``, ``cluster_split``, ``push`` (bools: the
    cluster update, its split, the pushed exchange; split and push only with the cluster) and ``shared``
    (``partial_floats``: an int >= 7,554, the floats between the two partial buffers; ``rows16``: a bool,
    16-row arrays for blocks of up to 16 rows). The declared layout of bundle/fused_cuda.cu.

    Raises:
        LayoutError: no such line, more than one, or a block of another form.
    """
    lines = [line[len(LAYOUT_MARK):] for line in source.splitlines() if line.startswith(LAYOUT_MARK)]
    if len(lines) != 1:
        raise LayoutError(f"the kernel source has {len(lines)} lines starting {LAYOUT_MARK.strip()!r}, not one")
    try:
        block = json.loads(lines[0])
    except ValueError as exc:
        raise LayoutError(f"the kernel source's layout block is not JSON ({exc})") from None
    if not isinstance(block, dict) or set(block) != {"threads", "cluster", "cluster_split", "push", "shared"}:
        raise LayoutError("the layout block must have exactly threads, cluster, cluster_split, push, shared")
    threads, shared = block["threads"], block["shared"]
    if not (isinstance(threads, dict) and set(threads) == {"unit", "least", "most"}
            and all(type(v) is int and v >= 1 for v in threads.values()) and threads["least"] <= threads["most"]):
        raise LayoutError(f"layout threads {threads!r} is not {{unit, least, most}} positive ints, least <= most")
    if not all(type(block[k]) is bool for k in ("cluster", "cluster_split", "push")) or (
            (block["cluster_split"] or block["push"]) and not block["cluster"]):
        raise LayoutError("layout cluster, cluster_split and push must be bools, split and push only with cluster")
    if not (isinstance(shared, dict) and set(shared) == {"partial_floats", "rows16"}
            and type(shared["partial_floats"]) is int and shared["partial_floats"] >= 7554
            and type(shared["rows16"]) is bool):
        raise LayoutError(f"layout shared {shared!r} is not {{partial_floats: int >= 7554, rows16: bool}}")
    return block


def archive_layout(f: ArchiveFiles, sha: object) -> tuple[dict[str, Any], str]:
    """(layout, where it came from) of the CUDA kernel source with sha256 *sha* in archive *f*: the block the
    archive's :data:`KERNEL_SOURCE_REL` declares when that copy hashes to *sha*, else the legacy entry of
    :data:`LEGACY_LAYOUTS`, else :data:`GENERIC_LAYOUT` (``where`` is ``"archive"``, ``"legacy"`` or
    ``"unknown"``)."""
    if f.has(KERNEL_SOURCE_REL):
        data = f.read(KERNEL_SOURCE_REL)
        if hashlib.sha256(data).hexdigest() == sha:
            try:
                return parse_layout(data.decode("utf-8", errors="replace")), "archive"
            except LayoutError:
                return GENERIC_LAYOUT, "unknown"
    if isinstance(sha, str) and sha in LEGACY_LAYOUTS:
        return LEGACY_LAYOUTS[sha], "legacy"
    return GENERIC_LAYOUT, "unknown"


def check_kernel_source(f: ArchiveFiles, shas: list[Any]) -> list[CheckResult]:
    """``energy.learners.kernel_source``: the archive's copy of the CUDA kernel source its records ran.

    PASS: :data:`KERNEL_SOURCE_REL` is present, its sha256 is the one kernel_source_sha256 every CUDA-tool
    record names, and it declares a well-formed layout block (:func:`parse_layout`; the verdict's
    ``recomputed`` is that layout). FAIL: the copy hashes to another sha256, has no or a malformed block,
    sits in an archive without CUDA-tool records, or is absent while the records name a source that is not one
    of :data:`LEGACY_LAYOUTS` (the writer stores it with every such archive: without it nothing pins the layout
    the launch checks need, so deleting it must not pass as unavailable). UNAVAILABLE: absent for one of the
    two legacy sources (the kept archives made before sources were stored)."""
    rel, cid = KERNEL_SOURCE_REL, "energy.learners.kernel_source"
    names = sorted({str(s) for s in shas})
    if not shas:
        return [failed(cid, rel, "the archive holds a CUDA kernel source but no CUDA-tool record ran one")] \
            if f.has(rel) else []
    if not f.has(rel):
        if len(names) == 1 and names[0] in LEGACY_LAYOUTS:
            return [unavailable(cid, rel, f"the archive carries no kernel source (made before archives stored it); "
                                          f"the launch checks use the verifier's legacy layout of {names[0][:8]}…, "
                                          "kept until this archive is remade with its kernel source", recorded=names)]
        return [failed(cid, rel, f"CUDA-tool records name kernel source {', '.join(n[:8] + '…' for n in names)} but "
                                 f"the archive has no {rel}: its launch layout cannot be read", recorded=names)]
    data = f.read(rel)
    sha = hashlib.sha256(data).hexdigest()
    if names != [sha]:
        return [failed(cid, rel, f"{rel} hashes to {sha[:16]}…, the records name "
                                 f"{', '.join(n[:16] + '…' for n in names)}", recorded=names, recomputed=sha)]
    try:
        layout = parse_layout(data.decode("utf-8", errors="replace"))
    except LayoutError as exc:
        return [failed(cid, rel, f"{rel}: {exc}", recorded=names, recomputed=sha)]
    return [passed(cid, rel, recorded=names, recomputed=layout,
                   reason=f"{rel} is the source every CUDA-tool record names; its layout block is well formed")]


#: exchanges of the split cluster update a CUDA record may name (bundle.fused_cuda.EXCHANGES; absent before
#: it was recorded: "pull")
EXCHANGES = ("pull", "push")
#: most blocks of the cluster update: one portable thread-block cluster (bundle.fused_cuda.MAX_CLUSTER)
MAX_CLUSTER = 8

#: the launch cells of Nsight Compute's raw CSV that :func:`cuda_launch_problems` reads
LAUNCH_CELLS = ("launch__grid_size", "launch__block_size", "launch__cluster_size",
                "launch__shared_mem_per_block_dynamic")


def cuda_train_shared_bytes(layout: dict, rows: int, cluster: bool, push: bool = False) -> int | None:
    """Dynamic shared memory of one ``rev88_train`` block (bytes) as a kernel source with *layout*
    (:func:`parse_layout`) lays it out (``bundle.fused_cuda.train_shared_bytes`` for the current source), or
    None for a layout without ``shared`` facts, or ``push`` for a source without the pushed exchange: 16,144
    parameter floats (both copies, weight rows of 44), 6 activation arrays of 44 feature rows and the
    logits' 10 at a stride of the rows rounded up to 32 (16 for blocks of up to 16 rows where the source has
    16-row arrays) plus 4, with the cluster two partial buffers, or with ``push`` (G = ceil(128 / rows)) the
    padded partial and new state (7,568 floats each), G slots of 16 ceil(421 / G) + 4 ceil(208 / G) floats
    and six 16-byte barriers, then the rows' indices and labels."""
    shared = layout.get("shared")
    if shared is None or (push and not layout.get("push")):
        return None
    stride = (16 if rows <= 16 and shared["rows16"] else -(-rows // 32) * 32) + 4
    if push:
        ctas = -(-BATCH_SIZE // rows)
        exchange = 2 * 7568 + ctas * (16 * -(-421 // ctas) + 4 * -(-208 // ctas)) + 4 * 6
    else:
        exchange = 2 * shared["partial_floats"] if cluster else 0
    return 4 * (16144 + (6 * 44 + 10) * stride + exchange + 2 * rows)


def cuda_launch_problems(block: dict, cells: dict[str, str], layout: dict) -> list[str]:
    """What a training-scope profile's launch cells (Nsight Compute's raw CSV, :data:`LAUNCH_CELLS`: the
    range's one ``rev88_train`` launch) contradict in a ``kernel_tool: cuda`` learner block: grid size
    = ``train_programs``, block size = ``train_threads``, cluster size = ``train_programs`` with
    ``cluster_update`` else 0, dynamic shared memory = :func:`cuda_train_shared_bytes` where the source's
    *layout* (:func:`archive_layout`) gives it. A missing or non-integer cell is a problem too."""
    got: dict[str, int | None] = {}
    for name in LAUNCH_CELLS:
        text = str(cells.get(name, "")).replace(",", "")
        got[name] = int(text) if text.isdigit() else None
    programs, rows = block.get("train_programs"), block.get("rows_per_program")
    cluster = block.get("cluster_update") is True
    want = {"launch__grid_size": programs, "launch__block_size": block.get("train_threads"),
            "launch__cluster_size": programs if cluster else 0}
    if type(rows) is int:
        shared = cuda_train_shared_bytes(layout, rows, cluster, block.get("exchange") == "push")
        if shared is not None:
            want["launch__shared_mem_per_block_dynamic"] = shared
    return [f"{name} {got[name]!r} in the CSV, the record says {value!r}" for name, value in want.items()
            if got[name] is None or got[name] != value]


def _cuda_shape_problems(block: dict, hardware: dict | None, layout: dict) -> list[str]:
    """What is wrong with a ``kernel_tool: cuda`` block's launch fields (bundle.fused_cuda) against its kernel
    source's *layout* (:func:`archive_layout`; :data:`GENERIC_LAYOUT` where it is unknown): rows per
    block ceil(128 / train_programs), threads unit x least..most of the layout, split_update a bool,
    cluster_update a bool (present in every record of a source whose layout has ``cluster``, never true for
    a layout without it; no rule where the layout is unknown) and true only for 2 to :data:`MAX_CLUSTER`
    blocks on compute capability 9.0 or later (``bundle.fused_cuda.cluster_possible``) and without split
    unless the source has the split cluster update (``cluster_split``), ``exchange`` (absent before it was
    recorded: pull) one of :data:`EXCHANGES` and push only for a source that has it (``push``) with the split
    cluster update and at most 32 rows per block, product precision ieee, no Triton version."""
    problems, hardware = [], hardware if isinstance(hardware, dict) else {}
    programs, rows, threads = block.get("train_programs"), block.get("rows_per_program"), block.get("train_threads")
    if not (type(programs) is int and programs >= 1 and rows == -(-BATCH_SIZE // programs)):
        problems.append(f"rows_per_program {rows!r} is not ceil(128 / {programs!r})")
    unit, least, most = (layout["threads"][k] for k in ("unit", "least", "most"))
    if not (type(threads) is int and threads % unit == 0 and least <= threads // unit <= most):
        problems.append(f"train_threads {threads!r} is not {unit} x {least}..{most} (kernel source "
                        f"{str(block.get('kernel_source_sha256'))[:8]}…)")
    if type(block.get("split_update")) is not bool:
        problems.append(f"split_update {block.get('split_update')!r} is not a bool")
    source = layout if "cluster" in layout else None
    if source is not None and source.get("cluster") and "cluster_update" not in block:
        problems.append(f"no cluster_update in a record of kernel source {str(block.get('kernel_source_sha256'))[:8]}…, "
                        "which has the cluster update")
    if source is not None and not source.get("cluster") and block.get("cluster_update") is True:
        problems.append(f"cluster_update true in a record of kernel source {str(block.get('kernel_source_sha256'))[:8]}…, "
                        "which has no cluster update")
    if "cluster_update" in block and type(block["cluster_update"]) is not bool:
        problems.append(f"cluster_update {block['cluster_update']!r} is not a bool")
    elif block.get("cluster_update") is True:
        capability = str(hardware.get("compute_capability") or "")
        major = int(capability.split(".")[0]) if capability.split(".")[0].isdigit() else None
        split_ok = (block.get("split_update") is False
                    or (block.get("split_update") is True and bool((source or {}).get("cluster_split"))))
        if not (type(programs) is int and 2 <= programs <= MAX_CLUSTER and split_ok
                and major is not None and major >= 9):
            problems.append(f"cluster_update true with {programs!r} blocks, split_update "
                            f"{block.get('split_update')!r}, compute capability {capability or 'unrecorded'}: a cluster "
                            f"takes 2 to {MAX_CLUSTER} blocks, sm_90 on, and no split unless its kernel source has "
                            "the split cluster update")
    exchange = block.get("exchange", "pull")
    if (source or {}).get("push") and "exchange" not in block:
        problems.append(f"kernel source {str(block.get('kernel_source_sha256'))[:8]}… has the pushed exchange, but the "
                        "record names no exchange (pull or push): every record of such a source names it")
    elif exchange not in EXCHANGES:
        problems.append(f"exchange {exchange!r} is not one of {', '.join(EXCHANGES)}")
    elif exchange == "push" and not (
            (source or {}).get("push") and block.get("cluster_update") is True and block.get("split_update") is True
            and type(rows) is int and rows <= 32):
        problems.append(f"exchange push with cluster_update {block.get('cluster_update')!r}, split_update "
                        f"{block.get('split_update')!r}, {rows!r} rows per block, kernel source "
                        f"{str(block.get('kernel_source_sha256'))[:8]}…: the pushed exchange needs a source that has "
                        "it, the split cluster update and at most 32 rows per block")
    if block.get("product_precision") != "ieee" or block.get("triton_version") is not None:
        problems.append("a CUDA record names a product precision other than ieee or a Triton version")
    cupy = block.get("cupy")
    if not (isinstance(cupy, dict) and set(cupy) == {"cupy", "nvrtc"} and all(isinstance(v, str) and v
                                                                             for v in cupy.values())):
        problems.append(f"cupy {cupy!r} is not {{cupy, nvrtc}} version strings")
    return problems


def _cuda_inventory_problems(block: dict, inventory: dict) -> list[str]:
    """The CUDA tool's buffers against its launch fields: ``partials`` float32 (2, G, 7554) (with
    ``cluster_update`` (1,): the partials stay in shared memory), ``published`` float32 (7554,) with
    ``split_update`` and no ``cluster_update`` else (1,), ``barrier_count`` int32 (1,) (``CudaFusedTask``)."""
    tensors = {t.get("name"): t for t in inventory.get("named_tensors") or [] if isinstance(t, dict)}
    cluster = block.get("cluster_update") is True
    partials = [1] if cluster else [2, block.get("train_programs"), 7554]
    want = {"partials": (partials, "torch.float32"),
            "published": ([7554] if block.get("split_update") is True and not cluster else [1], "torch.float32"),
            "barrier_count": ([1], "torch.int32")}
    return [f"{name} is {tensors.get(name, {}).get('shape')} {tensors.get(name, {}).get('dtype')}, not {shape} {dtype}"
            for name, (shape, dtype) in want.items()
            if (tensors.get(name) or {}).get("shape") != shape or (tensors.get(name) or {}).get("dtype") != dtype]


def _slices_form(v: Any) -> bool:
    """``metadata.learner.product_slices`` well formed: ``features`` in (16, 32, 64), ``rows`` a power
    of two from 16 to 256 (the interpreter sums a whole row tile, up to the learner's 256-row limit),
    and ``feature_extent`` (absent before it was recorded) = ceil(41 / features) × features."""
    if not isinstance(v, dict) or set(v) - {"features", "rows", "feature_extent"}:
        return False
    feat, rows = v.get("features"), v.get("rows")
    if not (type(feat) is int and feat in (16, 32, 64) and type(rows) is int and rows in (16, 32, 64, 128, 256)):
        return False
    return "feature_extent" not in v or v["feature_extent"] == -(-41 // feat) * feat


def check_fused_blocks(f: ArchiveFiles) -> list[CheckResult]:
    """Every ``rev88-fused`` record of the archive (qualify, energy, profile; run whether or not the
    archive holds the learners design):

    * one kernel tool (``kernel_tool``: triton or cuda, absent before it was recorded), one 64-hex
      kernel source sha256, one Triton version, one launch shape (``train_programs``,
      ``train_num_warps``: positive ints, ``train_programs`` at most the record's ``sm_count``, or
      absent in records made before they were recorded) and one product precision
      (``product_precision``, one of :data:`PRODUCT_PRECISIONS`, absent before it was recorded)
      across the archive;
    * each record's ``metadata.learner`` agrees with its ``learner`` block on those five keys (on
      ``train_num_warps`` only where the block has it: older records kept it in the metadata only);
    * one summation order (``metadata.learner.product_slices``: the feature and row slices of the
      products and the features summed, :func:`bundle.fused_learner.feature_extent`; None in records
      made before it was recorded) across the archive, in every copy a record holds (energy trials
      also in ``energy.before_metadata`` and ``energy.after_metadata``), well formed;
    * an energy trial's ``energy.before_metadata.learner`` and ``energy.after_metadata.learner``
      equal its ``metadata.learner`` as a whole (the launch fields are checked on the latter);
    * the buffer inventory agrees with the launch shape: the multi-CTA kernel's buffers
      (:data:`GRID_ONLY_BUFFERS`) exist exactly when ``train_programs`` >= 2 (absent counts as 1);
      for the CUDA tool exactly its own (:data:`CUDA_BUFFERS`), shaped as its ``train_programs`` and
      ``split_update`` say (:func:`_cuda_inventory_problems`), and its ``split_update``,
      ``train_threads``, ``rows_per_program`` and ``cupy`` must fit :func:`_cuda_shape_problems` with the
      layout its kernel source declares (:func:`archive_layout`; the source itself:
      :func:`check_kernel_source`);
    * Triton's interpreter used exactly when the record ran on the CPU.
    """
    out: list[CheckResult] = []
    found = fused_blocks(f)
    cuda_shas = [b.get("kernel_source_sha256") for _, b, _, _ in found if b.get("kernel_tool") == "cuda"]
    out += check_kernel_source(f, cuda_shas)
    if not found:
        return out
    layouts = {sha: archive_layout(f, sha)[0] for sha in {str(s) for s in cuda_shas}}
    for key in LAUNCH_KEYS:
        values = sorted({json.dumps(b.get(key)) for _, b, _, _ in found})
        out.append(check_true(f"energy.learners.{key}", LEARNERS, len(values) == 1,
                              f"{len(found)} rev88-fused records name {len(values)} values of {key}: one kernel "
                              "tool, source, compiler (Triton or CuPy/NVRTC) and launch shape ran them all",
                              recorded=values,
                              recomputed=json.loads(values[0]) if len(values) == 1 else None))
    for key in ("train_programs", "train_num_warps"):
        bad = []
        for rel, block, _, rec in found:
            v = block.get(key)
            sms = (rec.get("hardware") or {}).get("sm_count") if key == "train_programs" else None
            if v is not None and not (type(v) is int and v >= 1 and (type(sms) is not int or v <= sms)):
                bad.append(f"{rel}: {v!r}")
        out.append(check_true(f"energy.learners.{key}.form", LEARNERS, not bad,
                              f"a {key} is not a positive int (at most the record's sm_count for train_programs; "
                              f"absent only in records made before it was recorded): {'; '.join(bad[:3])}",
                              recorded=sorted({str(b.get(key)) for _, b, _, _ in found})))
    bad = [f"{rel}: {b['kernel_tool']!r}" for rel, b, _, _ in found
           if "kernel_tool" in b and b["kernel_tool"] not in KERNEL_TOOLS]
    out.append(check_true("energy.learners.kernel_tool.form", LEARNERS, not bad,
                          f"a kernel_tool is not one of {', '.join(KERNEL_TOOLS)} (bundle.jobs.FUSED_KERNEL_TOOLS): "
                          f"{'; '.join(bad[:3])}", recorded=sorted({str(b.get("kernel_tool")) for _, b, _, _ in found})))
    def hardware(rec: dict) -> Any:   # a fixture record's own, a qualification record's in its fixture block
        return rec.get("hardware") or (rec.get("fixture") or {}).get("hardware")

    def shape_problems(b: dict, rec: dict) -> list[str]:
        return _cuda_shape_problems(b, hardware(rec), layouts[str(b.get("kernel_source_sha256"))])

    bad = [f"{rel}: {'; '.join(shape_problems(b, rec))}" for rel, b, _, rec in found
           if b.get("kernel_tool") == "cuda" and shape_problems(b, rec)]
    out.append(check_true("energy.learners.cuda_shape", LEARNERS, not bad,
                          f"a CUDA-tool record's launch fields disagree with bundle.fused_cuda: {'; '.join(bad[:3])}"))
    bad = [f"{rel}: {b['product_precision']!r}" for rel, b, _, _ in found
           if "product_precision" in b and b["product_precision"] not in PRODUCT_PRECISIONS]
    out.append(check_true("energy.learners.product_precision.form", LEARNERS, not bad,
                          f"a product_precision is not one of {', '.join(PRODUCT_PRECISIONS)} (bundle.fused_learner."
                          f"PRODUCT_PRECISIONS): {'; '.join(bad[:3])}",
                          recorded=sorted({str(b.get("product_precision")) for _, b, _, _ in found})))
    # every copy of the slicing a record holds: its metadata, and for energy trials the metadata the
    # fixture took before and after the trial's invocations
    copies: list[tuple[str, Any]] = []
    for rel, _, _, rec in found:
        energy = rec.get("energy") if isinstance(rec.get("energy"), dict) else {}
        metas = [rec.get("metadata"), *(energy[k] for k in ("before_metadata", "after_metadata") if energy.get(k))]
        for meta in metas:
            learner = meta.get("learner") if isinstance(meta, dict) else None
            copies.append((rel, learner.get("product_slices") if isinstance(learner, dict) else None))
    slices = [v for _, v in copies]
    seen = sorted({json.dumps(v, sort_keys=True) for v in slices})
    out.append(check_true("energy.learners.product_slices", LEARNERS, len(seen) == 1,
                          f"{len(found)} rev88-fused records name {len(seen)} product slicings (metadata.learner."
                          "product_slices): one summation order ran them all", recorded=seen,
                          recomputed=json.loads(seen[0]) if len(seen) == 1 else None))
    bad_slices = [f"{rel}: {v!r}" for rel, v in copies if v is not None and not _slices_form(v)]
    out.append(check_true("energy.learners.product_slices.form", LEARNERS, not bad_slices,
                          "product_slices must name features and rows slices of 16, 32 or 64 and, where recorded, "
                          "feature_extent = the smallest multiple of the feature slice >= 41 (bundle.fused_learner."
                          f"feature_extent): {'; '.join(bad_slices[:3])}"))
    shas = [b.get("kernel_source_sha256") for _, b, _, _ in found]
    out.append(check_true("energy.learners.kernel_source_sha256.form", LEARNERS,
                          all(isinstance(v, str) and HEX64.fullmatch(v) for v in shas),
                          "a kernel_source_sha256 is not 64 lowercase hex digits", recorded=sorted(set(map(str, shas)))))
    for rel, block, device, rec in found:
        meta = (rec.get("metadata") or {}).get("learner")
        meta = meta if isinstance(meta, dict) else {}
        # train_num_warps sat in metadata.learner only, before the block carried it: compared when the block has it
        keys = [k for k in LAUNCH_KEYS if k in block or (k in meta and k != "train_num_warps")]
        out.append(check_equal("energy.learners.metadata_block", rel, {k: meta.get(k) for k in keys},
                               {k: block.get(k) for k in keys},
                               what="metadata.learner and the record's learner block on the kernel and launch shape"))
        energy = rec.get("energy") if isinstance(rec.get("energy"), dict) else {}
        for which in ("before_metadata", "after_metadata"):
            if which in energy:
                copy = energy[which].get("learner") if isinstance(energy[which], dict) else None
                out.append(check_equal("energy.learners.energy_metadata", rel, copy, meta or None,
                                       what=f"energy.{which}.learner (taken around the trial's invocations) and "
                                            "metadata.learner, whole"))
        inventory = rec.get("buffer_inventory")
        if isinstance(inventory, dict):
            names = {t.get("name") for t in inventory.get("named_tensors") or [] if isinstance(t, dict)}
            programs = block.get("train_programs")
            if block.get("kernel_tool") == "cuda":
                out.append(check_equal("energy.learners.inventory_shape", rel,
                                       sorted(n for n in {*CUDA_BUFFERS, *GRID_ONLY_BUFFERS, "work"} if n in names),
                                       sorted(CUDA_BUFFERS),
                                       what="the CUDA tool's buffers (partials, published, barrier_count; no Triton "
                                            "work or state_map) in the inventory"))
                bad = _cuda_inventory_problems(block, inventory)
                out.append(check_true("energy.learners.cuda_buffers", rel, not bad,
                                      f"the CUDA tool's buffers disagree with its launch fields: {'; '.join(bad)}"))
            else:
                grid = isinstance(programs, int) and not isinstance(programs, bool) and programs >= 2
                out.append(check_equal("energy.learners.inventory_shape", rel,
                                       sorted(n for n in GRID_ONLY_BUFFERS if n in names),
                                       list(GRID_ONLY_BUFFERS) if grid else [],
                                       what=f"the multi-CTA kernel's buffers in the inventory for train_programs "
                                            f"{programs!r}"))
        if device is not None:
            out.append(check_equal("energy.learners.interpreter", rel, block.get("interpreter"), device == "cpu",
                                   what="Triton's interpreter runs the kernels on the CPU only"))
    return out


def _check_design(f: ArchiveFiles, rel: str, summary: dict, what: str, expected: list[tuple], arms: tuple[str, ...],
                  baseline: str, identity: Any, arm_of: Any) -> tuple[list[CheckResult], list[tuple[dict, str, dict]]]:
    """The checks an interleaved-style design summary gets (``interleaved*.json.gz``, ``learners.json.gz``).

    Args:
        expected: the design order, one tuple per trial: (round, *identity).
        arms: the arm keys of ``summaries``; *baseline* is one of them.
        identity: ``(trial row, where) -> tuple`` of the row's identity fields after its round.
        arm_of: ``(trial row, where) -> arm key``.

    Returns:
        The verdicts and (trial row, record path, record) of every trial whose record is present.
    """
    cid = f"energy.{what}"
    out: list[CheckResult] = []
    settings = get_dict(summary, "settings", rel)
    trials = get_list(summary, "trials", rel)
    order = [(get_int(t, "round", rel), *identity(t, rel)) for t in trials]
    out.append(check_equal(f"{cid}.order", rel, order, expected,
                           what="(round, arm) order: round r starts at arm r mod 3"))
    values: dict[str, dict[str, list[float]]] = {a: {k: [] for k in design.PER_TASK_KEYS} for a in arms}
    uuid = get_str(summary, "gpu.uuid", rel)
    present = []
    for i, t in enumerate(trials):
        w = f"{rel}: trials.{i}"
        ws, r, arm = get_str(t, "workspace", w), get_int(t, "round", w), arm_of(t, w)
        record_rel = f"energy/{get_str(t, 'record', w)}"
        subject = f"{record_rel} {arm}"
        rec = json_record(f, record_rel)
        if rec is None:
            out.append(failed(f"{cid}.record", subject, f"{record_rel} named by {rel} is not in the archive"))
            continue
        present.append((t, record_rel, rec))
        out.append(check_equal(f"{cid}.record_sha256", subject, get_str(t, "record_sha256", w),
                               stored_sha(f, record_rel), what="record_sha256 vs the stored record"))
        out.append(check_equal(f"{cid}.position", subject, get(t, "position", int, w), i, what="position"))
        e = get_dict(rec, "energy", record_rel)
        own = get_dict(e, "settings", record_rel)
        want = {"mode": "trial", "trial": r, **{k: settings.get(k) for k in INTERLEAVED_KEYS}}
        out.append(compare_fields(f"{cid}.trial_settings", subject, own, want,
                                  what="the trial's own settings vs the phase settings"))
        cfg_rel = record_rel[: -len(".json.gz")] + ".energy-config.json"
        cfg = json_record(f, cfg_rel)
        if cfg is None:
            out.append(failed(f"{cid}.energy_config", subject, f"{cfg_rel} is not in the archive"))
        else:
            out.append(compare_fields(f"{cid}.energy_config", cfg_rel, cfg,
                                      {"trial": r, "workspace_config": ws, **{k: settings.get(k) for k in INTERLEAVED_KEYS}},
                                      what="the job's --energy-config"))
        out.append(check_equal(f"{cid}.same_gpu", subject, get_str(e, "hardware.uuid", record_rel), uuid,
                               what="trial GPU uuid vs the phase's GPU"))
        fig = _figures(rec, record_rel)[0]
        want_row = {"invocations": get_int(e, "repeats_per_trial", record_rel),
                    "calibration_ms": get_float(e, "calibration_ms", record_rel),
                    **{k: fig[k] for k in ("paired_idle_w", *design.PER_TASK_KEYS)}}
        out.append(compare_fields(f"{cid}.trial", subject, t, want_row,
                                  what="trial row recomputed from the record's raw stamps"))
        for k in design.PER_TASK_KEYS:
            values.setdefault(arm, {key: [] for key in design.PER_TASK_KEYS})[k].append(fig[k])
    if "executed_order" in summary or "next_trial_prestarted" in settings:
        # since 2026-12-01: the order the trials ran in, from their completion stamps; a deviation is declared
        from protocol.energy_design import ORDER_DEVIATION, executed_order  # noqa: PLC0415

        stamps = [(json_record(f, f"energy/{get_str(t, 'record', rel)}") or {}).get("completed_at_utc", "")
                  for t in trials]
        ran = executed_order(stamps)
        out.append(check_equal(f"{cid}.executed_order", rel,
                               {"executed_order": summary.get("executed_order"),
                                "order_deviation": summary.get("order_deviation")},
                               {"executed_order": ran,
                                "order_deviation": None if ran == list(range(len(trials))) else ORDER_DEVIATION},
                               what="the order the trials ran in (their records' completion stamps), and the "
                                    "deviation from the design order declared where there is one"))
    recorded = get_dict(summary, "summaries", rel)
    for arm in arms:
        for k in design.PER_TASK_KEYS:
            if len(values[arm][k]) >= 2:
                rec_k, vals = get(recorded, (arm, k), None, rel), values[arm][k]
                out.append(compare_fields(f"{cid}.summary.{k}", f"{rel} {arm}", rec_k,
                                          _with_recorded_t(rec_k, lambda t, v=vals: arith.summary(v, t=t),
                                                           T_TABLE_REL_TOL),
                                          what=f"{arm} {k} summary (t quantile within {T_TABLE_REL_TOL:g} of "
                                               "the exact one)"))
    ratios = get_dict(summary, "ratios_vs_baseline", rel)
    for arm in arms:
        if arm == baseline:
            continue
        for k in RATIO_KEYS:
            if len(values[arm][k]) >= 2 and len(values[baseline][k]) >= 2:
                rec_k, num, den = get(ratios, (arm, k), None, rel), values[arm][k], values[baseline][k]
                out.append(compare_fields(f"{cid}.ratio.{k}", f"{rel} {arm}", rec_k,
                                          _with_recorded_t(rec_k, lambda t, a=num, b=den: arith.fieller_ratio(a, b, t=t),
                                                           T_INTERPOLATED_REL_TOL),
                                          what=f"{arm}/{baseline} {k} ratio with Fieller interval (t quantile "
                                               f"within {T_INTERPOLATED_REL_TOL:g} of the exact one)"))
    return out, present


def check_original_summary(f: ArchiveFiles) -> list[CheckResult]:
    """``energy/original-summary.json.gz`` recomputed from ``original.json.gz``'s raw stamps."""
    rel = "energy/original-summary.json.gz"
    summary = json_record(f, rel)
    if summary is None:
        return []
    record_rel = f"energy/{get_str(summary, 'record', rel)}"
    rec = json_record(f, record_rel)
    if rec is None:
        return [failed("energy.original_summary.record", rel, f"{record_rel} named by {rel} is not in the archive")]
    ws = get_str(summary, "workspace", rel)
    out = [check_equal("energy.original_summary.workspace", rel, ws, BASELINE,
                       what="the original protocol ran the library default :4096:8")]
    figures = _figures(rec, record_rel)
    for k in design.PER_TASK_KEYS:
        rec_k, vals = get(summary, ("summaries", k), None, rel), [x[k] for x in figures]
        out.append(compare_fields(f"energy.original_protocol.summary.{k}", f"{rel} {ws}", rec_k,
                                  _with_recorded_t(rec_k, lambda t, v=vals: arith.summary(v, t=t), T_TABLE_REL_TOL),
                                  what=f"original-protocol {k} summary (t quantile within {T_TABLE_REL_TOL:g} of the "
                                       "exact one)"))
    return out


def trial_summaries(f: ArchiveFiles) -> list[str]:
    """Every summary of interleaved-style trials present: the per-board designs, then ``learners.json.gz``."""
    return design_summaries(f) + ([LEARNERS] if f.has(LEARNERS) else [])


def design_summaries(f: ArchiveFiles) -> list[str]:
    """The per-board design summaries present: ``interleaved.json.gz`` then ``interleaved-b01.json.gz`` …"""
    extra = sorted(rel for rel in f.content if rel.startswith("energy/interleaved-b") and rel.endswith(".json.gz"))
    return (["energy/interleaved.json.gz"] if f.has("energy/interleaved.json.gz") else []) + extra


def check_between_boards(f: ArchiveFiles) -> list[CheckResult]:
    """``energy/between-boards.json.gz`` recomputed from the per-board summaries (:func:`verify.arith.energy
    .between_boards`); designs on distinct boards; absent with one design, required with more."""
    rel = "energy/between-boards.json.gz"
    designs = design_summaries(f)
    spread = json_record(f, rel)
    if spread is None:
        if len(designs) > 1:
            return [failed("energy.between_boards", rel, f"{len(designs)} per-board designs but no {rel}")]
        return []
    def one() -> list[CheckResult]:
        summaries = [json_record(f, d) or {} for d in designs]
        uuids = [s["gpu"]["uuid"] for s in summaries]
        if len(set(uuids)) != len(uuids):
            return [failed("energy.between_boards", rel, f"two per-board designs on one board ({uuids})")]
        want = arith.between_boards(summaries, workspaces=WORKSPACES, baseline=BASELINE, keys=SPREAD_KEYS)
        want["boards"] = [{"uuid": s["gpu"]["uuid"], "nvml_pci_bus_id": s["gpu"]["nvml_pci_bus_id"],
                           "summary": d.split("/")[-1]} for d, s in zip(designs, summaries, strict=True)]
        for ws, per_key in want["spread_of_means"].items():
            for k in per_key:
                vals = want["per_board_means"][ws][k]
                per_key[k] = _with_recorded_t(_dig(spread, "spread_of_means", ws, k),
                                              lambda t, v=vals: arith.summary(v, t=t), T_TABLE_REL_TOL)
        for ws in want["spread_of_ratios"]:
            vals = want["per_board_idle_adjusted_ratio_vs_baseline"][ws]
            want["spread_of_ratios"][ws] = _with_recorded_t(_dig(spread, "spread_of_ratios", ws),
                                                            lambda t, v=vals: arith.summary(v, t=t), T_TABLE_REL_TOL)
        keys = ("boards", "per_board_means", "per_board_idle_adjusted_ratio_vs_baseline", "spread_of_means",
                "spread_of_ratios")
        return [compare_fields("energy.between_boards", rel, {k: spread.get(k) for k in keys},
                               {k: want[k] for k in keys}, what="between-board spread from the per-board designs")]
    return guarded("energy.between_boards", rel, one)


def check_energy_phase(f: ArchiveFiles) -> list[CheckResult]:
    """Family entry: the phase summaries (the records themselves are checked with the fixtures)."""
    out: list[CheckResult] = []
    for rel in design_summaries(f):
        out += check_interleaved(f, rel)
    return out + check_learners(f) + check_fused_blocks(f) + check_between_boards(f) + check_original_summary(f)
