"""Forgeries and omissions a break-in attempt found passing, each on a real copy of a shipped archive.

Every test changes the real archive the way the attempt did (records rewritten, the manifest
rebuilt so integrity passes) and asserts the verifier now FAILs it, naming the check.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from bundle import archive
from bundle.cli import app
from tests.conftest import H200_ARCHIVE, ORIGINAL_ARCHIVE, forge_record, linked_copy
from verify.registry import verify_archive

pytestmark = [pytest.mark.skipif(not H200_ARCHIVE.is_dir() or not ORIGINAL_ARCHIVE.is_dir(),
                                 reason="the shipped archives are absent"),
              pytest.mark.usefixtures("hidden_ncu_report")]


_forge = forge_record


def _failed_ids(root: Path) -> set[str]:
    return {r.check_id for r in verify_archive(root).failures()}


def test_cuda_event_time_longer_than_its_wall_window_fails(tmp_path):
    root = linked_copy(H200_ARCHIVE, tmp_path)

    def longer(rec: dict) -> None:
        rec["energy"]["trials"][0]["cuda_elapsed_ms"] *= 1.05

    _forge(root, "energy/trial-r00-workspace-16-8.json.gz", longer)
    assert "energy.trial.cuda_wall_ratio" in _failed_ids(root)


def test_repeat_0_report_dropped_and_marked_not_stored_fails(tmp_path):
    root = linked_copy(H200_ARCHIVE, tmp_path)
    rel = "profile/workspace-16-8-task-r00.json.gz"
    report_rel = f"profile/{archive.read_json_gz(root / rel)['files']['ncu_report']['path']}"

    def drop(rec: dict) -> None:
        entry = rec["files"]["ncu_report"]
        entry.update(path=None, stored=False, reason="not stored to keep the archive lean: one report per profile "
                     "is kept (repeat 0); this one was cross-checked at run time")
        entry.pop("sha256", None)

    (root / report_rel).unlink()
    _forge(root, rel, drop)
    assert "profile.files.first_report_kept" in _failed_ids(root)


def test_a_restored_original_prediction_file_that_goes_missing_fails(tmp_path):
    root = linked_copy(ORIGINAL_ARCHIVE, tmp_path)
    (root / "predictions" / "draw-02.npy").unlink()
    rep = verify_archive(root)
    assert not rep.ok
    assert [(r.check_id, r.subject) for r in rep.failures()] == [("original.integrity.restored_missing",
                                                                  "predictions/draw-02.npy")]


def test_an_evidence_folder_without_its_manifest_is_never_skipped(tmp_path, monkeypatch):
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    linked_copy(H200_ARCHIVE, evidence)
    (evidence / H200_ARCHIVE.name / "manifest.json").unlink()
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["verify"])
    assert res.exit_code == 2
    assert res.output.strip().splitlines() == [
        f"rev88: error: not an evidence archive (evidence/{H200_ARCHIVE.name}): it has no manifest.json and is not "
        "the original layout; pass evidence/<run-id> or evidence/rev88-original"]


@pytest.mark.slow
def test_a_cpu_diagnostic_fails_once_per_cause_not_with_schema_noise(tmp_path):
    """`rev88 reproduce --device cpu --phases validate,compare`: real CPU jobs, then the verifier."""
    pytest.importorskip("torch")
    run_dir = tmp_path / "cpu-diagnostic"
    res = CliRunner().invoke(app, ["reproduce", "--engine", "native", "--device", "cpu", "--phases", "validate,compare",
                                   "--out", str(run_dir)])
    assert res.exit_code == 1, res.output  # it ran, and its verification fails: not protocol evidence
    rep = verify_archive(run_dir)
    assert {r.check_id for r in rep.failures()} == {"compare.config.device", "consistency.environment.cuda_device"}
    folded = [r for r in rep if r.reason.startswith("not checked: ") and "--device cpu diagnostic" in r.reason]
    assert folded and all(r.subject.split("/")[0] in ("compare", "validate") for r in folded)


@pytest.mark.parametrize(("literal", "message"), [(b"1e999", "the number 1e999 overflows to infinity"),
                                                  (b"9" * 100_000, "an integer of 100000 digits is not a figure")])
def test_an_overflowing_number_in_the_manifest_is_one_line(tmp_path, literal, message):
    root = linked_copy(H200_ARCHIVE, tmp_path)
    text = (root / "manifest.json").read_bytes()
    size = b'"size_bytes": '
    start = text.index(size) + len(size)
    end = start + len(text[start:].split(b",")[0].split(b"}")[0])
    (root / "manifest.json").unlink()
    (root / "manifest.json").write_bytes(text[:start] + literal + text[end:])
    res = CliRunner().invoke(app, ["verify", str(root)])
    assert res.exit_code == 1
    fails = [line for line in res.output.splitlines() if line.startswith("  FAIL ")]
    assert len(fails) == 1 and "manifest.json" in fails[0], res.output
    assert message in " ".join(res.output.split()), res.output
