"""Issue 16 measurement: what moving the cluster split's slices between the blocks of a cluster costs, per step.

    OUT=$OUT PYTHONPATH=. python3 scripts/exchange_microbench.py

One bench kernel (its own source, below; it does not build ``bundle/fused_cuda.cu``) is compiled through
CuPy's NVRTC for each cluster size G in :data:`CLUSTERS` and launched as one cluster of G blocks of 384
threads (12 warps, as the shipped kernel). Every block holds a slice of CHUNK floats, CHUNK as the kernel's
cluster split (7,554 state entries in G slices, each a multiple of 4), and each repetition moves every
other block's slice into every block's receive buffer ((G - 1) x CHUNK x 4 bytes in per block), then meets
at the cluster barrier, as one exchange of the kernel's update. Modes:

- ``barrier``: the cluster barrier alone (arrive with release, wait with acquire), the baseline;
- ``pull``: the 384 threads read the other slices 16 bytes at a time (``ld.shared::cluster.v4.f32``) and
  store them into the local receive buffer: what the kernel's gather does;
- ``bulk``: each block's slice goes to every other block with one ``cp.async.bulk`` (the Tensor Memory
  Accelerator's bulk copy, shared::cta to shared::cluster) per destination, issued by one thread each; the
  receiver waits on its transaction barrier (``mbarrier`` with ``expect_tx``). No thread loads or stores.

Block 0's thread 0 takes clock64 around REPS repetitions; the fastest of three launches counts. Per G and
mode it prints cycles per repetition and, for ``pull`` and ``bulk``, the bytes received per cycle beyond
the barrier's cycles. Writes ``$OUT/exchange-microbench.json`` (this script's sha256, CuPy and NVRTC
versions). Takes no arguments; without CuPy, a CUDA GPU of compute capability 9.0 or NVRTC 12.x it says so
in one line and exits 2. A measurement for the issue's notes; nothing reads it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

REPS = 200
CLUSTERS = (2, 4, 8)
MODES = ("barrier", "pull", "bulk")
NSTATE = 7554
THREADS = 384


def chunk(g: int) -> int:
    """Floats of one block's slice at cluster size ``g`` (as the kernel's CHUNK with SPLIT and CLUSTER)."""
    return -(-NSTATE // (4 * g)) * 4


BENCH = r"""
#define CHUNK (((7554 + 4 * G - 1) / (4 * G)) * 4)
#define NQ (CHUNK / 4)

__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ unsigned remote(unsigned a, unsigned rank) {
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
    return r;
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive;" : : : "memory");
    asm volatile("barrier.cluster.wait;" : : : "memory");
}

