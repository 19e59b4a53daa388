"""Writer against verifier: the same figures from the same raw data by two separate implementations.

``bundle/`` (the writer) and ``verify/arith`` + ``verify/checks`` (the verifier) compute energy per
window and per task, summaries with t intervals, Fieller ratios, the between-board spread, counter
normalisation, report agreement, accuracy, peak-memory reductions and overlaps each with their own
code. Here both run on the recorded NVML log under ``tests/recorded/nvml``, the recorded ncu output
under ``tests/recorded/ncu`` and the raw files of every kept GPU archive, and must agree within the
tolerances below.
"""

from __future__ import annotations

import gzip
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bundle import archive
from bundle import energy as writer_energy
from bundle import profile as writer_counters
from bundle.phases import compare as writer_compare
from bundle.phases import energy as writer_phase
from bundle.phases import qualify as writer_qualify
from protocol import data, ncu
from protocol.energy_design import PER_TASK_KEYS
from verify.arith import counters as verifier_counters
from verify.arith import energy as verifier_energy
from verify.arith import timing as verifier_timing
from verify.checks import accuracy as verifier_accuracy
from verify.checks import memory as verifier_memory
from verify.checks.run_energy import T_INTERPOLATED_REL_TOL, T_TABLE_REL_TOL

REPO = Path(__file__).resolve().parents[2]
ARCHIVES = ("h200-20261202", "h200-fused-cuda-20261205", "h200-fused-cuda-20261204e")
NCU_RECORDED = REPO / "tests" / "recorded" / "ncu"

SAME_FORMULA_REL_TOL = 1e-12
"""Figures both sides compute with the same formula in another order (sums, statistics.mean against
numpy's mean): rounding only."""
ROOTS_REL_TOL = 1e-12
"""Fieller bounds from the same quantile: both sides solve the same quadratic, the writer with the
textbook formula, the verifier in the form without cancellation (measured: at most 2.1e-14 apart on the
kept archives)."""
BOUND_REL_TOL = 1e-2
"""Fieller bounds with the exact quantile against the writer's with its interpolated one: the quantile
differs by up to :data:`T_INTERPOLATED_REL_TOL` (df >= 3) and a bound moves by less than that share of
the interval's half-width, itself below the bound on the kept archives."""
T_DEPENDENT = ("t_quantile", "ci95_low", "ci95_high", "g")


def _close(a: Any, b: Any, rel: float, where: str) -> None:
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), (where, a, b)
        for k in a:
            _close(a[k], b[k], rel, f"{where}.{k}")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, rel, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert math.isclose(a, b, rel_tol=rel, abs_tol=1e-12), (where, a, b)
    else:
        assert a == b, (where, a, b)


def _json(path: Path) -> Any:
    return archive.read_json_gz(path)


def _energy_records(name: str) -> list[Path]:
    folder = REPO / "evidence" / name / "energy"
    return sorted(p for p in folder.glob("trial-*.json.gz"))


def _designs(name: str) -> list[Path]:
    folder = REPO / "evidence" / name / "energy"
    return sorted(folder.glob("interleaved*.json.gz")) + sorted(folder.glob("learners.json.gz"))


def _summary_pair(values: list[float], where: str, w: dict | None = None, v: dict | None = None) -> None:
    """Writer's summarise against the verifier's summary: exact t at the integer df within the table's rounding."""
    w = writer_energy.summarise(values) if w is None else w
    v = verifier_energy.summary(values) if v is None else v
    _close({k: w[k] for k in w if k not in T_DEPENDENT}, {k: v[k] for k in v if k not in T_DEPENDENT},
           SAME_FORMULA_REL_TOL, where)
    assert math.isclose(w["t_quantile"], v["t_quantile"], rel_tol=T_TABLE_REL_TOL), (where, w["t_quantile"])
    _close(w, verifier_energy.summary(values, t=w["t_quantile"]), SAME_FORMULA_REL_TOL, where)


def _ratio_pair(num: list[float], den: list[float], where: str) -> None:
    """Writer's ratio_of_means against the verifier's fieller_ratio."""
    w = writer_energy.ratio_of_means(num, den)
    v = verifier_energy.fieller_ratio(num, den)
    _close({k: w[k] for k in ("ratio", "df", "bounded", "method")}, {k: v[k] for k in ("ratio", "df", "bounded", "method")},
           SAME_FORMULA_REL_TOL, where)
    assert math.isclose(w["t_quantile"], v["t_quantile"], rel_tol=T_INTERPOLATED_REL_TOL), (where, w["df"], w["t_quantile"],
                                                                                            v["t_quantile"])
    same_t = verifier_energy.fieller_ratio(num, den, t=w["t_quantile"])
    _close({k: w[k] for k in T_DEPENDENT}, {k: same_t[k] for k in T_DEPENDENT}, ROOTS_REL_TOL, where)
    if w["bounded"]:
        for key in ("ci95_low", "ci95_high"):
            assert math.isclose(w[key], v[key], rel_tol=BOUND_REL_TOL), (where, key, w[key], v[key])


