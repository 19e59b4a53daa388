"""The verify image (marked ``docker``): non-root, no network, read-only root, same verdict as the host.

.ci/run builds the image (``make image-verify`` builds it on a host that can pull the pinned
base) and sets REV88_VERIFY_IMAGE. The container is started exactly as compose.yaml's
``verify`` service starts it: ``network_mode: none``, read-only root, tmpfs /tmp, the evidence
mounted read-only.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
IMAGE = os.environ.get("REV88_VERIFY_IMAGE", "rev88/verify:local")
EVIDENCE = REPO_ROOT / "evidence"

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def client():
    docker = pytest.importorskip("docker")
    client = docker.from_env()
    try:
        client.images.get(IMAGE)
    except docker.errors.ImageNotFound:
        message = f"image {IMAGE} is missing: build it with `make image-verify` (or set REV88_VERIFY_IMAGE)"
        if os.environ.get("REV88_REQUIRE_DOCKER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    yield client
    client.close()


def run_locked_down(client, *, entrypoint: list[str] | None = None, command: list[str] | None = None):
    """Run the verify image as the compose ``verify`` service does; return (exit code, output)."""
    container = client.containers.create(
        IMAGE,
        entrypoint=entrypoint,
        command=command,
        network_mode="none",
        read_only=True,
        tmpfs={"/tmp": ""},
        volumes={str(EVIDENCE): {"bind": "/evidence", "mode": "ro"}},
        labels={"org.rev88.bundle.test": "container"},
    )
    try:
        container.start()
        status = container.wait(timeout=600)
        output = container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
        return int(status["StatusCode"]), output
    finally:
        container.remove(force=True)


def test_image_declares_a_non_root_user_and_the_verify_entrypoint(client) -> None:
    config = client.images.get(IMAGE).attrs["Config"]
    assert config["User"] not in ("", "0", "root", "0:0")
    assert config["Entrypoint"] == ["rev88", "verify"]
    assert "REV88_RAW_DIR=/opt/rev88/data/mnist" in config["Env"]


def test_runs_as_non_root_without_network_on_a_read_only_root(client) -> None:
    script = (
        "import os, socket\n"
        "print('uid', os.getuid())\n"
        "print('interfaces', sorted(os.listdir('/sys/class/net')))\n"
        "for path in ('/probe', '/evidence/probe'):\n"
        "    try:\n"
        "        open(path, 'w').close(); print('writable', path)\n"
        "    except OSError as exc:\n"
        "        print('not writable', path, exc.errno)\n"
        "open('/tmp/probe', 'w').close(); print('tmp writable')\n"
        "try:\n"
        "    socket.create_connection(('1.1.1.1', 443), timeout=3); print('network reachable')\n"
        "except OSError:\n"
        "    print('network unreachable')\n"
    )
    code, output = run_locked_down(client, entrypoint=["python", "-c", script])
    assert code == 0, output
    lines = output.splitlines()
    uid = int(next(line for line in lines if line.startswith("uid ")).split()[1])
    assert uid != 0
    assert "interfaces ['lo']" in lines
    assert "not writable /probe 30" in lines  # EROFS
    assert any(line.startswith("not writable /evidence/probe") for line in lines)
    assert "tmp writable" in lines
    assert "network unreachable" in lines


def test_shipped_mnist_files_match_the_pinned_hashes_in_the_image(client) -> None:
    script = "from protocol.data import RAW_FILES, verify_raw_file\nfor key in RAW_FILES: print(verify_raw_file(key))\n"
    code, output = run_locked_down(client, entrypoint=["python", "-c", script])
    assert code == 0, output
    assert len([line for line in output.splitlines() if line.startswith("/opt/rev88/data/mnist/")]) == 4


def test_container_verifier_agrees_with_the_host_verifier_on_the_shipped_evidence(client) -> None:
    code, output = run_locked_down(client, command=["/evidence/rev88-original"])
    host = subprocess.run(
        [sys.executable, "-m", "bundle.cli", "verify", str(EVIDENCE / "rev88-original")],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=600,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert output.strip(), "the verifier in the container printed nothing"
    assert code == host.returncode, f"container exit {code}, host exit {host.returncode}\n{output}"
    # The closing verdict line names the archive path, which differs; the verdict must not.
    # (Outside a terminal the verifier prints one summary line per archive, then detail lines.)
    verdict = next(line for line in output.splitlines() if line.startswith("/evidence/rev88-original"))
    host_verdict = next(line for line in host.stdout.splitlines() if line.startswith(str(EVIDENCE / "rev88-original")))
    assert verdict.split(":", 1)[1] == host_verdict.split(":", 1)[1]
