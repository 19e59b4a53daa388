"""The one catalog of the verifier's checks: every check id ``rev88 verify`` can emit, declared once.

Each :class:`Check` names one id (or a pattern such as ``energy.summary.{key}.mean`` whose
fields are enumerated, so the catalog expands to concrete ids), its family (the id's first
dotted part), what the check compares, with what tolerance and why, what it recomputes and
from which files (the summary line of the check function that emits it), where that function
lives, and the basis of the comparison:

* ``recomputed``: the recorded value is compared with one the verifier derives itself (from raw
  stamps, metric rows, prediction files, the raw MNIST files, or the frozen protocol constants);
* ``attested``: the value is the writer's statement; the check confirms its agreement with the other
  records (or the other fields of the same record) that state it, not the figure itself;
* ``condition``: a property (an order, a bound, a form, a count) of recorded or recomputed values;
* ``guard``: a FAIL or UNAVAILABLE that reports a missing or malformed input or an error while
  checking one record, not a comparison.

``docs/checks.md`` is generated from this module (``python -m verify.catalog --markdown``);
``rev88 verify --list-checks`` lists the ids and ``rev88 verify --check ID`` prints one entry.
Tests fail when the document is stale, when a verdict carries an id that is not here, and when an
entry's id (or its pattern's literal prefix) appears nowhere in ``verify/``.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import dataclass

RECOMPUTED, ATTESTED, CONDITION, GUARD = "recomputed", "attested", "condition", "guard"
BASES = (RECOMPUTED, ATTESTED, CONDITION, GUARD)

EXACT = "exact"
FLOAT = "rel 1e-12, abs 1e-9"
REL = "rel 1e-12, abs 0"
FIELDS = "rel 1e-12 per float (verify.checks.run_common.same_value)"
COND = "none (a condition)"
NONE = "none (not a comparison)"

TOLERANCE_WHY: dict[str, str] = {
    EXACT: "hashes, counts, flags, strings and integer figures have one right value",
    FLOAT: "the same arithmetic in another summation order (statistics vs numpy, another libm) differs in the last "
           "bits; 1e-12 relative admits that and nothing larger, 1e-9 absolute covers values near zero",
    FIELDS: "each float of the object is recomputed with the writer's formula from raw fields; 1e-12 relative only "
            "admits a different libm, every other value is compared exactly",
    REL: "a metric value is the raw cell times a power-of-ten unit factor; 1e-12 relative admits only the float "
         "product's rounding, and no absolute margin is needed because zero is exact",
    COND: "the check tests a property (an order, a bound, a form), not a recomputed figure",
    NONE: "the verdict reports an input that is absent or malformed, or the value a PASS establishes",
}
"""Why each tolerance is what it is (keyed by :attr:`Check.tolerance`)."""

FAMILY_NAMES = ("run.fixtures", "run.qualify", "run.compare_validate", "run.energy", "run.consistency", "run.profile",
                "run.nvml", "run.fields", "run.timing", "run.placement", "run.resumed", "original.protocol",
                "original.manifests", "original.results", "original.selection", "original.accuracy", "original.energy",
                "original.submission", "original.cache.records", "original.cache.summary", "original.cache.submission",
                "original.cache.consistency", "original.fields")
"""The family names of :func:`verify.registry.run_families` and :func:`verify.registry.original_families`."""

PER_TASK_KEYS = ("idle_adjusted_mj_per_task", "unadjusted_mj_per_task", "cuda_ms_per_task", "wall_ms_per_task")
RATIO_KEYS = ("idle_adjusted_mj_per_task", "unadjusted_mj_per_task", "cuda_ms_per_task")
LAUNCH_KEYS = ("kernel_tool", "kernel_source_sha256", "triton_version", "cupy", "train_programs", "train_num_warps",
               "product_precision", "split_update", "cluster_update", "train_threads", "rows_per_program", "exchange")
METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors_op_read.sum", "lts__t_sectors_op_write.sum",
           "lts__t_sector_hit_rate.pct")
PER_SEQUENCE_KEYS = ("dram_read_bytes_per_sequence", "dram_write_bytes_per_sequence", "dram_total_bytes_per_sequence",
                     "l2_read_request_bytes_per_sequence", "l2_write_request_bytes_per_sequence",
                     "l2_sector_hit_rate_percent")
DESIGN_CHECKS = ("fields", "order", "record", "record_sha256", "position", "trial_settings", "energy_config", "same_gpu",
                 "trial", "executed_order")


@dataclass(frozen=True, slots=True)
class Check:
    """One catalog entry.

    Attributes:
        id: the check id, or a pattern with ``{field}`` placeholders (``energy.summary.{key}.mean``).
        basis: ``recomputed``, ``attested``, ``condition`` or ``guard`` (module docstring).
        tolerance: one of the keys of :data:`TOLERANCE_WHY`.
        compares: what the verdict compares (or the condition, or what a FAIL says).
        recomputes: what the emitting check recomputes and from which files (its function's summary).
        where: ``module.function`` of the emitting code under ``verify/``.
        values: for a pattern, ``(field, allowed values)`` pairs; the product gives the concrete ids.
    """

    id: str
    basis: str
    tolerance: str
    compares: str
    recomputes: str
    where: str
    values: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def family(self) -> str:
        """The id's first dotted part (``energy``, ``original``, ``{family}`` for the runner's own)."""
        return "runner" if self.id.startswith("{family}") else self.id.split(".", 1)[0]

    @property
    def why(self) -> str:
        """Why the tolerance is what it is."""
        return TOLERANCE_WHY[self.tolerance]

    def ids(self) -> tuple[str, ...]:
        """The concrete ids: the id itself, or every combination of the pattern's values."""
        if not self.values:
            return (self.id,)
        names = [n for n, _ in self.values]
        return tuple(self.id.format(**dict(zip(names, combo, strict=True)))
                     for combo in itertools.product(*(v for _, v in self.values)))


def _c(check_id: str, basis: str, tolerance: str, compares: str, recomputes: str, where: str,
       **values: tuple[str, ...]) -> Check:
    return Check(check_id, basis, tolerance, compares, recomputes, where, tuple(values.items()))


_PATTERNS: tuple[Check, ...] = (
    _c("{family}", GUARD, NONE, "UNAVAILABLE: not evaluated because integrity failed (no record or label is read)",
       "The runner: each family runs only after integrity passed.", "registry.run_checks", family=FAMILY_NAMES),
    _c("{family}.error", GUARD, NONE, "FAIL: the family raised on malformed evidence or an unexpected error; the other "
       "families still run", "The runner: an exception in one family becomes one FAIL line.", "registry.run_checks",
       family=FAMILY_NAMES),
    _c("accuracy.aggregate.{key}", RECOMPUTED, EXACT, "the recorded aggregate key equals the aggregate of the per-draw "
       "correct counts (integers and flags exact; accuracy_percent, sample_sd_pp, error_percent within rel 1e-12, abs 1e-9)",
       "Compare a recorded aggregate block with :func:`aggregate` of the per-draw counts.", "checks/accuracy.check_aggregate",
       key=("correct", "total", "accuracy_percent", "sample_sd_pp", "error_percent", "meets_12_percent_error_target")),
    _c("draws.{key}", RECOMPUTED, EXACT, "the recorded hash equals the one recomputed from the raw MNIST files and the "
       "draw's seed", "Index, label and (when reproducible) image hashes of one draw.", "checks/draws.check_draw_record_hashes",
       key=("train_indices_sha256", "test_indices_sha256", "test_labels_sha256")),
    _c("draws.input_hashes.{key}", RECOMPUTED, EXACT, "the recorded image hash equals the exact resize recomputed from the "
       "raw MNIST files (UNAVAILABLE where only the writer's resize can give the bytes)",
       "Index, label and (when reproducible) image hashes of one draw.", "checks/draws.check_draw_record_hashes",
       key=("train_images", "test_images")),
    _c("energy.trial.{key}", RECOMPUTED, FLOAT, "the trial's per-task figure recomputed from its six NVML stamps, repeats "
       "and CUDA time", "All checks of one trial: intervals, ordering, and the four per-task figures.", "checks/energy.check_trial",
       key=("idle_adjusted_mj_per_task", "unadjusted_mj_per_task", "wall_ms_per_task", "paired_idle_w")),
    _c("energy.summary.{key}.values", RECOMPUTED, EXACT, "summary values equal the trials' values, in order",
       "Check an energy object (spec 5 output keys): calibration, trials, summary.", "checks/energy.check_energy_block", key=PER_TASK_KEYS),
    _c("energy.summary.{key}.mean", RECOMPUTED, FLOAT, "summary mean recomputed from the trials' values",
       "Check an energy object (spec 5 output keys): calibration, trials, summary.", "checks/energy.check_energy_block", key=PER_TASK_KEYS),
    _c("energy.summary.{key}.sample_sd", RECOMPUTED, FLOAT, "summary sample SD (ddof 1) recomputed from the trials' values",
       "Check an energy object (spec 5 output keys): calibration, trials, summary.", "checks/energy.check_energy_block", key=PER_TASK_KEYS),
    _c("energy.summary_copy.{key}.mean", RECOMPUTED, FLOAT, "a copied summary's mean equals the one recomputed from the "
       "trials", "A summary copied elsewhere (e.g. the original's summary.json) equals the recomputed one.",
       "checks/energy.check_summary_copy", key=PER_TASK_KEYS),
    _c("energy.summary_copy.{key}.sample_sd", RECOMPUTED, FLOAT, "a copied summary's sample SD equals the one recomputed "
       "from the trials", "A summary copied elsewhere (e.g. the original's summary.json) equals the recomputed one.",
       "checks/energy.check_summary_copy", key=PER_TASK_KEYS),
    _c("energy.{flag}", ATTESTED, EXACT, "the record states the flag true (repeats gave equal predictions / state hashes)",
       "An energy object's repeat flags (spec 5 output keys; a fixture record's energy against its protocol).", "checks/energy.check_energy_block, checks/run_energy.check_record_energy",
       flag=("repeat_predictions_equal", "repeat_state_hashes_equal")),
    _c("energy.{protocol}.{check}", RECOMPUTED, EXACT, "one part of a design summary (interleaved workspaces or learners) "
       "against its trial records: fields, (round, arm) order, named record present and its sha256, position, trial "
       "settings, energy config, same GPU, trial row (rel 1e-12 per float), executed order",
       "The checks an interleaved-style design summary gets (``interleaved*.json.gz``, ``learners.json.gz``).", "checks/run_energy._check_design (fields: checks/run_fields.check_energy_fields)",
       protocol=("interleaved", "learners"), check=DESIGN_CHECKS),
    _c("energy.{protocol}.summary.{key}", RECOMPUTED, FIELDS, "an arm's summary (mean, SD, interval) recomputed from its "
       "trials' per-task values", "The checks an interleaved-style design summary gets (``interleaved*.json.gz``, ``learners.json.gz``).",
       "checks/run_energy._check_design", protocol=("interleaved", "learners"), key=PER_TASK_KEYS),
    _c("energy.{protocol}.ratio.{key}", RECOMPUTED, FIELDS, "an arm's ratio to the baseline with its Fieller interval, "
       "recomputed from both arms' trial values", "The checks an interleaved-style design summary gets (``interleaved*.json.gz``, ``learners.json.gz``).",
       "checks/run_energy._check_design", protocol=("interleaved", "learners"), key=RATIO_KEYS),
    _c("energy.original_protocol.summary.{key}", RECOMPUTED, FIELDS, "the original-protocol summary recomputed from "
       "original.json.gz's raw stamps", "``energy/original-summary.json.gz`` recomputed from ``original.json.gz``'s raw "
       "stamps.", "checks/run_energy.check_original_summary", key=PER_TASK_KEYS),
    _c("energy.learners.{key}", ATTESTED, COND, "every rev88-fused record names one value of the launch key",
       "Every ``rev88-fused`` record of the archive: one kernel tool, source, compiler and launch shape.", "checks/run_energy.check_fused_blocks",
       key=LAUNCH_KEYS),
    _c("energy.learners.{key}.form", CONDITION, COND, "the launch count is a positive integer in every rev88-fused record",
       "Every ``rev88-fused`` record of the archive: one kernel tool, source, compiler and launch shape.", "checks/run_energy.check_fused_blocks",
       key=("train_programs", "train_num_warps")),
    _c("energy.reduction.{key}", RECOMPUTED, FLOAT, "a workspace's energy ratio to the baseline recomputed from both "
       "records' trials", "summary.json: per-record copies, state comparison, reductions, profiles.",
       "checks/original_cache.check_summary", key=("idle_adjusted_energy_ratio_to_baseline",)),
    _c("memory.reduction.{key}", RECOMPUTED, EXACT, "a workspace's peak reduction against the baseline's (bytes exact; "
       "percent and ratio within rel 1e-12, abs 1e-9)", "summary.json: per-record copies, state comparison, reductions, profiles.", "checks/original_cache.check_summary",
       key=("peak_allocated_bytes_saved", "peak_allocated_reduction_percent", "peak_allocated_ratio_to_baseline")),
    _c("memory.summary.{key}", RECOMPUTED, EXACT, "a memory summary field derived from the record (integers exact, floats "
       "within rel 1e-12, abs 1e-9)", "A memory summary (the original's summary.json ``memory``) equals the fields "
       "derived from the record.", "checks/memory.check_memory_summary",
       key=("live_allocated_bytes", "named_storage_bytes", "nominal_l2_reference_bytes",
            "peak_allocated_below_nominal_l2_capacity", "peak_allocated_bytes", "peak_allocated_mib",
            "peak_reserved_bytes", "unnamed_live_allocated_bytes")),
    _c("original.energy.{which}.state_hashes", ATTESTED, EXACT, "the energy record's state hashes before/after equal the "
       "qualification metadata's", "Draw-0 energy (results/draw-00.json) and its copies in submission/verification.", "checks/original.check_energy",
       which=("before_metadata", "after_metadata")),
    _c("original.submission.memory.{key}", RECOMPUTED, EXACT, "the submission's memory figure recomputed from the "
       "per-draw records", "submission.json derived figures: parameters, payloads, memory by draw, selection block.", "checks/original.check_submission",
       key=("added_peak_above_entry_baseline_bytes_by_draw", "added_peak_above_entry_baseline_bytes_max",
            "core_endpoint_bytes_at_training_batch", "core_endpoint_bytes_per_example",
            "entry_allocated_baseline_bytes_by_draw", "measured_peak_allocated_bytes",
            "measured_prepare_and_invoke_peak_bytes_by_draw", "measured_prepare_and_invoke_peak_bytes_median",
            "measured_prepare_and_invoke_peak_bytes_min")),
    _c("profile.metric.{name}", RECOMPUTED, REL, "the metric row's value recomputed as raw_value × unit",
       "Recompute the per-sequence figures of a profile record from its metric rows.",
       "checks/profile.check_profile_figures", name=METRICS),
    _c("profile.{key}", RECOMPUTED, FLOAT, "the per-sequence figure recomputed from the five scaled metric totals and "
       "the range's sequence count", "Recompute the per-sequence figures of a profile record from its metric rows.",
       "checks/profile.check_profile_figures", key=PER_SEQUENCE_KEYS),
    _c("validate.refusal.{key}", CONDITION, COND, "the smoke refusal exited non-zero with the expected message and was "
       "rejected", "The validate phase's smoke record: its two refusals, each also stored as its own record.", "checks/run_compare._check_smoke",
       key=("query_label_archive", "late_cuda_initialization")),
    _c("validate.refusal.{key}.record", RECOMPUTED, EXACT, "the stored refusal record equals the smoke record's copy",
       "The validate phase's smoke record: its two refusals, each also stored as its own record.", "checks/run_compare._check_smoke",
       key=("query_label_archive", "late_cuda_initialization")),
)

