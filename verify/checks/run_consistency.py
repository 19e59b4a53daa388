"""Consistency across the records of a run archive.

* the configuration is the frozen one everywhere (records, learner metadata, ``config.json``);
* every record's device and software equal an execution of ``environment.json.gz`` that
  lists the record's phase (GPU UUID, driver, the software record: torch, CUDA, numpy …),
  and the record's own ``execution`` equals it;
* the environment statement is honest: a native run is never called the pinned image, and
  ``pinned_image: true`` needs the image's marker (``verify.checks.run_host``: marker, lock
  file sha256, image ID, and every record's ``cpu`` block);
* each fixture record ran under the cuBLAS workspace config its phase requested (the
  phase's own record says which: ``comparison.json.gz`` configs, ``interleaved.json.gz``
  trials, ``original-summary.json.gz``, a profile run record's ``workspace_config``,
  ``validation.json.gz``; qualification runs the preferred ``:16:8``, spec 7.4);
* the fixture inputs (input ``.npz``, kept outside the archive and listed under the
  environment's ``dropped_files``) are rebuilt from the raw MNIST files and must have the
  recorded ``input_archive_sha256``;
* every stored prediction array was compared with its frozen reference.
"""

from __future__ import annotations

import hashlib
import json
import platform
from typing import Any

import numpy as np

from protocol import data
from protocol import host_records as hostinfo
from verify.checks import draws, run, run_host
from verify.checks.consistency import FROZEN_CONFIG, PROTOCOL_CONFIG_ORDER, check_config
from verify.checks.run_common import all_qualify_records, compare_fields, json_record, qualify_records
from verify.integrity import ArchiveFiles
from verify.records import get, get_dict, get_int, get_list, get_str
from verify.result import CheckResult, check_equal, check_true, failed, guarded, unavailable

QUALIFY_WORKSPACE = ":16:8"
"""Qualification runs the preferred workspace config (spec 7.4 ``cublas_workspace_config``)."""
EXECUTION_KEYS = ("engine", "image_reference", "pinned_image", "statement", "gpu", "gpu_uuid", "driver_version",
                  "software")
NEWER_EXECUTION_KEYS = ("cpu", "image_marker", "image_id")
"""Execution keys of newer writers, compared wherever the environment's execution has them."""


def requested_workspaces(f: ArchiveFiles) -> dict[str, tuple[str, str]]:
    """Fixture record path -> (workspace config requested, the phase record that requests it)."""
    out: dict[str, tuple[str, str]] = {}
    cmp = json_record(f, "compare/comparison.json.gz")
    for row in get_list(cmp, "configs", "compare/comparison.json.gz") if cmp else []:
        out[f"compare/{row.get('record')}"] = (row.get("workspace"), "compare/comparison.json.gz")
    from verify.checks.run_energy import trial_summaries  # noqa: PLC0415

    for design in trial_summaries(f):
        inter = json_record(f, design)
        for t in get_list(inter, "trials", design) if inter else []:
            out[f"energy/{t.get('record')}"] = (t.get("workspace"), design)
    orig = json_record(f, "energy/original-summary.json.gz")
    if orig:
        out[f"energy/{orig.get('record')}"] = (orig.get("workspace"), "energy/original-summary.json.gz")
    from verify.checks.run_profile import run_records  # noqa: PLC0415

    for rel, rec in run_records(f):
        fx = (rec.get("files") or {}).get("fixture_record") or {}
        out[f"profile/{fx.get('path')}"] = (rec.get("workspace_config"), rel)
    val = json_record(f, "validate/validation.json.gz")
    if val:
        out["validate/smoke/cli.json.gz"] = (val.get("workspace"), "validate/validation.json.gz")
    return out


