"""The verifier's pinned-image and CPU-block checks, on a real archive of a real CPU run.

``rev88 qualify --device cpu`` writes a complete 11-draw archive in this process (native, no
image marker; ~10 s on two cores, once per module). Each test copies it and rewrites ``environment.json.gz`` (and the draw
record, so that only the claim under test is wrong), rebuilds the manifest so integrity
passes, and runs ``rev88 verify``. The lock file the marker is compared with is always one
the test writes (``REV88_GPU_LOCK_FILE``), never the repository's.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bundle import archive
from bundle.cli import app
from verify.registry import verify_archive
from verify.result import Status

pytestmark = pytest.mark.slow
runner = CliRunner()
PINNED_SOFTWARE = {"python": "3.11.9", "torch": "2.5.1+cu124", "cuda": "12.4", "numpy": "2.2.6",
                   "nvidia_ml_py": "12.560.30"}
PINNED_STATEMENT = ("docker image rev88/gpu:local on no CUDA device, torch 2.5.1+cu124 - "
                    "the pinned CUDA 12.4 / PyTorch 2.5.1 image")


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory) -> Path:
    """A real CPU qualification archive (all 11 draws), written natively without an image marker."""
    root = tmp_path_factory.mktemp("cpu-run") / "run"
    with pytest.MonkeyPatch.context() as mp:
        for name in ("REV88_ENGINE", "REV88_IMAGE_REFERENCE", "REV88_IMAGE_LOCK_SHA256", "REV88_IMAGE_ID"):
            mp.delenv(name, raising=False)
        mp.setenv("REV88_IMAGE_MARKER", str(root.parent / "no-marker.json"))
        result = runner.invoke(app, ["qualify", "--device", "cpu", "--out", str(root)])
    assert result.exit_code == 0, result.output
    return root


@pytest.fixture()
def lock(tmp_path, monkeypatch) -> str:
    """A lock file of this test's own; returns its sha256."""
    path = tmp_path / "requirements-gpu.lock"
    path.write_text("torch==2.5.1+cu124 \\\n    --hash=sha256:" + "1" * 64 + "\n")
    monkeypatch.setenv("REV88_GPU_LOCK_FILE", str(path))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _copy(cpu_run: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "run"
    shutil.copytree(cpu_run, dest)
    return dest


def _forge(root: Path, rel: str, change) -> None:
    rec = archive.read_json_gz(root / rel)
    change(rec)
    archive.write_json_gz(root / rel, rec)
    (root / "manifest.json").unlink()
    archive.RunArchive(root).write_manifest()


def _marker(lock_sha: str, **changes) -> dict:
    return {"schema": "rev88-image/1", "target": "gpu", "lock_file": "docker/requirements-gpu.lock",
            "lock_sha256": lock_sha, "python": "3.11.9", "torch": "2.5.1+cu124", "numpy": "2.2.6",
            "nvidia_ml_py": "12.560.30", "ncu_version": "2024.1.1.0", "ncu_source": "debian",
            "base_image": "nvidia/cuda:12.4.1-runtime-ubuntu22.04", "image_id": "sha256:" + "d" * 64, **changes}


def _claim_pinned(root: Path, marker: dict | None, **execution) -> None:
    """Rewrite the run as if it had claimed the pinned image: the execution and the draw record's software."""
    def env(rec: dict) -> None:
        ex = rec["executions"][0]
        ex.update(engine="docker", image_reference="rev88/gpu:local", pinned_image=True, statement=PINNED_STATEMENT,
                  software=dict(PINNED_SOFTWARE), image_marker=marker,
                  image_id=None if marker is None else marker["image_id"])
        ex.update(execution)

    _forge(root, "environment.json.gz", env)
    for i in range(11):
        _forge(root, f"qualify/draw-{i:02d}.json.gz", lambda rec: rec.update(
            software={k: PINNED_SOFTWARE[k] for k in ("python", "torch", "numpy", "cuda")}))


def _by_status(root: Path) -> dict[Status, list]:
    rep = verify_archive(root)
    out: dict[Status, list] = {s: [] for s in Status}
    for r in rep.results:
        out[r.status].append(r)
    return out


def test_the_real_cpu_run_verifies_and_states_its_cpu(cpu_run, lock):
    env = archive.read_json_gz(cpu_run / "environment.json.gz")["executions"]
    assert [e["phases"] for e in env] == [["qualify"]]
    assert env[0]["engine"] == "native" and env[0]["pinned_image"] is False and env[0]["image_marker"] is None
    draw = archive.read_json_gz(cpu_run / "qualify" / "draw-00.json.gz")
    assert draw["hardware"]["cpu"] == env[0]["cpu"] and draw["hardware"]["cpu"]["torch_num_threads"] >= 1
    results = _by_status(cpu_run)
    assert results[Status.FAIL] == []
    cpu = [r for r in results[Status.PASS] if r.check_id == "consistency.cpu"]
    assert {r.subject for r in cpu} == {"environment.json.gz executions.0",
                                        *(f"qualify/draw-{i:02d}.json.gz" for i in range(11))}
    assert not any(r.check_id.startswith("consistency.image") for s in Status for r in results[s])
    assert runner.invoke(app, ["verify", str(cpu_run)]).exit_code == 0


def test_claiming_the_pinned_image_without_the_marker_fails(cpu_run, tmp_path, lock):
    root = _copy(cpu_run, tmp_path)
    _claim_pinned(root, None)
    res = runner.invoke(app, ["verify", str(root)])
    assert res.exit_code == 1, res.output
    text = " ".join(res.output.split())  # the report wraps long lines
    assert " 2 FAIL" in text and "FAIL consistency.image_marker [environment.json.gz executions.0]: claims the " \
           "pinned image but no image_marker is recorded" in text
    fails = {r.check_id for r in _by_status(root)[Status.FAIL]}
    assert fails == {"consistency.image_marker", "consistency.environment.statement"}


def test_a_consistent_marker_passes_and_its_lock_sha_is_checked(cpu_run, tmp_path, lock):
    root = _copy(cpu_run, tmp_path)
    _claim_pinned(root, _marker(lock))
    results = _by_status(root)
    assert results[Status.FAIL] == []
    passed = {r.check_id for r in results[Status.PASS]}
    assert {"consistency.image_marker", "consistency.image_marker.lock_sha256", "consistency.image_id"} <= passed


def test_a_marker_of_another_lock_file_fails(cpu_run, tmp_path, lock):
    root = _copy(cpu_run, tmp_path)
    _claim_pinned(root, _marker("e" * 64))
    fails = _by_status(root)[Status.FAIL]
    assert [(r.check_id, r.subject) for r in fails] == [
        ("consistency.image_marker.lock_sha256", "environment.json.gz executions.0")]
    assert "requirements-gpu.lock" in fails[0].reason


def test_without_a_lock_file_the_lock_sha_is_unavailable_never_pass(cpu_run, tmp_path, monkeypatch):
    monkeypatch.setenv("REV88_GPU_LOCK_FILE", str(tmp_path / "absent.lock"))
    root = _copy(cpu_run, tmp_path)
    _claim_pinned(root, _marker("e" * 64))
    results = _by_status(root)
    assert results[Status.FAIL] == []
    lock_checks = [r for s in Status for r in results[s] if r.check_id == "consistency.image_marker.lock_sha256"]
    assert [r.status for r in lock_checks] == [Status.UNAVAILABLE]
    assert "absent.lock is not a file" in lock_checks[0].reason


@pytest.mark.parametrize("marker_change,execution,needle", [
    ({"torch": "2.5.1+cu121"}, {}, "the marker's torch '2.5.1+cu121' differs from the software's '2.5.1+cu124'"),
    ({"numpy": "2.2.5"}, {}, "the marker's numpy '2.2.5' differs"),
    ({"lock_sha256": "E" * 64}, {}, "is not 64 lowercase hex digits"),
    ({"schema": "rev88-image/0"}, {}, "schema is 'rev88-image/0'"),
    ({}, {"engine": "native", "image_reference": None,
          "statement": "native no CUDA device, torch 2.5.1+cu124 - the pinned CUDA 12.4 / PyTorch 2.5.1 image"},
     "engine is 'native', not docker"),
    ({}, {"software": {**PINNED_SOFTWARE, "torch": "2.13.0+cpu"}}, "is not the pinned stack"),
])
def test_inconsistent_pinned_claims_fail_naming_the_check(cpu_run, tmp_path, lock, marker_change, execution, needle):
    root = _copy(cpu_run, tmp_path)
    _claim_pinned(root, _marker(lock, **marker_change), **execution)
    fails = _by_status(root)[Status.FAIL]
    marker_fails = [r for r in fails if r.check_id == "consistency.image_marker"]
    assert len(marker_fails) == 1 and needle in marker_fails[0].reason, fails
    assert marker_fails[0].subject == "environment.json.gz executions.0"


@pytest.mark.parametrize("change,needle", [
    (lambda cpu: cpu.update(torch_num_threads=0), "cpu.torch_num_threads 0 is not a positive integer"),
    (lambda cpu: cpu.update(model=""), "cpu.model '' is not a non-empty string"),
    (lambda cpu: cpu.pop("torch_num_interop_threads"), "cpu.torch_num_interop_threads is missing"),
])
def test_a_malformed_cpu_block_fails(cpu_run, tmp_path, change, needle):
    root = _copy(cpu_run, tmp_path)
    _forge(root, "qualify/draw-00.json.gz", lambda rec: change(rec["hardware"]["cpu"]))
    fails = _by_status(root)[Status.FAIL]
    assert [(r.check_id, r.subject) for r in fails] == [("consistency.cpu", "qualify/draw-00.json.gz")]
    assert needle in fails[0].reason


def test_the_shipped_records_carry_no_claim_and_keep_passing():
    """Native records: no image marker (key absent or null), pinned_image false, no cpu block."""
    from tests.conftest import REPO_ROOT

    real = REPO_ROOT / "evidence" / "h200-20261202"
    if not real.is_dir():
        pytest.skip("the shipped H200 archive is absent")
    for ex in archive.read_json_gz(real / "environment.json.gz")["executions"]:
        assert ex.get("image_marker") is None and ex["pinned_image"] is False
    # The checks add nothing for them (the full archive is verified by tests/verify/test_real_archive.py).
    from verify.checks import run_host

    assert run_host.check_execution_block(json.loads(json.dumps(ex)), "x") == []
