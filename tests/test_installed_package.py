"""A non-editable install outside the repository finds its host references, or says where it looked.

The project is installed with ``pip install --no-deps --no-build-isolation --target DIR`` from a
copy of its sources (so the checkout is not written to, and a read-only checkout works), then run
with ``PYTHONPATH=DIR`` from a folder outside the repository. Such an install is not in a checkout:
``protocol.hostrefs`` looks at the variables and the image's copies only.

* Without the variables (and outside the image, where ``/opt/rev88`` holds no copy), ``rev88
  reproduce`` refuses in one line naming the image's path and ``REV88_ORIGINAL_DIR``, before the
  run folder exists.
* With ``REV88_ORIGINAL_DIR`` and ``REV88_RAW_DIR`` naming the repository's copies (as the images
  set them), validate, compare and qualify (draw 0) record their comparisons with the frozen
  reference. On a shared 2-core host (the figures follow its load): validate 9-16 s, compare
  15-44 s, qualify of one draw a few seconds; all 11 draws would add 6-50 s, and the compose
  test already runs them in the image.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from protocol import hostrefs
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow
SOURCES = ("pyproject.toml", "README.md", "bundle", "verify", "protocol")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The project installed (non-editable) into a fresh target folder."""
    base = tmp_path_factory.mktemp("installed")
    src = base / "src"
    src.mkdir()
    for name in SOURCES:
        if (REPO_ROOT / name).is_dir():
            shutil.copytree(REPO_ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(REPO_ROOT / name, src / name)
    target = base / "site"
    res = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                          "--no-index", "--target", str(target), str(src)],
                         capture_output=True, text=True, timeout=600, cwd=base)
    assert res.returncode == 0, res.stdout + res.stderr
    return target


def _env(target: Path, **variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in {ref.env for ref in hostrefs.HOST_REFERENCES} and k != "PYTHONPATH"}
    return {**env, "PYTHONPATH": str(target), **variables}


def _rev88(target: Path, cwd: Path, *args: str, **variables: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bundle.cli", *args], capture_output=True, text=True,
                          timeout=900, env=_env(target, **variables), cwd=cwd)


def test_the_install_is_not_a_checkout(installed, tmp_path):
    code = ("import bundle, protocol, verify; from protocol import hostrefs; "
            "print(bundle.__file__); print(verify.__file__); print(hostrefs.checkout_root())")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=_env(installed), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    bundle_file, verify_file, root = res.stdout.split("\n")[:3]
    assert Path(bundle_file).is_relative_to(installed) and Path(verify_file).is_relative_to(installed)
    assert root == "None"


@pytest.mark.skipif(hostrefs.FROZEN_REFERENCE.image_path.is_dir(),
                    reason="the image's copy exists on this host (inside the image it is found, as it should be)")
def test_without_the_variables_reproduce_refuses_naming_every_place(installed, tmp_path):
    run_dir = tmp_path / "run"
    res = _rev88(installed, tmp_path, "reproduce", "--engine", "native", "--device", "cpu",
                 "--phases", "validate,compare,qualify", "--out", str(run_dir))
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr, res.stdout + res.stderr
    assert lines[0] == (
        "rev88: error: the frozen reference (evidence/rev88-original, holding cache-audit/cuda-validation.json, "
        "results/draw-00.json, " + ", ".join(f"results/draw-{i:02d}.json" for i in range(1, 11))
        + ", accuracy.json) is not on this host: looked at /opt/rev88/evidence/rev88-original (the image's copy); "
        "set REV88_ORIGINAL_DIR to a copy of the repository's evidence/rev88-original")
    assert not run_dir.exists()


def _record(path: Path) -> dict:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def test_with_the_variables_the_phases_compare_with_the_frozen_reference(installed, tmp_path):
    original, raw = REPO_ROOT / "evidence" / "rev88-original", REPO_ROOT / "data" / "mnist"
    refs = {"REV88_ORIGINAL_DIR": str(original), "REV88_RAW_DIR": str(raw)}
    run_dir = tmp_path / "run"
    res = _rev88(installed, tmp_path, "reproduce", "--engine", "native", "--device", "cpu",
                 "--phases", "validate,compare", "--out", str(run_dir), **refs)
    # the verifier closes reproduce: a CPU diagnostic's compare and validate are not protocol evidence
    assert res.returncode == 1 and "run): FAILED" in res.stdout and "Traceback" not in res.stderr, \
        res.stdout[-3000:] + res.stderr[-3000:]
    res = _rev88(installed, tmp_path, "qualify", "--device", "cpu", "--draws", "0", "--out", str(run_dir), **refs)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]

    comparison = _record(run_dir / "compare" / "comparison.json.gz")
    frozen = json.loads((original / "results" / "draw-00.json").read_text())["metadata"]
    assert comparison["frozen_reference"]["predictions_sha256"] == frozen["predictions_sha256"]
    assert comparison["predictions_bit_equal_to_frozen_reference"] is True
    oc = _record(run_dir / "validate" / "validation.json.gz")["original_comparison"]
    original_validation = json.loads((original / "cache-audit" / "cuda-validation.json").read_text())
    assert oc["original_check_count"] == original_validation["numerical_validation"]["checks"] == oc["check_count"]
    assert oc["equal"]["input_hashes"] and oc["equal"]["predictions_sha256"]
    draw = _record(run_dir / "qualify" / "draw-00.json.gz")
    assert draw["frozen_comparison"]["predictions_sha256_equal"] is True
    assert draw["frozen_comparison"]["frozen"]["predictions_sha256"] == frozen["predictions_sha256"]
