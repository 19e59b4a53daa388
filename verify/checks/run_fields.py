"""A run archive's remaining fields: every leaf the other run families do not recompute.

Family ``run.fields``:

* every learner metadata block (:mod:`verify.checks.fields`) of the fixture records, the draw
  records, the validation worker, smoke and CLI record, against the frozen reference's
  draw-0 metadata and against every other block of the same computation;
* every fixture record's inventory structure against the frozen reference's (the smoke's
  with its two input tensors sized to its 19 / 7 examples);
* the hardware blocks: one set of facts per board (UUID) across every record, the facts a
  board of that name reports (memory, L2, SMs), the energy hardware block against the
  fixture's;
* the peaks of one workspace config: every fresh-process record of the same workspace, board
  model and software must report one peak (a ``:16:8`` peak changed in one record while 20
  others of the same workspace and software say otherwise fails);
* each fixture record's own protocol fields (schema, mode, scope, device, sources, cache
  reference, profile range, prediction file name, the same-process hash list);
* the draw records' fresh-process block, frozen comparison and top-level copies of the
  metadata hashes; the accuracy record's frozen comparison against the frozen archive;
* the comparison's memory audits; the energy and profile summaries' remaining fields (the ncu
  command recomputed from the capabilities, the run's console names, the run-time report
  cross-check of runs whose ``.ncu-rep`` was not kept); the validation records (replay
  validation: 212 checks, error within the recorded tolerance; smoke config and refused
  ``with-test-labels.npz``; the comparison with the original's validation);
* ``environment.json.gz``'s remaining fields; power plausibility of every energy record.

Whatever no file can confirm is in :data:`verify.coverage.ATTESTATIONS`.
"""

from __future__ import annotations

import hashlib
import io
import json
import posixpath
from collections.abc import Mapping
from typing import Any

import numpy as np

from protocol import data
from protocol import ncu as counters
from protocol.energy_design import DEFAULT_LEARNER, learner_of
from protocol.fixture_texts import INVENTORY_SCOPE, MEMORY_SCOPE
from verify.checks import fields, run, run_consistency
from verify.checks.consistency import FROZEN_CONFIG, PROTOCOL_CONFIG_ORDER
from verify.checks.original_fields import check_replay_validation, power_plausibility, split_batches
from verify.checks.run_common import json_record, stored_sha
from verify.host import frozen_reference
from verify.integrity import ArchiveFiles
from verify.records import get, get_dict, get_int, get_list, get_str
from verify.result import CheckResult, check_equal, check_true, failed, guarded

STATE_KEYS = ("input_hashes", "initial_parameter_sha256", "epoch_permutation_sha256", "final_parameter_sha256",
              "final_velocity_sha256", "state_vector_sha256", "predictions_sha256", "scores_sha256")
SMOKE = {"train": 19, "query": 7, "batch": 8}
"""The API/CLI smoke: 19 training and 7 query examples, batch 8 (spec 2.10)."""
VALIDATION = "validate/validation.json.gz"
WORKER = "validate/smoke/worker.json.gz"
CLI = "validate/smoke/cli.json.gz"


def _frozen_md() -> dict:
    return get_dict(frozen_reference().json("results/draw-00.json"), "metadata", "frozen results/draw-00.json")


def _frozen_inventory() -> dict:
    return get_dict(frozen_reference().json("cache-audit/baseline.json"), "result.buffer_inventory",
                    "frozen cache-audit/baseline.json")


def fixture_run_count(rec: Mapping[str, Any], where: str) -> int:
    """Invocations a fixture record's process made: 1, + the energy protocol's, + a profile's warm-up and range."""
    e = rec.get("energy")
    if e:
        return 3 + len(get_list(e, "trials", where)) * get_int(e, "repeats_per_trial", where)
    p = rec.get("profile")
    if p:
        return 1 + get_int(p, "warmup_complete_tasks", where) + get_int(p, "fresh_tasks_in_range", where)
    return 1


def _group(rec: Mapping[str, Any], md: Mapping[str, Any], where: str, *, workspace: Any, hw: Mapping | None,
           sw: Mapping | None, learner: str = DEFAULT_LEARNER) -> tuple:
    return (get(md, "input_hashes.train_labels", str, where), json.dumps(get_dict(md, "config", where), sort_keys=True),
            get_int(md, "test_count", where), workspace, (hw or {}).get("name"), json.dumps(sw, sort_keys=True), learner)


def metadata_blocks(f: ArchiveFiles) -> list[fields.Block]:
    """Every learner metadata block of a run archive with its record's context."""
    blocks: list[fields.Block] = []
    for rel, rec in run.fixture_records(f) + ([(CLI, f.json(CLI))] if f.has(CLI) else []):
        md = get_dict(rec, "metadata", rel)
        cfg = get_dict(rec, "config", rel)
        counts = (get_int(md, "train_count", rel), get_int(md, "test_count", rel)) if rel == CLI else (10_000, 10_000)
        group = _group(rec, md, rel, workspace=rec.get("cublas_workspace_config"), hw=rec.get("hardware"),
                       sw=rec.get("software"), learner=learner_of(rec))
        runs = fixture_run_count(rec, rel)
        blocks.append(fields.Block(rel, "metadata", md, cfg, counts, runs, group))
        e = rec.get("energy")
        if e:
            for key, count in (("before_metadata", 2), ("after_metadata", runs)):
                blocks.append(fields.Block(rel, f"energy.{key}", get_dict(e, key, rel), cfg, counts, count, group,
                                           get_dict(md, "input_hashes", rel)))
    for rel in run_consistency.all_qualify_records(f):
        rec = f.json(rel)
        md = get_dict(rec, "metadata", rel)
        fx = rec.get("fixture") if isinstance(rec.get("fixture"), dict) else {}
        group = _group(rec, md, rel, workspace=fx.get("cublas_workspace_config", rec.get("workspace_config")),
                       hw=fx.get("hardware", rec.get("hardware")), sw=fx.get("software", rec.get("software")),
                       learner=learner_of(fx))
        blocks.append(fields.Block(rel, "metadata", md, get_dict(rec, "config", rel), (10_000, 10_000), 1, group,
                                   get_dict(rec, "input_hashes", rel)))
    val = json_record(f, VALIDATION)
    worker = json_record(f, WORKER)
    if val is not None:
        smoke = get_dict(val, "api_cli_smoke", VALIDATION)
        md = get_dict(smoke, "metadata", VALIDATION)
        group = _group(val, md, VALIDATION, workspace=val.get("workspace"), hw=val.get("hardware"), sw=val.get("software"))
        blocks.append(fields.Block(VALIDATION, "api_cli_smoke.metadata", md, get_dict(smoke, "config", VALIDATION),
                                   (SMOKE["train"], SMOKE["query"]), 1, group))
        if worker is not None:
            blocks.append(fields.Block(WORKER, "api.metadata", get_dict(worker, "api.metadata", WORKER),
                                       get_dict(smoke, "config", VALIDATION), (SMOKE["train"], SMOKE["query"]), 1,
                                       ("worker",), get_dict(md, "input_hashes", VALIDATION)))
    return blocks


