"""Energy phase of a run archive: each record against the protocol settings it states, and the
summaries (``interleaved.json.gz``, ``original-summary.json.gz``) recomputed from raw stamps.

A fixture record's ``energy.settings.mode`` says which protocol wrote it:

* ``original`` (spec 5): 3 trials, ~5 s active windows (invocations = ceil(5000 /
  calibration_ms), at most 1000), 3 s settle, 3 s idle. The settings must be exactly those.
* ``trial`` (one interleaved trial, docs/evidence-format.md): invocations =
  ceil(active_seconds × 1000 / calibration_ms); settle and idle are the record's own
  ``settings``, which must equal the phase's ``interleaved.json.gz`` settings and the job's
  ``<stem>.energy-config.json``; stamps are aligned to counter updates (``polls`` ≥ 2).

Trial figures are recomputed with :func:`bundle.energy.recompute_trial`; summaries with
:func:`bundle.energy.summarise` and :func:`bundle.energy.ratio_of_means` (the writer's pure
arithmetic; no torch).
"""

from __future__ import annotations

import math
from typing import Any

from bundle import energy as en
from verify.checks import energy
from verify.checks.run_common import compare_fields, json_record, stored_sha
from verify.integrity import ArchiveFiles
from verify.records import get, get_dict, get_float, get_int, get_list, get_str
from verify.result import CheckResult, check_equal, check_true, failed, guarded

IDLE_SLACK_S = 0.1
"""An idle window may be this much shorter than the requested idle time (the original's
verifier accepted 2.9 s for 3 s)."""

ORIGINAL_PROTOCOL = {"trials": en.ORIGINAL_TRIALS, "target_ms": en.ORIGINAL_TARGET_MS,
                     "settle_seconds": en.ORIGINAL_SETTLE_S, "idle_seconds": en.ORIGINAL_IDLE_S}
INTERLEAVED_KEYS = ("settle_seconds", "idle_seconds", "active_seconds", "sample_interval_s")
RATIO_KEYS = ("idle_adjusted_mj_per_task", "unadjusted_mj_per_task", "cuda_ms_per_task")
BASELINE = ":4096:8"
WORKSPACES = (":4096:8", ":16:8", ":0:0")


def check_record_energy(rec: dict, *, subject: str, where: str) -> list[CheckResult]:
    """The ``energy`` object of one fixture record, against the protocol its settings name."""
    e = get_dict(rec, "energy", where)
    settings = get_dict(e, "settings", where)
    mode = get_str(settings, "mode", where)
    out = energy.check_hardware(get_dict(e, "hardware", where), subject=subject, where=where)
    out.append(check_equal("energy.hardware.uuid", subject, get(e, "hardware.uuid", str, where),
                           get(rec, "hardware.uuid", str, where), what="NVML handle uuid vs the fixture's device"))
    if mode == "original":
        stated = {k: settings.get(k) for k in ORIGINAL_PROTOCOL}
        out.append(check_true("energy.settings.original_protocol", subject,
                              all(isinstance(stated[k], int | float) and stated[k] == v
                                  for k, v in ORIGINAL_PROTOCOL.items()),
                              f"original-protocol record states {stated}, the original protocol is {ORIGINAL_PROTOCOL}",
                              recorded=stated))
        return out + energy.check_energy_block(e, subject=subject, where=where, trials_expected=en.ORIGINAL_TRIALS)
    if mode != "trial":
        return out + [failed("energy.settings.mode", subject, f"unknown energy mode {mode!r}: expected 'original' "
                             "or 'trial'", recorded=mode)]
    calibration = get_float(e, "calibration_ms", where)
    active_s = get_float(settings, "active_seconds", where)
    repeats = get_int(e, "repeats_per_trial", where)
    out.append(check_equal("energy.repeats_per_trial", subject, repeats,
                           max(1, math.ceil(active_s * 1000.0 / calibration)),
                           what="invocations = ceil(active_seconds × 1000 / calibration_ms)"))
    trials = get_list(e, "trials", where)
    out.append(check_equal("energy.trial_count", subject, len(trials), 1, what="one trial per interleaved record"))
    settle = get_float(settings, "settle_seconds", where)
    min_idle = get_float(settings, "idle_seconds", where) - IDLE_SLACK_S
    for i, trial in enumerate(trials):
        w = f"{where}: trials.{i}"
        out += energy.check_trial(trial, index=get_int(settings, "trial", where), repeats=repeats, subject=subject,
                                  where=w, settle_s=settle, min_idle_s=min_idle)
        if get(settings, "align_stamps", bool, where):
            polls = [get(trial, f"{win}.{end}.polls", int, w) for win in ("idle_before", "active", "idle_after")
                     for end in ("start", "end")]
            out.append(check_true("energy.interval.aligned", f"{subject} trial {i}", min(polls) >= 2,
                                  f"align_stamps is set but a stamp took {min(polls)} poll(s): it was not taken "
                                  "at a counter update edge", recomputed=polls))
    for flag in ("repeat_predictions_equal", "repeat_state_hashes_equal"):
        out.append(check_equal(f"energy.{flag}", subject, get(e, flag, None, where), True, what=flag))
    return out


