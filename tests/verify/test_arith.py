"""The verifier's own arithmetic (verify/arith) against closed forms and hand-built cases."""

from __future__ import annotations

import math
import statistics

import pytest

from protocol.errors import BundleError
from verify.arith import counters, energy, timing


@pytest.mark.parametrize(("df", "exact"), [
    (1, math.tan(math.pi * 0.475)),  # Cauchy: t = tan(pi (p - 1/2))
    (2, 0.95 / math.sqrt(2 * 0.975 * 0.025)),  # t = (2p - 1) / sqrt(2 p (1 - p))
])
def test_t_quantile_equals_the_closed_forms(df, exact):
    assert energy.t_quantile_975(df) == pytest.approx(exact, rel=1e-14)


def test_t_quantile_at_real_df_lies_between_its_integer_neighbours_and_tends_to_the_normal():
    t3, t35, t4 = energy.t_quantile_975(3), energy.t_quantile_975(3.5), energy.t_quantile_975(4)
    assert t3 > t35 > t4
    assert energy.t_quantile_975(1e9) == pytest.approx(statistics.NormalDist().inv_cdf(0.975), rel=1e-8)


@pytest.mark.parametrize("df", [0.5, 0, -1, math.nan, math.inf])
def test_t_quantile_refuses_df_below_one_or_not_finite(df):
    with pytest.raises(BundleError, match="degrees of freedom"):
        energy.t_quantile_975(df)


def _stamp(mj: int, s: float) -> dict:
    return {"energy_mj": mj, "time_s": s, "query_latency_s": 0.0}


def test_trial_figures_from_stamps():
    trial = {"invocations": 4, "cuda_elapsed_ms": 8.0,
             "idle_before": {"start": _stamp(0, 0.0), "end": _stamp(300_000, 3.0)},  # 100 W
             "active": {"start": _stamp(300_000, 3.0), "end": _stamp(1_100_000, 5.0)},  # 800 J over 2 s
             "idle_after": {"start": _stamp(1_100_000, 5.0), "end": _stamp(1_460_000, 8.0)}}  # 120 W
    got = energy.trial(trial)
    assert got["paired_idle_w"] == 110.0
    assert got["unadjusted_mj_per_task"] == 200_000.0
    assert got["idle_adjusted_mj_per_task"] == (800.0 - 110.0 * 2.0) * 1000 / 4
    assert (got["cuda_ms_per_task"], got["wall_ms_per_task"]) == (2.0, 500.0)
    trial["active"]["end"] = _stamp(200_000, 5.0)
    with pytest.raises(BundleError, match="stamps not increasing"):
        energy.trial(trial)


def test_fieller_interval_holds_its_defining_inequality_at_both_bounds():
    num, den = [10.0, 10.4, 9.8, 10.1], [20.0, 20.5, 19.7, 20.2, 19.9]
    r = energy.fieller_ratio(num, den)
    a, b = statistics.fmean(num), statistics.fmean(den)
    va, vb = statistics.variance(num) / 4, statistics.variance(den) / 5
    for bound in (r["ci95_low"], r["ci95_high"]):
        assert (a - bound * b) ** 2 == pytest.approx(r["t_quantile"] ** 2 * (va + bound**2 * vb), rel=1e-9)
    assert r["ratio"] == pytest.approx(a / b, rel=1e-15)
    assert r["ci95_low"] < r["ratio"] < r["ci95_high"] and r["bounded"]


def test_fieller_is_unbounded_when_the_denominator_is_not_known_to_differ_from_zero():
    r = energy.fieller_ratio([1.0, 1.1, 0.9], [0.1, -0.1, 0.15])
    assert not r["bounded"] and r["ci95_low"] is None and r["ci95_high"] is None


def test_counters_per_sequence_and_an_inconsistent_row():
    rows = {"dram__bytes_read.sum": {"raw_value": "1,600", "raw_unit": "byte"},
            "dram__bytes_write.sum": {"raw_value": "320", "raw_unit": "byte"},
            "lts__t_sectors_op_read.sum": {"raw_value": "10", "raw_unit": "sector"},
            "lts__t_sectors_op_write.sum": {"raw_value": "5", "raw_unit": "sector"},
            "lts__t_sector_hit_rate.pct": {"raw_value": "97.5", "raw_unit": "%"}}
    got = counters.per_sequence(rows, 16, "task")
    assert (got["dram_total_bytes_per_sequence"], got["l2_read_request_bytes_per_sequence"]) == (120.0, 20.0)
    assert got["l2_sector_hit_rate_percent"] == 97.5 and got["counter_unit"].startswith("per complete")
    rows["dram__bytes_read.sum"]["value"] = 1601.0
    with pytest.raises(BundleError, match="not its printed cell"):
        counters.per_sequence(rows, 16)


def test_overlaps_do_not_count_touching_ends():
    assert timing.overlaps({0: (0.0, 1.0), 1: (1.0, 2.0), 2: (0.5, 1.5)}) == {0: [2], 1: [2], 2: [0, 1]}


def test_a_trial_without_a_window_is_named():
    with pytest.raises(BundleError, match="lacks idle_after"):
        energy.trial({"trial": 0, "invocations": 1, "idle_before": {}, "active": {}})
