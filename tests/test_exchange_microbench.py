"""scripts/exchange_microbench.py: one clear line and exit 2 for bad input or a host without CuPy; its slices are
the CUDA kernel's cluster-split slices (the bench's numbers are under
docs/measurements/fused-cuda-exchange-bench-20261204)."""

from __future__ import annotations

import re
import sys

import pytest

from bundle import fused_cuda
from tests.conftest import load_script

bench = load_script("exchange_microbench")


def test_arguments_are_refused_in_one_line(capsys) -> None:
    assert bench.main(["--ctas", "8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no arguments" in err


def test_without_cupy_it_says_so_in_one_line(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)
    assert bench.main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs CuPy" in err


@pytest.mark.parametrize("ctas", [2, 3, 4, 5, 8])
def test_the_slices_are_the_kernels(ctas: int) -> None:
    """chunk() and the bench's CHUNK macro give the slice of bundle/fused_cuda.cu's CHUNK (SPLIT and CLUSTER)."""
    kernel = fused_cuda.KERNEL_SOURCE.read_text()
    assert "#define CHUNK (((NSTATE + 4 * G - 1) / (4 * G)) * 4)" in kernel
    assert "#define CHUNK (((7554 + 4 * G - 1) / (4 * G)) * 4)" in bench.BENCH
    size = bench.chunk(ctas)
    assert size % 4 == 0 and size * ctas >= bench.NSTATE > (size - 4) * ctas
    assert re.search(r"#define NSTATE \(BIAS_OFF \+ NCLS\)\s+// 7554", kernel)
