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
from bundle.phases.fixture_runner import npz_bytes, write_fixture_inputs
from bundle.phases.validate import SMOKE_CONFIG, smoke_inputs
from protocol.errors import BundleError
from tests.conftest import ORIGINAL_ARCHIVE, REPO_ROOT

FROZEN_PREDICTIONS_SHA256 = json.loads((ORIGINAL_ARCHIVE / "results" / "draw-00.json").read_text())[
    "metadata"]["predictions_sha256"]


# What a job learns about its engine and image from its environment (set by the phases and the image).
ENGINE_ENV = ("REV88_ENGINE", "REV88_IMAGE_REFERENCE", "REV88_IMAGE_MARKER", "REV88_IMAGE_LOCK_SHA256", "REV88_IMAGE_ID")


def _fixture(args: list[str], workspace: str | None, timeout: float = 600,
             extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m bundle.fixture`` with the engine/image variables of *extra_env* only."""
    env = {k: v for k, v in os.environ.items() if k != "CUBLAS_WORKSPACE_CONFIG" and k not in ENGINE_ENV}
    env["REV88_IMAGE_MARKER"] = str(REPO_ROOT / "tests" / "no-image-marker-here.json")  # whatever image runs this
    env.update(extra_env or {})
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


@pytest.mark.parametrize(("extra", "output_name", "expected"), [
    (["--energy", "trial", "--energy-config", "e.json"], "r.json.gz", "needs --device cuda"),
    (["--energy", "original", "--energy-config", "e.json"], "r.json.gz", "needs --device cuda"),
    ([], "a-folder", "is a folder"),
])
def test_cpu_energy_and_a_folder_as_output_refused_before_training(tmp_path, smoke_files, extra, output_name,
                                                                     expected):
    """One line and exit 2 before any training: no record and no predictions file left behind."""
    npz, cfg = smoke_files
    (tmp_path / "a-folder").mkdir()
    (tmp_path / "e.json").write_text("{}")
    out = tmp_path / output_name
    proc = _fixture(["--input", str(npz), "--config", str(cfg), "--output", str(out), "--mode", "measure",
                     "--device", "cpu", *[str(tmp_path / x) if x == "e.json" else x for x in extra]], ":16:8")
    assert proc.returncode == 2 and expected in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-folder", "e.json", "in"]


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
    execution = record["execution"]
    assert execution["engine"] == "native" and execution["pinned_image"] is False  # no REV88_ENGINE: native
    assert execution["image_marker"] is None and execution["image_id"] is None
    cpu = record["hardware"]["cpu"]
    assert cpu["model"] and cpu["torch_num_threads"] >= 1 and cpu["torch_num_interop_threads"] >= 1
    assert execution["cpu"] == cpu


def test_cpu_diagnostic_in_a_container_is_pinned_only_with_the_marker(tmp_path, smoke_files):
    """The fixture applies the marker rule in its own process: docker + marker + pinned versions."""
    import numpy
    import torch

    from bundle import hostinfo

    npz, cfg = smoke_files
    sha = "5" * 64
    marker = {"schema": "rev88-image/1", "target": "gpu", "lock_file": "docker/requirements-gpu.lock",
              "lock_sha256": sha, "python": "3.11.9", "torch": torch.__version__, "numpy": numpy.__version__,
              "nvidia_ml_py": "12.560.30", "ncu_version": "2024.1.1.0", "ncu_source": "debian",
              "base_image": "nvidia/cuda:12.4.1-runtime-ubuntu22.04"}
    marker_path = archive.write_json(tmp_path / "image.json", marker)
    docker = {"REV88_ENGINE": "docker", "REV88_IMAGE_REFERENCE": "rev88/gpu:local",
              "REV88_IMAGE_ID": "sha256:" + "c" * 64}
    records = {}
    for name, extra in (("no-marker", {}),
                        ("marker", {"REV88_IMAGE_MARKER": str(marker_path), "REV88_IMAGE_LOCK_SHA256": sha}),
                        ("foreign-marker", {"REV88_IMAGE_MARKER": str(marker_path),
                                            "REV88_IMAGE_LOCK_SHA256": "6" * 64})):
        out = tmp_path / name / "workspace-16-8.json.gz"
        proc = _fixture(["--input", str(npz), "--config", str(cfg), "--output", str(out), "--mode", "measure",
                         "--device", "cpu"], ":16:8", extra_env={**docker, **extra})
        assert proc.returncode == 0, proc.stderr
        records[name] = archive.read_json_gz(out)["execution"]
    software = archive.read_json_gz(tmp_path / "marker" / "workspace-16-8.json.gz")["software"]
    for name in ("no-marker", "foreign-marker"):
        ex = records[name]
        assert ex["engine"] == "docker" and ex["pinned_image"] is False and ex["image_marker"] is None
        assert "not the pinned CUDA 12.4 / PyTorch 2.5.1 image (" in ex["statement"]
        assert ex["image_id"] == docker["REV88_IMAGE_ID"]
    ex = records["marker"]
    assert ex["image_marker"] == {**marker, "image_id": docker["REV88_IMAGE_ID"]}
    # torch 2.5.1+cu124 with numpy 2.2.6 on Python 3.11 is the pinned stack; any other stays "not pinned".
    assert ex["pinned_image"] is hostinfo.software_matches_pin(software)
    assert ("not the pinned" in ex["statement"]) is not ex["pinned_image"]


@pytest.mark.gpu
def test_gpu_fresh_fixture_draw0_reproduces_frozen_predictions(tmp_path):
    from bundle.learner import FROZEN_CONFIG
    from protocol.data import load_draw

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
