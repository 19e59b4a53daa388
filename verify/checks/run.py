"""Checks of our own run archives (``evidence/<run-id>/`` with ``manifest.json``).

Record formats are the writers' (docs/ARCHITECTURE.md, bundle/fixture.py, bundle/phases/*):
fixture records keep the original's keys (spec 4.1) plus ``hardware``/``software``/
``execution``, so the memory, inventory, energy and profile checks of the original apply
unchanged. A family whose phase folder is absent returns nothing.
"""

from __future__ import annotations

import hashlib
import io
import posixpath

import numpy as np

from bundle import data
from verify.checks import accuracy, draws, energy, memory, profile
from verify.checks.consistency import check_config, check_same
from verify.integrity import ArchiveFiles
from verify.records import get, get_dict, get_list, get_str
from verify.result import CheckResult, check_equal, check_true, failed, passed, unavailable

ORIGINAL_RESULTS = "evidence/rev88-original/results"


def _members(f: ArchiveFiles, phase: str, suffix: str) -> list[str]:
    return sorted(p for p in f.content if p.startswith(f"{phase}/") and p.endswith(suffix))


def _fixture_records(f: ArchiveFiles) -> list[tuple[str, dict]]:
    out = []
    for rel in sorted(f.content):
        if rel.endswith(".json.gz") and rel.split("/")[0] in ("compare", "energy", "profile", "qualify"):
            rec = f.json(rel)
            if isinstance(rec, dict) and "buffer_inventory" in rec and "metadata" in rec:
                out.append((rel, rec))
    return out


def which_draw(metadata: dict, where: str) -> int | None:
    """The qualification draw whose train-label hash the record's inputs carry, else None."""
    labels = get_str(metadata, "input_hashes.train_labels", where)
    for i in range(data.DRAW_COUNT):
        if draws.draw_hashes(i)["train_labels"] == labels:
            return i
    return None


def _frozen_predictions_sha(draw: int) -> str | None:
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / ORIGINAL_RESULTS / f"draw-{draw:02d}.json"
    if not path.is_file():
        return None
    from verify.records import parse_json

    return get_str(parse_json(path.read_bytes(), str(path)), "metadata.predictions_sha256", str(path))


def check_environment(f: ArchiveFiles) -> list[CheckResult]:
    """environment.json.gz: where the run happened (hardware/software stated honestly)."""
    if not f.has("environment.json.gz"):
        return [unavailable("run.environment", f.root.name, "environment.json.gz absent: hardware and software "
                            "of the run are not stated")]
    env = f.json("environment.json.gz")
    execs = get_list(env, "executions", "environment.json.gz")
    return [check_true("run.environment", "environment.json.gz", len(execs) > 0, "no execution recorded",
                       recomputed=execs)]


def check_fixtures(f: ArchiveFiles) -> list[CheckResult]:
    """Every fixture record: config, draw inputs, memory, inventory, energy, predictions, frozen reference."""
    out: list[CheckResult] = []
    software = []
    for rel, rec in _fixture_records(f):
        md = get_dict(rec, "metadata", rel)
        ws = get(rec, "cublas_workspace_config", (str, type(None)), rel)
        s = f"{rel} {ws}"
        out.append(check_config(get_dict(rec, "config", rel), subject=rel))
        out.append(check_equal("run.fixture.workspace_in_name", s, ws is not None and
                               ws.strip(":").replace(":", "-") in rel, True, what="workspace config in file name"))
        out.append(check_equal("run.fixture.test_labels_read", s, get(rec, "test_labels_read", bool, rel), False))
        draw = which_draw(md, rel)
        if draw is not None:
            out += draws.check_draw_record_hashes(draw, md, subject=s, where=rel, images="exact")
            out.append(draws.check_epoch_permutations(get_list(md, "epoch_permutation_sha256", rel), n=10_000,
                                                      seed=get(md, "config.seed", int, rel), subject=s))
        mem = rec.get("memory")
        if mem:
            out += memory.check_fixture_memory(mem, subject=s, where=rel)
            out += memory.check_inventory(get_dict(rec, "buffer_inventory", rel),
                                          get(mem, "allocated_after_invoke_bytes", int, rel), subject=s, where=rel)
        e = rec.get("energy")
        if e:
            if "summary" in e and "calibration_ms" in e:
                out += energy.check_energy_block(e, subject=s, where=rel)
            else:
                for i, t in enumerate(get_list(e, "trials", rel)):
                    out += energy.check_trial(t, index=get(t, "trial", int, rel), repeats=get(t, "invocations", int, rel),
                                              subject=s, where=f"{rel}: trials.{i}")
        out += _check_predictions(f, rel, rec, s, draw)
        software.append((rel, rec.get("software")))
    if software:
        out.append(check_same("consistency.software", software, what="software"))
    return out


