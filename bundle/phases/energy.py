"""The energy phase: the original 3-trial protocol, the interleaved workspace protocol and the
interleaved learner protocol.

``original`` (spec 5): one fresh fixture process at ``:4096:8`` runs warm-up, calibration and
three idle/active/idle trials; its record (all raw stamps) becomes ``energy/original.json.gz``.

``interleaved``: the three workspace configs on the same GPU, one fresh fixture process per
trial (``--energy trial``), K rounds in rotating order (round r starts at config r mod 3), so
slow drifts (temperature, idle power) spread over all configs. Each trial: settle, idle
window, active window (>= ``active_seconds``, an integer number of invocations), settle, idle
window; paired idle = mean of both idle windows, both measured after a settle because an idle
window right after activity reads high (observed alternating bias on the H200). Stamps are
aligned to counter updates. Per config: mean, SD, relative SD, 95 % t interval; ratio to
``:4096:8`` with a Fieller interval. Figures are recomputed from raw stamps through
:mod:`bundle.energy`; this module measures nothing itself.

``learners``: the same trial procedure and settings as ``interleaved``, but its arms are
(learner, workspace) pairs on one board, in the fixed order of :data:`LEARNER_ARMS` (the frozen
``rev88`` at ``:16:8`` — the baseline —, ``rev88`` at ``:0:0``, the Triton ``rev88-fused`` at
``:16:8``); round r starts at arm r mod 3. Trial stems name the learner
(``trial-r00-rev88-fused-workspace-16-8``), so both designs can share one run folder; the summary
is ``energy/learners.json.gz`` (ratios against ``rev88 :16:8``, each arm's ``learner`` block).
One board only: several boards are refused.
"""

from __future__ import annotations

import dataclasses
import math
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bundle import archive
from bundle import energy as en
from bundle.archive import RunArchive
from bundle.jobs import Engine
from bundle.phases.fixture_runner import (
    check_resumed_launch,
    draw_inputs,
    fixture_job,
    run_fixture_job,
    store_kernel_source,
    workspace_stem,
    write_fixture_inputs,
)
from protocol.energy_design import (  # noqa: F401  (re-exported for the phase's callers)
    DEFAULT_LEARNER,
    LEARNER_ARMS,
    LEARNERS_BASELINE,
    ORDER_DEVIATION,
    arm_label,
    executed_order,
    learner_of,
    learners_trial_stem,
)
from protocol.errors import BundleError

PHASE = "energy"
WORKSPACES = (":4096:8", ":16:8", ":0:0")
BASELINE = ":4096:8"
ORIGINAL_WORKSPACE = ":4096:8"  # the library default under which the original ran
PROTOCOL_FILES = {"original": "original.json.gz", "interleaved": "interleaved.json.gz",
                  "learners": "learners.json.gz"}
#: The protocols ``--protocol`` names, and the designs each runs (``both`` is the original pair).
PROTOCOLS = {"original": ("original",), "interleaved": ("interleaved",), "both": ("original", "interleaved"),
             "learners": ("learners",)}
RECORD_ENV = "REV88_NVML_RECORD"  # as bundle.nvml.RECORD_ENV (not imported: keeps pynvml out)
IDLE_MODEL = ("paired idle power = mean of an idle window before and one after the active window, each "
              "measured after a settle, because an idle window right after activity reads high")


def rotating_order(arms: Sequence[Any], rounds: int) -> list[tuple[int, Any]]:
    """(round, arm) pairs of a K-round design: round r runs *arms* starting at index r mod len(arms)."""
    n = len(arms)
    return [(r, arms[(r + i) % n]) for r in range(rounds) for i in range(n)]


def interleaved_order(rounds: int) -> list[tuple[int, str]]:
    """(round, workspace) pairs: round r runs the configs starting at index r mod 3."""
    return rotating_order(WORKSPACES, rounds)


