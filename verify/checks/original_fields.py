"""The original archive's remaining fields: every leaf the other families do not recompute.

Family ``original.fields`` (after ``original.cache.*``):

* every learner metadata block (:mod:`verify.checks.fields`): results, the cache audit's
  fixture records and their energy blocks, the selection candidates, the API smoke;
* the named-storage inventory of every cache record against the baseline record's structure;
* each cache fixture record's job fields: the command line the plan implies, the console
  output recomputed from the record (``Completed <mode>/<scope>: ...`` and one ``Energy trial``
  line per trial), the record's protocol fields (mode, scope, sources, workspace, device, L2
  reference, prediction file) against the plan, the protocol and the other records;
* power plausibility of every energy record: each window's average power between half the
  record's own lowest telemetry reading and the board's power limit (an energy divided by
  1000 reads 0.06 W beside a telemetry reading of 60.9 W);
* ``cache-audit/summary.json``: every entry against its record (command, capabilities,
  return code, status, software, memory scope, energy copies and counts), the qualification
  counts recomputed from the records, the profile entries' memory, state and board fields
  against the fixture records of the workspace they name (swapping two profiles' workspace
  labels fails), the profile protocol flags from the profile command;
* ``cache-audit/cuda-validation.json`` (212 checks, maximum error within the tolerance it
  records, the cases, the smoke's counts and batch split) and the draw-0 validation block;
* ``cache-audit/submission.json``, ``submission.json``, ``verification.json``,
  ``protocol.json``, ``plan.json``, ``profile-plan.json`` fields not covered elsewhere.

What no file can confirm (Modal app listings, wall-clock stamps, host paths, descriptive
sentences, raw console output of the environment probe) is listed in
:data:`verify.coverage.ATTESTATIONS`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from verify.checks import accuracy, energy, fields, memory
from verify.checks.consistency import FROZEN_CONFIG, WORKSPACES
from verify.checks.original import DRAWS, SEED_BASE, STATE_KEYS
from verify.integrity import ArchiveFiles
from verify.original_layout import PROFILES
from verify.records import get, get_dict, get_float, get_int, get_list, get_str
from verify.result import CheckResult, check_equal, check_true, guarded, unavailable

SUMMARY = "cache-audit/summary.json"
CUDA_VALIDATION = "cache-audit/cuda-validation.json"
BASE_WORKSPACE = ":4096:8"
"""The base study ran without ``CUBLAS_WORKSPACE_CONFIG``: the library default, bit-identical to
the cache audit's ``:4096:8`` baseline (its summary records all state hashes bit-equal)."""
REPLAY_CHECKS = 212
"""Checks of the CUDA replay validation (spec 2.10 / 7.5): every gradient, update and state of both
depths; the base study's draw-0 record and the cache audit's validation both count 212."""
SMOKE_TRAIN, SMOKE_QUERY, SMOKE_BATCH = 19, 7, 8
POWER_FLOOR_FRACTION = 0.5
"""An energy window may read down to half the record's lowest telemetry power (idle dips)."""
POWER_LIMIT_MARGIN = 1.05
"""Window averages may exceed the board's power limit by 5 % (NVML averaging)."""


def _records(f: ArchiveFiles) -> dict[str, tuple[str, dict]]:
    names = [*WORKSPACES, *(f"qualify-{i:02d}" for i in DRAWS)]
    return {n: (f"cache-audit/{n}.json", f.json(f"cache-audit/{n}.json")) for n in names}


def _workspace(name: str) -> str:
    return WORKSPACES.get(name, ":16:8")


