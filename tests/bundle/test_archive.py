"""Tests for bundle.archive: canonical JSON, reproducible gzip, atomic phases, manifest."""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest

from bundle import archive
from bundle.archive import RunArchive
from protocol.errors import BundleError
from tests.conftest import ORIGINAL_ARCHIVE


def test_canonical_json_reproduces_original_evidence_bytes():
    # The original wrote its JSON with the same conventions: re-serialising must give the same bytes.
    for rel in ("cache-audit/cuda-validation.json", "results/draw-00.json", "config.json"):
        raw = (ORIGINAL_ARCHIVE / rel).read_bytes()
        assert archive.dumps_canonical(json.loads(raw)).encode("ascii") == raw, rel


def test_canonical_json_refuses_nan():
    with pytest.raises(BundleError, match="canonical JSON"):
        archive.dumps_canonical({"x": float("nan")})


def test_gzip_is_reproducible_and_header_has_no_name_or_mtime(tmp_path):
    record = json.loads((ORIGINAL_ARCHIVE / "cache-audit" / "small-workspace.json").read_bytes())
    a = archive.write_json_gz(tmp_path / "a.json.gz", record).read_bytes()
    b = archive.write_json_gz(tmp_path / "sub" / "b.json.gz", record).read_bytes()
    assert a == b
    assert a[:2] == b"\x1f\x8b"
    flags, mtime = a[3], int.from_bytes(a[4:8], "little")
    assert mtime == 0
    assert flags & 0x08 == 0  # FNAME not set
    assert archive.read_json_gz(tmp_path / "a.json.gz") == record
    assert gzip.decompress(a) == archive.dumps_canonical(record).encode("ascii")


def test_write_npy_roundtrip_without_pickle(tmp_path):
    preds = np.arange(10, dtype=np.int64) % 10
    path = archive.write_npy(tmp_path / "p.npy", preds)
    back = np.load(path, allow_pickle=False)
    assert back.dtype == np.int64 and np.array_equal(back, preds)
    with pytest.raises(BundleError, match="object array"):
        archive.write_npy(tmp_path / "o.npy", np.array([{}], dtype=object))


def test_atomic_write_leaves_no_temporary_files(tmp_path):
    archive.atomic_write_bytes(tmp_path / "x.bin", b"1")
    archive.atomic_write_bytes(tmp_path / "x.bin", b"22")
    assert [p.name for p in tmp_path.iterdir()] == ["x.bin"]
    assert (tmp_path / "x.bin").read_bytes() == b"22"


def test_read_json_gz_errors_are_one_line(tmp_path):
    with pytest.raises(BundleError, match="not found"):
        archive.read_json_gz(tmp_path / "missing.json.gz")
    (tmp_path / "bad.json.gz").write_bytes(b"not gzip")
    with pytest.raises(BundleError, match="unreadable"):
        archive.read_json_gz(tmp_path / "bad.json.gz")


def test_phase_completion_manifest_and_refusal(tmp_path):
    run = RunArchive(tmp_path / "run")
    payload = b"raw ncu csv\n" * 100
    with run.phase("compare") as stage:
        archive.write_json_gz(stage / "comparison.json.gz", {"a": 1})
        archive.write_bytes_gz(stage / "raw.csv.gz", payload)
        archive.write_npy(stage / "p.npy", np.zeros(3, dtype=np.int64))
        assert not (tmp_path / "run" / "compare").exists()
    assert run.is_complete("compare")
    assert not (tmp_path / "run" / ".staging" / "compare").exists()
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["schema_version"] == 1 and manifest["run_id"] == "run"
    paths = [f["path"] for f in manifest["files"]]
    assert paths == sorted(paths) == ["compare/comparison.json.gz", "compare/p.npy", "compare/raw.csv.gz"]
    raw_entry = manifest["files"][2]
    stored = (tmp_path / "run" / "compare" / "raw.csv.gz").read_bytes()
    assert raw_entry["sha256"] == hashlib.sha256(stored).hexdigest()
    assert raw_entry["size_bytes"] == len(stored)
    assert raw_entry["content_sha256"] == hashlib.sha256(payload).hexdigest()
    assert raw_entry["content_size_bytes"] == len(payload)
    assert manifest["files"][1]["content_sha256"] is None
    with pytest.raises(BundleError, match="already complete.*--force"):
        with run.phase("compare"):
            pass
    with run.phase("compare", force=True) as stage:
        archive.write_json_gz(stage / "comparison.json.gz", {"a": 2})
    assert archive.read_json_gz(tmp_path / "run" / "compare" / "comparison.json.gz") == {"a": 2}
    manifest = run.read_manifest()
    assert [f["path"] for f in manifest["files"]] == ["compare/comparison.json.gz"]