def check_metadata(f: ArchiveFiles) -> list[CheckResult]:
    """Every metadata block on its own, then the state hashes across blocks (and the frozen initial parameters)."""
    reference = _frozen_md()
    blocks = metadata_blocks(f)
    out: list[CheckResult] = []
    for b in blocks:
        out += guarded("metadata.error", b.rel, lambda b=b: fields.check_block(b, reference))
    out += fields.check_block_groups(blocks, reference)
    worker = json_record(f, WORKER)
    val = json_record(f, VALIDATION)
    if worker is not None and val is not None:
        md = get_dict(val, "api_cli_smoke.metadata", VALIDATION)
        api = get_dict(worker, "api", WORKER)
        out.append(check_equal("validate.worker.api", WORKER,
                               {"metadata": get_dict(api, "metadata", WORKER),
                                "second_run_hashes": get_dict(api, "second_run_hashes", WORKER)},
                               {"metadata": md, "second_run_hashes": {k: md.get(k) for k in get_dict(
                                   api, "second_run_hashes", WORKER)} if get(api, "repeated_api_replay_byte_equal", bool,
                                                                            WORKER) else "<differs>"},
                               what="worker API metadata vs validation.json; the second run's hashes equal the first's "
                                    "when the replay is byte-equal"))
        preds = get_list(api, "predictions", WORKER)
        out.append(check_equal("validate.worker.predictions", WORKER, data.array_sha256(
            np.asarray(preds, dtype=np.int64)), get_str(md, "predictions_sha256", VALIDATION),
            what="the worker's API predictions vs the smoke's predictions_sha256"))
    return out


def check_inventories(f: ArchiveFiles) -> list[CheckResult]:
    """Every fixture record's inventory structure vs the frozen reference (the smoke's inputs resized)."""
    ref = _frozen_inventory()
    out = []
    records = run.fixture_records(f) + ([(CLI, f.json(CLI))] if f.has(CLI) else [])
    fused_ref: tuple[str, dict] | None = None
    for rel, rec in records:
        inv = get_dict(rec, "buffer_inventory", rel)
        want = ref
        md = get_dict(rec, "metadata", rel)
        if fields.learner_name(rec) == fields.FUSED_LEARNER:  # agrees with its metadata: fixture.learner
            # no frozen reference for the variant: every fused record of the archive has the first one's buffers
            fused_ref = fused_ref or (rel, inv)
            out.append(check_equal("memory.inventory.structure.fused", rel, fields.inventory_structure(inv, rel),
                                   fields.inventory_structure(fused_ref[1], fused_ref[0]),
                                   what=f"named tensors and storages vs the archive's first fused record ({fused_ref[0]})"))
            continue
        counts = (get_int(md, "train_count", rel), get_int(md, "test_count", rel))
        if counts != (10_000, 10_000):
            want = _resized_inventory(ref, *counts)
        out.append(fields.check_inventory_structure(inv, want, subject=rel, where=rel))
    return out


def _fused_named_storage_bytes(f: ArchiveFiles) -> int | None:
    """Unique named storage bytes of the archive's first fused fixture record with an inventory, else of its
    first fused qualification record (the variant has no frozen inventory); ``None`` without either."""
    for rel, rec in run.fixture_records(f):
        if fields.learner_name(rec) == fields.FUSED_LEARNER and isinstance(rec.get("buffer_inventory"), dict):
            return get_int(rec, "buffer_inventory.unique_named_storage_bytes", rel)
    for rel in run_consistency.qualify_records(f):
        fx = (json_record(f, rel) or {}).get("fixture") or {}
        if fields.learner_name(fx) == fields.FUSED_LEARNER:
            return fx.get("unique_named_storage_bytes")
    return None


QUERY_TENSORS = ("raw_query", "q", "predictions", "scores")
"""Named tensors with one row per query example (the others with one per training example)."""


def _resized_inventory(ref: Mapping[str, Any], train: int, query: int) -> dict:
    """The reference inventory with the raw input tensors sized to other example counts (the smoke)."""
    from verify.checks.memory import ITEMSIZE_BYTES  # noqa: PLC0415

    out = json.loads(json.dumps(ref))
    ids = {}
    for t in out["named_tensors"]:
        if 10_000 in t["shape"]:  # one entry per example: of the query set for the query-side tensors
            n = query if t["name"] in QUERY_TENSORS else train
            t["shape"] = [n if d == 10_000 else d for d in t["shape"]]
            t["stride"] = [int(np.prod(t["shape"][i + 1:])) for i in range(len(t["shape"]))]  # contiguous
            t["logical_bytes"] = int(np.prod(t["shape"])) * ITEMSIZE_BYTES[t["dtype"]]
            ids[t["storage_id"]] = t["logical_bytes"]
    for s in out["unique_storages"]:
        if s["storage_id"] in ids:
            s["bytes"] = ids[s["storage_id"]]
    return out


HARDWARE_FACTS = ("name", "uuid", "cuda_pci_bus_id", "l2_cache_bytes", "sm_count", "total_memory_bytes",
                  "compute_capability", "cuda_available", "cuda_unavailable_reason", "nvml_pci_bus_id", "driver_version",
                  "cuda_driver_version", "power_limit_w", "nvml_available", "nvml_unavailable_reason", "device_index")


def _hardware_blocks(f: ArchiveFiles) -> list[tuple[str, dict, dict]]:
    """(path, hardware block, enclosing record) of every record that states its device."""
    out = []
    for rel, rec in run.fixture_records(f) + ([(CLI, f.json(CLI))] if f.has(CLI) else []):
        out.append((rel, get_dict(rec, "hardware", rel), rec))
    for rel in run_consistency.qualify_records(f):
        rec = f.json(rel)
        out.append((rel, get_dict(rec, "fixture.hardware", rel), get_dict(rec, "fixture", rel)))
    for rel in (VALIDATION, WORKER):
        rec = json_record(f, rel)
        if rec is not None and isinstance(rec.get("hardware"), dict):
            out.append((rel, rec["hardware"], rec))
    return out


def check_hardware(f: ArchiveFiles) -> list[CheckResult]:
    """One set of facts per board across the archive; the facts a board of that name reports; energy vs fixture."""
    blocks = _hardware_blocks(f)
    by_uuid: dict[Any, list[tuple[str, Any]]] = {}
    out: list[CheckResult] = []
    for rel, hw, rec in blocks:
        by_uuid.setdefault(hw.get("uuid"), []).append(
            (rel, json.dumps({k: hw.get(k) for k in HARDWARE_FACTS}, sort_keys=True)))
        out.append(fields.check_board_hardware(hw, subject=rel, where=rel))
        if "gpu" in rec or "cuda_device_index" in rec:
            out.append(check_equal("device.record_fields", rel,
                                   [rec.get("gpu"), rec.get("cuda_device_index", hw.get("device_index")),
                                    rec.get("device", "cuda")],
                                   [get_str(hw, "name", rel), get_int(hw, "device_index", rel), "cuda"],
                                   what="the record's gpu, device index and device vs its hardware block"))
        e = rec.get("energy") if isinstance(rec, dict) else None
        if e:
            eh = get_dict(e, "hardware", rel)
            out.append(check_equal("energy.hardware.fixture", rel,
                                   {k: eh.get(k) for k in ("gpu", "uuid", "total_memory_bytes", "power_limit_w", "driver",
                                                           "nvml_pci_bus_id", "nvml_handle_selected_by_cuda_pci_bus_id")},
                                   {"gpu": hw.get("name"), "uuid": hw.get("uuid"), "total_memory_bytes":
                                    hw.get("total_memory_bytes"), "power_limit_w": hw.get("power_limit_w"),
                                    "driver": hw.get("driver_version"), "nvml_pci_bus_id": hw.get("nvml_pci_bus_id"),
                                    "nvml_handle_selected_by_cuda_pci_bus_id": True},
                                   what="energy hardware block vs the fixture's hardware block"))
            out.append(check_equal("energy.software.fixture", rel, get_dict(e, "software", rel), rec.get("software"),
                                   what="energy software block vs the fixture's software"))
    out += fields.same_within_groups("device.same_board", by_uuid.values(),
                                     what="hardware facts of one board (UUID) across the archive")
    return out