def check_workspaces(f: ArchiveFiles) -> list[CheckResult]:
    """Each fixture record's ``cublas_workspace_config`` equals the one its phase requested."""
    out: list[CheckResult] = []
    requested = requested_workspaces(f)
    records = run.fixture_records(f)
    if f.has("validate/smoke/cli.json.gz"):
        records.append(("validate/smoke/cli.json.gz", f.json("validate/smoke/cli.json.gz")))
    for rel, rec in records:
        if rel not in requested:
            out.append(failed("consistency.workspace_requested", rel, "no phase record names this fixture record, "
                              "so the workspace config it was meant to run is unknown"))
            continue
        want, source = requested[rel]
        out += guarded("consistency.workspace_requested", rel, lambda rel=rel, rec=rec, want=want, source=source: [
            check_equal("consistency.workspace_requested", f"{rel} (requested by {source})",
                        get(rec, "cublas_workspace_config", (str, type(None)), rel), want,
                        what="cuBLAS workspace config run vs requested")])
    for rel in qualify_records(f):
        out += guarded("consistency.workspace_requested", rel, lambda rel=rel: [
            check_equal("consistency.workspace_requested", rel, get(f.json(rel), "fixture.cublas_workspace_config",
                                                                     str, rel), QUALIFY_WORKSPACE,
                        what="qualification workspace config")])
    worker = json_record(f, "validate/smoke/worker.json.gz")
    val = json_record(f, "validate/validation.json.gz")
    if worker and val:
        out.append(check_equal("consistency.workspace_requested", "validate/smoke/worker.json.gz",
                               get_str(worker, "workspace", "worker"), get_str(val, "workspace", "validation"),
                               what="validation worker workspace"))
    return out


def _device_records(f: ArchiveFiles) -> list[tuple[str, str, object, str]]:
    """(phase, path, record, key prefix of hardware/software/execution) of every record that states where it ran."""
    out: list[tuple[str, str, object, str]] = [(rel.split("/")[0], rel, rec, "") for rel, rec in run.fixture_records(f)]
    out += [("qualify", rel, f.json(rel), "fixture.") for rel in qualify_records(f)]
    for rel in ("validate/validation.json.gz", "validate/smoke/worker.json.gz", "validate/smoke/cli.json.gz"):
        rec = json_record(f, rel)
        if rec is not None:
            out.append(("validate", rel, rec, ""))
    return out


def diagnostic_phases(execution: Any) -> list[str]:
    """The phases of one ``executions`` entry that ran without a CUDA device (a ``--device cpu`` diagnostic).

    Qualification on the CPU is a protocol run and is never listed.

    Returns:
        Sorted phase names; empty for a GPU execution or a malformed entry.
    """
    if not isinstance(execution, dict) or execution.get("gpu") is not None or execution.get("gpu_uuid") is not None:
        return []
    return sorted({str(p) for p in execution.get("phases") or []} - {"qualify"})


def check_environment(f: ArchiveFiles) -> list[CheckResult]:
    """The honest environment statement, and every record's device/software against an execution."""
    rel = "environment.json.gz"
    env = json_record(f, rel)
    if env is None:
        return [failed("consistency.environment", f.root.name, "environment.json.gz absent: the run does not "
                       "state where it happened")]
    out: list[CheckResult] = []
    execs = get_list(env, "executions", rel)
    for i, ex in enumerate(execs):
        w = f"{rel}: executions.{i}"
        out += run_host.check_execution_block(ex, f"{rel} executions.{i}")
        if isinstance(ex, dict):
            out += run_host.check_cpu_block(ex.get("cpu"), f"{rel} executions.{i}")
        cuda_phases = diagnostic_phases(ex)
        if cuda_phases:
            # A run made without a CUDA device (`--device cpu`) is a diagnostic, not protocol evidence.
            out.append(failed("consistency.environment.cuda_device", f"{rel} executions.{i}",
                              f"phases {cuda_phases} ran without a CUDA device (a `--device cpu` diagnostic): "
                              "not protocol evidence; rerun them on a GPU host (qualification on the CPU "
                              "is a protocol run)"))
            continue
        pinned = get(ex, "pinned_image", bool, w)
        engine = get_str(ex, "engine", w)
        statement = get_str(ex, "statement", w)
        software = get_dict(ex, "software", w)
        marker = get(ex, "image_marker", (dict, type(None)), w) if "image_marker" in ex else None
        honest = (pinned == hostinfo.pinned_image_holds(engine, marker, software)
                  and (pinned or "not the pinned" in statement) and (engine != "native" or ex.get("image_reference") is None)
                  and (ex.get("gpu") or "no CUDA device") in statement and get_str(software, "torch", w) in statement)
        out.append(check_true("consistency.environment.statement", f"{rel} executions.{i} ({', '.join(ex.get('phases', []))})",
                              honest, f"engine {engine}, pinned_image {pinned}, software {software}, statement "
                              f"{statement!r}: only a container with the image's marker and the pinned stack may claim the "
                              "pinned image, and the statement must name the GPU and torch and say otherwise",
                              recomputed=ex))
    phases_listed = [p for ex in execs for p in get_list(ex, "phases", rel)]
    present = sorted({p.split("/")[0] for p in f.content if "/" in p})
    # A phase spread over several boards (--gpus) is stated once per board: by executions that differ
    # in their GPU; otherwise exactly once.
    boards_of = {p: [ex.get("gpu_uuid") for ex in execs if p in (ex.get("phases") or [])] for p in set(phases_listed)}
    once_per_board = all(len(set(u)) == len(u) and (len(u) == 1 or None not in u) for u in boards_of.values())
    out.append(check_true("consistency.environment.phases", rel, sorted(set(phases_listed)) == present and once_per_board,
                          f"executions list phases {sorted(phases_listed)} but the archive holds {present}: each "
                          "phase must be stated once (once per board for a phase spread over boards)", recomputed=present))
    for record in _device_records(f):
        out += guarded("consistency.execution", record[1], lambda record=record: _check_execution(record, execs, rel))
    return out


