"""``rev88 reproduce`` durations against the records' own stamps, and per-board placement.

Durations (``environment.json.gz`` → ``reproduce_invocations``, written since 2026-12-01):

* each invocation's ``total_s`` is no less than the sum of its phases' ``duration_s`` and no
  more than its own start-to-finish span (stamps are ISO-8601 UTC, 1 s slack for rounding);
* each phase that ran has ``duration_s`` equal to its finish minus start stamp (±1 s), phases
  in protocol order without overlap, inside the invocation;
* every phase entry with stamps (``ran``, ``failed``, ``interrupted``) has ``duration_s`` equal to
  its stamps, lies inside its invocation and after the phase before it; an invocation's ``status``
  agrees with its phases (``complete``: only ran/skipped phases; ``failed``/``interrupted``: the last
  phase has that status); invocations are listed in the order they ran and do not overlap;
* every completion stamp in a phase's records (``completed_at_utc``, ``finished_at_utc``,
  ``recorded_at_utc`` at the top of each JSON member of the phase folder) falls inside the phase's
  span in the invocation that completed it (±2 s), or in a span of that phase in an earlier
  invocation that failed or was interrupted in it after the phase last completed (a resume keeps
  what such an invocation finished). A phase whose summary lists the runs it resumed
  (``resumed_runs``, the profile) is held to that list: its other runs' records must lie in the
  completing span, the resumed ones' in an earlier failed or interrupted span; resumed records in no
  recorded span but between the previous invocation's finish and the completing span's start came
  from an invocation that recorded nothing (killed by SIGKILL, or from before interrupted
  invocations were recorded): UNAVAILABLE, with the count; anywhere else, FAIL. Every phase
  completed after a resume (since 2026-12-02) carries such a list in ``<phase>/resumed.json.gz``
  (written by ``bundle.archive.RunArchive.phase``: the staged JSON records it kept byte for
  byte); :func:`check_resumed_lists` checks its form and that each listed run is a record of the
  phase.
* every phase folder of the archive was run by a recorded invocation, or by the phase's own
  command (``rev88 compare --out RUN``; its ``executions`` entry lists the phase, no invocation
  does): a phase that neither lists FAILs (``reproduce.timing.phases_ran``).

Placement (fixture records' ``placement``, since 2026-12-01): a job given a board ran on it
(``board_uuid == given_board_uuid`` on CUDA), the given board is one the invocations list, and
``CUDA_VISIBLE_DEVICES`` is the given UUID; qualification records' ``concurrency`` is
consistent with the draws' spans (``overlapping_draws`` recomputed, ``ran_alone``). When every
invocation placed its jobs (``boards`` listed), every fixture record must name its given board
(``placement.recorded``).

Archives without these keys (the original, and ours before 2026-12-01) get no verdict here.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from protocol.archive_format import RESUMED_NAME, RESUMED_SCOPE, SCHEMA_VERSION
from verify.checks.run_common import json_record
from verify.integrity import ArchiveFiles
from verify.records import get_dict, get_list
from verify.result import CheckResult, check_equal, check_true, guarded, unavailable

PHASE_ORDER = ("validate", "compare", "qualify", "energy", "profile")
STAMP_KEYS = ("completed_at_utc", "finished_at_utc", "recorded_at_utc")
SLACK_S = 1.0
#: A phase's duration_s against its own start and finish stamps (ISO-8601 with microseconds; the
#: writer takes all three from one clock reading each): 50 ms.
DURATION_SLACK_S = 0.05
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
    spans: dict[str, list[tuple[int, float, float]]] = {}  # the failed or interrupted spans of each phase
    ran_at: dict[str, list[tuple[int, float]]] = {}  # the invocations in which each phase ran to completion
    finishes: list[float] = []
    for i, inv in enumerate(invocations):
        try:
            finishes.append(_t(inv.get("finished_at_utc"), rel))
            for p in get_list(inv, "phases", rel):
                if p.get("status") in ("failed", "interrupted"):
                    spans.setdefault(str(p.get("phase")), []).append(
                        (i, _t(p.get("started_at_utc"), rel), _t(p.get("finished_at_utc"), rel)))
                elif p.get("status") == "ran":
                    ran_at.setdefault(str(p.get("phase")), []).append((i, _t(p.get("started_at_utc"), rel)))
        except (ValueError, TypeError, AttributeError):
            finishes.append(float("nan"))  # reported by the per-invocation checks below
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
            if i > 0 and finishes[i - 1] == finishes[i - 1]:
                v.append(check_true("reproduce.timing.chronology", where, start >= finishes[i - 1] - SLACK_S,
                                    "the invocation starts before the one listed before it finished: "
                                    "invocations are appended in the order they ran and never overlap",
                                    recomputed=round(start - finishes[i - 1], 3)))
            statuses = [p.get("status") for p in phases]
            stopped = inv.get("status") in ("failed", "interrupted")

            def done_or_skipped(st: Any) -> bool:
                return st == "ran" or str(st).startswith("skipped")
            # complete: only ran/skipped phases; failed/interrupted: ran/skipped phases, then at most one
            # phase of that status (none when it was stopped between phases)
            body = statuses[:-1] if stopped and statuses and statuses[-1] == inv.get("status") else statuses
            v.append(check_true(
                "reproduce.timing.status", where,
                inv.get("status") in ("complete", "failed", "interrupted") and all(map(done_or_skipped, body)),
                f"invocation status {inv.get('status')!r} against its phases' {statuses}: a complete invocation "
                "has only ran/skipped phases; a failed or interrupted one may end with one phase of that status",
                recorded=inv.get("status")))
            previous_end = start - SLACK_S
            for p in phases:
                if p.get("status") not in ("ran", "failed", "interrupted"):
                    continue
                ps, pf = _t(p.get("started_at_utc"), where), _t(p.get("finished_at_utc"), where)
                name = p.get("phase")
                v.append(check_true("reproduce.timing.phase", f"{where} {name}",
                                    abs((pf - ps) - float(p["duration_s"])) <= DURATION_SLACK_S
                                    and ps >= previous_end and pf <= finish + SLACK_S,
                                    f"phase {name} ({p.get('status')}): duration_s {p['duration_s']} against its "
                                    f"stamps {pf - ps:.1f} s, or outside the invocation / overlapping the phase before",
                                    recorded=p["duration_s"], recomputed=round(pf - ps, 3)))
                previous_end = pf - SLACK_S
                if p.get("status") != "ran":
                    continue
                last_run[name] = (i, ps, pf)
                devices = sorted({str(r.get("device")) for r in _phase_fixture_records(f, name)})
                if devices:
                    v.append(check_equal("reproduce.timing.device", f"{where} {name}", inv.get("device"),
                                         devices[0] if len(devices) == 1 else "one device for the phase's records",
                                         what="the invocation's --device against the device its phase's fixture "
                                              "records ran on"))
            return v
        out += guarded("reproduce.timing.error", where, one)
    present = sorted({rel.split("/")[0] for rel in f.content if "/" in rel and rel.split("/")[0] in PHASE_ORDER})
    # A phase command run on its own (`rev88 compare --out RUN`) records its execution but no invocation;
    # a phase that neither an invocation ran nor an execution lists came from nowhere the archive records.
    executed = {str(ph) for e in (env.get("executions") or []) if isinstance(e, dict)
                for ph in (e.get("phases") or []) if isinstance(e.get("phases"), list)}
    missing = [p for p in present if p not in last_run and p not in executed]
    out.append(check_true("reproduce.timing.phases_ran", rel, not missing,
                          f"phase(s) {missing} are in the archive but neither a recorded invocation ran them nor "
                          "an execution of the phase's own command lists them",
                          recorded=sorted(last_run), recomputed=present))
    for name, (i, ps, pf) in sorted(last_run.items()):
        if not any(rel_.startswith(f"{name}/") for rel_ in f.content):
            continue
        stamps = _phase_stamps(f, name)
        resumed, listed = _resumed_runs(f, name)

        def is_resumed(stamp: str, resumed: list[str] = resumed, name: str = name) -> bool:
            return any(stamp.startswith(f"{name}/{run}.") for run in resumed)
        # Spans that may have made records: the completing one, and the failed or interrupted spans of
        # the phase since it last ran to completion before (an earlier complete run was replaced). A
        # phase whose summary lists its resumed runs (profile) says which records came from those
        # earlier spans: the others must come from the completing one.
        since = max([j for j, _ in ran_at.get(name, []) if j < i], default=-1)
        earlier = [(a, b) for j, a, b in spans.get(name, []) if since < j < i]
        completing = [(ps, pf)]

        def fits(t: float, windows: list[tuple[float, float]]) -> bool:
            return any(a - RECORD_SLACK_S <= t <= b + RECORD_SLACK_S for a, b in windows)
        outside = [(s, t) for s, t in stamps
                   if not fits(t, earlier if is_resumed(s) else completing if listed else earlier + completing)]
        gap_start = finishes[i - 1] if i > 0 and finishes[i - 1] == finishes[i - 1] else float("-inf")
        unrecorded = [(s, t) for s, t in outside if is_resumed(s) and gap_start - RECORD_SLACK_S <= t <= ps]
        outside = [x for x in outside if x not in unrecorded]
        if len(stamps) == len(unrecorded):  # no stamp to place: compared nothing, so no PASS
            out.append(unavailable("reproduce.timing.record_stamps", f"{name}/ (invocation {i})",
                                   f"phase {name}'s records carry no stamp of the completing invocation to place in "
                                   "its span", recorded=0))
        else:
            out.append(check_true("reproduce.timing.record_stamps", f"{name}/ (invocation {i})", not outside,
                                  f"{len(outside)} record stamp(s) of phase {name} fall outside the spans the "
                                  f"invocations recorded for it, first {[s for s, _ in outside[:1]]}",
                                  recorded=len(stamps) - len(unrecorded)))
        if unrecorded:
            out.append(unavailable(
                "reproduce.timing.record_stamps_unrecorded", f"{name}/ (invocation {i})",
                f"{len(unrecorded)} stamp(s) of {len({s.split(' ')[0].split('.')[0] for s, _ in unrecorded})} "
                f"resumed run(s) (the phase summary's resumed_runs) lie after the previous invocation "
                f"finished and before invocation {i} started the phase, in no recorded invocation: the "
                "invocation that made them recorded nothing (killed), so no span can be checked",
                recorded=len(unrecorded)))
    return out


def check_resumed_lists(f: ArchiveFiles) -> list[CheckResult]:
    """Each ``<phase>/resumed.json.gz``: its form (schema version, the phase it sits in, the scope
    sentence, a sorted list of distinct run names) and that every listed run names a JSON record of
    the phase (``<phase>/<run>.*.json[.gz]``); what the list then means for the record stamps is
    :func:`check_reproduce_timing`'s."""
    out: list[CheckResult] = []
    for phase in PHASE_ORDER:
        rel = f"{phase}/{RESUMED_NAME}"
        rec = json_record(f, rel)
        if rec is None:
            continue
        runs = rec.get("resumed_runs")
        form = (rec.get("schema_version") == SCHEMA_VERSION and rec.get("phase") == phase
                and rec.get("scope") == RESUMED_SCOPE and set(rec) == {"schema_version", "phase", "resumed_runs", "scope"}
                and isinstance(runs, list) and runs and all(isinstance(r, str) and r for r in runs)
                and runs == sorted(set(runs)))
        out.append(check_true("phase.resumed.form", rel, form,
                              "not the writer's form: schema_version, phase (its folder), scope and a sorted, "
                              "non-empty list of distinct run names", recorded=sorted(rec)))
        if not form:
            continue
        records = [r for r in f.content if r.startswith(f"{phase}/") and r != rel and r.endswith((".json", ".json.gz"))]
        unknown = [run for run in runs if not any(r.startswith(f"{phase}/{run}.") for r in records)]
        out.append(check_true("phase.resumed.runs", rel, not unknown,
                              f"listed run(s) {unknown[:3]} name no JSON record of the phase", recorded=len(runs)))
    return out


