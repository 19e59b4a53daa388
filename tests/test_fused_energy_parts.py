"""scripts/fused_energy_parts.py: bad arguments and a host without a GPU end in exit 2 before any work (the
measurement itself runs on the device: scripts/device_session20a.sh)."""

from __future__ import annotations

import pytest
import torch

from bundle import fused_cuda
from tests.conftest import load_script

parts = load_script("fused_energy_parts")


@pytest.mark.parametrize("args", [["--rows", "64,x"], ["--shapes", "0,8"], ["--rows", ""], ["--rounds"]])
def test_bad_arguments_exit_2(args, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        parts.main(args)
    assert info.value.code == 2
    assert "error" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU host runs the measurement")
def test_without_a_gpu_it_says_so_in_one_line(capsys) -> None:
    assert parts.main(["--rounds", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no CUDA GPU" in err


def test_the_predict_block_sizes_it_compares() -> None:
    """64 query rows per block (the shipped kernel) and 128 (one wave on an H200, every warp busy) both fit a
    block's shared memory on an H200; 256 do not."""
    assert fused_cuda.predict_shared_bytes() == fused_cuda.predict_shared_bytes(64)
    assert fused_cuda.predict_shared_bytes(128) == 4 * (16144 + (4 * 44 + 10) * 132 + 128) <= 227 * 1024
    assert fused_cuda.predict_shared_bytes(256) > 227 * 1024