def test_crash_mid_phase_keeps_staging_and_resume_skips_done_jobs(tmp_path):
    run = RunArchive(tmp_path / "run")
    done = []

    def phase(fail_at: int | None) -> None:
        with run.phase("qualify") as stage:
            for i in range(3):
                name = f"draw-{i:02d}.json.gz"
                if stage.has(name):
                    continue
                if i == fail_at:
                    raise RuntimeError("simulated crash")
                archive.write_json_gz(stage / name, {"draw": i})
                done.append(i)

    with pytest.raises(RuntimeError, match="simulated crash"):
        phase(fail_at=2)
    assert not run.is_complete("qualify")
    assert not (tmp_path / "run" / "manifest.json").exists()
    assert sorted(p.name for p in (tmp_path / "run" / ".staging" / "qualify").iterdir()) == [
        "draw-00.json.gz",
        "draw-01.json.gz",
    ]
    phase(fail_at=None)
    assert done == [0, 1, 2]  # draws 0 and 1 were not redone
    assert [f["path"] for f in run.read_manifest()["files"]] == [
        *(f"qualify/draw-{i:02d}.json.gz" for i in range(3)), "qualify/resumed.json.gz"]
    resumed = archive.read_json_gz(tmp_path / "run" / "qualify" / archive.RESUMED_NAME)
    assert resumed["resumed_runs"] == ["draw-00", "draw-01"] and resumed["phase"] == "qualify"


def test_resumed_lists_only_records_kept_byte_for_byte(tmp_path):
    """A staged record the completing attempt rewrote (other bytes) is not listed as resumed; a
    phase that resumed nothing gets no resumed.json.gz; nested records keep their folder."""
    run = RunArchive(tmp_path / "run")
    with pytest.raises(RuntimeError):
        with run.phase("validate") as stage:
            archive.write_json_gz(stage / "smoke" / "worker.json.gz", {"v": 1})
            archive.write_json_gz(stage / "config.json.gz", {"v": 1})
            raise RuntimeError("stopped")
    with run.phase("validate") as stage:
        archive.write_json_gz(stage / "config.json.gz", {"v": 2})  # rewritten: written by this attempt
    resumed = archive.read_json_gz(tmp_path / "run" / "validate" / archive.RESUMED_NAME)
    assert resumed["resumed_runs"] == ["smoke/worker"]
    with run.phase("compare") as stage:
        archive.write_json_gz(stage / "x.json.gz", {"v": 1})
    assert not (tmp_path / "run" / "compare" / archive.RESUMED_NAME).exists()


def test_crash_in_forced_rerun_keeps_old_phase(tmp_path):
    run = RunArchive(tmp_path / "run")
    with run.phase("energy") as stage:
        archive.write_json_gz(stage / "x.json.gz", {"v": 1})
    with pytest.raises(ValueError):
        with run.phase("energy", force=True) as stage:
            raise ValueError("boom")
    assert archive.read_json_gz(tmp_path / "run" / "energy" / "x.json.gz") == {"v": 1}


def test_record_execution_merges_identical_hosts(tmp_path):
    run = RunArchive(tmp_path / "run")
    execution = {"engine": "native", "image_reference": None, "pinned_image": False, "statement": "native"}
    run.record_execution("compare", execution)
    run.record_execution("validate", execution)
    run.record_execution("qualify", {**execution, "engine": "docker", "image_reference": "img@sha256:0"})
    env = archive.read_json_gz(tmp_path / "run" / "environment.json.gz")
    assert [e["phases"] for e in env["executions"]] == [["compare", "validate"], ["qualify"]]
    assert "environment.json.gz" in [f["path"] for f in run.read_manifest()["files"]]


def test_archive_module_does_not_import_torch():
    code = "import sys, bundle.archive, bundle.jobs, bundle.hostinfo; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_written_files_get_the_umask_mode_not_0600(tmp_path):
    import os  # noqa: PLC0415

    old = os.umask(0o022)
    try:
        path = archive.write_json_gz(tmp_path / "r.json.gz", {"a": 1})
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644  # readable by the container's non-root user


def test_completed_phase_removes_its_scratch_folder(tmp_path):
    run = RunArchive(tmp_path / "run")
    with run.phase("compare") as stage:
        scratch = run.run_dir / archive.WORK_DIR / "compare"
        scratch.mkdir(parents=True)
        (scratch / "input.npz").write_bytes(b"derived copy")
        archive.write_json_gz(stage / "r.json.gz", {"a": 1})
    assert not (run.run_dir / archive.WORK_DIR).exists()
    assert not (run.run_dir / archive.STAGING_DIR).exists()
    listed = {e["path"] for e in run.read_manifest()["files"]}
    on_disk = {p.relative_to(run.run_dir).as_posix() for p in run.run_dir.rglob("*") if p.is_file()}
    assert on_disk - {"manifest.json"} == listed


def test_out_that_is_a_file_is_one_line(tmp_path):
    target = tmp_path / "afile"
    target.write_text("x")
    with pytest.raises(BundleError, match="is not a folder"):
        RunArchive(target)


def test_a_completed_phase_drops_temporary_files_of_killed_writers(tmp_path):
    """A `.NAME.XXXX.tmp` left in a phase's staging folder (a writer thread killed mid-write by an
    interrupt, before a resume) is not committed into the phase folder; the records are."""
    from bundle import archive as arc

    run = arc.RunArchive(tmp_path / "run")
    with pytest.raises(KeyboardInterrupt):
        with run.phase("profile") as stage:
            arc.write_json_gz(stage / "a.json.gz", {"x": 1})
            (stage.path / ".b.json.gz.k3j2.tmp").write_bytes(b"half a record")
            raise KeyboardInterrupt
    with run.phase("profile") as stage:  # the resume
        arc.write_json_gz(stage / "b.json.gz", {"x": 2})
    names = sorted(p.name for p in run.phase_dir("profile").iterdir())
    assert names == ["a.json.gz", "b.json.gz", arc.RESUMED_NAME]
