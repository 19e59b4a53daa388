"""Energy arithmetic and the window protocol (bundle.energy), on the original's draw-0 stamps."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from bundle import energy as en
from protocol.errors import BundleError
from tests.bundle.energy_logs import original_energy
from tests.conftest import ORIGINAL_ARCHIVE

REL = 1e-9


def close(a: float, b: float, rel: float = REL) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=0.0)


def test_module_imports_without_torch() -> None:
    code = "import sys, bundle.energy, bundle.nvml, bundle.energy_glue, bundle.phases.energy; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_original_draw0_trials_recompute_from_raw_stamps() -> None:
    energy = original_energy()
    assert len(energy["trials"]) == 3
    for raw in energy["trials"]:
        got = en.recompute_trial(raw)
        for key in ("idle_before", "idle_after", "active"):
            for field in ("duration_s", "energy_j", "average_power_w"):
                assert close(got[key][field], raw[key][field]), (raw["trial"], key, field)
        for key in ("paired_idle_w", "idle_adjusted_mj_per_task", "unadjusted_mj_per_task", "wall_ms_per_task"):
            assert close(got[key], raw[key]), (raw["trial"], key)
        assert got["cuda_ms_per_task"] is None  # the original kept no raw CUDA-event time
    adjusted = [en.recompute_trial(t)["idle_adjusted_mj_per_task"] for t in energy["trials"]]
    summary = en.summarise_original(adjusted)
    assert close(summary["mean"], 1101.2411669370717) and close(summary["sample_sd"], 72.65349894231267)
    assert close(summary["mean"], energy["summary"]["idle_adjusted_mj_per_task"]["mean"])


def test_cuda_ms_recomputed_when_raw_elapsed_is_kept() -> None:
    raw = dict(original_energy()["trials"][0])
    raw["cuda_elapsed_ms"] = 3934.941162109375
    assert close(en.recompute_trial(raw)["cuda_ms_per_task"], 3934.941162109375 / 104)


def test_calibration_gives_the_original_repeats() -> None:
    assert en.invocations_for(48.26192092895508) == 104
    assert en.invocations_for(46.3092) == 108
    assert en.invocations_for(1e-3) == 1000 and en.invocations_for(1e6) == 1
    with pytest.raises(BundleError, match="calibration time"):
        en.invocations_for(0.0)


@pytest.mark.parametrize(("start", "end", "pattern"), [
    ((1000, 1.0), (900, 2.0), "negative energy"),
    ((1000, 1.0), (1000, 1.05), "window too short for the counter"),
    ((1000, 1.0), (1000, 4.0), "did not advance"),
    ((1000, 2.0), (1100, 2.0), "non-positive duration"),
])
def test_interval_failures(start: tuple, end: tuple, pattern: str) -> None:
    s = en.EnergyStamp(start[0], start[1], 0.001)
    e = en.EnergyStamp(end[0], end[1], 0.001)
    with pytest.raises(BundleError, match=pattern):
        en.EnergyInterval.between(s, e)


class SteppedCounter:
    """A counter that advances by power x period at each update edge (fake clock)."""

    def __init__(self, clock: list[float], watts: float, period_s: float = 0.1, stuck: bool = False) -> None:
        self.clock, self.watts, self.period_s, self.stuck = clock, watts, period_s, stuck

    def read_energy_mj(self) -> int:
        self.clock[0] += 0.001  # query latency
        if self.stuck:
            return 5000
        return 5000 + int(math.floor(self.clock[0] / self.period_s) * self.period_s * self.watts * 1000)


def fake_time(start: float = 0.03) -> tuple[list[float], callable, callable]:
    now = [start]

    def sleep(s: float) -> None:
        now[0] += s

    return now, (lambda: now[0]), sleep


def test_aligned_stamps_sit_on_counter_edges() -> None:
    now, clock, sleep = fake_time()
    windows = en.EnergyWindows(SteppedCounter(now, 100.0), clock=clock, sleep=sleep, align_stamps=True)
    idle = windows.idle_sample(settle_s=0.5, measure_s=1.0)
    assert idle.interval.start.polls and idle.interval.start.polls > 1
    # Both stamps sit just after an edge, so the quantised counter gives the true power.
    assert abs(idle.interval.average_power_w - 100.0) < 0.5
    unaligned = en.EnergyWindows(SteppedCounter(now, 100.0), clock=clock, sleep=sleep)
    assert unaligned.stamp().polls is None


def test_aligned_stamp_fails_on_a_stuck_counter() -> None:
    now, clock, sleep = fake_time()
    windows = en.EnergyWindows(SteppedCounter(now, 100.0, stuck=True), clock=clock, sleep=sleep, align_stamps=True)
    with pytest.raises(BundleError, match="did not advance within"):
        windows.stamp()


def test_measure_trial_with_fake_device() -> None:
    now, clock, sleep = fake_time()
    counter = SteppedCounter(now, 120.0)

    def run(n: int) -> float:
        now[0] += n * 0.04
        counter.watts = 120.0  # power constant: the adjusted energy must be ~0
        return n * 40.0

    tel = en.Telemetry(30, 120.0, 1980, 2619, None)
    windows = en.EnergyWindows(counter, clock=clock, sleep=sleep, align_stamps=True)
    trial = windows.measure_trial(0, 250, run, lambda: tel, settle_s=1.0, idle_s=3.0)
    fig = trial.figures()
    assert fig["cuda_ms_per_task"] == 40.0
    assert abs(fig["paired_idle_w"] - 120.0) < 1.0
    assert abs(fig["idle_adjusted_mj_per_task"]) < 0.02 * fig["unadjusted_mj_per_task"]
    d = trial.to_dict()
    assert list(d)[:12] == ["trial", "invocations", "idle_before", "idle_after", "active", "telemetry_before",
                            "telemetry_after", "paired_idle_w", "idle_adjusted_mj_per_task",
                            "unadjusted_mj_per_task", "cuda_ms_per_task", "wall_ms_per_task"]
    assert d["idle_before"]["end"]["time_s"] <= d["active"]["start"]["time_s"] < d["active"]["end"]["time_s"]
    again = en.recompute_trial(json.loads(json.dumps(d)))
    assert close(again["idle_adjusted_mj_per_task"], d["idle_adjusted_mj_per_task"])


def _t_quantile_by_integration(df: int) -> float:
    x, w = np.polynomial.legendre.leggauss(200)
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)

    def mass(t: float) -> float:  # P(0 < T < t)
        u = (x + 1) * t / 2
        return float(np.sum(w * c * (1 + u * u / df) ** (-(df + 1) / 2)) * t / 2)

    lo, hi = 0.0, 20.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mass(mid) < 0.475 else (lo, mid)
    return (lo + hi) / 2


def test_t_quantiles() -> None:
    # Published values (two-sided 95 %).
    assert abs(en.t_quantile_975(1) - 12.7062) < 1e-4 and abs(en.t_quantile_975(2) - 4.3027) < 1e-4
    assert abs(en.t_quantile_975(10) - 2.2281) < 1e-4 and abs(en.t_quantile_975(30) - 2.0423) < 1e-4
    for df in (*range(1, 61, 3), 60, 61, 75, 120, 500):
        assert abs(en.t_quantile_975(df) - _t_quantile_by_integration(df)) < 2e-6, df
    with pytest.raises(BundleError):
        en.t_quantile_975(0)


def test_summarise_interval() -> None:
    s = en.summarise([1030.9487807986357, 1096.7292429710044, 1176.045477041575])
    assert close(s["mean"], 1101.2411669370717) and close(s["sample_sd"], 72.65349894231267)
    half = 4.302653 * 72.65349894231267 / math.sqrt(3)
    assert close(s["ci95_low"], s["mean"] - half) and close(s["ci95_high"], s["mean"] + half)
    assert close(s["relative_sd"], 72.65349894231267 / 1101.2411669370717)
    with pytest.raises(BundleError, match="at least 2"):
        en.summarise([1.0])


def _cache_audit_trials(name: str) -> list[float]:
    record = json.loads((ORIGINAL_ARCHIVE / "cache-audit" / name).read_text())
    energy = record["result"]["energy"] if "result" in record else record["energy"]
    return [t["idle_adjusted_mj_per_task"] for t in energy["trials"]]


def test_ratio_of_means_fieller() -> None:
    small = [1071.6258801087217, 1002.5748159573074, 981.0564216797158]
    base = [1059.7543262993806, 1000.6192837807083, 948.5655289801525]
    r = en.ratio_of_means(small, base)
    assert close(r["ratio"], 1.0153934581408548, 1e-12)
    assert r["bounded"] and r["ci95_low"] < r["ratio"] < r["ci95_high"]
    # Endpoints solve (a - R b)^2 = t^2 (va + R^2 vb).
    a, b = np.mean(small), np.mean(base)
    va, vb = np.var(small, ddof=1) / 3, np.var(base, ddof=1) / 3
    for root in (r["ci95_low"], r["ci95_high"]):
        assert math.isclose((a - root * b) ** 2, r["t_quantile"] ** 2 * (va + root**2 * vb), rel_tol=1e-9)
    wide = en.ratio_of_means([1.0, 2.0, 3.0], [0.1, 5.0, -4.0])
    assert not wide["bounded"] and wide["ci95_low"] is None


def test_cache_audit_trials_match_the_spec_values() -> None:
    zero = _cache_audit_trials("zero-workspace.json")  # the shipped record holds per-trial energy
    assert close(en.summarise(zero)["mean"], 994.918786255717, 1e-12)
