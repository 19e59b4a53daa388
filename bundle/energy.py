"""Energy window protocol over an injected counter, and all energy arithmetic (no torch).

The protocol follows the original study's ``energy.py`` (spec section 5): a *stamp* is one
read of a cumulative energy counter (integer mJ) bracketed by two clock reads; an *interval*
is the difference of two stamps; an *idle sample* settles, then measures an interval with the
GPU idle; a *trial* is idle window, active window (``invocations`` fresh ``run()`` calls),
idle window. The counter, clock, sleep and device synchronisation are injected (as Zeus
injects its GPU backend), so tests drive the protocol from recorded readings without a GPU.

Every derived figure is recomputed from raw stamps by pure functions (:func:`recompute_trial`,
:func:`summarise`, :func:`ratio_of_means`) that the offline verifier imports.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from protocol.energy_design import (  # noqa: F401  (re-exported for the writer's call sites)
    ORIGINAL_IDLE_S,
    ORIGINAL_SETTLE_S,
    ORIGINAL_TARGET_MS,
    ORIGINAL_TRIALS,
    PER_TASK_KEYS,
)
from protocol.errors import BundleError

COUNTER_UPDATE_INTERVAL_S = 0.1
"""Update period of ``nvmlDeviceGetTotalEnergyConsumption`` measured on the H200 (~100 ms)."""

MAX_INVOCATIONS = 1000
ALIGN_POLL_INTERVAL_S = 0.002  # sleep between counter polls while waiting for an update edge
SAMPLER_THREAD_NAME = "rev88-power-sampler"


# Two-sided 95 % Student t quantiles t_{0.975, df} for df = 1..60, computed by Gauss-Legendre
# integration of the t density and bisection (6 decimals; tests re-derive them independently).
_T975 = (
    12.706205, 4.302653, 3.182446, 2.776445, 2.570582,
    2.446912, 2.364624, 2.306004, 2.262157, 2.228139,
    2.200985, 2.178813, 2.160369, 2.144787, 2.131450,
    2.119905, 2.109816, 2.100922, 2.093024, 2.085963,
    2.079614, 2.073873, 2.068658, 2.063899, 2.059539,
    2.055529, 2.051831, 2.048407, 2.045230, 2.042272,
    2.039513, 2.036933, 2.034515, 2.032245, 2.030108,
    2.028094, 2.026192, 2.024394, 2.022691, 2.021075,
    2.019541, 2.018082, 2.016692, 2.015368, 2.014103,
    2.012896, 2.011741, 2.010635, 2.009575, 2.008559,
    2.007584, 2.006647, 2.005746, 2.004879, 2.004045,
    2.003241, 2.002465, 2.001717, 2.000995, 2.000298,
)  # fmt: skip
_Z975 = 1.959963984540054


class EnergyCounter(Protocol):
    """A cumulative energy counter (e.g. ``nvmlDeviceGetTotalEnergyConsumption``)."""

    def read_energy_mj(self) -> int:
        """Return the cumulative energy in millijoules (monotonic non-decreasing)."""
        ...


@dataclass(frozen=True, slots=True)
class EnergyStamp:
    """One counter read: ``energy_mj`` at ``time_s`` = midpoint of the two clock reads (s).

    ``query_latency_s`` is the time between the clock reads around the counter read;
    ``polls`` (aligned stamps only) counts the reads made until the counter changed.
    """

    energy_mj: int
    time_s: float
    query_latency_s: float
    polls: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Record form, original key order (``polls`` only when aligned)."""
        out: dict[str, Any] = {"energy_mj": self.energy_mj, "time_s": self.time_s, "query_latency_s": self.query_latency_s}
        if self.polls is not None:
            out["polls"] = self.polls
        return out


def _interval_figures(start: Mapping[str, Any], end: Mapping[str, Any], *, where: str,
                      counter_update_interval_s: float = COUNTER_UPDATE_INTERVAL_S) -> tuple[float, float, float]:
    """Return (duration_s, energy_j, average_power_w) between two raw stamps, checking them."""
    duration_s = end["time_s"] - start["time_s"]
    delta_mj = end["energy_mj"] - start["energy_mj"]
    if not duration_s > 0:
        raise BundleError(f"energy window has non-positive duration {duration_s!r} s ({where}): "
                          "the clock is not monotonic; rerun on a steady host")
    if delta_mj < 0:
        raise BundleError(f"negative energy {delta_mj} mJ over {duration_s:.3f} s ({where}): the NVML energy "
                          "counter went backwards (driver reload or GPU reset?); rerun the measurement")
    if delta_mj == 0:
        if duration_s < counter_update_interval_s:
            raise BundleError(f"window too short for the counter: {duration_s:.3f} s < its update interval "
                              f"{counter_update_interval_s} s ({where}); lengthen the window")
        raise BundleError(f"energy counter did not advance over {duration_s:.3f} s, longer than its update "
                          f"interval {counter_update_interval_s} s ({where}): the counter is stuck or not "
                          "supported on this GPU; use another GPU or driver")
    energy_j = delta_mj / 1000
    return duration_s, energy_j, energy_j / duration_s


