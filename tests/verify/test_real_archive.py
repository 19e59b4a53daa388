"""The real H200 run archive (evidence/h200-20261202, one board): verified with 0 FAIL, tampering caught, reports.

The full verification (with the four stored ``.ncu-rep`` reads, ~14 s on 2 cores) runs once
per module; tamper and forgery tests hide ``ncu_report`` so they stay short.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bundle import archive
from bundle.cli import app
from tests.conftest import H200_ARCHIVE, REPO_ROOT, linked_copy, npz_bytes_unavailable
from verify.checks import run_profile
from verify.integrity import verify_run_archive
from verify.ncu_reports import ReportReads
from verify.registry import verify_archive
from verify.result import Status

REAL = H200_ARCHIVE
pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason="the shipped H200 archive is absent")

ONE_OF_EACH_KIND = ("energy/interleaved.json.gz", "qualify/draw-05.predictions.npy", "profile/workspace-16-8-task-r01.csv.gz",
                    "profile/workspace-16-8-training-r00.ncu-rep.gz", "energy/trial-r01-workspace-0-0.nvml.jsonl.gz",
                    "environment.json.gz")


@pytest.fixture(scope="module")
def report():
    return verify_archive(REAL)


def _copy(tmp_path: Path) -> Path:
    return linked_copy(REAL, tmp_path)


def _flip(path: Path, offset: int | None = None) -> None:
    blob = bytearray(path.read_bytes())
    pos = len(blob) // 2 if offset is None else offset
    blob[pos] ^= 0x01
    path.unlink()  # break the hard link before writing
    path.write_bytes(bytes(blob))


def test_real_archive_verifies_with_no_fail(report):
    assert report.kind == "run"
    assert report.ok, [(r.check_id, r.subject, r.reason) for r in report.failures()]
    ids = {r.check_id for r in report if r.status is Status.PASS or npz_bytes_unavailable(r)}
    for cid in ("compare.reduction", "compare.frozen_reference", "energy.interleaved.summary.idle_adjusted_mj_per_task",
                "energy.interleaved.ratio.idle_adjusted_mj_per_task", "placement.gpu_lock", "energy.nvml_log.stamps",
                "profile.summary.mean_sd", "validate.maximum_abs_error", "consistency.execution",
                "consistency.workspace_requested", "consistency.input_archive_sha256", "energy.interval.settle_seconds"):
        assert cid in ids, cid
    unavailable = [r for r in report if r.status is Status.UNAVAILABLE and not npz_bytes_unavailable(r)]
    # the 8 reports not stored, the 10 profile runs resumed from a device call stopped before it recorded itself,
    # and qualification's record stamps: its records carry none, so that check compared nothing
    assert {r.check_id for r in unavailable} == {"profile.ncu_report", "reproduce.timing.record_stamps_unrecorded",
                                                 "reproduce.timing.record_stamps"}
    assert [(r.subject, r.recorded) for r in unavailable if r.check_id == "reproduce.timing.record_stamps"] == [
        ("qualify/ (invocation 0)", 0)]
    assert all("is not in the archive" in r.reason for r in unavailable if r.check_id == "profile.ncu_report")
    (gap,) = [r for r in unavailable if r.check_id == "reproduce.timing.record_stamps_unrecorded"]
    assert gap.subject == "profile/ (invocation 1)" and gap.recorded == 20


def test_figures_are_the_recomputed_ones(report):
    s = report.verified("energy.interleaved.summary.idle_adjusted_mj_per_task", "energy/interleaved.json.gz :16:8")
    assert s["count"] == 5 and s["ci95_low"] < s["mean"] < s["ci95_high"]
    peak = report.verified("compare.peak_allocated_bytes", "compare/comparison.json.gz :16:8")
    assert peak == 15_040_512
    frozen = [r for r in report if r.check_id == "draws.frozen_predictions_sha256"]
    assert len(frozen) >= 37 and all(r.status is Status.PASS for r in frozen)  # every stored prediction array


def test_stored_reports_cross_check_through_ncu_report(report):
    pytest.importorskip("ncu_report")
    done = [r for r in report if r.check_id == "profile.ncu_report" and r.status is Status.PASS]
    assert len(done) == 4
    assert all(r.recomputed["dram__bytes_read.sum"]["report_value"] == r.recomputed["dram__bytes_read.sum"]["csv_value"]
               for r in done)


def _stored_report_verdicts() -> list:
    """The ``profile.ncu_report`` verdicts of the shipped archive's stored reports (reads started as verify does)."""
    files = verify_run_archive(REAL)
    files.background = ReportReads(files)
    try:
        verdicts = [r for r in run_profile.check_profile_phase(files) if r.check_id == "profile.ncu_report"]
    finally:
        files.background.close()
    return [r for r in verdicts if "is not in the archive" not in r.reason]


def test_reports_unavailable_when_ncu_report_is_hidden(hidden_ncu_report):
    stored = _stored_report_verdicts()
    assert len(stored) == 4
    assert all(r.status is Status.UNAVAILABLE and "ncu_report is not importable" in r.reason for r in stored)


def test_a_broken_worker_pool_is_a_fail_line_per_report_not_a_traceback(monkeypatch):
    """Workers that die before a read is submitted (BrokenProcessPool at submit): each stored report FAILs."""
    pytest.importorskip("ncu_report")
    from concurrent.futures.process import BrokenProcessPool  # noqa: PLC0415

    from verify import ncu_reports  # noqa: PLC0415

    class Broken:
        def __init__(self, **_: object) -> None:
            pass

        def submit(self, *_: object) -> None:
            raise BrokenProcessPool("a child process terminated abruptly")

        def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
            pass

    monkeypatch.setattr(ncu_reports, "ProcessPoolExecutor", Broken)
    stored = _stored_report_verdicts()
    assert len(stored) == 4
    assert all(r.status is Status.FAIL and "report read not started (BrokenProcessPool" in r.reason for r in stored)


