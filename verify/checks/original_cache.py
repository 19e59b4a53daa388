"""Checks of the original archive's cache audit (``evidence/rev88-original/cache-audit``).

Fixture records (3 workspace comparisons, 11 ``:16:8`` qualification runs): workspace,
configuration, inputs, memory invariants and inventory, energy from raw stamps, state
fields compared with the original draws; ``summary.json`` and ``submission.json`` derived
figures (memory summaries, energy summaries, reductions, per-sequence DRAM/L2 from metric
rows) recomputed. Profile records, ``.ncu-rep`` reports and predictions were not retained:
UNAVAILABLE.
"""

from __future__ import annotations

import numpy as np

from verify.checks import FLOAT_ABS_TOL, FLOAT_REL_TOL, energy, memory, profile
from verify.checks.consistency import WORKSPACES, check_config, check_same
from verify.checks.original import DRAWS, STATE_KEYS
from verify.integrity import ArchiveFiles
from verify.original_layout import PROFILES
from verify.records import get, get_dict, get_int, get_list, get_str
from verify.result import CheckResult, check_close, check_equal, failed, passed, unavailable

A100_L2_BYTES = 41_943_040


def _records(f: ArchiveFiles) -> dict[str, tuple[str, dict]]:
    names = [*WORKSPACES, *(f"qualify-{i:02d}" for i in DRAWS)]
    return {n: (f"cache-audit/{n}.json", f.json(f"cache-audit/{n}.json")) for n in names}


def _close(cid: str, subject: str, recorded: object, value: float) -> CheckResult:
    return check_close(cid, subject, recorded, value, rel_tol=FLOAT_REL_TOL, abs_tol=FLOAT_ABS_TOL)


def check_fixture_records(f: ArchiveFiles) -> list[CheckResult]:
    """Each cache-audit fixture record: workspace, config, inputs, memory, inventory, energy."""
    out: list[CheckResult] = []
    dm = get_list(f.json("draw-manifest.json"), "draws", "draw-manifest.json")
    software = []
    for name, (w, rec) in _records(f).items():
        draw = int(name.split("-")[1]) if name.startswith("qualify-") else 0
        workspace = WORKSPACES.get(name, ":16:8")
        s = f"cache {name} {workspace}"
        res = get_dict(rec, "result", w)
        out += [
            check_equal("original.cache.workspace", s, [get_str(rec, "workspace", w),
                        get_str(res, "cublas_workspace_config", w)], [workspace, workspace]),
            check_equal("original.cache.returncode", s, get_int(rec, "returncode", w), 0),
            check_config(get_dict(res, "config", w), subject=w),
            check_equal("original.cache.input_sha256", s, get_dict(rec, "input_sha256", w),
                        get_dict(dm[draw], "input_sha256", "draw-manifest.json")),
            check_equal("original.cache.test_labels_read", s, get(res, "test_labels_read", bool, w), False),
        ]
        mem = get_dict(res, "memory", w)
        out += memory.check_fixture_memory(mem, subject=s, where=w)
        out += memory.check_inventory(get_dict(res, "buffer_inventory", w),
                                      get_int(mem, "allocated_after_invoke_bytes", w), subject=s, where=w)
        if name in WORKSPACES:
            e = get_dict(res, "energy", w)
            out += energy.check_energy_block(e, subject=s, where=w)
            out += energy.check_hardware(get_dict(e, "hardware", w), subject=s, where=w)
        software.append((name, get_dict(res, "software", w)))
    out.append(check_same("consistency.software", software, what="software"))
    return out