def _figures(rec: dict, where: str) -> list[dict[str, Any]]:
    return [en.recompute_trial(t) for t in get_list(rec, "energy.trials", where)]


def check_interleaved(f: ArchiveFiles, rel: str = "energy/interleaved.json.gz") -> list[CheckResult]:
    """One design's summary (``energy/interleaved.json.gz``, or ``interleaved-bNN.json.gz`` of a
    further board): order, records, per-trial figures, summaries and ratios."""
    summary = json_record(f, rel)
    if summary is None:
        return []
    out: list[CheckResult] = []
    settings = get_dict(summary, "settings", rel)
    rounds = get_int(settings, "rounds", rel)
    trials = get_list(summary, "trials", rel)
    order = [(get_int(t, "round", rel), get_str(t, "workspace", rel)) for t in trials]
    expected = [(r, WORKSPACES[(r + i) % 3]) for r in range(rounds) for i in range(3)]
    out.append(check_equal("energy.interleaved.order", rel, order, expected,
                           what="(round, workspace) order: round r starts at config r mod 3"))
    values: dict[str, dict[str, list[float]]] = {ws: {k: [] for k in en.PER_TASK_KEYS} for ws in WORKSPACES}
    uuid = get_str(summary, "gpu.uuid", rel)
    for i, t in enumerate(trials):
        w = f"{rel}: trials.{i}"
        ws, r = get_str(t, "workspace", w), get_int(t, "round", w)
        record_rel = f"energy/{get_str(t, 'record', w)}"
        subject = f"{record_rel} {ws}"
        rec = json_record(f, record_rel)
        if rec is None:
            out.append(failed("energy.interleaved.record", subject, f"{record_rel} named by {rel} is not in the archive"))
            continue
        out.append(check_equal("energy.interleaved.record_sha256", subject, get_str(t, "record_sha256", w),
                               stored_sha(f, record_rel), what="record_sha256 vs the stored record"))
        out.append(check_equal("energy.interleaved.position", subject, get(t, "position", int, w), i, what="position"))
        e = get_dict(rec, "energy", record_rel)
        own = get_dict(e, "settings", record_rel)
        want = {"mode": "trial", "trial": r, **{k: settings.get(k) for k in INTERLEAVED_KEYS}}
        out.append(compare_fields("energy.interleaved.trial_settings", subject, own, want,
                                  what="the trial's own settings vs the phase settings"))
        cfg_rel = record_rel[: -len(".json.gz")] + ".energy-config.json"
        cfg = json_record(f, cfg_rel)
        if cfg is None:
            out.append(failed("energy.interleaved.energy_config", subject, f"{cfg_rel} is not in the archive"))
        else:
            out.append(compare_fields("energy.interleaved.energy_config", cfg_rel, cfg,
                                      {"trial": r, "workspace_config": ws, **{k: settings.get(k) for k in INTERLEAVED_KEYS}},
                                      what="the job's --energy-config"))
        out.append(check_equal("energy.interleaved.same_gpu", subject, get_str(e, "hardware.uuid", record_rel), uuid,
                               what="trial GPU uuid vs the phase's GPU"))
        fig = _figures(rec, record_rel)[0]
        want_row = {"invocations": get_int(e, "repeats_per_trial", record_rel),
                    "calibration_ms": get_float(e, "calibration_ms", record_rel),
                    **{k: fig[k] for k in ("paired_idle_w", *en.PER_TASK_KEYS)}}
        out.append(compare_fields("energy.interleaved.trial", subject, t, want_row,
                                  what="trial row recomputed from the record's raw stamps"))
        for k in en.PER_TASK_KEYS:
            values.setdefault(ws, {key: [] for key in en.PER_TASK_KEYS})[k].append(fig[k])
    if "executed_order" in summary or "next_trial_prestarted" in settings:
        # since 2026-12-01: the order the trials ran in, from their completion stamps; a deviation is declared
        from bundle.phases.energy import ORDER_DEVIATION, executed_order  # noqa: PLC0415

        stamps = [(json_record(f, f"energy/{get_str(t, 'record', rel)}") or {}).get("completed_at_utc", "")
                  for t in trials]
        ran = executed_order(stamps)
        out.append(check_equal("energy.interleaved.executed_order", rel,
                               {"executed_order": summary.get("executed_order"),
                                "order_deviation": summary.get("order_deviation")},
                               {"executed_order": ran,
                                "order_deviation": None if ran == list(range(len(trials))) else ORDER_DEVIATION},
                               what="the order the trials ran in (their records' completion stamps), and the "
                                    "deviation from the design order declared where there is one"))
    recorded = get_dict(summary, "summaries", rel)
    for ws in WORKSPACES:
        for k in en.PER_TASK_KEYS:
            if len(values[ws][k]) >= 2:
                out.append(compare_fields(f"energy.interleaved.summary.{k}", f"{rel} {ws}",
                                          get(recorded, (ws, k), None, rel), en.summarise(values[ws][k]),
                                          what=f"{ws} {k} summary"))
    ratios = get_dict(summary, "ratios_vs_baseline", rel)
    for ws in WORKSPACES:
        if ws == BASELINE:
            continue
        for k in RATIO_KEYS:
            if len(values[ws][k]) >= 2 and len(values[BASELINE][k]) >= 2:
                out.append(compare_fields(f"energy.interleaved.ratio.{k}", f"{rel} {ws}", get(ratios, (ws, k), None, rel),
                                          en.ratio_of_means(values[ws][k], values[BASELINE][k]),
                                          what=f"{ws}/{BASELINE} {k} ratio with Fieller interval"))
    return out