def _check_predictions(f: ArchiveFiles, rel: str, rec: dict, s: str, draw: int | None) -> list[CheckResult]:
    name = get_str(rec, "predictions_file", rel)
    path = posixpath.join(posixpath.dirname(rel), name)
    if not f.has(path):
        alt = rel[: -len(".json.gz")] + ".predictions.npy"
        path = alt if f.has(alt) else path
    if not f.has(path):
        return [failed("run.predictions.present", s, f"predictions file {path} is not in the archive")]
    raw = f.read(path)
    arr = np.load(io.BytesIO(raw), allow_pickle=False)
    md = get_dict(rec, "metadata", rel)
    out = accuracy.check_prediction_array(arr, subject=path, count=get(md, "test_count", int, rel))
    out.append(check_equal("run.predictions.payload_sha256", path, get_str(md, "predictions_sha256", rel),
                           data.array_sha256(arr), what="metadata predictions_sha256 vs file payload"))
    if "predictions_file_sha256" in rec:
        out.append(check_equal("run.predictions.file_sha256", path, get_str(rec, "predictions_file_sha256", rel),
                               hashlib.sha256(raw).hexdigest(), what="predictions_file_sha256"))
    if draw is not None:
        frozen = _frozen_predictions_sha(draw)
        if frozen is None:
            out.append(unavailable("draws.frozen_predictions_sha256", s, "the original archive is not next to "
                                   "this one; frozen predictions not compared"))
        else:
            out.append(check_equal("draws.frozen_predictions_sha256", s, frozen, data.array_sha256(arr),
                                   what=f"predictions vs the frozen original draw {draw:02d}"))
    return out


def check_qualify(f: ArchiveFiles) -> list[CheckResult]:
    """qualify/: all 11 draws' predictions rescored; aggregate vs accuracy.json.gz."""
    preds = _members(f, "qualify", ".predictions.npy")
    if not preds:
        return []
    out: list[CheckResult] = []
    corrects: list[int] = []
    for i in range(data.DRAW_COUNT):
        path = f"qualify/draw-{i:02d}.predictions.npy"
        if not f.has(path):
            out.append(failed("accuracy.draw.present", f"draw-{i:02d}", f"{path} missing: all 11 draws are required"))
            continue
        arr = np.load(io.BytesIO(f.read(path)), allow_pickle=False)
        out += accuracy.check_prediction_array(arr, subject=path)
        correct, confusion = accuracy.score(arr, data.evaluation_labels(i))
        corrects.append(correct)
        out.append(passed("accuracy.draw.correct", f"draw-{i:02d}", recomputed=correct,
                          reason="rescored against the evaluation labels after every hash matched"))
        out.append(passed("accuracy.draw.confusion", f"draw-{i:02d}", recomputed=confusion.tolist()))
    if f.has("qualify/accuracy.json.gz") and len(corrects) == data.DRAW_COUNT:
        acc = f.json("qualify/accuracy.json.gz")
        out += accuracy.check_aggregate(acc, corrects, subject="qualify/accuracy.json.gz",
                                        where="qualify/accuracy.json.gz")
        rows = acc.get("rows") if isinstance(acc, dict) else None
        if isinstance(rows, list):
            out.append(check_equal("accuracy.rows.correct", "qualify/accuracy.json.gz",
                                   [get(r, "correct", int, "qualify/accuracy.json.gz") for r in rows], corrects))
    elif len(corrects) == data.DRAW_COUNT:
        out.append(failed("accuracy.record", "qualify/accuracy.json.gz", "accuracy record absent"))
    return out


def check_profiles(f: ArchiveFiles) -> list[CheckResult]:
    """profile/: per-sequence figures from metric rows and from the raw CSV (re-parsed)."""
    from bundle import profile as counters

    out: list[CheckResult] = []
    for rel in _members(f, "profile", ".json.gz"):
        if rel.endswith(".fixture.json.gz"):
            continue
        rec = f.json(rel)
        if not (isinstance(rec, dict) and "metric_rows" in rec and "scope" in rec):
            continue
        s = f"{rel} {rec.get('workspace_config')}"
        out += profile.check_profile_figures(rec, scope=get_str(rec, "scope", rel), subject=s, where=rel,
                                             hit_rate_max_percent=None)
        csv_path = rel[: -len(".json.gz")] + ".csv.gz"
        if f.has(csv_path):
            rows = counters.parse_raw_csv(f.read(csv_path).decode("utf-8"), hit_rate_limit_percent=None)
            out.append(check_equal("profile.csv_metric_rows", s, get_dict(rec, "metric_rows", rel), rows.metric_rows(),
                                   what="metric rows re-parsed from the raw CSV"))
        else:
            out.append(failed("profile.csv_present", s, f"{csv_path} missing: raw ncu output is required"))
        out.append(profile.check_ncu_report(s, f.has(rel[: -len(".json.gz")] + ".ncu-rep.gz"), None))
    return out


FAMILIES = (
    ("run.environment", check_environment),
    ("run.fixtures", check_fixtures),
    ("run.qualify", check_qualify),
    ("run.profile", check_profiles),
)
