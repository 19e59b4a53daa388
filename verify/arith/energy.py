"""Energy arithmetic of the verifier, from the protocol's definitions (``docs/protocol.md`` §5).

* A window's energy is the difference of the NVML total-energy counter (integer mJ) at its two
  stamps, its duration the difference of their times (s), its average power energy / duration (W).
* A trial's paired idle power is the mean of the average powers of the idle window before and the
  one after its active window; per task (``invocations`` tasks in the active window):
  idle-adjusted mJ = (active J - paired idle W x active s) x 1000 / invocations,
  unadjusted mJ = active J x 1000 / invocations, wall ms = active s x 1000 / invocations,
  CUDA ms = the recorded CUDA-event ms / invocations.
* A summary over n >= 2 values: mean, sample SD (ddof 1), relative SD = SD / |mean|, and the 95 %
  interval mean +/- t x SD / sqrt(n) with t the Student t quantile t(0.975, n - 1).
* A ratio of two independent means a / b with Fieller's 95 % interval: va = sa^2 / na,
  vb = sb^2 / nb, df by Welch-Satterthwaite for va + R^2 vb, t = t(0.975, df) (df not an integer in
  general); the interval {R : (a - R b)^2 <= t^2 (va + R^2 vb)} is bounded when g = t^2 vb / b^2 < 1.

The t quantile is exact at any real df (:func:`t_quantile_975`, through mpmath's regularised
incomplete beta function), not a table.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import mpmath
import numpy as np

from protocol.errors import BundleError

_T_BRACKET = (1.959, 12.71)  # t(0.975, df) lies between the normal quantile (df -> inf) and t(0.975, 1) = 12.7062


@functools.lru_cache(maxsize=4096)  # ~6 ms a call; summaries repeat their integer df
def t_quantile_975(df: float) -> float:
    """The Student t quantile t(0.975, df) for any real ``df >= 1``, exact to double precision.

    Solves I_{df / (df + t^2)}(df / 2, 1 / 2) = 0.05 for t (the two-sided 5 % tail) with mpmath at
    30 significant digits.

    Raises:
        BundleError: ``df`` is below 1 or not finite.
    """
    if not (math.isfinite(df) and df >= 1):
        raise BundleError(f"t quantile needs finite degrees of freedom >= 1, got {df!r}: the summary has "
                          "fewer than 2 values")
    with mpmath.workdps(30):
        half_df = mpmath.mpf(df) / 2

        def tail(t: Any) -> Any:
            return mpmath.betainc(half_df, 0.5, 0, df / (df + t * t), regularized=True) - mpmath.mpf("0.05")

        root = mpmath.findroot(tail, tuple(mpmath.mpf(x) for x in _T_BRACKET), solver="illinois")
    return float(root)


def window(raw: Mapping[str, Any]) -> dict[str, float]:
    """Duration (s), energy (J) and average power (W) of a recorded window from its two stamps.

    Args:
        raw: ``{"start": {"energy_mj": int, "time_s": float, ...}, "end": {...}}``.

    Raises:
        BundleError: a missing stamp field, a non-positive duration or a negative energy.
    """
    try:
        duration = float(raw["end"]["time_s"]) - float(raw["start"]["time_s"])
        joules = (int(raw["end"]["energy_mj"]) - int(raw["start"]["energy_mj"])) / 1000.0
    except (KeyError, TypeError, ValueError) as exc:
        raise BundleError(f"energy window lacks a stamp field ({exc}): the record is incomplete") from None
    if not duration > 0 or joules < 0:
        raise BundleError(f"energy window with duration {duration!r} s and energy {joules!r} J: stamps not increasing")
    return {"duration_s": duration, "energy_j": joules, "average_power_w": joules / duration}


def trial(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Per-task figures of one recorded trial from its raw stamps (the protocol's idle model).

    Args:
        raw: a trial record: ``idle_before``, ``active``, ``idle_after`` windows, ``invocations``
            (int >= 1) and, in this bundle's records, ``cuda_elapsed_ms``.

    Returns:
        ``paired_idle_w``, ``idle_adjusted_mj_per_task``, ``unadjusted_mj_per_task``,
        ``cuda_ms_per_task`` (None without ``cuda_elapsed_ms``) and ``wall_ms_per_task``.

    Raises:
        BundleError: a bad window, or fewer than 1 invocation.
    """
    absent = [k for k in ("idle_before", "idle_after", "active") if not isinstance(raw.get(k), Mapping)]
    if absent:
        raise BundleError(f"energy trial {raw.get('trial', '?')} lacks {', '.join(absent)}: the record is incomplete")
    idle_before, idle_after, active = window(raw["idle_before"]), window(raw["idle_after"]), window(raw["active"])
    n = raw.get("invocations")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise BundleError(f"energy trial has invocations {n!r}: need an integer >= 1")
    paired = (idle_before["average_power_w"] + idle_after["average_power_w"]) / 2.0
    active_j, active_s = active["energy_j"], active["duration_s"]
    cuda = raw.get("cuda_elapsed_ms")
    return {
        "paired_idle_w": paired,
        "idle_adjusted_mj_per_task": (active_j - paired * active_s) * 1000.0 / n,
        "unadjusted_mj_per_task": active_j * 1000.0 / n,
        "cuda_ms_per_task": None if cuda is None else float(cuda) / n,
        "wall_ms_per_task": active_s * 1000.0 / n,
    }