def _check_execution(record: tuple[str, str, object, str], execs: list, rel: str) -> list[CheckResult]:
    """One record's device and software against the executions of environment.json.gz."""
    phase, path, rec, prefix = record
    hw = get_dict(rec, f"{prefix}hardware", path)
    sw = get_dict(rec, f"{prefix}software", path)
    ex = get(rec, f"{prefix}execution", (dict, type(None)), path) if prefix else rec.get("execution")
    uuid, driver = hw.get("uuid"), hw.get("driver_version")
    match = [e for e in execs if isinstance(e, dict) and phase in e.get("phases", []) and e.get("gpu_uuid") == uuid
             and e.get("driver_version") == driver and e.get("software") == sw]
    out = [check_true("consistency.execution", path, len(match) == 1,
                      f"device {uuid} driver {driver} torch {sw.get('torch')} matches no execution of "
                      f"{rel} listing phase {phase}", recomputed={"gpu_uuid": uuid, "driver_version": driver,
                                                                 "software": sw})]
    out += run_host.check_hardware_cpu(hw, path)
    if ex is not None:
        out += run_host.check_execution_block(ex, f"{path} execution")
    if match and ex is not None:
        keys = EXECUTION_KEYS + tuple(k for k in NEWER_EXECUTION_KEYS if k in match[0])
        out.append(compare_fields("consistency.execution_record", path, ex,
                                  {k: match[0].get(k) for k in keys}, what="the record's execution"))
    return out


def check_configs(f: ArchiveFiles) -> list[CheckResult]:
    """The frozen configuration in every record, its metadata, and each ``config.json``."""
    out: list[CheckResult] = []
    canonical = (json.dumps({k: FROZEN_CONFIG[k] for k in PROTOCOL_CONFIG_ORDER}, indent=2) + "\n").encode()
    config_sha = hashlib.sha256(canonical).hexdigest()
    for rel in sorted(p for p in f.content if p.endswith("config.json") and "energy-config" not in p):
        if rel.startswith("validate/"):
            continue  # the smoke config is synthetic (batch 8), checked with the validation
        out.append(check_equal("consistency.config_file", rel, hashlib.sha256(f.read(rel)).hexdigest(), config_sha,
                               what="config.json sha256 vs the frozen config in protocol order"))
    shas: list[str] = []

    def one(rel: str, rec: object, keys: tuple[str, ...], sha_key: str) -> list[CheckResult]:
        verdicts = [check_config(get_dict(rec, k, rel), subject=rel if k == "config" else f"{rel} metadata")
                    for k in keys]
        shas.append(get_str(rec, sha_key, rel))
        return verdicts

    for rel, rec in run.fixture_records(f):
        out += guarded("consistency.config", rel, lambda rel=rel, rec=rec: one(rel, rec, ("metadata.config",),
                                                                               "config_file_sha256"))
    for rel in qualify_records(f):
        out += guarded("consistency.config", rel, lambda rel=rel: one(rel, f.json(rel), ("config", "metadata.config"),
                                                                      "fixture.config_file_sha256"))
    if not shas:  # compared nothing: never a PASS
        out.append(unavailable("consistency.config_file_sha256", "0 records", "no fixture or qualification record "
                               "states a config_file_sha256 to compare with the frozen config's"))
        return out
    out.append(check_true("consistency.config_file_sha256", f"{len(shas)} records", all(s == config_sha for s in shas),
                          f"a record's config_file_sha256 is not the frozen config's {config_sha}",
                          recomputed=sorted(set(shas))))
    return out


