"""A run whose compare or validate did not compare with the frozen reference FAILs, on every device.

Each test rewrites one record of a hard-linked copy of the shipped H200 archive (its compare and
validate were compared with the frozen reference), rebuilds the manifest so that integrity passes,
and checks the verdict of the presence check: the forged ``null`` is what a writer that could not
find the reference used to record silently.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import H200_ARCHIVE, REPO_ROOT, forge_record, linked_copy
from verify.registry import verify_archive
from verify.result import Status

ORIGINAL = REPO_ROOT / "evidence" / "rev88-original"
VALIDATION = "validate/validation.json.gz"
COMPARISON = "compare/comparison.json.gz"
pytestmark = [pytest.mark.skipif(not H200_ARCHIVE.is_dir() or not ORIGINAL.is_dir(),
                                 reason="the shipped archives are absent"),
              pytest.mark.usefixtures("hidden_ncu_report")]


def _forge(tmp_path: Path, rel: str, **changes) -> Path:
    """A copy of the H200 archive with *changes* applied to the record *rel* and the manifest rebuilt."""
    root = linked_copy(H200_ARCHIVE, tmp_path)
    forge_record(root, rel, lambda record: record.update(changes))
    return root


def _verdicts(root: Path, check_id: str) -> tuple[list[Status], set[str]]:
    report = verify_archive(root)
    failed = {r.check_id for r in report.failures()}
    assert not any(c.startswith("integrity.") for c in failed), failed
    return [r.status for r in report.results if r.check_id == check_id], failed


def test_the_shipped_archive_passes_both_presence_checks():
    report = verify_archive(H200_ARCHIVE)
    for check_id in ("validate.original_comparison.present", "compare.frozen_reference.present"):
        assert [r.status for r in report.results if r.check_id == check_id] == [Status.PASS], check_id


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_a_null_original_comparison_fails(tmp_path, device):
    changes = {"original_comparison": None} | ({"device": "cpu"} if device == "cpu" else {})
    statuses, failed = _verdicts(_forge(tmp_path, VALIDATION, **changes), "validate.original_comparison.present")
    assert statuses == [Status.FAIL], failed


@pytest.mark.parametrize("missing", ["frozen_reference", "predictions_bit_equal_to_frozen_reference"])
def test_a_null_frozen_comparison_of_a_draw_fails(tmp_path, missing):
    statuses, failed = _verdicts(_forge(tmp_path, COMPARISON, **{missing: None}), "compare.frozen_reference.present")
    assert statuses == [Status.FAIL], failed


def test_a_frozen_comparison_recorded_for_custom_inputs_fails(tmp_path):
    root = _forge(tmp_path, COMPARISON, draw_index=None)
    statuses, _ = _verdicts(root, "compare.frozen_reference.present")
    assert statuses == [Status.FAIL]