def check_original_summary(f: ArchiveFiles) -> list[CheckResult]:
    """``energy/original-summary.json.gz`` recomputed from ``original.json.gz``'s raw stamps."""
    rel = "energy/original-summary.json.gz"
    summary = json_record(f, rel)
    if summary is None:
        return []
    record_rel = f"energy/{get_str(summary, 'record', rel)}"
    rec = json_record(f, record_rel)
    if rec is None:
        return [failed("energy.original_summary.record", rel, f"{record_rel} named by {rel} is not in the archive")]
    ws = get_str(summary, "workspace", rel)
    out = [check_equal("energy.original_summary.workspace", rel, ws, BASELINE,
                       what="the original protocol ran the library default :4096:8")]
    figures = _figures(rec, record_rel)
    for k in en.PER_TASK_KEYS:
        out.append(compare_fields(f"energy.original_protocol.summary.{k}", f"{rel} {ws}",
                                  get(summary, ("summaries", k), None, rel), en.summarise([x[k] for x in figures]),
                                  what=f"original-protocol {k} summary"))
    return out


def design_summaries(f: ArchiveFiles) -> list[str]:
    """The per-board design summaries present: ``interleaved.json.gz`` then ``interleaved-b01.json.gz`` …"""
    extra = sorted(rel for rel in f.content if rel.startswith("energy/interleaved-b") and rel.endswith(".json.gz"))
    return (["energy/interleaved.json.gz"] if f.has("energy/interleaved.json.gz") else []) + extra


def check_between_boards(f: ArchiveFiles) -> list[CheckResult]:
    """``energy/between-boards.json.gz`` recomputed from the per-board summaries (``bundle.phases.energy
    .between_boards``'s arithmetic); designs on distinct boards; absent with one design, required with more."""
    rel = "energy/between-boards.json.gz"
    designs = design_summaries(f)
    spread = json_record(f, rel)
    if spread is None:
        if len(designs) > 1:
            return [failed("energy.between_boards", rel, f"{len(designs)} per-board designs but no {rel}")]
        return []
    from bundle.phases.energy import between_boards  # noqa: PLC0415  (pure arithmetic; no torch)

    def one() -> list[CheckResult]:
        summaries = [json_record(f, d) or {} for d in designs]
        want = between_boards(summaries)
        keys = ("boards", "per_board_means", "per_board_idle_adjusted_ratio_vs_baseline", "spread_of_means",
                "spread_of_ratios")
        return [compare_fields("energy.between_boards", rel, {k: spread.get(k) for k in keys},
                               {k: want[k] for k in keys}, what="between-board spread from the per-board designs")]
    return guarded("energy.between_boards", rel, one)


def check_energy_phase(f: ArchiveFiles) -> list[CheckResult]:
    """Family entry: the phase summaries (the records themselves are checked with the fixtures)."""
    out: list[CheckResult] = []
    for rel in design_summaries(f):
        out += check_interleaved(f, rel)
    return out + check_between_boards(f) + check_original_summary(f)