def check_inputs(f: ArchiveFiles) -> list[CheckResult]:
    """Input archives rebuilt from the raw MNIST files have the sha256 every record states."""
    from protocol.fixture_inputs import INPUT_KEYS, npz_bytes  # noqa: PLC0415

    by_draw: dict[int, set[tuple[str, str]]] = {}
    out: list[CheckResult] = []

    def note(rel: str, draw: int | None, sha: str) -> list[CheckResult]:
        if draw is not None:
            by_draw.setdefault(draw, set()).add((sha, rel.split("/")[0]))
        return []

    for rel, rec in run.fixture_records(f):
        out += guarded("consistency.input_archive_sha256", rel, lambda rel=rel, rec=rec: note(
            rel, run.which_draw(get_dict(rec, "metadata", rel), rel), get_str(rec, "input_archive_sha256", rel)))
    for rel in qualify_records(f):
        i = int(rel[len("qualify/draw-"):-len(".json.gz")])
        out += guarded("consistency.input_archive_sha256", rel, lambda rel=rel, i=i: note(
            rel, i, get_str(f.json(rel), "fixture.input_archive_sha256", rel)))
    writer_versions = _npz_writer_versions(f)
    rebuilt: dict[int, str] = {}
    for draw, recorded in sorted(by_draw.items()):
        rebuilt[draw] = draws.input_npz_sha256(draw)
        for sha, phase in sorted(recorded):
            out.append(_npz_verdict("consistency.input_archive_sha256", f"{phase} draw-{draw:02d}", sha,
                                    rebuilt[draw], writer_versions, "input .npz rebuilt from the raw MNIST files"))
    env = json_record(f, "environment.json.gz") or {}
    for i, d in enumerate(env.get("dropped_files") or []):
        w = f"environment.json.gz: dropped_files.{i}"
        path, sha = get_str(d, "path", w), get_str(d, "sha256", w)
        phase = path.split("/")[0]
        if path.startswith("validate/"):
            from protocol.fixture_inputs import smoke_inputs  # noqa: PLC0415

            want = hashlib.sha256(npz_bytes({k: v for k, v in smoke_inputs().items() if k in INPUT_KEYS})).hexdigest()
        else:
            want = rebuilt.get(0)
        out.append(_npz_verdict("consistency.dropped_input", path, sha, want, writer_versions,
                                f"dropped {phase} input rebuilt"))
    return out


def _npz_writer_versions(f: ArchiveFiles) -> set[tuple[str | None, str | None]]:
    """(numpy, Python) versions of the executions that wrote the archive's input ``.npz`` files."""
    env = json_record(f, "environment.json.gz") or {}
    return {((e.get("software") or {}).get("numpy"), (e.get("software") or {}).get("python"))
            for e in env.get("executions", []) if isinstance(e, dict)}


def _npz_verdict(check_id: str, subject: str, recorded: str, rebuilt: str | None,
                 writer_versions: set[tuple[str | None, str | None]], what: str) -> CheckResult:
    """Equal rebuilt ``.npz`` bytes pass; unequal ones fail only when this host writes with the same
    numpy and Python as the run did, because the container bytes (``.npy`` headers, zip entries)
    depend on those versions, while the arrays themselves are checked through their own hashes."""
    if rebuilt == recorded:
        return check_equal(check_id, subject, recorded, rebuilt, what=what)
    here = (np.__version__, platform.python_version())
    if here in writer_versions:
        return check_equal(check_id, subject, recorded, rebuilt, what=what)
    return unavailable(check_id, subject, f"{what}: bytes differ, but this host (numpy {here[0]}, Python {here[1]}) "
                       f"is not the writer's {sorted(writer_versions)}; .npz container bytes depend on those "
                       "versions, and the arrays are checked through their own hashes (draws.input_hashes)",
                       recorded=recorded)


