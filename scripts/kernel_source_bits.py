"""Issue 16 measurement: does ``bundle/fused_cuda.cu`` give the bits of another revision of itself?

    PYTHONPATH=. python3 scripts/kernel_source_bits.py REV [G,split,cluster[,push] ...]

Builds the CPU harness of ``tests/test_fused_cuda_cpu.py`` (g++, one OS thread per CUDA thread) once with
the working tree's source and once with ``git show REV:bundle/fused_cuda.cu``, runs both on the short run of
those tests (draw 0's first 300 training rows, one epoch, 200 query rows) at each launch shape (default: the
shapes an sm_90 GPU launches at G = 2, 3, 4, 8 and the grid split at G = 16), and prints per shape whether
the final parameters, velocities, scores and predictions are bit-equal and whether the barrier counters
agree. A fourth field 1 builds both with ``-DPUSH=1`` (the pushed exchange, exchange ``"push"``; a revision
without it ignores the option and runs its pulled exchange, so ``8,1,1,1`` compares the two exchanges). A bad shape or revision, or a build or run the harness refuses, is one line on stderr and a non-zero
exit. Both builds get the larger shared-memory size of the two layouts (the harness fills unused shared
memory with NaN, so a read past what a kernel writes still shows). g++ does not contract a * b + c into an
FMA where NVRTC does, so equal bits here mean the same operations in the same order, not the GPU's bits; the
GPU's final state vectors are in the phase logs (``scripts/fused_cuda_phases.py``). A measurement for the
issue's notes; nothing reads its output.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

from bundle import fused_cuda
from bundle.fused_learner import triton_cdiv
from tests import test_fused_cuda_cpu as harness

DEFAULT_SHAPES = ("2,0,1", "3,0,1", "4,1,1", "8,1,1", "16,1,0")


def parse_shape(text: str) -> tuple[int, int, int, int]:
    """``"G,split,cluster[,push]"`` as ints, G >= 1, split, cluster and push 0 or 1, cluster only for 2 <= G <= 8,
    push only where :func:`bundle.fused_cuda.push_possible`.

    Raises:
        ValueError: with the one line to print.
    """
    parts = text.split(",")
    if len(parts) not in (3, 4) or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"shape {text!r} is not G,split,cluster[,push] (non-negative integers, e.g. 8,1,1 or 8,1,1,1)")
    ctas, split, cluster, push = (*(int(p) for p in parts), 0)[:4]
    if ctas < 1 or split not in (0, 1) or cluster not in (0, 1) or push not in (0, 1):
        raise ValueError(f"shape {text!r}: G must be at least 1, split, cluster and push 0 or 1")
    if cluster and not 2 <= ctas <= fused_cuda.MAX_CLUSTER:
        raise ValueError(f"shape {text!r}: a cluster takes 2 to {fused_cuda.MAX_CLUSTER} blocks")
    if push and not fused_cuda.push_possible(triton_cdiv(128, ctas), bool(cluster), bool(split)):
        raise ValueError(f"shape {text!r}: push needs the split cluster update at G >= 4")
    return ctas, split, cluster, push


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print("usage: scripts/kernel_source_bits.py REV [G,split,cluster[,push] ...]", file=sys.stderr)
        return 2
    rev = argv[0]
    try:
        shapes = [parse_shape(a) for a in argv[1:] or DEFAULT_SHAPES]
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        proc = subprocess.run(["git", "show", f"{rev}:bundle/fused_cuda.cu"], capture_output=True,
                              cwd=Path(__file__).resolve().parent.parent)   # bytes: the sha of the file as stored
    except OSError as exc:   # no git on this machine
        print(f"error: git show {rev}:bundle/fused_cuda.cu could not run ({exc})", file=sys.stderr)
        return 1
    if proc.returncode != 0:
        print(f"error: git show {rev}:bundle/fused_cuda.cu failed ({proc.stderr.decode(errors='replace').strip()[:200]})",
              file=sys.stderr)
        return 1
    current = fused_cuda.KERNEL_SOURCE
    other_sha = hashlib.sha256(proc.stdout).hexdigest()
    raw, labels, query, orders, initial = harness._short_run()
    with tempfile.TemporaryDirectory() as top:
        other = Path(top) / "other.cu"
        other.write_bytes(proc.stdout)
        print(f"this tree's source {fused_cuda.kernel_source_sha256()[:8]} against {rev}'s {other_sha[:8]}")
        for ctas, split, cluster, push in shapes:
            rows = triton_cdiv(128, ctas)
            shared = max(fused_cuda.train_shared_bytes(rows, bool(cluster), bool(push)),
                          fused_cuda.train_shared_bytes(triton_cdiv(rows, 32) * 32, bool(cluster)))
            outs = {}
            for name, source in (("this", current), ("other", other)):
                tmp = Path(tempfile.mkdtemp(dir=top))
                fused_cuda.KERNEL_SOURCE = source
                try:
                    exe, _ = harness._build(tmp, ctas, bool(split), cluster=bool(cluster), push=bool(push))
                    outs[name] = harness._run((exe, shared), tmp, raw, labels, orders, initial, query, ctas, 1)
                except AssertionError as exc:   # the harness's own checks: a swapped line missing, g++ or a run failed
                    first = " ".join(str(exc).split())[:300]
                    print(f"error: G={ctas} split={split} cluster={cluster} push={push}, {name} source: {first}",
                          file=sys.stderr)
                    return 1
                finally:
                    fused_cuda.KERNEL_SOURCE = current
            same = all(outs["this"][0][k].tobytes() == outs["other"][0][k].tobytes() for k in outs["this"][0])
            print(f"G={ctas} split={split} cluster={cluster} push={push}: {'bit-equal' if same else 'DIFFERENT'}, barrier "
                  f"counter {outs['this'][1]} / {outs['other'][1]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