def test_recorded_nvml_log_replayed_by_the_writer_gives_the_verifiers_trial_figures():
    from bundle import nvml  # noqa: PLC0415
    from tests.bundle.test_energy_recorded import LOG, _replay  # noqa: PLC0415

    out, _ = _replay(nvml.ReplayBackend.from_file(LOG))
    for i, trial in enumerate(out["trials"]):
        w = writer_energy.recompute_trial(trial)
        v = verifier_energy.trial(trial)
        _close({k: w[k] for k in v}, v, SAME_FORMULA_REL_TOL, f"{LOG.name} trial {i}")
        for window in ("idle_before", "active", "idle_after"):
            _close(w[window], verifier_energy.window(trial[window]), SAME_FORMULA_REL_TOL, f"trial {i} {window}")


@pytest.mark.parametrize("name", ARCHIVES)
def test_energy_per_task_of_every_trial_record(name):
    records = _energy_records(name)
    assert records, f"no energy trial records in {name}"
    for path in records:
        for i, trial in enumerate(_json(path)["energy"]["trials"]):
            w = writer_energy.recompute_trial(trial)
            v = verifier_energy.trial(trial)
            _close({k: w[k] for k in v}, v, SAME_FORMULA_REL_TOL, f"{path.name} trial {i}")


@pytest.mark.parametrize("name", ARCHIVES)
def test_summaries_and_ratios_of_every_design(name):
    designs = _designs(name)
    assert designs, f"no energy design summary in {name}"
    for path in designs:
        rec = _json(path)
        arms: dict[str, dict[str, list[float]]] = {}
        for t in rec["trials"]:
            arm = t["workspace"] if path.name.startswith("interleaved") else f"{t['learner']} {t['workspace']}"
            for k in PER_TASK_KEYS:
                arms.setdefault(arm, {}).setdefault(k, []).append(t[k])
        for arm, figures in arms.items():
            for k, values in figures.items():
                _summary_pair(values, f"{path.name} {arm} {k}")
        for arm in arms:
            if arm != rec["baseline"]:
                for k in ("idle_adjusted_mj_per_task", "unadjusted_mj_per_task", "cuda_ms_per_task"):
                    _ratio_pair(arms[arm][k], arms[rec["baseline"]][k], f"{path.name} {arm}/{rec['baseline']} {k}")


def test_between_boards_spread():
    """Two designs (the kept interleaved one, and it again on a second board with the trials' figures
    scaled by 1.01): the writer's spread against the verifier's."""
    first = _json(REPO / "evidence" / "h200-20261202" / "energy" / "interleaved.json.gz")
    second = _json(REPO / "evidence" / "h200-20261202" / "energy" / "interleaved.json.gz")
    second["gpu"]["uuid"] = "GPU-second-board"
    for per_key in second["summaries"].values():
        for s in per_key.values():
            s["mean"] *= 1.01
    for per_key in second["ratios_vs_baseline"].values():
        per_key["idle_adjusted_mj_per_task"]["ratio"] *= 0.99
    w = writer_phase.between_boards([first, second])
    v = verifier_energy.between_boards([first, second], workspaces=(":4096:8", ":16:8", ":0:0"), baseline=":4096:8",
                                       keys=writer_phase.SPREAD_KEYS)
    _close({k: w[k] for k in ("per_board_means", "per_board_idle_adjusted_ratio_vs_baseline")},
           {k: v[k] for k in ("per_board_means", "per_board_idle_adjusted_ratio_vs_baseline")}, SAME_FORMULA_REL_TOL, "")
    for ws, per_key in w["spread_of_means"].items():
        for k in per_key:
            _summary_pair(w["per_board_means"][ws][k], f"spread {ws} {k}", w["spread_of_means"][ws][k],
                          v["spread_of_means"][ws][k])
    for ws, values in w["per_board_idle_adjusted_ratio_vs_baseline"].items():
        _summary_pair(values, f"spread of ratios {ws}", w["spread_of_ratios"][ws], v["spread_of_ratios"][ws])


def _rows_of(metric_rows: dict) -> dict:
    return {k: {"raw_value": r["raw_value"], "raw_unit": r["raw_unit"], "value": r["value"]} for k, r in metric_rows.items()}