def check_peaks(f: ArchiveFiles) -> list[CheckResult]:
    """The peaks of one workspace config are one value across every fresh-process record of the same board
    model and software (the fixture's allocator is deterministic: the shipped H200 archive has 21 ``:16:8``
    records that agree to the byte)."""
    return fields.same_within_groups("memory.workspace_peak", peak_groups(f).values(),
                                     what="allocator figures of one workspace config on one board model and software")


def peak_groups(f: ArchiveFiles) -> dict[tuple, list[tuple[str, dict]]]:
    """(workspace, board model, software, query count, learner) -> [(record, its allocator figures)] of every
    fresh-process fixture record and draw record (another learner allocates otherwise)."""
    groups: dict[tuple, list[tuple[str, Any]]] = {}
    keys = ("prepare_and_invoke_peak_allocated_bytes", "prepare_and_invoke_peak_reserved_bytes",
            "allocated_after_prepare_bytes", "allocated_after_invoke_bytes", "reserved_after_invoke_bytes")
    for rel, rec in run.fixture_records(f):
        mem = rec.get("memory")
        if not mem:
            continue
        key = (rec.get("cublas_workspace_config"), get(rec, "hardware.name", str, rel),
               json.dumps(rec.get("software"), sort_keys=True), get_int(get_dict(rec, "metadata", rel), "test_count", rel),
               learner_of(rec))
        groups.setdefault(key, []).append((rel, {k: get(mem, k, int, rel) for k in keys}))
    for rel in run_consistency.qualify_records(f):
        fx = get_dict(f.json(rel), "fixture", rel)
        key = (fx.get("cublas_workspace_config"), get(fx, "hardware.name", str, rel),
               json.dumps(fx.get("software"), sort_keys=True), 10_000, learner_of(fx))
        groups.setdefault(key, []).append((rel, {k: get(fx, f"memory.{k}", int, rel) for k in keys}))
    return groups


#: Record folders whose fixture jobs may run a learner other than the frozen one (``--learner``).
VARIANT_PHASES = ("energy/trial-", "profile/")


def check_fixture_fields(f: ArchiveFiles) -> list[CheckResult]:
    """Each fixture record's own protocol fields."""
    out: list[CheckResult] = []
    records = run.fixture_records(f) + ([(CLI, f.json(CLI))] if f.has(CLI) else [])
    sources = []
    for rel, rec in records:
        def one(rel: str = rel, rec: dict = rec) -> list[CheckResult]:
            sources.append((rel, get_dict(rec, "source_sha256", rel)))
            profile_mode = rel.startswith("profile/")
            cref = get_dict(rec, "cache_reference", rel)
            l2 = get_int(rec, "hardware.l2_cache_bytes", rel)
            want_pred = f"{posixpath.basename(rel)[: -len('.json.gz')]}.predictions.npy"
            p = rec.get("profile")
            learner = fields.learner_name(rec)
            v = [check_equal("fixture.learner", rel,
                             {"record": learner, "metadata": fields.learner_name(get_dict(rec, "metadata", rel))},
                             {"record": learner if learner == "rev88" or rel.startswith(VARIANT_PHASES)
                              else f"rev88 (only {', '.join(VARIANT_PHASES)} records run a variant)",
                              "metadata": learner},
                             what="the learner the record names, the same in its metadata; a variant only where "
                                  "the phases run one (qualify, the learners energy design, profile)")]
            v += [check_equal("fixture.fields", rel,
                             {"schema_version": get_int(rec, "schema_version", rel), "mode": get_str(rec, "mode", rel),
                              "requested_scope": get_str(rec, "requested_scope", rel),
                              "environment_was_set_externally": get(rec, "environment_was_set_externally", bool, rel),
                              "same_process_reference_hashes_matched":
                                  get_list(rec, "same_process_reference_hashes_matched", rel),
                              "predictions_file": get_str(rec, "predictions_file", rel),
                              "cache_reference": [get_int(cref, "bytes", rel), get_str(cref, "unit", rel)],
                              "memory_scope": get(rec, "memory.scope", str, rel),
                              "inventory_scope": get(rec, "buffer_inventory.scope", str, rel),
                              "energy": "present" if rel.startswith("energy/") else rec.get("energy"),
                              "test_labels_read": rec.get("test_labels_read")},
                             {"schema_version": 1, "mode": "profile" if profile_mode else "measure",
                              "requested_scope": get(p, "scope", str, rel) if p else "task",
                              "environment_was_set_externally": True, "same_process_reference_hashes_matched":
                                  list(STATE_KEYS), "predictions_file": want_pred,
                              "cache_reference": [l2, f"{l2 >> 20} MiB"],
                              "memory_scope": MEMORY_SCOPE, "inventory_scope": INVENTORY_SCOPE,
                              "energy": "present" if rel.startswith("energy/") else None, "test_labels_read": False},
                             what="schema, mode and scope of the phase, workspace set before start, all eight hashes "
                                  "matched in-process, its prediction file, L2 reference = the board's L2, scope texts")]
            if p:
                repeats = get_int(p, "requested_repeats", rel)
                task = get_str(p, "scope", rel) == "task"
                v.append(check_equal("fixture.profile", rel, p,
                                     {"scope": get_str(p, "scope", rel), "warmup_complete_tasks": 2, "requested_repeats":
                                      counters.FIXTURE_REPEATS, "fresh_tasks_in_range": repeats if task else 0,
                                      "fresh_training_sequences_in_range": repeats if task else 1,
                                      "epochs_per_sequence": get_int(rec, "config.epochs", rel),
                                      "training_scope_ignores_repeats": not task, "reset_inside_range": task,
                                      "prediction_inside_range": task, "epoch_order_copies_inside_range": True,
                                      "output_serialization_inside_range": False, "cpu_validation_inside_range": False,
                                      "synchronized_before_stop": True},
                                     what="profile range protocol recomputed from its scope and repeats"))
            else:
                v.append(check_equal("fixture.profile", rel, p, None, what="no profile block in a measure record"))
            return v
        out += guarded("fixture.fields.error", rel, one)
    for rel in run_consistency.qualify_records(f):
        sources.append((rel, get_dict(f.json(rel), "fixture.source_sha256", rel)))
    for rel in (VALIDATION, WORKER):
        rec = json_record(f, rel)
        if rec is not None:
            sources.append((rel, get_dict(rec, "source_sha256", rel)))
    by_torch = [sources]  # one bundle checkout per archive run: every job hashed the same sources
    out += fields.same_within_groups("fixture.source_sha256",
                                     [[(s, json.dumps(v, sort_keys=True)) for s, v in g] for g in by_torch],
                                     what="sha256 of the bundle sources every job ran")
    return out