def test_one_byte_in_each_kind_of_file_fails_naming_it(tmp_path, hidden_ncu_report):
    root = _copy(tmp_path)
    for rel in ONE_OF_EACH_KIND:
        _flip(root / rel)
    rep = verify_archive(root)
    fails = rep.failures()
    for rel in ONE_OF_EACH_KIND:
        assert any(r.subject == rel and r.check_id in ("integrity.sha256", "integrity.content_sha256") for r in fails), rel
    assert all(r.check_id.startswith("integrity.") for r in fails)


def test_manifest_byte_fails(tmp_path, hidden_ncu_report):
    root = _copy(tmp_path)
    text = (root / "manifest.json").read_text()
    start = text.index('"sha256": "') + len('"sha256": "')
    # the first hex digit of the first entry's sha256 whose low bit flips to another hex digit ('f' would not)
    _flip(root / "manifest.json", next(i for i in range(start, start + 64) if chr(ord(text[i]) ^ 1) in "0123456789abcdef"))
    fails = verify_archive(root).failures()
    # the file's decompressed sha256 and size still match: the manifest's entry is the corrupt side (issue 11)
    assert [(r.check_id, r.subject) for r in fails] == [("integrity.manifest_entry", "manifest.json")]
    assert "compare/comparison.json.gz" in fails[0].reason


def test_consistent_forgery_fails_the_recomputation(tmp_path, hidden_ncu_report):
    root = _copy(tmp_path)
    rel = root / "energy" / "interleaved.json.gz"
    rec = archive.read_json_gz(rel)
    rec["summaries"][":16:8"]["idle_adjusted_mj_per_task"]["mean"] += 1.0
    rel.unlink()
    archive.write_json_gz(rel, rec)
    trial = root / "energy" / "trial-r01-workspace-16-8.json.gz"
    t = archive.read_json_gz(trial)
    t["energy"]["settings"]["settle_seconds"] = 3.0  # claims the original protocol's settle
    trial.unlink()
    archive.write_json_gz(trial, t)
    (root / "manifest.json").unlink()
    archive.RunArchive(root).write_manifest()  # hashes now match; the figures do not
    fails = verify_archive(root).failures()
    ids = {(r.check_id, r.subject.split()[0]) for r in fails}
    assert ("energy.interleaved.summary.idle_adjusted_mj_per_task", "energy/interleaved.json.gz") in ids
    assert ("energy.interleaved.trial_settings", "energy/trial-r01-workspace-16-8.json.gz") in ids
    assert any(c == "energy.interval.settle_seconds" for c, _ in ids)


@pytest.mark.parametrize("args,needle", [
    (["verify", "docs"], "not an evidence archive"),
    (["report", "evidence/nope", "--out", "x"], "evidence/nope is not a folder"),
])
def test_bad_input_is_one_line(args, needle):
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    assert needle in res.output and "Traceback" not in res.output
    assert len([line for line in res.output.splitlines() if line.strip()]) == 1


def test_malformed_manifest_is_one_fail_line(tmp_path):
    root = _copy(tmp_path)
    (root / "manifest.json").unlink()
    (root / "manifest.json").write_text('{"schema_version": 1, "run_id": 3, "files": []}')
    fails = verify_archive(root).failures()
    assert fails[0].check_id == "integrity.manifest" and "'run_id' should be a string" in fails[0].reason


def test_verifier_modules_never_import_torch():
    code = ("import sys; from pathlib import Path; import verify.report, verify.ncu_reports, bundle.commands.verify; "
            "from verify.checks import run_consistency, run_compare, run_energy, run_profile; "
            "from verify.integrity import verify_run_archive; "
            f"f = verify_run_archive(Path({str(REAL)!r})); assert f.ok; "
            "r = run_consistency.check_inputs(f) + run_compare.check_compare_validate(f); "
            "assert r and all(x.status.value != 'FAIL' for x in r), r; "
            "assert 'torch' not in sys.modules, 'torch imported'; print('ok')")
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]


def test_report_for_the_real_archive(tmp_path, hidden_ncu_report):
    from verify.report import build_report

    md = build_report(REAL, tmp_path / "rep", original=REPO_ROOT / "evidence" / "rev88-original").read_text()
    assert "| 0 | 8,887 | 88.87 | 88.87 | yes |" in md
    assert "GPU-42bf1766" in md and "2025.3.1" in md
    assert ("| validate, compare, qualify, energy, profile | NVIDIA H200 (`GPU-42bf1766-310c-4528-b64a-22424fca3756`) "
            "| 580.159.04 | native |") in md  # one board for the whole protocol
    assert "| this run, H200, interleaved | `GPU-42bf1766` | `:16:8` | 5 | 318.6 | [317.7, 319.5] | 0.777 " in md
    assert "| `:4096:8` task | 9,770,037 ± 334,691 | 4,914,392 |" in md  # labels as in the figure
    assert "Aggregate: 98,208 of 110,000 correct (89.28 %)" in md
    assert "GPU lock of the ncu runs: `process`: each fixture process held the board alone" in md  # from the runs
    assert "| not run |" not in md and "False" not in md and "| None |" not in md and "CUDA None" not in md
    for png in ("accuracy.png", "peak_memory.png", "energy.png", "profiles.png"):
        assert (tmp_path / "rep" / png).stat().st_size > 10_000, png
    json.dumps(md)  # plain text
