"""The image's build inputs, checked without Docker: lock files, the Dockerfile's pins, apt sources.

What the built image holds is tested in tests/test_gpu_image.py (marked ``docker``); these tests
keep the files that decide it consistent on any machine.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "docker"))
import derive_apt_source  # noqa: E402

GPU_LOCK = REPO / "docker" / "requirements-gpu.lock"
TEST_LOCK = REPO / "docker" / "requirements-gpu-test.lock"
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s\\]+) \\\n    --hash=sha256:([0-9a-f]{64})$", re.MULTILINE)
# Hosts of package registries and image registries: no file of ours may name one. The frozen
# reference evidence/rev88-original is the original study's own record, shipped byte for byte
# (the verifier checks its hashes), and is therefore not ours to edit.
REGISTRY_HOSTS = re.compile(
    r"pypi\.org|pythonhosted\.org|debian\.org|download\.nvidia\.com|developer\.nvidia\.com|nvcr\.io|ghcr\.io"
    r"|registry-1\.docker|hub\.docker\.com|registry\.npmjs|quay\.io", re.IGNORECASE)


def pins(path: Path) -> dict[str, tuple[str, str]]:
    text = path.read_text(encoding="utf-8")
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    found = {name.lower().replace("_", "-"): (version, sha) for name, version, sha in PIN.findall(body)}
    assert len(found) == body.count("--hash="), f"{path.name}: a line is not `name==version --hash=sha256:…`"
    return found


def test_lock_files_pin_the_stack_by_hash() -> None:
    gpu = pins(GPU_LOCK)
    assert gpu["torch"][0] == "2.5.1" and gpu["numpy"][0] == "2.2.6" and gpu["nvidia-ml-py"][0] == "12.560.30"
    assert gpu["nvidia-cudnn-cu12"][0] == "9.1.0.70" and gpu["triton"][0] == "3.1.0"
    assert gpu["ncu-report"][0] and gpu["typer"][0] and gpu["rich"][0]
    cuda = {name: version for name, (version, _) in gpu.items() if name.startswith("nvidia-") and name.endswith("-cu12")}
    assert {"nvidia-cublas-cu12", "nvidia-cuda-runtime-cu12", "nvidia-cuda-nvrtc-cu12", "nvidia-nvjitlink-cu12"} <= set(cuda)
    for name in ("nvidia-cublas-cu12", "nvidia-cuda-runtime-cu12", "nvidia-cuda-cupti-cu12", "nvidia-cuda-nvrtc-cu12",
                 "nvidia-nvjitlink-cu12", "nvidia-nvtx-cu12"):
        assert cuda[name].startswith("12.4."), (name, cuda[name])
    test = pins(TEST_LOCK)
    assert {"pytest", "pytest-xdist", "matplotlib", "docker"} <= set(test)
    assert not set(test) & set(gpu), "the test lock must not re-pin a package of the gpu lock"


def test_dockerfile_lock_sha256_defaults_match_the_lock_file() -> None:
    """The image bakes this value as its marker; the build refuses a lock file with another sha256."""
    sha = hashlib.sha256(GPU_LOCK.read_bytes()).hexdigest()
    dockerfile = (REPO / "Dockerfile").read_text(encoding="utf-8")
    defaults = re.findall(r"^ARG REV88_LOCK_SHA256=(\S+)$", dockerfile, re.MULTILINE)
    assert defaults and set(defaults) == {sha}, "run `make lock` (it rewrites these defaults)"
    assert "--require-hashes" in dockerfile and "sha256sum --check --strict" in dockerfile
    for stage in ("verify", "gpu", "gpu-test"):
        assert re.search(rf"^FROM \S+ AS {stage}$", dockerfile, re.MULTILINE), stage
    assert dockerfile.index(" AS verify\n") < dockerfile.index(" AS gpu-base\n"), "verify stages come first"
    assert not dockerfile.startswith("# syntax=")


def test_no_file_names_a_registry_host() -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs git and the checkout's .git to list the tracked files (CI runs it on the host)")
    files = subprocess.run(["git", "-c", "safe.directory=*", "ls-files", "-z"], cwd=REPO, capture_output=True,
                           check=True).stdout.split(b"\0")
    offenders = []
    for name in filter(None, (f.decode() for f in files)):
        if name.startswith("evidence/rev88-original/"):
            continue
        path = REPO / name
        if not path.is_file() or path.suffix in {".gz", ".npy", ".png", ".npz"}:
            continue
        match = REGISTRY_HOSTS.search(path.read_text(encoding="utf-8", errors="replace"))
        if match:
            offenders.append(f"{name}: {match.group(0)}")
    assert offenders == []


DEB822 = """\
Types: deb
# a comment
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""


def test_apt_source_from_a_deb822_base(tmp_path: Path) -> None:
    (tmp_path / "etc/apt/sources.list.d").mkdir(parents=True)
    (tmp_path / "etc/apt/sources.list.d/debian.sources").write_text(DEB822)
    stanza = derive_apt_source.derive(derive_apt_source.base_entries(tmp_path), "bookworm", "trixie", "non-free")
    assert stanza == ("Types: deb\nURIs: http://mirror.example/debian\nSuites: trixie\nComponents: non-free\n"
                      "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")


def test_apt_source_from_a_one_line_base_and_refusal(tmp_path: Path) -> None:
    (tmp_path / "etc/apt").mkdir(parents=True)
    (tmp_path / "etc/apt/sources.list").write_text(
        "# debootstrap\ndeb-src http://src.example/debian bookworm main\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian bookworm main contrib\n")
    entries = derive_apt_source.base_entries(tmp_path)
    stanza = derive_apt_source.derive(entries, "bookworm", "trixie", "non-free")
    assert "URIs: http://mirror.example/debian\n" in stanza and "Signed-By: /k.gpg\n" in stanza
    with pytest.raises(LookupError):
        derive_apt_source.derive(entries, "bullseye", "trixie", "non-free")
    proc = subprocess.run([sys.executable, str(REPO / "docker/derive_apt_source.py"), "--root", str(tmp_path),
                           "--base-suite", "bullseye", "--suite", "trixie"], capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "bullseye main" in proc.stderr
