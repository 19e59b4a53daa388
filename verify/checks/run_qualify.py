"""Checks of a run archive's ``qualify/`` phase: per-draw records, predictions, accuracy record.

Formats are the writer's (bundle/phases/qualify.py ``draw_record`` and
``score_predictions``). Every required field is read typed: a missing or wrong-typed field
is one FAIL naming the file and the key. Each draw is checked on its own
(:func:`verify.result.guarded`), so one malformed record does not hide the others. The
evaluation labels are read only here, after integrity passed for the whole archive.
"""

from __future__ import annotations

import io

import numpy as np

from protocol import data
from verify.checks import FLOAT_ABS_TOL, FLOAT_REL_TOL, accuracy, draws
from verify.checks.run import check_prediction_file
from verify.integrity import ArchiveFiles
from verify.records import get, get_list, get_str
from verify.result import CheckResult, Status, check_close, check_equal, check_field, failed, guarded, passed

SCHEMA_VERSION = 1
ACCURACY = "qualify/accuracy.json.gz"


def draw_record_path(i: int) -> str:
    """Archive path of draw *i*'s record."""
    return f"qualify/draw-{i:02d}.json.gz"


def check_draw_identity(rec: object, i: int, rel: str) -> list[CheckResult]:
    """The identity fields of ``qualify/draw-XX.json.gz`` name draw *i* (the file name's index).

    ``draw_index`` (int) = i, ``dataset_seed`` (int) = 2026091400 + i, ``schema_version``,
    ``train_count``/``test_count`` (int, 10,000 each, also in ``metadata``),
    ``predictions_file`` = ``draw-XX.predictions.npy``, ``train_test_disjoint`` true, the
    draw's index and label hashes recomputed from the raw files, and the frozen config.
    """
    def field(check_id: str, key: str, kind: type, want: object) -> CheckResult:
        return check_field(check_id, rel, rec, key, kind, want, where=rel)

    out = [field("qualify.record.schema_version", "schema_version", int, SCHEMA_VERSION),
           field("qualify.record.draw_index", "draw_index", int, i),
           field("qualify.record.dataset_seed", "dataset_seed", int, data.dataset_seed(i)),
           field("qualify.record.train_count", "train_count", int, data.TRAIN_COUNT),
           field("qualify.record.test_count", "test_count", int, data.TEST_COUNT),
           field("qualify.record.metadata_train_count", "metadata.train_count", int, data.TRAIN_COUNT),
           field("qualify.record.metadata_test_count", "metadata.test_count", int, data.TEST_COUNT),
           field("qualify.record.predictions_file", "predictions_file", str, f"draw-{i:02d}.predictions.npy"),
           field("qualify.record.train_test_disjoint", "train_test_disjoint", bool, True)]
    out += guarded("qualify.record.hashes", rel, lambda: draws.check_draw_record_hashes(
        i, {k: get(rec, k, (str, dict), rel) for k in ("train_indices_sha256", "test_indices_sha256", "input_hashes")},
        subject=rel, where=rel, images="exact"))
    out += guarded("qualify.record.metadata_hashes", rel, lambda: [
        check_equal("qualify.record.metadata_predictions_sha256", rel, get_str(rec, "metadata.predictions_sha256", rel),
                    get_str(rec, "predictions_sha256", rel), what="metadata vs record predictions_sha256"),
        draws.check_epoch_permutations(get_list(rec, "epoch_permutation_sha256", rel), n=data.TRAIN_COUNT,
                                       seed=get(rec, "config.seed", int, rel), subject=rel)])
    return out


def _check_draw_record(f: ArchiveFiles, i: int, path: str) -> list[CheckResult]:
    """Draw *i*'s record: identity fields and its prediction file against the frozen reference."""
    rel = draw_record_path(i)
    if not f.has(rel):
        return [failed("accuracy.draw.record", f"draw-{i:02d}", f"{rel} missing")]
    rec = f.json(rel)
    return check_draw_identity(rec, i, rel) + guarded("run.predictions.error", rel, lambda: check_prediction_file(
        f, path, subject=rel, count=data.TEST_COUNT, payload_sha=get_str(rec, "predictions_sha256", rel),
        draw=i, file_sha=get_str(rec, "predictions_file_sha256", rel)))


def _rescore(f: ArchiveFiles, i: int, path: str) -> list[CheckResult]:
    """Draw *i*'s stored predictions scored against its evaluation labels."""
    arr = np.load(io.BytesIO(f.read(path)), allow_pickle=False)
    correct, confusion = accuracy.score(arr, data.evaluation_labels(i))
    return [passed("accuracy.draw.correct", f"draw-{i:02d}", recomputed=correct,
                   reason="rescored against the evaluation labels after every hash matched"),
            passed("accuracy.draw.confusion", f"draw-{i:02d}", recomputed=confusion.tolist())]