@pytest.mark.parametrize("name", ARCHIVES)
def test_counter_normalisation_of_every_profile_run_and_summary(name):
    folder = REPO / "evidence" / name / "profile"
    runs = sorted(p for p in folder.glob("workspace-*-r[0-9][0-9].json.gz"))
    assert runs, f"no profile runs in {name}"
    figures = {}
    for path in runs:
        rec = _json(path)
        scope = rec["scope"]
        s = ncu.SEQUENCES_IN_RANGE[scope]
        w = writer_counters.normalise_counters(rec["metric_rows"], s, scope)
        v = verifier_counters.per_sequence(rec["metric_rows"], s, scope)
        _close(w, v, SAME_FORMULA_REL_TOL, path.name)
        figures[path.name[: -len(".json.gz")]] = {k: x for k, x in v.items() if k != "counter_unit"}
    for key, entry in _json(folder / "profiles.json.gz")["profiles"].items():
        reps = [figures[r] for r in entry["runs"]]
        if len(reps) >= 2:
            _close(writer_counters.summarise_repeats(reps), verifier_counters.repeat_summary(reps),
                   SAME_FORMULA_REL_TOL, f"profiles {key}")


@pytest.mark.parametrize("csv_path", sorted(NCU_RECORDED.glob("*.csv")), ids=lambda p: p.stem)
def test_counter_normalisation_of_every_recorded_ncu_csv(csv_path):
    rows = ncu.parse_raw_csv(csv_path.read_text())
    table = {k: {"raw_value": r.raw_value, "raw_unit": r.raw_unit, "value": r.value} for k, r in rows.metrics.items()}
    for scope, s in ncu.SEQUENCES_IN_RANGE.items():
        _close(writer_counters.normalise_counters(rows, s, scope), verifier_counters.per_sequence(table, s, scope),
               SAME_FORMULA_REL_TOL, f"{csv_path.name} {scope}")


@pytest.mark.parametrize("report", sorted(NCU_RECORDED.glob("*.ncu-rep.gz")), ids=lambda p: p.name)
def test_report_agreement_on_every_recorded_report(report, tmp_path):
    module, reason = ncu.import_ncu_report()
    if module is None:
        pytest.skip(reason)
    target = tmp_path / report.name[: -len(".gz")]
    target.write_bytes(gzip.decompress(report.read_bytes()))
    values = ncu.read_report_values(module, target)
    rows = ncu.parse_raw_csv((NCU_RECORDED / report.name.replace(".ncu-rep.gz", ".csv")).read_text())
    assert writer_counters.compare_report_values(rows, values) == verifier_counters.report_agreement(rows, values)


@pytest.mark.parametrize("name", ARCHIVES)
def test_accuracy_from_predictions_and_labels(name):
    folder = REPO / "evidence" / name / "qualify"
    draws = sorted(int(p.name[5:7]) for p in folder.glob("draw-*.predictions.npy"))
    assert draws, f"no predictions in {name}"
    w = writer_qualify.score_predictions(folder, draws)
    corrects = []
    for row, i in zip(w["rows"], draws, strict=True):
        correct, confusion = verifier_accuracy.score(np.load(folder / f"draw-{i:02d}.predictions.npy", allow_pickle=False),
                                                     data.evaluation_labels(i))
        corrects.append(correct)
        assert (row["correct"], row["confusion_matrix"]) == (correct, confusion.tolist()), (name, i)
    v = verifier_accuracy.aggregate(corrects)
    _close({k: w[k] for k in v}, v, SAME_FORMULA_REL_TOL, f"{name} accuracy")


def test_peak_memory_reductions():
    folder = REPO / "evidence" / "h200-20261202" / "compare"
    peaks = {ws: _json(folder / f"workspace{ws.replace(':', '-')}.json.gz")["memory"]["prepare_and_invoke_peak_allocated_bytes"]
             for ws in (":4096:8", ":16:8", ":0:0")}
    for ws in (":16:8", ":0:0"):
        w = writer_compare.reduction(peaks[":4096:8"], peaks[ws])
        v = verifier_memory.reductions(peaks[":4096:8"], peaks[ws])
        _close({k: w[k] for k in v}, v, SAME_FORMULA_REL_TOL, ws)


@pytest.mark.parametrize("name", ARCHIVES)
def test_overlapping_draws(name):
    spans = {}
    for path in sorted((REPO / "evidence" / name / "qualify").glob("draw-[0-9][0-9].json.gz")):
        c = _json(path).get("concurrency")
        if isinstance(c, dict):
            spans[int(path.name[5:7])] = (float(c["started_s"]), float(c["finished_s"]))
    if not spans:
        pytest.skip(f"{name} records no qualification spans")
    assert writer_qualify.overlaps(spans) == verifier_timing.overlaps(spans)
