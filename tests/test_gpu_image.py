"""The built GPU image (marked ``docker``): its stack, its Nsight Compute, its marker, offline.

.ci/run builds the image (``make image`` on a GPU host) and sets REV88_GPU_IMAGE; with
REV88_REQUIRE_DOCKER=1 a missing image fails instead of skipping. Every container runs with no
network. No GPU is needed: these tests check what the image holds, not a GPU run.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
IMAGE = os.environ.get("REV88_GPU_IMAGE", "rev88/gpu:local")
LOCK_SHA256 = hashlib.sha256((REPO / "docker" / "requirements-gpu.lock").read_bytes()).hexdigest()

pytestmark = pytest.mark.docker

STACK = """
import importlib.metadata as md, json, subprocess, sys, numpy, torch, pynvml, ncu_report
version = subprocess.run(["ncu", "--version"], capture_output=True, text=True, check=True).stdout
print(json.dumps({"python": sys.version.split()[0], "torch": torch.__version__, "cuda": torch.version.cuda,
                  "cuda_available": torch.cuda.is_available(), "numpy": numpy.__version__,
                  "nvidia_ml_py": md.version("nvidia-ml-py"), "ncu_report": md.version("ncu-report"),
                  "ncu": version.strip().splitlines()[-1]}))
"""


@pytest.fixture(scope="module")
def client():
    docker = pytest.importorskip("docker")
    client = docker.from_env()
    try:
        client.images.get(IMAGE)
    except docker.errors.ImageNotFound:
        message = f"image {IMAGE} is missing: build it with `make image` (or set REV88_GPU_IMAGE)"
        if os.environ.get("REV88_REQUIRE_DOCKER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    yield client
    client.close()


def run_offline(client, command: list[str], environment: dict[str, str] | None = None) -> str:
    """Run *command* in a fresh container of the image with no network; return its output (exit 0 required)."""
    container = client.containers.create(IMAGE, command=command, environment=environment or {},
                                         network_mode="none", labels={"org.rev88.bundle.test": "gpu-image"})
    try:
        container.start()
        status = container.wait(timeout=600)
        output = container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
    finally:
        container.remove(force=True)
    assert status["StatusCode"] == 0, output
    return output


def test_labels_environment_and_marker(client) -> None:
    config = client.images.get(IMAGE).attrs["Config"]
    labels, env = config["Labels"], dict(item.split("=", 1) for item in config["Env"])
    assert labels["org.rev88.image.target"] == "gpu"
    assert labels["org.rev88.image.lock-sha256"] == LOCK_SHA256 == env["REV88_IMAGE_LOCK_SHA256"]
    assert labels["org.rev88.image.torch"] == "2.5.1+cu124"
    assert "CUBLAS_WORKSPACE_CONFIG" not in env  # each job sets it at container start
    text = run_offline(client, ["cat", env["REV88_IMAGE_MARKER"]])
    marker = json.loads(text)
    assert text == json.dumps(marker, sort_keys=True, separators=(",", ":")) + "\n"  # canonical
    assert marker["schema"] == "rev88-image/1" and marker["lock_sha256"] == LOCK_SHA256
    assert (marker["torch"], marker["cuda"], marker["numpy"], marker["nvidia_ml_py"]) == \
        ("2.5.1+cu124", "12.4", "2.2.6", "12.560.30")
    assert marker["python"].startswith("3.11.")
    assert marker["ncu_version"] == labels["org.rev88.image.ncu-version"]
    assert labels["org.rev88.image.ncu-source"] in marker["ncu_source"].lower() or \
        marker["ncu_source"].startswith("Debian ")


def test_stack_and_ncu_offline(client) -> None:
    stack = json.loads(run_offline(client, ["python", "-c", STACK]).strip().splitlines()[-1])
    print(json.dumps(stack))
    assert stack["torch"] == "2.5.1+cu124" and stack["cuda"] == "12.4" and stack["numpy"] == "2.2.6"
    assert stack["nvidia_ml_py"] == "12.560.30" and stack["python"].startswith("3.11.")
    assert stack["cuda_available"] is False  # no GPU runtime here: the CPU path
    marker = json.loads(run_offline(client, ["cat", "/opt/rev88/image.json"]))
    assert stack["ncu"].startswith(f"Version {marker['ncu_version']} ")
    assert stack["ncu_report"] == marker["ncu_report"]


def test_frozen_data_and_cli_in_the_image(client) -> None:
    """The four MNIST files baked into the image are the pinned ones (`rev88 data check` exits 0)."""
    output = run_offline(client, ["rev88", "data", "check"])
    # a table where the console is wide enough, else one "status: ok" line per file
    assert "/opt/rev88/data/mnist" in output and output.count(" ok ") + output.count("status: ok") == 4, output