def _resumed_runs(f: ArchiveFiles, phase: str) -> tuple[list[str], bool]:
    """Run names a phase summary (a top-level JSON member of the phase folder) lists as ``resumed_runs``,
    and whether any summary of the phase keeps such a list."""
    names: list[str] = []
    listed = False
    for rel in sorted(f.content):
        if rel.startswith(f"{phase}/") and rel.count("/") == 1 and rel.endswith((".json.gz", ".json")):
            rec = json_record(f, rel)
            if isinstance(rec, dict) and isinstance(rec.get("resumed_runs"), list):
                listed = True
                names += [str(n) for n in rec["resumed_runs"] if isinstance(n, str) and n]
    return names, listed


def _phase_fixture_records(f: ArchiveFiles, phase: str) -> list[dict]:
    """The fixture records of *phase* that name their device (``mode`` measure/profile records)."""
    out = []
    for rel in sorted(f.content):
        if rel.startswith(f"{phase}/") and rel.endswith(".json.gz"):
            rec = json_record(f, rel)
            if isinstance(rec, dict) and "buffer_inventory" in rec and isinstance(rec.get("device"), str):
                out.append(rec)
    return out


def _fixture_records(f: ArchiveFiles) -> list[tuple[str, dict]]:
    out = []
    for rel in sorted(f.content):
        if not rel.endswith(".json.gz"):
            continue
        rec = json_record(f, rel)
        if not isinstance(rec, dict):
            continue
        if "placement" in rec:
            out.append((rel, rec))
        elif isinstance(rec.get("fixture"), dict) and "placement" in rec["fixture"]:
            fx = rec["fixture"]
            device = "cuda" if (fx.get("hardware") or {}).get("cuda_available", True) else "cpu"
            out.append((rel, {"placement": fx["placement"], "device": device, "hardware": fx.get("hardware"),
                              **{k: fx[k] for k in ("mode", "profile", "timeline") if k in fx}}))
    return out


