"""Issue 16 measurement: does ``bundle/fused_cuda.cu`` give the bits of another revision of itself?

    PYTHONPATH=. python3 scripts/kernel_source_bits.py REV [G,split,cluster ...]

Builds the CPU harness of ``tests/test_fused_cuda_cpu.py`` (g++, one OS thread per CUDA thread) once with
the working tree's source and once with ``git show REV:bundle/fused_cuda.cu``, runs both on the short run of
those tests (draw 0's first 300 training rows, one epoch, 200 query rows) at each launch shape (default: the
shapes an sm_90 GPU launches at G = 2, 3, 4, 8 and the grid split at G = 16), and prints per shape whether
the final parameters, velocities, scores and predictions are bit-equal and whether the barrier counters
agree. Both builds get the larger shared-memory size of the two layouts (the harness fills unused shared
memory with NaN, so a read past what a kernel writes still shows). g++ does not contract a * b + c into an
FMA where NVRTC does, so equal bits here mean the same operations in the same order, not the GPU's bits; the
GPU's final state vectors are in the phase logs (``scripts/fused_cuda_phases.py``). A measurement for the
issue's notes; nothing reads its output.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from bundle import fused_cuda
from bundle.fused_learner import triton_cdiv
from tests import test_fused_cuda_cpu as harness

DEFAULT_SHAPES = ("2,0,1", "3,0,1", "4,1,1", "8,1,1", "16,1,0")


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print("usage: scripts/kernel_source_bits.py REV [G,split,cluster ...]", file=sys.stderr)
        return 2
    rev, shapes = argv[0], argv[1:] or list(DEFAULT_SHAPES)
    proc = subprocess.run(["git", "show", f"{rev}:bundle/fused_cuda.cu"], capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"error: git show {rev}:bundle/fused_cuda.cu failed ({proc.stderr.strip()[:200]})", file=sys.stderr)
        return 1
    current = fused_cuda.KERNEL_SOURCE
    raw, labels, query, orders, initial = harness._short_run()
    with tempfile.TemporaryDirectory() as top:
        other = Path(top) / "other.cu"
        other.write_text(proc.stdout)
        print(f"this tree {fused_cuda.kernel_source_sha256()[:8]} against {rev}")
        for shape in shapes:
            ctas, split, cluster = (int(x) for x in shape.split(","))
            rows = triton_cdiv(128, ctas)
            shared = max(fused_cuda.train_shared_bytes(rows, bool(cluster)),
                          fused_cuda.train_shared_bytes(triton_cdiv(rows, 32) * 32, bool(cluster)))
            outs = {}
            for name, source in (("this", current), ("other", other)):
                tmp = Path(tempfile.mkdtemp(dir=top))
                fused_cuda.KERNEL_SOURCE = source
                try:
                    exe, _ = harness._build(tmp, ctas, bool(split), cluster=bool(cluster))
                finally:
                    fused_cuda.KERNEL_SOURCE = current
                outs[name] = harness._run((exe, shared), tmp, raw, labels, orders, initial, query, ctas, 1)
            same = all(outs["this"][0][k].tobytes() == outs["other"][0][k].tobytes() for k in outs["this"][0])
            print(f"G={ctas} split={split} cluster={cluster}: {'bit-equal' if same else 'DIFFERENT'}, barrier "
                  f"counter {outs['this'][1]} / {outs['other'][1]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
