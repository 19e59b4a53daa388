"""Checks of the original study's archive (``evidence/rev88-original``): base study.

Recomputes every derived figure of protocol, manifests, per-draw results, accuracy,
selection, draw-0 energy and submission from their raw fields (spec 7.1, 7.2, 9). Binary
evidence the original never retained (predictions ``.npy``) gives UNAVAILABLE, never PASS;
image-derived input hashes are UNAVAILABLE "not reproducible".
"""

from __future__ import annotations

import io
import statistics

import numpy as np

from verify.checks import FLOAT_ABS_TOL, FLOAT_REL_TOL, accuracy, draws, energy
from verify.checks.consistency import FROZEN_CONFIG, PROTOCOL_CONFIG_ORDER, check_config
from verify.integrity import ArchiveFiles
from verify.records import get, get_bool, get_dict, get_int, get_list, get_str
from verify.result import CheckResult, check_close, check_equal, check_true, unavailable

DRAWS = range(11)
SEED_BASE = 2026091400
STATE_KEYS = ("input_hashes", "initial_parameter_sha256", "epoch_permutation_sha256", "final_parameter_sha256",
              "final_velocity_sha256", "state_vector_sha256", "predictions_sha256", "scores_sha256")
CORE_BYTES_PER_EXAMPLE = 328
SELECTION_THRESHOLD = 1780


def parameter_count(depth: int) -> int:
    """2d·41·41 + 82·10 + 10 (spec 2.2)."""
    return 2 * depth * 41 * 41 + 82 * 10 + 10


def _close(cid: str, subject: str, recorded: object, value: float, what: str = "value") -> CheckResult:
    return check_close(cid, subject, recorded, value, rel_tol=FLOAT_REL_TOL, abs_tol=FLOAT_ABS_TOL, what=what)


def check_protocol(f: ArchiveFiles) -> list[CheckResult]:
    """protocol.json and config.json: counts, seeds, threshold, frozen configuration."""
    p, w = f.json("protocol.json"), "protocol.json"
    cfg = f.json("config.json")
    out = [
        check_equal("original.protocol.draw_count", w, get_int(p, "draw_count", w), 11),
        check_equal("original.protocol.dataset_seeds", w, get_list(p, "dataset_seeds", w),
                    [SEED_BASE + i for i in DRAWS]),
        check_equal("original.protocol.counts", w, [get_int(p, "train_count", w), get_int(p, "test_count", w)],
                    [10_000, 10_000]),
        check_equal("original.protocol.total", w, get_int(p, "total", w), accuracy.TOTAL),
        check_equal("original.protocol.required_correct", w, get_int(p, "required_correct", w),
                    round(accuracy.TOTAL * (100 - get_int(p, "error_target_percent", w)) / 100)),
        check_config(get_dict(p, "configuration", w), subject=w),
        check_config(cfg, subject="config.json", reference=get_dict(p, "configuration", w)),
        check_equal("original.config.key_order", "config.json", list(cfg), list(PROTOCOL_CONFIG_ORDER)),
        check_equal("original.protocol.learner_seed", w, get_int(p, "learner_seed", w),
                    get_int(p, "configuration.seed", w)),
    ]
    out += draws.check_raw_sources(get_dict(p, "raw_sources", w), subject=w, where=w)
    return out