def check_smoke_record(f: ArchiveFiles) -> list[CheckResult]:
    """The validation's CLI fixture record (not a phase fixture record): allocator invariants, inventory, its
    config file and its inputs (the synthetic smoke data rebuilt)."""
    if not f.has(CLI):
        return []
    from protocol.fixture_inputs import smoke_inputs  # noqa: PLC0415
    from verify.checks import memory  # noqa: PLC0415

    rec = f.json(CLI)
    mem = get_dict(rec, "memory", CLI)
    out = memory.check_fixture_memory(mem, subject=CLI, where=CLI)
    out += memory.check_inventory(get_dict(rec, "buffer_inventory", CLI), get_int(mem, "allocated_after_invoke_bytes", CLI),
                                  subject=CLI, where=CLI)
    smoke = smoke_inputs()
    cfg_rel = "validate/smoke/config.json"
    out.append(check_equal("validate.smoke.record_inputs", CLI,
                           {"input_hashes": get_dict(rec, "metadata.input_hashes", CLI),
                            "config_file_sha256": get_str(rec, "config_file_sha256", CLI)},
                           {"input_hashes": {k: data.array_sha256(smoke[k]) for k in ("train_images", "train_labels",
                                                                                      "test_images")},
                            "config_file_sha256": hashlib.sha256(f.read(cfg_rel)).hexdigest() if f.has(cfg_rel) else None},
                           what="the CLI run's input hashes (the smoke data rebuilt) and config file sha"))
    val = json_record(f, VALIDATION)
    if val is not None:
        out.append(check_equal("validate.smoke.api_inputs", VALIDATION,
                               get(val, "api_cli_smoke.metadata.input_hashes", dict, VALIDATION),
                               get_dict(rec, "metadata.input_hashes", CLI), what="API smoke inputs vs the CLI run's"))
    return out


def check_input_archives(f: ArchiveFiles) -> list[CheckResult]:
    """One input archive per phase: every record of a phase names the same ``input_archive_sha256``, and the
    environment's ``dropped_files`` lists exactly the phases' inputs with those sha256."""
    by_phase: dict[str, list[tuple[str, Any]]] = {}
    for rel, rec in run.fixture_records(f) + ([(CLI, f.json(CLI))] if f.has(CLI) else []):
        phase = "validate/smoke" if rel == CLI else rel.split("/")[0]
        if phase == "qualify":
            continue
        by_phase.setdefault(phase, []).append((rel, get_str(rec, "input_archive_sha256", rel)))
    out = fields.same_within_groups("consistency.input_archive_sha256.phase", by_phase.values(),
                                    what="input archive of one phase (one input .npz per phase)")
    env = json_record(f, "environment.json.gz") or {}
    if "dropped_files" in env:
        dropped = {get_str(d, "path", "environment.json.gz"): get_str(d, "sha256", "environment.json.gz")
                   for d in get_list(env, "dropped_files", "environment.json.gz")}
        want = {f"{phase}/input.npz": members[0][1] for phase, members in by_phase.items() if phase != "profile"}
        out.append(check_equal("consistency.dropped_files", "environment.json.gz", dropped, want,
                               what="dropped input archives vs the inputs the phases' records name"))
    return out


def check_execution_hosts(f: ArchiveFiles) -> list[CheckResult]:
    """A native record's ``execution.host_python`` is its own Python (the job assembled the record itself)."""
    out = []
    for _phase, rel, rec, prefix in run_consistency._device_records(f):
        ex = get(rec, f"{prefix}execution", (dict, type(None)), rel) if prefix else rec.get("execution")
        if isinstance(ex, dict) and ex.get("engine") == "native":
            out.append(check_equal("consistency.execution.host_python", rel, ex.get("host_python"),
                                   get(rec, f"{prefix}software.python", str, rel),
                                   what="host Python of a native job vs its software record"))
    return out


def check_qualify_fields(f: ArchiveFiles) -> list[CheckResult]:
    """Draw records: the fresh-process block, top-level copies of the metadata hashes, the frozen comparison."""
    out: list[CheckResult] = []
    for rel in run_consistency.all_qualify_records(f):
        def one(rel: str = rel) -> list[CheckResult]:
            rec = f.json(rel)
            md = get_dict(rec, "metadata", rel)
            i = get_int(rec, "draw_index", rel)
            frozen = frozen_reference().json(f"results/draw-{i:02d}.json")
            fmd = get_dict(frozen, "metadata", "frozen")
            v = [check_equal("qualify.record.hash_copies", rel, {k: rec.get(k) for k in STATE_KEYS},
                             {k: md.get(k) for k in STATE_KEYS}, what="the record's state hashes vs its metadata's"),
                 check_equal("qualify.record.resize", rel, get_str(rec, "resize", rel), "exact",
                             what="resize mode (the verifier rebuilt the images with it)")]
            fc = get_dict(rec, "frozen_comparison", rel)
            want_fc = {"predictions_sha256_equal": md.get("predictions_sha256") == fmd.get("predictions_sha256"),
                       "initial_parameter_sha256_equal": md.get("initial_parameter_sha256") == fmd.get(
                           "initial_parameter_sha256"),
                       "epoch_permutation_sha256_equal": md.get("epoch_permutation_sha256") == fmd.get(
                           "epoch_permutation_sha256"),
                       "input_hashes_equal": md.get("input_hashes") == fmd.get("input_hashes"),
                       "frozen": {k: fmd.get(k) for k in get_dict(fc, "frozen", rel)}}
            v.append(check_equal("qualify.record.frozen_comparison", rel, {k: fc.get(k) for k in want_fc}, want_fc,
                                 what="comparison with the frozen draw recomputed"))
            fx = rec.get("fixture")
            if isinstance(fx, dict):
                v.append(check_equal("qualify.record.learner", rel, fields.learner_name(fx), fields.learner_name(md),
                                     what="the learner the draw's fixture record names, the same in its metadata"))
                named = (_fused_named_storage_bytes(f) if fields.learner_name(fx) == fields.FUSED_LEARNER
                         else get_int(_frozen_inventory(), "unique_named_storage_bytes", "frozen"))
                v.append(check_equal("qualify.record.fresh_process", rel,
                                     {"runner": rec.get("runner"), "fresh_process": fx.get("fresh_process"),
                                      "environment_was_set_externally": fx.get("environment_was_set_externally"),
                                      "device": rec.get("device"), "software": rec.get("software"),
                                      "hardware": rec.get("hardware"), "workspace_config": rec.get("workspace_config"),
                                      "predictions_file_sha256": fx.get("predictions_file_sha256"),
                                      "same_process_reference_hashes_matched": fx.get("same_process_reference_hashes_matched"),
                                      "unique_named_storage_bytes": fx.get("unique_named_storage_bytes"),
                                      "allocated_bytes_without_named_storage_reference":
                                          fx.get("allocated_bytes_without_named_storage_reference"),
                                      "cache_reference": [get(fx, "cache_reference.bytes", int, rel),
                                                          get(fx, "cache_reference.unit", str, rel)],
                                      "memory_scope": get(fx, "memory.scope", str, rel)},
                                     {"runner": "FreshProcessRunner", "fresh_process": True,
                                      "environment_was_set_externally": True, "device": None, "software": None,
                                      "hardware": None,
                                      # the orchestrating process's own setting: none, or the draws' (reproduce
                                      # sets :16:8 on the qualification job since 2026-12-01)
                                      "workspace_config": (rec.get("workspace_config")
                                                           if rec.get("workspace_config") == fx.get("cublas_workspace_config")
                                                           else None),
                                      "predictions_file_sha256": stored_sha(f, f"qualify/{get_str(rec, 'predictions_file', rel)}"),
                                      "same_process_reference_hashes_matched": list(STATE_KEYS),
                                      "unique_named_storage_bytes": named,
                                      "allocated_bytes_without_named_storage_reference":
                                          get(fx, "memory.allocated_after_invoke_bytes", int, rel) - named,
                                      "cache_reference": [get(fx, "hardware.l2_cache_bytes", int, rel),
                                                          f"{get(fx, 'hardware.l2_cache_bytes', int, rel) >> 20} MiB"],
                                      "memory_scope": MEMORY_SCOPE},
                                     what="fresh-process block: one fixture process per draw (its allocator started "
                                          "empty), its prediction file the stored one, named storage as the frozen "
                                          "inventory"))
                from verify.checks import memory  # noqa: PLC0415

                v += memory.check_fixture_memory(get_dict(fx, "memory", rel), subject=f"{rel} fixture", where=rel)
            return v
        out += guarded("qualify.fields.error", rel, one)
    acc_rel = "qualify/accuracy.json.gz"
    acc = json_record(f, acc_rel)
    if acc is not None and isinstance(acc.get("rows"), list):  # no rows: accuracy.rows reports it
        frozen_rows = get_list(frozen_reference().json("accuracy.json"), "rows", "frozen accuracy.json")
        rows = get_list(acc, "rows", acc_rel)
        fc = get_dict(acc, "frozen_comparison", acc_rel)
        want_rows = []
        for r, fr in zip(rows, frozen_rows, strict=False):
            want_rows.append({"draw": r.get("draw"), "correct": r.get("correct"), "frozen_correct": fr.get("correct"),
                              "correct_equal": r.get("correct") == fr.get("correct"),
                              "test_labels_sha256_equal": r.get("test_labels_sha256") == fr.get("test_labels_sha256")})
        total = sum(get_int(r, "correct", acc_rel) for r in rows)
        frozen_total = get_int(frozen_reference().json("accuracy.json"), "correct", "frozen accuracy.json")
        out.append(check_equal("accuracy.record.frozen_comparison", acc_rel, fc,
                               {"rows": want_rows, "correct": total, "frozen_correct": frozen_total,
                                "correct_equal": total == frozen_total},
                               what="comparison with the frozen accuracy.json recomputed"))
        out.append(check_equal("accuracy.record.schema_version", acc_rel, get_int(acc, "schema_version", acc_rel), 1))
    return out


