"""``rev88 reproduce`` durations against the records' own stamps, and per-board placement.

Durations (``environment.json.gz`` → ``reproduce_invocations``, written since 2026-12-01):

* each invocation's ``total_s`` is no less than the sum of its phases' ``duration_s`` and no
  more than its own start-to-finish span (stamps are ISO-8601 UTC, 1 s slack for rounding);
* each phase that ran has ``duration_s`` equal to its finish minus start stamp (±1 s), phases
  in protocol order without overlap, inside the invocation;
* every completion stamp in that phase's records (``completed_at_utc``, ``finished_at_utc``,
  ``recorded_at_utc`` at the top of each JSON member of the phase folder) falls inside the
  phase's span of the invocation that ran it (±2 s), unless a later invocation re-ran it.

Placement (fixture records' ``placement``, since 2026-12-01): a job given a board ran on it
(``board_uuid == given_board_uuid`` on CUDA), the given board is one the invocations list, and
``CUDA_VISIBLE_DEVICES`` is the given UUID; qualification records' ``concurrency`` is
consistent with the draws' spans (``overlapping_draws`` recomputed, ``ran_alone``).

Archives without these keys (the original, and ours before 2026-12-01) get no verdict here.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from verify.checks.run_common import json_record
from verify.integrity import ArchiveFiles
from verify.records import get_dict, get_list
from verify.result import CheckResult, check_equal, check_true, guarded

PHASE_ORDER = ("validate", "compare", "qualify", "energy", "profile")
STAMP_KEYS = ("completed_at_utc", "finished_at_utc", "recorded_at_utc")
SLACK_S = 1.0
RECORD_SLACK_S = 2.0


def _t(text: Any, where: str) -> float:
    if not isinstance(text, str):
        raise ValueError(f"{where}: stamp {text!r} is not an ISO-8601 string")
    return datetime.fromisoformat(text).timestamp()


def _phase_stamps(f: ArchiveFiles, phase: str) -> list[tuple[str, float]]:
    out = []
    for rel in sorted(f.content):
        if not rel.startswith(f"{phase}/") or not rel.endswith((".json.gz", ".json")):
            continue
        try:
            rec = json.loads(f.read(rel))
        except (ValueError, UnicodeDecodeError):
            continue  # malformed JSON is reported by the JSON checks
        if isinstance(rec, dict):
            out += [(f"{rel} {k}", _t(rec[k], rel)) for k in STAMP_KEYS if isinstance(rec.get(k), str)]
    return out


def check_reproduce_timing(f: ArchiveFiles) -> list[CheckResult]:
    """The invocations' durations against their stamps and the phases' record stamps."""
    rel = "environment.json.gz"
    env = json_record(f, rel)
    if not env or "reproduce_invocations" not in env:
        return []
    invocations = get_list(env, "reproduce_invocations", rel)
    out: list[CheckResult] = []
    last_run: dict[str, tuple[int, float, float]] = {}
    for i, inv in enumerate(invocations):
        where = f"{rel} reproduce_invocations.{i}"

        def one(inv: dict = inv, i: int = i, where: str = where) -> list[CheckResult]:
            start, finish = _t(inv.get("started_at_utc"), where), _t(inv.get("finished_at_utc"), where)
            phases = get_list(inv, "phases", where)
            ran = [p for p in phases if p.get("status") == "ran"]
            total = float(inv.get("total_s"))
            v = [check_true("reproduce.timing.total", where,
                            sum(float(p["duration_s"]) for p in ran) - SLACK_S <= total <= finish - start + SLACK_S,
                            f"total_s {total} is not between the phases' sum and the invocation's span "
                            f"{finish - start:.1f} s", recorded=total, recomputed=round(finish - start, 3)),
                 check_equal("reproduce.timing.order", where, [p.get("phase") for p in phases],
                             [p for p in PHASE_ORDER if p in {q.get("phase") for q in phases}],
                             what="phases in protocol order")]
            previous_end = start - SLACK_S
            for p in ran:
                ps, pf = _t(p.get("started_at_utc"), where), _t(p.get("finished_at_utc"), where)
                name = p.get("phase")
                v.append(check_true("reproduce.timing.phase", f"{where} {name}",
                                    abs((pf - ps) - float(p["duration_s"])) <= SLACK_S
                                    and ps >= previous_end and pf <= finish + SLACK_S,
                                    f"phase {name}: duration_s {p['duration_s']} against its stamps "
                                    f"{pf - ps:.1f} s, or outside the invocation / overlapping the phase before",
                                    recorded=p["duration_s"], recomputed=round(pf - ps, 3)))
                previous_end = pf - SLACK_S
                last_run[name] = (i, ps, pf)
            return v
        out += guarded("reproduce.timing.error", where, one)
    for name, (i, ps, pf) in sorted(last_run.items()):
        if not any(rel_.startswith(f"{name}/") for rel_ in f.content):
            continue
        stamps = _phase_stamps(f, name)
        outside = [s for s, t in stamps if not ps - RECORD_SLACK_S <= t <= pf + RECORD_SLACK_S]
        out.append(check_true("reproduce.timing.record_stamps", f"{name}/ (invocation {i})", not outside,
                              f"{len(outside)} record stamp(s) of phase {name} fall outside the span the "
                              f"invocation recorded for it, first {outside[:1]}", recorded=len(stamps)))
    return out


def _fixture_records(f: ArchiveFiles) -> list[tuple[str, dict]]:
    out = []
    for rel in sorted(f.content):
        if not rel.endswith(".json.gz"):
            continue
        rec = json_record(f, rel)
        if not isinstance(rec, dict):
            continue
        if isinstance(rec.get("placement"), dict):
            out.append((rel, rec))
        elif isinstance((rec.get("fixture") or {}).get("placement"), dict):
            out.append((rel, {"placement": rec["fixture"]["placement"], "device": "cuda"}))
    return out


def check_placement(f: ArchiveFiles) -> list[CheckResult]:
    """Every placed job ran on the board it was given, one of the boards the run used."""
    env = json_record(f, "environment.json.gz") or {}
    listed = {b.get("uuid") for inv in env.get("reproduce_invocations") or [] for b in inv.get("boards") or []}
    out: list[CheckResult] = []
    for rel, rec in _fixture_records(f):
        def one(rel: str = rel, rec: dict = rec) -> list[CheckResult]:
            pl = get_dict(rec, "placement", rel)
            given = pl.get("given_board_uuid")
            if given is None:
                return []
            cuda = rec.get("device", "cuda") == "cuda"
            v = [check_true("placement.board", rel,
                            pl.get("cuda_visible_devices") == given and (not cuda or pl.get("board_uuid") == given)
                            and (not listed or given in listed),
                            f"given board {given}, CUDA_VISIBLE_DEVICES {pl.get('cuda_visible_devices')}, found "
                            f"{pl.get('board_uuid')}, run's boards {sorted(b for b in listed if b)}",
                            recorded=pl.get("board_uuid"), recomputed=given)]
            return v
        out += guarded("placement.error", rel, one)
    spans, concurrency = {}, {}
    for rel in sorted(f.content):
        if rel.startswith("qualify/draw-") and rel.endswith(".json.gz"):
            rec = json_record(f, rel) or {}
            c = rec.get("concurrency")
            if isinstance(c, dict):
                spans[rec.get("draw_index")] = (float(c["started_s"]), float(c["finished_s"]))
                concurrency[rec.get("draw_index")] = (rel, c)
    for draw, (rel, c) in sorted(concurrency.items()):
        s1, e1 = spans[draw]
        peers = sorted(j for j, (s2, e2) in spans.items() if j != draw and s2 < e1 and s1 < e2)
        out.append(check_equal("qualify.concurrency", rel,
                               {"overlapping_draws": c.get("overlapping_draws"), "ran_alone": c.get("ran_alone")},
                               {"overlapping_draws": peers, "ran_alone": not peers},
                               what="draws that ran beside this one, from every draw's recorded span"))
    return out
