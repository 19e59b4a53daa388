"""Our run archives: a synthetic archive built with bundle.archive's writers, verified and tampered."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from bundle import archive
from bundle.cli import app
from bundle.phases.qualify import score_predictions
from protocol import data
from tests.conftest import ORIGINAL_ARCHIVE, REPO_ROOT
from verify.registry import verify_archive
from verify.result import Status


def _build(root: Path) -> Path:
    """A run archive with a qualify phase (11 predictions + the scorer's accuracy record) and a raw gz output."""
    run = archive.RunArchive(root)  # run_id = the folder name, as the verifier requires
    with run.phase("qualify") as stage:
        for i in range(data.DRAW_COUNT):
            labels = data.evaluation_labels(i)
            preds = labels.copy()
            preds[: 1000 + 17 * i] = (preds[: 1000 + 17 * i] + 1) % 10  # a known number of errors
            archive.write_npy(stage / f"draw-{i:02d}.predictions.npy", preds)
        archive.write_json_gz(stage / "accuracy.json.gz", score_predictions(stage.path, range(data.DRAW_COUNT)))
        archive.write_bytes_gz(stage / "notes.txt.gz", b"raw tool output\n" * 100)
    return root


@pytest.fixture
def run_dir(tmp_path):
    return _build(tmp_path / "run")


def _fails(root: Path) -> list:
    rep = verify_archive(root)
    assert not rep.ok
    return rep.failures()


def test_synthetic_archive_rescored_but_not_verified_without_draw_records(run_dir):
    rep = verify_archive(run_dir)
    assert rep.kind == "run"
    # predictions without their qualify/draw-XX.json.gz cannot be tied to a frozen reference, and a run
    # archive must state where it ran
    assert {(r.check_id, r.subject) for r in rep.failures()} == {
        ("accuracy.draw.record", f"draw-{i:02d}") for i in range(11)} | {("consistency.environment", "run")}
    assert rep.verified("accuracy.draw.correct", "draw-00") == 9000
    assert rep.verified("accuracy.aggregate.correct", "qualify/accuracy.json.gz") == sum(
        10_000 - 1000 - 17 * i for i in range(11))
    conf = rep.verified("accuracy.draw.confusion", "draw-03")
    assert np.trace(np.asarray(conf)) == 10_000 - 1000 - 51 and np.asarray(conf).sum() == 10_000


@pytest.mark.parametrize("rel", ["qualify/accuracy.json.gz", "qualify/draw-04.predictions.npy",
                                 "qualify/notes.txt.gz", "manifest.json"])
def test_every_byte_kind_is_tamper_evident(run_dir, rel):
    path = run_dir / rel
    blob = bytearray(path.read_bytes())
    pos = len(blob) // 2
    blob[pos] ^= 0x01
    path.write_bytes(bytes(blob))
    fails = _fails(run_dir)
    assert any(r.subject == rel or rel in r.reason for r in fails), fails
    assert all(r.check_id.startswith("integrity.") or r.status is Status.FAIL for r in fails)


def test_recomputed_figure_disagreeing_with_record_fails(run_dir):
    acc = archive.read_json_gz(run_dir / "qualify/accuracy.json.gz")
    acc["rows"][2]["correct"] += 1
    acc["correct"] += 1
    archive.write_json_gz(run_dir / "qualify/accuracy.json.gz", acc)
    archive.RunArchive(run_dir).write_manifest()  # a consistent forgery: hashes match, figures do not
    ids = {r.check_id for r in _fails(run_dir)}
    assert {"accuracy.aggregate.correct", "accuracy.rows.correct"} <= ids


def test_layout_errors(run_dir):
    (run_dir / "qualify" / "extra.json").write_text("{}")
    os.symlink(run_dir / "manifest.json", run_dir / "qualify" / "link.json")
    ids = {(r.check_id, r.subject) for r in _fails(run_dir)}
    assert ("integrity.unlisted", "qualify/extra.json") in ids
    assert ("integrity.symlink", "qualify/link.json") in ids


def test_manifest_path_leaving_the_archive(run_dir):
    m = json.loads((run_dir / "manifest.json").read_text())
    m["files"][0]["path"] = "../outside.json"
    (run_dir / "manifest.json").write_text(json.dumps(m))
    fails = _fails(run_dir)
    assert fails[0].check_id == "integrity.manifest" and "leaves the archive" in fails[0].reason


def _replace_and_relist(run_dir: Path, rel: str, blob: bytes) -> list:
    (run_dir / rel).write_bytes(blob)
    # the writer refuses a bad gzip, so the manifest entry is patched by hand
    m = json.loads((run_dir / "manifest.json").read_text())
    for e in m["files"]:
        if e["path"] == rel:
            e["size_bytes"] = len(blob)
            e["sha256"] = hashlib.sha256(blob).hexdigest()
    (run_dir / "manifest.json").write_text(json.dumps(m))
    return _fails(run_dir)


@pytest.mark.parametrize("blob,needle", [
    (b"not gzip at all", "bad or truncated gzip"),
    (archive.gzip_bytes(b'{"rows": []}')[:-6], "bad or truncated gzip"),
])
def test_bad_gzip_is_one_line(run_dir, blob, needle):
    fails = _replace_and_relist(run_dir, "qualify/accuracy.json.gz", blob)
    lines = [r.reason for r in fails if r.subject == "qualify/accuracy.json.gz"]
    assert any(needle in line for line in lines) and all("\n" not in line for line in lines)


@pytest.mark.parametrize("obj,needle", [
    ({"rows": [], "correct": "98208"}, "should be an integer"),
    ({"rows": []}, "missing key 'correct'"),
    ({"rows": [], "correct": 1, "total": 1, "accuracy_percent": float("nan")}, "NaN"),
])
def test_malformed_records_fail_with_one_line(run_dir, obj, needle):
    text = json.dumps(obj, indent=2) + "\n"  # canonical layout; NaN as a bare token, as a careless writer would
    archive.write_bytes_gz(run_dir / "qualify/accuracy.json.gz", text.encode())
    archive.RunArchive(run_dir).write_manifest()
    fails = _fails(run_dir)
    lines = [r.reason for r in fails]
    assert any(needle in line for line in lines), lines
    assert all("\n" not in line and "Traceback" not in line for line in lines)


def test_cli_verify_exit_codes_and_json(run_dir):
    runner = CliRunner()
    ok = runner.invoke(app, ["verify", str(run_dir), "--json"])
    assert ok.exit_code == 1, ok.output
    doc = json.loads(ok.output)
    assert doc["passed"] is False and doc["archives"][0]["counts"]["FAIL"] == 12  # absent draw records, environment
    (run_dir / "qualify" / "draw-00.predictions.npy").write_bytes(b"\x93NUMPY")
    bad = runner.invoke(app, ["verify", str(run_dir)])
    assert bad.exit_code == 1 and "Traceback" not in bad.output
    missing = runner.invoke(app, ["verify", str(run_dir / "nope")])
    assert missing.exit_code == 2
    assert "Traceback" not in missing.output


def test_verify_never_imports_torch():
    code = ("import sys; from pathlib import Path; from verify.registry import verify_archive; "
            "import verify.render, verify.report, bundle.commands.verify; "
            f"r = verify_archive(Path({str(ORIGINAL_ARCHIVE)!r})); assert r.ok; "
            "assert 'torch' not in sys.modules, 'torch imported'; print('ok')")
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr


def test_report_from_verified_figures(run_dir, tmp_path):
    from verify.report import build_report

    md = build_report(run_dir, tmp_path / "rep", original=ORIGINAL_ARCHIVE).read_text()
    # ours rescored (9,000 of 10,000) next to the frozen value; no draw record, so equality is not verified
    assert "| 0 | 9,000 | 90.00 | 88.87 | not verified |" in md
    assert (tmp_path / "rep" / "accuracy.png").stat().st_size > 1000


def test_report_refuses_an_archive_failing_integrity(run_dir, tmp_path):
    from protocol.errors import BundleError
    from verify.report import build_report

    (run_dir / "qualify" / "draw-01.predictions.npy").write_bytes(b"x")
    with pytest.raises(BundleError, match="fails integrity"):
        build_report(run_dir, tmp_path / "rep")
    assert not (tmp_path / "rep").exists()


def test_report_on_a_failing_archive_exits_non_zero(tmp_path):
    """A run whose non-integrity checks fail still gets a report listing the failures, but exit 1."""
    from typer.testing import CliRunner  # noqa: PLC0415

    from bundle import archive  # noqa: PLC0415
    from bundle.cli import app  # noqa: PLC0415

    run = archive.RunArchive(tmp_path / "run")
    with run.phase("compare") as stage:  # a phase record that names no fixture records: checks fail
        archive.write_json_gz(stage / "comparison.json.gz", {"schema_version": 1, "configs": []})
    result = CliRunner().invoke(app, ["report", str(run.run_dir), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 1, result.output
    assert "## Failed checks" in (tmp_path / "rep" / "REPORT.md").read_text()