@dataclass(frozen=True, slots=True)
class EnergyInterval:
    """Energy between two stamps: duration (s), energy (J), average power (W), as spec 5.4."""

    start: EnergyStamp
    end: EnergyStamp
    duration_s: float
    energy_j: float
    average_power_w: float

    @classmethod
    def between(cls, start: EnergyStamp, end: EnergyStamp, *, where: str = "energy window",
                counter_update_interval_s: float = COUNTER_UPDATE_INTERVAL_S) -> EnergyInterval:
        """Build the interval from two stamps.

        Raises:
            BundleError: non-positive duration, negative energy, or a counter that did not
                advance (window too short for the counter, or a stuck counter).
        """
        figures = _interval_figures(start.to_dict(), end.to_dict(), where=where,
                                    counter_update_interval_s=counter_update_interval_s)
        return cls(start, end, *figures)

    def to_dict(self) -> dict[str, Any]:
        """Record form: start, end, duration_s, energy_j, average_power_w."""
        return {"start": self.start.to_dict(), "end": self.end.to_dict(), "duration_s": self.duration_s,
                "energy_j": self.energy_j, "average_power_w": self.average_power_w}


@dataclass(frozen=True, slots=True)
class IdleSample:
    """An idle interval measured after ``settle_seconds`` of sleeping (spec 5.4)."""

    interval: EnergyInterval
    settle_seconds: float

    def to_dict(self) -> dict[str, Any]:
        """Record form: the interval's keys plus ``settle_seconds``."""
        settle: float | int = int(self.settle_seconds) if float(self.settle_seconds).is_integer() else self.settle_seconds
        return {**self.interval.to_dict(), "settle_seconds": settle}


@dataclass(frozen=True, slots=True)
class Telemetry:
    """One telemetry snapshot: temperature (C), power (W, NVML's 1 s average on Hopper),
    graphics/memory clocks (MHz) and instantaneous power (W, field 186; None when it does not answer)."""

    temperature_c: int
    power_w: float
    graphics_clock_mhz: int
    memory_clock_mhz: int
    instant_power_w: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Record form, original key order plus ``instant_power_w``."""
        return {"temperature_c": self.temperature_c, "power_w": self.power_w,
                "graphics_clock_mhz": self.graphics_clock_mhz, "memory_clock_mhz": self.memory_clock_mhz,
                "instant_power_w": self.instant_power_w}


def trial_figures(idle_before_w: float, idle_after_w: float, active_energy_j: float, active_duration_s: float,
                  invocations: int, cuda_elapsed_ms: float | None = None) -> dict[str, float | None]:
    """Per-task figures of one trial, exactly as the original's arithmetic (spec 5.5).

    paired_idle_w = mean of the two idle powers; idle_adjusted_mj_per_task =
    (active J - paired W x active s) x 1000 / invocations; unadjusted = active J x 1000 /
    invocations; cuda_ms_per_task = CUDA-event ms / invocations (None without the raw
    elapsed time); wall_ms_per_task = active s x 1000 / invocations.
    """
    if invocations < 1:
        raise BundleError(f"trial has {invocations} invocations (energy trial): need at least 1")
    paired_idle_w = (idle_before_w + idle_after_w) / 2
    adjusted_j = active_energy_j - paired_idle_w * active_duration_s
    return {
        "paired_idle_w": paired_idle_w,
        "idle_adjusted_mj_per_task": adjusted_j * 1000 / invocations,
        "unadjusted_mj_per_task": active_energy_j * 1000 / invocations,
        "cuda_ms_per_task": None if cuda_elapsed_ms is None else cuda_elapsed_ms / invocations,
        "wall_ms_per_task": active_duration_s * 1000 / invocations,
    }


@dataclass(frozen=True, slots=True)
class EnergyTrial:
    """One trial: idle before, active window of ``invocations`` runs, idle after (spec 5.5).

    ``cuda_elapsed_ms`` is the raw CUDA-event time of the active window (the original kept
    only the per-task figure); ``power_samples`` are (time_s, instant W) pairs from a
    background sampler, when one ran.
    """

    trial: int
    invocations: int
    idle_before: IdleSample
    idle_after: IdleSample
    active: EnergyInterval
    telemetry_before: Telemetry
    telemetry_after: Telemetry
    cuda_elapsed_ms: float
    power_samples: tuple[tuple[float, float], ...] = field(default=())

    def figures(self) -> dict[str, float | None]:
        """The five derived figures (see :func:`trial_figures`)."""
        return trial_figures(self.idle_before.interval.average_power_w, self.idle_after.interval.average_power_w,
                             self.active.energy_j, self.active.duration_s, self.invocations, self.cuda_elapsed_ms)

    def to_dict(self) -> dict[str, Any]:
        """Record form: the original's keys in order, then ``cuda_elapsed_ms`` and ``power_samples``."""
        return {"trial": self.trial, "invocations": self.invocations, "idle_before": self.idle_before.to_dict(),
                "idle_after": self.idle_after.to_dict(), "active": self.active.to_dict(),
                "telemetry_before": self.telemetry_before.to_dict(),
                "telemetry_after": self.telemetry_after.to_dict(), **self.figures(),
                "cuda_elapsed_ms": self.cuda_elapsed_ms,
                "power_samples": [{"time_s": t, "power_w": w} for t, w in self.power_samples]}


