"""Shared test configuration: markers, the repository root, and GPU/docker skips."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_MNIST = REPO_ROOT / "data" / "mnist"
ORIGINAL_ARCHIVE = REPO_ROOT / "evidence" / "rev88-original"
RECORDED = Path(__file__).resolve().parent / "recorded"


def _cuda_available() -> bool:
    try:
        import torch  # noqa: PLC0415
    except Exception:
        return False
    return bool(torch.cuda.is_available())


def _dockerd_available() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=15).returncode == 0
    except Exception:
        return False


def _slurm_available() -> bool:
    if shutil.which("sinfo") is None:
        return False
    try:
        return subprocess.run(["sinfo", "--noheader"], capture_output=True, timeout=15).returncode == 0
    except Exception:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip ``gpu`` tests without CUDA, ``docker`` tests without a running dockerd and ``slurm``
    tests without a Slurm controller (unless REV88_REQUIRE_DOCKER / REV88_REQUIRE_SLURM is 1)."""
    need_gpu = any("gpu" in item.keywords for item in items)
    need_docker = any("docker" in item.keywords for item in items)
    need_slurm = any("slurm" in item.keywords for item in items)
    has_gpu = _cuda_available() if need_gpu else False
    has_docker = _dockerd_available() if need_docker else False
    has_slurm = _slurm_available() if need_slurm else False
    require_docker = os.environ.get("REV88_REQUIRE_DOCKER") == "1"
    require_slurm = os.environ.get("REV88_REQUIRE_SLURM") == "1"
    for item in items:
        if "gpu" in item.keywords and not has_gpu:
            item.add_marker(pytest.mark.skip(reason="needs an NVIDIA GPU (run on the device)"))
        if "docker" in item.keywords and not has_docker and not require_docker:
            item.add_marker(pytest.mark.skip(reason="needs a running dockerd (.ci/run starts one)"))
        if "slurm" in item.keywords and not has_slurm and not require_slurm:
            item.add_marker(pytest.mark.skip(reason="needs a Slurm controller (.ci/run starts one)"))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root."""
    return REPO_ROOT
