"""Helpers shared by the run-archive checks: record-level comparisons and frozen reference look-ups.

A summary record (``comparison.json.gz``, ``interleaved.json.gz``, ``profiles.json.gz`` …)
is checked field by field against the verifier's recomputation; :func:`compare_fields`
turns that into ONE verdict whose recomputed value is the verified object (what reports
show), or a FAIL naming the first fields that differ.
"""

from __future__ import annotations

import math
from typing import Any

from protocol.data import DRAW_COUNT
from verify.host import ORIGINAL_ROOT, frozen_reference
from verify.integrity import ArchiveFiles
from verify.records import get_str
from verify.result import CheckResult, failed, passed, unavailable

REL_TOL = 1e-12
"""Relative tolerance for recomputed floats (the same arithmetic reproduces them to the bit;
the margin only admits a different libm)."""
ABS_TOL = 1e-15

__all__ = ["DRAW_COUNT", "ORIGINAL_ROOT", "all_qualify_records", "compare_fields", "fixture_records",
           "frozen_draw_metadata", "frozen_predictions_sha", "qualify_records",
           "frozen_smoke_predictions_sha", "json_record", "same_value", "stored_sha"]
# ORIGINAL_ROOT (the frozen reference: REV88_ORIGINAL_DIR, else the repository's copy) is defined in verify.host.


def same_value(a: Any, b: Any, *, rel_tol: float = REL_TOL, abs_tol: float = ABS_TOL) -> bool:
    """Deep equality; floats within ``rel_tol``/``abs_tol``; bool never equals a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        return math.isfinite(a) and math.isfinite(b) and math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k], rel_tol=rel_tol, abs_tol=abs_tol) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_value(x, y, rel_tol=rel_tol, abs_tol=abs_tol) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def compare_fields(check_id: str, subject: str, recorded: Any, recomputed: dict, *, what: str,
                   rel_tol: float = REL_TOL) -> CheckResult:
    """One verdict: every key of ``recomputed`` equals the recorded object's (floats within ``rel_tol``).

    Extra recorded keys are not compared (records may carry more than the verifier derives). An empty
    ``recomputed`` compares nothing: UNAVAILABLE, never PASS.
    """
    if not recomputed:
        return unavailable(check_id, subject, f"{what}: nothing was recomputed to compare")
    if not isinstance(recorded, dict):
        return failed(check_id, subject, f"{what}: recorded value is not an object", recorded=recorded,
                      recomputed=recomputed)
    bad = [k for k in recomputed if k not in recorded or not same_value(recorded[k], recomputed[k], rel_tol=rel_tol)]
    tol = f"rel {rel_tol:g}"
    if not bad:
        return passed(check_id, subject, recorded={k: recorded[k] for k in recomputed}, recomputed=recomputed,
                      tolerance=tol, reason=f"{what} recomputed from raw fields")
    detail = "; ".join(f"{k}: recorded {recorded.get(k, '<absent>')!r:.60} but recomputed {recomputed[k]!r:.60}"
                       for k in bad[:3])
    return failed(check_id, subject, f"{what} differs ({detail})", recorded={k: recorded.get(k) for k in bad},
                  recomputed={k: recomputed[k] for k in bad}, tolerance=tol)


def fixture_records(f: ArchiveFiles) -> list[tuple[str, dict]]:
    """(path, record) of every fixture record of the compare, energy, profile and qualify phases.

    The records are parsed once per archive and the same objects are handed to every caller (some twenty
    per archive: parsing them each time was a quarter of the verifier's CPU), so a check must never change
    one (tests/verify/test_parallel_verify.py runs every check over records that refuse changes). The
    list itself is new on each call.
    """
    cached = f.shared.get("fixture_records")
    if cached is None:
        cached = []
        for rel in sorted(f.content):
            if rel.endswith(".json.gz") and rel.split("/")[0] in ("compare", "energy", "profile", "qualify"):
                rec = f.json(rel)
                if isinstance(rec, dict) and "buffer_inventory" in rec and "metadata" in rec:
                    cached.append((rel, rec))
        f.shared["fixture_records"] = cached
    return list(cached)




def qualify_records(f: ArchiveFiles) -> list[str]:
    """Archive paths of the fresh-process qualification records (``qualify/draw-XX.json.gz`` with a
    ``fixture`` block); in-process records (``rev88 qualify --in-process``, the CPU default) have none."""
    return [rel for rel in all_qualify_records(f) if isinstance(f.json(rel).get("fixture"), dict)]


def all_qualify_records(f: ArchiveFiles) -> list[str]:
    """Archive paths of every qualification draw record present."""
    return [p for i in range(DRAW_COUNT) if f.has(p := f"qualify/draw-{i:02d}.json.gz")]


def stored_sha(f: ArchiveFiles, rel: str) -> str | None:
    """sha256 of the stored bytes of a verified member (from the manifest), else None."""
    entry = f.stored_entry(rel)
    return None if entry is None else entry["sha256"]


def json_record(f: ArchiveFiles, rel: str) -> dict | None:
    """A verified member parsed as a JSON object, or None when the archive lacks it."""
    if not f.has(rel):
        return None
    obj = f.json(rel)
    return obj if isinstance(obj, dict) else None


def frozen_draw_metadata(draw: int) -> dict | None:
    """``metadata`` of the original's ``results/draw-XX.json`` in the verified frozen reference.

    Raises:
        HostReferenceError: the frozen reference is missing or altered on this host
            (:func:`verify.host.frozen_reference`).
    """
    rel = f"results/draw-{draw:02d}.json"
    rec = frozen_reference().json(rel)
    return rec.get("metadata") if isinstance(rec, dict) else None


def frozen_predictions_sha(draw: int) -> str | None:
    """The original's ``predictions_sha256`` (payload) for a draw, from the verified frozen reference.

    Raises:
        HostReferenceError: the frozen reference is missing or altered on this host.
    """
    md = frozen_draw_metadata(draw)
    return None if md is None else get_str(md, "predictions_sha256", f"results/draw-{draw:02d}.json")


def frozen_smoke_predictions_sha() -> str | None:
    """The original's API-smoke ``predictions_sha256`` (``cache-audit/cuda-validation.json``, spec 9.6).

    Raises:
        HostReferenceError: the frozen reference is missing or altered on this host.
    """
    rel = "cache-audit/cuda-validation.json"
    return get_str(frozen_reference().json(rel), "api_cli_smoke.metadata.predictions_sha256", rel)