def invocations_for(calibration_ms: float, target_ms: float = ORIGINAL_TARGET_MS, *,
                    maximum: int = MAX_INVOCATIONS) -> int:
    """Invocations per active window: clamp(ceil(target_ms / calibration_ms), 1, maximum) (spec 5.2).

    Raises:
        BundleError: calibration time not a positive finite number.
    """
    if not (math.isfinite(calibration_ms) and calibration_ms > 0):
        raise BundleError(f"calibration time {calibration_ms!r} ms is not positive (energy calibration): "
                          "the CUDA events did not time the invocation; check the device")
    return max(1, min(maximum, math.ceil(target_ms / calibration_ms)))


class EnergyWindows:
    """The window protocol over an injected counter, clock, sleep and device synchronisation.

    Args:
        counter: the energy counter (mJ).
        clock: monotonic seconds (default ``time.perf_counter``).
        sleep: sleeps seconds (default ``time.sleep``).
        synchronize: waits for queued device work (default: nothing to wait for).
        counter_update_interval_s: the counter's update period; windows must exceed it.
        align_stamps: when True, each stamp polls the counter until its value changes and is
            taken at that update edge, so a stamp's time is known to the query latency rather
            than to the update period (used by the interleaved protocol, not the original).
    """

    def __init__(self, counter: EnergyCounter, *, clock: Callable[[], float] = time.perf_counter,
                 sleep: Callable[[float], None] = time.sleep, synchronize: Callable[[], None] | None = None,
                 counter_update_interval_s: float = COUNTER_UPDATE_INTERVAL_S, align_stamps: bool = False) -> None:
        self.counter = counter
        self.clock = clock
        self.sleep = sleep
        self.synchronize = synchronize or (lambda: None)
        self.counter_update_interval_s = counter_update_interval_s
        self.align_stamps = align_stamps

    def _read(self) -> tuple[int, float, float]:
        a = self.clock()
        energy_mj = int(self.counter.read_energy_mj())
        b = self.clock()
        return energy_mj, (a + b) / 2, b - a

    def stamp(self) -> EnergyStamp:
        """Take one stamp (aligned to the next counter update when ``align_stamps``).

        Raises:
            BundleError: (aligned) the counter did not change within 3 update intervals.
        """
        energy_mj, time_s, latency_s = self._read()
        if not self.align_stamps:
            return EnergyStamp(energy_mj, time_s, latency_s)
        first_mj, first_time_s, polls = energy_mj, time_s, 1
        deadline_s = 3 * self.counter_update_interval_s
        while True:
            self.sleep(ALIGN_POLL_INTERVAL_S)
            energy_mj, time_s, latency_s = self._read()
            polls += 1
            if energy_mj != first_mj:
                return EnergyStamp(energy_mj, time_s, latency_s, polls)
            if time_s - first_time_s > deadline_s:
                raise BundleError(f"energy counter did not advance within {time_s - first_time_s:.3f} s, longer "
                                  f"than 3 update intervals of {self.counter_update_interval_s} s (aligned stamp): "
                                  "the counter is stuck or not supported on this GPU; use another GPU or driver")

    def interval(self, start: EnergyStamp, end: EnergyStamp, where: str) -> EnergyInterval:
        """The checked interval between two stamps (see :meth:`EnergyInterval.between`)."""
        return EnergyInterval.between(start, end, where=where, counter_update_interval_s=self.counter_update_interval_s)

    def idle_sample(self, *, settle_s: float, measure_s: float, where: str = "idle window") -> IdleSample:
        """Synchronise, sleep ``settle_s``, stamp, sleep ``measure_s``, stamp (spec 5.4)."""
        self.synchronize()
        self.sleep(settle_s)
        start = self.stamp()
        self.sleep(measure_s)
        return IdleSample(self.interval(start, self.stamp(), where), settle_s)

    def active_window(self, run_invocations: Callable[[int], float], invocations: int,
                      where: str = "active window") -> tuple[EnergyInterval, float]:
        """Stamp, run ``invocations`` fresh tasks, stamp (spec 5.5).

        ``run_invocations(n)`` must run n invocations, wait for them to finish, and return
        their CUDA-event time in ms. Returns (interval, cuda_elapsed_ms).
        """
        start = self.stamp()
        cuda_elapsed_ms = float(run_invocations(invocations))
        return self.interval(start, self.stamp(), where), cuda_elapsed_ms

    def measure_trial(self, trial: int, invocations: int, run_invocations: Callable[[int], float],
                      telemetry: Callable[[], Telemetry], *, settle_s: float, idle_s: float) -> EnergyTrial:
        """One trial: idle_before, telemetry, active window, telemetry, idle_after (spec 5.5)."""
        idle_before = self.idle_sample(settle_s=settle_s, measure_s=idle_s, where=f"trial {trial} idle_before")
        telemetry_before = telemetry()
        active, cuda_elapsed_ms = self.active_window(run_invocations, invocations, where=f"trial {trial} active")
        telemetry_after = telemetry()
        idle_after = self.idle_sample(settle_s=settle_s, measure_s=idle_s, where=f"trial {trial} idle_after")
        return EnergyTrial(trial, invocations, idle_before, idle_after, active, telemetry_before,
                           telemetry_after, cuda_elapsed_ms)