def check_accuracy_record(acc: object, corrects: list[int], confusions: list[list]) -> list[CheckResult]:
    """``qualify/accuracy.json.gz`` against the rescored draws: aggregate, draws, rows, confusion.

    Required (typed): ``draws`` = [0…10], ``complete_protocol`` true, ``rows`` (a list of 11:
    draw, dataset_seed, correct, total, accuracy_percent, test_labels_sha256,
    confusion_matrix per draw), ``required_correct`` 96,800, summed ``confusion_matrix``,
    plus the aggregate of :func:`verify.checks.accuracy.check_aggregate`.
    """
    rel = ACCURACY
    out = guarded("accuracy.aggregate.error", rel, lambda: accuracy.check_aggregate(acc, corrects, subject=rel,
                                                                                       where=rel))
    out += [check_field("accuracy.record.draws", rel, acc, "draws", list, list(range(data.DRAW_COUNT)), where=rel),
            check_field("accuracy.record.complete_protocol", rel, acc, "complete_protocol", bool, True, where=rel),
            check_field("accuracy.record.required_correct", rel, acc, "required_correct", int,
                        accuracy.REQUIRED_CORRECT, where=rel),
            check_field("accuracy.record.confusion_matrix", rel, acc, "confusion_matrix", list,
                        np.sum(np.asarray(confusions, dtype=np.int64), axis=0).tolist(), where=rel)]
    rows = guarded("accuracy.rows", rel, lambda: [check_equal("accuracy.rows", rel, len(get_list(acc, "rows", rel)),
                                                              data.DRAW_COUNT, what="number of rows")])
    out += rows
    if rows[0].status is Status.FAIL:
        return out
    out.append(check_equal("accuracy.rows.correct", rel, [r.get("correct") if isinstance(r, dict) else r
                                                         for r in acc["rows"]], corrects, what="rows' correct"))
    for i, row in enumerate(acc["rows"]):
        s, w = f"{rel} rows.{i}", f"{rel}: rows.{i}"
        out += [check_field("accuracy.row.draw", s, row, "draw", int, i, where=w),
                check_field("accuracy.row.dataset_seed", s, row, "dataset_seed", int, data.dataset_seed(i), where=w),
                check_field("accuracy.row.correct", s, row, "correct", int, corrects[i], where=w),
                check_field("accuracy.row.total", s, row, "total", int, data.TEST_COUNT, where=w),
                check_field("accuracy.row.test_labels_sha256", s, row, "test_labels_sha256", str,
                            draws.draw_hashes(i)["test_labels_sha256"], where=w),
                check_field("accuracy.row.confusion_matrix", s, row, "confusion_matrix", list, confusions[i], where=w)]
        out += guarded("accuracy.row.accuracy_percent", s, lambda row=row, i=i, s=s, w=w: [check_close(
            "accuracy.row.accuracy_percent", s, get(row, "accuracy_percent", float, w), 100.0 * corrects[i] /
            data.TEST_COUNT, rel_tol=FLOAT_REL_TOL, abs_tol=FLOAT_ABS_TOL, what="accuracy_percent")])
    return out


def check_qualify(f: ArchiveFiles) -> list[CheckResult]:
    """qualify/: each draw's record and predictions, all 11 rescored; aggregate vs accuracy.json.gz."""
    if not any(p.startswith("qualify/") for p in f.content):
        return []
    out: list[CheckResult] = []
    corrects: list[int] = []
    confusions: list[list] = []
    for i in range(data.DRAW_COUNT):
        path = f"qualify/draw-{i:02d}.predictions.npy"
        if not f.has(path):
            out.append(failed("accuracy.draw.present", f"draw-{i:02d}", f"{path} missing: all 11 draws are required"))
            continue
        out += guarded("qualify.record.error", draw_record_path(i), lambda i=i, path=path: _check_draw_record(f, i, path))
        scored = guarded("accuracy.draw.error", path, lambda i=i, path=path: _rescore(f, i, path))
        out += scored
        if scored[0].status is Status.PASS:
            corrects.append(scored[0].recomputed)
            confusions.append(scored[1].recomputed)
    if len(corrects) != data.DRAW_COUNT:
        return out
    if f.has(ACCURACY):
        acc = f.json(ACCURACY)
        out += check_accuracy_record(acc, corrects, confusions)
    else:
        out.append(failed("accuracy.record", ACCURACY, "accuracy record absent"))
    return out
