"""``compare/comparison.json.gz`` and ``validate/validation.json.gz`` recomputed from their records.

Comparison (docs/evidence-format.md, spec 7.3): each config row against its fixture record
and stored files; memory figures re-derived from the record; reductions from the measured
peaks (saved = old − new, percent = 100·saved/old, ratio = new/old); state fields differing
from the ``:4096:8`` record and from the frozen original draw; prediction arrays compared
byte for byte. Validation (spec 7.5): check count, maximum absolute error within the
2e-5 / 3e-3 tolerance, both depths, the CPU self-test, the API/CLI smoke and both refusals.
"""

from __future__ import annotations

import io
import json
import math

import numpy as np

from protocol import data
from protocol.hostrefs import FROZEN_REFERENCE, FROZEN_VALIDATION
from verify.checks import memory
from verify.checks.run_common import compare_fields, frozen_draw_metadata, json_record, stored_sha
from verify.host import frozen_reference
from verify.integrity import ArchiveFiles
from verify.records import get, get_dict, get_float, get_int, get_list, get_str
from verify.result import CheckResult, Status, check_equal, check_true, failed

STATE_HASH_KEYS = ("input_hashes", "initial_parameter_sha256", "epoch_permutation_sha256", "final_parameter_sha256",
                   "final_velocity_sha256", "state_vector_sha256", "predictions_sha256", "scores_sha256")
"""The fixture's fixed state-hash order (spec 3)."""
BASELINE = ":4096:8"
MIB = 1 << 20
VALIDATION_TOLERANCE = {"atol": 2e-5, "rtol": 3e-3}
"""The CUDA replay validation tolerance (spec 7.1: exactly {2e-5, 3e-3})."""


def differing(a: dict, b: dict) -> list[str]:
    """State-hash keys (spec 3 order) whose values differ between two metadata objects."""
    return [k for k in STATE_HASH_KEYS if a.get(k) != b.get(k)]


def _row_memory(rec: dict, where: str) -> dict:
    d = memory.derived_memory(rec, where)
    mem = get_dict(rec, "memory", where)
    return {"peak_allocated_bytes": d["peak_allocated_bytes"], "peak_allocated_mib": d["peak_allocated_mib"],
            "live_allocated_bytes": d["live_allocated_bytes"], "peak_reserved_bytes": d["peak_reserved_bytes"],
            "named_storage_bytes": d["named_storage_bytes"],
            "unnamed_live_allocated_bytes": d["unnamed_live_allocated_bytes"],
            "entry_allocated_bytes": get_int(mem, "allocated_before_prepare_bytes", where),
            "added_peak_over_entry_allocated_bytes": d["peak_allocated_bytes"]
            - get_int(mem, "allocated_before_prepare_bytes", where)}


def frozen_comparison_present(cmp: dict, rel: str) -> CheckResult:
    """A comparison of a qualification draw compared it with the frozen reference, on every device.

    ``draw_index`` an integer means the draw's inputs, whose frozen ``results/draw-XX.json`` exists
    (the writer refuses to start without it): ``frozen_reference`` must be an object and
    ``predictions_bit_equal_to_frozen_reference`` a boolean. ``draw_index: null`` (custom inputs)
    is the writer's "not applicable": both ``null`` then. Their values are recomputed below (GPU
    rows only; a CPU row FAILs ``compare.config.device`` first).
    """
    draw = cmp.get("draw_index")
    block, equal = cmp.get("frozen_reference"), cmp.get("predictions_bit_equal_to_frozen_reference")
    if draw is None:
        return check_true("compare.frozen_reference.present", rel, block is None and equal is None,
                          "draw_index is null (custom inputs, no frozen reference applies) but a frozen comparison "
                          "is recorded", recorded={"frozen_reference": block, "equal": equal})
    missing = [k for k, v in (("frozen_reference", block), ("predictions_bit_equal_to_frozen_reference", equal))
               if not isinstance(v, dict if k == "frozen_reference" else bool)]
    return check_true("compare.frozen_reference.present", rel, not missing,
                      f"{' and '.join(missing)} not recorded for draw {draw}: this compare was not compared with "
                      "the frozen reference; rerun compare where it is found (REV88_ORIGINAL_DIR)",
                      recorded={k: cmp.get(k) for k in missing} or None)