# ---------------------------------------------------------------------------------------------
# Pure recomputation from raw records (used by the verifier)


def recompute_interval(raw: Mapping[str, Any], *, where: str = "interval",
                       counter_update_interval_s: float = COUNTER_UPDATE_INTERVAL_S) -> dict[str, float]:
    """Recompute duration_s, energy_j and average_power_w of a recorded interval from its stamps.

    Raises:
        BundleError: as :meth:`EnergyInterval.between`, or a missing key.
    """
    try:
        duration_s, energy_j, power_w = _interval_figures(raw["start"], raw["end"], where=where,
                                                          counter_update_interval_s=counter_update_interval_s)
    except KeyError as exc:
        raise BundleError(f"energy interval lacks key {exc} ({where}): the record is incomplete") from None
    return {"duration_s": duration_s, "energy_j": energy_j, "average_power_w": power_w}


def recompute_trial(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Recompute every derived figure of a recorded trial from its raw stamps.

    Args:
        raw: a trial record (original ``results/draw-00.json`` form or this bundle's).

    Returns:
        ``{"idle_before": {...}, "idle_after": {...}, "active": {...}}`` (each from
        :func:`recompute_interval`) plus the figures of :func:`trial_figures`.
        ``cuda_ms_per_task`` is None when the record lacks the raw ``cuda_elapsed_ms``
        (the original kept only the per-task value).

    Raises:
        BundleError: a bad interval or a missing key.
    """
    trial = raw.get("trial", "?")
    out: dict[str, Any] = {}
    for key in ("idle_before", "idle_after", "active"):
        if key not in raw:
            raise BundleError(f"energy trial {trial} lacks '{key}': the record is incomplete")
        out[key] = recompute_interval(raw[key], where=f"trial {trial} {key}")
    out.update(trial_figures(out["idle_before"]["average_power_w"], out["idle_after"]["average_power_w"],
                             out["active"]["energy_j"], out["active"]["duration_s"], int(raw["invocations"]),
                             raw.get("cuda_elapsed_ms")))
    return out


def summarise_original(values: Sequence[float]) -> dict[str, Any]:
    """The original's summary: ``{"mean": statistics.mean, "sample_sd": statistics.stdev, "values"}``."""
    return {"mean": statistics.mean(values), "sample_sd": statistics.stdev(values), "values": list(values)}


def t_quantile_975(df: int) -> float:
    """Two-sided 95 % Student t quantile t_{0.975, df}.

    df 1..60 from the table above (6 decimals); beyond, the Cornish-Fisher expansion of
    Abramowitz & Stegun 26.7.5 to the 1/df^4 term (error < 1e-8 for df > 60).

    Raises:
        BundleError: df < 1.
    """
    if df < 1:
        raise BundleError(f"t quantile needs at least 1 degree of freedom, got {df} (energy summary): "
                          "measure at least 2 trials")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def _t_quantile_real_df(df: float) -> float:
    """t quantile for a non-integer (Welch-Satterthwaite) df: linear in 1/df between table rows."""
    lo = max(1, math.floor(df))
    hi = lo + 1
    if df <= lo:
        return t_quantile_975(lo)
    w = (1 / lo - 1 / df) / (1 / lo - 1 / hi)
    return (1 - w) * t_quantile_975(lo) + w * t_quantile_975(hi)


def summarise(values: Sequence[float]) -> dict[str, Any]:
    """Mean, sample SD (``statistics.stdev``), relative SD and 95 % t interval of the mean.

    Returns:
        ``{count, mean, sample_sd, relative_sd, t_quantile, ci95_low, ci95_high, values}``;
        relative_sd = sample_sd / |mean| (None when mean is 0); the interval is
        mean +/- t_{0.975, n-1} x sd / sqrt(n).

    Raises:
        BundleError: fewer than 2 values or a non-finite value.
    """
    vals = [float(v) for v in values]
    if len(vals) < 2 or not all(math.isfinite(v) for v in vals):
        raise BundleError(f"energy summary needs at least 2 finite values, got {vals!r}: run more trials")
    mean = statistics.mean(vals)
    sd = statistics.stdev(vals)
    t = t_quantile_975(len(vals) - 1)
    half = t * sd / math.sqrt(len(vals))
    return {"count": len(vals), "mean": mean, "sample_sd": sd, "relative_sd": sd / abs(mean) if mean else None,
            "t_quantile": t, "ci95_low": mean - half, "ci95_high": mean + half, "values": vals}


def ratio_of_means(numerator: Sequence[float], denominator: Sequence[float]) -> dict[str, Any]:
    """Ratio of two independent sample means with a 95 % Fieller interval.

    Method: Fieller's theorem for independent samples (zero covariance). With means a, b,
    squared standard errors va = sa^2/na, vb = sb^2/nb and t = t_{0.975, df}, where df is the
    Welch-Satterthwaite df of va + R^2 vb, the interval is the set of R with
    (a - R b)^2 <= t^2 (va + R^2 vb). It is bounded only when g = t^2 vb / b^2 < 1;
    otherwise ``ci95_low``/``ci95_high`` are None and ``bounded`` is False.

    Returns:
        ``{ratio, ci95_low, ci95_high, bounded, g, df, t_quantile, method}``.

    Raises:
        BundleError: fewer than 2 values on a side, or a zero denominator mean.
    """
    a_sum, b_sum = summarise(numerator), summarise(denominator)
    a, b = a_sum["mean"], b_sum["mean"]
    if b == 0:
        raise BundleError("ratio of means has a zero denominator mean (energy ratio): the baseline measured 0")
    va = a_sum["sample_sd"] ** 2 / a_sum["count"]
    vb = b_sum["sample_sd"] ** 2 / b_sum["count"]
    ratio = a / b
    term_a, term_b = va, ratio**2 * vb
    denom = term_a**2 / (a_sum["count"] - 1) + term_b**2 / (b_sum["count"] - 1)
    df = (term_a + term_b) ** 2 / denom if denom > 0 else float(a_sum["count"] + b_sum["count"] - 2)
    t = _t_quantile_real_df(df)
    g = t**2 * vb / b**2
    out: dict[str, Any] = {"ratio": ratio, "ci95_low": None, "ci95_high": None, "bounded": g < 1, "g": g,
                           "df": df, "t_quantile": t,
                           "method": "Fieller, independent samples, Welch-Satterthwaite df"}
    if g < 1:
        # Quadratic in R: (b^2 - t^2 vb) R^2 - 2ab R + (a^2 - t^2 va) = 0.
        qa, qb, qc = b**2 - t**2 * vb, -2 * a * b, a**2 - t**2 * va
        disc = max(qb**2 - 4 * qa * qc, 0.0)
        roots = sorted(((-qb - math.sqrt(disc)) / (2 * qa), (-qb + math.sqrt(disc)) / (2 * qa)))
        out["ci95_low"], out["ci95_high"] = roots
    return out