def check_manifests(f: ArchiveFiles) -> list[CheckResult]:
    """Draw and prediction manifests: draws 0…10, seeds, paths, index and label hashes."""
    dm, pm = f.json("draw-manifest.json"), f.json("prediction-manifest.json")
    out = [check_equal("original.prediction_manifest.test_labels_scored", "prediction-manifest.json",
                       get_bool(pm, "test_labels_scored", "prediction-manifest.json"), False)]
    dm_draws = get_list(dm, "draws", "draw-manifest.json")
    entries = get_list(pm, "entries", "prediction-manifest.json")
    out.append(check_equal("original.manifest.draws", "draw-manifest.json",
                           [get_int(d, "draw", "draw-manifest.json") for d in dm_draws], list(DRAWS)))
    out.append(check_equal("original.manifest.entries", "prediction-manifest.json",
                           [get_int(e, "draw", "prediction-manifest.json") for e in entries], list(DRAWS)))
    for i, (d, e) in enumerate(zip(dm_draws, entries, strict=False)):
        s = f"draw-{i:02d}"
        out.append(check_equal("original.manifest.dataset_seed", s, [get_int(d, "dataset_seed", "draw-manifest.json"),
                               get_int(e, "dataset_seed", "prediction-manifest.json")], [SEED_BASE + i] * 2))
        out.append(check_equal("original.manifest.paths", s, [get_str(e, "prediction_path", "prediction-manifest.json"),
                               get_str(e, "result_path", "prediction-manifest.json")],
                               [f"predictions/draw-{i:02d}.npy", f"results/draw-{i:02d}.json"]))
        out.append(check_equal("original.manifest.train_test_disjoint", s,
                               get_bool(d, "train_test_disjoint", "draw-manifest.json"), True))
        out += draws.check_draw_record_hashes(i, d, subject=s, where="draw-manifest.json")
    return out


def load_predictions(f: ArchiveFiles, path: str) -> np.ndarray | None:
    """Verified predictions array, or None when the archive does not hold it."""
    if not f.has(path):
        return None
    return np.load(io.BytesIO(f.read(path)), allow_pickle=False)


def check_results(f: ArchiveFiles) -> list[CheckResult]:
    """Per-draw result records (spec 7.1 per-draw list)."""
    p = f.json("protocol.json")
    learner_sha = get(p, ("source_sha256", "learner.py"), str, "protocol.json")
    dm = get_list(f.json("draw-manifest.json"), "draws", "draw-manifest.json")
    val = get_list(f.json("validation.json"), "records", "validation.json")
    selected_initial = get_dict(val[10], "result.metadata.initial_parameter_sha256", "validation.json")
    out: list[CheckResult] = []
    for i in DRAWS:
        w = f"results/draw-{i:02d}.json"
        s = f"draw-{i:02d}"
        r = f.json(w)
        md = get_dict(r, "metadata", w)
        cfg = get_dict(r, "config", w)
        depth = get_int(md, "config.depth", w)
        out += [
            check_config(cfg, subject=w), check_config(get_dict(md, "config", w), subject=f"{w} metadata"),
            check_equal("original.result.learner_sha256", s, get_str(r, "learner_sha256", w), learner_sha),
            check_equal("original.result.input_hashes_agree", s, get_dict(md, "input_hashes", w),
                        get_dict(r, "input_sha256", w), what="metadata input_hashes vs result input_sha256"),
            check_equal("original.result.input_hashes_manifest", s, get_dict(r, "input_sha256", w),
                        get_dict(dm[i], "input_sha256", "draw-manifest.json"), what="result vs draw manifest"),
            check_equal("original.result.parameter_count", s, get_int(md, "parameter_count", w), parameter_count(depth)),
            check_equal("original.result.counts", s, [get_int(md, "train_count", w), get_int(md, "test_count", w)],
                        [10_000, 10_000]),
            check_equal("original.result.fresh_flags", s, [get_bool(md, "fresh_initialization_per_run", w),
                        get_bool(md, "checkpoint_loaded", w), get_int(md, "run_count", w)], [True, False, 1]),
            check_equal("original.result.reversibility", s,
                        [get_bool(md, "reversible_core", w), get_int(md, "retained_core_states", w),
                         get_int(md, "core_saved_bytes_per_example", w), get_bool(md, "input_lift_injective", w)],
                        [True, 1, CORE_BYTES_PER_EXAMPLE, True]),
            check_equal("original.result.initial_equals_selected_candidate", s,
                        get_dict(md, "initial_parameter_sha256", w), selected_initial),
            check_true("original.result.final_differs_from_initial", s,
                       all(get_dict(md, "final_parameter_sha256", w)[k] != v
                           for k, v in get_dict(md, "initial_parameter_sha256", w).items()),
                       "a final parameter hash equals its initial hash: training did not update it"),
            draws.check_epoch_permutations(get_list(md, "epoch_permutation_sha256", w), n=10_000,
                                           seed=get_int(md, "config.seed", w), subject=s),
        ]
        checks = get_list(md, "validation.checks", w)
        out.append(check_true("original.result.cpu_validation", s,
                              get_bool(md, "validation.passed", w) and len(checks) == 4
                              and all(get_bool(c, "passed", w) and get_bool(c, "forward_bitwise_equal", w)
                                      and get_int(c, "saved_activation_storages", w) == 1 for c in checks),
                              "CPU reconstruction self-test did not pass 4 cases"))
        mem = get_dict(r, "memory", w)
        entry, peak = get_int(mem, "allocated_before_prepare_bytes", w), get_int(mem, "prepare_and_invoke_peak_allocated_bytes", w)
        after, reserved = get_int(mem, "allocated_after_invoke_bytes", w), get_int(mem, "reserved_after_invoke_bytes", w)
        out.append(check_true("original.result.memory_order", s, 0 <= entry <= peak and after <= peak and after <= reserved,
                              f"memory ordering broken: entry {entry}, peak {peak}, after {after}, reserved {reserved}",
                              recomputed=peak))
        out.append(check_equal("original.result.energy_only_draw0", s, "energy" in r, i == 0,
                               what="energy record present"))
        preds = load_predictions(f, f"predictions/draw-{i:02d}.npy")
        if preds is None:
            out.append(unavailable("original.result.predictions_sha256", s, "predictions/draw-XX.npy was not "
                                   "retained in this copy; payload hash not recomputed",
                                   recorded=get_str(md, "predictions_sha256", w)))
        else:
            out += accuracy.check_prediction_array(preds, subject=s)
            out.append(check_equal("original.result.predictions_sha256", s, get_str(md, "predictions_sha256", w),
                                   draws.data.array_sha256(preds), what="payload sha of the predictions"))
    return out


