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
    """The bench uses bundle/fused_cuda.cu's CHUNK (SPLIT and CLUSTER), and chunk() evaluates that macro."""
    kernel = fused_cuda.KERNEL_SOURCE.read_text()
    macro = re.search(r"#if SPLIT && CLUSTER\n#define CHUNK (.*?)\s*//", kernel).group(1)
    assert "#define CHUNK" not in bench.BENCH
    assert eval(macro.replace("/", "//"), {"NSTATE": bench.NSTATE, "G": ctas}) == bench.chunk(ctas)  # noqa: S307
    assert re.search(r"#define NSTATE \(BIAS_OFF \+ NCLS\)\s+// 7554", kernel)
    assert bench.rows_per_block(ctas) * ctas >= 128 > (bench.rows_per_block(ctas) - 1) * ctas
