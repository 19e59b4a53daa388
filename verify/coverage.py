"""What the verifier does with every field of every record: the ONE attestation registry.

Each leaf of every record of both archive layouts (``evidence/<run-id>`` = ours,
``evidence/rev88-original`` = the original study's) is one of:

* recomputed from raw data (stamps, metric rows, prediction files, the raw MNIST files);
* cross-checked against an independent raw source in the archive (the NVML log of a job,
  the ncu output text and ``.ncu-rep`` of a profile run, the other fixture records of the same
  board and software, the record's own telemetry and power limit);
* compared with the frozen reference (the original archive);
* or an **attestation**: a fact the writer states that no file can confirm (a wall-clock
  time stamp, a descriptive sentence, a path on the machine that ran the job). Those, and
  only those, are listed in :data:`ATTESTATIONS` with the reason, and ``rev88 verify
  --explain`` prints them. ``scripts/leaf_coverage.py`` changes every leaf in turn and
  counts which ones the checks detect, which ones are attested, and which ones are missed
  (the target is 0 missed).

Record kinds are archive-relative paths with run-specific parts collapsed
(:func:`record_kind`): ``energy/trial-rNN-workspace-W.json.gz``, ``qualify/draw-NN.json.gz``,
``cache-audit/qualify-NN.json`` …; a leaf is named by its dotted key path (list positions are
integers, e.g. ``energy.trials.0.telemetry_before.power_w``).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

RUN = "run"
ORIGINAL = "original"


@dataclass(frozen=True, slots=True)
class Attestation:
    """One attested field pattern.

    Attributes:
        layout: ``"run"`` (our archives), ``"original"`` or ``"*"`` (both).
        records: glob over record kinds (:func:`record_kind`), e.g. ``"energy/trial-*.json.gz"``.
        field: dotted key-path glob: ``*`` is one key (or list position), ``**`` any number of
            keys (none included); keys that contain a dot (``fixture.py``) are matched by ``**``.
        reason: why no check can confirm the value (one sentence).
    """

    layout: str
    records: str
    field: str
    reason: str


_STAMP = "a wall-clock time stamp of the writer; no file of the archive records the clock it read"
_TEXT = "descriptive text the writer emits with every record; it carries no figure"
_HOST_PATH = "a path or program name on the machine that ran the job; it names no evidence file"
_MEASURED_S = "a wall-clock duration measured by the writer around work that left no raw trace"

_APP = "the original's cloud execution bookkeeping (Modal app ids, states, worker counts); no file confirms it"
_FINAL = ("GPU training result bits of a single run: the final parameters, velocity, state vector and scores cannot "
          "be recomputed off the GPU; where the archive has two runs of the same computation they are compared")
_SELFTEST = "CPU self-test residuals: host floating point, bounded by 1e-5 (the cases, flags and storages are checked)"
_LATENCY = ("the clock bracket of one counter read; it must contain the NVML call where a log exists, its exact "
            "width is not in any log")
_ADDRESS = "a device address the allocator returned; its uniqueness is checked, its value is the run's"
_NOT_KEPT = "describes a file the original did not keep (its size or sha256 is checked when the file is present)"

ATTESTATIONS: tuple[Attestation, ...] = (
    # --- both layouts ---------------------------------------------------------------------
    Attestation("*", "*", "**.*_at_utc", _STAMP),
    Attestation("*", "*", "**.preparation_seconds", _MEASURED_S),
    Attestation("*", "*", "**.validation.checks.*.maximum_gradient_abs_error", _SELFTEST),
    Attestation("*", "*", "**.validation.checks.*.inverse_max_abs_error", _SELFTEST),
    Attestation("*", "*", "**.query_latency_s", _LATENCY),
    Attestation("*", "*", "**.buffer_inventory.unique_storages.*.address", _ADDRESS),
    Attestation("*", "*", "**.final_parameter_sha256.**", _FINAL),
    Attestation("*", "*", "**.final_velocity_sha256.**", _FINAL),
    Attestation("*", "*", "**.state_vector_sha256", _FINAL),
    Attestation("*", "*", "**.scores_sha256", _FINAL),
    Attestation("*", "*", "**.cache_reference.meaning", _TEXT),
    Attestation("*", "*", "**.buffer_inventory.scope", _TEXT),
    Attestation("*", "*", "**.memory.scope", _TEXT),
    Attestation("*", "*", "**.frozen_qualification_comparison", _TEXT),
    Attestation("*", "*", "**.numerical_validation.scope", _TEXT),
    Attestation("*", "*", "**.cuda_validation.scope", _TEXT),
    Attestation("*", "*", "**.energy.scope", _TEXT),
    Attestation("*", "*", "**.a100.scope", _TEXT),
    Attestation("*", "*", "**.maximum_abs_error",
                "GPU-vs-eager residual of the replay validation: bounded by the tolerance the record states"),
    Attestation("*", "*", "**.profile_device_attributes.gpu__time_duration.sum",
                "ncu's GPU time of the range, inflated by profiling (not a runtime); no other file records it"),
    Attestation("*", "*", "**.cuda_elapsed_ms",
                "CUDA-event time of an energy trial; no raw trace of it: its per-task figures are recomputed from it "
                "and it must lie within 0.9-1.005 of the wall window the NVML stamps bracket"),
    Attestation("*", "*", "**.timing.first_invocation_cuda_ms",
                "CUDA-event time of the fixture's first invocation; no raw trace of it (copied into the comparison)"),
    Attestation("*", "*", "**.timing.first_invocation_wall_ms", _MEASURED_S),
    Attestation("*", "*", "**.timing.scope", _TEXT),
    Attestation("*", "*", "**.device_attributes.gpu__time_duration.sum",
                "ncu's GPU time of the range, inflated by profiling (not a runtime); no other file records it"),
    # --- our run archives -------------------------------------------------------------------
    Attestation(RUN, "*", "**.input_archive_sha256",
                "sha256 of the job's input .npz, which the archive does not keep: rebuilt from the raw MNIST files and "
                "compared where this host writes .npz bytes as the writer did, and one per phase"),
    Attestation(RUN, "environment.json.gz", "executions.*.image_id",
                "the image's content-addressed ID as the engine read it; only `docker image inspect` on a host that "
                "holds the image confirms it (the marker's lock sha256 and versions are checked against the lock "
                "file and the records' software)"),
    Attestation(RUN, "environment.json.gz", "executions.*.image_marker.image_id",
                "the image's content-addressed ID as the engine read it; only `docker image inspect` on a host that "
                "holds the image confirms it"),
    Attestation(RUN, "environment.json.gz", "executions.*.source_run_id",
                "the run folder a phase ran in before its files were merged into this archive (scripts/merge_archives.py)"),
    Attestation(RUN, "environment.json.gz", "dropped_files.*.reason", _TEXT),
    # --- since 2026-12-01: step timelines, placement, overlap, reproduce invocations -------------
    Attestation(RUN, "*", "**.timeline.steps.*.at_s",
                "the fixture process's own clock at one of its steps; no other file records that clock"),
    Attestation(RUN, "*", "**.timeline.steps.*.step", _TEXT),
    Attestation(RUN, "*", "**.timeline.process_age_at_import_s", _MEASURED_S),
    Attestation(RUN, "*", "**.timeline.scope", _TEXT),
    Attestation(RUN, "*", "**.placement.gpu_lock.path", "a path on the machine that ran the job"),
    Attestation(RUN, "*", "**.placement.gpu_lock.waited_s", _MEASURED_S),
    Attestation(RUN, "*", "**.placement.gpu_lock.exclusive.waited_s", _MEASURED_S),
    Attestation(RUN, "*", "**.placement.gpu_lock.acquired_at_s",
                "the fixture process's own clock when it took the GPU lock; no other file records that clock"),
    Attestation(RUN, "*", "**.placement.gpu_lock.ticket",
                "the job's position in its lock's queue as the phase gave it; the order the trials ran in is "
                "recomputed from their completion stamps"),
    Attestation(RUN, "qualify/draw-*.json.gz", "concurrency.scope", _TEXT),
    Attestation(RUN, "qualify/draw-*.json.gz", "concurrency.invocation_started_at_utc", _STAMP),
    Attestation(RUN, "environment.json.gz", "reproduce_invocations.*.command.**",
                "the command line of the invocation as its process saw it (each argument)"),
    Attestation(RUN, "environment.json.gz", "reproduce_invocations.*.total_s_covers", _TEXT),
    Attestation(RUN, "environment.json.gz", "reproduce_invocations.*.status",
                "the invocation's own outcome; a failed phase leaves no complete phase folder"),
    Attestation(RUN, "environment.json.gz", "reproduce_invocations.*.boards.*.name",
                "NVML's product name of a board as the starting host listed it"),
    Attestation(RUN, "environment.json.gz", "reproduce_invocations.*.boards.*.index",
                "NVML's index of a board on the starting host"),
    Attestation(RUN, "energy/interleaved*.json.gz", "settings.next_trial_prestarted", _TEXT),
    Attestation(RUN, "energy/interleaved*.json.gz", "settings.designs_at_once", _TEXT),
    Attestation(RUN, "energy/interleaved*.json.gz", "regenerated.*",
                "why and when a derived summary was rewritten from unchanged records, and the replaced file's sha256"),
    Attestation(RUN, "profile/profiles.json.gz", "placement.ncu_runs_started_at_once_per_board",
                "how many ncu runs the phase started at once: a setting of the writer; each run's own lock record "
                "and timeline are checked"),
    Attestation(RUN, "compare/comparison.json.gz", "scope", _TEXT),
    Attestation(RUN, "energy/interleaved.json.gz", "scope", _TEXT),
    Attestation(RUN, "energy/interleaved.json.gz", "idle_model", _TEXT),
    Attestation(RUN, "energy/learners.json.gz", "settings.next_trial_prestarted", _TEXT),
    Attestation(RUN, "energy/learners.json.gz", "scope", _TEXT),
    Attestation(RUN, "energy/learners.json.gz", "idle_model", _TEXT),
    Attestation(RUN, "profile/capabilities.json.gz", "ncu_version_text",
                "ncu's own version banner; the version number in it is parsed and checked"),
    Attestation(RUN, "profile/profiles.json.gz", "phase_wall_s", _MEASURED_S),
    Attestation(RUN, "profile/profiles.json.gz", "phase_wall_s_covers", _TEXT),
    Attestation(RUN, "profile/profiles.json.gz", "resumed_runs.**",
                "which runs an earlier invocation of the phase completed (a resume); each listed run must be a run "
                "of the phase, and its records' stamps must lie in an earlier failed or interrupted span of the phase "
                "or in an unrecorded gap before the resume (reproduce.timing.record_stamps)"),
    Attestation(RUN, "*/resumed.json.gz", "resumed_runs.**",
                "which records an earlier, unfinished attempt at the phase staged and its completion kept (a "
                "resume); each listed run must be a record of the phase (phase.resumed.runs), and its stamps must lie "
                "in an earlier failed or interrupted span of the phase or in an unrecorded gap before the resume, "
                "every other record's in the completing span (reproduce.timing.record_stamps)"),
    Attestation(RUN, "profile/workspace-W-S-rNN.json.gz", "duration_s", _MEASURED_S),
    Attestation(RUN, "profile/workspace-W-S-rNN.json.gz", "files.ncu_report.reason", _TEXT),
    Attestation(RUN, "profile/workspace-W-S-rNN.json.gz", "files.ncu_report.content_*",
                "describes a report the run did not keep (checked against the manifest when it is kept)"),
    Attestation(RUN, "profile/workspace-W-S-rNN.json.gz", "ncu_report_cross_check.ncu_report_version",
                "version of the ncu_report reader that cross-checked the report at run time"),
    Attestation(RUN, "qualify/draw-NN.json.gz", "fixture.record_sha256",
                "sha256 of the fixture's own record in the run's scratch folder, which the archive does not keep"),
    Attestation(RUN, "qualify/draw-NN.json.gz", "frozen_comparison.note", _TEXT),
    Attestation(RUN, "qualify/draw-NN.json.gz", "timing.runner_wall_seconds", _MEASURED_S),
    Attestation(RUN, "validate/smoke/cli.json.gz", "memory.allocated_after_prepare_bytes",
                "an allocator figure of the only 19-example run (the API/CLI smoke); bounded by the allocator invariants"),
    Attestation(RUN, "validate/smoke/cli.json.gz", "memory.prepare_and_invoke_peak_reserved_bytes",
                "an allocator figure of the only 19-example run (the API/CLI smoke); bounded by the allocator invariants"),
    Attestation(RUN, "validate/validation.json.gz", "runner_sha256",
                "sha256 of bundle/phases/validate.py as it ran; the archive holds no copy of the source"),
    # --- the original archive ---------------------------------------------------------------
    Attestation(ORIGINAL, "execution.json", "**", _APP),
    Attestation(ORIGINAL, "cache-audit/execution.json", "**", _APP),
    Attestation(ORIGINAL, "cache-audit/cuda-validation.json", "execution.**", _APP),
    Attestation(ORIGINAL, "cache-audit/probe.json", "**",
                "the original's environment probe (commands it ran and their output on the worker); nothing reads it"),
    Attestation(ORIGINAL, "cache-audit/development/**", "**",
                "a development attempt that ncu rejected before it ran (returncode 1); kept by the original as "
                "history, it carries no figure"),
    Attestation(ORIGINAL, "*", "**.energy.trials.*.telemetry_*.*",
                "an NVML telemetry snapshot of the original, which kept no NVML log; its power enters the power "
                "plausibility bounds"),
    Attestation(ORIGINAL, "*", "**.result.input_archive_sha256",
                "sha256 of the original's input .npz of one draw: its 9x9 images cannot be rebuilt (spec 1.4); draw "
                "0's four records agree"),
    Attestation(ORIGINAL, "cache-audit/summary.json", "profiles.*.result_uncompressed_*", _NOT_KEPT),
    Attestation(ORIGINAL, "cache-audit/summary.json", "profiles.*.result_compressed_bytes", _NOT_KEPT),
    Attestation(ORIGINAL, "cache-audit/summary.json", "profiles.*.ncu_report_uncompressed_*", _NOT_KEPT),
    Attestation(ORIGINAL, "cache-audit/summary.json", "profiles.*.ncu_report_compressed_bytes", _NOT_KEPT),
    Attestation(ORIGINAL, "cache-audit/summary.json", "profiles.*.capabilities.metric_query.raw_query_sha256", _NOT_KEPT),
    Attestation(ORIGINAL, "cache-audit/summary.json", "profiles.*.profile_device_attributes.device__attribute_display_name",
                "the board each profile ran on (an A100-SXM4-80GB for one); its size attributes must be that board's"),
    Attestation(ORIGINAL, "cache-audit/summary.json", "all_available_evidence_verified",
                "the original analyzer's verdict; this verifier redoes the checks itself"),
    Attestation(ORIGINAL, "cache-audit/summary.json", "scope", _TEXT),
    Attestation(ORIGINAL, "cache-audit/summary.json", "cache_claim", _TEXT),
    Attestation(ORIGINAL, "cache-audit/summary.json", "qualification.equivalence_scope", _TEXT),
    Attestation(ORIGINAL, "cache-audit/summary.json", "comparisons.*.energy.scope", _TEXT),
    Attestation(ORIGINAL, "cache-audit/submission.json", "cache_claim", _TEXT),
    Attestation(ORIGINAL, "cache-audit/submission.json", "source_sha256.build_submission.py",
                "sha256 of the original's submission builder, which it did not keep"),
    Attestation(ORIGINAL, "cache-audit/cuda-validation.json", "runner_sha256",
                "sha256 of the original's validation runner, which it did not keep (the cache submission names the same)"),
    Attestation(ORIGINAL, "cache-audit/cuda-validation.json", "numerical_validation.cache_runtime.scope", _TEXT),
    Attestation(ORIGINAL, "cache-audit/cuda-validation.json", "api_cli_smoke.metadata.cache_runtime.scope", _TEXT),
    Attestation(ORIGINAL, "cache-audit/cuda-validation.json", "api_cli_smoke.*_equal",
                "the smoke's API-vs-CLI comparison; the original did not keep the CLI record it compared with"),
    Attestation(ORIGINAL, "cache-audit/cuda-validation.json", "api_cli_smoke.*_rejected",
                "the smoke's refusal outcome; the original did not keep the refusal records"),
    Attestation(ORIGINAL, "cache-audit/cuda-validation.json", "api_cli_smoke.metadata.predictions_sha256",
                "the smoke's predictions hash; the original did not keep the smoke's prediction file"),
    Attestation(ORIGINAL, "cache-audit/plan.json", "max_gpu_workers", _APP),
    Attestation(ORIGINAL, "cache-audit/plan.json", "policy", _TEXT),
    Attestation(ORIGINAL, "cache-audit/plan.json", "ncu_url",
                "where the original downloaded Nsight Compute 2025.1.1 (this bundle's Dockerfile pins the same sha256)"),
    Attestation(ORIGINAL, "cache-audit/plan.json", "ncu_sha256",
                "sha256 of the Nsight Compute package the original installed; the package is not in the archive"),
    Attestation(ORIGINAL, "cache-audit/plan.json", "runner_sha256", "sha256 of the original's runner, which it did not keep"),
    Attestation(ORIGINAL, "cache-audit/profile-plan.json", "range_selection", _TEXT),
    Attestation(ORIGINAL, "cache-audit/profile-plan.json", "amendment", _TEXT),
    Attestation(ORIGINAL, "protocol.json", "dataset", _TEXT),
    Attestation(ORIGINAL, "protocol.json", "preprocessing", _TEXT),
    Attestation(ORIGINAL, "protocol.json", "selection", _TEXT),
    Attestation(ORIGINAL, "protocol.json", "gpu_workers_max", _APP),
    Attestation(ORIGINAL, "validation-plan.json", "selection", _TEXT),
    Attestation(ORIGINAL, "validation-plan.json", "split", _TEXT),
    Attestation(ORIGINAL, "submission.json", "memory.scope", _TEXT),
    Attestation(ORIGINAL, "submission.json", "selection.rule", _TEXT),
    Attestation(ORIGINAL, "submission.json", "learner_seed_policy", _TEXT),
    Attestation(ORIGINAL, "submission.json", "sources.report_builder_sha256",
                "sha256 of the original's report builder, which it did not keep"),
    Attestation(ORIGINAL, "submission.json", "sources.rules_sha256_at_report",
                "sha256 of the challenge rules text the original read; the text is not in the archive"),
    Attestation(ORIGINAL, "validation.json", "records.*.result.cuda_ms",
                "CUDA-event time of one selection run; no raw trace of it was kept"),
    Attestation(ORIGINAL, "validation.json", "records.*.prediction_sha256",
                "sha256 of a selection candidate's prediction file, which the original did not keep (checked when "
                "present)"),
    Attestation(ORIGINAL, "validation.json", "records.*.result.metadata.predictions_sha256",
                "payload hash of a selection candidate's predictions, which the original did not keep"),
    Attestation(ORIGINAL, "cache-audit/COMPARISON.json", "result.memory.allocated_after_prepare_bytes",
                "an allocator figure of a workspace config the original ran in one record only (:0:0); bounded by the "
                "allocator invariants"),
    Attestation(ORIGINAL, "cache-audit/COMPARISON.json", "result.memory.reserved_after_invoke_bytes",
                "an allocator figure of a workspace config the original ran in one record only (:0:0); bounded by the "
                "allocator invariants"),
    Attestation(ORIGINAL, "results/draw-NN.json", "cuda_ms", "CUDA-event time of the first run; no raw trace of it"),
    Attestation(ORIGINAL, "verification.json", "verifier_sha256", "sha256 of the original's verifier, which it did not keep"),
    Attestation(ORIGINAL, "verification.json", "**.scope", _TEXT),
)


def attestations(layout: str) -> tuple[Attestation, ...]:
    """The registry entries that apply to one archive layout (``"run"`` or ``"original"``)."""
    return tuple(a for a in ATTESTATIONS if a.layout in ("*", layout))


@lru_cache(maxsize=512)
def _field_regex(pattern: str) -> re.Pattern[str]:
    segs = pattern.split(".")
    out = ""
    for i, seg in enumerate(segs):
        last = i == len(segs) - 1
        if seg == "**":
            if last:
                out = out[:-2] + r"(?:\..*)?" if out else ".*"
            else:
                out += r"(?:.*\.)?"
            continue
        out += re.escape(seg).replace(r"\*", "[^.]*")
        if not last:
            out += r"\."
    return re.compile(out)


def field_matches(pattern: str, leaf: str) -> bool:
    """Whether a dotted leaf path matches a field glob of :class:`Attestation`."""
    return _field_regex(pattern).fullmatch(leaf) is not None


_KIND_RULES: tuple[tuple[str, str], ...] = (
    (r"workspace-(?:4096-8|16-8|0-0)", "workspace-W"),
    (r"-r\d\d([.-])", r"-rNN\1"),
    (r"draw-\d\d", "draw-NN"),
    (r"qualify-\d\d", "qualify-NN"),
    (r"candidate-\d\d", "candidate-NN"),
    (r"-(?:task|training)-", "-S-"),
    (r"profile-(?:baseline|small)-(?:task|training)", "profile-P-S"),
    (r"^cache-audit/(?:baseline|small-workspace|zero-workspace)\.json$", "cache-audit/COMPARISON.json"),
)


def record_kind(rel: str) -> str:
    """The record kind of an archive-relative path (run-specific name parts collapsed).

    >>> record_kind("energy/trial-r02-workspace-16-8.json.gz")
    'energy/trial-rNN-workspace-W.json.gz'
    """
    kind = rel
    for pattern, repl in _KIND_RULES:
        kind = re.sub(pattern, repl, kind)
    return kind


def attestation_for(layout: str, rel: str, leaf: str) -> Attestation | None:
    """The registry entry that attests ``leaf`` of the record at ``rel``, or None."""
    kind = record_kind(rel)
    for a in attestations(layout):
        if fnmatch.fnmatchcase(kind, a.records) and field_matches(a.field, leaf):
            return a
    return None


def leaves(obj: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every leaf of a parsed JSON value as ``(dotted path, value)``; empty lists/objects are leaves."""
    if isinstance(obj, dict):
        if not obj:
            yield prefix, obj
        for key, value in obj.items():
            yield from leaves(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(obj, list):
        if not obj:
            yield prefix, obj
        for i, value in enumerate(obj):
            yield from leaves(value, f"{prefix}.{i}" if prefix else str(i))
    else:
        yield prefix, obj


def explain_lines(layouts: tuple[str, ...] = (RUN, ORIGINAL)) -> list[str]:
    """The registry as text lines (``rev88 verify --explain``): per layout, record kind, field, reason."""
    out = ["Attested fields: values the writer states that no file of the archive can confirm.",
           "Every other field is recomputed, cross-checked against another file of the archive,",
           "or compared with the frozen reference (docs/verifier-coverage.md).", ""]
    for layout in layouts:
        name = {RUN: "our run archives (evidence/<run-id>)", ORIGINAL: "the original archive (evidence/rev88-original)"}
        out.append(f"{name[layout]}:")
        for a in attestations(layout):
            out.append(f"  {a.records} :: {a.field}")
            out.append(f"      {a.reason}")
        out.append("")
    return out


def markdown_lines() -> list[str]:
    """The registry as the Markdown tables of docs/verifier-coverage.md (one per layout; shared rows in the first)."""
    out: list[str] = []
    for layout, title in ((RUN, "Both layouts and our run archives"), (ORIGINAL, "The original archive only")):
        out += [f"### {title}", "", "| records | field | reason |", "|---|---|---|"]
        for a in ATTESTATIONS:
            if (layout == RUN and a.layout in ("*", RUN)) or (layout == ORIGINAL and a.layout == ORIGINAL):
                scope = "" if a.layout != "*" else " (both layouts)"
                out.append(f"| `{a.records}` | `{a.field}` | {a.reason}{scope} |")
        out.append("")
    return out
