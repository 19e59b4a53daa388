"""The ``learners`` energy design (``energy/learners.json.gz``) through the verifier.

The archive is made from the real single-board one: its 15 interleaved trial records are copied as
the three arms of the learners design — the ``:16:8`` trials as ``rev88 :16:8``, the ``:0:0`` trials
as ``rev88 :0:0`` and the ``:4096:8`` trials as ``rev88-fused :16:8`` (workspace relabelled and a
``learner`` block added) — under the learners stems, next to the untouched interleaved design; the
writer's own :func:`bundle.phases.energy.learners_summary` makes the summary and the manifest is
rebuilt. The verifier must pass it and fail each forgery.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest

from bundle import archive
from bundle.phases import energy as phase
from tests.conftest import REPO_ROOT, linked_copy
from verify.registry import verify_archive

ARCHIVE = REPO_ROOT / "evidence" / "h200-20261202"
SOURCE_WORKSPACE = {("rev88", ":16:8"): ":16:8", ("rev88", ":0:0"): ":0:0", ("rev88-fused", ":16:8"): ":4096:8"}
FUSED = {"name": "rev88-fused", "kernel_source_sha256": hashlib.sha256(b"rev88 fused kernels").hexdigest(),
         "triton_version": "3.5.0", "interpreter": False}
LEARNERS = "energy/learners.json.gz"

pytestmark = pytest.mark.skipif(not ARCHIVE.is_dir(), reason="the shipped H200 archive is absent")


def _rewrite(path: Path, obj: dict) -> None:
    path.unlink()
    archive.write_json_gz(path, obj)


def _remanifest(root: Path) -> None:
    (root / "manifest.json").unlink()
    archive.RunArchive(root).write_manifest()


def learners_archive(tmp_path: Path) -> Path:
    root = linked_copy(ARCHIVE, tmp_path)
    energy = root / "energy"
    inter = archive.read_json_gz(energy / "interleaved.json.gz")
    by_round = {(t["round"], t["workspace"]): t["record"] for t in inter["trials"]}
    records = []
    for r, (learner, ws) in phase.learners_order(inter["settings"]["rounds"]):
        source = by_round[(r, SOURCE_WORKSPACE[(learner, ws)])][: -len(".json.gz")]
        stem = phase.learners_trial_stem(r, learner, ws)
        rec = archive.read_json_gz(energy / f"{source}.json.gz")
        shutil.copyfile(energy / rec["predictions_file"], energy / f"{stem}.predictions.npy")
        if (energy / f"{source}.nvml.jsonl.gz").is_file():  # the trial's NVML log goes with it
            shutil.copyfile(energy / f"{source}.nvml.jsonl.gz", energy / f"{stem}.nvml.jsonl.gz")
        rec["predictions_file"] = f"{stem}.predictions.npy"
        rec["cublas_workspace_config"] = ws
        if learner != "rev88":
            rec["learner"] = dict(FUSED)
        archive.write_json_gz(energy / f"{stem}.json.gz", rec)
        cfg = json.loads((energy / f"{source}.energy-config.json").read_text())
        archive.write_json(energy / f"{stem}.energy-config.json", {**cfg, "workspace_config": ws})
        records.append((r, learner, ws, stem, rec))
    summary = phase.learners_summary(records, inter["settings"], energy, inter["draw_index"])
    summary["completed_at_utc"] = inter["completed_at_utc"]  # as if written within the phase's span
    archive.write_json_gz(root / LEARNERS, summary)
    _remanifest(root)
    return root


def _results(root: Path):
    return verify_archive(root).results


def _fails(root: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in _results(root):
        if r.status.value == "FAIL":
            out.setdefault(r.check_id, []).append(r.subject)
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, "ncu_report", None)
        return learners_archive(tmp_path_factory.mktemp("learners"))


def _forged(built: Path, tmp_path: Path) -> Path:
    return linked_copy(built, tmp_path)


def _edit_summary(root: Path, edit) -> None:
    summary = archive.read_json_gz(root / LEARNERS)
    edit(summary)
    _rewrite(root / LEARNERS, summary)
    _remanifest(root)


def _edit_record(root: Path, position: int, edit) -> None:
    summary = archive.read_json_gz(root / LEARNERS)
    rel = root / "energy" / summary["trials"][position]["record"]
    rec = archive.read_json_gz(rel)
    edit(rec)
    _rewrite(rel, rec)
    summary["trials"][position]["record_sha256"] = archive.file_sha256(rel)  # as a forger would
    _rewrite(root / LEARNERS, summary)
    _remanifest(root)


def test_learners_archive_verifies(built: Path, hidden_ncu_report: None) -> None:
    """The design's checks all pass on the relabelled archive; the relabelling itself is caught.

    The fused arm's trials are rev88 records given a learner block, and their metadata still names
    the frozen learner: ``fixture.learner`` and ``energy.learners.metadata_block`` (the metadata
    has no learner block to agree with) FAIL on exactly those five and nothing else FAILs. The
    real variant archive (tests/verify/test_fused_archive.py) verifies with 0 FAIL.
    """
    results = _results(built)
    fails = [(r.check_id, r.subject) for r in results if r.status.value == "FAIL"]
    assert sorted(fails) == sorted((check, f"energy/trial-r{r:02d}-rev88-fused-workspace-16-8.json.gz")
                                   for r in range(5) for check in ("energy.learners.metadata_block", "fixture.learner"))
    mine = [r for r in results if r.check_id.startswith("energy.learners.") and r.check_id != "energy.learners.metadata_block"]
    assert {r.status.value for r in mine} == {"PASS"}
    ids = {r.check_id for r in mine}
    assert {"energy.learners.order", "energy.learners.arms", "energy.learners.trial_learner",
            "energy.learners.kernel_source_sha256", "energy.learners.summary.idle_adjusted_mj_per_task",
            "energy.learners.ratio.idle_adjusted_mj_per_task", "energy.learners.fields"} <= ids
    summary = archive.read_json_gz(built / LEARNERS)
    assert [a["label"] for a in summary["arms"]] == ["rev88 :16:8", "rev88 :0:0", "rev88-fused :16:8"]
    assert summary["arms"][2]["learner_block"] == FUSED and summary["arms"][0]["learner_block"] is None
    assert set(summary["ratios_vs_baseline"]) == {"rev88 :0:0", "rev88-fused :16:8"}
    # the records of the interleaved design are untouched and still named by it
    inter = archive.read_json_gz(built / "energy/interleaved.json.gz")
    assert not {t["record"] for t in inter["trials"]} & {t["record"] for t in summary["trials"]}
    # every trial's predictions are compared with the frozen draw-0 predictions
    frozen = [r for r in results if r.check_id == "draws.frozen_predictions_sha256"
              and any(t["record"][: -len(".json.gz")] in r.subject for t in summary["trials"])]
    assert len(frozen) == len(summary["trials"]) and all(r.status.value == "PASS" for r in frozen)


@pytest.mark.parametrize("forgery,check", [
    (lambda s: s["summaries"]["rev88-fused :16:8"]["idle_adjusted_mj_per_task"].update(
        mean=s["summaries"]["rev88-fused :16:8"]["idle_adjusted_mj_per_task"]["mean"] * 1.01),
     "energy.learners.summary.idle_adjusted_mj_per_task"),
    (lambda s: s["ratios_vs_baseline"]["rev88 :0:0"]["idle_adjusted_mj_per_task"].update(
        ratio=s["ratios_vs_baseline"]["rev88 :0:0"]["idle_adjusted_mj_per_task"]["ratio"] * 1.01),
     "energy.learners.ratio.idle_adjusted_mj_per_task"),
    (lambda s: s["arms"].insert(0, s["arms"].pop(1)), "energy.learners.arms"),
    (lambda s: s["arms"][2]["learner_block"].update(kernel_source_sha256="0" * 64), "energy.learners.arms"),
    (lambda s: [t.update(learner="rev88", arm="rev88 :16:8") for t in s["trials"] if t["learner"] == "rev88-fused"],
     "energy.learners.order"),
], ids=["summary-mean", "ratio", "arm-order", "arm-kernel-sha", "trial-learner-row"])
def test_summary_forgeries_fail(built: Path, tmp_path: Path, hidden_ncu_report: None, forgery, check) -> None:
    root = _forged(built, tmp_path)
    _edit_summary(root, forgery)
    assert check in _fails(root)


def test_design_in_another_arm_order_fails(built: Path, tmp_path: Path, hidden_ncu_report: None) -> None:
    root = _forged(built, tmp_path)

    def swap(s: dict) -> None:  # round 0 run as fused first: positions renumbered as a writer would
        s["trials"][0], s["trials"][2] = s["trials"][2], s["trials"][0]
        for i, t in enumerate(s["trials"]):
            t["position"] = i
    _edit_summary(root, swap)
    assert "energy.learners.order" in _fails(root)


def test_record_learner_name_forgery_fails(built: Path, tmp_path: Path, hidden_ncu_report: None) -> None:
    root = _forged(built, tmp_path)
    fused = next(t["position"] for t in archive.read_json_gz(root / LEARNERS)["trials"] if t["learner"] == "rev88-fused")
    _edit_record(root, fused, lambda rec: rec["learner"].update(name="rev88"))
    assert "energy.learners.trial_learner" in _fails(root)


def test_record_learner_block_on_rev88_fails(built: Path, tmp_path: Path, hidden_ncu_report: None) -> None:
    root = _forged(built, tmp_path)
    _edit_record(root, 0, lambda rec: rec.update(learner=dict(FUSED)))  # position 0 is rev88 :16:8
    assert "energy.learners.trial_learner" in _fails(root)


def test_record_kernel_sha_forgery_fails(built: Path, tmp_path: Path, hidden_ncu_report: None) -> None:
    root = _forged(built, tmp_path)
    fused = [t["position"] for t in archive.read_json_gz(root / LEARNERS)["trials"] if t["learner"] == "rev88-fused"]
    _edit_record(root, fused[-1], lambda rec: rec["learner"].update(kernel_source_sha256="f" * 64))
    assert "energy.learners.kernel_source_sha256" in _fails(root)


def test_kernel_sha_not_hex_fails(built: Path, tmp_path: Path, hidden_ncu_report: None) -> None:
    root = _forged(built, tmp_path)
    fused = [t["position"] for t in archive.read_json_gz(root / LEARNERS)["trials"] if t["learner"] == "rev88-fused"]
    for p in fused:
        _edit_record(root, p, lambda rec: rec["learner"].update(kernel_source_sha256="not-a-sha"))
    _edit_summary(root, lambda s: s["arms"][2]["learner_block"].update(kernel_source_sha256="not-a-sha"))
    fails = _fails(root)
    assert "energy.learners.kernel_source_sha256.form" in fails and "energy.learners.arms" not in fails