_ENTRIES: tuple[Check, ...] = (
    _c("accuracy.aggregate.error", GUARD, NONE,
       "FAIL when the record is malformed or checking it raises",
       "``qualify/accuracy.json.gz`` against the rescored draws: aggregate, draws, rows, confusion.",
       "checks/run_qualify.check_accuracy_record"),
    _c("accuracy.decision", CONDITION, COND,
       "condition `agg[\"correct\"] >= REQUIRED_CORRECT`; FAIL: {agg['correct']} correct < required "
       "{REQUIRED_CORRECT}: does not qualify",
       "Compare a recorded aggregate block with :func:`aggregate` of the per-draw counts.",
       "checks/accuracy.check_aggregate"),
    _c("accuracy.draw.confusion", RECOMPUTED, NONE,
       "PASS carrying the draw's 10x10 confusion matrix, scored from its stored predictions and evaluation "
       "labels after every hash matched (the accuracy record's matrices are compared with it)",
       "Draw *i*'s stored predictions scored against its evaluation labels.",
       "checks/run_qualify._rescore"),
    _c("accuracy.draw.correct", RECOMPUTED, NONE,
       "PASS: rescored against the evaluation labels after every hash matched",
       "Draw *i*'s stored predictions scored against its evaluation labels.",
       "checks/run_qualify._rescore"),
    _c("accuracy.draw.error", GUARD, NONE,
       "FAIL when the record is malformed or checking it raises",
       "qualify/: each draw's record and predictions, all 11 rescored; aggregate vs accuracy.json.gz.",
       "checks/run_qualify.check_qualify"),
    _c("accuracy.draw.present", GUARD, NONE,
       "FAIL: {path} missing: all 11 draws are required",
       "qualify/: each draw's record and predictions, all 11 rescored; aggregate vs accuracy.json.gz.",
       "checks/run_qualify.check_qualify"),
    _c("accuracy.draw.record", GUARD, NONE,
       "FAIL: {rel} missing",
       "Draw *i*'s record: identity fields and its prediction file against the frozen reference.",
       "checks/run_qualify._check_draw_record"),
    _c("accuracy.draw_count", RECOMPUTED, EXACT,
       "draws aggregated: recorded equals `DRAW_COUNT`",
       "Compare a recorded aggregate block with :func:`aggregate` of the per-draw counts.",
       "checks/accuracy.check_aggregate"),
    _c("accuracy.predictions_array", CONDITION, COND,
       "condition `bool(ok)`; FAIL: predictions must be int64 ({count},) in 0..9, got {arr.dtype} "
       "{arr.shape}",
       "Predictions are int64 (count,) with values 0…9.",
       "checks/accuracy.check_prediction_array"),
    _c("accuracy.record", GUARD, NONE,
       "FAIL: accuracy record absent",
       "qualify/: each draw's record and predictions, all 11 rescored; aggregate vs accuracy.json.gz.",
       "checks/run_qualify.check_qualify"),
    _c("accuracy.record.complete_protocol", RECOMPUTED, EXACT,
       "field `complete_protocol` equals `True`",
       "``qualify/accuracy.json.gz`` against the rescored draws: aggregate, draws, rows, confusion.",
       "checks/run_qualify.check_accuracy_record"),
    _c("accuracy.record.confusion_matrix", RECOMPUTED, EXACT,
       "field `confusion_matrix` equals `np.sum(np.asarray(confusions, dtype=np.int64), axis=0).tolist()`",
       "``qualify/accuracy.json.gz`` against the rescored draws: aggregate, draws, rows, confusion.",
       "checks/run_qualify.check_accuracy_record"),
    _c("accuracy.record.draws", RECOMPUTED, EXACT,
       "field `draws` equals `list(range(data.DRAW_COUNT))`",
       "``qualify/accuracy.json.gz`` against the rescored draws: aggregate, draws, rows, confusion.",
       "checks/run_qualify.check_accuracy_record"),
    _c("accuracy.record.frozen_comparison", RECOMPUTED, EXACT,
       "comparison with the frozen accuracy.json recomputed: recorded equals `{\"rows\": want_rows, \"correct\": "
       "total, \"frozen_correct\": frozen_total, \"correct_equal\": total == frozen_total}`",
       "Draw records: the fresh-process block, top-level copies of the metadata hashes, the frozen "
       "comparison.",
       "checks/run_fields.check_qualify_fields"),
    _c("accuracy.record.required_correct", RECOMPUTED, EXACT,
       "field `required_correct` equals `accuracy.REQUIRED_CORRECT`",
       "``qualify/accuracy.json.gz`` against the rescored draws: aggregate, draws, rows, confusion.",
       "checks/run_qualify.check_accuracy_record"),
    _c("accuracy.record.schema_version", RECOMPUTED, EXACT,
       "`get_int(acc, \"schema_version\", acc_rel)` equals `1`",
       "Draw records: the fresh-process block, top-level copies of the metadata hashes, the frozen "
       "comparison.",
       "checks/run_fields.check_qualify_fields"),
    _c("accuracy.row.accuracy_percent", RECOMPUTED, FLOAT,
       "accuracy_percent: recorded close to `100.0 * corrects[i] / data.TEST_COUNT`",
       "``qualify/accuracy.json.gz`` against the rescored draws: aggregate, draws, rows, confusion.",
       "checks/run_qualify.check_accuracy_record"),
    _c("accuracy.row.confusion_matrix", RECOMPUTED, EXACT,
       "field `confusion_matrix` equals `confusions[i]`",
       "``qualify/accuracy.json.gz`` against the rescored draws: aggregate, draws, rows, confusion.",
       "checks/run_qualify.check_accuracy_record"),
    _c("accuracy.row.correct", RECOMPUTED, EXACT,
       "field `correct` equals `corrects[i]`",
       "``qualify/accuracy.json.gz`` against the rescored draws: aggregate, draws, rows, confusion.",
       "checks/run_qualify.check_accuracy_record"),
    _c("accuracy.row.dataset_seed", RECOMPUTED, EXACT,
       "field `dataset_seed` equals `data.dataset_seed(i)`",
       "``qualify/accuracy.json.gz`` against the rescored draws: aggregate, draws, rows, confusion.",
       "checks/run_qualify.check_accuracy_record"),
    _c("accuracy.row.draw", RECOMPUTED, EXACT,
       "field `draw` equals `i`",
       "``qualify/accuracy.json.gz`` against the rescored draws: aggregate, draws, rows, confusion.",
       "checks/run_qualify.check_accuracy_record"),
    _c("accuracy.row.test_labels_sha256", RECOMPUTED, EXACT,
       "field `test_labels_sha256` equals `draws.draw_hashes(i)[\"test_labels_sha256\"]`",
       "``qualify/accuracy.json.gz`` against the rescored draws: aggregate, draws, rows, confusion.",
       "checks/run_qualify.check_accuracy_record"),
    _c("accuracy.row.total", RECOMPUTED, EXACT,
       "field `total` equals `data.TEST_COUNT`",
       "``qualify/accuracy.json.gz`` against the rescored draws: aggregate, draws, rows, confusion.",
       "checks/run_qualify.check_accuracy_record"),
    _c("accuracy.rows", RECOMPUTED, EXACT,
       "number of rows: recorded equals `data.DRAW_COUNT`",
       "``qualify/accuracy.json.gz`` against the rescored draws: aggregate, draws, rows, confusion.",
       "checks/run_qualify.check_accuracy_record"),
    _c("accuracy.rows.correct", RECOMPUTED, EXACT,
       "rows' correct: recorded equals `corrects`",
       "``qualify/accuracy.json.gz`` against the rescored draws: aggregate, draws, rows, confusion.",
       "checks/run_qualify.check_accuracy_record"),
    _c("compare.baseline", GUARD, NONE,
       "FAIL: no {BASELINE} record: reductions cannot be recomputed",
       "Every derived field of ``compare/comparison.json.gz``.",
       "checks/run_compare.check_comparison"),
    _c("compare.config", RECOMPUTED, FIELDS,
       "config row vs its record and files",
       "Every derived field of ``compare/comparison.json.gz``.",
       "checks/run_compare.check_comparison"),
    _c("compare.config.device", GUARD, NONE,
       "FAIL: {rec_rel} was made with --device cpu (a diagnostic without CUDA memory figures): rerun compare "
       "on a GPU host",
       "Every derived field of ``compare/comparison.json.gz``.",
       "checks/run_compare.check_comparison"),
    _c("compare.config.files", GUARD, NONE,
       "FAIL: {rec_rel} or {pred_rel} is not in the archive",
       "Every derived field of ``compare/comparison.json.gz``.",
       "checks/run_compare.check_comparison"),
    _c("compare.config_row", ATTESTED, EXACT,
       "role and record sha: recorded equals `[_ROLES.get(row.get(\"workspace\")), stored_sha(f, rec_rel)]`",
       "The comparison's memory audits (recomputed from the record's memory checks) and its own fields.",
       "checks/run_fields.check_comparison_fields"),
    _c("compare.fields", ATTESTED, EXACT,
       "comparison fields vs its records: recorded equals `{\"schema_version\": 1, \"memory_audit_passed\": "
       "all(audits), \"baseline\": \":4096:8\", \"frozen_reference_path\": f...`",
       "The comparison's memory audits (recomputed from the record's memory checks) and its own fields.",
       "checks/run_fields.check_comparison_fields"),
    _c("compare.frozen_reference", RECOMPUTED, FIELDS,
       "comparison with the frozen original draw",
       "The comparison with the frozen draw recomputed from every configuration's record and predictions (a "
       "``--device cpu`` row too: its predictions are compared like a GPU row's).",
       "checks/run_compare._frozen_checks"),
    _c("compare.frozen_reference.present", CONDITION, COND,
       "condition `not missing`; FAIL: {' and '.join(missing)} not recorded for draw {draw}: this compare "
       "was not compared with the frozen reference; rerun compare where it is found (REV88_ORIGINAL_DIR)",
       "A comparison of a qualification draw compared it with the frozen reference, on every device.",
       "checks/run_compare.frozen_comparison_present"),
    _c("compare.memory_audit", RECOMPUTED, EXACT,
       "memory audit recomputed from the record's allocator and inventory figures: recorded equals `audit`",
       "The comparison's memory audits (recomputed from the record's memory checks) and its own fields.",
       "checks/run_fields.check_comparison_fields"),
    _c("compare.peak_allocated_bytes", CONDITION, COND,
       "condition `not odd`; FAIL: peak allocated {peak} B of {rec_rel} differs from {len(odd)} of the "
       "{len(peers) - 1} other records of the same workspace config, board and software (first {odd[:1]})",
       "The comparison's peak for one workspace: the fixture record's, and every other fresh-process record "
       "of the same workspace config, board model and software reports the same "
       "(``verify.checks.run_fields.peak_groups``).",
       "checks/run_compare._peak_verdict"),
    _c("compare.predictions_bit_equal_across_configs", RECOMPUTED, EXACT,
       "prediction arrays byte-identical: recorded equals `all(a.dtype == first.dtype and a.shape == "
       "first.shape and a.tobytes() == first.tobytes() for a in arrays.va...`",
       "Every derived field of ``compare/comparison.json.gz``.",
       "checks/run_compare.check_comparison"),
    _c("compare.predictions_bit_equal_to_frozen_reference", RECOMPUTED, EXACT,
       "all configs' predictions equal the frozen draw: recorded equals `all(match.values())`",
       "The comparison with the frozen draw recomputed from every configuration's record and predictions (a "
       "``--device cpu`` row too: its predictions are compared like a GPU row's).",
       "checks/run_compare._frozen_checks"),
    _c("compare.reduction", RECOMPUTED, FIELDS,
       "reduction vs :4096:8 from measured peaks",
       "Every derived field of ``compare/comparison.json.gz``.",
       "checks/run_compare.check_comparison"),
    _c("compare.state_fields_differing_from_baseline", ATTESTED, EXACT,
       "state-hash keys differing: recorded equals `differing(get_dict(rec, \"metadata\", ws), base_md)`",
       "Every derived field of ``compare/comparison.json.gz``.",
       "checks/run_compare.check_comparison"),
    _c("consistency.cache.qualify_peak_vs_small", ATTESTED, EXACT,
       "`int(np.unique([p for _, p in peaks])[0])` equals `get_int(_records(f)[\"small-workspace\"][1], "
       "\"result.memory.prepare_and_invoke_peak_allocated_bytes\", \"small-workspace\")`",
       "All 11 :16:8 qualification runs share one peak (spec 9.4).",
       "checks/original_cache.check_peaks_match_runs"),
    _c("consistency.cache.qualify_peaks", ATTESTED, EXACT,
       "every record carries the same value",
       "All 11 :16:8 qualification runs share one peak (spec 9.4).",
       "checks/original_cache.check_peaks_match_runs"),
    _c("consistency.config", RECOMPUTED, EXACT,
       "configuration: recorded equals `ref`",
       "A recorded configuration equals the frozen one (as a mapping).",
       "checks/consistency.check_config, checks/run_consistency.check_configs"),
    _c("consistency.config_file", RECOMPUTED, EXACT,
       "config.json sha256 vs the frozen config in protocol order: recorded equals `config_sha`",
       "The frozen configuration in every record, its metadata, and each ``config.json``.",
       "checks/run_consistency.check_configs"),
    _c("consistency.config_file_sha256", RECOMPUTED, EXACT,
       "every fixture and qualification record's config_file_sha256 equals the sha256 of the frozen config "
       "written in protocol order; UNAVAILABLE when no record states one",
       "The frozen configuration in every record, its metadata, and each ``config.json``.",
       "checks/run_consistency.check_configs"),
    _c("consistency.cpu", CONDITION, COND,
       "a record's cpu block names a non-empty CPU model and positive integer torch thread counts "
       "(bundle.hostinfo.cpu_record_problems); a null hardware.cpu FAILs",
       "Where a record says it ran: the pinned-image claim, the image marker, the CPU block.",
       "checks/run_host.(module)"),
    _c("consistency.dropped_files", RECOMPUTED, EXACT,
       "dropped input archives vs the inputs the phases' records name: recorded equals `want`",
       "One input archive per phase: every record of a phase names the same ``input_archive_sha256``, and "
       "the environment's ``dropped_files`` lists exactly the phases' inputs with those sha256.",
       "checks/run_fields.check_input_archives"),
    _c("consistency.dropped_input", RECOMPUTED, EXACT,
       "the input .npz rebuilt from the raw MNIST files has the recorded sha256 (FAILs only where this host "
       "writes .npz bytes with the run's numpy and Python)",
       "Input archives rebuilt from the raw MNIST files have the sha256 every record states.",
       "checks/run_consistency.check_inputs"),
    _c("consistency.dropped_input.size", RECOMPUTED, EXACT,
       "size of the dropped input .npz rebuilt from the raw files: recorded equals `len(blob)`",
       "environment.json.gz: each execution's host Python and schema; dropped inputs' sizes rebuilt.",
       "checks/run_fields.check_environment_fields"),
    _c("consistency.environment", GUARD, NONE,
       "FAIL: environment.json.gz absent: the run does not state where it happened",
       "The honest environment statement, and every record's device/software against an execution.",
       "checks/run_consistency.check_environment"),
    _c("consistency.environment.cuda_device", GUARD, NONE,
       "FAIL: phases {cuda_phases} ran without a CUDA device (a `--device cpu` diagnostic): not protocol "
       "evidence; rerun them on a GPU host (qualification on the CPU is a protocol run)",
       "The honest environment statement, and every record's device/software against an execution.",
       "checks/run_consistency.check_environment"),
    _c("consistency.environment.host_python", ATTESTED, EXACT,
       "a native run's host Python is the jobs' Python: recorded equals `get_str(sw, \"python\", w)`",
       "environment.json.gz: each execution's host Python and schema; dropped inputs' sizes rebuilt.",
       "checks/run_fields.check_environment_fields"),
    _c("consistency.environment.phases", CONDITION, COND,
       "condition `sorted(set(phases_listed)) == present and once_per_board`; FAIL: executions list phases "
       "{sorted(phases_listed)} but the archive holds {present}: each phase must be stated once (once per "
       "board for a phase spread over boards)",
       "The honest environment statement, and every record's device/software against an execution.",
       "checks/run_consistency.check_environment"),
    _c("consistency.environment.schema_version", RECOMPUTED, EXACT,
       "`env.get(\"schema_version\")` equals `1`",
       "environment.json.gz: each execution's host Python and schema; dropped inputs' sizes rebuilt.",
       "checks/run_fields.check_environment_fields"),
    _c("consistency.environment.statement", CONDITION, COND,
       "condition `honest`; FAIL: engine {engine}, pinned_image {pinned}, software {software}, statement "
       "{statement}: only a container with the image's marker and the pinned stack may claim the pinned "
       "image, and th...",
       "The honest environment statement, and every record's device/software against an execution.",
       "checks/run_consistency.check_environment"),
    _c("consistency.execution", CONDITION, COND,
       "condition `len(match) == 1`; FAIL: device {uuid} driver {driver} torch {sw.get('torch')} matches no "
       "execution of {rel} listing phase {phase}",
       "The honest environment statement, and every record's device/software against an execution.",
       "checks/run_consistency._check_execution, checks/run_consistency.check_environment, checks/run_consistency.check_in_process_qualify"),
    _c("consistency.execution.host_python", ATTESTED, EXACT,
       "host Python of a native job vs its software record: recorded equals `get(rec, "
       "f\"{prefix}software.python\", str, rel)`",
       "A native record's ``execution.host_python`` is its own Python (the job assembled the record itself).",
       "checks/run_fields.check_execution_hosts"),
    _c("consistency.execution_record", RECOMPUTED, FIELDS,
       "the record's execution",
       "One record's device and software against the executions of environment.json.gz.",
       "checks/run_consistency._check_execution"),
    _c("consistency.image_id", CONDITION, COND,
       "an execution's recorded image_id is sha256:<64 hex>",
       "Where a record says it ran: the pinned-image claim, the image marker, the CPU block.",
       "checks/run_host.(module)"),
    _c("consistency.image_marker", CONDITION, COND,
       "an execution that claims the pinned image or records an image marker has a well-formed marker, ran "
       "under docker with the pinned software, and the marker's torch and numpy equal the software's",
       "Where a record says it ran: the pinned-image claim, the image marker, the CPU block.",
       "checks/run_host.(module)"),
    _c("consistency.image_marker.lock_sha256", RECOMPUTED, EXACT,
       "the image marker's lock_sha256 equals the sha256 of the GPU image's lock file on this host "
       "(UNAVAILABLE where that file cannot be found)",
       "Where a record says it ran: the pinned-image claim, the image marker, the CPU block.",
       "checks/run_host.(module)"),
    _c("consistency.in_process_qualify", GUARD, NONE,
       "FAIL when the record is malformed or checking it raises",
       "In-process qualification records: frozen config, workspace (``:16:8`` on CUDA), and the torch "
       "version and device of the one execution that lists ``qualify``.",
       "checks/run_consistency.check_in_process_qualify"),
    _c("consistency.input_archive_sha256", GUARD, NONE,
       "FAIL when the record is malformed or checking it raises",
       "Input archives rebuilt from the raw MNIST files have the sha256 every record states.",
       "checks/run_consistency.check_inputs"),
    _c("consistency.input_archive_sha256.phase", ATTESTED, EXACT,
       "every record of one group (the same computation) carries the same value",
       "One input archive per phase: every record of a phase names the same ``input_archive_sha256``, and "
       "the environment's ``dropped_files`` lists exactly the phases' inputs with those sha256.",
       "checks/run_fields.check_input_archives"),
    _c("consistency.predictions_covered", GUARD, NONE,
       "FAIL: no record of the archive names this prediction file, so it was not compared with a frozen "
       "reference",
       "The smoke's predictions vs the original's smoke; every stored ``.npy`` belongs to a checked record.",
       "checks/run_consistency.check_prediction_coverage"),
    _c("consistency.software", ATTESTED, EXACT,
       "every record carries the same value",
       "Each cache-audit fixture record: workspace, config, inputs, memory, inventory, energy.",
       "checks/original_cache.check_fixture_records, checks/run.check_fixtures"),
    _c("consistency.workspace_requested", RECOMPUTED, EXACT,
       "validation worker workspace: recorded equals `get_str(val, \"workspace\", \"validation\")`",
       "Each fixture record's ``cublas_workspace_config`` equals the one its phase requested.",
       "checks/run_consistency.check_in_process_qualify, checks/run_consistency.check_workspaces"),
    _c("data.raw_file", GUARD, NONE,
       "UNAVAILABLE: raw file absent ({path}): run `rev88 data fetch`",
       "The raw MNIST files on disk have the sha256 and md5 the record states (and the bundle pins).",
       "checks/draws.check_raw_sources"),
    _c("data.raw_file.bundle_pin", RECOMPUTED, EXACT,
       "sha256 recorded vs protocol.data pin: recorded equals `pin.sha256`",
       "The raw MNIST files on disk have the sha256 and md5 the record states (and the bundle pins).",
       "checks/draws.check_raw_sources"),
    _c("data.raw_file.md5", RECOMPUTED, EXACT,
       "md5 of {path}: recorded equals `hashlib.md5(blob, usedforsecurity=False).hexdigest()`",
       "The raw MNIST files on disk have the sha256 and md5 the record states (and the bundle pins).",
       "checks/draws.check_raw_sources"),
    _c("data.raw_file.sha256", RECOMPUTED, EXACT,
       "sha256 of {path}: recorded equals `hashlib.sha256(blob).hexdigest()`",
       "The raw MNIST files on disk have the sha256 and md5 the record states (and the bundle pins).",
       "checks/draws.check_raw_sources"),
    _c("device.board_facts", RECOMPUTED, EXACT,
       "device attributes vs what a {name} reports: recorded equals `facts`",
       "ncu's device attributes (name, total memory, L2, SMs, memory clock) describe one known board.",
       "checks/fields.check_board_attributes, checks/fields.check_board_hardware"),
    _c("device.record_fields", ATTESTED, EXACT,
       "the record's gpu, device index and device vs its hardware block: recorded equals `[get_str(hw, "
       "\"name\", rel), get_int(hw, \"device_index\", rel), \"cuda\"]`",
       "One set of facts per board across the archive; the facts a board of that name reports; energy vs "
       "fixture.",
       "checks/run_fields.check_hardware"),
    _c("device.same_board", ATTESTED, EXACT,
       "every record of one group (the same computation) carries the same value",
       "One set of facts per board across the archive; the facts a board of that name reports; energy vs "
       "fixture.",
       "checks/run_fields.check_hardware"),
    _c("draws.epoch_permutation_sha256", RECOMPUTED, EXACT,
       "epoch permutations (N={n}): recorded equals `list(epoch_permutation_hashes(n, len(recorded), seed))`",
       "Recorded ``epoch_permutation_sha256`` equals the recomputed list.",
       "checks/draws.check_epoch_permutations"),
    _c("draws.frozen_predictions_sha256", RECOMPUTED, EXACT,
       "predictions vs {label}: recorded equals `data.array_sha256(arr)`",
       "One stored prediction array: dtype/shape/range, payload sha vs metadata, file sha, frozen reference.",
       "checks/run.check_prediction_file"),
    _c("draws.identified", GUARD, NONE,
       "FAIL: the record's train-label hash matches no qualification draw: its predictions cannot be "
       "compared with a frozen reference",
       "Checks of our own run archives (``evidence/<run-id>/`` with ``manifest.json``).",
       "checks/run._check_predictions"),
    _c("draws.input_hashes.train_labels", RECOMPUTED, EXACT,
       "train_labels sha (int64): recorded equals `h[\"train_labels\"]`",
       "Index, label and (when reproducible) image hashes of one draw.",
       "checks/draws.check_draw_record_hashes"),
    _c("energy.between_boards", RECOMPUTED, FIELDS,
       "between-board spread from the per-board designs",
       "``energy/between-boards.json.gz`` recomputed from the per-board summaries (``bundle.phases.energy "
       ".between_boards``'s arithmetic); designs on distinct boards; absent with one design, required with "
       "more.",
       "checks/run_energy.check_between_boards"),
    _c("energy.hardware.fixture", ATTESTED, EXACT,
       "energy hardware block vs the fixture's hardware block: recorded equals `{\"gpu\": hw.get(\"name\"), "
       "\"uuid\": hw.get(\"uuid\"), \"total_memory_bytes\": hw.get(\"total_memory_bytes\"), \"power_...`",
       "One set of facts per board across the archive; the facts a board of that name reports; energy vs "
       "fixture.",
       "checks/run_fields.check_hardware"),
    _c("energy.hardware.pci_identity", CONDITION, COND,
       "condition `same`; FAIL: CUDA PCI id {cuda_id} and NVML PCI id {nvml_id} name different devices",
       "NVML handle chosen by the CUDA device's PCI bus id; memory recorded.",
       "checks/energy.check_hardware"),
    _c("energy.hardware.total_memory_bytes", CONDITION, COND,
       "condition `get_int(hardware, \"total_memory_bytes\", where) > 0`; FAIL: total_memory_bytes is not "
       "positive",
       "NVML handle chosen by the CUDA device's PCI bus id; memory recorded.",
       "checks/energy.check_hardware"),
    _c("energy.hardware.uuid", ATTESTED, EXACT,
       "NVML handle uuid vs the fixture's device: recorded equals `get(rec, \"hardware.uuid\", str, where)`",
       "The ``energy`` object of one fixture record, against the protocol its settings name.",
       "checks/run_energy.check_record_energy, checks/run_fields.check_energy_fields"),
    _c("energy.interval.aligned", CONDITION, COND,
       "condition `min(polls) >= 2`; FAIL: align_stamps is set but a stamp took {min(polls)} poll(s): it was "
       "not taken at a counter update edge",
       "The ``energy`` object of one fixture record, against the protocol its settings name.",
       "checks/run_energy.check_record_energy"),
    _c("energy.interval.average_power_w", RECOMPUTED, FLOAT,
       "average_power_w: recorded close to `energy_j / duration`",
       "Recompute one interval (``duration_s``, ``energy_j``, ``average_power_w``) from its two stamps.",
       "checks/energy.check_interval"),
    _c("energy.interval.duration_s", RECOMPUTED, FLOAT,
       "duration_s: recorded close to `duration`",
       "Recompute one interval (``duration_s``, ``energy_j``, ``average_power_w``) from its two stamps.",
       "checks/energy.check_interval"),
    _c("energy.interval.energy_j", RECOMPUTED, FLOAT,
       "energy_j: recorded close to `energy_j`",
       "Recompute one interval (``duration_s``, ``energy_j``, ``average_power_w``) from its two stamps.",
       "checks/energy.check_interval"),
    _c("energy.interval.idle_length", CONDITION, COND,
       "condition `duration >= min_idle_s`; FAIL: idle window {duration} s is shorter than {min_idle_s} s",
       "Recompute one interval (``duration_s``, ``energy_j``, ``average_power_w``) from its two stamps.",
       "checks/energy.check_interval"),
    _c("energy.interval.order", CONDITION, COND,
       "condition `duration > 0 and energy_j >= 0`; FAIL: stamps not increasing: duration {duration} s, "
       "energy {energy_j} J",
       "Recompute one interval (``duration_s``, ``energy_j``, ``average_power_w``) from its two stamps.",
       "checks/energy.check_interval"),
    _c("energy.interval.settle_seconds", RECOMPUTED, EXACT,
       "settle_seconds: recorded equals `settle_s`",
       "Recompute one interval (``duration_s``, ``energy_j``, ``average_power_w``) from its two stamps.",
       "checks/energy.check_interval"),
    _c("energy.learners.arms", RECOMPUTED, EXACT,
       "the arms in design order, each with its records' learner block: recorded equals `want`",
       "``energy/learners.json.gz`` as an interleaved summary is checked (order of its (learner, workspace) "
       "arms, records, per-trial figures, summaries and ratios against ``rev88 :16:8``), and each trial's "
       "learner: the record...",
       "checks/run_energy.check_learners"),
    _c("energy.learners.cuda_buffers", CONDITION, COND,
       "condition `not bad`; FAIL: the CUDA tool's buffers disagree with its launch fields: {'; '.join(bad)}",
       "Every ``rev88-fused`` record of the archive (qualify, energy, profile; run whether or not the "
       "archive holds the learners design):",
       "checks/run_energy.check_fused_blocks"),
    _c("energy.learners.cuda_shape", CONDITION, COND,
       "condition `not bad`; FAIL: a CUDA-tool record's launch fields disagree with bundle.fused_cuda: {'; "
       "'.join(bad[:3])}",
       "Every ``rev88-fused`` record of the archive (qualify, energy, profile; run whether or not the "
       "archive holds the learners design):",
       "checks/run_energy.check_fused_blocks"),
    _c("energy.learners.energy_metadata", RECOMPUTED, EXACT,
       "energy.{which}.learner (taken around the trial's invocations) and metadata.learner, whole: recorded "
       "equals `meta or None`",
       "Every ``rev88-fused`` record of the archive (qualify, energy, profile; run whether or not the "
       "archive holds the learners design):",
       "checks/run_energy.check_fused_blocks"),
    _c("energy.learners.interpreter", RECOMPUTED, EXACT,
       "Triton's interpreter runs the kernels on the CPU only: recorded equals `device == \"cpu\"`",
       "Every ``rev88-fused`` record of the archive (qualify, energy, profile; run whether or not the "
       "archive holds the learners design):",
       "checks/run_energy.check_fused_blocks"),
    _c("energy.learners.inventory_shape", RECOMPUTED, EXACT,
       "the CUDA tool's buffers (partials, published, barrier_count; no Triton work or state_map) in the "
       "inventory: recorded equals `sorted(CUDA_BUFFERS)`",
       "Every ``rev88-fused`` record of the archive (qualify, energy, profile; run whether or not the "
       "archive holds the learners design):",
       "checks/run_energy.check_fused_blocks"),
    _c("energy.learners.kernel_source", RECOMPUTED, EXACT,
       "the archived CUDA kernel source hashes to the kernel_source_sha256 every CUDA-tool record names and "
       "its layout block parses (UNAVAILABLE for an archive made before archives stored the source, whose "
       "hash has a legacy layout in the verifier)",
       "``energy.learners.kernel_source``: the archive's copy of the CUDA kernel source its records ran.",
       "checks/run_energy.check_kernel_source"),
    _c("energy.learners.kernel_source_sha256.form", CONDITION, COND,
       "condition `all(isinstance(v, str) and HEX64.fullmatch(v) for v in shas)`; FAIL: a "
       "kernel_source_sha256 is not 64 lowercase hex digits",
       "Every ``rev88-fused`` record of the archive (qualify, energy, profile; run whether or not the "
       "archive holds the learners design):",
       "checks/run_energy.check_fused_blocks"),
    _c("energy.learners.kernel_tool.form", CONDITION, COND,
       "condition `not bad`; FAIL: a kernel_tool is not one of {', '.join(KERNEL_TOOLS)} "
       "(bundle.jobs.FUSED_KERNEL_TOOLS): {'; '.join(bad[:3])}",
       "Every ``rev88-fused`` record of the archive (qualify, energy, profile; run whether or not the "
       "archive holds the learners design):",
       "checks/run_energy.check_fused_blocks"),
    _c("energy.learners.metadata_block", ATTESTED, EXACT,
       "metadata.learner and the record's learner block on the kernel and launch shape: recorded equals `{k: "
       "block.get(k) for k in keys}`",
       "Every ``rev88-fused`` record of the archive (qualify, energy, profile; run whether or not the "
       "archive holds the learners design):",
       "checks/run_energy.check_fused_blocks"),
    _c("energy.learners.product_precision.form", CONDITION, COND,
       "condition `not bad`; FAIL: a product_precision is not one of {', '.join(PRODUCT_PRECISIONS)} "
       "(bundle.fused_learner.PRODUCT_PRECISIONS): {'; '.join(bad[:3])}",
       "Every ``rev88-fused`` record of the archive (qualify, energy, profile; run whether or not the "
       "archive holds the learners design):",
       "checks/run_energy.check_fused_blocks"),
    _c("energy.learners.product_slices", CONDITION, COND,
       "condition `len(seen) == 1`; FAIL: {len(found)} rev88-fused records name {len(seen)} product slicings "
       "(metadata.learner.product_slices): one summation order ran them all",
       "Every ``rev88-fused`` record of the archive (qualify, energy, profile; run whether or not the "
       "archive holds the learners design):",
       "checks/run_energy.check_fused_blocks"),
    _c("energy.learners.product_slices.form", CONDITION, COND,
       "condition `not bad_slices`; FAIL: product_slices must name features and rows slices of 16, 32 or 64 "
       "and, where recorded, feature_extent = the smallest multiple of the feature slice >= 41 "
       "(bundle.fused_learner.featu...",
       "Every ``rev88-fused`` record of the archive (qualify, energy, profile; run whether or not the "
       "archive holds the learners design):",
       "checks/run_energy.check_fused_blocks"),
    _c("energy.learners.trial_learner", RECOMPUTED, EXACT,
       "the trial's arm label and the learner its record names (no block for rev88): recorded equals "
       "`{\"arm\": arm_label(learner, ws), \"record_learner\": None if learner == \"rev88\" else learner}`",
       "``energy/learners.json.gz`` as an interleaved summary is checked (order of its (learner, workspace) "
       "arms, records, per-trial figures, summaries and ratios against ``rev88 :16:8``), and each trial's "
       "learner: the record...",
       "checks/run_energy.check_learners"),
    _c("energy.nvml_log", GUARD, NONE,
       "FAIL when the record is malformed or checking it raises",
       "Family entry: each energy record against its NVML log.",
       "checks/run_nvml.check_nvml_logs"),
    _c("energy.nvml_log.counter_order", CONDITION, COND,
       "condition `not backwards`; FAIL: counter reads of {log_rel} overlap in time or go backwards ({'; "
       "'.join(backwards[:3])}): NVML's total energy counter only grows",
       "Energy records against their own NVML logs (``<stem>.nvml.jsonl.gz``, written with "
       "``--record-nvml``).",
       "checks/run_nvml._check_stamps"),
    _c("energy.nvml_log.hardware", RECOMPUTED, EXACT,
       "energy hardware block vs the NVML answers in {log_rel}: recorded equals `logged`",
       "One record's energy block against its parsed log (see the module docstring).",
       "checks/run_nvml.check_record_log"),
    _c("energy.nvml_log.power_samples", CONDITION, COND,
       "condition `not bad`; FAIL: power samples vs the sampler reads of {log_rel}: {'; '.join(bad[:3])}",
       "Energy records against their own NVML logs (``<stem>.nvml.jsonl.gz``, written with "
       "``--record-nvml``).",
       "checks/run_nvml._check_samples"),
    _c("energy.nvml_log.present", GUARD, NONE,
       "FAIL: {log_rel} is missing while {len(with_log)} other energy records of this archive keep their "
       "NVML log: the phase records all or none",
       "Family entry: each energy record against its NVML log.",
       "checks/run_nvml.check_nvml_logs"),
    _c("energy.nvml_log.stamps", CONDITION, COND,
       "condition `not bad`; FAIL: stamps vs the counter reads of {log_rel}: {'; '.join(bad[:3])}",
       "Energy records against their own NVML logs (``<stem>.nvml.jsonl.gz``, written with "
       "``--record-nvml``).",
       "checks/run_nvml._check_stamps"),
    _c("energy.nvml_log.telemetry", RECOMPUTED, EXACT,
       "telemetry snapshots vs the NVML answers in {log_rel}: recorded equals `logged`",
       "Energy records against their own NVML logs (``<stem>.nvml.jsonl.gz``, written with "
       "``--record-nvml``).",
       "checks/run_nvml._check_telemetry"),
    _c("energy.nvml_log.whole", CONDITION, COND,
       "condition `seqs == list(range(len(log))) and bool(main) and main[0][\"call\"] == \"nvmlInit\" and "
       "main[-1][\"call\"] == \"nvmlShutdown\"`; FAIL: {log_rel}: seq not 0..{len(log) - 1} in order, or it does "
       "not open with nvmlInit and close with nvmlShutdown: not the whole log of the job",
       "One record's energy block against its parsed log (see the module docstring).",
       "checks/run_nvml.check_record_log"),
    _c("energy.original.energy_config", RECOMPUTED, EXACT,
       "the original-protocol job's --energy-config (the protocol's defaults): recorded equals `{}`",
       "Power plausibility of every energy record; the energy summaries' own fields.",
       "checks/run_fields.check_energy_fields"),
    _c("energy.original_summary.record", GUARD, NONE,
       "FAIL: {record_rel} named by {rel} is not in the archive",
       "``energy/original-summary.json.gz`` recomputed from ``original.json.gz``'s raw stamps.",
       "checks/run_energy.check_original_summary"),
    _c("energy.original_summary.workspace", RECOMPUTED, EXACT,
       "the original protocol ran the library default :4096:8: recorded equals `BASELINE`",
       "``energy/original-summary.json.gz`` recomputed from ``original.json.gz``'s raw stamps.",
       "checks/run_energy.check_original_summary"),
    _c("energy.power_plausible", CONDITION, COND,
       "condition `not bad and limit > 0`; FAIL: window powers {bad[:3]} W outside [{floor}, {ceiling}] W "
       "(half the lowest telemetry reading, the {limit} W power limit): the energies do not describe this "
       "board",
       "One energy object: windows' and paired-idle powers within [floor, limit] from its own telemetry.",
       "checks/original_fields.power_plausibility"),
    _c("energy.record.fields", RECOMPUTED, EXACT,
       "the replay compared all eight hashes; the counter's update period: recorded equals "
       "`{\"state_hash_keys_checked\": list(STATE_KEYS), \"counter_update_interval_s\": 0.1}`",
       "Power plausibility of every energy record; the energy summaries' own fields.",
       "checks/run_fields.check_energy_fields"),
    _c("energy.repeats_per_trial", RECOMPUTED, EXACT,
       "repeats = max(1, min(1000, ceil(5000 / calibration_ms))): recorded equals `expected_repeats`",
       "Check an energy object (spec 5 output keys): calibration, trials, summary.",
       "checks/energy.check_energy_block, checks/original_fields.metadata_blocks, checks/run_energy.check_record_energy"),
    _c("energy.settings.mode", GUARD, NONE,
       "FAIL: unknown energy mode {mode}: expected 'original' or 'trial'",
       "The ``energy`` object of one fixture record, against the protocol its settings name.",
       "checks/run_energy.check_record_energy"),
    _c("energy.settings.original_protocol", CONDITION, COND,
       "condition `all(isinstance(stated[k], int | float) and stated[k] == v for k, v in "
       "ORIGINAL_PROTOCOL.items())`; FAIL: original-protocol record states {stated}, the original protocol "
       "is {ORIGINAL_PROTOCOL}",
       "The ``energy`` object of one fixture record, against the protocol its settings name.",
       "checks/run_energy.check_record_energy"),
    _c("energy.software.fixture", ATTESTED, EXACT,
       "energy software block vs the fixture's software: recorded equals `rec.get(\"software\")`",
       "One set of facts per board across the archive; the facts a board of that name reports; energy vs "
       "fixture.",
       "checks/run_fields.check_hardware"),
    _c("energy.trial.counter_order", CONDITION, COND,
       "condition `all(a <= b for a, b in pairwise(counter))`; FAIL: the energy counter goes backwards "
       "across the trial's six stamps {counter}: NVML's total energy counter only grows",
       "All checks of one trial: intervals, ordering, and the four per-task figures.",
       "checks/energy.check_trial"),
    _c("energy.trial.cuda_ms_per_task", RECOMPUTED, FLOAT,
       "cuda_ms_per_task = cuda_elapsed_ms / invocations: recorded close to `raw`",
       "All checks of one trial: intervals, ordering, and the four per-task figures.",
       "checks/energy.check_trial"),
    _c("energy.trial.cuda_wall_ratio", CONDITION, COND,
       "condition `CUDA_WALL_RATIO[0] < ratio < CUDA_WALL_RATIO[1]`; FAIL: cuda_ms/wall_ms = {ratio} outside "
       "{CUDA_WALL_RATIO}: the CUDA events and the stamps do not describe the same window",
       "All checks of one trial: intervals, ordering, and the four per-task figures.",
       "checks/energy.check_trial"),
    _c("energy.trial.index", RECOMPUTED, EXACT,
       "trial index: recorded equals `index`",
       "All checks of one trial: intervals, ordering, and the four per-task figures.",
       "checks/energy.check_trial"),
    _c("energy.trial.invocations", RECOMPUTED, EXACT,
       "invocations = repeats_per_trial: recorded equals `repeats`",
       "All checks of one trial: intervals, ordering, and the four per-task figures.",
       "checks/energy.check_trial"),
    _c("energy.trial.power_samples_vs_counter", CONDITION, COND,
       "condition `not bad`; FAIL: power samples vs the energy counter:  + \"; \".join(bad) + \": the samples "
       "and the \" \"counter no longer describe one board's power\"",
       "The mean of each window's power samples against the window's average power from the energy counter.",
       "checks/energy.check_samples_vs_counter"),
    _c("energy.trial.window_order", CONDITION, COND,
       "condition `ib_end <= a0 < a1 <= ia0`; FAIL: windows overlap: need idle_before.end <= active.start < "
       "active.end <= idle_after.start",
       "All checks of one trial: intervals, ordering, and the four per-task figures.",
       "checks/energy.check_trial"),
    _c("energy.trial_count", RECOMPUTED, EXACT,
       "trial count: recorded equals `trials_expected`",
       "Check an energy object (spec 5 output keys): calibration, trials, summary.",
       "checks/energy.check_energy_block, checks/run_energy.check_record_energy"),
    _c("fixture.fields", ATTESTED, EXACT,
       "schema, mode and scope of the phase, workspace set before start, all eight hashes matched "
       "in-process, its prediction file, L2 reference = the board's L2, scope texts: recorded equals "
       "`{\"schema_version\": 1, \"mode\": \"profile\" if profile_mode else \"measure\", \"requested_scope\": get(p, "
       "\"scope\", ...`",
       "Each fixture record's own protocol fields.",
       "checks/run_fields.check_fixture_fields"),
    _c("fixture.fields.error", GUARD, NONE,
       "FAIL when the record is malformed or checking it raises",
       "Each fixture record's own protocol fields.",
       "checks/run_fields.check_fixture_fields"),
    _c("fixture.learner", RECOMPUTED, EXACT,
       "the learner the record names, the same in its metadata; a variant only where the phases run one "
       "(qualify, the learners energy design, profile): recorded equals `{\"record\": learner if learner == "
       "\"rev88\" or rel.startswith(VARIANT_PHASES) else f\"rev88 (only {', '.join(VA...`",
       "Each fixture record's own protocol fields.",
       "checks/run_fields.check_fixture_fields"),
    _c("fixture.profile", RECOMPUTED, EXACT,
       "profile range protocol recomputed from its scope and repeats: recorded equals `{\"scope\": get_str(p, "
       "\"scope\", rel), \"warmup_complete_tasks\": 2, \"requested_repeats\": counters.FIXTURE_REPEA...`",
       "Each fixture record's own protocol fields.",
       "checks/run_fields.check_fixture_fields"),
    _c("fixture.source_sha256", ATTESTED, EXACT,
       "every record of one group (the same computation) carries the same value",
       "Each fixture record's own protocol fields.",
       "checks/run_fields.check_fixture_fields"),
    _c("integrity.canonical_json", RECOMPUTED, NONE,
       "PASS: canonical JSON: re-serialised byte for byte, no repeated key",
       "Every verified JSON record parses strictly and is canonical; failing ones are withdrawn.",
       "integrity._check_json_records"),
    _c("integrity.content_sha256", RECOMPUTED, EXACT,
       "decompressed sha256: recorded equals `m.content_sha256`",
       "Integrity first: every byte of an archive is hashed before any figure is read.",
       "integrity._verify_entry"),
    _c("integrity.content_size_bytes", RECOMPUTED, EXACT,
       "decompressed size: recorded equals `m.content_size`",
       "Integrity first: every byte of an archive is hashed before any figure is read.",
       "integrity._verify_entry"),
    _c("integrity.gzip", GUARD, NONE,
       "FAIL: a .gz member whose gzip stream has a problem (not the writer's canonical gzip, trailing bytes, "
       "unreadable)",
       "Integrity first: every byte of an archive is hashed before any figure is read.",
       "integrity._verify_entry"),
    _c("integrity.hidden", GUARD, NONE,
       "FAIL: hidden file in the run folder (scratch of an unfinished phase under .staging/ or .work/?): a "
       "completed archive holds only the files its manifest lists; finish or rerun the phase, o",
       "Check ``root/manifest.json`` against the files (one of our run archives).",
       "integrity.verify_run_archive"),
    _c("integrity.json", GUARD, NONE,
       "FAIL: the error's own message (malformed input)",
       "Every verified JSON record parses strictly and is canonical; failing ones are withdrawn.",
       "integrity._check_json_records"),
    _c("integrity.manifest", RECOMPUTED, NONE,
       "PASS: manifest lists {len(entries)} files",
       "Check ``root/manifest.json`` against the files (one of our run archives).",
       "integrity.verify_run_archive"),
    _c("integrity.manifest_canonical", RECOMPUTED, NONE,
       "PASS: manifest.json is the writer's canonical JSON (2-space indent, key order, one newline)",
       "``manifest.json`` is byte-for-byte what the writer writes for its values, and names this folder.",
       "integrity._check_manifest_form"),
    _c("integrity.manifest_entry", GUARD, NONE,
       "FAIL: the entry for {rel} is wrong: {reason}; the file is the one the run wrote, restore "
       "manifest.json",
       "Integrity first: every byte of an archive is hashed before any figure is read.",
       "integrity._manifest_blame"),
    _c("integrity.missing", GUARD, NONE,
       "FAIL: file listed in manifest.json is absent: restore it from the run",
       "What ``lstat`` says of a listed member: True (a regular file to read), a FAIL verdict (missing, a "
       "folder, not examinable), or False (a link or special file, or under a linked folder: the walk "
       "reports it, and it is nev...",
       "integrity._precheck"),
    _c("integrity.regular_file", GUARD, NONE,
       "FAIL: listed in manifest.json as a file but is a folder: restore the file from the run",
       "What ``lstat`` says of a listed member: True (a regular file to read), a FAIL verdict (missing, a "
       "folder, not examinable), or False (a link or special file, or under a linked folder: the walk "
       "reports it, and it is nev...",
       "integrity._precheck"),
    _c("integrity.run_id", RECOMPUTED, EXACT,
       "manifest run_id vs the run folder's name (rename the folder back to its run_id): recorded equals "
       "`name`",
       "``manifest.json`` is byte-for-byte what the writer writes for its values, and names this folder.",
       "integrity._check_environment_run_id, integrity._check_manifest_form"),
    _c("integrity.sha256", RECOMPUTED, EXACT,
       "stored sha256: recorded equals `m.stored_sha256`",
       "Integrity first: every byte of an archive is hashed before any figure is read.",
       "integrity._attribute_plain_mismatches, integrity._verify_entry"),
    _c("integrity.size_bytes", RECOMPUTED, EXACT,
       "stored size: recorded equals `m.stored_size`",
       "Integrity first: every byte of an archive is hashed before any figure is read.",
       "integrity._verify_entry"),
    _c("integrity.size_limit", GUARD, NONE,
       "FAIL: a member (or its decompressed content) is larger than the limit for its kind",
       "Integrity first: every byte of an archive is hashed before any figure is read.",
       "integrity._verify_entry"),
    _c("integrity.symlink", GUARD, NONE,
       "FAIL: symbolic link or special file inside the archive: replace it by the regular file or remove it",
       "Check ``root/manifest.json`` against the files (one of our run archives).",
       "integrity.verify_run_archive"),
    _c("integrity.unlisted", GUARD, NONE,
       "FAIL: file is not listed in manifest.json: remove it or rebuild the manifest",
       "Check ``root/manifest.json`` against the files (one of our run archives).",
       "integrity.verify_run_archive"),
    _c("memory.added_peak_over_entry_allocated_bytes", RECOMPUTED, EXACT,
       "added peak = peak − entry: recorded equals `peak - entry`",
       "Allocator invariants of one fresh-process fixture run.",
       "checks/memory.check_fixture_memory, checks/run_fields.check_comparison_fields"),
    _c("memory.after_prepare_within_peak", CONDITION, COND,
       "allocated after prepare <= peak allocated",
       "Allocator invariants of one fresh-process fixture run.",
       "checks/memory.check_fixture_memory, checks/run_fields.check_comparison_fields"),
    _c("memory.entry_empty", CONDITION, COND,
       "allocator empty at entry (allocated and reserved 0): a fresh process",
       "Allocator invariants of one fresh-process fixture run.",
       "checks/memory.check_fixture_memory, checks/run_fields.check_comparison_fields"),
    _c("memory.inventory.aliases", CONDITION, COND,
       "condition `alias_ok`; FAIL: alias lists do not match the named tensors' storage ids",
       "Named-storage inventory: ids, addresses, aliases, logical bytes, totals.",
       "checks/memory.check_inventory"),
    _c("memory.inventory.allocator_allocated_bytes", RECOMPUTED, EXACT,
       "allocator bytes at inventory = live after invoke: recorded equals `live_bytes`",
       "Named-storage inventory: ids, addresses, aliases, logical bytes, totals.",
       "checks/memory.check_inventory"),
    _c("memory.inventory.device", CONDITION, COND,
       "condition `all(d == \"cuda:0\" for d in devices)`; FAIL: a named storage is not on cuda:0 (the "
       "fixture's device)",
       "Every cache record's inventory structure equals the baseline record's (one model, one set of "
       "buffers).",
       "checks/original_fields.check_inventories"),
    _c("memory.inventory.logical_bytes", CONDITION, COND,
       "condition `logical_ok`; FAIL: logical bytes inconsistent ({bad_logical})",
       "Named-storage inventory: ids, addresses, aliases, logical bytes, totals.",
       "checks/memory.check_inventory"),
    _c("memory.inventory.named_within_live", CONDITION, COND,
       "condition `named_total <= live_bytes`; FAIL: named storage {named_total} exceeds live {live_bytes}",
       "Named-storage inventory: ids, addresses, aliases, logical bytes, totals.",
       "checks/memory.check_inventory, checks/run_fields.check_comparison_fields"),
    _c("memory.inventory.structure", RECOMPUTED, EXACT,
       "named tensors and storages (names, shapes, strides, dtypes, offsets, bytes, aliases) vs the frozen "
       "reference: recorded equals `inventory_structure(reference, \"frozen reference\")`",
       "The inventory's structure equals the frozen reference's (the same model and buffers; spec 4.1).",
       "checks/fields.check_inventory_structure"),
    _c("memory.inventory.structure.fused", RECOMPUTED, EXACT,
       "named tensors and storages vs the archive's first fused record ({fused_ref[0]}): recorded equals "
       "`fields.inventory_structure(fused_ref[1], fused_ref[0])`",
       "Every fixture record's inventory structure vs the frozen reference (the smoke's inputs resized).",
       "checks/run_fields.check_inventories"),
    _c("memory.inventory.unique_named_storage_bytes", RECOMPUTED, EXACT,
       "named storage total: recorded equals `named_total`",
       "Named-storage inventory: ids, addresses, aliases, logical bytes, totals.",
       "checks/memory.check_inventory, checks/run_fields.check_comparison_fields"),
    _c("memory.inventory.unique_storages", CONDITION, COND,
       "condition `len(set(ids)) == len(ids) and len(set(pairs)) == len(pairs)`; FAIL: storage ids or "
       "(device, address) pairs repeat",
       "Named-storage inventory: ids, addresses, aliases, logical bytes, totals.",
       "checks/memory.check_inventory, checks/run_fields.check_comparison_fields"),
    _c("memory.inventory.unnamed_live_allocated_bytes", RECOMPUTED, EXACT,
       "unnamed = live − named: recorded equals `live_bytes - named_total`",
       "Named-storage inventory: ids, addresses, aliases, logical bytes, totals.",
       "checks/memory.check_inventory, checks/run_fields.check_comparison_fields"),
    _c("memory.live_within_peak", CONDITION, COND,
       "0 < live allocated <= peak allocated",
       "Allocator invariants of one fresh-process fixture run.",
       "checks/memory.check_fixture_memory, checks/run_fields.check_comparison_fields"),
    _c("memory.peak_allocated_bytes", CONDITION, COND,
       "peak allocated is positive, at least after-prepare and live, at most peak reserved",
       "Allocator invariants of one fresh-process fixture run.",
       "checks/memory.check_fixture_memory"),
    _c("memory.peak_reserved_bytes", CONDITION, COND,
       "peak reserved is positive and at least reserved after invoke",
       "Allocator invariants of one fresh-process fixture run.",
       "checks/memory.check_fixture_memory"),
    _c("memory.peak_reserved_covers_peak", CONDITION, COND,
       "peak reserved >= peak allocated",
       "Allocator invariants of one fresh-process fixture run.",
       "checks/memory.check_fixture_memory, checks/run_fields.check_comparison_fields"),
    _c("memory.reserved_covers_live", CONDITION, COND,
       "reserved >= live allocated",
       "Allocator invariants of one fresh-process fixture run.",
       "checks/memory.check_fixture_memory, checks/run_fields.check_comparison_fields"),
    _c("memory.same_workspace", ATTESTED, EXACT,
       "every record of one group (the same computation) carries the same value",
       "Allocator figures of one workspace are one set across every record of it (base study included).",
       "checks/original_fields._memory_groups"),
    _c("memory.workspace_peak", ATTESTED, EXACT,
       "every record of one group (the same computation) carries the same value",
       "The peaks of one workspace config are one value across every fresh-process record of the same board "
       "model and software (the fixture's allocator is deterministic: the shipped H200 archive has 21 "
       "``:16:8`` records that ...",
       "checks/run_fields.check_peaks"),
    _c("metadata.config", RECOMPUTED, EXACT,
       "metadata config vs the record's configuration: recorded equals `dict(block.config)`",
       "The fields of one metadata block that need no other block: config, counts, constants, run count.",
       "checks/fields.check_block, checks/run_consistency.check_configs, checks/run_consistency.check_in_process_qualify"),
    _c("metadata.constants", RECOMPUTED, EXACT,
       "protocol constants vs the frozen reference (the fused learner: its own timing scope, "
       "protocol.learners.FUSED_TIMING_SCOPE): recorded equals `want_constants`",
       "The fields of one metadata block that need no other block: config, counts, constants, run count.",
       "checks/fields.check_block"),
    _c("metadata.counts", RECOMPUTED, EXACT,
       "train/query examples of the run's inputs: recorded equals `list(block.counts)`",
       "The fields of one metadata block that need no other block: config, counts, constants, run count.",
       "checks/fields.check_block"),
    _c("metadata.epoch_count", ATTESTED, EXACT,
       "one epoch permutation per epoch of the configuration: recorded equals `get_int(md, \"config.epochs\", "
       "w)`",
       "The fields of one metadata block that need no other block: config, counts, constants, run count.",
       "checks/fields.check_block"),
    _c("metadata.error", GUARD, NONE,
       "FAIL when the record is malformed or checking it raises",
       "Every metadata block: own fields against the frozen draw-0 metadata, state hashes across blocks.",
       "checks/original_fields.check_metadata, checks/run_fields.check_metadata"),
    _c("metadata.final_state", ATTESTED, EXACT,
       "every record of one computation (inputs, config, workspace, board, software) states the same final "
       "state hashes",
       "State hashes that several blocks must share.",
       "checks/fields.check_block_groups"),
    _c("metadata.image_hashes", ATTESTED, EXACT,
       "records with the same labels and test count state the same image hashes",
       "State hashes that several blocks must share.",
       "checks/fields.check_block_groups"),
    _c("metadata.initial_parameter_sha256", ATTESTED, EXACT,
       "records of one (seed, depth), and the frozen reference, state the same initial parameter hashes",
       "State hashes that several blocks must share.",
       "checks/fields.check_block_groups"),
    _c("metadata.input_hashes", RECOMPUTED, EXACT,
       "metadata input_hashes vs the record's input hashes: recorded equals `dict(block.input_hashes)`",
       "The fields of one metadata block that need no other block: config, counts, constants, run count.",
       "checks/fields.check_block, checks/run_fields.check_smoke_record"),
    _c("metadata.parameter_count", ATTESTED, EXACT,
       "2d·41·41 + 82·10 + 10: recorded equals `parameter_count(get_int(md, \"config.depth\", w))`",
       "The fields of one metadata block that need no other block: config, counts, constants, run count.",
       "checks/fields.check_block"),
    _c("metadata.run_count", RECOMPUTED, EXACT,
       "run_count implied by the record's protocol: recorded equals `block.run_count`",
       "The fields of one metadata block that need no other block: config, counts, constants, run count.",
       "checks/fields.check_block"),
    _c("metadata.selftest", RECOMPUTED, EXACT,
       "CPU self-test cases (dtype, depth, flags, saved storages) vs the frozen reference: recorded equals "
       "`{\"passed\": True, \"device\": reference.get(\"device\"), \"scope\": reference.get(\"scope\"), \"cases\": "
       "[shape(c) for...`",
       "The CPU reconstruction self-test (spec 2.10) against the frozen reference's: cases, flags, storages.",
       "checks/fields.check_block, checks/fields.check_selftest"),
    _c("metadata.selftest.residuals", CONDITION, COND,
       "condition `all(0 <= r <= SELFTEST_BOUND for r in residuals)`; FAIL: a CPU self-test residual is "
       "outside [0, {SELFTEST_BOUND}]: {residuals}",
       "The CPU reconstruction self-test (spec 2.10) against the frozen reference's: cases, flags, storages.",
       "checks/fields.check_selftest"),
    _c("original.accuracy.rescored", RECOMPUTED, EXACT,
       "correct (rescored): recorded equals `got`",
       "accuracy.json, verification.json, submission accuracy: counts, aggregates, confusion matrix.",
       "checks/original.check_accuracy"),
    _c("original.accuracy.row", RECOMPUTED, EXACT,
       "`[get_int(row, \"draw\", w), get_int(row, \"dataset_seed\", w), get_int(row, \"total\", w)]` equals `[i, "
       "SEED_BASE + i, 10_000]`",
       "accuracy.json, verification.json, submission accuracy: counts, aggregates, confusion matrix.",
       "checks/original.check_accuracy"),
    _c("original.accuracy.row.accuracy_percent", RECOMPUTED, FLOAT,
       "`row.get(\"accuracy_percent\")` close to `c / 100.0`",
       "accuracy.json, verification.json, submission accuracy: counts, aggregates, confusion matrix.",
       "checks/original.check_accuracy"),
    _c("original.cache.cache_reference", RECOMPUTED, EXACT,
       "L2 reference vs ncu's L2 size: recorded equals `[memory_l2(f), f\"{memory_l2(f) >> 20} MiB\"]`",
       "The job fields of each cache fixture record against the plan, the protocol and the record itself.",
       "checks/original_fields.check_cache_jobs"),
    _c("original.cache.capabilities", ATTESTED, EXACT,
       "every cache-audit record carries the same value",
       "The job fields of each cache fixture record against the plan, the protocol and the record itself.",
       "checks/original_fields.check_cache_jobs"),
    _c("original.cache.command", RECOMPUTED, EXACT,
       "fixture command line: recorded equals `expected_command(action, scope, bool(e))`",
       "The job fields of each cache fixture record against the plan, the protocol and the record itself.",
       "checks/original_fields.check_cache_jobs"),
    _c("original.cache.energy_software", ATTESTED, EXACT,
       "energy software vs the record's software: recorded equals `get_dict(res, \"software\", rel) if e else "
       "None`",
       "The job fields of each cache fixture record against the plan, the protocol and the record itself.",
       "checks/original_fields.check_cache_jobs"),
    _c("original.cache.gpu", ATTESTED, EXACT,
       "every cache-audit record carries the same value",
       "The job fields of each cache fixture record against the plan, the protocol and the record itself.",
       "checks/original_fields.check_cache_jobs"),
    _c("original.cache.input_archive", ATTESTED, EXACT,
       "every cache-audit record carries the same value",
       "The job fields of each cache fixture record against the plan, the protocol and the record itself.",
       "checks/original_fields.check_cache_jobs"),
    _c("original.cache.input_sha256", ATTESTED, EXACT,
       "`get_dict(rec, \"input_sha256\", w)` equals `get_dict(dm[draw], \"input_sha256\", \"draw-manifest.json\")`",
       "Each cache-audit fixture record: workspace, config, inputs, memory, inventory, energy.",
       "checks/original_cache.check_fixture_records"),
    _c("original.cache.job", RECOMPUTED, EXACT,
       "job fields (measure/task, workspace set before start, no profile, energy only for the comparisons, "
       "empty stderr, all eight hashes matched in-process): recorded equals `{\"action\": \"measure\", \"scope\": "
       "\"task\", \"mode\": action, \"requested_scope\": scope, \"schema_version\": 1, \"envi...`",
       "The job fields of each cache fixture record against the plan, the protocol and the record itself.",
       "checks/original_fields.check_cache_jobs"),
    _c("original.cache.job.error", GUARD, NONE,
       "FAIL when the record is malformed or checking it raises",
       "The job fields of each cache fixture record against the plan, the protocol and the record itself.",
       "checks/original_fields.check_cache_jobs"),
    _c("original.cache.plan.preferred_upgrade", ATTESTED, EXACT,
       "preferred workspace vs the cache submission's: recorded equals "
       "`get_str(f.json(\"cache-audit/submission.json\"), \"cublas_workspace_config\", \"submission\")`",
       "The job fields of each cache fixture record against the plan, the protocol and the record itself.",
       "checks/original_fields.check_cache_jobs"),
    _c("original.cache.plan.workspaces", ATTESTED, EXACT,
       "planned workspaces vs the three comparison records: recorded equals `[get_str(recs[n][1], "
       "\"workspace\", n) for n in WORKSPACES]`",
       "The job fields of each cache fixture record against the plan, the protocol and the record itself.",
       "checks/original_fields.check_cache_jobs"),
    _c("original.cache.predictions_file", RECOMPUTED, EXACT,
       "file sha256 of {path}: recorded equals `hashlib.sha256(f.read(path)).hexdigest()`",
       "The cache audit's prediction file: its own copy when retained, else the restored draw file with the "
       "same recorded sha256 (``predictions/draw-XX.npy``, pinned by the prediction manifest).",
       "checks/original_cache.check_cache_predictions, checks/original_fields.check_cache_jobs"),
    _c("original.cache.predictions_payload", RECOMPUTED, EXACT,
       "the record's predictions_sha256 vs the file's payload: recorded equals "
       "`draws.data.array_sha256(arr)`",
       "The cache audit's prediction file: its own copy when retained, else the restored draw file with the "
       "same recorded sha256 (``predictions/draw-XX.npy``, pinned by the prediction manifest).",
       "checks/original_cache.check_cache_predictions"),
    _c("original.cache.profile.capabilities", ATTESTED, EXACT,
       "ncu version, metric query return code and where it was kept: recorded equals `[get(rec0, "
       "\"capabilities.ncu_version\", str, rel0), 0, f\"{p}.json.gz\"]`",
       "The four profile entries of the summary: command, protocol flags, memory/state/board vs their "
       "workspace.",
       "checks/original_fields.check_profile_entries"),
    _c("original.cache.profile.command", RECOMPUTED, EXACT,
       "ncu command (the profile plan's metrics and controls) + the fixture's: recorded equals `want_cmd`",
       "The four profile entries of the summary: command, protocol flags, memory/state/board vs their "
       "workspace.",
       "checks/original_fields.check_profile_entries"),
    _c("original.cache.profile.entry", RECOMPUTED, EXACT,
       "profile entry vs the {ws} fixture records, the command and its own file names: recorded equals "
       "`want`",
       "The four profile entries of the summary: command, protocol flags, memory/state/board vs their "
       "workspace.",
       "checks/original_fields.check_profile_entries"),
    _c("original.cache.profile.l2", RECOMPUTED, EXACT,
       "L2 size of every profile: recorded equals `fields_int(attrs, \"device__attribute_l2_cache_size\")`",
       "The four profile entries of the summary: command, protocol flags, memory/state/board vs their "
       "workspace.",
       "checks/original_fields.check_profile_entries"),
    _c("original.cache.profile.memory", RECOMPUTED, EXACT,
       "profile memory vs the {ws} fixture records (the workspace it names): recorded equals `derived`",
       "The four profile entries of the summary: command, protocol flags, memory/state/board vs their "
       "workspace.",
       "checks/original_fields.check_profile_entries"),
    _c("original.cache.profile.memory_text", ATTESTED, EXACT,
       "memory scope and residency flag: recorded equals `[get_str(rec0, \"result.memory.scope\", rel0), "
       "get(rec0, \"result.buffer_inventory.cache_residency_established...`",
       "The four profile entries of the summary: command, protocol flags, memory/state/board vs their "
       "workspace.",
       "checks/original_fields.check_profile_entries"),
    _c("original.cache.profile.protocol", RECOMPUTED, EXACT,
       "profile range protocol recomputed from the command's scope and repeats: recorded equals `{\"scope\": "
       "scope, \"warmup_complete_tasks\": 2, \"requested_repeats\": repeats, \"fresh_tasks_in_range\": repeats "
       "...`",
       "The four profile entries of the summary: command, protocol flags, memory/state/board vs their "
       "workspace.",
       "checks/original_fields.check_profile_entries"),
    _c("original.cache.profile.range_ids", RECOMPUTED, EXACT,
       "one profiled range (range id 0) for every metric: recorded equals `[\"0\"]`",
       "The four profile entries of the summary: command, protocol flags, memory/state/board vs their "
       "workspace.",
       "checks/original_fields.check_profile_entries"),
    _c("original.cache.profile.warmup_passes", RECOMPUTED, EXACT,
       "no warm-up replay pass: recorded equals `\"0\"`",
       "The four profile entries of the summary: command, protocol flags, memory/state/board vs their "
       "workspace.",
       "checks/original_fields.check_profile_entries"),
    _c("original.cache.profile.workspace", CONDITION, COND,
       "condition `False`; FAIL: no fixture record ran workspace {ws}",
       "The four profile entries of the summary: command, protocol flags, memory/state/board vs their "
       "workspace.",
       "checks/original_fields.check_profile_entries"),
    _c("original.cache.returncode", RECOMPUTED, EXACT,
       "`get_int(rec, \"returncode\", w)` equals `0`",
       "Each cache-audit fixture record: workspace, config, inputs, memory, inventory, energy.",
       "checks/original_cache.check_fixture_records"),
    _c("original.cache.software", ATTESTED, EXACT,
       "every cache-audit record carries the same value",
       "The job fields of each cache fixture record against the plan, the protocol and the record itself.",
       "checks/original_fields.check_cache_jobs"),
    _c("original.cache.sources", ATTESTED, EXACT,
       "source sha256 vs the plan's fixture and the protocol's learner and energy sources: recorded equals "
       "`{\"fixture.py\": get_str(plan, \"fixture_sha256\", \"plan\"), \"learner.py\": get(protocol, "
       "(\"source_sha256\", \"lear...`",
       "The job fields of each cache fixture record against the plan, the protocol and the record itself.",
       "checks/original_fields.check_cache_jobs"),
    _c("original.cache.state_hash_keys_checked", RECOMPUTED, EXACT,
       "state hash keys the energy replay compared vs the base study's draw-0 replay: recorded equals "
       "`keys_checked if e else None`",
       "The job fields of each cache fixture record against the plan, the protocol and the record itself.",
       "checks/original_fields.check_cache_jobs"),
    _c("original.cache.stdout", RECOMPUTED, EXACT,
       "console output recomputed from the record: recorded equals `expected_stdout(rec, rel)`",
       "The job fields of each cache fixture record against the plan, the protocol and the record itself.",
       "checks/original_fields.check_cache_jobs"),
    _c("original.cache.submission.a100.energy_mj", RECOMPUTED, FLOAT,
       "`get(sub, \"a100.energy_mj\", None, w)` close to `adj[\"mean\"]`",
       "cache-audit/submission.json equals the recomputed small-workspace figures and profiles.",
       "checks/original_cache.check_cache_submission"),
    _c("original.cache.submission.a100.energy_sample_sd_mj", RECOMPUTED, FLOAT,
       "`get(sub, \"a100.energy_sample_sd_mj\", None, w)` close to `adj[\"sample_sd\"]`",
       "cache-audit/submission.json equals the recomputed small-workspace figures and profiles.",
       "checks/original_cache.check_cache_submission"),
    _c("original.cache.submission.a100.runtime_ms", RECOMPUTED, FLOAT,
       "`get(sub, \"a100.runtime_ms\", None, w)` close to `cuda[\"mean\"]`",
       "cache-audit/submission.json equals the recomputed small-workspace figures and profiles.",
       "checks/original_cache.check_cache_submission"),
    _c("original.cache.submission.fields", ATTESTED, EXACT,
       "cache submission workspace vs the small-workspace record: recorded equals `{\"workspace\": "
       "get_str(f.json(\"cache-audit/small-workspace.json\"), \"workspace\", \"small\")}`",
       "submission.json, verification.json, cache-audit/submission.json and protocol.json: the remaining "
       "fields.",
       "checks/original_fields.check_plans, checks/original_fields.check_submissions"),
    _c("original.cache.submission.sources", ATTESTED, EXACT,
       "sources vs the validation, plan, profile plan and summary that name them: recorded equals "
       "`{\"cache_runtime.py\": get(cv, (\"source_sha256\", \"cache_runtime.py\"), str, CUDA_VALIDATION), "
       "\"fixture.py\": ge...`",
       "profile-plan.json and the cache submission's sources against the commands and records they describe.",
       "checks/original_fields.check_plans"),
    _c("original.cache.submission.warm_profile", ATTESTED, EXACT,
       "warm profile copy vs the summary's :16:8 profile: recorded equals `{k: entry.get(k) for k in "
       "(\"counter_unit\", \"pass_counts\", \"profile_device_attributes\")}`",
       "profile-plan.json and the cache submission's sources against the commands and records they describe.",
       "checks/original_fields.check_plans"),
    _c("original.cache.submission.workspace", RECOMPUTED, EXACT,
       "`get_str(sub, \"cublas_workspace_config\", w)` equals `\":16:8\"`",
       "cache-audit/submission.json equals the recomputed small-workspace figures and profiles.",
       "checks/original_cache.check_cache_submission"),
    _c("original.cache.summary.draws_with_all_state_hashes_bit_equal", ATTESTED, EXACT,
       "`get_int(sm, \"qualification.draws_with_all_state_hashes_bit_equal\", ws)` equals `sum(1 for n in "
       "entries if n.startswith(\"qualify-\") and not [ k for k in STATE_KEYS if get_dict(recs[n][1], "
       "\"result.metadata\", n).get(k) != get_dict(f.json(f\"results/draw-{int(n[-2:]):02d}.json\"), \"metadata\", "
       "n).get(k)])`",
       "summary.json: per-record copies, state comparison, reductions, profiles.",
       "checks/original_cache.check_summary"),
    _c("original.cache.summary.energy_copy", ATTESTED, EXACT,
       "energy copy vs the record's trials: recorded equals `{\"passed\": True, \"trials\": len(trials), "
       "\"invocations_per_trial\": get_int(e, \"repeats_per_trial\", rel), \"raw...`",
       "``cache-audit/summary.json``: each entry's copied fields, the qualification counts, the top flags.",
       "checks/original_fields.check_summary_entries"),
    _c("original.cache.summary.energy_hardware", ATTESTED, EXACT,
       "`get_dict(entry, \"energy.hardware\", ws)` equals `get_dict(res, \"energy.hardware\", w)`",
       "summary.json: per-record copies, state comparison, reductions, profiles.",
       "checks/original_cache.check_summary"),
    _c("original.cache.summary.entry", RECOMPUTED, EXACT,
       "summary entry vs its record (paths, command, return code, status, flags, software): recorded equals "
       "`want`",
       "``cache-audit/summary.json``: each entry's copied fields, the qualification counts, the top flags.",
       "checks/original_fields.check_summary_entries"),
    _c("original.cache.summary.memory_text", ATTESTED, EXACT,
       "memory scope and residency flag: recorded equals `[get_str(res, \"memory.scope\", rel), get(res, "
       "\"buffer_inventory.cache_residency_established\", bool, rel)]`",
       "``cache-audit/summary.json``: each entry's copied fields, the qualification counts, the top flags.",
       "checks/original_fields.check_summary_entries"),
    _c("original.cache.summary.prediction_sha256", ATTESTED, EXACT,
       "prediction file sha vs the original draw's: recorded equals `get_str(pm[draw], \"prediction_sha256\", "
       "\"prediction-manifest.json\")`",
       "summary.json: per-record copies, state comparison, reductions, profiles.",
       "checks/original_cache.check_summary"),
    _c("original.cache.summary.predictions_bit_equal", ATTESTED, EXACT,
       "predictions of the 11 qualification runs equal to the original draws' (sum of their query counts): "
       "recorded equals `sum(get_int(recs[f\"qualify-{i:02d}\"][1], \"result.metadata.test_count\", ws) for i in "
       "DRAWS if get(recs[f\"qua...`",
       "summary.json: per-record copies, state comparison, reductions, profiles.",
       "checks/original_cache.check_summary"),
    _c("original.cache.summary.qualification", ATTESTED, EXACT,
       "qualification counts recomputed from the 11 records and the original draws: recorded equals "
       "`{\"complete\": len(get_list(q, \"draws\", SUMMARY)) == len(DRAWS) and all( "
       "get_int(recs[f\"qualify-{i:02d}\"][1],...`",
       "``cache-audit/summary.json``: each entry's copied fields, the qualification counts, the top flags.",
       "checks/original_fields.check_summary_entries"),
    _c("original.cache.summary.state_fields_differing", RECOMPUTED, EXACT,
       "state fields differing from the original draw (recomputed from both records): recorded equals "
       "`differing`",
       "summary.json: per-record copies, state comparison, reductions, profiles.",
       "checks/original_cache.check_summary"),
    _c("original.cache.summary.status", ATTESTED, EXACT,
       "summary status recomputed from the jobs: recorded equals `{\"schema_version\": 1, \"status\": \"complete\" "
       "if all(jobs) else \"incomplete\", \"all_jobs_passed\": all(jobs) and...`",
       "``cache-audit/summary.json``: each entry's copied fields, the qualification counts, the top flags.",
       "checks/original_fields.check_summary_entries"),
    _c("original.cache.summary.workspace", ATTESTED, EXACT,
       "`get_str(entry, \"workspace\", ws)` equals `get_str(rec, \"workspace\", w)`",
       "summary.json: per-record copies, state comparison, reductions, profiles.",
       "checks/original_cache.check_summary"),
    _c("original.cache.test_labels_read", RECOMPUTED, EXACT,
       "`get(res, \"test_labels_read\", bool, w)` equals `False`",
       "Each cache-audit fixture record: workspace, config, inputs, memory, inventory, energy.",
       "checks/original_cache.check_fixture_records"),
    _c("original.cache.workspace", RECOMPUTED, EXACT,
       "`[get_str(rec, \"workspace\", w), get_str(res, \"cublas_workspace_config\", w)]` equals `[workspace, "
       "workspace]`",
       "Each cache-audit fixture record: workspace, config, inputs, memory, inventory, energy.",
       "checks/original_cache.check_fixture_records"),
    _c("original.config.key_order", RECOMPUTED, EXACT,
       "`list(cfg)` equals `list(PROTOCOL_CONFIG_ORDER)`",
       "protocol.json and config.json: counts, seeds, threshold, frozen configuration.",
       "checks/original.check_protocol"),
    _c("original.cuda_validation", CONDITION, COND,
       "condition `get_bool(cv, \"passed\", w) and get_int(cv, \"checks\", w) > 0 and get_dict(cv, \"tolerance\", "
       "w) == {\"atol\": 2e-05, \"rtol\": 0`; FAIL: CUDA replay validation record incomplete or failed",
       "Draw-0 energy (results/draw-00.json) and its copies in submission/verification.",
       "checks/original.check_energy"),
    _c("original.cuda_validation.cache_runtime", RECOMPUTED, EXACT,
       "the smoke's cache_runtime vs the numerical validation's: recorded equals `nv_runtime`",
       "Every metadata block: own fields against the frozen draw-0 metadata, state hashes across blocks.",
       "checks/original_fields.check_metadata"),
    _c("original.cuda_validation.cases", RECOMPUTED, EXACT,
       "cases: depths 1 and 2, seed 781, batch 8 split [8, 8, 3], flags, storages: recorded equals "
       "`want_cases if len(cases) >= 2 else want_cases + [\"<case missing>\"]`",
       "A CUDA replay validation block (spec 2.10 / 7.5): 212 checks, the maximum error within the recorded "
       "tolerance (and the protocol's 2e-5 / 3e-3), both depths with the smoke's batch split, the flags.",
       "checks/original_fields.check_replay_validation"),
    _c("original.cuda_validation.check_count", RECOMPUTED, EXACT,
       "replay validation checks: recorded equals `REPLAY_CHECKS`",
       "A CUDA replay validation block (spec 2.10 / 7.5): 212 checks, the maximum error within the recorded "
       "tolerance (and the protocol's 2e-5 / 3e-3), both depths with the smoke's batch split, the flags.",
       "checks/original_fields.check_replay_validation"),
    _c("original.cuda_validation.device", RECOMPUTED, EXACT,
       "passed, on the record's board: recorded equals `[True, gpu]`",
       "A CUDA replay validation block (spec 2.10 / 7.5): 212 checks, the maximum error within the recorded "
       "tolerance (and the protocol's 2e-5 / 3e-3), both depths with the smoke's batch split, the flags.",
       "checks/original_fields.check_replay_validation"),
    _c("original.cuda_validation.draw0_device", RECOMPUTED, EXACT,
       "the base study's board model: recorded equals `gpu`",
       "``cache-audit/cuda-validation.json`` and the base study's draw-0 ``cuda_validation``.",
       "checks/original_fields.check_cuda_validation"),
    _c("original.cuda_validation.maximum_abs_error", CONDITION, COND,
       "condition `math.isfinite(err) and 0 <= err <= get_float(tol, \"atol\", where)`; FAIL: maximum absolute "
       "error {err} exceeds the recorded atol {tol.get('atol')}",
       "A CUDA replay validation block (spec 2.10 / 7.5): 212 checks, the maximum error within the recorded "
       "tolerance (and the protocol's 2e-5 / 3e-3), both depths with the smoke's batch split, the flags.",
       "checks/original_fields.check_replay_validation"),
    _c("original.cuda_validation.passed", ATTESTED, EXACT,
       "passed = numerical and smoke: recorded equals `get(nv, \"passed\", bool, w) and get(smoke, \"passed\", "
       "bool, w)`",
       "``cache-audit/cuda-validation.json`` and the base study's draw-0 ``cuda_validation``.",
       "checks/original_fields.check_cuda_validation"),
    _c("original.cuda_validation.runtime", ATTESTED, EXACT,
       "workspace, runtime wrapper and learner sources, board and torch vs the protocol and records: "
       "recorded equals `{\"workspace\": \":16:8\", \"cublas\": \":16:8\", \"configured_before_cuda_initialization\": "
       "True, \"frozen_learner_sh...`",
       "``cache-audit/cuda-validation.json`` and the base study's draw-0 ``cuda_validation``.",
       "checks/original_fields.check_cuda_validation"),
    _c("original.cuda_validation.smoke", ATTESTED, EXACT,
       "smoke counts, batch split of the 19 examples, config, passed = all its flags: recorded equals "
       "`{\"train_examples\": get_int(md, \"train_count\", w), \"query_examples\": get_int(md, \"test_count\", w), "
       "\"batch_si...`",
       "``cache-audit/cuda-validation.json`` and the base study's draw-0 ``cuda_validation``.",
       "checks/original_fields.check_cuda_validation"),
    _c("original.cuda_validation.smoke_inputs", RECOMPUTED, EXACT,
       "smoke input hashes vs the synthetic smoke data rebuilt (bundle.phases.validate): recorded equals "
       "`{k: data.array_sha256(smoke[k]) for k in (\"train_images\", \"train_labels\", \"test_images\")}`",
       "Every metadata block: own fields against the frozen draw-0 metadata, state hashes across blocks.",
       "checks/original_fields.check_metadata"),
    _c("original.cuda_validation.tolerance", RECOMPUTED, EXACT,
       "tolerance (spec 7.1): recorded equals `{\"atol\": 2e-05, \"rtol\": 0.003}`",
       "A CUDA replay validation block (spec 2.10 / 7.5): 212 checks, the maximum error within the recorded "
       "tolerance (and the protocol's 2e-5 / 3e-3), both depths with the smoke's batch split, the flags.",
       "checks/original_fields.check_replay_validation"),
    _c("original.energy.run_count", RECOMPUTED, EXACT,
       "run_count before / after = 2 / 2 + 1 + 3 × repeats: recorded equals `[2, 2 + 1 + 3 * repeats]`",
       "Draw-0 energy (results/draw-00.json) and its copies in submission/verification.",
       "checks/original.check_energy"),
    _c("original.energy.software", ATTESTED, EXACT,
       "every cache-audit record carries the same value",
       "Every metadata block: own fields against the frozen draw-0 metadata, state hashes across blocks.",
       "checks/original_fields.check_metadata"),
    _c("original.energy.state_hash_keys_checked", RECOMPUTED, EXACT,
       "the draw-0 replay compared all eight state hashes: recorded equals `sorted(STATE_KEYS)`",
       "The job fields of each cache fixture record against the plan, the protocol and the record itself.",
       "checks/original_fields.check_cache_jobs"),
    _c("original.frozen_config", RECOMPUTED, EXACT,
       "`get_dict(sub, \"configuration\", ws)` equals `FROZEN_CONFIG`",
       "submission.json derived figures: parameters, payloads, memory by draw, selection block.",
       "checks/original.check_submission"),
    _c("original.integrity.binary_sha256", RECOMPUTED, EXACT,
       "file sha256 recorded in {recorder}: recorded equals `hashlib.sha256(data).hexdigest()`",
       "Integrity of the original archive: layout, sha chains, lengths, bundle pins.",
       "original_layout.verify_original_archive"),
    _c("original.integrity.bundle_added", RECOMPUTED, EXACT,
       "sha256 pinned by this bundle for the file it adds to the original: recorded equals "
       "`hashlib.sha256(added).hexdigest()`",
       "Integrity of the original archive: layout, sha chains, lengths, bundle pins.",
       "original_layout.verify_original_archive"),
    _c("original.integrity.bundle_pin_sha256", RECOMPUTED, EXACT,
       "sha256 pinned by this bundle when it shipped the copy (the original records none): recorded equals "
       "`sha[rel]`",
       "Integrity of the original archive: layout, sha chains, lengths, bundle pins.",
       "original_layout.verify_original_archive"),
    _c("original.integrity.files", RECOMPUTED, NONE,
       "PASS: {len(SHA_VERIFIED)} files sha-verified through recorded chains, {len(LENGTH_ONLY)} "
       "length-verified and pinned",
       "Integrity of the original archive: layout, sha chains, lengths, bundle pins.",
       "original_layout.verify_original_archive"),
    _c("original.integrity.json", GUARD, NONE,
       "FAIL: the error's own message (malformed input)",
       "Integrity of the original archive: layout, sha chains, lengths, bundle pins.",
       "original_layout.verify_original_archive"),
    _c("original.integrity.length", RECOMPUTED, EXACT,
       "character count recorded in spec appendix A: recorded equals `len(raw[rel])`",
       "Integrity of the original archive: layout, sha chains, lengths, bundle pins.",
       "original_layout.verify_original_archive"),
    _c("original.integrity.missing", GUARD, NONE,
       "FAIL: original evidence file is absent (or a link): restore it from the repository",
       "Integrity of the original archive: layout, sha chains, lengths, bundle pins.",
       "original_layout.verify_original_archive"),
    _c("original.integrity.regular_file", GUARD, NONE,
       "FAIL: the error's own message (malformed input)",
       "Integrity of the original archive: layout, sha chains, lengths, bundle pins.",
       "original_layout.verify_original_archive"),
    _c("original.integrity.restored_missing", GUARD, NONE,
       "FAIL: predictions/PROVENANCE.md says this bundle restored this file, but it is absent: restore it "
       "from the repository (git checkout -- evidence/)",
       "Integrity of the original archive: layout, sha chains, lengths, bundle pins.",
       "original_layout.verify_original_archive"),
    _c("original.integrity.sha_chain", RECOMPUTED, EXACT,
       "sha256 of {target} as recorded in {recorder}: recorded equals `sha[target]`",
       "The internal sha256 chains (:data:`SHA_CHAIN`) over the files' bytes.",
       "original_layout.check_sha_chains"),
    _c("original.integrity.symlink", GUARD, NONE,
       "FAIL: symbolic link or special file inside the archive: remove it",
       "Integrity of the original archive: layout, sha chains, lengths, bundle pins.",
       "original_layout.verify_original_archive"),
    _c("original.integrity.unlisted", GUARD, NONE,
       "FAIL: file is not part of the original evidence layout: remove it",
       "Integrity of the original archive: layout, sha chains, lengths, bundle pins.",
       "original_layout.verify_original_archive"),
    _c("original.manifest.dataset_seed", RECOMPUTED, EXACT,
       "`[get_int(d, \"dataset_seed\", \"draw-manifest.json\"), get_int(e, \"dataset_seed\", "
       "\"prediction-manifest.json\")]` equals `[SEED_BASE + i] * 2`",
       "Draw and prediction manifests: draws 0…10, seeds, paths, index and label hashes.",
       "checks/original.check_manifests"),
    _c("original.manifest.draws", RECOMPUTED, EXACT,
       "`[get_int(d, \"draw\", \"draw-manifest.json\") for d in dm_draws]` equals `list(DRAWS)`",
       "Draw and prediction manifests: draws 0…10, seeds, paths, index and label hashes.",
       "checks/original.check_manifests"),
    _c("original.manifest.entries", RECOMPUTED, EXACT,
       "`[get_int(e, \"draw\", \"prediction-manifest.json\") for e in entries]` equals `list(DRAWS)`",
       "Draw and prediction manifests: draws 0…10, seeds, paths, index and label hashes.",
       "checks/original.check_manifests"),
    _c("original.manifest.paths", RECOMPUTED, EXACT,
       "`[get_str(e, \"prediction_path\", \"prediction-manifest.json\"), get_str(e, \"result_path\", "
       "\"prediction-manifest.json\")]` equals `[f\"predictions/draw-{i:02d}.npy\", "
       "f\"results/draw-{i:02d}.json\"]`",
       "Draw and prediction manifests: draws 0…10, seeds, paths, index and label hashes.",
       "checks/original.check_manifests"),
    _c("original.manifest.train_test_disjoint", RECOMPUTED, EXACT,
       "`get_bool(d, \"train_test_disjoint\", \"draw-manifest.json\")` equals `True`",
       "Draw and prediction manifests: draws 0…10, seeds, paths, index and label hashes.",
       "checks/original.check_manifests"),
    _c("original.prediction_manifest.test_labels_scored", RECOMPUTED, EXACT,
       "`get_bool(pm, \"test_labels_scored\", \"prediction-manifest.json\")` equals `False`",
       "Draw and prediction manifests: draws 0…10, seeds, paths, index and label hashes.",
       "checks/original.check_manifests"),
    _c("original.profile_plan", ATTESTED, EXACT,
       "profile plan vs the profile commands and the cache plan's fixture: recorded equals `{\"replay_mode\": "
       "flag(\"--replay-mode\"), \"cache_control\": flag(\"--cache-control\"), \"clock_control\": flag(\"--c...`",
       "profile-plan.json and the cache submission's sources against the commands and records they describe.",
       "checks/original_fields.check_plans"),
    _c("original.protocol.counts", RECOMPUTED, EXACT,
       "`[get_int(p, \"train_count\", w), get_int(p, \"test_count\", w)]` equals `[10_000, 10_000]`",
       "protocol.json and config.json: counts, seeds, threshold, frozen configuration.",
       "checks/original.check_protocol"),
    _c("original.protocol.dataset_seeds", RECOMPUTED, EXACT,
       "`get_list(p, \"dataset_seeds\", w)` equals `[SEED_BASE + i for i in DRAWS]`",
       "protocol.json and config.json: counts, seeds, threshold, frozen configuration.",
       "checks/original.check_protocol"),
    _c("original.protocol.draw_count", RECOMPUTED, EXACT,
       "`get_int(p, \"draw_count\", w)` equals `11`",
       "protocol.json and config.json: counts, seeds, threshold, frozen configuration.",
       "checks/original.check_protocol"),
    _c("original.protocol.fields", ATTESTED, EXACT,
       "raw file names vs the bundle's pins; fresh state per run vs the learner metadata: recorded equals "
       "`{\"raw_files\": [pin.name for pin in _raw_pins(get_dict(protocol, \"raw_sources\", \"protocol.json\"))], "
       "\"new_sta...`",
       "submission.json, verification.json, cache-audit/submission.json and protocol.json: the remaining "
       "fields.",
       "checks/original_fields.check_submissions"),
    _c("original.protocol.learner_seed", ATTESTED, EXACT,
       "`get_int(p, \"learner_seed\", w)` equals `get_int(p, \"configuration.seed\", w)`",
       "protocol.json and config.json: counts, seeds, threshold, frozen configuration.",
       "checks/original.check_protocol"),
    _c("original.protocol.required_correct", ATTESTED, EXACT,
       "`get_int(p, \"required_correct\", w)` equals `round(accuracy.TOTAL * (100 - get_int(p, "
       "\"error_target_percent\", w)) / 100)`",
       "protocol.json and config.json: counts, seeds, threshold, frozen configuration.",
       "checks/original.check_protocol"),
    _c("original.protocol.total", RECOMPUTED, EXACT,
       "`get_int(p, \"total\", w)` equals `accuracy.TOTAL`",
       "protocol.json and config.json: counts, seeds, threshold, frozen configuration.",
       "checks/original.check_protocol"),
    _c("original.result.counts", RECOMPUTED, EXACT,
       "`[get_int(md, \"train_count\", w), get_int(md, \"test_count\", w)]` equals `[10_000, 10_000]`",
       "Per-draw result records (spec 7.1 per-draw list).",
       "checks/original.check_results"),
    _c("original.result.cpu_validation", CONDITION, COND,
       "condition `get_bool(md, \"validation.passed\", w) and len(checks) == 4 and all(get_bool(c, \"passed\", "
       "w) and get_bool(c, \"forward_bitw`; FAIL: CPU reconstruction self-test did not pass 4 cases",
       "Per-draw result records (spec 7.1 per-draw list).",
       "checks/original.check_results"),
    _c("original.result.energy_only_draw0", RECOMPUTED, EXACT,
       "energy record present: recorded equals `i == 0`",
       "Per-draw result records (spec 7.1 per-draw list).",
       "checks/original.check_results"),
    _c("original.result.final_differs_from_initial", CONDITION, COND,
       "condition `all(get_dict(md, \"final_parameter_sha256\", w)[k] != v for k, v in get_dict(md, "
       "\"initial_parameter_sha256\", w).items())`; FAIL: a final parameter hash equals its initial hash: "
       "training did not update it",
       "Per-draw result records (spec 7.1 per-draw list).",
       "checks/original.check_results"),
    _c("original.result.fresh_flags", RECOMPUTED, EXACT,
       "`[get_bool(md, \"fresh_initialization_per_run\", w), get_bool(md, \"checkpoint_loaded\", w), get_int(md, "
       "\"run_count\", w)]` equals `[True, False, 1]`",
       "Per-draw result records (spec 7.1 per-draw list).",
       "checks/original.check_results"),
    _c("original.result.initial_equals_selected_candidate", RECOMPUTED, EXACT,
       "`get_dict(md, \"initial_parameter_sha256\", w)` equals `selected_initial`",
       "Per-draw result records (spec 7.1 per-draw list).",
       "checks/original.check_results"),
    _c("original.result.input_hashes_agree", ATTESTED, EXACT,
       "metadata input_hashes vs result input_sha256: recorded equals `get_dict(r, \"input_sha256\", w)`",
       "Per-draw result records (spec 7.1 per-draw list).",
       "checks/original.check_results"),
    _c("original.result.input_hashes_manifest", ATTESTED, EXACT,
       "result vs draw manifest: recorded equals `get_dict(dm[i], \"input_sha256\", \"draw-manifest.json\")`",
       "Per-draw result records (spec 7.1 per-draw list).",
       "checks/original.check_results"),
    _c("original.result.learner_sha256", RECOMPUTED, EXACT,
       "`get_str(r, \"learner_sha256\", w)` equals `learner_sha`",
       "Per-draw result records (spec 7.1 per-draw list).",
       "checks/original.check_results"),
    _c("original.result.memory_order", CONDITION, COND,
       "condition `0 <= entry <= peak and after <= peak and after <= reserved`; FAIL: memory ordering "
       "broken: entry {entry}, peak {peak}, after {after}, reserved {reserved}",
       "Per-draw result records (spec 7.1 per-draw list).",
       "checks/original.check_results"),
    _c("original.result.parameter_count", RECOMPUTED, EXACT,
       "`get_int(md, \"parameter_count\", w)` equals `parameter_count(depth)`",
       "Per-draw result records (spec 7.1 per-draw list).",
       "checks/original.check_results"),
    _c("original.result.predictions_sha256", RECOMPUTED, EXACT,
       "payload sha of the predictions: recorded equals `draws.data.array_sha256(preds)`",
       "Per-draw result records (spec 7.1 per-draw list).",
       "checks/original.check_results"),
    _c("original.result.reversibility", RECOMPUTED, EXACT,
       "`[get_bool(md, \"reversible_core\", w), get_int(md, \"retained_core_states\", w), get_int(md, "
       "\"core_saved_bytes_per_example\", w), get_bool(md, \"input_lift_injective\", w)]` equals `[True, 1, "
       "CORE_BYTES_PER_EXAMPLE, True]`",
       "Per-draw result records (spec 7.1 per-draw list).",
       "checks/original.check_results"),
    _c("original.selection.accuracy_percent", RECOMPUTED, FLOAT,
       "`r.get(\"accuracy_percent\")` close to `c / 20.0`",
       "validation-plan.json + validation.json: split hashes, rescoring, the selection rule.",
       "checks/original.check_selection"),
    _c("original.selection.candidate", ATTESTED, EXACT,
       "result config = the candidate's, learner = the protocol's, its prediction file: recorded equals "
       "`[get_dict(r, \"config\", w), learner, f\"validation-predictions/candidate-{k:02d}.npy\"]`",
       "validation.json candidates: result config, learner source and prediction path.",
       "checks/original_fields.check_selection_fields"),
    _c("original.selection.complete", RECOMPUTED, EXACT,
       "`get_bool(val, \"complete\", wv)` equals `True`",
       "validation-plan.json + validation.json: split hashes, rescoring, the selection rule.",
       "checks/original.check_selection"),
    _c("original.selection.configs", RECOMPUTED, EXACT,
       "record configs = plan configs: recorded equals `configs`",
       "validation-plan.json + validation.json: split hashes, rescoring, the selection rule.",
       "checks/original.check_selection"),
    _c("original.selection.dataset_seed", RECOMPUTED, EXACT,
       "`get_int(plan, \"dataset_seed\", wp)` equals `SEED_BASE`",
       "validation-plan.json + validation.json: split hashes, rescoring, the selection rule.",
       "checks/original.check_selection"),
    _c("original.selection.learner_sha256", ATTESTED, EXACT,
       "`get_str(plan, \"learner_sha256\", wp)` equals `get(p, (\"source_sha256\", \"learner.py\"), str, "
       "\"protocol.json\")`",
       "validation-plan.json + validation.json: split hashes, rescoring, the selection rule.",
       "checks/original.check_selection"),
    _c("original.selection.rescored", RECOMPUTED, EXACT,
       "validation correct (rescored): recorded equals `got`",
       "validation-plan.json + validation.json: split hashes, rescoring, the selection rule.",
       "checks/original.check_selection"),
    _c("original.selection.result_config", ATTESTED, EXACT,
       "`get_dict(md, \"config\", wv)` equals `get_dict(r, \"config\", wv)`",
       "validation-plan.json + validation.json: split hashes, rescoring, the selection rule.",
       "checks/original.check_selection"),
    _c("original.selection.rule", ATTESTED, EXACT,
       "eligible = correct >= 1780; min (epochs, depth, correct) -> protocol configuration: recorded equals "
       "`get_dict(records[chosen], \"config\", wv) if chosen is not None else None`",
       "validation-plan.json + validation.json: split hashes, rescoring, the selection rule.",
       "checks/original.check_selection"),
    _c("original.selection.total", RECOMPUTED, EXACT,
       "`get_int(r, \"total\", wv)` equals `draws.SELECTION_VALIDATION_COUNT`",
       "validation-plan.json + validation.json: split hashes, rescoring, the selection rule.",
       "checks/original.check_selection"),
    _c("original.selection.train_indices_sha256", RECOMPUTED, EXACT,
       "`get_str(plan, \"train_indices_sha256\", wp)` equals `h[\"train_indices_sha256\"]`",
       "validation-plan.json + validation.json: split hashes, rescoring, the selection rule.",
       "checks/original.check_selection"),
    _c("original.selection.train_labels", RECOMPUTED, EXACT,
       "selection train label hash: recorded equals `h[\"train_labels\"]`",
       "validation-plan.json + validation.json: split hashes, rescoring, the selection rule.",
       "checks/original.check_selection"),
    _c("original.selection.validation_indices_sha256", RECOMPUTED, EXACT,
       "`get_str(plan, \"validation_indices_sha256\", wp)` equals `h[\"validation_indices_sha256\"]`",
       "validation-plan.json + validation.json: split hashes, rescoring, the selection rule.",
       "checks/original.check_selection"),
    _c("original.submission.a100", ATTESTED, EXACT,
       "A100 block vs the draw-0 energy record: recorded equals `{\"draw_measured\": 0, "
       "\"dataset_seed_measured\": SEED_BASE, \"software\": get_dict(e0, \"software\", \"draw-00\"), \"...`",
       "submission.json, verification.json, cache-audit/submission.json and protocol.json: the remaining "
       "fields.",
       "checks/original_fields.check_submissions"),
    _c("original.submission.a100.energy_mj", RECOMPUTED, FLOAT,
       "`a100.get(\"energy_mj\")` close to `statistics.mean(adj)`",
       "Draw-0 energy (results/draw-00.json) and its copies in submission/verification.",
       "checks/original.check_energy"),
    _c("original.submission.a100.energy_sample_sd_mj", RECOMPUTED, FLOAT,
       "`a100.get(\"energy_sample_sd_mj\")` close to `statistics.stdev(adj)`",
       "Draw-0 energy (results/draw-00.json) and its copies in submission/verification.",
       "checks/original.check_energy"),
    _c("original.submission.a100.hardware", ATTESTED, EXACT,
       "`get_dict(a100, \"hardware\", ws)` equals `get_dict(e, \"hardware\", w)`",
       "Draw-0 energy (results/draw-00.json) and its copies in submission/verification.",
       "checks/original.check_energy"),
    _c("original.submission.a100.runtime_ms", RECOMPUTED, FLOAT,
       "`a100.get(\"runtime_ms\")` close to `statistics.mean(cuda)`",
       "Draw-0 energy (results/draw-00.json) and its copies in submission/verification.",
       "checks/original.check_energy"),
    _c("original.submission.a100.runtime_sample_sd_ms", RECOMPUTED, FLOAT,
       "`a100.get(\"runtime_sample_sd_ms\")` close to `statistics.stdev(cuda)`",
       "Draw-0 energy (results/draw-00.json) and its copies in submission/verification.",
       "checks/original.check_energy"),
    _c("original.submission.a100.trials", RECOMPUTED, EXACT,
       "`[get_int(a100, \"trials\", ws), get_int(a100, \"fresh_invocations_per_trial\", ws)]` equals `[3, "
       "repeats]`",
       "Draw-0 energy (results/draw-00.json) and its copies in submission/verification.",
       "checks/original.check_energy"),
    _c("original.submission.accuracy_draws", RECOMPUTED, EXACT,
       "one accuracy row per draw: recorded equals `len(DRAWS)`",
       "submission.json, verification.json, cache-audit/submission.json and protocol.json: the remaining "
       "fields.",
       "checks/original_fields.check_submissions"),
    _c("original.submission.accuracy_row", RECOMPUTED, EXACT,
       "submission row = accuracy row + learner seed + first-run cuda_ms: recorded equals `expect`",
       "accuracy.json, verification.json, submission accuracy: counts, aggregates, confusion matrix.",
       "checks/original.check_accuracy"),
    _c("original.submission.dataset_seeds", RECOMPUTED, EXACT,
       "`get_list(sub, \"dataset_seeds\", ws)` equals `[SEED_BASE + i for i in DRAWS]`",
       "submission.json derived figures: parameters, payloads, memory by draw, selection block.",
       "checks/original.check_submission"),
    _c("original.submission.fields", ATTESTED, EXACT,
       "tier, target, learner seed and status vs the protocol and the accuracy: recorded equals "
       "`{\"schema_version\": 1, \"tier\": \"MNIST-medium\", \"target_error_percent\": get_int(protocol, "
       "\"error_target_perce...`",
       "submission.json, verification.json, cache-audit/submission.json and protocol.json: the remaining "
       "fields.",
       "checks/original_fields.check_submissions"),
    _c("original.submission.four_parameter_state_payload_bytes", RECOMPUTED, EXACT,
       "`get_int(sub, \"four_parameter_state_payload_bytes\", ws)` equals `16 * n`",
       "submission.json derived figures: parameters, payloads, memory by draw, selection block.",
       "checks/original.check_submission"),
    _c("original.submission.grid", RECOMPUTED, EXACT,
       "no grid measurement was made (every grid figure null): recorded equals `{\"energy_mj\": None, "
       "\"runtime_ms\": None, \"peak_scratch_bytes\": None, \"active_processors\": None, \"word_node_h...`",
       "submission.json, verification.json, cache-audit/submission.json and protocol.json: the remaining "
       "fields.",
       "checks/original_fields.check_submissions"),
    _c("original.submission.memory_fields", ATTESTED, EXACT,
       "retained core states vs the learner metadata; grid scratch vs the grid block: recorded equals "
       "`[get_int(draw0, \"metadata.retained_core_states\", \"draw-00\"), get(sub, \"grid.peak_scratch_bytes\", "
       "None, ws)]`",
       "submission.json, verification.json, cache-audit/submission.json and protocol.json: the remaining "
       "fields.",
       "checks/original_fields.check_submissions"),
    _c("original.submission.name", ATTESTED, EXACT,
       "name from the submission date; the date of the build: recorded equals `[f\"rev88-{date.replace('-', "
       "'')}\", get_str(base, \"built_at_utc\", \"submission.json\")[:10]]`",
       "profile-plan.json and the cache submission's sources against the commands and records they describe.",
       "checks/original_fields.check_plans"),
    _c("original.submission.parameter_count", RECOMPUTED, EXACT,
       "`get_int(sub, \"parameter_count\", ws)` equals `n`",
       "submission.json derived figures: parameters, payloads, memory by draw, selection block.",
       "checks/original.check_submission"),
    _c("original.submission.parameter_payload_bytes", RECOMPUTED, EXACT,
       "`get_int(sub, \"parameter_payload_bytes\", ws)` equals `4 * n`",
       "submission.json derived figures: parameters, payloads, memory by draw, selection block.",
       "checks/original.check_submission"),
    _c("original.submission.qualifies", ATTESTED, EXACT,
       "`get_bool(sub, \"qualifies\", ws)` equals `get_int(f.json(\"accuracy.json\"), \"correct\", "
       "\"accuracy.json\") >= accuracy.REQUIRED_CORRECT`",
       "submission.json derived figures: parameters, payloads, memory by draw, selection block.",
       "checks/original.check_submission"),
    _c("original.submission.report_checks", ATTESTED, EXACT,
       "every report check the original ran passed (this verifier redoes each): recorded equals `{k: True "
       "for k in get_dict(sub, \"report_checks\", ws)} | {\"passed\": True}`",
       "submission.json, verification.json, cache-audit/submission.json and protocol.json: the remaining "
       "fields.",
       "checks/original_fields.check_submissions"),
    _c("original.submission.required_correct", RECOMPUTED, EXACT,
       "`get_int(sub, \"required_correct\", ws)` equals `accuracy.REQUIRED_CORRECT`",
       "submission.json derived figures: parameters, payloads, memory by draw, selection block.",
       "checks/original.check_submission"),
    _c("original.submission.selection", ATTESTED, EXACT,
       "`[get_int(sel, k, ws) for k in (\"training_examples\", \"validation_examples\", \"candidate_count\", "
       "\"selected_correct\", \"selected_total\")]` equals `[draws.SELECTION_TRAIN_COUNT, "
       "draws.SELECTION_VALIDATION_COUNT, len(val), get_int(val[10], \"correct\", \"validation.json\"), "
       "draws.SELECTION_VALIDATION_COUNT]`",
       "submission.json derived figures: parameters, payloads, memory by draw, selection block.",
       "checks/original.check_submission"),
    _c("original.submission.selection_flags", RECOMPUTED, EXACT,
       "selection on the training-only split: recorded equals `True`",
       "submission.json, verification.json, cache-audit/submission.json and protocol.json: the remaining "
       "fields.",
       "checks/original_fields.check_submissions"),
    _c("original.submission.sources", ATTESTED, EXACT,
       "sources vs the protocol's: recorded equals `{\"training_source_sha256\": get_dict(protocol, "
       "\"source_sha256\", \"protocol.json\"), \"raw_mnist_sources\": {k: v...`",
       "submission.json, verification.json, cache-audit/submission.json and protocol.json: the remaining "
       "fields.",
       "checks/original_fields.check_submissions"),
    _c("original.verification.confusion_row_sums", RECOMPUTED, EXACT,
       "row sums = evaluation label counts per class: recorded equals `np.bincount(labels, "
       "minlength=10).tolist()`",
       "accuracy.json, verification.json, submission accuracy: counts, aggregates, confusion matrix.",
       "checks/original.check_accuracy"),
    _c("original.verification.confusion_shape", RECOMPUTED, EXACT,
       "`list(cm.shape)` equals `[10, 10]`",
       "accuracy.json, verification.json, submission accuracy: counts, aggregates, confusion matrix.",
       "checks/original.check_accuracy"),
    _c("original.verification.confusion_trace", RECOMPUTED, EXACT,
       "trace = correct: recorded equals `sum(corrects)`",
       "accuracy.json, verification.json, submission accuracy: counts, aggregates, confusion matrix.",
       "checks/original.check_accuracy"),
    _c("original.verification.counts", RECOMPUTED, EXACT,
       "`[get_int(v, \"draws_verified\", wv), get_int(v, \"predictions_verified\", wv)]` equals `[11, "
       "accuracy.TOTAL]`",
       "accuracy.json, verification.json, submission accuracy: counts, aggregates, confusion matrix.",
       "checks/original.check_accuracy"),
    _c("original.verification.energy", ATTESTED, EXACT,
       "energy block vs the draw-0 record: recorded equals `{\"passed\": True, \"draw_index\": 0, \"trials\": "
       "len(get_list(e0, \"trials\", \"draw-00\")), \"invocations_per_trial\"...`",
       "submission.json, verification.json, cache-audit/submission.json and protocol.json: the remaining "
       "fields.",
       "checks/original_fields.check_submissions"),
    _c("original.verification.energy.mean_cuda_ms_per_task", RECOMPUTED, FLOAT,
       "`get(v, \"energy.mean_cuda_ms_per_task\", None, wv)` close to `float(np.mean(cuda))`",
       "Draw-0 energy (results/draw-00.json) and its copies in submission/verification.",
       "checks/original.check_energy"),
    _c("original.verification.energy.mean_idle_adjusted_mj_per_task", RECOMPUTED, FLOAT,
       "`get(v, \"energy.mean_idle_adjusted_mj_per_task\", None, wv)` close to `float(np.mean(adj))`",
       "Draw-0 energy (results/draw-00.json) and its copies in submission/verification.",
       "checks/original.check_energy"),
    _c("original.verification.flags", RECOMPUTED, EXACT,
       "the original verifier's verdicts (this verifier redoes each): recorded equals `{\"passed\": True, "
       "\"all_draw_indices_and_inputs_recomputed\": True, \"all_frozen_source_and_prediction_hashes_m...`",
       "submission.json, verification.json, cache-audit/submission.json and protocol.json: the remaining "
       "fields.",
       "checks/original_fields.check_submissions"),
    _c("original.verification.selection", ATTESTED, EXACT,
       "selection block vs validation.json and the protocol: recorded equals `{\"candidates\": len(val), "
       "\"failed_candidates\": 0, \"selected_correct\": get_int(val[10], \"correct\", \"v\"), \"sel...`",
       "submission.json, verification.json, cache-audit/submission.json and protocol.json: the remaining "
       "fields.",
       "checks/original_fields.check_submissions"),
    _c("placement.board", CONDITION, COND,
       "condition `pl.get(\"cuda_visible_devices\") == given and (not cuda or pl.get(\"board_uuid\") == given) "
       "and given in listed`; FAIL: given board {given}, CUDA_VISIBLE_DEVICES "
       "{pl.get('cuda_visible_devices')}, found {pl.get('board_uuid')}, run's boards {sorted(b for b in "
       "listed if b)}",
       "Every placed job ran on the board it was given, one of the boards the run used.",
       "checks/run_timing.check_placement"),
    _c("placement.error", GUARD, NONE,
       "FAIL when the record is malformed or checking it raises",
       "Every placed job ran on the board it was given, one of the boards the run used.",
       "checks/run_timing.check_placement"),
    _c("placement.found", CONDITION, COND,
       "condition `not cuda or not hw.get(\"uuid\") or (pl.get(\"board_uuid\") == hw.get(\"uuid\") and "
       "pl.get(\"nvml_pci_bus_id\") == hw.get(\"nvml_`; FAIL: placement names board {pl.get('board_uuid')} "
       "({pl.get('nvml_pci_bus_id')}) but the record's device is {hw.get('uuid')} "
       "({hw.get('nvml_pci_bus_id')})",
       "Every placed job ran on the board it was given, one of the boards the run used.",
       "checks/run_timing.check_placement"),
    _c("placement.gpu_lock", RECOMPUTED, EXACT,
       "lock scope allowed for the phase; taken (and made exclusive, for a shared profile lock, before the "
       "warm-ups) at the times the process's timeline gives: recorded equals `want`",
       "A fixture's GPU lock against its phase and its own timeline (``bundle.fixture.acquire_gpu_lock``).",
       "checks/run_timing._check_gpu_lock"),
    _c("placement.invocation", CONDITION, COND,
       "condition `bool(listed)`; FAIL: {len(placed)} record(s) were given a board (first {placed[0]}) but "
       "no reproduce invocation lists the run's boards",
       "Every placed job ran on the board it was given, one of the boards the run used.",
       "checks/run_timing.check_placement"),
    _c("placement.recorded", CONDITION, COND,
       "condition `isinstance(pl, dict) and bool(pl.get(\"given_board_uuid\"))`; FAIL: the run placed every "
       "job on a board (--gpus), but this record names none",
       "Every placed job ran on the board it was given, one of the boards the run used.",
       "checks/run_timing.check_placement"),
    _c("profile.capabilities", GUARD, NONE,
       "FAIL: capabilities.json.gz absent",
       "``profiles.json.gz`` recomputed from the run records; versions vs ``capabilities.json.gz``.",
       "checks/run_profile.check_summary"),
    _c("profile.capabilities.fields", ATTESTED, EXACT,
       "metric query command, metrics and flags vs bundle.profile: recorded equals `{\"schema_version\": 1, "
       "\"argv\": list(counters.query_argv(ncu or \"?\")), \"metrics\": list(counters.NCU_METRICS),...`",
       "Profile run records' remaining fields, the capabilities and the summary's own fields.",
       "checks/run_fields.check_profile_fields"),
    _c("profile.capabilities.ncu_version", RECOMPUTED, FIELDS,
       "ncu version vs `ncu --version`",
       "``profiles.json.gz`` recomputed from the run records; versions vs ``capabilities.json.gz``.",
       "checks/run_profile.check_summary"),
    _c("profile.command", RECOMPUTED, EXACT,
       "app-range, cache-control none, clock-control none; no --graph-profiling/--profile-from-start: "
       "recorded equals `True`",
       "One profile of summary.json: per-sequence figures from the metric rows, attributes, passes.",
       "checks/original_cache.check_profile_entry, checks/run_profile.check_run"),
    _c("profile.csv_metric_rows", RECOMPUTED, EXACT,
       "metric rows re-parsed from the raw CSV: recorded equals `rows.metric_rows()`",
       "All checks of one run record; returns (verdicts, recomputed figures or None).",
       "checks/run_profile.check_run"),
    _c("profile.csv_present", GUARD, NONE,
       "FAIL: {csv_rel} missing: raw ncu output is required",
       "All checks of one run record; returns (verdicts, recomputed figures or None).",
       "checks/run_profile.check_run"),
    _c("profile.cuda_launch", RECOMPUTED, EXACT,
       "problems of the learner block's launch shape against the CSV's launch cells: recorded equals `[]`",
       "The CUDA kernel tool's launch as Nsight Compute saw it (the training range's one ``rev88_train`` "
       "launch: grid, block and cluster size, dynamic shared memory) against the fixture record's learner "
       "block and the layout i...",
       "checks/run_profile._check_cuda_launch"),
    _c("profile.device_attributes", RECOMPUTED, EXACT,
       "device attributes re-parsed from the raw CSV: recorded equals `rows.device_attributes`",
       "All checks of one run record; returns (verdicts, recomputed figures or None).",
       "checks/run_profile.check_run"),
    _c("profile.device_attributes.same_board", ATTESTED, EXACT,
       "every record of one group (the same computation) carries the same value",
       "Profile run records' remaining fields, the capabilities and the summary's own fields.",
       "checks/run_fields.check_profile_fields"),
    _c("profile.device_name", RECOMPUTED, EXACT,
       "ncu display name vs fixture device: recorded equals `expected_name`",
       "ncu's device attributes agree with the fixture's device and the board's L2 size.",
       "checks/profile.check_device_attributes"),
    _c("profile.env_workspace", RECOMPUTED, EXACT,
       "CUBLAS_WORKSPACE_CONFIG in the job env: recorded equals `ws`",
       "All checks of one run record; returns (verdicts, recomputed figures or None).",
       "checks/run_profile.check_run"),
    _c("profile.figures", RECOMPUTED, FIELDS,
       "per-sequence figures (spec 6.3)",
       "All checks of one run record; returns (verdicts, recomputed figures or None).",
       "checks/run_profile.check_run"),
    _c("profile.files.first_report_kept", GUARD, NONE,
       "FAIL: repeat 0 of a profile must keep its .ncu-rep (bundle.phases.profile stores it under every "
       "--keep-reports policy); it is missing here",
       "Each ``files`` entry names a verified member with the manifest's hashes (or says why it is not "
       "stored).",
       "checks/run_profile.check_files_map"),
    _c("profile.files.hashes", RECOMPUTED, FIELDS,
       "files.{key} vs manifest",
       "Each ``files`` entry names a verified member with the manifest's hashes (or says why it is not "
       "stored).",
       "checks/run_profile.check_files_map"),
    _c("profile.files.not_stored", CONDITION, COND,
       "condition `stored is False and bool(entry.get(\"reason\"))`; FAIL: files.{key} has no path but does "
       "not say stored: false with a reason",
       "Each ``files`` entry names a verified member with the manifest's hashes (or says why it is not "
       "stored).",
       "checks/run_profile.check_files_map"),
    _c("profile.files.present", GUARD, NONE,
       "FAIL: {member} named by files.{key} is not a verified member of the archive",
       "Each ``files`` entry names a verified member with the manifest's hashes (or says why it is not "
       "stored).",
       "checks/run_profile.check_files_map"),
    _c("profile.fixture_record", RECOMPUTED, EXACT,
       "fixture record (workspace, scope, S, device, L2) vs the run and ncu: recorded equals `want`",
       "All checks of one run record; returns (verdicts, recomputed figures or None).",
       "checks/run_profile.check_run"),
    _c("profile.hit_rate_flag", RECOMPUTED, EXACT,
       "l2_sector_hit_rate_above_100_percent vs the hit rate (kept up to {counters.HIT_RATE_REFUSE_PERCENT} "
       "%, flagged above {counters.HIT_RATE_MAX_PERCENT} %): recorded equals "
       "`figures[\"l2_sector_hit_rate_percent\"] > counters.HIT_RATE_MAX_PERCENT`",
       "All checks of one run record; returns (verdicts, recomputed figures or None).",
       "checks/run_profile.check_run"),
    _c("profile.hit_rate_range", CONDITION, COND,
       "condition `hit <= hit_rate_max_percent`; FAIL: hit rate {hit} exceeds {hit_rate_max_percent}",
       "Recompute the per-sequence figures of a profile record from its metric rows.",
       "checks/profile.check_profile_figures"),
    _c("profile.l2_cache_size", RECOMPUTED, EXACT,
       "`int(get_str(attrs, \"device__attribute_l2_cache_size\", ws))` equals `A100_L2_BYTES`",
       "One profile of summary.json: per-sequence figures from the metric rows, attributes, passes.",
       "checks/original_cache.check_profile_entry, checks/profile.check_device_attributes"),
    _c("profile.l2_cache_size_bytes", RECOMPUTED, EXACT,
       "L2 size from ncu: recorded equals `rows.l2_cache_size_bytes`",
       "All checks of one run record; returns (verdicts, recomputed figures or None).",
       "checks/run_profile.check_run"),
    _c("profile.metric_query", CONDITION, COND,
       "condition `get(query, \"returncode\", int, where) == 0 and not missing`; FAIL: metric query rc "
       "{query.get('returncode')}, metrics not listed: {missing}",
       "Profile phase of a run archive (spec 6, docs/evidence-format.md ``profile/``).",
       "checks/run_profile._check_query"),
    _c("profile.metric_query.raw_sha256", RECOMPUTED, EXACT,
       "sha256 of stdout + stderr: recorded equals `raw_sha`",
       "Profile phase of a run archive (spec 6, docs/evidence-format.md ``profile/``).",
       "checks/run_profile._check_query"),
    _c("profile.ncu_output", GUARD, NONE,
       "FAIL: {out_rel} named by files.ncu_output is not in the archive",
       "The run's ncu output vs its CSV (byte for byte) and vs its fixture record (one line per pass).",
       "checks/run_profile_text.check_output"),
    _c("profile.ncu_output.csv", RECOMPUTED, EXACT,
       "the CSV vs the quoted lines of {out_rel}: recorded equals `\"\\n\".join(lines) + \"\\n\" if lines else \"\"`",
       "The run's ncu output vs its CSV (byte for byte) and vs its fixture record (one line per pass).",
       "checks/run_profile_text.check_output"),
    _c("profile.ncu_output.fixture", RECOMPUTED, EXACT,
       "the fixture's line per replay pass in {out_rel} vs the fixture record: recorded equals `[want] * "
       "(sum(passes) if passes else 1)`",
       "The run's ncu output vs its CSV (byte for byte) and vs its fixture record (one line per pass).",
       "checks/run_profile_text.check_output"),
    _c("profile.ncu_report", RECOMPUTED, NONE,
       "PASS: {len(metrics)} values of the .ncu-rep equal the summary's metric rows",
       "The profile's ``.ncu-rep.gz`` re-read with ``ncu_report`` and compared with the summary's metric "
       "rows.",
       "checks/original_cache.check_original_report, checks/profile.check_ncu_report, checks/run_profile._check_report"),
    _c("profile.ncu_version", RECOMPUTED, FIELDS,
       "ncu version vs `ncu --version`",
       "``profiles.json.gz`` recomputed from the run records; versions vs ``capabilities.json.gz``.",
       "checks/run_profile.check_summary"),
    _c("profile.pass_counts", RECOMPUTED, EXACT,
       "`get_list(entry, \"pass_counts\", ws)` equals `[int(get_str(attrs, \"profiler__replayer_passes\", ws))]`",
       "One profile of summary.json: per-sequence figures from the metric rows, attributes, passes.",
       "checks/original_cache.check_profile_entry, checks/run_profile.check_run"),
    _c("profile.raw_record", ATTESTED, EXACT,
       "raw record vs the summary's metric rows: recorded equals `{k: entry.get(k) for k in keys}`",
       "The profile's raw-output record ``cache-audit/<profile>.json.gz``: its metric rows, passes and "
       "attributes equal the summary's when the file is present (integrity checked its sha256).",
       "checks/original_cache.check_raw_record"),
    _c("profile.report_cross_check", CONDITION, COND,
       "condition `not bad and bool(metrics) and cc.get(\"action_name\") == csv.range_name`; FAIL: the "
       "run-time report cross-check does not agree with the CSV: {'; '.join(bad[:3])}",
       "The run's recorded report cross-check: csv values are the CSV's, report values agree within "
       "tolerance.",
       "checks/run_fields._runtime_cross_check"),
    _c("profile.run.fields", ATTESTED, EXACT,
       "run fields vs its name, the ncu command rebuilt from the capabilities, the CSV: recorded equals "
       "`{\"schema_version\": 1, \"name\": f\"{profile}-r{get_int(rec, 'repeat_index', rel):02d}\", \"profile\": "
       "profile, \"r...`",
       "Profile run records' remaining fields, the capabilities and the summary's own fields.",
       "checks/run_fields.check_profile_fields"),
    _c("profile.run.fields.error", GUARD, NONE,
       "FAIL when the record is malformed or checking it raises",
       "Profile run records' remaining fields, the capabilities and the summary's own fields.",
       "checks/run_fields.check_profile_fields"),
    _c("profile.run.fixture_copy", ATTESTED, EXACT,
       "the run's copy of its fixture record's facts: recorded equals `{\"workspace_config\": "
       "fx.get(\"cublas_workspace_config\"), \"gpu\": fx.get(\"gpu\"), \"l2_cache_bytes\": get(fx, \"ha...`",
       "Profile run records' remaining fields, the capabilities and the summary's own fields.",
       "checks/run_fields.check_profile_fields"),
    _c("profile.sequences_in_range", RECOMPUTED, EXACT,
       "`[get_int(prof, \"fresh_training_sequences_in_range\", ws), get_int(entry, \"range_training_sequences\", "
       "ws)]` equals `[sequences, sequences]`",
       "One profile of summary.json: per-sequence figures from the metric rows, attributes, passes.",
       "checks/original_cache.check_profile_entry"),
    _c("profile.summary", GUARD, NONE,
       "FAIL: profiles.json.gz absent",
       "``profiles.json.gz`` recomputed from the run records; versions vs ``capabilities.json.gz``.",
       "checks/run_profile.check_summary"),
    _c("profile.summary.fields", ATTESTED, EXACT,
       "summary fields vs the runs and the capabilities: recorded equals `{\"schema_version\": 1, \"draw\": 0, "
       "\"metrics\": list(counters.NCU_METRICS), \"l2_sector_bytes\": 32, \"device_attr...`",
       "Profile run records' remaining fields, the capabilities and the summary's own fields.",
       "checks/run_fields.check_profile_fields"),
    _c("profile.summary.gpu_lock_scope", RECOMPUTED, EXACT,
       "the GPU lock scope every run's fixture recorded: recorded equals `one`",
       "``profiles.json.gz`` ``placement``: its lock scope and lock text against every run's own lock "
       "record.",
       "checks/run_fields._summary_lock_checks"),
    _c("profile.summary.gpu_lock_text", ATTESTED, EXACT,
       "the lock sentence of the runs' scope (bundle.phases.profile.GPU_LOCK_TEXT): recorded equals "
       "`GPU_LOCK_TEXT.get(one, f\"the sentence of a known scope ({', '.join(GPU_LOCK_TEXT)})\")`",
       "``profiles.json.gz`` ``placement``: its lock scope and lock text against every run's own lock "
       "record.",
       "checks/run_fields._summary_lock_checks"),
    _c("profile.summary.learner", RECOMPUTED, EXACT,
       "the learner every run's fixture named (absent: the frozen rev88): recorded equals "
       "`json.loads(learners.pop()) if len(learners) == 1 else \"one learner for every run\"`",
       "Profile run records' remaining fields, the capabilities and the summary's own fields.",
       "checks/run_fields.check_profile_fields"),
    _c("profile.summary.mean_sd", RECOMPUTED, FIELDS,
       "mean and sample SD over repeats",
       "``profiles.json.gz`` recomputed from the run records; versions vs ``capabilities.json.gz``.",
       "checks/run_profile.check_summary"),
    _c("profile.summary.order", RECOMPUTED, EXACT,
       "runs in interleaved order (repeat, workspace, scope): recorded equals `plan`",
       "``profiles.json.gz`` recomputed from the run records; versions vs ``capabilities.json.gz``.",
       "checks/run_profile.check_summary"),
    _c("profile.summary.repeats", RECOMPUTED, FIELDS,
       "per-repeat figures from metric rows",
       "``profiles.json.gz`` recomputed from the run records; versions vs ``capabilities.json.gz``.",
       "checks/run_profile.check_summary"),
    _c("profile.summary.resumed_runs", CONDITION, COND,
       "condition `all(r in get_list(summary, \"order\", w) for r in resumed)`; FAIL: resumed runs {resumed} "
       "are not runs of the phase",
       "Profile run records' remaining fields, the capabilities and the summary's own fields.",
       "checks/run_fields.check_profile_fields"),
    _c("profile.summary.runs", GUARD, NONE,
       "FAIL: runs {missing} have no verified record",
       "``profiles.json.gz`` recomputed from the run records; versions vs ``capabilities.json.gz``.",
       "checks/run_profile.check_summary"),
    _c("qualify.concurrency", RECOMPUTED, EXACT,
       "draws that ran beside this one (from every draw's span in the same invocation), no more at once than "
       "its jobs: recorded equals `{\"overlapping_draws\": peers, \"ran_alone\": not peers, \"within_jobs\": "
       "True}`",
       "Overlaps recomputed per qualification invocation; spans inside the phase; jobs at once <= jobs.",
       "checks/run_timing._check_concurrency"),
    _c("qualify.concurrency.error", GUARD, NONE,
       "FAIL when the record is malformed or checking it raises",
       "Every placed job ran on the board it was given, one of the boards the run used.",
       "checks/run_timing.check_placement"),
    _c("qualify.concurrency.inside_phase", CONDITION, COND,
       "condition `span <= longest + SLACK_S`; FAIL: the draws' spans cover {span} s, more than the qualify "
       "phase took ({longest} s)",
       "Overlaps recomputed per qualification invocation; spans inside the phase; jobs at once <= jobs.",
       "checks/run_timing._check_concurrency"),
    _c("qualify.fields.error", GUARD, NONE,
       "FAIL when the record is malformed or checking it raises",
       "Draw records: the fresh-process block, top-level copies of the metadata hashes, the frozen "
       "comparison.",
       "checks/run_fields.check_qualify_fields"),
    _c("qualify.record.dataset_seed", RECOMPUTED, EXACT,
       "field `dataset_seed` equals `data.dataset_seed(i)`",
       "The identity fields of ``qualify/draw-XX.json.gz`` name draw *i* (the file name's index).",
       "checks/run_qualify.check_draw_identity"),
    _c("qualify.record.draw_index", RECOMPUTED, EXACT,
       "field `draw_index` equals `i`",
       "The identity fields of ``qualify/draw-XX.json.gz`` name draw *i* (the file name's index).",
       "checks/run_qualify.check_draw_identity"),
    _c("qualify.record.error", GUARD, NONE,
       "FAIL when the record is malformed or checking it raises",
       "qualify/: each draw's record and predictions, all 11 rescored; aggregate vs accuracy.json.gz.",
       "checks/run_qualify.check_qualify"),
    _c("qualify.record.fresh_process", ATTESTED, EXACT,
       "fresh-process block: one fixture process per draw (its allocator started empty), its prediction file "
       "the stored one, named storage as the frozen inventory: recorded equals `{\"runner\": "
       "\"FreshProcessRunner\", \"fresh_process\": True, \"environment_was_set_externally\": True, \"device\": N...`",
       "Draw records: the fresh-process block, top-level copies of the metadata hashes, the frozen "
       "comparison.",
       "checks/run_fields.check_qualify_fields"),
    _c("qualify.record.frozen_comparison", RECOMPUTED, EXACT,
       "comparison with the frozen draw recomputed: recorded equals `want_fc`",
       "Draw records: the fresh-process block, top-level copies of the metadata hashes, the frozen "
       "comparison.",
       "checks/run_fields.check_qualify_fields"),
    _c("qualify.record.hash_copies", ATTESTED, EXACT,
       "the record's state hashes vs its metadata's: recorded equals `{k: md.get(k) for k in STATE_KEYS}`",
       "Draw records: the fresh-process block, top-level copies of the metadata hashes, the frozen "
       "comparison.",
       "checks/run_fields.check_qualify_fields"),
    _c("qualify.record.hashes", GUARD, NONE,
       "FAIL when the record is malformed or checking it raises",
       "The identity fields of ``qualify/draw-XX.json.gz`` name draw *i* (the file name's index).",
       "checks/run_qualify.check_draw_identity"),
    _c("qualify.record.learner", RECOMPUTED, EXACT,
       "the learner the draw's fixture record names, the same in its metadata: recorded equals "
       "`fields.learner_name(md)`",
       "Draw records: the fresh-process block, top-level copies of the metadata hashes, the frozen "
       "comparison.",
       "checks/run_fields.check_qualify_fields"),
    _c("qualify.record.metadata_hashes", GUARD, NONE,
       "FAIL when the record is malformed or checking it raises",
       "The identity fields of ``qualify/draw-XX.json.gz`` name draw *i* (the file name's index).",
       "checks/run_qualify.check_draw_identity"),
    _c("qualify.record.metadata_predictions_sha256", ATTESTED, EXACT,
       "metadata vs record predictions_sha256: recorded equals `get_str(rec, \"predictions_sha256\", rel)`",
       "The identity fields of ``qualify/draw-XX.json.gz`` name draw *i* (the file name's index).",
       "checks/run_qualify.check_draw_identity"),
    _c("qualify.record.metadata_test_count", RECOMPUTED, EXACT,
       "field `metadata.test_count` equals `data.TEST_COUNT`",
       "The identity fields of ``qualify/draw-XX.json.gz`` name draw *i* (the file name's index).",
       "checks/run_qualify.check_draw_identity"),
    _c("qualify.record.metadata_train_count", RECOMPUTED, EXACT,
       "field `metadata.train_count` equals `data.TRAIN_COUNT`",
       "The identity fields of ``qualify/draw-XX.json.gz`` name draw *i* (the file name's index).",
       "checks/run_qualify.check_draw_identity"),
    _c("qualify.record.predictions_file", RECOMPUTED, EXACT,
       "field `predictions_file` equals `f\"draw-{i:02d}.predictions.npy\"`",
       "The identity fields of ``qualify/draw-XX.json.gz`` name draw *i* (the file name's index).",
       "checks/run_qualify.check_draw_identity"),
    _c("qualify.record.resize", RECOMPUTED, EXACT,
       "resize mode (the verifier rebuilt the images with it): recorded equals `\"exact\"`",
       "Draw records: the fresh-process block, top-level copies of the metadata hashes, the frozen "
       "comparison.",
       "checks/run_fields.check_qualify_fields"),
    _c("qualify.record.schema_version", RECOMPUTED, EXACT,
       "field `schema_version` equals `SCHEMA_VERSION`",
       "The identity fields of ``qualify/draw-XX.json.gz`` name draw *i* (the file name's index).",
       "checks/run_qualify.check_draw_identity"),
    _c("qualify.record.test_count", RECOMPUTED, EXACT,
       "field `test_count` equals `data.TEST_COUNT`",
       "The identity fields of ``qualify/draw-XX.json.gz`` name draw *i* (the file name's index).",
       "checks/run_qualify.check_draw_identity"),
    _c("qualify.record.train_count", RECOMPUTED, EXACT,
       "field `train_count` equals `data.TRAIN_COUNT`",
       "The identity fields of ``qualify/draw-XX.json.gz`` name draw *i* (the file name's index).",
       "checks/run_qualify.check_draw_identity"),
    _c("qualify.record.train_test_disjoint", RECOMPUTED, EXACT,
       "field `train_test_disjoint` equals `True`",
       "The identity fields of ``qualify/draw-XX.json.gz`` name draw *i* (the file name's index).",
       "checks/run_qualify.check_draw_identity"),
    _c("reproduce.timing.chronology", CONDITION, COND,
       "condition `start >= finishes[i - 1] - SLACK_S`; FAIL: the invocation starts before the one listed "
       "before it finished: invocations are appended in the order they ran and never overlap",
       "The invocations' durations against their stamps and the phases' record stamps.",
       "checks/run_timing.check_reproduce_timing"),
    _c("reproduce.timing.device", RECOMPUTED, EXACT,
       "the invocation's --device against the device its phase's fixture records ran on: recorded equals "
       "`devices[0] if len(devices) == 1 else \"one device for the phase's records\"`",
       "The invocations' durations against their stamps and the phases' record stamps.",
       "checks/run_timing.check_reproduce_timing"),
    _c("reproduce.timing.error", GUARD, NONE,
       "FAIL when the record is malformed or checking it raises",
       "The invocations' durations against their stamps and the phases' record stamps.",
       "checks/run_timing.check_reproduce_timing"),
    _c("reproduce.timing.order", ATTESTED, EXACT,
       "phases in protocol order: recorded equals `[p for p in PHASE_ORDER if p in {q.get(\"phase\") for q in "
       "phases}]`",
       "The invocations' durations against their stamps and the phases' record stamps.",
       "checks/run_timing.check_reproduce_timing"),
    _c("reproduce.timing.phase", CONDITION, COND,
       "condition `abs((pf - ps) - float(p[\"duration_s\"])) <= DURATION_SLACK_S and ps >= previous_end and pf "
       "<= finish + SLACK_S`; FAIL: phase {name} ({p.get('status')}): duration_s {p['duration_s']} against "
       "its stamps {pf - ps} s, or outside the invocation / overlapping the phase before",
       "The invocations' durations against their stamps and the phases' record stamps.",
       "checks/run_timing.check_reproduce_timing"),
    _c("reproduce.timing.phases_ran", CONDITION, COND,
       "condition `not missing`; FAIL: phase(s) {missing} are in the archive but no recorded invocation ran "
       "them",
       "The invocations' durations against their stamps and the phases' record stamps.",
       "checks/run_timing.check_reproduce_timing"),
    _c("reproduce.timing.record_stamps", CONDITION, COND,
       "every record stamp of a phase lies in a span its invocations recorded (with slack); UNAVAILABLE when "
       "the phase has no stamp to place",
       "The invocations' durations against their stamps and the phases' record stamps.",
       "checks/run_timing.check_reproduce_timing"),
    _c("reproduce.timing.record_stamps_unrecorded", GUARD, NONE,
       "UNAVAILABLE: {len(unrecorded)} stamp(s) of {len({s.split(' ')[0].split('.')[0] for s, _ in "
       "unrecorded})} resumed run(s) (the phase summary's resumed_runs) lie after the previous invocation "
       "fini",
       "The invocations' durations against their stamps and the phases' record stamps.",
       "checks/run_timing.check_reproduce_timing"),
    _c("reproduce.timing.status", CONDITION, COND,
       "condition `inv.get(\"status\") in (\"complete\", \"failed\", \"interrupted\") and all(map(done_or_skipped, "
       "body))`; FAIL: invocation status {inv.get('status')} against its phases' {statuses}: a complete "
       "invocation has only ran/skipped phases; a failed or interrupted one may end with one phase of that "
       "...",
       "The invocations' durations against their stamps and the phases' record stamps.",
       "checks/run_timing.check_reproduce_timing"),
    _c("reproduce.timing.total", CONDITION, COND,
       "condition `sum(float(p[\"duration_s\"]) for p in ran) - SLACK_S <= total <= finish - start + SLACK_S`; "
       "FAIL: total_s {total} is not between the phases' sum and the invocation's span {finish - start} s",
       "The invocations' durations against their stamps and the phases' record stamps.",
       "checks/run_timing.check_reproduce_timing"),
    _c("run.fixture.error", GUARD, NONE,
       "FAIL when the record is malformed or checking it raises",
       "Every fixture record: config, draw inputs, memory, inventory, energy, predictions, frozen reference.",
       "checks/run.check_fixtures"),
    _c("run.fixture.test_labels_read", RECOMPUTED, EXACT,
       "`get(rec, \"test_labels_read\", bool, rel)` equals `False`",
       "Checks of our own run archives (``evidence/<run-id>/`` with ``manifest.json``).",
       "checks/run._check_fixture"),
    _c("run.fixture.workspace_config", CONDITION, COND,
       "the recorded CUBLAS_WORKSPACE_CONFIG is `:SIZE:COUNT` pairs of ASCII digits",
       "Checks of our own run archives (``evidence/<run-id>/`` with ``manifest.json``).",
       "checks/run._check_fixture"),
    _c("run.predictions.error", GUARD, NONE,
       "FAIL when the record is malformed or checking it raises",
       "Draw *i*'s record: identity fields and its prediction file against the frozen reference.",
       "checks/run_qualify._check_draw_record"),
    _c("run.predictions.file_sha256", RECOMPUTED, EXACT,
       "recorded file sha256: recorded equals `hashlib.sha256(raw).hexdigest()`",
       "One stored prediction array: dtype/shape/range, payload sha vs metadata, file sha, frozen reference.",
       "checks/run.check_prediction_file"),
    _c("run.predictions.payload_sha256", RECOMPUTED, EXACT,
       "metadata predictions_sha256 vs file payload: recorded equals `data.array_sha256(arr)`",
       "One stored prediction array: dtype/shape/range, payload sha vs metadata, file sha, frozen reference.",
       "checks/run.check_prediction_file"),
    _c("run.predictions.present", GUARD, NONE,
       "FAIL: predictions file {path} is not in the archive",
       "One stored prediction array: dtype/shape/range, payload sha vs metadata, file sha, frozen reference.",
       "checks/run.check_prediction_file"),
    _c("validate.cases", CONDITION, COND,
       "condition `all(get(c, \"passed\", bool, rel) and get_list(c, \"batch_sizes\", rel) == [8, 8, 3] and "
       "get(c, \"complete_replay_byte_repeat`; FAIL: a case failed or lacks batch sizes [8, 8, 3], a "
       "byte-repeatable replay, 1 storage of 984 B",
       "``validate/validation.json.gz`` against its smoke records (spec 7.5).",
       "checks/run_compare.check_validation"),
    _c("validate.check_count", CONDITION, COND,
       "condition `checks > 0`; FAIL: check count {checks} is not positive",
       "``validate/validation.json.gz`` against its smoke records (spec 7.5).",
       "checks/run_compare.check_validation"),
    _c("validate.cpu_selftest", CONDITION, COND,
       "condition `len(st_cases) == 4 and all( get(c, \"passed\", bool, rel) and get(c, "
       "\"forward_bitwise_equal\", bool, rel) for c in st_cases`; FAIL: the CPU reconstruction self-test needs "
       "4 passing, bitwise-equal cases (spec 2.10)",
       "``validate/validation.json.gz`` against its smoke records (spec 7.5).",
       "checks/run_compare.check_validation"),
    _c("validate.depths", RECOMPUTED, EXACT,
       "depths: recorded equals `[1, 2]`",
       "``validate/validation.json.gz`` against its smoke records (spec 7.5).",
       "checks/run_compare.check_validation"),
    _c("validate.fields", ATTESTED, EXACT,
       "device, board, torch and workspace vs its hardware and software blocks: recorded equals `{\"device\": "
       "\"cuda\", \"gpu\": get(v, \"hardware.name\", str, w), \"torch_version\": get(v, \"software.torch\", str, w...`",
       "The validation records' remaining fields.",
       "checks/run_fields.check_validation_fields"),
    _c("validate.maximum_abs_error", CONDITION, COND,
       "condition `math.isfinite(err) and 0 <= err <= VALIDATION_TOLERANCE[\"atol\"]`; FAIL: maximum absolute "
       "error {err} exceeds atol {VALIDATION_TOLERANCE['atol']}",
       "``validate/validation.json.gz`` against its smoke records (spec 7.5).",
       "checks/run_compare.check_validation"),
    _c("validate.original_comparison", ATTESTED, EXACT,
       "comparison with the original's validation recomputed from the frozen archive: recorded equals "
       "`{\"path\": f\"{FROZEN_REFERENCE.repo_path}/{FROZEN_VALIDATION}\", \"equal\": {k: md.get(k) == omd.get(k) "
       "for k in...`",
       "``original_comparison`` of ``validation.json.gz``: present, and recomputed from the frozen "
       "reference.",
       "checks/run_compare.original_comparison_checks"),
    _c("validate.original_comparison.present", CONDITION, COND,
       "condition `isinstance(oc, dict)`; FAIL: original_comparison is {json.dumps(oc)[:80]}, not the "
       "comparison with the frozen reference's cache-audit/cuda-validation.json: rerun validate where the "
       "reference is found (REV88_OR...",
       "``original_comparison`` of ``validation.json.gz``: present, and recomputed from the frozen "
       "reference.",
       "checks/run_compare.original_comparison_checks"),
    _c("validate.passed", RECOMPUTED, EXACT,
       "passed: recorded equals `all(parts) and all(r.status.value == \"PASS\" for r in out)`",
       "``validate/validation.json.gz`` against its smoke records (spec 7.5).",
       "checks/run_compare.check_validation"),
    _c("validate.refusal.expected_message", RECOMPUTED, EXACT,
       "the refusal the fixture must print (bundle.fixture): recorded equals `{\"query_label_archive\": "
       "\"exactly the three\", \"late_cuda_initialization\": \"before CUDA initialization\"}[key]`",
       "The validation records' remaining fields.",
       "checks/run_fields.check_validation_fields"),
    _c("validate.refusal.fields", ATTESTED, EXACT,
       "refusal job name; message_found = the expected message is in its stderr: recorded equals `{\"job\": "
       "{\"query_label_archive\": \"validate/refuse-test-labels\", \"late_cuda_initialization\": "
       "\"validate/refuse...`",
       "The validation records' remaining fields.",
       "checks/run_fields.check_validation_fields"),
    _c("validate.refused_npz", CONDITION, COND,
       "condition `same`; FAIL: the refused archive is not the smoke inputs plus a zero test_labels array "
       "(bundle.phases.validate)",
       "``with-test-labels.npz`` holds exactly the smoke inputs plus a zero ``test_labels`` array (the "
       "refused archive).",
       "checks/run_fields._check_refused_npz"),
    _c("validate.smoke", RECOMPUTED, FIELDS,
       "API/CLI smoke vs the worker and CLI records",
       "``compare/comparison.json.gz`` and ``validate/validation.json.gz`` recomputed from their records.",
       "checks/run_compare._check_smoke"),
    _c("validate.smoke.all_equal", RECOMPUTED, EXACT,
       "smoke passed: recorded equals `all(v for k, v in want.items() if isinstance(v, bool))`",
       "``compare/comparison.json.gz`` and ``validate/validation.json.gz`` recomputed from their records.",
       "checks/run_compare._check_smoke"),
    _c("validate.smoke.api_inputs", ATTESTED, EXACT,
       "API smoke inputs vs the CLI run's: recorded equals `get_dict(rec, \"metadata.input_hashes\", CLI)`",
       "The validation's CLI fixture record (not a phase fixture record): allocator invariants, inventory, "
       "its config file and its inputs (the synthetic smoke data rebuilt).",
       "checks/run_fields.check_smoke_record"),
    _c("validate.smoke.cli_record_sha256", RECOMPUTED, EXACT,
       "cli_record_sha256 vs the stored CLI record: recorded equals `stored_sha(f, cli_rel)`",
       "``compare/comparison.json.gz`` and ``validate/validation.json.gz`` recomputed from their records.",
       "checks/run_compare._check_smoke"),
    _c("validate.smoke.config_file", RECOMPUTED, EXACT,
       "smoke config.json vs the frozen config with batch 8: recorded equals "
       "`hashlib.sha256(want).hexdigest()`",
       "The validation records' remaining fields.",
       "checks/run_fields.check_validation_fields"),
    _c("validate.smoke.fields", ATTESTED, EXACT,
       "smoke batch split and config (frozen, batch 8): recorded equals `{\"batch_sizes\": "
       "split_batches(get_int(md, \"train_count\", w), get_int(md, \"config.batch_size\", w)), \"config\"...`",
       "The validation records' remaining fields.",
       "checks/run_fields.check_validation_fields"),
    _c("validate.smoke.record_inputs", RECOMPUTED, EXACT,
       "the CLI run's input hashes (the smoke data rebuilt) and config file sha: recorded equals "
       "`{\"input_hashes\": {k: data.array_sha256(smoke[k]) for k in (\"train_images\", \"train_labels\", "
       "\"test_images\")},...`",
       "The validation's CLI fixture record (not a phase fixture record): allocator invariants, inventory, "
       "its config file and its inputs (the synthetic smoke data rebuilt).",
       "checks/run_fields.check_smoke_record"),
    _c("validate.smoke.records", GUARD, NONE,
       "FAIL: validate/smoke/cli.json.gz or worker.json.gz is absent",
       "``compare/comparison.json.gz`` and ``validate/validation.json.gz`` recomputed from their records.",
       "checks/run_compare._check_smoke"),
    _c("validate.tolerance", RECOMPUTED, EXACT,
       "tolerance: recorded equals `VALIDATION_TOLERANCE`",
       "``validate/validation.json.gz`` against its smoke records (spec 7.5).",
       "checks/run_compare.check_validation"),
    _c("validate.worker", ATTESTED, EXACT,
       "numerical validation vs the worker's record: recorded equals `get_dict(worker, "
       "\"numerical_validation\", \"worker\")`",
       "``validate/validation.json.gz`` against its smoke records (spec 7.5).",
       "checks/run_compare.check_validation"),
    _c("validate.worker.api", ATTESTED, EXACT,
       "worker API metadata vs validation.json; the second run's hashes equal the first's when the replay is "
       "byte-equal: recorded equals `{\"metadata\": md, \"second_run_hashes\": {k: md.get(k) for k in get_dict( "
       "api, \"second_run_hashes\", WORKER)} i...`",
       "Every metadata block on its own, then the state hashes across blocks (and the frozen initial "
       "parameters).",
       "checks/run_fields.check_metadata"),
    _c("validate.worker.predictions", ATTESTED, EXACT,
       "the worker's API predictions vs the smoke's predictions_sha256: recorded equals `get_str(md, "
       "\"predictions_sha256\", VALIDATION)`",
       "Every metadata block on its own, then the state hashes across blocks (and the frozen initial "
       "parameters).",
       "checks/run_fields.check_metadata"),
    _c("validate.worker.selftest", ATTESTED, EXACT,
       "worker self-test vs validation.json: recorded equals `get_list(st, \"cases\", w)`",
       "The validation records' remaining fields.",
       "checks/run_fields.check_validation_fields"),
    _c("validate.worker.workspace", ATTESTED, EXACT,
       "`get_str(worker, \"workspace\", WORKER)` equals `get_str(v, \"workspace\", w)`",
       "The validation records' remaining fields.",
       "checks/run_fields.check_validation_fields"),
)

