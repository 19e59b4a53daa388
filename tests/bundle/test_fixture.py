"""Tests for bundle.fixture: refusal paths (CPU), a CPU diagnostic run, and the GPU protocol run."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bundle import archive
from bundle.errors import BundleError
from bundle.phases.fixture_runner import npz_bytes, write_fixture_inputs
from bundle.phases.validate import SMOKE_CONFIG, smoke_inputs
from tests.conftest import ORIGINAL_ARCHIVE, REPO_ROOT

FROZEN_PREDICTIONS_SHA256 = json.loads((ORIGINAL_ARCHIVE / "results" / "draw-00.json").read_text())[
    "metadata"]["predictions_sha256"]


def _fixture(args: list[str], workspace: str | None, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CUBLAS_WORKSPACE_CONFIG"}
    if workspace is not None:
        env["CUBLAS_WORKSPACE_CONFIG"] = workspace
    return subprocess.run([sys.executable, "-m", "bundle.fixture", *args], capture_output=True, text=True,
                          env=env, cwd=REPO_ROOT, timeout=timeout)


@pytest.fixture()
def smoke_files(tmp_path: Path) -> tuple[Path, Path]:
    return write_fixture_inputs(tmp_path / "in", smoke_inputs(), SMOKE_CONFIG)


def test_extra_array_refused_in_process_and_by_cli(tmp_path, smoke_files):
    from bundle import fixture

    _, cfg = smoke_files
    bad = archive.atomic_write_bytes(tmp_path / "bad.npz", npz_bytes(
        {**smoke_inputs(), "test_labels": np.zeros(7, dtype=np.int64)}))
    with pytest.raises(BundleError, match="exactly the three.*extra: \\['test_labels'\\]"):
        fixture.load_inputs(bad)
    proc = _fixture(["--input", str(bad), "--config", str(cfg), "--output", str(tmp_path / "r.json.gz"),
                     "--mode", "measure", "--device", "cpu"], ":16:8")
    assert proc.returncode == 2
    assert "exactly the three" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "r.json.gz").exists() and not (tmp_path / "r.predictions.npy").exists()


def test_missing_array_and_pickled_npz_refused(tmp_path):
    from bundle import fixture

    inputs = smoke_inputs()
    del inputs["test_images"]
    path = archive.atomic_write_bytes(tmp_path / "two.npz", npz_bytes(inputs))
    with pytest.raises(BundleError, match="missing: \\['test_images'\\]"):
        fixture.load_inputs(path)
    np.savez(tmp_path / "obj.npz", train_images=np.array([{}], dtype=object), train_labels=np.zeros(1),
             test_images=np.zeros(1))
    with pytest.raises(BundleError, match="unreadable"):
        {k: v.shape for k, v in fixture.load_inputs(tmp_path / "obj.npz").items()}


def test_bad_config_refused(tmp_path):
    from bundle import fixture

    four = archive.write_json(tmp_path / "four.json", {**SMOKE_CONFIG, "epochs": 4})
    with pytest.raises(BundleError, match="requires epochs 2"):
        fixture.load_config(four)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(BundleError, match="not valid JSON"):
        fixture.load_config(tmp_path / "bad.json")
    with pytest.raises(BundleError, match="config not found"):
        fixture.load_config(tmp_path / "missing.json")


def test_missing_workspace_config_refused_before_torch(tmp_path, smoke_files):
    npz, cfg = smoke_files
    proc = _fixture(["--input", str(npz), "--config", str(cfg), "--output", str(tmp_path / "r.json.gz"),
                     "--mode", "measure"], None)
    assert proc.returncode == 2
    assert "CUBLAS_WORKSPACE_CONFIG is not set" in proc.stderr and "before CUDA initialization" in proc.stderr
    code = ("import os, sys; os.environ.pop('CUBLAS_WORKSPACE_CONFIG', None); import bundle.fixture as f\n"
            "try:\n f.run_fixture('x.npz', 'c.json', 'o.json')\nexcept Exception as e: print(type(e).__name__)\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["BundleError", "False"]


def test_workspace_malformed_or_changed_refused(monkeypatch):
    from bundle import fixture

    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", "16:8")
    with pytest.raises(BundleError, match="malformed"):
        fixture.require_workspace_config()
    monkeypatch.setattr(fixture, "WORKSPACE_AT_IMPORT", ":16:8")
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    with pytest.raises(BundleError, match="changed.*before CUDA initialization"):
        fixture.require_workspace_config()
    with pytest.raises(BundleError, match="changed from ':16:8' to ':4096:8'"):
        fixture.check_workspace_unchanged(":16:8")


def test_cuda_initialised_before_import_refused(monkeypatch):
    import torch

    from bundle import fixture

    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    with pytest.raises(BundleError, match="before CUDA initialization"):
        fixture.guard_entry()
    with pytest.raises(BundleError, match="before CUDA initialization"):
        importlib.reload(fixture)
    monkeypatch.undo()
    importlib.reload(fixture)  # a clean module for the other tests


def test_predictions_path_for():
    from bundle.fixture import predictions_path_for

    assert predictions_path_for(Path("a/workspace-16-8.json.gz")) == Path("a/workspace-16-8.predictions.npy")
    assert predictions_path_for(Path("result.json")) == Path("result.predictions.npy")


def test_cpu_diagnostic_run_writes_record_and_predictions(tmp_path, smoke_files):
    npz, cfg = smoke_files
    out = tmp_path / "out" / "workspace-16-8.json.gz"
    proc = _fixture(["--input", str(npz), "--config", str(cfg), "--output", str(out), "--mode", "measure",
                     "--device", "cpu"], ":16:8")
    assert proc.returncode == 0, proc.stderr
    record = archive.read_json_gz(out)
    assert list(record)[:6] == ["schema_version", "completed_at_utc", "mode", "requested_scope", "device", "config"]
    assert record["cublas_workspace_config"] == ":16:8" and record["environment_was_set_externally"] is True
    assert record["input_archive_sha256"] == archive.file_sha256(npz)
    assert record["config_file_sha256"] == archive.file_sha256(cfg)
    assert record["memory"] is None and record["buffer_inventory"] is None
    assert record["test_labels_read"] is False and record["profile"] is None and record["energy"] is None
    preds = np.load(out.with_name("workspace-16-8.predictions.npy"), allow_pickle=False)
    assert preds.dtype == np.int64 and preds.shape == (7,)
    assert archive.file_sha256(out.with_name(record["predictions_file"])) == record["predictions_file_sha256"]
    assert record["metadata"]["predictions_sha256"] == archive.hashlib.sha256(preds.tobytes()).hexdigest()
    assert record["metadata"]["run_count"] == 1
    assert len(record["same_process_reference_hashes_matched"]) == 8
    assert record["execution"]["engine"] in ("native", "docker") and record["execution"]["pinned_image"] is False


@pytest.mark.gpu
def test_gpu_fresh_fixture_draw0_reproduces_frozen_predictions(tmp_path):
    from bundle.data import load_draw
    from bundle.learner import FROZEN_CONFIG

    npz, cfg = write_fixture_inputs(tmp_path, load_draw(0).learner_inputs(), FROZEN_CONFIG)
    assert archive.file_sha256(cfg) == "a4cf957d95e7b2d33db7a3121a0ae00609cd278f79026e4436549103647c618f"
    out = tmp_path / "workspace-16-8.json.gz"
    proc = _fixture(["--input", str(npz), "--config", str(cfg), "--output", str(out), "--mode", "measure"], ":16:8")
    assert proc.returncode == 0, proc.stderr
    record = archive.read_json_gz(out)
    mem, inv = record["memory"], record["buffer_inventory"]
    print("memory", mem, "named", inv["unique_named_storage_bytes"], "L2", record["cache_reference"])
    assert mem["allocated_before_prepare_bytes"] == 0 and mem["reserved_before_prepare_bytes"] == 0
    assert mem["added_peak_over_entry_allocated_bytes"] == mem["prepare_and_invoke_peak_allocated_bytes"]
    assert len(inv["unique_storages"]) == 33 and inv["unique_named_storage_bytes"] == 13_960_864
    assert record["cache_reference"]["bytes"] == record["hardware"]["l2_cache_bytes"] > 0
    assert record["metadata"]["predictions_sha256"] == FROZEN_PREDICTIONS_SHA256
