"""Tests for bundle.hostinfo: the CPU block, the engine from the job environment, the image marker
and the pinned-image rule (real files in tmp_path, real environment variables)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
import torch

from bundle import hostinfo
from protocol.errors import BundleError

PINNED_LIKE = {"python": "3.11.9", "torch": "2.5.1+cu124", "cuda": "12.4", "numpy": "2.2.6",
               "nvidia_ml_py": "12.560.30"}
CPU_WHEEL = {**PINNED_LIKE, "torch": "2.13.0+cpu", "cuda": None}
NO_GPU = {"name": None, "uuid": None, "driver_version": None}
IMAGE_ID = "sha256:" + "ab" * 32


def _marker(lock_sha: str, **changes) -> dict:
    marker = {"schema": "rev88-image/1", "target": "gpu", "lock_file": "docker/requirements-gpu.lock",
              "lock_sha256": lock_sha, "python": "3.11.9", "torch": "2.5.1+cu124", "numpy": "2.2.6",
              "nvidia_ml_py": "12.560.30", "ncu_version": "2024.1.1.0", "ncu_source": "debian",
              "base_image": "nvidia/cuda:12.4.1-runtime-ubuntu22.04", "cuda": "12.4"}
    marker.update(changes)
    return {k: v for k, v in marker.items() if v is not None}


@pytest.fixture()
def image(tmp_path, monkeypatch):
    """A marker file and lock file in tmp_path, with the environment a container of the image gets."""
    lock = tmp_path / "requirements-gpu.lock"
    lock.write_text("torch==2.5.1+cu124 --hash=sha256:00\n")
    sha = hashlib.sha256(lock.read_bytes()).hexdigest()
    path = tmp_path / "image.json"
    path.write_text(json.dumps(_marker(sha), sort_keys=True) + "\n")
    monkeypatch.setenv("REV88_IMAGE_MARKER", str(path))
    monkeypatch.setenv("REV88_IMAGE_LOCK_SHA256", sha)
    monkeypatch.setenv("REV88_IMAGE_ID", IMAGE_ID)
    monkeypatch.setenv("REV88_ENGINE", "docker")
    monkeypatch.setenv("REV88_IMAGE_REFERENCE", "rev88/gpu:local")
    return path, sha


@pytest.fixture()
def no_image(tmp_path, monkeypatch):
    """No marker where this process looks (whatever image the suite itself runs in)."""
    monkeypatch.setenv("REV88_IMAGE_MARKER", str(tmp_path / "absent" / "image.json"))
    monkeypatch.delenv("REV88_IMAGE_LOCK_SHA256", raising=False)
    monkeypatch.delenv("REV88_IMAGE_ID", raising=False)


def test_cpu_record_names_the_model_and_the_thread_counts():
    threads = torch.get_num_threads()
    other = 1 if threads != 1 else 2
    try:
        torch.set_num_threads(other)
        cpu = hostinfo.cpu_record()
    finally:
        torch.set_num_threads(threads)
    assert list(cpu) == list(hostinfo.CPU_RECORD_KEYS)
    assert isinstance(cpu["model"], str) and cpu["model"].strip() == cpu["model"] != ""
    assert cpu["torch_num_threads"] == other and cpu["torch_num_interop_threads"] >= 1
    assert cpu["logical_cpus"] == os.cpu_count()
    assert hostinfo.cpu_record_problems(cpu) == []
    if Path("/proc/cpuinfo").is_file() and "model name" in Path("/proc/cpuinfo").read_text():
        assert cpu["model"] in Path("/proc/cpuinfo").read_text()
    assert hostinfo.hardware_record()["cpu"]["model"] == cpu["model"]


@pytest.mark.parametrize("cpu,needle", [
    ("AMD EPYC", "not an object"),
    ({"model": "", "logical_cpus": 2, "torch_num_threads": 2, "torch_num_interop_threads": 2}, "cpu.model"),
    ({"model": "x", "logical_cpus": 2, "torch_num_threads": 0, "torch_num_interop_threads": 2}, "torch_num_threads"),
    ({"model": "x", "logical_cpus": 2, "torch_num_threads": True, "torch_num_interop_threads": 2}, "torch_num_threads"),
    ({"model": "x", "logical_cpus": 2.0, "torch_num_threads": 2, "torch_num_interop_threads": 2}, "logical_cpus"),
    ({"model": "x", "logical_cpus": 2, "torch_num_threads": 2}, "torch_num_interop_threads is missing"),
])
def test_cpu_record_problems(cpu, needle):
    problems = hostinfo.cpu_record_problems(cpu)
    assert problems and any(needle in p for p in problems), problems
    assert hostinfo.cpu_record_problems({"model": "x", "logical_cpus": None, "torch_num_threads": 1,
                                         "torch_num_interop_threads": 1}) == []


def test_engine_comes_from_the_job_environment_only(monkeypatch):
    monkeypatch.delenv("REV88_ENGINE", raising=False)
    monkeypatch.delenv("REV88_IMAGE_REFERENCE", raising=False)
    assert hostinfo.execution_engine() == ("native", None)  # even where /.dockerenv exists
    monkeypatch.setenv("REV88_ENGINE", "docker")
    monkeypatch.setenv("REV88_IMAGE_REFERENCE", "rev88/gpu:local")
    assert hostinfo.execution_engine() == ("docker", "rev88/gpu:local")
    monkeypatch.setenv("REV88_ENGINE", "podman")
    with pytest.raises(BundleError, match="REV88_ENGINE='podman' is not an engine kind"):
        hostinfo.execution_engine()


def test_docker_with_the_pinned_stack_but_no_marker_is_not_the_pinned_image(no_image, monkeypatch):
    monkeypatch.setenv("REV88_ENGINE", "docker")
    engine, _ = hostinfo.execution_engine()
    marker, reason = hostinfo.read_image_marker()
    assert marker is None and "no image marker at" in reason
    record = hostinfo.execution_record(engine, "rev88/gpu:local", NO_GPU, PINNED_LIKE)
    assert record["pinned_image"] is False and record["image_marker"] is None and record["image_id"] is None
    assert record["statement"].startswith("docker image rev88/gpu:local on no CUDA device (CPU only: no GPU was used), torch 2.5.1+cu124 - not "
                                          "the pinned CUDA 12.4 / PyTorch 2.5.1 image (no image marker at ")


def test_a_valid_marker_with_the_pinned_stack_is_the_pinned_image(image):
    path, sha = image
    marker = hostinfo.image_marker()
    assert marker == {**json.loads(path.read_text()), "image_id": IMAGE_ID}
    engine, reference = hostinfo.execution_engine()
    cpu = {"model": "AMD EPYC", "logical_cpus": 2, "torch_num_threads": 2, "torch_num_interop_threads": 2}
    record = hostinfo.execution_record(engine, reference, {**NO_GPU, "cpu": cpu}, PINNED_LIKE)
    assert record["pinned_image"] is True and record["image_marker"] == marker and record["image_id"] == IMAGE_ID
    assert record["statement"].endswith("torch 2.5.1+cu124 - the pinned CUDA 12.4 / PyTorch 2.5.1 image")
    assert record["cpu"] == cpu
    # The same marker does not make another stack, or a native run, the pinned image.
    assert hostinfo.execution_record(engine, reference, NO_GPU, CPU_WHEEL)["pinned_image"] is False
    assert hostinfo.execution_record("native", None, NO_GPU, PINNED_LIKE)["pinned_image"] is False
    other_numpy = {**PINNED_LIKE, "numpy": "2.2.5"}
    assert hostinfo.execution_record(engine, reference, NO_GPU, other_numpy)["pinned_image"] is False
    # A marker naming other versions than the software's is not enough either.
    assert not hostinfo.pinned_image_holds("docker", {**marker, "torch": "2.5.1+cu121"}, PINNED_LIKE)
    # An explicit marker (a host-side record of a job's probe) overrides this process's.
    assert hostinfo.execution_record(engine, reference, NO_GPU, PINNED_LIKE, marker=None)["pinned_image"] is False


def test_a_lock_sha_that_is_not_the_images_own_gives_no_marker(image, monkeypatch):
    path, sha = image
    monkeypatch.setenv("REV88_IMAGE_LOCK_SHA256", "0" * 64)
    marker, reason = hostinfo.read_image_marker()
    assert marker is None and "but REV88_IMAGE_LOCK_SHA256 is 000000000000" in reason
    record = hostinfo.execution_record("docker", "rev88/gpu:local", NO_GPU, PINNED_LIKE)
    assert record["pinned_image"] is False and record["image_marker"] is None
    assert record["image_id"] == IMAGE_ID and "not the pinned" in record["statement"]
    monkeypatch.delenv("REV88_IMAGE_LOCK_SHA256")
    assert "REV88_IMAGE_LOCK_SHA256 is not set" in hostinfo.read_image_marker()[1]


@pytest.mark.parametrize("content,needle", [
    ("[1, 2]", "not a JSON object"),
    ("{not json", "is not JSON"),
    ("LOCK:schema=rev88-image/2", "schema is 'rev88-image/2'"),
    ("LOCK:lock_sha256=ABC", "lock_sha256 'ABC' is not 64 lowercase hex"),
    ("LOCK:torch=", "torch is not a non-empty string"),
    ("LOCK:ncu_source=None", "ncu_source is missing"),
    ("LOCK:target=verify", "target is 'verify'"),
])
def test_malformed_markers_are_refused_with_a_reason(image, content, needle):
    path, sha = image
    if content.startswith("LOCK:"):
        key, _, value = content[len("LOCK:"):].partition("=")
        content = json.dumps(_marker(sha, **{key: None if value == "None" else value}))
    path.write_text(content)
    marker, reason = hostinfo.read_image_marker()
    assert marker is None and needle in reason and "\n" not in reason, reason
    assert hostinfo.execution_record("docker", "img", NO_GPU, PINNED_LIKE)["pinned_image"] is False


def test_only_a_regular_file_is_a_marker(image, tmp_path, monkeypatch):
    path, sha = image
    link = tmp_path / "link.json"
    link.symlink_to(path)
    monkeypatch.setenv("REV88_IMAGE_MARKER", str(link))
    assert "not a regular file" in hostinfo.read_image_marker()[1]
    monkeypatch.setenv("REV88_IMAGE_MARKER", str(tmp_path))
    assert "not a regular file" in hostinfo.read_image_marker()[1]
    path.write_text(" " * (hostinfo.IMAGE_MARKER_MAX_BYTES + 1))
    assert "larger than" in hostinfo.read_image_marker(path)[1]


def test_a_malformed_image_id_is_not_recorded(image, monkeypatch):
    monkeypatch.setenv("REV88_IMAGE_ID", "rev88/gpu:local")
    marker = hostinfo.image_marker()
    assert marker is not None and marker["image_id"] is None
    assert hostinfo.execution_record("docker", "img", NO_GPU, PINNED_LIKE)["image_id"] is None