def check_accuracy(f: ArchiveFiles) -> list[CheckResult]:
    """accuracy.json, verification.json, submission accuracy: counts, aggregates, confusion matrix."""
    a, w = f.json("accuracy.json"), "accuracy.json"
    rows = get_list(a, "rows", w)
    out: list[CheckResult] = []
    corrects = []
    for i, row in enumerate(rows):
        s = f"draw-{i:02d}"
        c = get_int(row, "correct", w)
        corrects.append(c)
        out.append(check_equal("original.accuracy.row", s, [get_int(row, "draw", w), get_int(row, "dataset_seed", w),
                               get_int(row, "total", w)], [i, SEED_BASE + i, 10_000]))
        out.append(_close("original.accuracy.row.accuracy_percent", s, row.get("accuracy_percent"), c / 100.0))
        out += draws.check_draw_record_hashes(i, row, subject=s, where=w)
        preds = load_predictions(f, f"predictions/draw-{i:02d}.npy")
        if preds is None:
            out.append(unavailable("original.accuracy.rescored", s, "predictions/draw-XX.npy not retained: the "
                                   "count is checked only for consistency, not rescored", recorded=c))
        else:
            got, _ = accuracy.score(preds, draws.data.evaluation_labels(i))
            out.append(check_equal("original.accuracy.rescored", s, c, got, what="correct (rescored)"))
    out += accuracy.check_aggregate(a, corrects, subject=w, where=w)
    sub, ws = f.json("submission.json"), "submission.json"
    out += accuracy.check_aggregate(get_dict(sub, "accuracy", ws), corrects, subject=f"{ws} accuracy", where=ws,
                                    key_map={"accuracy_percent": "mean_percent"})
    results = {i: f.json(f"results/draw-{i:02d}.json") for i in DRAWS}
    for i, row in enumerate(get_list(sub, "accuracy.draws", ws)):
        expect = dict(rows[i]) | {"learner_seed": 11, "cuda_ms_single_run": results[i].get("cuda_ms")}
        out.append(check_equal("original.submission.accuracy_row", f"draw-{i:02d}", row, expect,
                               what="submission row = accuracy row + learner seed + first-run cuda_ms"))
    v, wv = f.json("verification.json"), "verification.json"
    out += accuracy.check_aggregate(v, corrects, subject=wv, where=wv, key_map={"total": "", "error_percent": ""})
    cm = np.asarray(get_list(v, "independent_confusion_matrix", wv), dtype=np.int64)
    labels = np.concatenate([draws.data.evaluation_labels(i) for i in DRAWS])
    out += [
        check_equal("original.verification.confusion_shape", wv, list(cm.shape), [10, 10]),
        check_equal("original.verification.confusion_trace", wv, int(np.trace(cm)), sum(corrects),
                    what="trace = correct"),
        check_equal("original.verification.confusion_row_sums", wv, cm.sum(axis=1).tolist(),
                    np.bincount(labels, minlength=10).tolist(), what="row sums = evaluation label counts per class"),
        check_equal("original.verification.counts", wv, [get_int(v, "draws_verified", wv),
                    get_int(v, "predictions_verified", wv)], [11, accuracy.TOTAL]),
    ]
    return out