def check_prediction_coverage(f: ArchiveFiles) -> list[CheckResult]:
    """The smoke's predictions vs the original's smoke; every stored ``.npy`` belongs to a checked record."""
    out: list[CheckResult] = []
    covered = {f"qualify/draw-{i:02d}.predictions.npy" for i in range(data.DRAW_COUNT)}
    paths = run.predictions_paths(f)
    for rel, rec in run.fixture_records(f):
        covered.add(paths.get(rel) or f"{rel.rsplit('/', 1)[0]}/{rec.get('predictions_file')}")
    cli = json_record(f, "validate/smoke/cli.json.gz")
    if cli is not None:
        md = get_dict(cli, "metadata", "validate/smoke/cli.json.gz")
        path = f"validate/smoke/{get_str(cli, 'predictions_file', 'cli')}"
        covered.add(path)
        out += run.check_prediction_file(f, path, subject="validate/smoke/cli.json.gz",
                                         count=get_int(md, "test_count", "cli"),
                                         payload_sha=get_str(md, "predictions_sha256", "cli"), draw=None,
                                         file_sha=cli.get("predictions_file_sha256"))
    for rel in sorted(p for p in f.content if p.endswith(".npy")):
        if rel not in covered:
            out.append(failed("consistency.predictions_covered", rel, "no record of the archive names this prediction "
                              "file, so it was not compared with a frozen reference"))
    return out


# qualify_records and all_qualify_records live in run_common (run_energy needs them too, and importing
# this module from there made run_consistency <-> run_energy a cycle); they stay importable from here.


def in_process_qualify_records(f: ArchiveFiles) -> list[str]:
    """Qualification records trained in the command's own process (no fixture block)."""
    fresh = set(qualify_records(f))
    return [rel for rel in all_qualify_records(f) if rel not in fresh]


def check_in_process_qualify(f: ArchiveFiles) -> list[CheckResult]:
    """In-process qualification records: frozen config, workspace (``:16:8`` on CUDA), and the torch
    version and device of the one execution that lists ``qualify``."""
    out: list[CheckResult] = []
    env = json_record(f, "environment.json.gz") or {}
    execs = [e for e in env.get("executions", []) if isinstance(e, dict) and "qualify" in e.get("phases", [])]
    for rel in in_process_qualify_records(f):
        def one(rel: str = rel) -> list[CheckResult]:
            rec = f.json(rel)
            device = get_str(rec, "device", rel)
            verdicts = [check_config(get_dict(rec, "config", rel), subject=rel),
                        check_config(get_dict(rec, "metadata.config", rel), subject=f"{rel} metadata")]
            if device == "cuda":
                verdicts.append(check_equal("consistency.workspace_requested", rel,
                                            get(rec, "workspace_config", (str, type(None)), rel), QUALIFY_WORKSPACE,
                                            what="qualification workspace config"))
            verdicts += run_host.check_hardware_cpu(get(rec, "hardware", (dict, type(None)), rel), rel)
            torch_version = get_str(rec, "software.torch", rel)
            verdicts.append(check_true("consistency.execution", rel, len(execs) == 1
                                       and (execs[0].get("software") or {}).get("torch") == torch_version
                                       and (device == "cuda") == (execs[0].get("gpu") is not None),
                                       f"device {device}, torch {torch_version} matches no single execution "
                                       "listing phase qualify", recomputed={"device": device, "torch": torch_version}))
            return verdicts
        out += guarded("consistency.in_process_qualify", rel, one)
    return out


def check_consistency(f: ArchiveFiles) -> list[CheckResult]:
    """Family entry: environment, configuration, workspace configs, inputs, prediction coverage.

    Each part runs on its own; malformed evidence in one becomes one FAIL naming the file.
    """
    out: list[CheckResult] = []
    for name, part in (("environment", check_environment), ("config", check_configs),
                       ("workspace_requested", check_workspaces), ("input_archive_sha256", check_inputs),
                       ("predictions_covered", check_prediction_coverage),
                       ("in_process_qualify", check_in_process_qualify)):
        out += guarded(f"consistency.{name}.error", None, lambda part=part: part(f))
    return out