def check_comparison_fields(f: ArchiveFiles) -> list[CheckResult]:
    """The comparison's memory audits (recomputed from the record's memory checks) and its own fields."""
    rel = "compare/comparison.json.gz"
    cmp = json_record(f, rel)
    if cmp is None:
        return []
    from verify.checks import memory  # noqa: PLC0415

    out: list[CheckResult] = []
    audits = []
    for i, row in enumerate(get_list(cmp, "configs", rel)):
        w = f"{rel}: configs.{i}"
        rec_rel = f"compare/{get_str(row, 'record', w)}"
        rec = json_record(f, rec_rel)
        if rec is None:
            continue
        mem = get_dict(rec, "memory", rec_rel)
        inv = get_dict(rec, "buffer_inventory", rec_rel)
        verdicts = memory.check_fixture_memory(mem, subject=rec_rel, where=rec_rel)
        inv_verdicts = memory.check_inventory(inv, get_int(mem, "allocated_after_invoke_bytes", rec_rel), subject=rec_rel,
                                              where=rec_rel)
        ok = {r.check_id: r.status.value == "PASS" for r in verdicts + inv_verdicts}
        checks = {"entry_allocated_and_reserved_zero": ok["memory.entry_empty"],
                  "live_positive_and_at_most_peak": ok["memory.live_within_peak"],
                  "after_prepare_at_most_peak": ok["memory.after_prepare_within_peak"],
                  "reserved_at_least_live": ok["memory.reserved_covers_live"],
                  "peak_reserved_at_least_peak": ok["memory.peak_reserved_covers_peak"],
                  "added_peak_equals_peak": ok["memory.added_peak_over_entry_allocated_bytes"],
                  "storage_ids_and_addresses_unique": ok["memory.inventory.unique_storages"],
                  "named_total_consistent": ok["memory.inventory.unique_named_storage_bytes"]
                  and ok["memory.inventory.named_within_live"],
                  "unnamed_equals_live_minus_named": ok["memory.inventory.unnamed_live_allocated_bytes"],
                  "no_residency_claims": not get(inv, "cache_residency_established", bool, rec_rel)
                  and not get(inv, "is_per_kernel_working_set", bool, rec_rel)}
        audit = {"passed": all(checks.values()), "checks": checks}
        audits.append(audit["passed"])
        out.append(check_equal("compare.memory_audit", f"{rel} {row.get('workspace')}", get_dict(row, "memory_audit", w),
                               audit, what="memory audit recomputed from the record's allocator and inventory figures"))
        out.append(check_equal("compare.config_row", f"{rel} {row.get('workspace')}",
                               [row.get("role"), row.get("record_sha256")],
                               [_ROLES.get(row.get("workspace")), stored_sha(f, rec_rel)], what="role and record sha"))
    from verify.checks.run_consistency import requested_workspaces  # noqa: PLC0415

    del requested_workspaces
    out.append(check_equal("compare.fields", rel,
                           {"schema_version": cmp.get("schema_version"), "memory_audit_passed": cmp.get("memory_audit_passed"),
                            "baseline": cmp.get("baseline"),
                            # null when compare did not compare (compare.frozen_reference.present FAILs that)
                            "frozen_reference_path": cmp["frozen_reference"].get("path")
                            if isinstance(cmp.get("frozen_reference"), dict) else None,
                            "input_archive_sha256": cmp.get("input_archive_sha256"),
                            "config_file_sha256": cmp.get("config_file_sha256")},
                           {"schema_version": 1, "memory_audit_passed": all(audits), "baseline": ":4096:8",
                            "frozen_reference_path": f"evidence/rev88-original/results/draw-{get_int(cmp, 'draw_index', rel):02d}.json",
                            "input_archive_sha256": _only(f, "compare/", "input_archive_sha256"),
                            "config_file_sha256": _only(f, "compare/", "config_file_sha256")},
                           what="comparison fields vs its records"))
    return out


def _roles() -> dict[str, str]:
    from protocol.workspaces import WORKSPACES  # noqa: PLC0415

    return dict(WORKSPACES)


_ROLES = _roles()


def _only(f: ArchiveFiles, prefix: str, key: str) -> Any:
    values = {rec.get(key) for rel, rec in run.fixture_records(f) if rel.startswith(prefix)}
    return values.pop() if len(values) == 1 else sorted(str(v) for v in values)