def check_placement(f: ArchiveFiles) -> list[CheckResult]:
    """Every placed job ran on the board it was given, one of the boards the run used."""
    env = json_record(f, "environment.json.gz") or {}
    invocations = env.get("reproduce_invocations") or []
    listed = {b.get("uuid") for inv in invocations for b in inv.get("boards") or []}
    out: list[CheckResult] = []
    placed = [rel for rel, rec in _fixture_records(f)
              if isinstance(rec.get("placement"), dict) and rec["placement"].get("given_board_uuid")]
    if placed:
        out.append(check_true("placement.invocation", "environment.json.gz", bool(listed),
                              f"{len(placed)} record(s) were given a board (first {placed[0]}) but no reproduce "
                              "invocation lists the run's boards", recorded=sorted(listed)))
    if invocations and all(inv.get("boards") for inv in invocations):
        # every invocation placed its jobs (--gpus): every fixture record must say which board it was given
        for rel in sorted(f.content):
            if rel.endswith(".json.gz") and rel.split("/")[0] in ("compare", "energy", "profile", "qualify", "validate"):
                rec = json_record(f, rel)
                if not isinstance(rec, dict) or not ("buffer_inventory" in rec or "fixture" in rec):
                    continue
                pl = rec.get("placement") if "placement" in rec else (rec.get("fixture") or {}).get("placement")
                out.append(check_true("placement.recorded", rel, isinstance(pl, dict) and bool(pl.get("given_board_uuid")),
                                      "the run placed every job on a board (--gpus), but this record names none",
                                      recorded=pl))
    for rel, rec in _fixture_records(f):
        def one(rel: str = rel, rec: dict = rec) -> list[CheckResult]:
            pl = get_dict(rec, "placement", rel)
            given = pl.get("given_board_uuid")
            cuda = rec.get("device", "cuda") == "cuda"
            hw = rec.get("hardware") if isinstance(rec.get("hardware"), dict) else {}
            # the board found is the fixture's own device, whatever it was given
            v = [check_true("placement.found", rel,
                            not cuda or not hw.get("uuid") or (pl.get("board_uuid") == hw.get("uuid")
                                                               and pl.get("nvml_pci_bus_id") == hw.get("nvml_pci_bus_id")),
                            f"placement names board {pl.get('board_uuid')} ({pl.get('nvml_pci_bus_id')}) but the record's "
                            f"device is {hw.get('uuid')} ({hw.get('nvml_pci_bus_id')})",
                            recorded=pl.get("board_uuid"), recomputed=hw.get("uuid"))]
            v += _check_gpu_lock(rel, rec, pl)
            if given is None:
                return v
            v.append(check_true("placement.board", rel,
                                pl.get("cuda_visible_devices") == given and (not cuda or pl.get("board_uuid") == given)
                                and given in listed,
                                f"given board {given}, CUDA_VISIBLE_DEVICES {pl.get('cuda_visible_devices')}, found "
                                f"{pl.get('board_uuid')}, run's boards {sorted(b for b in listed if b)}",
                                recorded=pl.get("board_uuid"), recomputed=given))
            return v
        out += guarded("placement.error", rel, one)
    out += guarded("qualify.concurrency.error", "qualify/", lambda: _check_concurrency(f, invocations))
    return out


