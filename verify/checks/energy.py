"""Energy checks: every figure recomputed from the raw NVML stamps (spec section 5).

A stamp is ``{energy_mj (cumulative integer mJ), time_s (midpoint), query_latency_s}``; an
interval is derived from two stamps; a trial from its three intervals and its invocation
count. Summaries (mean and sample SD over trials) are recomputed with numpy and compared
within :data:`verify.checks.FLOAT_REL_TOL` because the original mixed ``statistics`` and numpy.
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Any

import numpy as np

from verify.checks import FLOAT_ABS_TOL, FLOAT_REL_TOL
from verify.records import get, get_float, get_int, get_list
from verify.result import CheckResult, check_close, check_equal, check_true, unavailable

PER_TASK_KEYS = ("idle_adjusted_mj_per_task", "unadjusted_mj_per_task", "cuda_ms_per_task", "wall_ms_per_task")
MIN_IDLE_S = 2.9
"""Shortest acceptable idle window (the protocol sleeps 3 s; the original verifier used 2.9 s)."""
SETTLE_S = 3
CUDA_WALL_RATIO = (0.9, 1.005)
"""Band for cuda_ms / wall_ms per task. The CUDA events are recorded inside the window the two
stamps bracket, so the ratio cannot exceed 1 beyond clock granularity (+0.5 %); host overhead
outside the events keeps it near 1 (0.988-0.9995 on the shipped H200 and A100 trials). The
original verifier allowed 0.7-1.3."""
SAMPLE_SLACK_W = 0.5
SAMPLE_SLACK_REL = 0.005
"""How far the mean of a window's power samples may lie from the window's counter-derived average power,
beyond four standard errors of that mean: the larger of 0.5 W and 0.5 % of the counter's power, a chosen
margin, not a bound. The samples (NVML field 186, the instantaneous power, every ``sample_interval_s``) and
the energy counter are two readings of one board; a record that changes one without the other moves them
apart. Measured: over the 540 windows (idle before, active, idle after) of the 14 H200 archives shipped on
2026-12-05 the sample mean lay −0.19 to +0.30 W from the counter's average (at most 0.24 % of it); other
boards (another sensor behind field 186, smoothing) may sit further apart, hence the relative part."""
MIN_WINDOW_SAMPLES = 10
"""Fewest samples a window must hold to be compared, or half the samples its length holds at the record's
``sample_interval_s`` when that is fewer (at least 3): the protocol samples every 50 ms, so a 3 s idle
window holds about 60."""


def _close(cid: str, subject: str, recorded: Any, value: float, what: str) -> CheckResult:
    return check_close(cid, subject, recorded, value, rel_tol=FLOAT_REL_TOL, abs_tol=FLOAT_ABS_TOL, what=what)


def check_interval(interval: dict, *, subject: str, where: str, kind: str, settle_s: float = SETTLE_S,
                   min_idle_s: float = MIN_IDLE_S) -> list[CheckResult]:
    """Recompute one interval (``duration_s``, ``energy_j``, ``average_power_w``) from its two stamps.

    Args:
        interval: ``{start, end, duration_s, energy_j, average_power_w[, settle_seconds]}``.
        subject: e.g. ``"compare/workspace-16-8 trial 0 active"``.
        where: file for error lines.
        kind: ``"idle"`` or ``"active"``.
        settle_s: the settle time the protocol that wrote the record used (the original's 3 s,
            or the settings a record states for itself, e.g. 2 s for interleaved trials).
        min_idle_s: shortest acceptable idle window (s).
    """
    start_mj = get_int(interval, "start.energy_mj", where)
    end_mj = get_int(interval, "end.energy_mj", where)
    t0 = get_float(interval, "start.time_s", where)
    t1 = get_float(interval, "end.time_s", where)
    get_float(interval, "start.query_latency_s", where)
    get_float(interval, "end.query_latency_s", where)
    duration = t1 - t0
    energy_j = (end_mj - start_mj) / 1000.0
    out = [
        check_true("energy.interval.order", subject, duration > 0 and energy_j >= 0,
                   f"stamps not increasing: duration {duration!r} s, energy {energy_j!r} J",
                   recomputed=[duration, energy_j]),
        _close("energy.interval.duration_s", subject, interval.get("duration_s"), duration, "duration_s"),
        _close("energy.interval.energy_j", subject, interval.get("energy_j"), energy_j, "energy_j"),
    ]
    if duration > 0:
        out.append(_close("energy.interval.average_power_w", subject, interval.get("average_power_w"),
                          energy_j / duration, "average_power_w"))
    if kind == "idle":
        out.append(check_true("energy.interval.idle_length", subject, duration >= min_idle_s,
                              f"idle window {duration:.3f} s is shorter than {min_idle_s} s", recomputed=duration))
        out.append(check_equal("energy.interval.settle_seconds", subject, get(interval, "settle_seconds", None, where),
                               settle_s, what="settle_seconds"))
    return out


def _window(trial: dict, name: str, where: str) -> tuple[float, float, float]:
    """Window *name* of a trial from its two stamps: (start time_s, end time_s, energy in J)."""
    joules = (get_int(trial, f"{name}.end.energy_mj", where) - get_int(trial, f"{name}.start.energy_mj", where)) / 1000.0
    return get_float(trial, f"{name}.start.time_s", where), get_float(trial, f"{name}.end.time_s", where), joules


def recompute_trial(trial: dict, where: str) -> dict[str, float]:
    """Per-task figures of one trial from its raw stamps (spec 5 step 5).

    Returns:
        ``paired_idle_w``, ``idle_adjusted_mj_per_task``, ``unadjusted_mj_per_task``,
        ``wall_ms_per_task`` (floats).
    """
    invocations = get_int(trial, "invocations", where)

    def interval(name: str) -> tuple[float, float]:
        t0, t1, joules = _window(trial, name, where)
        return t1 - t0, joules

    idle_b, idle_a, active = interval("idle_before"), interval("idle_after"), interval("active")
    paired = (idle_b[1] / idle_b[0] + idle_a[1] / idle_a[0]) / 2.0
    adjusted_j = active[1] - paired * active[0]
    return {
        "paired_idle_w": paired,
        "idle_adjusted_mj_per_task": adjusted_j * 1000.0 / invocations,
        "unadjusted_mj_per_task": active[1] * 1000.0 / invocations,
        "wall_ms_per_task": active[0] * 1000.0 / invocations,
    }


def check_trial(trial: dict, *, index: int, repeats: int, subject: str, where: str, settle_s: float = SETTLE_S,
                min_idle_s: float = MIN_IDLE_S, sample_interval_s: float | None = None) -> list[CheckResult]:
    """All checks of one trial: intervals, ordering, and the four per-task figures.

    ``settle_s``/``min_idle_s`` are the protocol's (see :func:`check_interval`). When the
    trial keeps the raw ``cuda_elapsed_ms`` (this bundle's records), ``cuda_ms_per_task`` is
    recomputed from it too.
    """
    sub = f"{subject} trial {index}"
    out = [check_equal("energy.trial.index", sub, get(trial, "trial", None, where), index, what="trial index"),
           check_equal("energy.trial.invocations", sub, get(trial, "invocations", None, where), repeats,
                       what="invocations = repeats_per_trial")]
    for name, kind in (("idle_before", "idle"), ("active", "active"), ("idle_after", "idle")):
        out += check_interval(get(trial, name, dict, where), subject=f"{sub} {name}", where=where, kind=kind,
                              settle_s=settle_s, min_idle_s=min_idle_s)
    ib_end = get_float(trial, "idle_before.end.time_s", where)
    a0 = get_float(trial, "active.start.time_s", where)
    a1 = get_float(trial, "active.end.time_s", where)
    ia0 = get_float(trial, "idle_after.start.time_s", where)
    out.append(check_true("energy.trial.window_order", sub, ib_end <= a0 < a1 <= ia0,
                          "windows overlap: need idle_before.end <= active.start < active.end <= idle_after.start",
                          recomputed=[ib_end, a0, a1, ia0]))
    counter = [get_int(trial, f"{w}.{e}.energy_mj", where) for w in ("idle_before", "active", "idle_after")
               for e in ("start", "end")]
    out.append(check_true("energy.trial.counter_order", sub, all(a <= b for a, b in pairwise(counter)),
                          f"the energy counter goes backwards across the trial's six stamps {counter}: NVML's "
                          "total energy counter only grows", recomputed=counter))
    out += check_samples_vs_counter(trial, subject=sub, where=where, sample_interval_s=sample_interval_s)
    figures = recompute_trial(trial, where)
    for key, value in figures.items():
        out.append(_close(f"energy.trial.{key}", sub, trial.get(key), value, key))
    cuda = get_float(trial, "cuda_ms_per_task", where)
    if "cuda_elapsed_ms" in trial:
        raw = get_float(trial, "cuda_elapsed_ms", where) / get_int(trial, "invocations", where)
        out.append(_close("energy.trial.cuda_ms_per_task", sub, cuda, raw,
                          "cuda_ms_per_task = cuda_elapsed_ms / invocations"))
        cuda = raw  # the band below bounds the raw event time
    ratio = cuda / figures["wall_ms_per_task"] if figures["wall_ms_per_task"] > 0 else math.inf
    out.append(check_true("energy.trial.cuda_wall_ratio", sub, CUDA_WALL_RATIO[0] < ratio < CUDA_WALL_RATIO[1],
                          f"cuda_ms/wall_ms = {ratio:.3f} outside {CUDA_WALL_RATIO}: the CUDA events and the "
                          "stamps do not describe the same window", recomputed=ratio))
    return out


def check_samples_vs_counter(trial: dict, *, subject: str, where: str,
                             sample_interval_s: float | None = None) -> list[CheckResult]:
    """The mean of each window's power samples against the window's average power from the energy counter.

    Args:
        trial: one trial with ``idle_before``/``active``/``idle_after`` stamps and, in this bundle's records,
            ``power_samples`` (``[{time_s, power_w}]``, ``time_s`` on the stamps' clock, watts).
        subject: e.g. ``"energy/trial-r00-… trial 0"``.
        where: file for error lines.
        sample_interval_s: the record's sampling interval (s), for the fewest samples a window must hold
            (:data:`MIN_WINDOW_SAMPLES`); None: 10.

    Returns:
        None for a trial without a ``power_samples`` field (the original study's records). Else one
        ``energy.trial.power_samples_vs_counter`` verdict over the windows compared: FAIL for a window with
        too few samples while later samples exist, or whose sample mean lies more than the larger of
        :data:`SAMPLE_SLACK_W` and :data:`SAMPLE_SLACK_REL` of the counter's power, plus 4 standard errors,
        from (end.energy_mj − start.energy_mj) / 1000 / (end.time_s − start.time_s) W; and one UNAVAILABLE
        verdict naming the windows left uncompared because the samples had ended (the sampler stops for good at
        the first read field 186 does not answer), every window when the list is empty.

    Raises:
        RecordError: a sample or stamp field of the wrong type.
    """
    if "power_samples" not in trial:
        return []
    points = [(get_float(s, "time_s", where), get_float(s, "power_w", where)) for s in get_list(trial, "power_samples", where)]
    bad, seen, ended = [], [], []
    last_t = max((t for t, _ in points), default=-math.inf)
    for name in ("idle_before", "active", "idle_after"):
        t0, t1, joules = _window(trial, name, where)
        watts = np.array([w for t, w in points if t0 <= t <= t1], dtype=np.float64)
        least = MIN_WINDOW_SAMPLES
        if isinstance(sample_interval_s, int | float) and sample_interval_s > 0 and t1 > t0:
            least = max(3, min(MIN_WINDOW_SAMPLES, int(0.5 * (t1 - t0) / sample_interval_s)))
        if watts.size < least:
            if last_t >= t1:  # the sampler ran past the window: a gap in it, not a sampler that stopped
                bad.append(f"{name} holds {watts.size} samples, fewer than {least}, while the sampler ran on past it")
            else:
                ended.append(name)
            continue
        if t1 <= t0:
            continue  # energy.trial.window_order / energy.interval.order fail it
        counter_w = joules / (t1 - t0)
        mean, se = float(watts.mean()), float(watts.std(ddof=1)) / math.sqrt(watts.size)
        allowed = max(SAMPLE_SLACK_W, SAMPLE_SLACK_REL * abs(counter_w)) + 4 * se
        seen.append(round(mean - counter_w, 4))
        if abs(mean - counter_w) > allowed:
            bad.append(f"{name}: {watts.size} samples average {mean:.3f} W, the counter {counter_w:.3f} W "
                       f"(allowed {allowed:.3f} W)")
    out = []
    if seen or bad:
        out.append(check_true("energy.trial.power_samples_vs_counter", subject, not bad,
                              "power samples vs the energy counter: " + "; ".join(bad) + ": the samples and the "
                              "counter no longer describe one board's power", recomputed=seen))
    if ended:
        out.append(unavailable("energy.trial.power_samples_vs_counter", subject,
                               f"no power samples in {', '.join(ended)}: the sampler had stopped (field 186 did not "
                               "answer) or the record keeps none, so the counter there is not cross-checked"))
    return out


def summarise(values: list[float]) -> dict[str, Any]:
    """Mean and sample SD (ddof 1) with numpy, as the analyzers did."""
    arr = np.asarray(values, dtype=np.float64)
    return {"mean": float(arr.mean()), "sample_sd": float(arr.std(ddof=1)) if arr.size > 1 else math.nan,
            "values": [float(v) for v in arr]}


def check_energy_block(energy: dict, *, subject: str, where: str, trials_expected: int = 3) -> list[CheckResult]:
    """Check an energy object (spec 5 output keys): calibration, trials, summary.

    Returns verdicts whose ``energy.summary.<key>.mean`` / ``.sample_sd`` recomputed values
    are the verified figures reports use.
    """
    out: list[CheckResult] = []
    calibration = get_float(energy, "calibration_ms", where)
    repeats = get_int(energy, "repeats_per_trial", where)
    expected_repeats = max(1, min(1000, math.ceil(5000.0 / calibration)))
    out.append(check_equal("energy.repeats_per_trial", subject, repeats, expected_repeats,
                           what="repeats = max(1, min(1000, ceil(5000 / calibration_ms)))"))
    trials = get_list(energy, "trials", where)
    out.append(check_equal("energy.trial_count", subject, len(trials), trials_expected, what="trial count"))
    for i, trial in enumerate(trials):
        out += check_trial(trial, index=i, repeats=repeats, subject=subject, where=f"{where}: trials.{i}")
    for key in PER_TASK_KEYS:
        values = [get_float(t, key, f"{where}: trials.{i}") for i, t in enumerate(trials)]
        recorded = get(energy, f"summary.{key}", dict, where)
        rec_values = get_list(recorded, "values", where)
        out.append(check_equal(f"energy.summary.{key}.values", subject, rec_values, values,
                               what="summary values = trial values"))
        if len(values) >= 2:
            s = summarise(values)
            out.append(_close(f"energy.summary.{key}.mean", subject, recorded.get("mean"), s["mean"], "mean"))
            out.append(_close(f"energy.summary.{key}.sample_sd", subject, recorded.get("sample_sd"), s["sample_sd"],
                              "sample SD (ddof 1)"))
    for flag in ("repeat_predictions_equal", "repeat_state_hashes_equal"):
        out.append(check_equal(f"energy.{flag}", subject, get(energy, flag, None, where), True, what=flag))
    return out


def check_summary_copy(copy: dict, energy: dict, *, subject: str, where: str) -> list[CheckResult]:
    """A summary copied elsewhere (e.g. the original's summary.json) equals the recomputed one."""
    out = []
    trials = get_list(energy, "trials", where)
    for key in PER_TASK_KEYS:
        s = summarise([get_float(t, key, where) for t in trials])
        out.append(_close(f"energy.summary_copy.{key}.mean", subject, get(copy, f"{key}.mean", None, where),
                          s["mean"], "mean"))
        out.append(_close(f"energy.summary_copy.{key}.sample_sd", subject, get(copy, f"{key}.sample_sd", None, where),
                          s["sample_sd"], "sample SD"))
    return out


def parse_pci(bus_id: str) -> tuple[int, int, int, int]:
    """``domain:bus:device.function`` (hex) -> integers; '.' and ':' both accepted as separators."""
    parts = bus_id.replace(".", ":").split(":")
    if len(parts) != 4:
        raise ValueError(f"not a PCI bus id: {bus_id!r}")
    return tuple(int(p, 16) for p in parts)  # type: ignore[return-value]


def check_hardware(hardware: dict, *, subject: str, where: str) -> list[CheckResult]:
    """NVML handle chosen by the CUDA device's PCI bus id; memory recorded."""
    cuda_id = get(hardware, "cuda_pci_bus_id", str, where)
    nvml_id = get(hardware, "nvml_pci_bus_id", str, where)
    try:
        same = parse_pci(cuda_id) == parse_pci(nvml_id)
    except ValueError as exc:
        return [check_true("energy.hardware.pci_identity", subject, False, str(exc))]
    return [check_true("energy.hardware.pci_identity", subject, same,
                       f"CUDA PCI id {cuda_id} and NVML PCI id {nvml_id} name different devices",
                       recorded=[cuda_id, nvml_id]),
            check_true("energy.hardware.total_memory_bytes", subject,
                       get_int(hardware, "total_memory_bytes", where) > 0, "total_memory_bytes is not positive")]
