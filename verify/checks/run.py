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

from protocol import data
from verify.checks import accuracy, draws, memory, run_energy
from verify.checks.consistency import check_config, check_same, check_workspace_string
from verify.checks.run_common import fixture_records, frozen_predictions_sha, frozen_smoke_predictions_sha
from verify.integrity import ArchiveFiles
from verify.records import get, get_dict, get_list, get_str
from verify.result import CheckResult, check_equal, failed, guarded, unavailable


def which_draw(metadata: dict, where: str) -> int | None:
    """The qualification draw whose train-label hash the record's inputs carry, else None."""
    labels = get_str(metadata, "input_hashes.train_labels", where)
    for i in range(data.DRAW_COUNT):
        if draws.draw_hashes(i)["train_labels"] == labels:
            return i
    return None


def check_fixtures(f: ArchiveFiles) -> list[CheckResult]:
    """Every fixture record: config, draw inputs, memory, inventory, energy, predictions, frozen reference.

    Each record is checked on its own: a malformed one is one FAIL naming its file.
    """
    out: list[CheckResult] = []
    software = []
    for rel, rec in fixture_records(f):
        out += guarded("run.fixture.error", rel, lambda rel=rel, rec=rec: _check_fixture(f, rel, rec))
        software.append((rel, rec.get("software")))
    if software:
        out.append(check_same("consistency.software", software, what="software"))
    return out


def _check_fixture(f: ArchiveFiles, rel: str, rec: dict) -> list[CheckResult]:
    md = get_dict(rec, "metadata", rel)
    ws = get(rec, "cublas_workspace_config", (str, type(None)), rel)
    s = f"{rel} {ws}"
    out = [check_config(get_dict(rec, "config", rel), subject=rel),
           check_workspace_string("run.fixture.workspace_config", s, ws),
           check_equal("run.fixture.test_labels_read", s, get(rec, "test_labels_read", bool, rel), False)]
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
    if rec.get("energy"):
        out += run_energy.check_record_energy(rec, subject=s, where=rel)
    return out + _check_predictions(f, rel, rec, s, draw)


def predictions_paths(f: ArchiveFiles) -> dict[str, str]:
    """Fixture record -> its predictions file, as the phase records name them.

    A profile run record's ``files`` map names both its fixture record and the
    predictions the profile phase stored (``<run>.predictions.npy``); the comparison names
    each config's ``predictions_file``. Other fixture records name theirs in
    ``predictions_file`` next to the record.
    """
    out: dict[str, str] = {}
    for rel in sorted(f.content):
        if rel.startswith("profile/") and rel.endswith(".json.gz") and not rel.endswith(".fixture.json.gz"):
            rec = f.json(rel)
            files = rec.get("files") if isinstance(rec, dict) else None
            if isinstance(files, dict) and isinstance(files.get("fixture_record"), dict):
                fx = files["fixture_record"].get("path")
                pred = (files.get("predictions") or {}).get("path")
                if isinstance(fx, str) and isinstance(pred, str):
                    out[f"profile/{fx}"] = f"profile/{pred}"
    if f.has("compare/comparison.json.gz"):
        cmp = f.json("compare/comparison.json.gz")
        for row in (cmp.get("configs") or []) if isinstance(cmp, dict) else []:
            if isinstance(row, dict) and isinstance(row.get("record"), str) and isinstance(row.get("predictions_file"), str):
                out[f"compare/{row['record']}"] = f"compare/{row['predictions_file']}"
    return out


def check_prediction_file(f: ArchiveFiles, path: str, *, subject: str, count: int, payload_sha: str,
                          draw: int | None, file_sha: str | None = None) -> list[CheckResult]:
    """One stored prediction array: dtype/shape/range, payload sha vs metadata, file sha, frozen reference.

    Args:
        draw: the qualification draw whose frozen predictions apply, or None (API smoke: the
            original's smoke predictions apply when ``count`` is 7).
    """
    if not f.has(path):
        return [failed("run.predictions.present", subject, f"predictions file {path} is not in the archive")]
    raw = f.read(path)
    arr = np.load(io.BytesIO(raw), allow_pickle=False)
    out = accuracy.check_prediction_array(arr, subject=path, count=count)
    out.append(check_equal("run.predictions.payload_sha256", path, payload_sha, data.array_sha256(arr),
                           what="metadata predictions_sha256 vs file payload"))
    if file_sha is not None:
        out.append(check_equal("run.predictions.file_sha256", path, file_sha, hashlib.sha256(raw).hexdigest(),
                               what="recorded file sha256"))
    frozen = frozen_predictions_sha(draw) if draw is not None else frozen_smoke_predictions_sha()
    label = f"the frozen original draw {draw:02d}" if draw is not None else "the original's API smoke"
    if frozen is None:
        out.append(unavailable("draws.frozen_predictions_sha256", path, "the original archive is not next to "
                               "this one; frozen predictions not compared"))
    else:
        out.append(check_equal("draws.frozen_predictions_sha256", path, frozen, data.array_sha256(arr),
                               what=f"predictions vs {label}"))
    return out


def _check_predictions(f: ArchiveFiles, rel: str, rec: dict, s: str, draw: int | None) -> list[CheckResult]:
    path = predictions_paths(f).get(rel) or posixpath.join(posixpath.dirname(rel), get_str(rec, "predictions_file", rel))
    md = get_dict(rec, "metadata", rel)
    if draw is None:
        return [failed("draws.identified", s, "the record's train-label hash matches no qualification draw: "
                       "its predictions cannot be compared with a frozen reference")]
    return check_prediction_file(f, path, subject=s, count=get(md, "test_count", int, rel),
                                 payload_sha=get_str(md, "predictions_sha256", rel), draw=draw,
                                 file_sha=rec.get("predictions_file_sha256"))
