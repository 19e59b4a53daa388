"""Accuracy checks: counts, confusion matrices and the qualification decision (spec 7.1, 9.1).

Per draw: correct = #(pred == truth); confusion = bincount(10·truth + pred, 100) as 10×10
(rows = true class), trace = correct, sum = 10,000. Aggregate over the 11 draws: correct
sum, mean percent = correct / 1100, error percent = (110000 − correct) / 1100, sample SD
(ddof 1) of the per-draw accuracy percents, decision = correct >= 96,800.
"""

from __future__ import annotations

import numpy as np

from protocol.data import DRAW_COUNT, TEST_COUNT
from verify.checks import FLOAT_ABS_TOL, FLOAT_REL_TOL
from verify.records import get
from verify.result import CheckResult, check_close, check_equal, check_true

TOTAL = DRAW_COUNT * TEST_COUNT
REQUIRED_CORRECT = 96_800
"""88 % of 110,000 (the 12 % error target), as the original protocol records."""


def check_prediction_array(arr: np.ndarray, *, subject: str, count: int = TEST_COUNT) -> list[CheckResult]:
    """Predictions are int64 (count,) with values 0…9."""
    ok = arr.dtype == np.int64 and arr.shape == (count,) and (arr.size == 0 or (arr.min() >= 0 and arr.max() <= 9))
    return [check_true("accuracy.predictions_array", subject, bool(ok),
                       f"predictions must be int64 ({count},) in 0..9, got {arr.dtype} {arr.shape}",
                       recomputed=[str(arr.dtype), list(arr.shape)])]


def score(predictions: np.ndarray, labels: np.ndarray) -> tuple[int, np.ndarray]:
    """Correct count and 10×10 confusion matrix (rows true class, columns predicted).

    Args:
        predictions: int64 (M,) in 0…9.
        labels: int64 (M,) in 0…9.

    Returns:
        (correct, int64 (10, 10)).
    """
    confusion = np.bincount(10 * labels.astype(np.int64) + predictions.astype(np.int64), minlength=100)
    confusion = confusion[:100].reshape(10, 10)
    correct = int((predictions == labels).sum())
    if int(np.trace(confusion)) != correct or int(confusion.sum()) != len(labels):
        raise ValueError("confusion matrix inconsistent with the counts (predictions outside 0..9?)")
    return correct, confusion


def aggregate(corrects: list[int], per_draw_total: int = TEST_COUNT) -> dict:
    """Aggregate figures over draws, as the original's accuracy.json."""
    correct = int(sum(corrects))
    total = per_draw_total * len(corrects)
    percents = np.asarray([100.0 * c / per_draw_total for c in corrects], dtype=np.float64)
    return {
        "correct": correct,
        "total": total,
        "accuracy_percent": correct / (total / 100.0),
        "sample_sd_pp": float(percents.std(ddof=1)) if len(corrects) > 1 else float("nan"),
        "error_percent": (total - correct) / (total / 100.0),
        "meets_12_percent_error_target": correct >= REQUIRED_CORRECT,
    }


def check_aggregate(recorded: dict, corrects: list[int], *, subject: str, where: str,
                    key_map: dict[str, str] | None = None) -> list[CheckResult]:
    """Compare a recorded aggregate block with :func:`aggregate` of the per-draw counts.

    Args:
        recorded: block holding correct/total/accuracy_percent/sample_sd_pp/error_percent
            (and optionally meets_12_percent_error_target).
        key_map: our key -> recorded key where the record names it differently
            (e.g. ``{"accuracy_percent": "mean_percent"}``); a value of "" skips the key.
    """
    key_map = key_map or {}
    agg = aggregate(corrects)
    out: list[CheckResult] = [check_equal("accuracy.draw_count", subject, len(corrects), DRAW_COUNT,
                                          what="draws aggregated")]
    for key, value in agg.items():
        rkey = key_map.get(key, key)
        if rkey == "" or (key == "meets_12_percent_error_target" and rkey not in recorded):
            continue
        rec = get(recorded, rkey, bool if isinstance(value, bool) else int if isinstance(value, int) else float, where)
        if isinstance(value, bool) or isinstance(value, int):
            out.append(check_equal(f"accuracy.aggregate.{key}", subject, rec, value, what=rkey))
        else:
            out.append(check_close(f"accuracy.aggregate.{key}", subject, rec, value, rel_tol=FLOAT_REL_TOL,
                                   abs_tol=FLOAT_ABS_TOL, what=rkey))
    out.append(check_true("accuracy.decision", subject, agg["correct"] >= REQUIRED_CORRECT,
                          f"{agg['correct']} correct < required {REQUIRED_CORRECT}: does not qualify",
                          recomputed=agg["correct"]))
    return out
