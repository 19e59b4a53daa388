#!/usr/bin/env python3
"""Write the GPU image's marker ``/opt/rev88/image.json`` at build time (run by the Dockerfile).

The marker says what the image holds, read from the image itself while it is built: the lock
file's sha256, the Python, torch, CUDA, numpy and nvidia-ml-py versions of the venv, the Nsight
Compute version (``ncu --version``) and where that ncu came from, and the base image argument.
Records claim ``pinned_image: true`` only when this file is present, its ``lock_sha256`` equals
the ``REV88_IMAGE_LOCK_SHA256`` baked into the image, and the versions are the pinned ones
(``bundle.hostinfo``).

The file is canonical JSON (sorted keys, ``(",", ":")`` separators, ASCII, one trailing newline),
written atomically with mode 0644. Exit status 1 with one line when a fact cannot be read.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

SCHEMA = "rev88-image/1"


def ncu_version(ncu_root: Path) -> str:
    """The version ``<root>/ncu --version`` prints (``"2024.1.1.0"``).

    Raises:
        RuntimeError: ncu did not run or printed no ``Version x.y.z.w`` line.
    """
    proc = subprocess.run([str(ncu_root / "ncu"), "--version"], capture_output=True, text=True, check=False)
    match = re.search(r"Version (\d+\.\d+\.\d+(?:\.\d+)?) ", proc.stdout)
    if proc.returncode != 0 or match is None:
        raise RuntimeError(f"{ncu_root}/ncu --version failed (exit {proc.returncode}): {proc.stdout.strip()[:200]}")
    return match.group(1)


def marker(lock: Path, ncu_root: Path, base_image: str) -> dict[str, object]:
    """The marker object (see the module docstring); imports torch and numpy of this interpreter."""
    import numpy  # noqa: PLC0415
    import torch  # noqa: PLC0415

    return {
        "schema": SCHEMA,
        "target": "gpu",
        "lock_file": "docker/requirements-gpu.lock",
        "lock_sha256": hashlib.sha256(lock.read_bytes()).hexdigest(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "numpy": numpy.__version__,
        "nvidia_ml_py": importlib.metadata.version("nvidia-ml-py"),
        "ncu_report": importlib.metadata.version("ncu-report"),
        "ncu_version": ncu_version(ncu_root),
        "ncu_source": (ncu_root / "SOURCE").read_text(encoding="utf-8").strip(),
        "base_image": base_image,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lock", type=Path, required=True)
    parser.add_argument("--ncu", type=Path, required=True, help="the Nsight Compute folder (holds ncu and SOURCE)")
    parser.add_argument("--base-image", required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    try:
        text = json.dumps(marker(args.lock, args.ncu, args.base_image), sort_keys=True,
                          separators=(",", ":"), ensure_ascii=True) + "\n"
    except (OSError, RuntimeError, ImportError, importlib.metadata.PackageNotFoundError) as exc:
        print(f"write_image_marker: {exc}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=args.out.parent, prefix=".image.json.")
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, args.out)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