CATALOG: tuple[Check, ...] = tuple(sorted(_PATTERNS + _ENTRIES, key=lambda c: (c.family, c.id)))
"""Every catalog entry, sorted by family then id."""


def all_ids() -> dict[str, Check]:
    """Every concrete check id the verifier can emit, mapped to its entry.

    Raises:
        ValueError: two entries declare the same concrete id (the catalog declares each once).
    """
    out: dict[str, Check] = {}
    for entry in CATALOG:
        for check_id in entry.ids():
            if check_id in out:
                raise ValueError(f"check id {check_id} is declared twice in verify/catalog.py "
                                 f"({out[check_id].id} and {entry.id})")
            out[check_id] = entry
    return out


def lookup(check_id: str) -> Check | None:
    """The entry that declares *check_id* (a concrete id or a pattern as written), else None."""
    for entry in CATALOG:
        if entry.id == check_id:
            return entry
    return all_ids().get(check_id)


def entry_lines(entry: Check, check_id: str | None = None) -> list[str]:
    """The plain-text description of one entry (``rev88 verify --check ID``).

    Args:
        entry: the catalog entry.
        check_id: the concrete id asked for, when *entry* is a pattern that expands to it.
    """
    head = entry.id if check_id in (None, entry.id) else f"{check_id}  (pattern {entry.id})"
    lines = [head, f"  family:     {entry.family}", f"  basis:      {entry.basis}",
             f"  compares:   {entry.compares}", f"  recomputes: {entry.recomputes}",
             f"  tolerance:  {entry.tolerance} ({entry.why})", f"  emitted by: verify/{entry.where}"]
    for name, values in entry.values:
        lines.append(f"  {{{name}}}: {', '.join(values)}")
    return lines