def split_batches(n: int, batch: int) -> list[int]:
    """Batch sizes of one epoch over n examples (last one partial): 19 by 8 -> [8, 8, 3]."""
    return [batch] * (n // batch) + ([n % batch] if n % batch else [])


def metadata_blocks(f: ArchiveFiles) -> list[fields.Block]:
    """Every learner metadata block of the original archive with its record's context."""
    blocks: list[fields.Block] = []
    for i in DRAWS:
        rel = f"results/draw-{i:02d}.json"
        r = f.json(rel)
        cfg = get_dict(r, "config", rel)
        group = ("draw", i, BASE_WORKSPACE)
        blocks.append(fields.Block(rel, "metadata", get_dict(r, "metadata", rel), cfg, (10_000, 10_000), 1, group,
                                   get_dict(r, "input_sha256", rel)))
        if "energy" in r:
            repeats = get_int(r, "energy.repeats_per_trial", rel)
            trials = len(get_list(r, "energy.trials", rel))
            for key, count in (("before_metadata", 2), ("after_metadata", 3 + trials * repeats)):
                blocks.append(fields.Block(rel, f"energy.{key}", get_dict(r, f"energy.{key}", rel), cfg, (10_000, 10_000),
                                           count, group, get_dict(r, "input_sha256", rel)))
    for name, (rel, rec) in _records(f).items():
        draw = int(name.split("-")[1]) if name.startswith("qualify-") else 0
        res = get_dict(rec, "result", rel)
        cfg = get_dict(res, "config", rel)
        group = ("draw", draw, _workspace(name))
        inputs = get_dict(rec, "input_sha256", rel)
        e = res.get("energy")
        runs = 1 if not e else 3 + len(get_list(e, "trials", rel)) * get_int(e, "repeats_per_trial", rel)
        blocks.append(fields.Block(rel, "result.metadata", get_dict(res, "metadata", rel), cfg, (10_000, 10_000), runs,
                                   group, inputs))
        if e:
            for key, count in (("before_metadata", 2), ("after_metadata", runs)):
                blocks.append(fields.Block(rel, f"result.energy.{key}", get_dict(e, key, rel), cfg, (10_000, 10_000),
                                           count, group, inputs))
    val = get_list(f.json("validation.json"), "records", "validation.json")
    for k, r in enumerate(val):
        w = f"validation.json: records.{k}"
        cfg = get_dict(r, "config", w)
        blocks.append(fields.Block("validation.json", f"records.{k}.result.metadata", get_dict(r, "result.metadata", w),
                                   cfg, (8000, 2000), 1, ("selection", k), get_dict(r, "result.input_sha256", w)))
    cv = f.json(CUDA_VALIDATION)
    smoke = get_dict(cv, "api_cli_smoke", CUDA_VALIDATION)
    blocks.append(fields.Block(CUDA_VALIDATION, "api_cli_smoke.metadata", get_dict(smoke, "metadata", CUDA_VALIDATION),
                               get_dict(smoke, "config", CUDA_VALIDATION), (SMOKE_TRAIN, SMOKE_QUERY), 1, ("smoke",)))
    return blocks


def check_metadata(f: ArchiveFiles) -> list[CheckResult]:
    """Every metadata block: own fields against the frozen draw-0 metadata, state hashes across blocks."""
    reference = get_dict(f.json("results/draw-00.json"), "metadata", "results/draw-00.json")
    blocks = metadata_blocks(f)
    out: list[CheckResult] = []
    for b in blocks:
        out += guarded("metadata.error", b.rel, lambda b=b: fields.check_block(b, reference))
    out += fields.check_block_groups(blocks, None)
    cv_md = blocks[-1].md
    from protocol import data  # noqa: PLC0415
    from protocol.fixture_inputs import smoke_inputs  # noqa: PLC0415

    smoke = smoke_inputs()
    out.append(check_equal("original.cuda_validation.smoke_inputs", CUDA_VALIDATION,
                           get_dict(cv_md, "input_hashes", CUDA_VALIDATION),
                           {k: data.array_sha256(smoke[k]) for k in ("train_images", "train_labels", "test_images")},
                           what="smoke input hashes vs the synthetic smoke data rebuilt (protocol.fixture_inputs)"))
    energy_sw = [("results/draw-00.json", get_dict(f.json("results/draw-00.json"), "energy.software", "draw-00"))]
    energy_sw += [(rel, get_dict(rec, "result.energy.software", rel)) for n, (rel, rec) in _records(f).items()
                  if n in WORKSPACES]
    out.append(fields_same("original.energy.software", energy_sw, "energy software (python, torch, numpy, CUDA, NVML)"))
    runtime = get_dict(cv_md, "cache_runtime", CUDA_VALIDATION)
    nv_runtime = get_dict(f.json(CUDA_VALIDATION), "numerical_validation.cache_runtime", CUDA_VALIDATION)
    out.append(check_equal("original.cuda_validation.cache_runtime", CUDA_VALIDATION, runtime, nv_runtime,
                           what="the smoke's cache_runtime vs the numerical validation's"))
    return out


def check_inventories(f: ArchiveFiles) -> list[CheckResult]:
    """Every cache record's inventory structure equals the baseline record's (one model, one set of buffers)."""
    recs = _records(f)
    ref = get_dict(recs["baseline"][1], "result.buffer_inventory", "cache-audit/baseline.json")
    out = []
    for name, (rel, rec) in recs.items():
        if name == "baseline":
            continue
        out.append(fields.check_inventory_structure(get_dict(rec, "result.buffer_inventory", rel), ref,
                                                    subject=rel, where=rel))
    devices = [get_str(s, "device", rel) for _, (rel, rec) in recs.items()
               for s in get_list(rec, "result.buffer_inventory.unique_storages", rel)]
    if not devices:  # compared nothing: never a PASS
        out.append(unavailable("memory.inventory.device", "cache-audit", "no cache-audit record lists a named storage"))
        return out
    out.append(check_true("memory.inventory.device", "cache-audit", all(d == "cuda:0" for d in devices),
                          "a named storage is not on cuda:0 (the fixture's device)", recomputed=len(devices)))
    return out


def expected_command(mode: str, scope: str, energy_on: bool) -> list[str]:
    """The fixture command line the cache audit's runner wrote for a measure job (spec 4.1)."""
    cmd = ["/usr/local/bin/python", "/workspace/cache/fixture.py", "--input", "/tmp/cache-run/input.npz", "--config",
           "/tmp/cache-run/config.json", "--output", "/tmp/cache-run/result.json", "--mode", mode, "--scope", scope,
           "--repeats", "16"]
    return cmd + (["--energy"] if energy_on else [])


def expected_stdout(rec: Mapping[str, Any], where: str) -> str:
    """The fixture's console output recomputed from its record: one line per energy trial, then completion."""
    res = get_dict(rec, "result", where)
    lines = []
    e = res.get("energy")
    if e:
        for i, t in enumerate(get_list(e, "trials", where)):
            lines.append(f"Energy trial {i} {get(t, 'idle_adjusted_mj_per_task', float, where)!r} mJ/task")
    lines.append(f"Completed {get_str(res, 'mode', where)}/{get_str(res, 'requested_scope', where)}: "
                 "/tmp/cache-run/result.json")
    return "\n".join(lines) + "\n"


def check_cache_jobs(f: ArchiveFiles) -> list[CheckResult]:
    """The job fields of each cache fixture record against the plan, the protocol and the record itself."""
    plan = f.json("cache-audit/plan.json")
    protocol = f.json("protocol.json")
    recs = _records(f)
    out: list[CheckResult] = []
    out.append(check_equal("original.cache.plan.workspaces", "cache-audit/plan.json",
                           get_list(plan, "workspaces", "plan"), [get_str(recs[n][1], "workspace", n) for n in WORKSPACES],
                           what="planned workspaces vs the three comparison records"))
    out.append(check_equal("original.cache.plan.preferred_upgrade", "cache-audit/plan.json",
                           get_str(plan, "preferred_upgrade", "plan"),
                           get_str(f.json("cache-audit/submission.json"), "cublas_workspace_config", "submission"),
                           what="preferred workspace vs the cache submission's"))
    versions, softwares, gpus, l2 = [], [], [], []
    keys_checked = get_list(f.json("results/draw-00.json"), "energy.state_hash_keys_checked", "results/draw-00.json")
    out.append(check_equal("original.energy.state_hash_keys_checked", "results/draw-00.json", sorted(keys_checked),
                           sorted(STATE_KEYS), what="the draw-0 replay compared all eight state hashes"))
    for name, (rel, rec) in recs.items():
        def one(name: str = name, rel: str = rel, rec: dict = rec) -> list[CheckResult]:
            res = get_dict(rec, "result", rel)
            e = res.get("energy")
            action, scope = get_str(rec, "action", rel), get_str(rec, "scope", rel)
            versions.append((rel, get(rec, "capabilities", dict, rel)))
            softwares.append((rel, get_dict(res, "software", rel)))
            gpus.append((rel, get_str(res, "gpu", rel)))
            l2.append((rel, get_dict(res, "cache_reference", rel)))
            cref = get_dict(res, "cache_reference", rel)
            src = get_dict(res, "source_sha256", rel)
            v = [check_equal("original.cache.job", rel,
                             {"action": action, "scope": scope, "mode": get_str(res, "mode", rel),
                              "requested_scope": get_str(res, "requested_scope", rel),
                              "schema_version": get_int(res, "schema_version", rel),
                              "environment_was_set_externally": get(res, "environment_was_set_externally", bool, rel),
                              "cuda_device_index": get_int(res, "cuda_device_index", rel),
                              "profile": res.get("profile"), "has_energy": bool(e),
                              "energy_is_null": res.get("energy") is None, "stderr": get_str(rec, "stderr", rel),
                              "same_process_reference_hashes_matched":
                                  get_list(res, "same_process_reference_hashes_matched", rel)},
                             {"action": "measure", "scope": "task", "mode": action, "requested_scope": scope,
                              "schema_version": 1, "environment_was_set_externally": True, "cuda_device_index": 0,
                              "profile": None, "has_energy": name in WORKSPACES, "energy_is_null": name not in WORKSPACES,
                              "stderr": "",
                              "same_process_reference_hashes_matched": list(STATE_KEYS)},
                             what="job fields (measure/task, workspace set before start, no profile, energy only for "
                                  "the comparisons, empty stderr, all eight hashes matched in-process)"),
                 check_equal("original.cache.command", rel, get_list(rec, "command", rel),
                             expected_command(action, scope, bool(e)), what="fixture command line"),
                 check_equal("original.cache.stdout", rel, get_str(rec, "stdout", rel), expected_stdout(rec, rel),
                             what="console output recomputed from the record"),
                 check_equal("original.cache.sources", rel,
                             {k: src.get(k) for k in ("fixture.py", "learner.py", "energy.py")},
                             {"fixture.py": get_str(plan, "fixture_sha256", "plan"),
                              "learner.py": get(protocol, ("source_sha256", "learner.py"), str, "protocol.json"),
                              "energy.py": get(protocol, ("source_sha256", "energy.py"), str, "protocol.json")},
                             what="source sha256 vs the plan's fixture and the protocol's learner and energy sources"),
                 check_equal("original.cache.cache_reference", rel, [get_int(cref, "bytes", rel), get_str(cref, "unit", rel)],
                             [memory_l2(f), f"{memory_l2(f) >> 20} MiB"], what="L2 reference vs ncu's L2 size"),
                 check_equal("original.cache.predictions_file", rel,
                             [get_str(res, "predictions_file", rel), get_str(res, "predictions_file_sha256", rel)],
                             ["result.predictions.npy", _summary_entry(f, name)["prediction_sha256"]],
                             what="prediction file name and sha vs the summary's"),
                 check_equal("original.cache.energy_software", rel,
                             ({k: v for k, v in get_dict(e, "software", rel).items() if k != "nvidia_ml_py"} if e else None),
                             (get_dict(res, "software", rel) if e else None),
                             what="energy software vs the record's software"),
                 check_equal("original.cache.state_hash_keys_checked", rel,
                             get_list(e, "state_hash_keys_checked", rel) if e else None,
                             keys_checked if e else None,
                             what="state hash keys the energy replay compared vs the base study's draw-0 replay")]
            return v
        out += guarded("original.cache.job.error", rel, one)
    out.append(fields_same("original.cache.capabilities", versions, "ncu capabilities"))
    out.append(fields_same("original.cache.software", softwares, "software"))
    out.append(fields_same("original.cache.gpu", gpus, "GPU name of the cache records"))
    out.append(fields_same("original.cache.input_archive", [
        (rel, get_str(rec, "result.input_archive_sha256", rel)) for n, (rel, rec) in recs.items()
        if n in WORKSPACES or n == "qualify-00"], "input archive of draw 0"))
    out += _memory_groups(f)
    return out


def memory_l2(f: ArchiveFiles) -> int:
    """The A100's L2 size as ncu reported it in every profile (bytes)."""
    sizes = {int(get_str(get_dict(get_dict(f.json(SUMMARY), ("profiles", p), SUMMARY), "profile_device_attributes",
                                  SUMMARY), "device__attribute_l2_cache_size", SUMMARY)) for p in PROFILES}
    return sizes.pop() if len(sizes) == 1 else -1


def _profile_gpus(f: ArchiveFiles) -> list[str]:
    sm = f.json(SUMMARY)
    return [get_str(get_dict(sm, ("profiles", p), SUMMARY), "profile_device_attributes.device__attribute_display_name",
                    SUMMARY) for p in PROFILES]


def fields_same(check_id: str, items: list[tuple[str, Any]], what: str) -> CheckResult:
    """All values equal (one verdict); UNAVAILABLE for fewer than two values (nothing compared)."""
    res = fields.same_within_groups(check_id, [items], what=what)
    if res:
        return res[0]
    return unavailable(check_id, "cache-audit", f"{what}: {len(items)} record(s) state it, fewer than two to compare")


def _summary_entry(f: ArchiveFiles, name: str) -> dict:
    sm = f.json(SUMMARY)
    if name.startswith("qualify-"):
        return get_dict(get_list(sm, "qualification.draws", SUMMARY)[int(name[-2:])], "", SUMMARY)
    return get_dict(sm, ("comparisons", name), SUMMARY)


def _memory_groups(f: ArchiveFiles) -> list[CheckResult]:
    """Allocator figures of one workspace are one set across every record of it (base study included)."""
    keys = ("allocated_before_prepare_bytes", "prepare_and_invoke_peak_allocated_bytes", "allocated_after_invoke_bytes",
            "reserved_after_invoke_bytes")
    groups: dict[str, list[tuple[str, Any]]] = {}
    for name, (rel, rec) in _records(f).items():
        mem = get_dict(rec, "result.memory", rel)
        groups.setdefault(_workspace(name), []).append((rel, {k: k in mem and mem[k] for k in mem if k != "scope"}))
    rel, rec = "cache-audit/baseline.json", _records(f)["baseline"][1]
    base = [(rel, _relative(get_dict(rec, "result.memory", rel), keys, rel))]
    for i in DRAWS:  # reused workers start above 0 (spec 9): every figure taken above the entry baseline
        rel = f"results/draw-{i:02d}.json"
        base.append((rel, _relative(get_dict(f.json(rel), "memory", rel), keys, rel)))
    groups["base study"] = base
    for k, r in enumerate(get_list(f.json("validation.json"), "records", "validation.json")):
        w = f"validation.json: records.{k}"
        key = (get_int(r, "config.depth", w), get_int(r, "config.epochs", w))
        groups.setdefault(("selection", key), []).append((f"validation.json candidate-{k:02d}",
                                                          _relative(get_dict(r, "result.memory", w), keys, w)))
    return fields.same_within_groups("memory.same_workspace", groups.values(),
                                     what="allocator figures of one workspace config (and, for the selection, one "
                                          "depth and epoch count) on one board and software, above the entry baseline")


def _relative(mem: Mapping[str, Any], keys: tuple[str, ...], where: str) -> dict:
    entry = get_int(mem, "allocated_before_prepare_bytes", where)
    return {k: get_int(mem, k, where) - entry for k in keys}


def check_power(f: ArchiveFiles) -> list[CheckResult]:
    """Every energy window's average power lies between half the lowest telemetry reading and the power limit."""
    out = []
    items = [("results/draw-00.json", get_dict(f.json("results/draw-00.json"), "energy", "results/draw-00.json"))]
    items += [(rel, get_dict(rec, "result.energy", rel)) for n, (rel, rec) in _records(f).items() if n in WORKSPACES]
    for rel, e in items:
        out.append(power_plausibility(e, subject=rel, where=rel))
    return out


def power_plausibility(e: Mapping[str, Any], *, subject: str, where: str) -> CheckResult:
    """One energy object: windows' and paired-idle powers within [floor, limit] from its own telemetry.

    The floor is :data:`POWER_FLOOR_FRACTION` of the lowest telemetry power of the record (NVML's
    own power reading, independent of the energy counter); the ceiling the board's power limit
    (``hardware.power_limit_w``) times :data:`POWER_LIMIT_MARGIN`.
    """
    trials = get_list(e, "trials", where)
    telemetry = [get_float(t, f"{k}.power_w", where) for t in trials for k in ("telemetry_before", "telemetry_after")]
    limit = get_float(e, "hardware.power_limit_w", where)
    floor, ceiling = POWER_FLOOR_FRACTION * min(telemetry), POWER_LIMIT_MARGIN * limit
    powers = [get_float(t, f"{w}.average_power_w", where) for t in trials for w in ("idle_before", "active", "idle_after")]
    powers += [get_float(t, "paired_idle_w", where) for t in trials]
    bad = [p for p in powers + telemetry if not floor <= p <= ceiling]
    return check_true("energy.power_plausible", subject, not bad and limit > 0,
                      f"window powers {bad[:3]} W outside [{floor:.3f}, {ceiling:.1f}] W (half the lowest telemetry "
                      f"reading, the {limit} W power limit): the energies do not describe this board",
                      recomputed=[floor, ceiling])


def check_summary_entries(f: ArchiveFiles) -> list[CheckResult]:
    """``cache-audit/summary.json``: each entry's copied fields, the qualification counts, the top flags."""
    sm = f.json(SUMMARY)
    recs = _records(f)
    out: list[CheckResult] = []
    state_keys = list(STATE_KEYS)
    equal_draws = 0
    for name, (rel, rec) in recs.items():
        entry = _summary_entry(f, name)
        res = get_dict(rec, "result", rel)
        s = f"summary {name}"
        draw = int(name.split("-")[1]) if name.startswith("qualify-") else 0
        original_md = get_dict(f.json(f"results/draw-{draw:02d}.json"), "metadata", "results")
        md = get_dict(res, "metadata", rel)
        same_preds = md.get("predictions_sha256") == original_md.get("predictions_sha256")
        differing = [k for k in STATE_KEYS if md.get(k) != original_md.get(k)]
        equal_draws += name.startswith("qualify-") and same_preds
        e = res.get("energy")
        want = {"result_path": rel.split("/")[-1], "result_uncompressed_sha256": entry.get("result_sha256"),
                "result_uncompressed_bytes": len(f.read(rel)), "result_compressed_sha256": None,
                "result_compressed_bytes": None, "result_gzip_contents_verified": False,
                "command": get_list(rec, "command", rel), "capabilities": get_dict(rec, "capabilities", rel),
                "returncode": get_int(rec, "returncode", rel), "workspace": get_str(rec, "workspace", rel),
                "scope": get_str(rec, "scope", rel), "status": "passed" if get_int(rec, "returncode", rel) == 0 else "failed",
                "draw": draw, "all_state_hashes_bit_equal": not differing, "state_fields_checked": state_keys,
                "prediction_path": f"{name}-result.predictions.npy", "software": get_dict(res, "software", rel)}
        got = {k: entry.get(k) for k in want}
        out.append(check_equal("original.cache.summary.entry", s, got, want,
                               what="summary entry vs its record (paths, command, return code, status, flags, software)"))
        out.append(check_equal("original.cache.summary.memory_text", s,
                               [get(entry, "memory.scope", str, SUMMARY), get(entry, "memory.cache_residency_established",
                                                                               bool, SUMMARY)],
                               [get_str(res, "memory.scope", rel), get(res, "buffer_inventory.cache_residency_established",
                                                                      bool, rel)], what="memory scope and residency flag"))
        if e:
            trials = get_list(e, "trials", rel)
            ecopy = get_dict(entry, "energy", SUMMARY)
            out.append(check_equal("original.cache.summary.energy_copy", s,
                                   {"passed": ecopy.get("passed"), "trials": ecopy.get("trials"),
                                    "invocations_per_trial": ecopy.get("invocations_per_trial"),
                                    "raw_counter_arithmetic_recomputed": ecopy.get("raw_counter_arithmetic_recomputed"),
                                    "values": {k: get(ecopy, f"summary.{k}.values", list, SUMMARY)
                                               for k in energy.PER_TASK_KEYS}},
                                   {"passed": True, "trials": len(trials), "invocations_per_trial":
                                    get_int(e, "repeats_per_trial", rel), "raw_counter_arithmetic_recomputed": True,
                                    "values": {k: [get(t, k, float, rel) for t in trials] for k in energy.PER_TASK_KEYS}},
                                   what="energy copy vs the record's trials"))
    q = get_dict(sm, "qualification", SUMMARY)
    draws_equal_all = sum(1 for n in recs if n.startswith("qualify-") and not _differs(f, n))
    out.append(check_equal("original.cache.summary.qualification", SUMMARY,
                           {k: q.get(k) for k in ("complete", "draws_bit_equal", "predictions_bit_equal",
                                                  "full_state_bit_equality_established", "inherited_accuracy_valid")},
                           {"complete": len(get_list(q, "draws", SUMMARY)) == len(DRAWS) and all(
                               get_int(recs[f"qualify-{i:02d}"][1], "returncode", "q") == 0 for i in DRAWS),
                            "draws_bit_equal": equal_draws,
                            "predictions_bit_equal": sum(
                                get_int(recs[f"qualify-{i:02d}"][1], "result.metadata.test_count", "q") for i in DRAWS
                                if not _pred_differs(f, f"qualify-{i:02d}")),
                            "full_state_bit_equality_established": draws_equal_all == len(DRAWS),
                            "inherited_accuracy_valid": equal_draws == len(DRAWS)},
                           what="qualification counts recomputed from the 11 records and the original draws"))
    corrects = [get_int(r, "correct", "accuracy.json") for r in get_list(f.json("accuracy.json"), "rows", "accuracy.json")]
    out += accuracy.check_aggregate(get_dict(q, "inherited_accuracy", SUMMARY), corrects,
                                    subject=f"{SUMMARY} inherited_accuracy", where=SUMMARY)
    jobs = [get_int(rec, "returncode", rel) == 0 for rel, rec in recs.values()]
    entries = [_summary_entry(f, n) for n in recs] + [get_dict(sm, ("profiles", p), SUMMARY) for p in PROFILES]
    protocol_learner = get(f.json("protocol.json"), ("source_sha256", "learner.py"), str, "protocol.json")
    out.append(check_equal("original.cache.summary.status", SUMMARY,
                           {k: sm.get(k) for k in ("schema_version", "status", "all_jobs_passed", "pending_jobs",
                                                   "failed_or_unmeasured_jobs", "frozen_base_sources_unchanged")},
                           {"schema_version": 1, "status": "complete" if all(jobs) else "incomplete",
                            "all_jobs_passed": all(jobs) and all(e.get("status") == "passed" for e in entries),
                            "pending_jobs": 0, "failed_or_unmeasured_jobs": sum(1 for e in entries if e.get("status") != "passed"),
                            "frozen_base_sources_unchanged": all(
                                get(rec, ("result", "source_sha256", "learner.py"), str, rel) == protocol_learner
                                for rel, rec in recs.values())},
                           what="summary status recomputed from the jobs"))
    return out


def _differs(f: ArchiveFiles, name: str) -> bool:
    rel, rec = f"cache-audit/{name}.json", f.json(f"cache-audit/{name}.json")
    draw = int(name[-2:])
    md = get_dict(rec, "result.metadata", rel)
    orig = get_dict(f.json(f"results/draw-{draw:02d}.json"), "metadata", "results")
    return any(md.get(k) != orig.get(k) for k in STATE_KEYS)


def _pred_differs(f: ArchiveFiles, name: str) -> bool:
    rel, rec = f"cache-audit/{name}.json", f.json(f"cache-audit/{name}.json")
    orig = get_dict(f.json(f"results/draw-{int(name[-2:]):02d}.json"), "metadata", "results")
    return get(rec, "result.metadata.predictions_sha256", str, rel) != orig.get("predictions_sha256")


PROFILE_COMMAND_PREFIX = ["/opt/nvidia/nsight-compute/2025.1.1/ncu", "--replay-mode", "app-range", "--cache-control",
                          "none", "--clock-control", "none", "--metrics"]


def check_profile_entries(f: ArchiveFiles) -> list[CheckResult]:
    """The four profile entries of the summary: command, protocol flags, memory/state/board vs their workspace."""
    sm = f.json(SUMMARY)
    pplan = f.json("cache-audit/profile-plan.json")
    recs = _records(f)
    by_ws: dict[str, list[tuple[str, dict]]] = {}
    for name, (rel, rec) in recs.items():
        by_ws.setdefault(_workspace(name), []).append((rel, rec))
    out: list[CheckResult] = []
    l2 = memory_l2(f)
    for p in PROFILES:
        entry = get_dict(sm, ("profiles", p), SUMMARY)
        s = f"summary {p}"
        ws = get_str(entry, "workspace", SUMMARY)
        scope = get_str(entry, "scope", SUMMARY)
        command = get_list(entry, "command", SUMMARY)
        repeats = int(command[-1]) if command and str(command[-1]).isdigit() else -1
        cfg_epochs = FROZEN_CONFIG["epochs"]
        want_cmd = PROFILE_COMMAND_PREFIX + [get_str(pplan, "metrics", "profile-plan"), "--csv", "--page", "raw",
                                             "--force-overwrite", "--export", "/tmp/cache-run/profile"] + \
            expected_command("profile", scope, False)
        out.append(check_equal("original.cache.profile.command", s, command, want_cmd,
                               what="ncu command (the profile plan's metrics and controls) + the fixture's"))
        task = scope == "task"
        out.append(check_equal("original.cache.profile.protocol", s, get_dict(entry, "profile", SUMMARY),
                               {"scope": scope, "warmup_complete_tasks": 2, "requested_repeats": repeats,
                                "fresh_tasks_in_range": repeats if task else 0,
                                "fresh_training_sequences_in_range": repeats if task else 1,
                                "epochs_per_sequence": cfg_epochs, "training_scope_ignores_repeats": not task,
                                "reset_inside_range": task, "prediction_inside_range": task,
                                "epoch_order_copies_inside_range": True, "output_serialization_inside_range": False,
                                "cpu_validation_inside_range": False, "synchronized_before_stop": True},
                               what="profile range protocol recomputed from the command's scope and repeats"))
        group = by_ws.get(ws)
        if not group:
            out.append(check_true("original.cache.profile.workspace", s, False, f"no fixture record ran workspace {ws!r}"))
            continue
        rel0, rec0 = group[0]
        derived = memory.derived_memory(get_dict(rec0, "result", rel0), rel0)
        mem = get_dict(entry, "memory", SUMMARY)
        out.append(check_equal("original.cache.profile.memory", s, {k: mem.get(k) for k in derived},
                               derived, what=f"profile memory vs the {ws} fixture records (the workspace it names)"))
        out.append(check_equal("original.cache.profile.memory_text", s,
                               [mem.get("scope"), mem.get("cache_residency_established")],
                               [get_str(rec0, "result.memory.scope", rel0),
                                get(rec0, "result.buffer_inventory.cache_residency_established", bool, rel0)],
                               what="memory scope and residency flag"))
        orig = get_dict(f.json("results/draw-00.json"), "metadata", "results")
        md0 = get_dict(rec0, "result.metadata", rel0)
        differing = [k for k in STATE_KEYS if md0.get(k) != orig.get(k)]
        attrs = get_dict(entry, "profile_device_attributes", SUMMARY)
        caps = get_dict(entry, "capabilities", SUMMARY)
        want = {"returncode": 0, "status": "passed", "draw": 0, "software": get_dict(rec0, "result.software", rel0),
                "predictions_bit_equal": md0.get("predictions_sha256") == orig.get("predictions_sha256"),
                "all_state_hashes_bit_equal": not differing, "state_fields_differing_from_original": differing,
                "state_fields_checked": list(STATE_KEYS),
                "prediction_path": f"{p}-result.predictions.npy",
                "prediction_sha256": get_str(rec0, "result.predictions_file_sha256", rel0),
                "result_path": f"{p}.json.gz", "ncu_report_path": f"{p}-profile.ncu-rep.gz",
                "result_compressed_sha256": entry.get("result_sha256"),
                "ncu_report_compressed_sha256": entry.get("ncu_report_sha256"),
                "result_gzip_contents_verified": True, "ncu_report_gzip_contents_verified": True,
                "dram_traffic_measured": True, "pass_count_retained": True,
                "counter_unit": ("per complete fresh reset/train/predict task" if task else
                                 "per original two-epoch training sequence, reset and prediction outside range")}
        out.append(check_equal("original.cache.profile.entry", s, {k: entry.get(k) for k in want}, want,
                               what=f"profile entry vs the {ws} fixture records, the command and its own file names"))
        out.append(check_equal("original.cache.profile.capabilities", s,
                               [caps.get("ncu_version"), get(caps, "metric_query.returncode", int, SUMMARY),
                                get(caps, "metric_query.raw_query_retained_in", str, SUMMARY)],
                               [get(rec0, "capabilities.ncu_version", str, rel0), 0, f"{p}.json.gz"],
                               what="ncu version, metric query return code and where it was kept"))
        out.append(check_equal("original.cache.profile.warmup_passes", s,
                               attrs.get("profiler__replayer_passes_type_warmup"), "0", what="no warm-up replay pass"))
        out.append(fields.check_board_attributes(attrs, subject=s, where=SUMMARY))
        out.append(check_equal("original.cache.profile.range_ids", s,
                               sorted({get_str(r, "range_id", SUMMARY) for r in get_dict(entry, "metric_rows", SUMMARY).values()}),
                               ["0"], what="one profiled range (range id 0) for every metric"))
        out.append(check_equal("original.cache.profile.l2", s, l2, fields_int(attrs, "device__attribute_l2_cache_size"),
                               what="L2 size of every profile"))
    return out


def fields_int(attrs: Mapping[str, Any], key: str) -> int:
    """An ncu attribute cell as an integer (thousands separators removed)."""
    return int(str(attrs.get(key, "-1")).replace(",", ""))


def check_replay_validation(block: Mapping[str, Any], *, subject: str, where: str, gpu: str) -> list[CheckResult]:
    """A CUDA replay validation block (spec 2.10 / 7.5): 212 checks, the maximum error within the recorded
    tolerance (and the protocol's 2e-5 / 3e-3), both depths with the smoke's batch split, the flags."""
    tol = get_dict(block, "tolerance", where)
    err = get_float(block, "maximum_abs_error", where)
    cases = get_list(block, "cases", where)
    want_cases = []
    for c, depth in zip(cases, (1, 2), strict=False):
        cfg = get_dict(c, "config", where)
        want_cases.append({"depth": depth, "config": {**FROZEN_CONFIG, "depth": depth, "seed": 781, "batch_size": SMOKE_BATCH},
                           "passed": True, "epochs": get_int(cfg, "epochs", where),
                           "batch_sizes": split_batches(SMOKE_TRAIN, SMOKE_BATCH), "complete_replay_byte_repeatable": True,
                           "predictions_match_independent_eager": True, "saved_core_activation_storages": 1,
                           "saved_core_activation_bytes": 984, "saved_parameter_references": 2 * depth})
    return [
        check_equal("original.cuda_validation.check_count", subject, get_int(block, "checks", where), REPLAY_CHECKS,
                    what="replay validation checks"),
        check_equal("original.cuda_validation.tolerance", subject, tol, {"atol": 2e-05, "rtol": 0.003},
                    what="tolerance (spec 7.1)"),
        check_true("original.cuda_validation.maximum_abs_error", subject,
                   math.isfinite(err) and 0 <= err <= get_float(tol, "atol", where),
                   f"maximum absolute error {err!r} exceeds the recorded atol {tol.get('atol')!r}", recorded=err),
        check_equal("original.cuda_validation.cases", subject, [{k: c.get(k) for k in w} for c, w in
                                                                zip(cases, want_cases, strict=False)] + cases[2:],
                    want_cases if len(cases) >= 2 else want_cases + ["<case missing>"],
                    what="cases: depths 1 and 2, seed 781, batch 8 split [8, 8, 3], flags, storages"),
        check_equal("original.cuda_validation.device", subject, [get(block, "passed", bool, where),
                                                                 get_str(block, "device", where)], [True, gpu],
                    what="passed, on the record's board"),
    ]


def check_cuda_validation(f: ArchiveFiles) -> list[CheckResult]:
    """``cache-audit/cuda-validation.json`` and the base study's draw-0 ``cuda_validation``."""
    w = CUDA_VALIDATION
    cv = f.json(w)
    protocol = f.json("protocol.json")
    gpu = get_str(_records(f)["small-workspace"][1], "result.gpu", "small-workspace")
    nv = get_dict(cv, "numerical_validation", w)
    out = check_replay_validation(nv, subject=f"{w} numerical_validation", where=w, gpu=gpu)
    out += check_replay_validation(get_dict(f.json("results/draw-00.json"), "cuda_validation", "results/draw-00.json"),
                                   subject="results/draw-00.json cuda_validation", where="results/draw-00.json", gpu=gpu)
    smoke = get_dict(cv, "api_cli_smoke", w)
    md = get_dict(smoke, "metadata", w)
    runtime = get_dict(nv, "cache_runtime", w)
    learner = get(protocol, ("source_sha256", "learner.py"), str, "protocol.json")
    src = get_dict(cv, "source_sha256", w)
    flags = ("predictions_equal", "final_parameters_equal", "final_velocity_equal", "scores_equal",
             "repeated_api_replay_byte_equal", "query_label_archive_rejected", "late_cuda_initialization_rejected")
    out += [
        check_equal("original.cuda_validation.smoke", w,
                    {"train_examples": get_int(smoke, "train_examples", w), "query_examples": get_int(smoke, "query_examples", w),
                     "batch_sizes": get_list(smoke, "batch_sizes", w), "config": get_dict(smoke, "config", w),
                     "passed": get(smoke, "passed", bool, w)},
                    {"train_examples": get_int(md, "train_count", w), "query_examples": get_int(md, "test_count", w),
                     "batch_sizes": split_batches(get_int(md, "train_count", w), get_int(md, "config.batch_size", w)),
                     "config": {**FROZEN_CONFIG, "batch_size": SMOKE_BATCH},
                     "passed": all(get(smoke, k, bool, w) for k in flags)},
                    what="smoke counts, batch split of the 19 examples, config, passed = all its flags"),
        check_equal("original.cuda_validation.runtime", w,
                    {"workspace": get_str(cv, "workspace", w), "cublas": get_str(runtime, "cublas_workspace_config", w),
                     "configured_before_cuda_initialization": get(runtime, "configured_before_cuda_initialization", bool, w),
                     "frozen_learner_sha256": get_str(runtime, "frozen_learner_sha256", w),
                     "wrapper_sha256": get_str(runtime, "wrapper_sha256", w),
                     "source_learner": src.get("learner.py"), "gpu": get_str(cv, "gpu", w),
                     "torch": get_str(cv, "torch_version", w)},
                    {"workspace": ":16:8", "cublas": ":16:8", "configured_before_cuda_initialization": True,
                     "frozen_learner_sha256": learner, "wrapper_sha256": src.get("cache_runtime.py"),
                     "source_learner": learner, "gpu": gpu,
                     "torch": get_str(_records(f)["small-workspace"][1], "result.software.torch", "small-workspace")},
                    what="workspace, runtime wrapper and learner sources, board and torch vs the protocol and records"),
        check_equal("original.cuda_validation.passed", w, get(cv, "passed", bool, w),
                    get(nv, "passed", bool, w) and get(smoke, "passed", bool, w), what="passed = numerical and smoke"),
    ]
    out.append(check_equal("original.cuda_validation.draw0_device", "results/draw-00.json",
                           get_str(f.json("results/draw-00.json"), "energy.hardware.gpu", "results/draw-00.json"), gpu,
                           what="the base study's board model"))
    return out


def check_submissions(f: ArchiveFiles) -> list[CheckResult]:
    """submission.json, verification.json, cache-audit/submission.json and protocol.json: the remaining fields."""
    sub, ws = f.json("submission.json"), "submission.json"
    protocol = f.json("protocol.json")
    rows = get_list(f.json("accuracy.json"), "rows", "accuracy.json")
    corrects = [get_int(r, "correct", "accuracy.json") for r in rows]
    draw0 = f.json("results/draw-00.json")
    e0 = get_dict(draw0, "energy", "results/draw-00.json")
    a100 = get_dict(sub, "a100", ws)
    out = [
        check_equal("original.submission.fields", ws,
                    {k: sub.get(k) for k in ("schema_version", "tier", "target_error_percent", "minimum_accuracy_percent",
                                             "learner_seed", "status", "wandb_runs")},
                    {"schema_version": 1, "tier": "MNIST-medium",
                     "target_error_percent": get_int(protocol, "error_target_percent", "protocol.json"),
                     "minimum_accuracy_percent": 100 - get_int(protocol, "error_target_percent", "protocol.json"),
                     "learner_seed": get_int(protocol, "learner_seed", "protocol.json"),
                     "status": "qualified" if sum(corrects) >= accuracy.REQUIRED_CORRECT else "not qualified",
                     "wandb_runs": []},
                    what="tier, target, learner seed and status vs the protocol and the accuracy"),
        check_equal("original.submission.a100", ws,
                    {"draw_measured": a100.get("draw_measured"), "dataset_seed_measured": a100.get("dataset_seed_measured"),
                     "software": a100.get("software"), "scope": a100.get("scope"),
                     "cold_start_or_end_to_end_application_energy_measured":
                         a100.get("cold_start_or_end_to_end_application_energy_measured"),
                     "values": {k: get(a100, f"energy_summaries.{k}.values", list, ws) for k in energy.PER_TASK_KEYS}},
                    {"draw_measured": 0, "dataset_seed_measured": SEED_BASE, "software": get_dict(e0, "software", "draw-00"),
                     "scope": a100.get("scope") if isinstance(a100.get("scope"), str) else "<text>",
                     "cold_start_or_end_to_end_application_energy_measured": False,
                     "values": {k: [get(t, k, float, "draw-00") for t in get_list(e0, "trials", "draw-00")]
                                for k in energy.PER_TASK_KEYS}},
                    what="A100 block vs the draw-0 energy record"),
        check_equal("original.submission.accuracy_draws", ws, len(get_list(sub, "accuracy.draws", ws)), len(DRAWS),
                    what="one accuracy row per draw"),
        check_equal("original.submission.memory_fields", ws,
                    [get(sub, "memory.core_forward_retained_states", int, ws), get(sub, "memory.grid_peak_scratch_bytes",
                                                                                  None, ws)],
                    [get_int(draw0, "metadata.retained_core_states", "draw-00"), get(sub, "grid.peak_scratch_bytes", None, ws)],
                    what="retained core states vs the learner metadata; grid scratch vs the grid block"),
        check_equal("original.submission.grid", ws, get_dict(sub, "grid", ws),
                    {"energy_mj": None, "runtime_ms": None, "peak_scratch_bytes": None, "active_processors": None,
                     "word_node_hops": None, "time_to_score_seconds": None, "model_revision": None, "status": "not measured"},
                    what="no grid measurement was made (every grid figure null)"),
        check_equal("original.submission.sources", ws,
                    {"training_source_sha256": get_dict(sub, "sources.training_source_sha256", ws),
                     "raw_mnist_sources": get_dict(sub, "sources.raw_mnist_sources", ws)},
                    {"training_source_sha256": get_dict(protocol, "source_sha256", "protocol.json"),
                     "raw_mnist_sources": {k: v for k, v in get_dict(protocol, "raw_sources", "protocol.json").items()
                                           if k in ("train_images", "train_labels")}},
                    what="sources vs the protocol's"),
        check_equal("original.submission.report_checks", ws, get_dict(sub, "report_checks", ws),
                    {k: True for k in get_dict(sub, "report_checks", ws)} | {"passed": True},
                    what="every report check the original ran passed (this verifier redoes each)"),
        check_equal("original.submission.selection_flags", ws, get(sub, "selection.validation_only", bool, ws), True,
                    what="selection on the training-only split"),
    ]
    v, wv = f.json("verification.json"), "verification.json"
    val = get_list(f.json("validation.json"), "records", "validation.json")
    vsel = get_dict(v, "selection", wv)
    ve = get_dict(v, "energy", wv)
    out += [
        check_equal("original.verification.flags", wv,
                    {k: v.get(k) for k in ("passed", "all_draw_indices_and_inputs_recomputed",
                                           "all_frozen_source_and_prediction_hashes_match",
                                           "fresh_initializations_and_epoch_shuffles_match")},
                    {"passed": True, "all_draw_indices_and_inputs_recomputed": True,
                     "all_frozen_source_and_prediction_hashes_match": True,
                     "fresh_initializations_and_epoch_shuffles_match": True},
                    what="the original verifier's verdicts (this verifier redoes each)"),
        check_equal("original.verification.selection", wv,
                    {k: vsel.get(k) for k in ("candidates", "failed_candidates", "selected_correct", "selected_total",
                                              "validation_learner_sha256", "validation_matches_final_learner_file",
                                              "selection_rule_recomputed", "validation_predictions_independently_rescored")},
                    {"candidates": len(val), "failed_candidates": 0, "selected_correct": get_int(val[10], "correct", "v"),
                     "selected_total": get_int(val[10], "total", "v"),
                     "validation_learner_sha256": get(protocol, ("source_sha256", "learner.py"), str, "protocol.json"),
                     "validation_matches_final_learner_file": True, "selection_rule_recomputed": True,
                     "validation_predictions_independently_rescored": True},
                    what="selection block vs validation.json and the protocol"),
        check_equal("original.verification.energy", wv,
                    {k: ve.get(k) for k in ("passed", "draw_index", "trials", "invocations_per_trial",
                                            "counter_and_idle_arithmetic_recomputed", "repeat_state_hashes_match_accuracy_run",
                                            "cuda_nvml_device_identity_verified", "cuda_reconstruction_and_replay_checks_passed",
                                            "hardware")},
                    {"passed": True, "draw_index": 0, "trials": len(get_list(e0, "trials", "draw-00")),
                     "invocations_per_trial": get_int(e0, "repeats_per_trial", "draw-00"),
                     "counter_and_idle_arithmetic_recomputed": True, "repeat_state_hashes_match_accuracy_run": True,
                     "cuda_nvml_device_identity_verified": True, "cuda_reconstruction_and_replay_checks_passed": True,
                     "hardware": get_dict(e0, "hardware", "draw-00")},
                    what="energy block vs the draw-0 record"),
    ]
    out.append(check_equal("original.protocol.fields", "protocol.json",
                           {"raw_files": [get_str(s, "file", "protocol.json")
                                          for s in get_dict(protocol, "raw_sources", "protocol.json").values()],
                            "new_state_every_run": get(protocol, "new_state_every_run", bool, "protocol.json")},
                           {"raw_files": [pin.name for pin in _raw_pins(get_dict(protocol, "raw_sources", "protocol.json"))],
                            "new_state_every_run": get(draw0, "metadata.fresh_initialization_per_run", bool, "draw-00")},
                           what="raw file names vs the bundle's pins; fresh state per run vs the learner metadata"))
    csub, wc = f.json("cache-audit/submission.json"), "cache-audit/submission.json"
    out.append(check_equal("original.cache.submission.fields", wc,
                           {"workspace": get_str(csub, "cublas_workspace_config", wc)},
                           {"workspace": get_str(f.json("cache-audit/small-workspace.json"), "workspace", "small")},
                           what="cache submission workspace vs the small-workspace record"))
    return out


def _raw_pins(raw_sources: Mapping[str, Any]) -> list[Any]:
    from protocol import data  # noqa: PLC0415

    return [data.RAW_FILES[k] for k in raw_sources if k in data.RAW_FILES]


def check_selection_fields(f: ArchiveFiles) -> list[CheckResult]:
    """validation.json candidates: result config, learner source and prediction path."""
    val, wv = f.json("validation.json"), "validation.json"
    learner = get(f.json("protocol.json"), ("source_sha256", "learner.py"), str, "protocol.json")
    out = []
    for k, r in enumerate(get_list(val, "records", wv)):
        w = f"{wv}: records.{k}"
        out.append(check_equal("original.selection.candidate", f"candidate-{k:02d}",
                               [get_dict(r, "result.config", w), get_str(r, "result.learner_sha256", w),
                                get_str(r, "prediction_path", w)],
                               [get_dict(r, "config", w), learner, f"validation-predictions/candidate-{k:02d}.npy"],
                               what="result config = the candidate's, learner = the protocol's, its prediction file"))
    return out


def check_plans(f: ArchiveFiles) -> list[CheckResult]:
    """profile-plan.json and the cache submission's sources against the commands and records they describe."""
    pp, wp = f.json("cache-audit/profile-plan.json"), "cache-audit/profile-plan.json"
    sm = f.json(SUMMARY)
    plan = f.json("cache-audit/plan.json")
    cmd = get_list(get_dict(sm, ("profiles", PROFILES[0]), SUMMARY), "command", SUMMARY)

    def flag(name: str) -> str | None:
        return cmd[cmd.index(name) + 1] if name in cmd and cmd.index(name) + 1 < len(cmd) else None

    out = [check_equal("original.profile_plan", wp,
                       {k: pp.get(k) for k in ("replay_mode", "cache_control", "clock_control", "fixture_sha256")},
                       {"replay_mode": flag("--replay-mode"), "cache_control": flag("--cache-control"),
                        "clock_control": flag("--clock-control"), "fixture_sha256": get_str(plan, "fixture_sha256", "plan")},
                       what="profile plan vs the profile commands and the cache plan's fixture")]
    sub, ws = f.json("cache-audit/submission.json"), "cache-audit/submission.json"
    base = f.json("submission.json")
    cv = f.json(CUDA_VALIDATION)
    src = get_dict(sub, "source_sha256", ws)
    small = get_dict(f.json("cache-audit/small-workspace.json"), "result", "small-workspace")
    trials = get_list(small, "energy.trials", "small-workspace")
    import statistics  # noqa: PLC0415

    out.append(check_equal("original.cache.submission.sources", ws,
                           {k: src.get(k) for k in ("cache_runtime.py", "fixture.py", "run.py", "analyze.py",
                                                    "validate_runtime.py")} | {"entrypoint": sub.get("runtime_entrypoint")},
                           {"cache_runtime.py": get(cv, ("source_sha256", "cache_runtime.py"), str, CUDA_VALIDATION),
                            "fixture.py": get_str(plan, "fixture_sha256", "plan"),
                            "run.py": get_str(pp, "runner_sha256", wp), "analyze.py": get_str(sm, "analyzer_sha256", SUMMARY),
                            "validate_runtime.py": get_str(cv, "runner_sha256", CUDA_VALIDATION),
                            "entrypoint": "cache_runtime.py" if "cache_runtime.py" in src else None},
                           what="sources vs the validation, plan, profile plan and summary that name them"))
    nv = get_dict(cv, "numerical_validation", CUDA_VALIDATION)
    q = get_dict(sm, "qualification", SUMMARY)
    out.append(check_equal("original.cache.submission.fields", ws,
                           {k: sub.get(k) for k in ("schema_version", "name", "tier", "target_error_percent", "qualifies",
                                                    "base_submission_path", "grid")}
                           | {"qualification": sub.get("qualification"),
                              "memory_text": [get(sub, "memory.scope", str, ws),
                                              get(sub, "memory.cache_residency_established", bool, ws)],
                              "a100": {k: get(sub, f"a100.{k}", None, ws) for k in ("trials", "draw_measured",
                                                                                     "runtime_sample_sd_ms")}},
                           {"schema_version": 1, "name": f"{get_str(base, 'name', 'submission.json')}-cache",
                            "tier": base.get("tier"), "target_error_percent": base.get("target_error_percent"),
                            "qualifies": bool(base.get("qualifies")) and bool(q.get("inherited_accuracy_valid")),
                            "base_submission_path": "../submission.json", "grid": base.get("grid"),
                            "qualification": {"draws": len(get_list(q, "draws", SUMMARY)),
                                              "predictions_bit_equal": q.get("predictions_bit_equal"),
                                              "full_state_bit_equal_to_original": q.get("full_state_bit_equality_established"),
                                              "same_workspace_replay_byte_repeatable": all(
                                                  get(c, "complete_replay_byte_repeatable", bool, CUDA_VALIDATION)
                                                  for c in get_list(nv, "cases", CUDA_VALIDATION)),
                                              "gradient_and_sgd_validation_passed": get(nv, "passed", bool, CUDA_VALIDATION)},
                            "memory_text": [get_str(small, "memory.scope", "small"),
                                            get(small, "buffer_inventory.cache_residency_established", bool, "small")],
                            "a100": {"trials": len(trials), "draw_measured": 0, "runtime_sample_sd_ms": statistics.stdev(
                                [get(t, "cuda_ms_per_task", float, "small") for t in trials])}},
                           what="cache submission vs the base submission, the summary, the validation and the record"))
    for scope in ("task", "training"):
        entry = get_dict(sm, ("profiles", f"profile-small-{scope}"), SUMMARY)
        wp_ = get_dict(sub, f"warm_profile.{scope}", ws)
        out.append(check_equal("original.cache.submission.warm_profile", f"{ws} warm_profile.{scope}",
                               {k: wp_.get(k) for k in ("counter_unit", "pass_counts", "profile_device_attributes")},
                               {k: entry.get(k) for k in ("counter_unit", "pass_counts", "profile_device_attributes")},
                               what="warm profile copy vs the summary's :16:8 profile"))
    date = get_str(base, "submission_date", "submission.json")
    out.append(check_equal("original.submission.name", "submission.json",
                           [get_str(base, "name", "submission.json"), date],
                           [f"rev88-{date.replace('-', '')}", get_str(base, "built_at_utc", "submission.json")[:10]],
                           what="name from the submission date; the date of the build"))
    return out


def check_original_fields(f: ArchiveFiles) -> list[CheckResult]:
    """Family entry: every part on its own (a malformed record fails alone)."""
    out: list[CheckResult] = []
    for name, part in (("metadata", check_metadata), ("inventory", check_inventories), ("jobs", check_cache_jobs),
                       ("power", check_power), ("summary", check_summary_entries), ("profiles", check_profile_entries),
                       ("cuda_validation", check_cuda_validation), ("submissions", check_submissions),
                       ("selection", check_selection_fields), ("plans", check_plans)):
        out += guarded(f"original.fields.{name}.error", None, lambda part=part: part(f))
    return out