def check_selection(f: ArchiveFiles) -> list[CheckResult]:
    """validation-plan.json + validation.json: split hashes, rescoring, the selection rule."""
    plan, wp = f.json("validation-plan.json"), "validation-plan.json"
    val, wv = f.json("validation.json"), "validation.json"
    p = f.json("protocol.json")
    h = draws.selection_hashes()
    out = [
        check_equal("original.selection.dataset_seed", wp, get_int(plan, "dataset_seed", wp), SEED_BASE),
        check_equal("original.selection.train_indices_sha256", wp, get_str(plan, "train_indices_sha256", wp),
                    h["train_indices_sha256"]),
        check_equal("original.selection.validation_indices_sha256", wp,
                    get_str(plan, "validation_indices_sha256", wp), h["validation_indices_sha256"]),
        check_equal("original.selection.learner_sha256", wp, get_str(plan, "learner_sha256", wp),
                    get(p, ("source_sha256", "learner.py"), str, "protocol.json")),
        check_equal("original.selection.complete", wv, get_bool(val, "complete", wv), True),
    ]
    configs = get_list(plan, "configs", wp)
    records = get_list(val, "records", wv)
    out.append(check_equal("original.selection.configs", wv, [get_dict(r, "config", wv) for r in records], configs,
                           what="record configs = plan configs"))
    eligible = []
    for k, r in enumerate(records):
        s = f"candidate-{k:02d}"
        c = get_int(r, "correct", wv)
        md = get_dict(r, "result.metadata", wv)
        out.append(check_equal("original.selection.total", s, get_int(r, "total", wv), draws.SELECTION_VALIDATION_COUNT))
        out.append(_close("original.selection.accuracy_percent", s, r.get("accuracy_percent"), c / 20.0))
        out.append(check_equal("original.selection.result_config", s, get_dict(md, "config", wv), get_dict(r, "config", wv)))
        out.append(check_equal("original.selection.train_labels", s, get_str(md, "input_hashes.train_labels", wv),
                               h["train_labels"], what="selection train label hash"))
        out.append(draws.check_epoch_permutations(get_list(md, "epoch_permutation_sha256", wv),
                                                  n=draws.SELECTION_TRAIN_COUNT, seed=get_int(md, "config.seed", wv),
                                                  subject=s))
        preds = load_predictions(f, f"validation-predictions/candidate-{k:02d}.npy")
        if preds is None:
            out.append(unavailable("original.selection.rescored", s, "validation-predictions/candidate-XX.npy not "
                                   "retained: the validation count is not rescored", recorded=c))
        else:
            out += accuracy.check_prediction_array(preds, subject=s, count=draws.SELECTION_VALIDATION_COUNT)
            got, _ = accuracy.score(preds, draws.selection_validation_labels())
            out.append(check_equal("original.selection.rescored", s, c, got, what="validation correct (rescored)"))
        if c >= SELECTION_THRESHOLD:
            eligible.append((get_int(r, "config.epochs", wv), get_int(r, "config.depth", wv), c, k))
    out.append(unavailable("draws.input_hashes.train_images", "selection split", draws.IMAGE_HASH_REASON))
    chosen = min(eligible)[3] if eligible else None
    out.append(check_equal("original.selection.rule", wv, get_dict(p, "configuration", "protocol.json"),
                           get_dict(records[chosen], "config", wv) if chosen is not None else None,
                           what="eligible = correct >= 1780; min (epochs, depth, correct) -> protocol configuration"))
    return out


