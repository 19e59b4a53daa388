"""The cuBLAS workspace comparison (spec 4.3, 7.3, 9.4): one fresh fixture per configuration.

For one draw the phase writes the input npz and ``config.json`` into ``compare/``, runs the
fixture three times through an engine, each in a fresh process with
``CUBLAS_WORKSPACE_CONFIG`` set only in the child: ``:4096:8`` (baseline, the library
default), ``:16:8`` (preferred), ``:0:0`` (diagnostic). It then writes
``compare/comparison.json.gz``: per configuration the measured memory figures and their
reductions against the baseline, whether predictions are bit-equal across configurations
and to the frozen original reference, and which state fields differ. It measures nothing
itself.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from bundle import archive
from bundle.archive import RunArchive
from bundle.boards import placement_env
from bundle.jobs import Engine
from bundle.phases.fixture_runner import (
    draw_inputs,
    fixture_job,
    gpu_lock_path,
    load_predictions,
    run_fixture_job,
    run_overlapped,
    workspace_stem,
    write_fixture_inputs,
)
from bundle.preflight import frozen_members, require_frozen_reference
from protocol import hostrefs
from protocol.errors import BundleError
from protocol.workspaces import WORKSPACES

PHASE = "compare"
BASELINE = ":4096:8"
STATE_HASH_KEYS = ("input_hashes", "initial_parameter_sha256", "epoch_permutation_sha256",
                   "final_parameter_sha256", "final_velocity_sha256", "state_vector_sha256",
                   "predictions_sha256", "scores_sha256")
MIB = 2**20


def memory_figures(record: Mapping[str, Any]) -> dict[str, Any]:
    """The comparison's memory figures of one fixture record (names as the original analyzer).

    Returns:
        ``peak_allocated_bytes``, ``peak_allocated_mib`` (peak / 2**20), ``live_allocated_bytes``
        (after invoke), ``peak_reserved_bytes``, ``named_storage_bytes``,
        ``unnamed_live_allocated_bytes`` (live - named), ``entry_allocated_bytes``,
        ``added_peak_over_entry_allocated_bytes``.
    """
    mem, inv = record["memory"], record["buffer_inventory"]
    return {
        "peak_allocated_bytes": mem["prepare_and_invoke_peak_allocated_bytes"],
        "peak_allocated_mib": mem["prepare_and_invoke_peak_allocated_bytes"] / MIB,
        "live_allocated_bytes": mem["allocated_after_invoke_bytes"],
        "peak_reserved_bytes": mem["prepare_and_invoke_peak_reserved_bytes"],
        "named_storage_bytes": inv["unique_named_storage_bytes"],
        "unnamed_live_allocated_bytes": mem["allocated_after_invoke_bytes"] - inv["unique_named_storage_bytes"],
        "entry_allocated_bytes": mem["allocated_before_prepare_bytes"],
        "added_peak_over_entry_allocated_bytes": mem["added_peak_over_entry_allocated_bytes"],
    }


def memory_audit(record: Mapping[str, Any]) -> dict[str, Any]:
    """The original analyzer's memory checks (spec 7.3) on one fixture record.

    Returns:
        ``{"passed": bool, "checks": {name: bool}}``.
    """
    mem, inv = record["memory"], record["buffer_inventory"]
    peak, live = mem["prepare_and_invoke_peak_allocated_bytes"], mem["allocated_after_invoke_bytes"]
    named = inv["unique_named_storage_bytes"]
    ids = [s["storage_id"] for s in inv["unique_storages"]]
    places = [(s["device"], s["address"]) for s in inv["unique_storages"]]
    checks = {
        "entry_allocated_and_reserved_zero": mem["allocated_before_prepare_bytes"] == 0
        and mem["reserved_before_prepare_bytes"] == 0,
        "live_positive_and_at_most_peak": 0 < live <= peak,
        "after_prepare_at_most_peak": mem["allocated_after_prepare_bytes"] <= peak,
        "reserved_at_least_live": mem["reserved_after_invoke_bytes"] >= live,
        "peak_reserved_at_least_peak": mem["prepare_and_invoke_peak_reserved_bytes"] >= peak,
        "added_peak_equals_peak": mem["added_peak_over_entry_allocated_bytes"] == peak,
        "storage_ids_and_addresses_unique": len(set(ids)) == len(ids) and len(set(places)) == len(places),
        "named_total_consistent": named == sum(s["bytes"] for s in inv["unique_storages"]) and named <= live,
        "unnamed_equals_live_minus_named":
            inv["allocated_bytes_without_named_storage_reference"] == inv["allocator_allocated_bytes"] - named,
        "no_residency_claims": inv["is_per_kernel_working_set"] is False
        and inv["cache_residency_established"] is False,
    }
    return {"passed": all(checks.values()), "checks": checks}


def reduction(baseline_peak: int, peak: int) -> dict[str, Any]:
    """Reduction of a peak against the baseline peak (spec 7.3).

    Returns:
        As the original summary's ``reductions``: ``peak_allocated_bytes_saved`` (old - new),
        ``peak_allocated_mib_saved``, ``peak_allocated_reduction_percent`` (100 * saved / old),
        ``peak_allocated_ratio_to_baseline`` (new / old).
    """
    saved = baseline_peak - peak
    return {"peak_allocated_bytes_saved": saved, "peak_allocated_mib_saved": saved / MIB,
            "peak_allocated_reduction_percent": 100.0 * saved / baseline_peak,
            "peak_allocated_ratio_to_baseline": peak / baseline_peak}


def differing_fields(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """Names of the eight state-hash fields whose values differ between two metadata objects."""
    return [key for key in STATE_HASH_KEYS if a.get(key) != b.get(key)]


def frozen_reference(draw_index: int, original_dir: Path | None = None) -> dict[str, Any]:
    """The original draw's metadata (the frozen reference's ``results/draw-XX.json``).

    Args:
        draw_index: the qualification draw (0…10).
        original_dir: the frozen reference folder (default: ``protocol.hostrefs.FROZEN_REFERENCE``'s
            search order).

    Returns:
        ``{"path": "evidence/rev88-original/results/draw-XX.json", "metadata": {...}}``.

    Raises:
        BundleError: no place holds the draw's file (one line naming the places and REV88_ORIGINAL_DIR).
    """
    member = hostrefs.frozen_draw_member(draw_index)
    if original_dir is None:
        original_dir = require_frozen_reference([member])
    return {"path": f"{hostrefs.FROZEN_REFERENCE.repo_path}/{member}",
            "metadata": json.loads((Path(original_dir) / member).read_text())["metadata"]}


def summarise(records: Mapping[str, dict[str, Any]], predictions: Mapping[str, np.ndarray],
              stage_dir: Path, draw_index: int | None, original_dir: Path | None = None) -> dict[str, Any]:
    """Build ``comparison.json.gz`` from the three fixture records (keys in docs/evidence-format.md).

    *draw_index* ``None`` means custom inputs: no frozen reference applies (``frozen_reference`` and
    ``predictions_bit_equal_to_frozen_reference`` are ``null``, ``draw_index`` says why). Otherwise the
    frozen draw is read from *original_dir* (default: the search order of
    ``protocol.hostrefs.FROZEN_REFERENCE``) and a missing one raises ``BundleError``, never ``null``.
    """
    base = records[BASELINE]
    configs = []
    for workspace, role in WORKSPACES:
        rec = records[workspace]
        stem = workspace_stem(workspace)
        configs.append({
            "workspace": workspace,
            "role": role,
            "record": f"{stem}.json.gz",
            "record_sha256": archive.file_sha256(stage_dir / f"{stem}.json.gz"),
            "predictions_file": rec["predictions_file"],
            "predictions_file_sha256": rec["predictions_file_sha256"],
            "gpu": rec["gpu"],
            "gpu_uuid": rec["hardware"].get("uuid"),
            "memory": memory_figures(rec) if rec["memory"] else None,
            "memory_audit": memory_audit(rec) if rec["memory"] else None,
            "first_invocation_cuda_ms": rec["timing"]["first_invocation_cuda_ms"],
            "predictions_sha256": rec["metadata"]["predictions_sha256"],
            "state_vector_sha256": rec["metadata"]["state_vector_sha256"],
            "scores_sha256": rec["metadata"]["scores_sha256"],
        })
    reductions = {}
    if base["memory"]:
        base_peak = base["memory"]["prepare_and_invoke_peak_allocated_bytes"]
        for workspace, _ in WORKSPACES[1:]:
            if records[workspace]["memory"]:
                reductions[workspace] = reduction(base_peak,
                                                  records[workspace]["memory"]["prepare_and_invoke_peak_allocated_bytes"])
    base_preds = predictions[BASELINE]
    bit_equal = all(np.array_equal(base_preds, predictions[w]) and predictions[w].dtype == base_preds.dtype
                    for w, _ in WORKSPACES)
    frozen = None if draw_index is None else frozen_reference(draw_index, original_dir)
    frozen_block: dict[str, Any] | None = None
    if frozen is not None:
        want = frozen["metadata"]["predictions_sha256"]
        matches = {w: records[w]["metadata"]["predictions_sha256"] == want for w, _ in WORKSPACES}
        frozen_block = {
            "path": frozen["path"],
            "predictions_sha256": want,
            "predictions_match": matches,
            "state_fields_differing": {w: differing_fields(frozen["metadata"], records[w]["metadata"])
                                       for w, _ in WORKSPACES},
        }
    return {
        "schema_version": archive.SCHEMA_VERSION,
        "completed_at_utc": archive.utc_now(),
        "draw_index": draw_index,
        "input_archive_sha256": base["input_archive_sha256"],
        "config_file_sha256": base["config_file_sha256"],
        "baseline": BASELINE,
        "configs": configs,
        "reductions_vs_baseline": reductions,
        "predictions_bit_equal_across_configs": bit_equal,
        "predictions_bit_equal_to_frozen_reference":
            None if frozen_block is None else all(frozen_block["predictions_match"].values()),
        "frozen_reference": frozen_block,
        "state_fields_differing_from_baseline": {w: differing_fields(base["metadata"], records[w]["metadata"])
                                                 for w, _ in WORKSPACES[1:]},
        "memory_audit_passed": all(c["memory_audit"]["passed"] for c in configs if c["memory_audit"]),
        "scope": ("One fresh fixture process per CUBLAS_WORKSPACE_CONFIG on the same draw, inputs and "
                  "config; memory is the tensor allocator's prepare+first-invocation peak, not cache "
                  "residency; reductions are computed from the measured peaks."),
    }


def run_compare(run_dir: Path, *, engine: Engine, raw_dir: Path | None = None, draw_index: int = 0,
                force: bool = False, device: str = "cuda", inputs: Mapping[str, np.ndarray] | None = None,
                config: Mapping[str, Any] | None = None,
                on_line: Callable[[str], None] | None = None,
                on_job: Callable[[str], None] | None = None, prestart_next: bool = True) -> dict[str, Any]:
    """Run the workspace comparison into ``run_dir/compare/`` and return ``comparison.json.gz``'s record.

    Args:
        run_dir: the run archive folder.
        engine: runs each fixture job (native subprocess or one container per job).
        raw_dir: raw MNIST folder (default ``protocol.data.default_raw_dir()``).
        draw_index: which qualification draw (0…10; the original compared draw 0).
        force: replace an already completed ``compare`` phase.
        device: ``cuda`` (protocol) or ``cpu`` (diagnostic: no memory figures).
        inputs: learner inputs to use instead of the draw (tests; then the frozen reference does not apply).
        config: learner config (default: the frozen config).
        on_line: receives every fixture output line.
        on_job: called with each job name before it starts (progress display).
        prestart_next: on CUDA, start the next configuration's process while one runs (its
            interpreter, torch import and inputs, CPU only); each takes the board's GPU lock
            (``bundle.fixture.acquire_gpu_lock``, process scope, a ticket per configuration)
            before CUDA initialisation and holds it until it exits, so no two use the GPU at
            once and they run in ``WORKSPACES`` order (each record's ``placement.gpu_lock``).
            ``False``: one process after the other (before 2026-12-01).

    Raises:
        BundleError: the frozen reference lacks the draw (checked before anything is written), a
            fixture job failed (the staging folder keeps finished jobs for resume), or the phase is
            already complete without *force*.
    """
    from_draw = inputs is None
    # the frozen draw is found before anything is written (one line naming where it was looked for)
    original_dir = require_frozen_reference(frozen_members([PHASE], compare_draw=draw_index if from_draw else None))
    inputs, config = draw_inputs(inputs, config, draw_index=draw_index, raw_dir=raw_dir)
    run = RunArchive(run_dir)
    with run.phase(PHASE, force=force) as stage:
        # The input npz is a derived copy (the verifier rebuilds inputs from the raw MNIST files):
        # it lives in RUN_DIR/.work, outside the archive; records keep its sha256 and config.json.
        npz, cfg = write_fixture_inputs(run.run_dir / archive.WORK_DIR / PHASE, inputs, config)
        shutil.copy2(cfg, stage.path / "config.json")
        records: dict[str, dict[str, Any]] = {}
        predictions: dict[str, np.ndarray] = {}
        pending: list[tuple[str, Path]] = []
        for workspace, _role in WORKSPACES:
            stem = workspace_stem(workspace)
            output = stage.path.resolve() / f"{stem}.json.gz"
            if stage.has(f"{stem}.json.gz") and stage.has(f"{stem}.predictions.npy"):
                record = archive.read_json_gz(output)
                if record.get("input_archive_sha256") != archive.file_sha256(npz):
                    raise BundleError(f"staged {output} was made from other inputs: delete {stage.path} and rerun")
                records[workspace] = record
            else:
                pending.append((workspace, output))
        # On CUDA the next configuration's process starts (interpreter, torch, inputs: CPU only)
        # while one runs; the board's GPU lock, taken before CUDA initialisation and held to exit,
        # and the tickets keep the GPU parts one at a time, in WORKSPACES order.
        lock = (str(gpu_lock_path(run.run_dir / archive.WORK_DIR / PHASE, None))
                if device == "cuda" and prestart_next else None)

        def job(ticket: int, workspace: str, output: Path) -> tuple[str, dict[str, Any]]:
            name = f"{PHASE}/{workspace_stem(workspace)}"
            if on_job is not None:
                on_job(name)
            spec = fixture_job(name, engine=engine, npz=npz, config=cfg, output=output, workspace=workspace,
                               device=device)
            if lock is not None:
                spec = dataclasses.replace(spec, env={**spec.env, **placement_env(None, lock, ticket)})
            return workspace, run_fixture_job(engine, spec, output, on_line)

        jobs = [lambda k=k, w=w, o=o: job(k, w, o) for k, (w, o) in enumerate(pending)]
        records.update(dict(run_overlapped(jobs, 2 if lock else 1, Path(lock + ".turn") if lock else None)))
        for workspace, _role in WORKSPACES:
            record = records[workspace]
            output = stage.path.resolve() / f"{workspace_stem(workspace)}.json.gz"
            if record["cublas_workspace_config"] != workspace:
                raise BundleError(f"{output} ran with {record['cublas_workspace_config']}, expected {workspace}: "
                                  "the engine did not pass the job environment; check the engine")
            predictions[workspace] = load_predictions(output, record)
        comparison = summarise(records, predictions, stage.path, draw_index if from_draw else None, original_dir)
        archive.write_json_gz(stage / "comparison.json.gz", comparison)
    run.record_execution(PHASE, records[BASELINE]["execution"])
    return comparison