def list_lines() -> list[str]:
    """One line per concrete id: id, basis, tolerance (``rev88 verify --list-checks``)."""
    ids = all_ids()
    width = max(map(len, ids))
    return [f"{check_id:<{width}}  {entry.basis:<10}  {entry.tolerance}" for check_id, entry in sorted(ids.items())]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown() -> str:
    """``docs/checks.md``: the catalog grouped by family (generated; do not edit by hand)."""
    ids = all_ids()
    out = ["# Checks of the offline verifier", "",
           "Generated by `python -m verify.catalog --markdown > docs/checks.md` from `verify/catalog.py`; do not edit "
           "by hand (`tests/verify/test_catalog.py` fails when this file is stale).", "",
           f"{len(CATALOG)} entries declare {len(ids)} check ids. *Basis*: `recomputed` compares the recorded value "
           "with one the verifier derives itself; `attested` checks the writer's statement only against the other "
           "records that state it; `condition` tests a property (an order, a bound, a form); `guard` reports a missing "
           "or malformed input. A check that compared nothing (zero records, stamps or "
           "values) reports UNAVAILABLE, never PASS. A pattern's `{field}` takes each listed value. `rev88 verify --check ID` prints one entry.", "", "## Tolerances", ""]
    out += [f"- `{tol}`: {why}." for tol, why in TOLERANCE_WHY.items()]
    for family in sorted({c.family for c in CATALOG}):
        entries = [c for c in CATALOG if c.family == family]
        out += ["", f"## {family}", "", "| id | basis | tolerance | compares | recomputes (from which files) | emitted by |",
                "|---|---|---|---|---|---|"]
        for c in entries:
            check_id = f"`{c.id}`" + "".join(f"<br>{{{n}}}: {', '.join(f'`{v}`' for v in vs)}" for n, vs in c.values)
            out.append(f"| {check_id} | {c.basis} | {_cell(c.tolerance)} | {_cell(c.compares)} | "
                       f"{_cell(c.recomputes)} | `{c.where}` |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m verify.catalog [--markdown | --list | --check ID]``; exit 2 for an unknown id."""
    parser = argparse.ArgumentParser(prog="python -m verify.catalog", description="The verifier's catalog of checks.")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--markdown", action="store_true", help="print docs/checks.md")
    group.add_argument("--check", metavar="ID", help="print one entry")
    args = parser.parse_args(argv)
    if args.markdown:
        sys.stdout.write(markdown())
    elif args.check:
        entry = lookup(args.check)
        if entry is None:
            print(f"rev88: error: {args.check} is not a check id: `rev88 verify --list-checks` lists them",
                  file=sys.stderr)
            return 2
        print("\n".join(entry_lines(entry, args.check)))
    else:
        print("\n".join(list_lines()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