def check_comparison(f: ArchiveFiles) -> list[CheckResult]:
    """Every derived field of ``compare/comparison.json.gz``."""
    rel = "compare/comparison.json.gz"
    cmp = json_record(f, rel)
    if cmp is None:
        return []
    presence = frozen_comparison_present(cmp, rel)
    out: list[CheckResult] = [presence]
    records: dict[str, dict] = {}
    arrays: dict[str, np.ndarray] = {}
    loaded: dict[str, tuple[dict, np.ndarray]] = {}  # every row with its files, --device cpu ones too
    for i, row in enumerate(get_list(cmp, "configs", rel)):
        w = f"{rel}: configs.{i}"
        ws = get_str(row, "workspace", w)
        rec_rel = f"compare/{get_str(row, 'record', w)}"
        pred_rel = f"compare/{get_str(row, 'predictions_file', w)}"
        subject = f"{rel} {ws}"
        rec = json_record(f, rec_rel)
        if rec is None or not f.has(pred_rel):
            out.append(failed("compare.config.files", subject, f"{rec_rel} or {pred_rel} is not in the archive"))
            continue
        loaded[ws] = (rec, np.load(io.BytesIO(f.read(pred_rel)), allow_pickle=False))
        if rec.get("device") == "cpu":
            out.append(failed("compare.config.device", subject, f"{rec_rel} was made with --device cpu (a "
                              "diagnostic without CUDA memory figures): rerun compare on a GPU host"))
            continue
        records[ws], arrays[ws] = loaded[ws]
        md = get_dict(rec, "metadata", rec_rel)
        want = {"record_sha256": stored_sha(f, rec_rel), "predictions_file_sha256": stored_sha(f, pred_rel),
                "gpu": get(rec, "hardware.name", str, rec_rel), "gpu_uuid": get(rec, "hardware.uuid", str, rec_rel),
                "first_invocation_cuda_ms": get(rec, "timing.first_invocation_cuda_ms", float, rec_rel),
                "predictions_sha256": data.array_sha256(arrays[ws]),
                "state_vector_sha256": get_str(md, "state_vector_sha256", rec_rel),
                "scores_sha256": get_str(md, "scores_sha256", rec_rel), "memory": _row_memory(rec, rec_rel)}
        out.append(compare_fields("compare.config", subject, row, want, what="config row vs its record and files"))
        out.append(_peak_verdict(f, rec_rel, want["memory"]["peak_allocated_bytes"], subject))
    out += _frozen_checks(cmp, rel, presence, loaded)
    if BASELINE not in records:
        return out + [failed("compare.baseline", rel, f"no {BASELINE} record: reductions cannot be recomputed")]
    base_peak = memory.derived_memory(records[BASELINE], "baseline")["peak_allocated_bytes"]
    reductions = get_dict(cmp, "reductions_vs_baseline", rel)
    base_md = get_dict(records[BASELINE], "metadata", "baseline")
    diff_base = get_dict(cmp, "state_fields_differing_from_baseline", rel)
    for ws, rec in records.items():
        if ws == BASELINE:
            continue
        peak = memory.derived_memory(rec, ws)["peak_allocated_bytes"]
        saved = base_peak - peak
        out.append(compare_fields("compare.reduction", f"{rel} {ws}", reductions.get(ws),
                                  {"peak_allocated_bytes_saved": saved, "peak_allocated_mib_saved": saved / MIB,
                                   "peak_allocated_reduction_percent": 100.0 * saved / base_peak,
                                   "peak_allocated_ratio_to_baseline": peak / base_peak},
                                  what="reduction vs :4096:8 from measured peaks"))
        out.append(check_equal("compare.state_fields_differing_from_baseline", f"{rel} {ws}", diff_base.get(ws),
                               differing(get_dict(rec, "metadata", ws), base_md), what="state-hash keys differing"))
    first = next(iter(arrays.values()))
    out.append(check_equal("compare.predictions_bit_equal_across_configs", rel,
                           get(cmp, "predictions_bit_equal_across_configs", bool, rel),
                           all(a.dtype == first.dtype and a.shape == first.shape and a.tobytes() == first.tobytes()
                               for a in arrays.values()), what="prediction arrays byte-identical"))
    return out


def _frozen_checks(cmp: dict, rel: str, presence: CheckResult,
                   loaded: dict[str, tuple[dict, np.ndarray]]) -> list[CheckResult]:
    """The comparison with the frozen draw recomputed from every configuration's record and predictions
    (a ``--device cpu`` row too: its predictions are compared like a GPU row's).

    Nothing when the presence check FAILed (nothing recorded to recompute) or for custom inputs
    (``draw_index`` null).

    Raises:
        HostReferenceError: the frozen reference is missing or altered on this host.
    """
    if cmp.get("draw_index") is None or presence.status is not Status.PASS:
        return []
    frozen = frozen_draw_metadata(get_int(cmp, "draw_index", rel))
    if frozen is None:
        return []
    ref = get_str(frozen, "predictions_sha256", "frozen")
    match = {ws: data.array_sha256(a) == ref for ws, (_, a) in loaded.items()}
    return [check_equal("compare.predictions_bit_equal_to_frozen_reference", rel,
                        get(cmp, "predictions_bit_equal_to_frozen_reference", bool, rel),
                        all(match.values()), what="all configs' predictions equal the frozen draw"),
            compare_fields("compare.frozen_reference", rel, get(cmp, "frozen_reference", dict, rel),
                           {"predictions_sha256": ref, "predictions_match": match,
                            "state_fields_differing": {ws: differing(get_dict(r, "metadata", ws), frozen)
                                                       for ws, (r, _) in loaded.items()}},
                           what="comparison with the frozen original draw")]