def check_summary(f: ArchiveFiles) -> list[CheckResult]:
    """summary.json: per-record copies, state comparison, reductions, profiles."""
    sm, ws = f.json("cache-audit/summary.json"), "cache-audit/summary.json"
    pm = get_list(f.json("prediction-manifest.json"), "entries", "prediction-manifest.json")
    recs = _records(f)
    out: list[CheckResult] = []
    entries = {f"qualify-{i:02d}": (get_dict(d, "", ws), i) for i, d in enumerate(get_list(sm, "qualification.draws", ws))}
    entries |= {n: (get_dict(sm, ("comparisons", n), ws), 0) for n in WORKSPACES}
    all_equal_count = 0
    for name, (entry, draw) in entries.items():
        w, rec = recs[name]
        s = f"summary {name}"
        res = get_dict(rec, "result", w)
        original_md = get_dict(f.json(f"results/draw-{draw:02d}.json"), "metadata", f"results/draw-{draw:02d}.json")
        md = get_dict(res, "metadata", w)
        differing = [k for k in STATE_KEYS if md.get(k) != original_md.get(k)]
        all_equal_count += not differing
        out += [
            check_equal("original.cache.summary.state_fields_differing", s,
                        get_list(entry, "state_fields_differing_from_original", ws), differing,
                        what="state fields differing from the original draw (recomputed from both records)"),
            check_equal("original.cache.summary.predictions_bit_equal", s, get(entry, "predictions_bit_equal", bool, ws),
                        md.get("predictions_sha256") == original_md.get("predictions_sha256")),
            check_equal("original.cache.summary.prediction_sha256", s, get_str(entry, "prediction_sha256", ws),
                        get_str(pm[draw], "prediction_sha256", "prediction-manifest.json"),
                        what="prediction file sha vs the original draw's"),
            check_equal("original.cache.summary.workspace", s, get_str(entry, "workspace", ws),
                        get_str(rec, "workspace", w)),
            *check_cache_predictions(f, entry, md, subject=s, where=ws, draw=draw),
        ]
        out += memory.check_memory_summary(get_dict(entry, "memory", ws), res, subject=s, where=ws, record_where=w)
        if name in WORKSPACES:
            out += energy.check_summary_copy(get_dict(entry, "energy.summary", ws), get_dict(res, "energy", w),
                                             subject=s, where=ws)
            out.append(check_equal("original.cache.summary.energy_hardware", s, get_dict(entry, "energy.hardware", ws),
                                   get_dict(res, "energy.hardware", w)))
    out.append(check_equal("original.cache.summary.draws_with_all_state_hashes_bit_equal", ws,
                           get_int(sm, "qualification.draws_with_all_state_hashes_bit_equal", ws),
                           sum(1 for n in entries if n.startswith("qualify-") and not [
                               k for k in STATE_KEYS if get_dict(recs[n][1], "result.metadata", n).get(k) !=
                               get_dict(f.json(f"results/draw-{int(n[-2:]):02d}.json"), "metadata", n).get(k)])))
    out.append(check_equal("original.cache.summary.predictions_bit_equal", ws,
                           get_int(sm, "qualification.predictions_bit_equal", ws),
                           sum(get_int(recs[f"qualify-{i:02d}"][1], "result.metadata.test_count", ws) for i in DRAWS
                               if get(recs[f"qualify-{i:02d}"][1], "result.metadata.predictions_sha256", str, ws)
                               == get_str(get_dict(f.json(f"results/draw-{i:02d}.json"), "metadata", ws),
                                          "predictions_sha256", ws)),
                           what="predictions of the 11 qualification runs equal to the original draws' (sum of their "
                                "query counts)"))
    base = get_int(get_dict(recs["baseline"][1], "result.memory", "baseline"), "prepare_and_invoke_peak_allocated_bytes", ws)
    base_energy = energy.summarise([get(t, "idle_adjusted_mj_per_task", float, ws) for t in
                                    get_list(recs["baseline"][1], "result.energy.trials", ws)])["mean"]
    for name in ("small-workspace", "zero-workspace"):
        res = get_dict(recs[name][1], "result", name)
        red = memory.reductions(base, get_int(res, "memory.prepare_and_invoke_peak_allocated_bytes", name))
        red["idle_adjusted_energy_ratio_to_baseline"] = energy.summarise(
            [get(t, "idle_adjusted_mj_per_task", float, name) for t in get_list(res, "energy.trials", name)]
        )["mean"] / base_energy
        recorded = get_dict(sm, ("reductions", name), ws)
        for key, value in red.items():
            cid = f"memory.reduction.{key}" if key.startswith("peak") else f"energy.reduction.{key}"
            out.append(check_equal(cid, f"summary {name}", get(recorded, key, None, ws), value) if isinstance(value, int)
                       else _close(cid, f"summary {name}", get(recorded, key, None, ws), value))
    for name in PROFILES:
        out += check_profile_entry(f, name, get_dict(sm, ("profiles", name), ws), ws)
    return out