def check_energy_fields(f: ArchiveFiles) -> list[CheckResult]:
    """Power plausibility of every energy record; the energy summaries' own fields."""
    out = []
    for rel, rec in run.fixture_records(f):
        e = rec.get("energy")
        if e:
            out.append(power_plausibility(e, subject=rel, where=rel))
            settings = get_dict(e, "settings", rel)
            out.append(check_equal("energy.record.fields", rel,
                                   {"state_hash_keys_checked": get_list(e, "state_hash_keys_checked", rel),
                                    "counter_update_interval_s": settings.get("counter_update_interval_s", 0.1)},
                                   {"state_hash_keys_checked": list(STATE_KEYS), "counter_update_interval_s": 0.1},
                                   what="the replay compared all eight hashes; the counter's update period"))
            cfg_rel = rel[: -len(".json.gz")] + ".energy-config.json"
            if get_str(settings, "mode", rel) == "original" and f.has(cfg_rel):
                out.append(check_equal("energy.original.energy_config", cfg_rel, f.json(cfg_rel), {},
                                       what="the original-protocol job's --energy-config (the protocol's defaults)"))
    from protocol.energy_design import LEARNERS_BASELINE  # noqa: PLC0415
    from verify.checks.run_energy import LEARNERS, trial_summaries  # noqa: PLC0415

    for w in trial_summaries(f):
        inter = json_record(f, w)
        if inter is None:
            continue
        recs = [json_record(f, f"energy/{t.get('record')}") for t in get_list(inter, "trials", w)]
        first = next((r for r in recs if r), None)
        if first is not None:
            protocol = "learners" if w == LEARNERS else "interleaved"
            out.append(check_equal(f"energy.{protocol}.fields", w,
                                   {"schema_version": inter.get("schema_version"), "protocol": inter.get("protocol"),
                                    "draw_index": inter.get("draw_index"), "baseline": inter.get("baseline"),
                                    "gpu": inter.get("gpu"),
                                    "settings": {k: v for k, v in get_dict(inter, "settings", w).items()
                                                 if k in ("align_stamps", "counter_update_interval_s")}},
                                   {"schema_version": 1, "protocol": protocol,
                                    "draw_index": run.which_draw(get_dict(first, "metadata", w), w),
                                    "baseline": LEARNERS_BASELINE if w == LEARNERS else ":4096:8",
                                    "gpu": {"name": get(first, "energy.hardware.gpu", str, w),
                                            "uuid": get(first, "energy.hardware.uuid", str, w),
                                            "nvml_pci_bus_id": get(first, "energy.hardware.nvml_pci_bus_id", str, w)},
                                    "settings": {k: get(first, f"energy.settings.{k}", None, w)
                                                 for k in ("align_stamps", "counter_update_interval_s")}},
                                   what=f"{protocol} summary fields vs its trial records"))
    return out


def check_profile_fields(f: ArchiveFiles) -> list[CheckResult]:
    """Profile run records' remaining fields, the capabilities and the summary's own fields."""
    from verify.checks.run_profile import run_records  # noqa: PLC0415

    caps = json_record(f, "profile/capabilities.json.gz")
    summary = json_record(f, "profile/profiles.json.gz")
    runs = run_records(f)
    if not runs:
        return []
    out: list[CheckResult] = []
    ncu = get_str(caps, "ncu_path", "capabilities") if caps else None
    attrs = []
    env = json_record(f, "environment.json.gz") or {}
    engine = next((e.get("engine") for e in env.get("executions", []) if "profile" in e.get("phases", [])), None)
    for rel, rec in runs:
        def one(rel: str = rel, rec: dict = rec) -> list[CheckResult]:
            name = get_str(rec, "name", rel)
            ws, scope = get_str(rec, "workspace_config", rel), get_str(rec, "scope", rel)
            profile = f"workspace-{ws.strip(':').replace(':', '-')}-{scope}"
            command = get_list(rec, "command", rel)
            export = command[command.index("--export") + 1] if "--export" in command else ""
            workdir = posixpath.dirname(export)
            fx_rel = f"profile/{get_str(rec, 'files.fixture_record.path', rel)}"
            fx = json_record(f, fx_rel) or {}
            want_cmd = list(counters.profile_argv(ncu or "?", f"{workdir}/{name}", counters.fixture_argv(
                f"{workdir}/input.npz", f"{workdir}/config.json", f"{workdir}/{name}.fixture.json.gz", scope,
                learner=learner_of(fx))))
            csv = counters.parse_raw_csv(f.read(f"profile/{get_str(rec, 'files.csv.path', rel)}").decode("utf-8"),
                                         hit_rate_limit_percent=None)
            attrs.append((rel, json.dumps({k: v for k, v in csv.device_attributes.items() if k != "gpu__time_duration.sum"},
                                          sort_keys=True)))
            fmd = fx.get("metadata") or {}
            v = [check_equal("profile.run.fields", rel,
                             {"schema_version": rec.get("schema_version"), "name": name, "profile": rec.get("profile"),
                              "returncode": rec.get("returncode"), "range_id": rec.get("range_id"),
                              "range_name": rec.get("range_name"), "command": command,
                              "env_engine": get(rec, "env.REV88_ENGINE", str, rel),
                              "profile_device_attribute_units": rec.get("profile_device_attribute_units"),
                              "gpu_time_duration_ns": rec.get("gpu_time_duration_ns"),
                              "files.fixture_record.path": get(rec, "files.fixture_record.path", str, rel),
                              "files.csv.path": get(rec, "files.csv.path", str, rel),
                              "files.ncu_output.path": get(rec, "files.ncu_output.path", str, rel)},
                             {"schema_version": 1, "name": f"{profile}-r{get_int(rec, 'repeat_index', rel):02d}",
                              "profile": profile, "returncode": 0, "range_id": csv.range_id, "range_name": csv.range_name,
                              "command": want_cmd, "env_engine": engine,
                              "profile_device_attribute_units": csv.attribute_units,
                              "gpu_time_duration_ns": csv.gpu_time_duration_ns,
                              "files.fixture_record.path": f"{name}.fixture.json.gz", "files.csv.path": f"{name}.csv.gz",
                              "files.ncu_output.path": f"{name}.ncu-output.txt.gz"},
                             what="run fields vs its name, the ncu command rebuilt from the capabilities, the CSV"),
                 check_equal("profile.run.fixture_copy", rel, get_dict(rec, "fixture", rel),
                             {"workspace_config": fx.get("cublas_workspace_config"), "gpu": fx.get("gpu"),
                              "l2_cache_bytes": get(fx, "hardware.l2_cache_bytes", int, fx_rel) if fx else None,
                              "profile": fx.get("profile"),
                              "same_process_reference_hashes_matched": fx.get("same_process_reference_hashes_matched"),
                              "metadata_state_hashes": {k: fmd.get(k) for k in get_dict(rec, "fixture.metadata_state_hashes",
                                                                                         rel)},
                              # placement and timeline: copied since the runs of 2026-12-01 (absent before)
                              **{k: fx.get(k) for k in ("placement", "timeline") if k in get_dict(rec, "fixture", rel)},
                              **({"learner": fx["learner"]} if "learner" in fx else {})},
                             what="the run's copy of its fixture record's facts")]
            v.append(_runtime_cross_check(rec, csv, rel))
            return v
        out += guarded("profile.run.fields.error", rel, one)
    out += fields.same_within_groups("profile.device_attributes.same_board", [attrs],
                                     what="ncu device attributes of one board across the runs")
    out.append(fields.check_board_attributes(json.loads(attrs[0][1]) if attrs else {}, subject=runs[0][0],
                                             where=runs[0][0]))
    if caps is not None:
        w = "profile/capabilities.json.gz"
        query = get_dict(caps, "metric_query", w)
        out.append(check_equal("profile.capabilities.fields", w,
                               {"schema_version": caps.get("schema_version"), "argv": get_list(query, "argv", w),
                                "metrics": caps.get("metrics"), "profile_flags": caps.get("profile_flags"),
                                "ncu_version_note": caps.get("ncu_version_note"),
                                "stdout.path": get(query, "files.stdout.path", str, w),
                                "stderr.path": get(query, "files.stderr.path", str, w)},
                               {"schema_version": 1, "argv": list(counters.query_argv(ncu or "?")),
                                "metrics": list(counters.NCU_METRICS), "profile_flags": list(counters.NCU_PROFILE_FLAGS),
                                "ncu_version_note": _version_note(caps.get("ncu_version")),
                                "stdout.path": "metric-query.stdout.txt.gz", "stderr.path": "metric-query.stderr.txt.gz"},
                               what="metric query command, metrics and flags vs protocol.ncu"))
        from verify.checks.run_profile import check_files_map  # noqa: PLC0415

        out += check_files_map(f, w, {"files": get_dict(query, "files", w)}, w)
    if summary is not None:
        w = "profile/profiles.json.gz"
        first = runs[0][1]
        out.append(check_equal("profile.summary.fields", w,
                               {k: summary.get(k) for k in ("schema_version", "draw", "metrics", "l2_sector_bytes",
                                                            "device_attributes", "l2_cache_size_bytes", "ncu_version_note")},
                               {"schema_version": 1, "draw": 0, "metrics": list(counters.NCU_METRICS),
                                "l2_sector_bytes": 32,
                                "device_attributes": dict(get_dict(summary, "device_attributes", w)) | {
                                    k: v for k, v in get_dict(first, "profile_device_attributes", runs[0][0]).items()
                                    if k != "gpu__time_duration.sum"},
                                "l2_cache_size_bytes": get_int(first, "l2_cache_size_bytes", runs[0][0]),
                                "ncu_version_note": caps.get("ncu_version_note") if caps else None},
                               what="summary fields vs the runs and the capabilities"))
        learners = {json.dumps((rec.get("fixture") or {}).get("learner"), sort_keys=True) for _, rec in runs}
        out.append(check_equal("profile.summary.learner", w, summary.get("learner"),
                               json.loads(learners.pop()) if len(learners) == 1 else "one learner for every run",
                               what="the learner every run's fixture named (absent: the frozen rev88)"))
        out += _summary_lock_checks(w, summary, runs)
        resumed = get_list(summary, "resumed_runs", w)
        out.append(check_true("profile.summary.resumed_runs", w, all(r in get_list(summary, "order", w) for r in resumed),
                              f"resumed runs {resumed} are not runs of the phase", recorded=resumed))
    return out