def _peak_verdict(f: ArchiveFiles, rec_rel: str, peak: int, subject: str) -> CheckResult:
    """The comparison's peak for one workspace: the fixture record's, and every other fresh-process record of
    the same workspace config, board model and software reports the same (``verify.checks.run_fields.peak_groups``)."""
    from verify.checks.run_fields import peak_groups  # noqa: PLC0415

    peers = next((g for g in peak_groups(f).values() if any(r == rec_rel for r, _ in g)), [])
    odd = [r for r, fig in peers if fig["prepare_and_invoke_peak_allocated_bytes"] != peak]
    return check_true("compare.peak_allocated_bytes", subject, not odd,
                      f"peak allocated {peak} B of {rec_rel} differs from {len(odd)} of the {len(peers) - 1} other "
                      f"records of the same workspace config, board and software (first {odd[:1]})",
                      recorded=peak, recomputed=peak)


def original_comparison_checks(v: dict, nv: dict, rel: str) -> list[CheckResult]:
    """``original_comparison`` of ``validation.json.gz``: present, and recomputed from the frozen reference.

    The smoke's inputs are fixed, so the original's ``cache-audit/cuda-validation.json`` always
    applies: anything but an object means validate did not compare with it (FAIL, every device).

    Args:
        v: the validation record.
        nv: its ``numerical_validation``.
        rel: the record's archive path.

    Raises:
        HostReferenceError: the frozen reference is missing or altered on this host.
    """
    oc = v.get("original_comparison")
    present = check_true("validate.original_comparison.present", rel, isinstance(oc, dict),
                         f"original_comparison is {json.dumps(oc)[:80]}, not the comparison with the frozen "
                         "reference's cache-audit/cuda-validation.json: rerun validate where the reference is found "
                         "(REV88_ORIGINAL_DIR)", recorded=oc)
    if not isinstance(oc, dict):
        return [present]
    orig = frozen_reference().json(FROZEN_VALIDATION)
    omd = get_dict(orig, "api_cli_smoke.metadata", "frozen cuda-validation.json")
    md = get_dict(v, "api_cli_smoke.metadata", rel)
    return [present, check_equal(
        "validate.original_comparison", rel, oc,
        {"path": f"{FROZEN_REFERENCE.repo_path}/{FROZEN_VALIDATION}",
         "equal": {k: md.get(k) == omd.get(k) for k in STATE_HASH_KEYS},
         "original_check_count": get_int(orig, "numerical_validation.checks", "frozen"),
         "check_count": get_int(nv, "checks", rel),
         "original_maximum_abs_error": get_float(orig, "numerical_validation.maximum_abs_error", "frozen")},
        what="comparison with the original's validation recomputed from the frozen archive")]


def check_validation(f: ArchiveFiles) -> list[CheckResult]:
    """``validate/validation.json.gz`` against its smoke records (spec 7.5)."""
    rel = "validate/validation.json.gz"
    v = json_record(f, rel)
    if v is None:
        return []
    nv = get_dict(v, "numerical_validation", rel)
    out: list[CheckResult] = original_comparison_checks(v, nv, rel)
    checks = get_int(nv, "checks", rel)
    err = get_float(nv, "maximum_abs_error", rel)
    tol = get_dict(nv, "tolerance", rel)
    cases = get_list(nv, "cases", rel)
    out.append(check_true("validate.check_count", rel, checks > 0, f"check count {checks} is not positive",
                          recomputed=checks))
    out.append(check_equal("validate.tolerance", rel, tol, VALIDATION_TOLERANCE, what="tolerance"))
    out.append(check_true("validate.maximum_abs_error", rel, math.isfinite(err) and 0 <= err <= VALIDATION_TOLERANCE["atol"],
                          f"maximum absolute error {err!r} exceeds atol {VALIDATION_TOLERANCE['atol']}",
                          recomputed=err))
    out.append(check_equal("validate.depths", rel, [get_int(c, "depth", rel) for c in cases], [1, 2], what="depths"))
    out.append(check_true("validate.cases", rel, all(get(c, "passed", bool, rel) and get_list(c, "batch_sizes", rel)
                                                     == [8, 8, 3] and get(c, "complete_replay_byte_repeatable", bool, rel)
                                                     and get_int(c, "saved_core_activation_storages", rel) == 1
                                                     and get_int(c, "saved_core_activation_bytes", rel) == 984
                                                     for c in cases),
                          "a case failed or lacks batch sizes [8, 8, 3], a byte-repeatable replay, 1 storage of 984 B"))
    selftest = get_dict(v, "cpu_reconstruction_selftest", rel)
    st_cases = get_list(selftest, "cases", rel)
    out.append(check_true("validate.cpu_selftest", rel, len(st_cases) == 4 and all(
        get(c, "passed", bool, rel) and get(c, "forward_bitwise_equal", bool, rel) for c in st_cases),
        "the CPU reconstruction self-test needs 4 passing, bitwise-equal cases (spec 2.10)", recomputed=len(st_cases)))
    smoke = get_dict(v, "api_cli_smoke", rel)
    out += _check_smoke(f, smoke, rel)
    worker = json_record(f, "validate/smoke/worker.json.gz")
    if worker is not None:
        out.append(check_equal("validate.worker", rel, nv, get_dict(worker, "numerical_validation", "worker"),
                               what="numerical validation vs the worker's record"))
    parts = [get(nv, "passed", bool, rel), get(selftest, "passed", bool, rel), get(smoke, "passed", bool, rel)]
    out.append(check_equal("validate.passed", rel, get(v, "passed", bool, rel),
                           all(parts) and all(r.status.value == "PASS" for r in out), what="passed"))
    return out