def check_energy(f: ArchiveFiles) -> list[CheckResult]:
    """Draw-0 energy (results/draw-00.json) and its copies in submission/verification."""
    w = "results/draw-00.json"
    r = f.json(w)
    e = get_dict(r, "energy", w)
    s = "original draw-00 :4096:8"
    out = energy.check_energy_block(e, subject=s, where=w) + energy.check_hardware(get_dict(e, "hardware", w),
                                                                                  subject=s, where=w)
    md = get_dict(r, "metadata", w)
    keys = get_list(e, "state_hash_keys_checked", w)
    for which in ("before_metadata", "after_metadata"):
        other = get_dict(e, which, w)
        out.append(check_equal(f"original.energy.{which}.state_hashes", s, {k: other.get(k) for k in keys},
                               {k: md.get(k) for k in keys}, what=f"{which} state hashes vs qualification"))
    repeats = get_int(e, "repeats_per_trial", w)
    out.append(check_equal("original.energy.run_count", s, [get_int(e, "before_metadata.run_count", w),
                           get_int(e, "after_metadata.run_count", w)], [2, 2 + 1 + 3 * repeats],
                           what="run_count before / after = 2 / 2 + 1 + 3 × repeats"))
    cv = get_dict(r, "cuda_validation", w)
    out.append(check_true("original.cuda_validation", s, get_bool(cv, "passed", w) and get_int(cv, "checks", w) > 0
                          and get_dict(cv, "tolerance", w) == {"atol": 2e-05, "rtol": 0.003}
                          and [get_int(c, "depth", w) for c in get_list(cv, "cases", w)] == [1, 2]
                          and all(get_list(c, "batch_sizes", w) == [8, 8, 3] for c in get_list(cv, "cases", w)),
                          "CUDA replay validation record incomplete or failed", recomputed=get_int(cv, "checks", w)))
    sub, ws = f.json("submission.json"), "submission.json"
    a100 = get_dict(sub, "a100", ws)
    values = {k: [get(t, k, float, w) for t in get_list(e, "trials", w)] for k in energy.PER_TASK_KEYS}
    adj, cuda = values["idle_adjusted_mj_per_task"], values["cuda_ms_per_task"]
    out += [
        _close("original.submission.a100.energy_mj", ws, a100.get("energy_mj"), statistics.mean(adj)),
        _close("original.submission.a100.energy_sample_sd_mj", ws, a100.get("energy_sample_sd_mj"), statistics.stdev(adj)),
        _close("original.submission.a100.runtime_ms", ws, a100.get("runtime_ms"), statistics.mean(cuda)),
        _close("original.submission.a100.runtime_sample_sd_ms", ws, a100.get("runtime_sample_sd_ms"), statistics.stdev(cuda)),
        check_equal("original.submission.a100.trials", ws, [get_int(a100, "trials", ws),
                    get_int(a100, "fresh_invocations_per_trial", ws)], [3, repeats]),
        check_equal("original.submission.a100.hardware", ws, get_dict(a100, "hardware", ws), get_dict(e, "hardware", w)),
    ]
    out += energy.check_summary_copy(get_dict(a100, "energy_summaries", ws), e, subject=f"{ws} a100", where=ws)
    v, wv = f.json("verification.json"), "verification.json"
    out += [_close("original.verification.energy.mean_idle_adjusted_mj_per_task", wv,
                   get(v, "energy.mean_idle_adjusted_mj_per_task", None, wv), float(np.mean(adj))),
            _close("original.verification.energy.mean_cuda_ms_per_task", wv,
                   get(v, "energy.mean_cuda_ms_per_task", None, wv), float(np.mean(cuda)))]
    return out


