#!/usr/bin/env python3
"""Write the hash-pinned lock files of the GPU image from its direct requirements.

The GPU image installs Python packages only with ``pip install --require-hashes`` from two lock
files (``docker/requirements-gpu.lock`` for the ``gpu`` target, ``docker/requirements-gpu-test.lock``
for the ``gpu-test`` target, which adds the test runner on top). This script resolves the direct
requirements below with pip's own resolver for the image's platform (CPython 3.11, Linux x86-64,
binary wheels only) and writes every resolved distribution with the sha256 pip reports for the
wheel it chose. pip uses its index as configured on the host (``PIP_CONFIG_FILE`` etc.); nothing is
installed.

Usage::

    python3 scripts/lock_image_requirements.py            # rewrite both lock files and the
                                                          # Dockerfile's REV88_LOCK_SHA256 defaults
    python3 scripts/lock_image_requirements.py --check    # exit 1 when a lock file would change
    python3 scripts/lock_image_requirements.py --keep-gpu # the gpu lock's versions as constraints: only
                                                          # the test lock may change (the gpu image stays)

The test lock holds only what the test target adds: resolving it together with the GPU set
guarantees that it never changes a package of the ``gpu`` target.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GPU_LOCK = REPO / "docker" / "requirements-gpu.lock"
DOCKERFILE = REPO / "Dockerfile"
LOCK_ARG = re.compile(r"^(ARG REV88_LOCK_SHA256=)[0-9a-f]{64}$", re.MULTILINE)
TEST_LOCK = REPO / "docker" / "requirements-gpu-test.lock"

# Direct requirements of the gpu target: the pinned stack (spec: torch 2.5.1 + CUDA 12.4 wheels,
# numpy 2.2.6, nvidia-ml-py 12.560.30), NVIDIA's report reader, and the bundle's own dependencies
# at the versions of the verify image's lock.
GPU_DIRECT = (
    "torch==2.5.1",
    "numpy==2.2.6",
    "nvidia-ml-py==12.560.30",
    "ncu-report==2026.3.1",
    "typer==0.29.2",
    "rich==15.0.0",
    "setuptools==80.9.0",
)
# What the gpu-test target adds: the test runner and the packages the suite imports.
TEST_DIRECT = (
    "pytest==9.2.0",
    "matplotlib==3.11.2",
    "docker==7.2.0",
    "pytest-xdist==3.8.0",
)
PLATFORMS = ("manylinux_2_36_x86_64", "manylinux_2_28_x86_64", "manylinux_2_27_x86_64",
             "manylinux_2_25_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64", "linux_x86_64")
HEADER = """\
# {title}
# Written by scripts/lock_image_requirements.py (pip's resolver, CPython 3.11, Linux x86-64 wheels);
# do not edit by hand. Installed with `pip install --require-hashes --no-deps`.
# Direct requirements: {direct}
"""


def locked_pins(path: Path) -> list[str]:
    """The ``name==version`` lines of the lock file *path*, in its order (hashes left out)."""
    return re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*==[^\s\\]+)", path.read_text(encoding="utf-8"), re.MULTILINE)


def resolve(requirements: tuple[str, ...], constraints: tuple[str, ...] = ()) -> list[dict]:
    """Resolve *requirements* for the image platform with ``pip install --dry-run --report``, every
    ``name==version`` of *constraints* passed to pip as a constraint (``-c``).

    Returns:
        pip's ``install`` entries (``metadata.name``, ``metadata.version``, ``download_info``).

    Raises:
        SystemExit: pip failed (its last line is printed) or a wheel came without a sha256.
    """
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        constraint_file = Path(tmp) / "constraints.txt"
        constraint_file.write_text("".join(f"{pin}\n" for pin in constraints), encoding="utf-8")
        argv = [sys.executable, "-m", "pip", "install", "--quiet", "--dry-run", "--ignore-installed",
                "--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
                "--target", str(Path(tmp) / "target"), "--report", str(report), "-c", str(constraint_file)]
        for platform in PLATFORMS:
            argv += ["--platform", platform]
        proc = subprocess.run(argv + list(requirements), capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise SystemExit(f"lock: pip could not resolve {' '.join(requirements)}: {last}")
        entries = json.loads(report.read_text(encoding="utf-8"))["install"]
    for entry in entries:
        hashes = entry["download_info"].get("archive_info", {}).get("hashes", {})
        if "sha256" not in hashes:
            raise SystemExit(f"lock: pip reported no sha256 for {entry['metadata']['name']}: cannot pin it")
    return entries


def render(title: str, direct: tuple[str, ...], entries: list[dict]) -> str:
    """The lock file text: one ``name==version --hash=sha256:…`` per distribution, sorted by name."""
    lines = [HEADER.format(title=title, direct=", ".join(direct))]
    for entry in sorted(entries, key=lambda e: e["metadata"]["name"].lower()):
        meta, sha = entry["metadata"], entry["download_info"]["archive_info"]["hashes"]["sha256"]
        lines.append(f"{meta['name']}=={meta['version']} \\\n    --hash=sha256:{sha}\n")
    return "".join(lines)


def write_atomic(path: Path, text: str) -> None:
    """Replace *path* with *text* through a temporary file in the same folder."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a lock file differs from a fresh resolve")
    parser.add_argument("--keep-gpu", action="store_true",
                        help="resolve with the versions of the current gpu lock as constraints (only the test lock "
                             "may change)")
    args = parser.parse_args()
    constraints = tuple(locked_pins(GPU_LOCK)) if args.keep_gpu else ()
    gpu = resolve(GPU_DIRECT, constraints)
    both = resolve(GPU_DIRECT + TEST_DIRECT, constraints)
    gpu_pins = {(e["metadata"]["name"].lower(), e["metadata"]["version"]) for e in gpu}
    moved = [e["metadata"]["name"] for e in both
             if e["metadata"]["name"].lower() in {n for n, _ in gpu_pins}
             and (e["metadata"]["name"].lower(), e["metadata"]["version"]) not in gpu_pins]
    if moved:
        raise SystemExit(f"lock: the test requirements change gpu packages ({', '.join(moved)}): pin them compatibly")
    extra = [e for e in both if (e["metadata"]["name"].lower(), e["metadata"]["version"]) not in gpu_pins]
    texts = {
        GPU_LOCK: render("Python packages of the gpu image target", GPU_DIRECT, gpu),
        TEST_LOCK: render("What the gpu-test image target adds on top of requirements-gpu.lock", TEST_DIRECT, extra),
    }
    sha = hashlib.sha256(texts[GPU_LOCK].encode("utf-8")).hexdigest()
    dockerfile = DOCKERFILE.read_text(encoding="utf-8")
    if not LOCK_ARG.search(dockerfile):
        raise SystemExit(f"lock: no 'ARG REV88_LOCK_SHA256=<sha256>' line in {DOCKERFILE.name}")
    texts[DOCKERFILE] = LOCK_ARG.sub(lambda m: m.group(1) + sha, dockerfile)
    stale = [p for p, t in texts.items() if not p.is_file() or p.read_text(encoding="utf-8") != t]
    if args.check:
        for path in stale:
            print(f"lock: {path.relative_to(REPO)} differs from a fresh resolve: run {Path(__file__).name}")
        return 1 if stale else 0
    for path, text in texts.items():
        write_atomic(path, text)
        print(f"wrote {path.relative_to(REPO)} ({text.count('--hash=')} distributions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