def _check_smoke(f: ArchiveFiles, smoke: dict, rel: str) -> list[CheckResult]:
    out: list[CheckResult] = []
    refusals = get_dict(smoke, "refusals", rel)
    for key, stored in (("query_label_archive", "validate/smoke/refusal-test-labels.json.gz"),
                        ("late_cuda_initialization", "validate/smoke/refusal-late-cuda.json.gz")):
        r = get_dict(refusals, key, rel)
        needle = get_str(r, "expected_message", rel)
        out.append(check_true(f"validate.refusal.{key}", rel, get_int(r, "exit_code", rel) != 0
                              and needle in get_str(r, "stderr_tail", rel) and get(r, "rejected", bool, rel),
                              f"refusal {key}: exit code {r.get('exit_code')!r}, message {needle!r} "
                              f"{'found' if needle in str(r.get('stderr_tail')) else 'absent'}"))
        out.append(check_equal(f"validate.refusal.{key}.record", stored, json_record(f, stored), r,
                               what="stored refusal record vs validation.json"))
    cli_rel = "validate/smoke/cli.json.gz"
    cli = json_record(f, cli_rel)
    worker = json_record(f, "validate/smoke/worker.json.gz")
    if cli is None or worker is None:
        return out + [failed("validate.smoke.records", rel, "validate/smoke/cli.json.gz or worker.json.gz is absent")]
    out.append(check_equal("validate.smoke.cli_record_sha256", rel, get_str(smoke, "cli_record_sha256", rel),
                           stored_sha(f, cli_rel), what="cli_record_sha256 vs the stored CLI record"))
    pred_rel = f"validate/smoke/{get_str(cli, 'predictions_file', cli_rel)}"
    cli_pred = np.load(io.BytesIO(f.read(pred_rel)), allow_pickle=False) if f.has(pred_rel) else None
    api = get_dict(worker, "api", "worker")
    api_md, cli_md = get_dict(api, "metadata", "worker"), get_dict(cli, "metadata", cli_rel)
    want = {"train_examples": get_int(api_md, "train_count", "worker"),
            "query_examples": get_int(api_md, "test_count", "worker"),
            "predictions_equal": cli_pred is not None and cli_pred.tolist() == get_list(api, "predictions", "worker"),
            "final_parameters_equal": api_md.get("final_parameter_sha256") == cli_md.get("final_parameter_sha256"),
            "final_velocity_equal": api_md.get("final_velocity_sha256") == cli_md.get("final_velocity_sha256"),
            "state_vector_equal": api_md.get("state_vector_sha256") == cli_md.get("state_vector_sha256"),
            "scores_equal": api_md.get("scores_sha256") == cli_md.get("scores_sha256"),
            "repeated_api_replay_byte_equal": get(api, "repeated_api_replay_byte_equal", bool, "worker"),
            "query_label_archive_rejected": get(refusals, "query_label_archive.rejected", bool, rel),
            "late_cuda_initialization_rejected": get(refusals, "late_cuda_initialization.rejected", bool, rel)}
    out.append(compare_fields("validate.smoke", rel, smoke, want, what="API/CLI smoke vs the worker and CLI records"))
    out.append(check_equal("validate.smoke.all_equal", rel, get(smoke, "passed", bool, rel),
                           all(v for k, v in want.items() if isinstance(v, bool)), what="smoke passed"))
    return out


def check_compare_validate(f: ArchiveFiles) -> list[CheckResult]:
    """Family entry: comparison and validation."""
    return check_comparison(f) + check_validation(f)
