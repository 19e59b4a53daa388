"""scripts/kernel_source_bits.py refuses bad input in one line, before any build (the comparison itself runs
the g++ harness of tests/test_fused_cuda_cpu.py; its outputs are under docs/measurements: ac5da96b… against
352ca9b5… in fused-cuda-16-rows-20261204, the current source against ac5da96b… in fused-cuda-ceiling-20261204)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT


@pytest.mark.parametrize(("args", "rc", "word"), [
    (["HEAD", "1,2"], 2, "G,split,cluster"), (["HEAD", "abc"], 2, "G,split,cluster"),
    (["HEAD", "0,0,0"], 2, "at least 1"), (["HEAD", "2,0,1,1"], 2, "push needs"), (["HEAD", "3,1,1,1"], 2, "push needs"),
    (["HEAD", "8,1,1,2"], 2, "0 or 1"), (["HEAD", "8,1,1,1,1"], 2, "G,split,cluster"), (["HEAD", "9,1,1"], 2, "2 to 8 blocks"), (["HEAD", "4,2,0"], 2, "0 or 1"),
    (["no-such-revision", "8,1,1"], 1, "git show"), ([], 2, "usage")])
def test_bad_input_is_one_line(args, rc, word) -> None:
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "kernel_source_bits.py"), *args],
                          capture_output=True, text=True, timeout=120, cwd=REPO_ROOT,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert proc.returncode == rc
    assert word in proc.stderr and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert proc.stdout == ""