extern "C" __global__ void __cluster_dims__(G, 1, 1) __launch_bounds__(384, 1)
exchange_bench(unsigned long long* cycles, float* sink, int reps, int mode) {
    __shared__ __align__(16) float mine[CHUNK];
    __shared__ __align__(16) float recv[G * CHUNK];
    __shared__ __align__(8) unsigned long long mbar;
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const unsigned t = threadIdx.x;
    for (unsigned k = t; k < CHUNK; k += blockDim.x) mine[k] = rank + 1e-3f * k;
    for (unsigned k = t; k < G * CHUNK; k += blockDim.x) recv[k] = 0.0f;
    if (t == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" : : "r"(smem(&mbar)) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" : : : "memory");
    }
    asm volatile("fence.proxy.async.shared::cta;" : : : "memory");   // mine[] visible to the bulk copies
    __syncthreads();
    cluster_sync();
    unsigned phase = 0;
    float acc = 0.0f;
    const long long t0 = clock64();
    for (int rep = 0; rep < reps; ++rep) {
        if (mode == 1) {
            for (unsigned q = t; q < G * NQ; q += blockDim.x) {
                const unsigned src = q / NQ;
                if (src == rank) continue;
                float4 v;
                asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
                             : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                             : "r"(remote(smem(mine + 4 * (q % NQ)), src)) : "memory");
                *reinterpret_cast<float4*>(recv + 4 * q) = v;
            }
        } else if (mode == 2) {
            if (t < G && t != rank) {
                asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                             : : "r"(remote(smem(recv + rank * CHUNK), t)), "r"(smem(mine)), "r"(CHUNK * 4),
                                 "r"(remote(smem(&mbar), t)) : "memory");
            }
            if (t == 0) {
                unsigned long long state;
                asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;"
                             : "=l"(state) : "r"(smem(&mbar)), "r"((G - 1) * CHUNK * 4) : "memory");
            }
            unsigned done = 0;
            while (!done) {
                asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                             : "=r"(done) : "r"(smem(&mbar)), "r"(phase) : "memory");
            }
            phase ^= 1u;
        }
        cluster_sync();
        acc += recv[(4 * t + rep) % (G * CHUNK)];
    }
    const long long t1 = clock64();
    if (t == 0 && rank == 0) cycles[0] = (unsigned long long)(t1 - t0);
    sink[rank * blockDim.x + t] = acc;
}
"""


def main(argv: list[str]) -> int:
    if argv:
        print("usage: OUT=dir PYTHONPATH=. python3 scripts/exchange_microbench.py (no arguments)", file=sys.stderr)
        return 2
    try:
        import cupy  # noqa: PLC0415

        kernels = {g: cupy.RawModule(code=BENCH, options=("-std=c++14", f"-DG={g}")
                                     ).get_function("exchange_bench") for g in CLUSTERS}
    except ImportError as exc:
        print(f"error: exchange_microbench needs CuPy ({exc}); run it on the GPU host", file=sys.stderr)
        return 2
    except Exception as exc:  # CuPy's compile and driver errors have no common base class
        print(f"error: the bench kernel did not build ({type(exc).__name__}: {' '.join(str(exc).split())[:300]}); "
              "run it on a CUDA GPU host of compute capability 9.0 with NVRTC 12.x or later", file=sys.stderr)
        return 2
    cycles = cupy.zeros(1, dtype=cupy.uint64)
    sink = cupy.zeros(max(CLUSTERS) * THREADS, dtype=cupy.float32)
    rows = []
    for g in CLUSTERS:
        base = None
        for mode_index, mode in enumerate(MODES):
            best = None
            for _ in range(3):
                cycles[...] = 0
                kernels[g]((g,), (THREADS,), (cycles, sink, cupy.int32(REPS), cupy.int32(mode_index)))
                cupy.cuda.Device().synchronize()
                per_rep = int(cycles.get()[0]) / REPS
                best = per_rep if best is None else min(best, per_rep)
            received = (g - 1) * chunk(g) * 4
            row = {"ctas": g, "mode": mode, "cycles_per_repetition": best, "bytes_in_per_block": received}
            if mode == "barrier":
                base = best
                print(f"G={g} {mode:7s}: {best:8.1f} cycles per repetition", flush=True)
            else:
                row["bytes_per_cycle_beyond_barrier"] = received / max(best - base, 1.0)
                print(f"G={g} {mode:7s}: {best:8.1f} cycles per repetition, {received:,} B in per block, "
                      f"{row['bytes_per_cycle_beyond_barrier']:.1f} B/cycle beyond the barrier", flush=True)
            rows.append(row)
    import cupy.cuda.runtime as rt  # noqa: PLC0415
    device = rt.getDeviceProperties(0)["name"].decode()
    major, minor = cupy.cuda.nvrtc.getVersion()
    out = Path(os.environ.get("OUT") or ".") / "exchange-microbench.json"
    out.write_text(json.dumps({"schema": "exchange-microbench/1", "device": device, "reps": REPS,
                               "script_sha256": hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
                               "cupy": cupy.__version__, "nvrtc": f"{major}.{minor}", "rows": rows}, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