def _check_gpu_lock(rel: str, rec: dict, pl: dict) -> list[CheckResult]:
    """A fixture's GPU lock against its phase and its own timeline (``bundle.fixture.acquire_gpu_lock``).

    Energy and measure jobs hold the lock for the whole process (``scope`` ``process``, absent in
    records before the scope existed); only profile-mode jobs may share it (``range``), and those
    must have made it exclusive before their warm-ups (timeline step ``gpu_lock_exclusive`` after
    ``gpu_lock_acquired`` and before ``profile_range_done``, at the recorded time).
    """
    lock = pl.get("gpu_lock")
    if not isinstance(lock, dict):
        return []
    steps = {}
    for step in get_list(get_dict(rec, "timeline", rel), "steps", rel) if isinstance(rec.get("timeline"), dict) else []:
        steps.setdefault(step.get("step"), step.get("at_s"))
    scope = lock.get("scope", "process")
    # profile mode: the record's mode, or (a profile run's copy of its fixture) a profile block, which
    # fixture.profile allows in profile-mode records only
    profile = rec.get("mode") == "profile" or ("mode" not in rec and isinstance(rec.get("profile"), dict))
    exclusive = lock.get("exclusive")
    recorded = {"scope": scope, "acquired_at_s": lock.get("acquired_at_s"),
                "exclusive_at_s": exclusive.get("acquired_at_s") if isinstance(exclusive, dict) else None}
    if scope == "range":
        want_at = steps.get("gpu_lock_exclusive")
        ordered = (isinstance(want_at, (int, float)) and isinstance(steps.get("profile_range_done"), (int, float))
                   and steps.get("gpu_lock_acquired", -1.0) <= want_at <= steps["profile_range_done"])
        want = {"scope": "range" if profile else "process (a measure or energy job)",
                "acquired_at_s": steps.get("gpu_lock_acquired"),
                "exclusive_at_s": want_at if ordered else "after gpu_lock_acquired, before profile_range_done"}
    else:
        want = {"scope": scope if scope == "process" else "process or range",
                "acquired_at_s": steps.get("gpu_lock_acquired"), "exclusive_at_s": None}
    if not steps:
        recorded.pop("acquired_at_s")
        want.pop("acquired_at_s")
    return [check_equal("placement.gpu_lock", rel, recorded, want,
                        what="lock scope allowed for the phase; taken (and made exclusive, for a shared profile "
                             "lock, before the warm-ups) at the times the process's timeline gives")]