def _summary_lock_checks(w: str, summary: dict, runs: list) -> list[CheckResult]:
    """``profiles.json.gz`` ``placement``: its lock scope and lock text against every run's own lock record.

    The runs' scope is each fixture's ``placement.gpu_lock.scope`` (``process`` when the record has a
    lock without a scope, as before scopes existed). ``gpu_lock_scope`` (absent before 2026-12-01
    evening) must name it, and the ``gpu_lock`` sentence must be the writer's sentence for it
    (``protocol.profile_texts.GPU_LOCK_TEXT``), so dropping the key does not hide a changed sentence.
    """
    from protocol.profile_texts import GPU_LOCK_TEXT, lock_scope_of  # noqa: PLC0415

    placement = summary.get("placement") if isinstance(summary.get("placement"), dict) else {}
    scopes = {lock_scope_of(rec.get("fixture") or {}) or "no lock record" for _, rec in runs}
    one = scopes.pop() if len(scopes) == 1 else f"one scope for every run (runs: {sorted(scopes)})"
    out = []
    if "gpu_lock_scope" in placement:
        out.append(check_equal("profile.summary.gpu_lock_scope", w, placement.get("gpu_lock_scope"), one,
                               what="the GPU lock scope every run's fixture recorded"))
    if "gpu_lock" in placement:
        out.append(check_equal("profile.summary.gpu_lock_text", w, placement.get("gpu_lock"),
                               GPU_LOCK_TEXT.get(one, f"the sentence of a known scope ({', '.join(GPU_LOCK_TEXT)})"),
                               what="the lock sentence of the runs' scope (protocol.profile_texts.GPU_LOCK_TEXT)"))
    return out


def _version_note(version: Any) -> str:
    from protocol.profile_texts import VERSION_NOTE  # noqa: PLC0415

    return VERSION_NOTE.format(pinned=counters.PINNED_NCU_VERSION, found=version or "an unknown version")


def _runtime_cross_check(rec: Mapping[str, Any], csv: counters.CounterRows, rel: str) -> CheckResult:
    """The run's recorded report cross-check: csv values are the CSV's, report values agree within tolerance.

    For a run whose ``.ncu-rep`` is stored the report itself is re-read (``profile.ncu_report``);
    for one whose report was not kept this is all that can be checked (the report values are
    attested by the run).
    """
    cc = get_dict(rec, "ncu_report_cross_check", rel)
    if get_str(cc, "status", rel) != "passed":
        return check_true("profile.report_cross_check", rel, bool(cc.get("reason")),
                          "a report cross-check that did not pass must say why", recorded=cc)
    metrics = get_dict(cc, "metrics", rel)
    bad = []
    for name, m in metrics.items():
        if name in csv.metrics:
            raw, unit = csv.metrics[name].raw_value, csv.metrics[name].raw_unit
        elif name in csv.device_attributes:
            raw, unit = csv.device_attributes[name], csv.attribute_units.get(name, "")
        else:
            bad.append(f"{name} is not in the CSV")
            continue
        rv = m.get("report_value")
        if isinstance(rv, str) or name == counters.DISPLAY_NAME:
            ok = m.get("csv_value") == raw and rv == raw and m.get("tolerance") == 0.0
        else:
            csv_value = counters.scale_value(name, raw, unit or next(iter(counters.METRIC_UNITS[name])))
            exact = isinstance(rv, int) or name in counters.INTEGER_METRICS
            tol = 0.0 if exact else max(counters.REPORT_REL_TOL * abs(float(rv)),
                                        counters.printed_resolution(raw) * counters.METRIC_UNITS[name].get(unit, 1.0))
            ok = (m.get("csv_value") == csv_value and isinstance(rv, int | float)
                  and abs(float(rv) - csv_value) <= tol and m.get("tolerance") == tol)
        if not ok:
            bad.append(f"{name}: recorded {m}")
    return check_true("profile.report_cross_check", rel, not bad and bool(metrics)
                      and cc.get("action_name") == csv.range_name,
                      f"the run-time report cross-check does not agree with the CSV: {'; '.join(bad[:3])}", recorded=cc)