def learners_order(rounds: int) -> list[tuple[int, tuple[str, str]]]:
    """(round, (learner, workspace)) pairs of the ``learners`` design: round r starts at arm r mod 3."""
    return rotating_order(LEARNER_ARMS, rounds)


def trial_stem(round_index: int, workspace: str) -> str:
    """File stem of one interleaved trial: ``trial-r00-workspace-16-8``."""
    return f"trial-r{round_index:02d}-{workspace_stem(workspace)}"


def _check_recorded_trials(energy: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    """Recompute each trial from raw stamps; refuse a record whose figures disagree (rel 1e-9)."""
    out = []
    for raw in energy["trials"]:
        figures = en.recompute_trial(raw)
        for key in en.PER_TASK_KEYS + ("paired_idle_w",):
            got, want = figures[key], raw[key]
            if got is not None and not np.isclose(got, want, rtol=1e-9, atol=0):
                raise BundleError(f"{where} trial {raw['trial']} records {key}={want} but its stamps give {got}: "
                                  "the record is inconsistent; rerun the phase")
        out.append(figures)
    return out


def design_suffix(index: int) -> str:
    """File-name suffix of board *index*'s design: ``""`` for the first board, ``"-b01"`` … after."""
    return "" if index == 0 else f"-b{index:02d}"


#: Figures whose between-board spread ``between-boards.json.gz`` gives.
SPREAD_KEYS = ("idle_adjusted_mj_per_task", "cuda_ms_per_task")


def between_boards(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The spread between per-board interleaved designs (one summary per board, first board first).

    For each workspace config and each of :data:`SPREAD_KEYS`, the per-board means; for each
    non-baseline config, the per-board ratios of idle-adjusted mJ/task to ``:4096:8``; each list
    summarised with :func:`bundle.energy.summarise` (mean, sample SD, relative SD, 95 % t interval
    over boards). Boards are compared only through these means and ratios, never trial by trial.

    Raises:
        BundleError: fewer than two designs, or two designs on one board.
    """
    uuids = [s["gpu"]["uuid"] for s in summaries]
    if len(summaries) < 2 or len(set(uuids)) != len(uuids):
        raise BundleError(f"a between-board spread needs designs on at least two distinct boards (got {uuids})")
    means = {ws: {k: [s["summaries"][ws][k]["mean"] for s in summaries] for k in SPREAD_KEYS} for ws in WORKSPACES}
    ratios = {ws: [s["ratios_vs_baseline"][ws]["idle_adjusted_mj_per_task"]["ratio"] for s in summaries]
              for ws in WORKSPACES if ws != BASELINE}
    return {"schema_version": archive.SCHEMA_VERSION, "completed_at_utc": archive.utc_now(),
            "boards": [{"uuid": s["gpu"]["uuid"], "nvml_pci_bus_id": s["gpu"]["nvml_pci_bus_id"],
                        "summary": f"interleaved{design_suffix(i)}.json.gz"} for i, s in enumerate(summaries)],
            "per_board_means": means, "per_board_idle_adjusted_ratio_vs_baseline": ratios,
            "spread_of_means": {ws: {k: en.summarise(v) for k, v in d.items()} for ws, d in means.items()},
            "spread_of_ratios": {ws: en.summarise(v) for ws, v in ratios.items()},
            "scope": "between-board spread of per-board design means and ratios; statistics over boards"}


def _same_learner(record: Mapping[str, Any], learner: str, output: Path) -> dict[str, Any]:
    if learner_of(record) != learner:
        raise BundleError(f"{output} ran learner {learner_of(record)!r}, expected {learner!r}: the fixture ignored "
                          "--learner; delete the record and rerun the phase")
    return dict(record)


def _run_job(stage: Any, *, engine: Engine, npz: Path, cfg: Path, stem: str, workspace: str, mode: str,
             settings: Mapping[str, Any], record_nvml: bool, device: str,
             on_line: Callable[[str], None] | None, on_job: Callable[[str], None] | None,
             placement: Mapping[str, str] | None = None, learner: str = DEFAULT_LEARNER) -> dict[str, Any]:
    output = stage.path.resolve() / f"{stem}.json.gz"
    if stage.has(f"{stem}.json.gz"):
        record = archive.read_json_gz(output)
        if record.get("input_archive_sha256") != archive.file_sha256(npz):
            raise BundleError(f"staged {output} was made from other inputs: delete {stage.path} and rerun")
        check_resumed_launch(record.get("learner"), f"staged {output}")
        return _same_learner(record, learner, output)
    energy_cfg = archive.write_json(stage.path.resolve() / f"{stem}.energy-config.json", dict(settings))
    if on_job is not None:
        on_job(f"{PHASE}/{stem}")
    spec = fixture_job(f"{PHASE}/{stem}", engine=engine, npz=npz, config=cfg, output=output, workspace=workspace,
                       device=device, repeats=1, extra_args=("--energy", mode, "--energy-config", str(energy_cfg),
                                                             *(() if learner == DEFAULT_LEARNER else ("--learner", learner))))
    log = stage.path.resolve() / f"{stem}.nvml.jsonl"
    if placement:
        spec = dataclasses.replace(spec, env={**spec.env, **placement})
    if record_nvml:
        spec = dataclasses.replace(spec, env={**spec.env, RECORD_ENV: str(log)})
    record = run_fixture_job(engine, spec, output, on_line)
    if record.get("cublas_workspace_config") != workspace:
        raise BundleError(f"{output} ran with {record.get('cublas_workspace_config')}, expected {workspace}: "
                          "the engine did not pass the job environment; check the engine")
    if not record.get("energy"):
        raise BundleError(f"{output} has no energy record: the fixture ignored --energy; check bundle.fixture")
    if record_nvml and log.is_file():
        archive.write_bytes_gz(stage.path / f"{stem}.nvml.jsonl.gz", log.read_bytes())
        log.unlink()
    return _same_learner(record, learner, output)


RATIO_KEYS = ("idle_adjusted_mj_per_task", "unadjusted_mj_per_task", "cuda_ms_per_task")


def _design_body(entries: Sequence[tuple[int, str, Mapping[str, Any], str, Mapping[str, Any]]],
                 arms: Sequence[str], baseline: str, stage_dir: Path, what: str) -> dict[str, Any]:
    """The shared part of an interleaved-style design summary.

    Args:
        entries: per trial in design order: (round, arm key, the row's identity fields, stem, record).
        arms: the arm keys in design order; *baseline* is one of them.
        stage_dir: where the trial records lie (their sha256 goes into each row).
        what: the design's name for messages.

    Returns:
        ``gpu``, ``trials`` (rows), ``order`` (``executed_order`` and, where the trials ran out of
        design order, ``order_deviation``), ``summaries`` per arm and ``ratios_vs_baseline`` per
        non-baseline arm (Fieller intervals, :func:`bundle.energy.ratio_of_means`).

    Raises:
        BundleError: trials on different GPUs, or a record whose figures disagree with its stamps.
    """
    uuids = {rec["energy"]["hardware"]["uuid"] for *_, rec in entries}
    if len(uuids) != 1:
        raise BundleError(f"{what} trials ran on different GPUs {sorted(uuids)}: pin one GPU "
                          "(CUDA_VISIBLE_DEVICES) and rerun the energy phase with --force")
    trials, values = [], {arm: {k: [] for k in en.PER_TASK_KEYS} for arm in arms}
    for position, (round_index, arm, ident, stem, rec) in enumerate(entries):
        figures = _check_recorded_trials(rec["energy"], f"{stem}.json.gz")[0]
        for key in en.PER_TASK_KEYS:
            values[arm][key].append(figures[key])
        trials.append({"position": position, "round": round_index, **ident,
                       "record": f"{stem}.json.gz", "record_sha256": archive.file_sha256(stage_dir / f"{stem}.json.gz"),
                       "invocations": rec["energy"]["repeats_per_trial"],
                       "calibration_ms": rec["energy"]["calibration_ms"],
                       **{k: figures[k] for k in ("paired_idle_w", *en.PER_TASK_KEYS)}})
    ran = executed_order([str(rec.get("completed_at_utc") or "") for *_, rec in entries])
    order: dict[str, Any] = {"executed_order": ran}
    if ran != list(range(len(entries))):
        order["order_deviation"] = ORDER_DEVIATION
    hw = entries[0][4]["energy"]["hardware"]
    return {"gpu": {"name": hw["gpu"], "uuid": hw["uuid"], "nvml_pci_bus_id": hw["nvml_pci_bus_id"]},
            "trials": trials, "order": order,
            "summaries": {arm: {k: en.summarise(v) for k, v in values[arm].items()} for arm in arms},
            "ratios_vs_baseline": {arm: {k: en.ratio_of_means(values[arm][k], values[baseline][k]) for k in RATIO_KEYS}
                                   for arm in arms if arm != baseline}}


def _interleaved_summary(records: list[tuple[int, str, str, dict[str, Any]]], settings: Mapping[str, Any],
                         stage_dir: Path, draw_index: int | None) -> dict[str, Any]:
    body = _design_body([(r, ws, {"workspace": ws}, stem, rec) for r, ws, stem, rec in records], WORKSPACES,
                        BASELINE, stage_dir, "interleaved")
    return {"schema_version": archive.SCHEMA_VERSION, "completed_at_utc": archive.utc_now(),
            "protocol": "interleaved", "draw_index": draw_index, "settings": dict(settings),
            "gpu": body["gpu"], "baseline": BASELINE, "idle_model": IDLE_MODEL, "trials": body["trials"],
            **body["order"], "summaries": body["summaries"], "ratios_vs_baseline": body["ratios_vs_baseline"],
            "scope": ("Idle-adjusted energy per task of the frozen learner on one GPU, one fresh process per "
                      "trial, workspace configs interleaved in rotating order; statistics over trials.")}


LEARNERS_SCOPE = ("Idle-adjusted energy per task of each learner arm (learner, workspace config) on one GPU, one "
                  "fresh process per trial, arms interleaved in rotating order; statistics over trials; ratios "
                  f"against {LEARNERS_BASELINE}.")


def learners_summary(records: Sequence[tuple[int, str, str, str, Mapping[str, Any]]], settings: Mapping[str, Any],
                     stage_dir: Path, draw_index: int | None) -> dict[str, Any]:
    """The ``learners`` design's summary (``energy/learners.json.gz``) from its trial records.

    Args:
        records: per trial in design order (:func:`learners_order`): (round, learner, workspace,
            stem, fixture record); ``<stem>.json.gz`` lies in *stage_dir*.
        settings: the design's settings (as the interleaved design's).
        draw_index: the draw the inputs came from (``None``: inputs given by a test).

    Returns:
        The summary: ``arms`` (label, learner, workspace and the records' ``learner`` block —
        ``null`` for ``rev88``), ``summaries`` keyed by arm label, ``ratios_vs_baseline`` keyed by
        arm label against ``rev88 :16:8`` with Fieller intervals, trials, executed order.

    Raises:
        BundleError: a record that ran another learner than its arm, an arm whose records name
            different learner blocks, trials on different GPUs, or inconsistent trial figures.
    """
    blocks: dict[str, list[Any]] = {arm_label(*a): [] for a in LEARNER_ARMS}
    entries = []
    for round_index, learner, workspace, stem, rec in records:
        label = arm_label(learner, workspace)
        if learner_of(rec) != learner or label not in blocks:
            raise BundleError(f"{stem}.json.gz ran learner {learner_of(rec)!r} at {rec.get('cublas_workspace_config')}, "
                              f"not an arm of the learners design as {label!r}: rerun the energy phase with --force")
        blocks[label].append(rec.get("learner"))
        entries.append((round_index, label, {"arm": label, "learner": learner, "workspace": workspace}, stem, rec))
    arms = []
    for learner, workspace in LEARNER_ARMS:
        label = arm_label(learner, workspace)
        distinct = {archive.dumps_canonical(b) for b in blocks[label]}
        if len(distinct) > 1:
            raise BundleError(f"the {label} trials name {len(distinct)} different learner blocks (kernel source or "
                              "Triton changed between trials): rerun the energy phase with --force")
        arms.append({"label": label, "learner": learner, "workspace": workspace,
                     "learner_block": blocks[label][0] if blocks[label] else None})
    labels = [a["label"] for a in arms]
    body = _design_body(entries, labels, LEARNERS_BASELINE, stage_dir, "learners")
    return {"schema_version": archive.SCHEMA_VERSION, "completed_at_utc": archive.utc_now(),
            "protocol": "learners", "draw_index": draw_index, "settings": dict(settings), "gpu": body["gpu"],
            "arms": arms, "baseline": LEARNERS_BASELINE, "idle_model": IDLE_MODEL, "trials": body["trials"],
            **body["order"], "summaries": body["summaries"], "ratios_vs_baseline": body["ratios_vs_baseline"],
            "scope": LEARNERS_SCOPE}


def run_energy(run_dir: Path, *, engine: Engine, protocol: str = "interleaved", raw_dir: Path | None = None,
               draw_index: int = 0, rounds: int = 5, active_seconds: float = 10.0, idle_seconds: float = 3.0,
               settle_seconds: float = 2.0, sample_interval_s: float = 0.05, record_nvml: bool = False,
               force: bool = False, device: str = "cuda", inputs: Mapping[str, np.ndarray] | None = None,
               config: Mapping[str, Any] | None = None, on_line: Callable[[str], None] | None = None,
               on_job: Callable[[str], None] | None = None, board: Any | None = None,
               prestart_next: bool = True, boards: Sequence[Any] = ()) -> dict[str, Any]:
    """Run the energy protocol(s) into ``run_dir/energy/``.

    Args:
        protocol: ``original``, ``interleaved``, ``both`` (original and interleaved) or
            ``learners`` (:data:`LEARNER_ARMS` on one board, ``learners.json.gz``). Adding a
            protocol to a completed energy phase that lacks it keeps the files already there.
        rounds: K rounds of the three workspace configs / learner arms (interleaved, learners; >= 2).
        active_seconds, idle_seconds, settle_seconds, sample_interval_s: interleaved and learners
            trial settings (see ``bundle.energy_glue.TRIAL_SETTINGS``).
        record_nvml: store every NVML reading of each job as ``<stem>.nvml.jsonl.gz``.
        inputs, config: instead of draw ``draw_index`` / the frozen config (tests).
        board: the board the design runs on (``bundle.boards.Board``; ``None``: the engine's default).
        boards: several boards: one whole interleaved design per board, all at once
            (``interleaved.json.gz`` for the first, ``interleaved-b01.json.gz`` … with trial stems
            ending ``-b01`` … for the others) and ``between-boards.json.gz`` with the spread of the
            per-board means and ratios (:func:`between_boards`). Overrides *board*. The learners
            design takes one board only (one here stands for *board*).
        prestart_next: start the next trial's process while a trial runs; it starts the
            interpreter, imports torch and reads its inputs (CPU only), then waits for the
            board's GPU lock, which the running trial holds from before CUDA initialisation until
            it exits, so no two trials use the GPU at once. Recorded in the settings
            (``next_trial_prestarted``) and in each trial's placement (lock wait).

    Returns:
        ``{"original": {...} | None, "interleaved": {...} | None, "learners": {...} | None}``
        (the written summaries; ``between_boards`` too with several boards).

    Raises:
        BundleError: an unknown protocol, bad settings, several boards for ``learners``, a failed
            job, inconsistent records, trials on different GPUs, or the protocol's file already
            complete without *force*.
    """
    if protocol not in PROTOCOLS:
        raise BundleError(f"unknown --protocol {protocol!r}: use {', '.join(PROTOCOLS)}")
    wanted = PROTOCOLS[protocol]
    trial_designs = {"interleaved", "learners"} & set(wanted)
    if not all(math.isfinite(x) for x in (active_seconds, idle_seconds, settle_seconds)):
        raise BundleError(f"energy windows active={active_seconds} s, idle={idle_seconds} s, settle={settle_seconds} s: "
                          "give finite seconds (--active-seconds, --idle-seconds, --settle-seconds)")
    if trial_designs and (rounds < 2 or active_seconds < 50 * en.COUNTER_UPDATE_INTERVAL_S
                          or idle_seconds <= en.COUNTER_UPDATE_INTERVAL_S or settle_seconds < 0):
        raise BundleError(f"{protocol} settings rounds={rounds}, active={active_seconds} s, idle={idle_seconds} s, "
                          f"settle={settle_seconds} s: need rounds >= 2, active >= "
                          f"{50 * en.COUNTER_UPDATE_INTERVAL_S:g} s (50 counter updates), idle > "
                          f"{en.COUNTER_UPDATE_INTERVAL_S} s, settle >= 0")
    if "learners" in wanted and len(boards) > 1:
        raise BundleError(f"--protocol learners compares learners on one board, got {len(boards)} boards: "
                          "place the energy phase on one GPU (e.g. --gpus GPU-uuid or CUDA_VISIBLE_DEVICES)")
    from_draw = inputs is None
    inputs, config = draw_inputs(inputs, config, draw_index=draw_index, raw_dir=raw_dir)
    run = RunArchive(run_dir)
    done = run.phase_dir(PHASE)
    keep_existing = done.is_dir() and not any((done / PROTOCOL_FILES[p]).is_file() for p in wanted)
    result: dict[str, Any] = {"original": None, "interleaved": None, "learners": None}
    execution = None
    further: list[Any] = []
    with run.phase(PHASE, force=force or keep_existing) as stage:
        if keep_existing:
            for path in done.iterdir():
                if path.is_file() and not stage.has(path.name):
                    shutil.copy2(path, stage.path / path.name)
        # The input npz is a derived copy (the verifier rebuilds inputs from the raw MNIST files):
        # it lives in RUN_DIR/.work, outside the archive; records keep its sha256 and config.json.
        npz, cfg = write_fixture_inputs(run.run_dir / archive.WORK_DIR / PHASE, inputs, config)
        shutil.copy2(cfg, stage.path / "config.json")
        common = {"engine": engine, "npz": npz, "cfg": cfg, "record_nvml": record_nvml, "device": device,
                  "on_line": on_line, "on_job": on_job}
        if "original" in wanted:
            rec = _run_job(stage, stem="original", workspace=ORIGINAL_WORKSPACE, mode="original", settings={},
                           **common)
            figures = _check_recorded_trials(rec["energy"], "original.json.gz")
            result["original"] = {"record": "original.json.gz", "workspace": ORIGINAL_WORKSPACE,
                                  "summaries": {k: en.summarise([f[k] for f in figures]) for k in en.PER_TASK_KEYS}}
            execution = rec.get("execution")
        if trial_designs:
            settings = {"rounds": rounds, "active_seconds": active_seconds, "idle_seconds": idle_seconds,
                        "settle_seconds": settle_seconds, "sample_interval_s": sample_interval_s,
                        "align_stamps": True, "counter_update_interval_s": en.COUNTER_UPDATE_INTERVAL_S}
            if prestart_next:
                settings["next_trial_prestarted"] = (
                    "the next trial's process started while this one ran: interpreter, torch import and "
                    "inputs (CPU only), then it waited for the board's GPU lock; no two trials used the GPU "
                    "at once")
            from bundle.boards import placement_env  # noqa: PLC0415
            from bundle.phases.fixture_runner import gpu_lock_path, run_overlapped  # noqa: PLC0415

            def run_trials(plan: Sequence[tuple[int, str, str, str]], where: Any) -> list[tuple]:
                """Run (round, learner, workspace, stem) trials in order on board *where* (lock, tickets)."""
                lock = str(gpu_lock_path(run.run_dir / archive.WORK_DIR / PHASE, where)) if prestart_next else None
                jobs = []
                for ticket, (round_index, learner, workspace, stem) in enumerate(plan):
                    placement = placement_env(where, lock, ticket if lock else None)
                    trial_settings = {"trial": round_index, "settle_seconds": settle_seconds,
                                      "idle_seconds": idle_seconds, "active_seconds": active_seconds,
                                      "sample_interval_s": sample_interval_s, "workspace_config": workspace}

                    def job(round_index: int = round_index, learner: str = learner, workspace: str = workspace,
                            stem: str = stem, trial_settings: dict[str, Any] = trial_settings,
                            placement: dict[str, str] = placement) -> tuple:
                        rec = _run_job(stage, stem=stem, workspace=workspace, mode="trial", settings=trial_settings,
                                       placement=placement, learner=learner, **common)
                        return round_index, learner, workspace, stem, rec
                    jobs.append(job)
                return run_overlapped(jobs, 2 if prestart_next else 1, Path(lock + ".turn") if lock else None)

            draw = draw_index if from_draw else None
            if "interleaved" in wanted:
                places = list(boards) if boards else [board]
                if len(places) > 1:
                    settings["designs_at_once"] = (
                        f"one whole design per board, all {len(places)} at the same time (each board has its own "
                        "energy counter); no other phase ran on the host meanwhile")

                def design(b: int) -> tuple[list[tuple], dict[str, Any]]:
                    plan = [(r, DEFAULT_LEARNER, ws, trial_stem(r, ws) + design_suffix(b))
                            for r, ws in interleaved_order(rounds)]
                    records = [(r, ws, stem, rec) for r, _, ws, stem, rec in run_trials(plan, places[b])]
                    summary = _interleaved_summary(records, settings, stage.path, draw)
                    archive.write_json_gz(stage / f"interleaved{design_suffix(b)}.json.gz", summary)
                    return records, summary

                designs = run_overlapped([lambda b=b: design(b) for b in range(len(places))], len(places))
                result["interleaved"] = designs[0][1]
                if len(designs) > 1:
                    spread = between_boards([summary for _, summary in designs])
                    archive.write_json_gz(stage / "between-boards.json.gz", spread)
                    result["between_boards"] = spread
                execution = designs[0][0][0][3].get("execution")
                further = [records[0][3].get("execution") for records, _ in designs[1:]]
            if "learners" in wanted:
                plan = [(r, learner, ws, learners_trial_stem(r, learner, ws)) for r, (learner, ws) in learners_order(rounds)]
                records = run_trials(plan, boards[0] if boards else board)
                summary = learners_summary(records, settings, stage.path, draw)
                archive.write_json_gz(stage / PROTOCOL_FILES["learners"], summary)
                result["learners"] = summary
                execution = records[0][4].get("execution")
        if result["original"] is not None:
            archive.write_json_gz(stage / "original-summary.json.gz", result["original"])
        store_kernel_source(run.run_dir, stage.path)   # the CUDA tool's source beside its records
    if execution:
        run.record_execution(PHASE, execution)
    for other in further:  # the other boards' designs
        if other:
            run.record_execution(PHASE, other)
    return result