def _check_concurrency(f: ArchiveFiles, invocations: list) -> list[CheckResult]:
    """Overlaps recomputed per qualification invocation; spans inside the phase; jobs at once <= jobs."""
    from verify.arith.timing import overlaps  # noqa: PLC0415

    groups: dict[Any, dict[int, tuple[str, dict]]] = {}
    for rel in sorted(f.content):
        if rel.startswith("qualify/draw-") and rel.endswith(".json.gz"):
            rec = json_record(f, rel) or {}
            c = rec.get("concurrency")
            if isinstance(c, dict):
                groups.setdefault(c.get("invocation_started_at_utc"), {})[rec.get("draw_index")] = (rel, c)
    ran = [p for inv in invocations for p in inv.get("phases") or [] if p.get("phase") == "qualify"
           and p.get("status") == "ran"]
    out: list[CheckResult] = []
    for key, members in sorted(groups.items(), key=lambda kv: str(kv[0])):
        spans = {d: (float(c["started_s"]), float(c["finished_s"])) for d, (_, c) in members.items()}
        beside = overlaps(spans)
        for draw, (rel, c) in sorted(members.items()):
            s1, _ = spans[draw]
            peers = beside[draw]
            at_once = 1 + sum(1 for j, (s2, e2) in spans.items() if j != draw and s2 <= s1 < e2)
            out.append(check_equal("qualify.concurrency", rel,
                                   {"overlapping_draws": c.get("overlapping_draws"), "ran_alone": c.get("ran_alone"),
                                    "within_jobs": at_once <= int(c.get("jobs") or 0)},
                                   {"overlapping_draws": peers, "ran_alone": not peers, "within_jobs": True},
                                   what="draws that ran beside this one (from every draw's span in the same "
                                        "invocation), no more at once than its jobs"))
        if ran and key is not None:
            span = max(e for _, e in spans.values()) - min(s for s, _ in spans.values())
            longest = max(float(p["duration_s"]) for p in ran)
            out.append(check_true("qualify.concurrency.inside_phase", f"qualify/ ({key})", span <= longest + SLACK_S,
                                  f"the draws' spans cover {span:.1f} s, more than the qualify phase took "
                                  f"({longest:.1f} s)", recorded=round(span, 3), recomputed=longest))
    return out