def check_validation_fields(f: ArchiveFiles) -> list[CheckResult]:
    """The validation records' remaining fields."""
    v = json_record(f, VALIDATION)
    if v is None:
        return []
    w = VALIDATION
    out: list[CheckResult] = []
    gpu = get_str(v, "gpu", w)
    nv = get_dict(v, "numerical_validation", w)
    out += check_replay_validation({k: x for k, x in nv.items() if k != "captured_graphs"}, subject=f"{w} numerical_validation",
                                   where=w, gpu=gpu)
    out.append(check_equal("validate.fields", w,
                           {"device": v.get("device"), "gpu": gpu, "torch_version": v.get("torch_version"),
                            "workspace": v.get("workspace"), "captured_graphs": nv.get("captured_graphs")},
                           {"device": "cuda", "gpu": get(v, "hardware.name", str, w),
                            "torch_version": get(v, "software.torch", str, w), "workspace": ":16:8", "captured_graphs": True},
                           what="device, board, torch and workspace vs its hardware and software blocks"))
    reference = _frozen_md()
    st = get_dict(v, "cpu_reconstruction_selftest", w)
    out += fields.check_selftest({"passed": st.get("passed"), "device": "cpu", "scope": reference["validation"]["scope"],
                                  "checks": get_list(st, "cases", w)}, get_dict(reference, "validation", "frozen"),
                                 subject=f"{w} cpu_reconstruction_selftest", where=w)
    worker = json_record(f, WORKER)
    if worker is not None:
        out.append(check_equal("validate.worker.selftest", WORKER, get_list(worker, "cpu_reconstruction_selftest", WORKER),
                               get_list(st, "cases", w), what="worker self-test vs validation.json"))
        out.append(check_equal("validate.worker.workspace", WORKER, get_str(worker, "workspace", WORKER),
                               get_str(v, "workspace", w)))
    smoke = get_dict(v, "api_cli_smoke", w)
    md = get_dict(smoke, "metadata", w)
    out.append(check_equal("validate.smoke.fields", w,
                           {"batch_sizes": get_list(smoke, "batch_sizes", w), "config": get_dict(smoke, "config", w)},
                           {"batch_sizes": split_batches(get_int(md, "train_count", w), get_int(md, "config.batch_size", w)),
                            "config": {**FROZEN_CONFIG, "batch_size": SMOKE["batch"]}},
                           what="smoke batch split and config (frozen, batch 8)"))
    cfg_rel = "validate/smoke/config.json"
    if f.has(cfg_rel):
        cfg = {k: FROZEN_CONFIG[k] for k in PROTOCOL_CONFIG_ORDER} | {"batch_size": SMOKE["batch"]}
        want = (json.dumps(cfg, indent=2) + "\n").encode()
        out.append(check_equal("validate.smoke.config_file", cfg_rel, hashlib.sha256(f.read(cfg_rel)).hexdigest(),
                               hashlib.sha256(want).hexdigest(), what="smoke config.json vs the frozen config with batch 8"))
    out += _check_refused_npz(f)
    for key in ("query_label_archive", "late_cuda_initialization"):
        r = get_dict(smoke, f"refusals.{key}", w)
        out.append(check_equal("validate.refusal.fields", f"{w} {key}",
                               {"job": r.get("job"), "message_found": r.get("message_found")},
                               {"job": {"query_label_archive": "validate/refuse-test-labels",
                                        "late_cuda_initialization": "validate/refuse-late-cuda"}[key],
                                "message_found": get_str(r, "expected_message", w) in get_str(r, "stderr_tail", w)},
                               what="refusal job name; message_found = the expected message is in its stderr"))
        out.append(check_equal("validate.refusal.expected_message", f"{w} {key}", get_str(r, "expected_message", w),
                               {"query_label_archive": "exactly the three",
                                "late_cuda_initialization": "before CUDA initialization"}[key],
                               what="the refusal the fixture must print (bundle.fixture)"))
    # original_comparison (presence and values) is checked by verify.checks.run_compare.check_validation,
    # which runs on every device
    return out


def _check_refused_npz(f: ArchiveFiles) -> list[CheckResult]:
    """``with-test-labels.npz`` holds exactly the smoke inputs plus a zero ``test_labels`` array (the refused archive)."""
    rel = "validate/smoke/with-test-labels.npz"
    if not f.has(rel):
        return []
    from protocol.fixture_inputs import smoke_inputs  # noqa: PLC0415

    try:
        with np.load(io.BytesIO(f.read(rel)), allow_pickle=False) as z:
            got = {k: z[k] for k in z.files}
    except (ValueError, OSError) as exc:
        return [failed("validate.refused_npz", rel, f"not a readable .npz ({exc})")]
    want = {**smoke_inputs(), "test_labels": np.zeros(SMOKE["query"], dtype=np.int64)}
    same = list(got) == list(want) and all(got[k].dtype == want[k].dtype and got[k].shape == want[k].shape
                                           and np.array_equal(got[k], want[k]) for k in want)
    return [check_true("validate.refused_npz", rel, same, "the refused archive is not the smoke inputs plus a zero "
                       "test_labels array (protocol.fixture_inputs)", recomputed=sorted(want))]


def check_environment_fields(f: ArchiveFiles) -> list[CheckResult]:
    """environment.json.gz: each execution's host Python and schema; dropped inputs' sizes rebuilt."""
    rel = "environment.json.gz"
    env = json_record(f, rel)
    if env is None:
        return []
    out = [check_equal("consistency.environment.schema_version", rel, env.get("schema_version"), 1)]
    for i, ex in enumerate(get_list(env, "executions", rel)):
        w = f"{rel}: executions.{i}"
        sw = get_dict(ex, "software", w)
        if get_str(ex, "engine", w) == "native":
            out.append(check_equal("consistency.environment.host_python", f"{rel} executions.{i}",
                                   get_str(ex, "host_python", w), get_str(sw, "python", w),
                                   what="a native run's host Python is the jobs' Python"))
    from protocol.fixture_inputs import INPUT_KEYS, npz_bytes  # noqa: PLC0415

    for i, d in enumerate(env.get("dropped_files") or []):
        w = f"{rel}: dropped_files.{i}"
        path = get_str(d, "path", w)
        if path.startswith("validate/"):
            from protocol.fixture_inputs import smoke_inputs  # noqa: PLC0415

            blob = npz_bytes({k: v for k, v in smoke_inputs().items() if k in INPUT_KEYS})
        else:
            inputs = data.load_draw(0).learner_inputs()
            blob = npz_bytes({k: inputs[k] for k in INPUT_KEYS})
        out.append(check_equal("consistency.dropped_input.size", path, get_int(d, "size_bytes", w), len(blob),
                               what="size of the dropped input .npz rebuilt from the raw files"))
    return out


def check_run_fields(f: ArchiveFiles) -> list[CheckResult]:
    """Family entry: each part on its own (a malformed record fails alone)."""
    out: list[CheckResult] = []
    for name, part in (("metadata", check_metadata), ("inventory", check_inventories), ("hardware", check_hardware),
                       ("peaks", check_peaks), ("fixture", check_fixture_fields), ("qualify", check_qualify_fields),
                       ("compare", check_comparison_fields), ("energy", check_energy_fields),
                       ("profile", check_profile_fields), ("validate", check_validation_fields),
                       ("environment", check_environment_fields), ("smoke_record", check_smoke_record),
                       ("input_archives", check_input_archives), ("execution_hosts", check_execution_hosts)):
        out += guarded(f"run.fields.{name}.error", None, lambda part=part: part(f))
    return out