def check_profile_entry(f: ArchiveFiles, name: str, entry: dict, ws: str) -> list[CheckResult]:
    """One profile of summary.json: per-sequence figures from the metric rows, attributes, passes."""
    scope = get_str(entry, "scope", ws)
    s = f"{name} {get_str(entry, 'workspace', ws)}"
    prof = get_dict(entry, "profile", ws)
    sequences = profile.SEQUENCES_IN_RANGE[scope]
    attrs = get_dict(entry, "profile_device_attributes", ws)
    out = [
        check_equal("profile.sequences_in_range", s, [get_int(prof, "fresh_training_sequences_in_range", ws),
                    get_int(entry, "range_training_sequences", ws)], [sequences, sequences]),
        check_equal("profile.pass_counts", s, get_list(entry, "pass_counts", ws),
                    [int(get_str(attrs, "profiler__replayer_passes", ws))]),
        check_equal("profile.l2_cache_size", s, int(get_str(attrs, "device__attribute_l2_cache_size", ws)), A100_L2_BYTES),
        check_equal("profile.command", s, _command_ok(get_list(entry, "command", ws)), True,
                    what="app-range, cache-control none, clock-control none; no --graph-profiling/--profile-from-start"),
    ]
    out += profile.check_profile_figures(entry, scope=scope, subject=s, where=ws)
    out.append(check_raw_record(f, name, entry, subject=s, where=ws))
    out.append(check_original_report(f, f"cache-audit/{get_str(entry, 'ncu_report_path', ws)}", entry, subject=s,
                                     where=ws))
    return out


def check_raw_record(f: ArchiveFiles, name: str, entry: dict, *, subject: str, where: str) -> CheckResult:
    """The profile's raw-output record ``cache-audit/<profile>.json.gz``: its metric rows, passes and
    attributes equal the summary's when the file is present (integrity checked its sha256)."""
    rel = f"cache-audit/{name}.json.gz"
    if not f.has(rel):
        return unavailable("profile.raw_record", subject, "the ncu raw-output record (profile-*.json.gz) was not "
                           "retained; metric rows taken from summary.json", recorded=get_str(entry, "result_sha256", where))
    import gzip  # noqa: PLC0415

    from verify.records import parse_json  # noqa: PLC0415

    rec = parse_json(gzip.decompress(f.read(rel)), rel)
    keys = ("metric_rows", "pass_counts", "profile_device_attributes")
    return check_equal("profile.raw_record", subject, {k: rec.get(k) if isinstance(rec, dict) else None for k in keys},
                       {k: entry.get(k) for k in keys}, what="raw record vs the summary's metric rows")


def check_original_report(f: ArchiveFiles, rel: str, entry: dict, *, subject: str, where: str) -> CheckResult:
    """The profile's ``.ncu-rep.gz`` re-read with ``ncu_report`` and compared with the summary's metric rows.

    UNAVAILABLE when the archive does not hold the file (the shipped copy does not) or
    ``ncu_report`` is not importable.
    """
    recorded = get_str(entry, "ncu_report_sha256", where)
    if not f.has(rel):
        return profile.check_ncu_report(subject, False, recorded)
    from protocol import ncu as counters  # noqa: PLC0415
    from protocol.errors import BundleError  # noqa: PLC0415
    from verify.arith import counters as arith_counters  # noqa: PLC0415

    module, reason = counters.import_ncu_report()
    if module is None:
        return unavailable("profile.ncu_report", subject, f"ncu_report is not importable ({reason}); the report's "
                           "metrics were not re-read", recorded=recorded)
    import gzip  # noqa: PLC0415
    import tempfile  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    rows = counters.CounterRows(
        metrics={k: counters.CounterRow(k, float(get(v, "value", float, where)), get_str(v, "raw_value", where),
                                        get_str(v, "raw_unit", where), get_str(v, "range_id", where))
                 for k, v in get_dict(entry, "metric_rows", where).items()},
        device_attributes=dict(get_dict(entry, "profile_device_attributes", where)), attribute_units={},
        range_id="0", range_name="range")
    with tempfile.TemporaryDirectory(prefix="rev88-ncu-") as tmp:
        target = Path(tmp) / Path(rel).name[: -len(".gz")]
        target.write_bytes(gzip.decompress(f.read(rel)))
        try:
            values = counters.read_report_values(module, target)
            metrics = arith_counters.report_agreement(rows, values)
        except BundleError as exc:
            return failed("profile.ncu_report", subject, str(exc))
    return passed("profile.ncu_report", subject, recomputed=metrics, tolerance="integers exact; floats half a printed digit",
                  reason=f"{len(metrics)} values of the .ncu-rep equal the summary's metric rows")