def summary(values: Sequence[float], *, t: float | None = None) -> dict[str, Any]:
    """Mean, sample SD, relative SD and 95 % t interval of the mean of *values*.

    Args:
        values: n >= 2 finite floats.
        t: the quantile to build the interval with; default the exact t(0.975, n - 1).

    Returns:
        ``{count, mean, sample_sd, relative_sd, t_quantile, ci95_low, ci95_high, values}``
        (relative_sd None when the mean is 0).

    Raises:
        BundleError: fewer than 2 values, or a non-finite one.
    """
    vals = np.asarray([float(v) for v in values], dtype=np.float64)
    if vals.size < 2 or not np.all(np.isfinite(vals)):
        raise BundleError(f"a summary needs at least 2 finite values, got {vals.tolist()!r}")
    mean = float(vals.mean())
    sd = float(vals.std(ddof=1))
    q = t_quantile_975(vals.size - 1) if t is None else t
    half = q * sd / math.sqrt(vals.size)
    return {"count": int(vals.size), "mean": mean, "sample_sd": sd, "relative_sd": sd / abs(mean) if mean else None,
            "t_quantile": q, "ci95_low": mean - half, "ci95_high": mean + half, "values": vals.tolist()}


def welch_df(numerator: Sequence[float], denominator: Sequence[float]) -> float:
    """Welch-Satterthwaite degrees of freedom of va + R^2 vb for the ratio R of the two sample means.

    Falls back to na + nb - 2 when both samples have zero spread.
    """
    a, b = np.asarray(numerator, dtype=np.float64), np.asarray(denominator, dtype=np.float64)
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    r = a.mean() / b.mean()
    ta, tb = va, r * r * vb
    denom = ta * ta / (a.size - 1) + tb * tb / (b.size - 1)
    return float((ta + tb) ** 2 / denom) if denom > 0 else float(a.size + b.size - 2)


def fieller_ratio(numerator: Sequence[float], denominator: Sequence[float], *, t: float | None = None) -> dict[str, Any]:
    """Ratio of two independent sample means with Fieller's 95 % interval.

    Args:
        numerator, denominator: >= 2 finite floats each.
        t: the quantile to build the interval with; default the exact t(0.975, Welch df).

    Returns:
        ``{ratio, ci95_low, ci95_high, bounded, g, df, t_quantile, method}``; the bounds are None
        when ``g >= 1`` (the interval is then not bounded).

    Raises:
        BundleError: fewer than 2 values on a side, a non-finite value, or a zero denominator mean.
    """
    sa, sb = summary(numerator, t=0.0), summary(denominator, t=0.0)  # only mean and SD used
    a, b = sa["mean"], sb["mean"]
    if b == 0:
        raise BundleError("ratio of means with a zero denominator mean: the baseline measured 0")
    va, vb = sa["sample_sd"] ** 2 / sa["count"], sb["sample_sd"] ** 2 / sb["count"]
    df = welch_df(numerator, denominator)
    q = t_quantile_975(df) if t is None else t
    g = q * q * vb / (b * b)
    out: dict[str, Any] = {"ratio": a / b, "ci95_low": None, "ci95_high": None, "bounded": bool(g < 1), "g": g,
                           "df": df, "t_quantile": q, "method": "Fieller, independent samples, Welch-Satterthwaite df"}
    if g < 1:
        # (a - R b)^2 = t^2 (va + R^2 vb)  <=>  A R^2 + B R + C = 0 with A = b^2 - t^2 vb > 0 (g < 1),
        # B = -2 a b, C = a^2 - t^2 va; roots in the form without cancellation: w = -(B + sign(B) sqrt(D)) / 2,
        # R = w / A and R = C / w (D >= 0 when g < 1; clipped at 0 against rounding).
        qa, qb, qc = b * b - q * q * vb, -2.0 * a * b, a * a - q * q * va
        w = -(qb + math.copysign(math.sqrt(max(qb * qb - 4.0 * qa * qc, 0.0)), qb)) / 2.0
        lo, hi = sorted((w / qa, qc / w if w else w / qa))
        out["ci95_low"], out["ci95_high"] = lo, hi
    return out


def between_boards(designs: Sequence[Mapping[str, Any]], *, workspaces: Sequence[str], baseline: str,
                   keys: Sequence[str]) -> dict[str, Any]:
    """The between-board spread of per-board design summaries (first board first).

    Args:
        designs: per-board ``interleaved*.json.gz`` records (``summaries[ws][key]["mean"]``,
            ``ratios_vs_baseline[ws]["idle_adjusted_mj_per_task"]["ratio"]``).
        workspaces: the design's workspace configs; baseline: the ratios' denominator config.
        keys: the per-task figures whose per-board means are spread.

    Returns:
        ``per_board_means[ws][key]``, ``per_board_idle_adjusted_ratio_vs_baseline[ws]`` (lists over
        boards) and their :func:`summary` as ``spread_of_means`` / ``spread_of_ratios``.

    Raises:
        KeyError, TypeError: a design lacks a field (callers turn it into a verdict).
        BundleError: fewer than two designs.
    """
    means = {ws: {k: [d["summaries"][ws][k]["mean"] for d in designs] for k in keys} for ws in workspaces}
    ratios = {ws: [d["ratios_vs_baseline"][ws]["idle_adjusted_mj_per_task"]["ratio"] for d in designs]
              for ws in workspaces if ws != baseline}
    return {"per_board_means": means, "per_board_idle_adjusted_ratio_vs_baseline": ratios,
            "spread_of_means": {ws: {k: summary(v) for k, v in d.items()} for ws, d in means.items()},
            "spread_of_ratios": {ws: summary(v) for ws, v in ratios.items()}}