def check_submission(f: ArchiveFiles) -> list[CheckResult]:
    """submission.json derived figures: parameters, payloads, memory by draw, selection block."""
    sub, ws = f.json("submission.json"), "submission.json"
    depth = get_int(sub, "configuration.depth", ws)
    n = parameter_count(depth)
    peaks, entries = [], []
    for i in DRAWS:
        mem = get_dict(f.json(f"results/draw-{i:02d}.json"), "memory", f"results/draw-{i:02d}.json")
        peaks.append(mem["prepare_and_invoke_peak_allocated_bytes"])
        entries.append(mem["allocated_before_prepare_bytes"])
    m = get_dict(sub, "memory", ws)
    batch = get_int(sub, "configuration.batch_size", ws)
    added = [p - e for p, e in zip(peaks, entries, strict=True)]
    expect_mem = {
        "measured_peak_allocated_bytes": max(peaks),
        "measured_prepare_and_invoke_peak_bytes_by_draw": peaks,
        "entry_allocated_baseline_bytes_by_draw": entries,
        "added_peak_above_entry_baseline_bytes_by_draw": added,
        "added_peak_above_entry_baseline_bytes_max": max(added),
        "measured_prepare_and_invoke_peak_bytes_min": min(peaks),
        "measured_prepare_and_invoke_peak_bytes_median": int(np.median(peaks)),
        "core_endpoint_bytes_per_example": CORE_BYTES_PER_EXAMPLE,
        "core_endpoint_bytes_at_training_batch": batch * CORE_BYTES_PER_EXAMPLE,
    }
    out = [check_config(get_dict(sub, "configuration", ws), subject=ws),
           check_equal("original.submission.parameter_count", ws, get_int(sub, "parameter_count", ws), n),
           check_equal("original.submission.parameter_payload_bytes", ws, get_int(sub, "parameter_payload_bytes", ws), 4 * n),
           check_equal("original.submission.four_parameter_state_payload_bytes", ws,
                       get_int(sub, "four_parameter_state_payload_bytes", ws), 16 * n),
           check_equal("original.submission.dataset_seeds", ws, get_list(sub, "dataset_seeds", ws),
                       [SEED_BASE + i for i in DRAWS]),
           check_equal("original.submission.required_correct", ws, get_int(sub, "required_correct", ws),
                       accuracy.REQUIRED_CORRECT),
           check_equal("original.submission.qualifies", ws, get_bool(sub, "qualifies", ws),
                       get_int(f.json("accuracy.json"), "correct", "accuracy.json") >= accuracy.REQUIRED_CORRECT)]
    for key, value in expect_mem.items():
        out.append(check_equal(f"original.submission.memory.{key}", ws, get(m, key, None, ws), value))
    val = get_list(f.json("validation.json"), "records", "validation.json")
    sel = get_dict(sub, "selection", ws)
    out.append(check_equal("original.submission.selection", ws,
                           [get_int(sel, k, ws) for k in ("training_examples", "validation_examples", "candidate_count",
                                                          "selected_correct", "selected_total")],
                           [draws.SELECTION_TRAIN_COUNT, draws.SELECTION_VALIDATION_COUNT, len(val),
                            get_int(val[10], "correct", "validation.json"), draws.SELECTION_VALIDATION_COUNT]))
    out.append(check_equal("original.frozen_config", ws, get_dict(sub, "configuration", ws), FROZEN_CONFIG))
    return out