def check_cache_predictions(f: ArchiveFiles, entry: dict, md: dict, *, subject: str, where: str,
                            draw: int) -> list[CheckResult]:
    """The cache audit's prediction file: its own copy when retained, else the restored draw file with the
    same recorded sha256 (``predictions/draw-XX.npy``, pinned by the prediction manifest).

    The bytes' sha256 must equal the summary's ``prediction_sha256`` and their payload hash the
    record's ``predictions_sha256``; UNAVAILABLE when neither file is present.
    """
    import hashlib  # noqa: PLC0415

    from verify.checks import accuracy, draws  # noqa: PLC0415
    from verify.checks.original import load_predictions  # noqa: PLC0415

    recorded = get_str(entry, "prediction_sha256", where)
    own = f"cache-audit/{get_str(entry, 'prediction_path', where)}"
    restored = get_str(get_list(f.json("prediction-manifest.json"), "entries", "prediction-manifest.json")[draw],
                       "prediction_path", "prediction-manifest.json")
    path = own if f.has(own) else restored if f.has(restored) else None
    if path is None:
        return [unavailable("original.cache.predictions_file", f"{subject} ({own})",
                            "the cache audit's prediction file was not retained in this copy of the original, and no "
                            "file with its recorded sha256 is present: its bytes cannot be checked", recorded=recorded)]
    arr = load_predictions(f, path)
    return [check_equal("original.cache.predictions_file", f"{subject} ({path})", recorded,
                        hashlib.sha256(f.read(path)).hexdigest(), what=f"file sha256 of {path}"),
            *accuracy.check_prediction_array(arr, subject=f"{subject} ({path})"),
            check_equal("original.cache.predictions_payload", f"{subject} ({path})",
                        get_str(md, "predictions_sha256", where), draws.data.array_sha256(arr),
                        what="the record's predictions_sha256 vs the file's payload")]


def _command_ok(cmd: list) -> bool:
    text = " ".join(str(c) for c in cmd)
    return ("--replay-mode app-range" in text and "--cache-control none" in text and "--clock-control none" in text
            and "--graph-profiling" not in text and "--profile-from-start" not in text)


def check_cache_submission(f: ArchiveFiles) -> list[CheckResult]:
    """cache-audit/submission.json equals the recomputed small-workspace figures and profiles."""
    sub, w = f.json("cache-audit/submission.json"), "cache-audit/submission.json"
    sm = f.json("cache-audit/summary.json")
    small = get_dict(f.json("cache-audit/small-workspace.json"), "result", "small-workspace.json")
    out = memory.check_memory_summary(get_dict(sub, "memory", w), small, subject=f"{w} memory", where=w,
                                      record_where="cache-audit/small-workspace.json")
    trials = get_list(small, "energy.trials", "small-workspace.json")
    adj = energy.summarise([get(t, "idle_adjusted_mj_per_task", float, w) for t in trials])
    cuda = energy.summarise([get(t, "cuda_ms_per_task", float, w) for t in trials])
    out += [_close("original.cache.submission.a100.energy_mj", w, get(sub, "a100.energy_mj", None, w), adj["mean"]),
            _close("original.cache.submission.a100.energy_sample_sd_mj", w, get(sub, "a100.energy_sample_sd_mj", None, w),
                   adj["sample_sd"]),
            _close("original.cache.submission.a100.runtime_ms", w, get(sub, "a100.runtime_ms", None, w), cuda["mean"]),
            check_equal("original.cache.submission.workspace", w, get_str(sub, "cublas_workspace_config", w), ":16:8"),
            check_config(get_dict(sub, "configuration", w), subject=w)]
    from verify.checks import accuracy  # noqa: PLC0415

    corrects = [get_int(r, "correct", "accuracy.json") for r in get_list(f.json("accuracy.json"), "rows", "accuracy.json")]
    out += accuracy.check_aggregate(get_dict(sub, "accuracy", w), corrects, subject=f"{w} accuracy", where=w)
    for scope in ("task", "training"):
        entry = get_dict(sm, ("profiles", f"profile-small-{scope}"), "cache-audit/summary.json")
        out += profile.check_profile_figures(get_dict(sub, f"warm_profile.{scope}", w) | {
            "metric_rows": get_dict(entry, "metric_rows", w)}, scope=scope, subject=f"{w} warm_profile.{scope}", where=w)
    return out


def check_peaks_match_runs(f: ArchiveFiles) -> list[CheckResult]:
    """All 11 :16:8 qualification runs share one peak (spec 9.4)."""
    peaks = [(n, get_int(r, "result.memory.prepare_and_invoke_peak_allocated_bytes", w))
             for n, (w, r) in _records(f).items() if n.startswith("qualify-")]
    return [check_same("consistency.cache.qualify_peaks", peaks, what="peak allocated bytes"),
            check_equal("consistency.cache.qualify_peak_vs_small", "cache-audit",
                        int(np.unique([p for _, p in peaks])[0]),
                        get_int(_records(f)["small-workspace"][1], "result.memory.prepare_and_invoke_peak_allocated_bytes",
                                "small-workspace"))]
