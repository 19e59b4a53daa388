"""Issue 16 measurement: what moving the cluster split's slices between the blocks of a cluster costs, per step,
and whether the move slows the product warps that run beside it.

    OUT=$OUT PYTHONPATH=. python3 scripts/exchange_microbench.py

Builds ``bundle/fused_cuda.cu`` (its CHUNK, ``tile()``, lane helpers and cluster barrier, at the launch constants of each
cluster size G in :data:`CLUSTERS`: 12 warps, ROWS = ceil(128 / G), split cluster) plus one bench kernel
through CuPy's NVRTC, and launches one cluster of G blocks of 384 threads. Every block holds a slice of
CHUNK floats (7,554 state entries in G slices, each a multiple of 4). Each repetition moves every other
block's slice into every block's receive buffer ((G - 1) x CHUNK x 4 bytes in per block) and meets at the
cluster barrier: one direction of the kernel's update exchange. Modes:

- ``barrier``: the kernel's cluster barrier alone (``cluster_arrive()``: a relaxed arrive after the restricted
  fences; ``cluster_wait()``), the baseline; every mode ends each repetition with it;
- ``pull``: the 384 threads read the other slices 16 bytes at a time (``ld.shared::cluster.v4.f32``) and
  store them into the local receive buffer, as the kernel's gather does;
- ``bulk``: each block's slice goes to every other block with one ``cp.async.bulk`` (the Tensor Memory
  Accelerator's bulk copy, shared::cta to shared::cluster) per destination, issued by lanes of warp 0; the
  receiver's warp 0 waits on its transaction barrier (``mbarrier`` with ``expect_tx``);
- ``compute``: warps 0..2 each run PRODS forward products (``tile<41, WS, RS, 2 or 4>``, a forward warp
  task of the kernel at that G) on local shared memory, the others wait at ``__syncthreads``, no exchange;
- ``compute+bulk``: the same products while warp 3 runs ``bulk``;
- ``compute+pull``: the same products while warps 3..11 run ``pull`` (as the eighteenth session's trial 1).

Block 0's thread 0 takes clock64 around REPS repetitions, and around its own products; the fastest of three
launches counts. Per G and mode it prints cycles per repetition, the bytes received per cycle beyond the
barrier's cycles (``pull``, ``bulk``), and warp 0's product cycles (``compute*``). Writes
``$OUT/exchange-microbench.json`` (this script's and the kernel source's sha256, CuPy and NVRTC versions).
Takes no arguments; without CuPy, a CUDA GPU of compute capability 9.0 or NVRTC 12.8 it says so in one line
and exits 2. A measurement for the issue's notes; nothing reads it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from bundle.fused_cuda import (
    FEATURE_ROWS,
    KERNEL_SOURCE,
    PREDICT_ROWS,
    STATE,
    WARPS,
    WEIGHT_STRIDE,
    row_stride,
)
from bundle.fused_learner import triton_cdiv
from bundle.learner import FROZEN_CONFIG, HALF

REPS = 200
CLUSTERS = (2, 4, 8)
MODES = ("barrier", "pull", "bulk", "compute", "compute+bulk", "compute+pull")
PRODS = 3
NSTATE = STATE            # 7,554 state entries
THREADS = 32 * WARPS      # 384


def chunk(g: int) -> int:
    """Floats of one block's slice at cluster size ``g`` (as the kernel's CHUNK with SPLIT and CLUSTER)."""
    return triton_cdiv(NSTATE, 4 * g) * 4


def rows_per_block(g: int) -> int:
    """Batch rows of one block at cluster size ``g`` (ceil(batch / g), as the host's ROWS)."""
    return triton_cdiv(FROZEN_CONFIG["batch_size"], g)


def shared_bytes(g: int) -> int:
    """Dynamic shared bytes of the bench kernel: the slice, G slices received, a weight copy, an activation
    array (:func:`bundle.fused_cuda.row_stride`) and the transaction barrier."""
    return 4 * (chunk(g) * (g + 1) + HALF * WEIGHT_STRIDE + FEATURE_ROWS * row_stride(rows_per_block(g))) + 8


BENCH = r"""
// appended to bundle/fused_cuda.cu (its CHUNK, HF, WS, FR, RS, TROWS, RP, tile(), lane_a(), lane_b(),
// cluster_arrive(), cluster_wait())
#define SQ (CHUNK / 4)                      // quads of a slice
#define NRT (TROWS(RP) / 8)                 // rows of a lane's product tile (2 with 16-row arrays, 4 with 32)

__device__ __forceinline__ unsigned xb_smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ unsigned xb_remote(unsigned a, unsigned rank) {
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
    return r;
}
__device__ __forceinline__ void xb_cluster_sync() {   // the kernel's cluster barrier
    cluster_arrive();
    cluster_wait();
}
// threads first .. first + n - 1 read every other block's slice, 16 bytes at a time, into recv
__device__ __forceinline__ void xb_pull(const float* mine, float* recv, unsigned rank, unsigned first, unsigned n) {
    for (unsigned q = threadIdx.x - first; q < G * SQ; q += n) {
        const unsigned src = q / SQ;
        if (src == rank) continue;
        float4 v;
        asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
                     : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                     : "r"(xb_remote(xb_smem(mine + 4 * (q % SQ)), src)) : "memory");
        *reinterpret_cast<float4*>(recv + 4 * q) = v;
    }
}
// lane j < G of the calling warp sends this block's slice into block j's recv; the warp waits for the G - 1
// slices sent here (transaction barrier mbar, phase parity `phase`)
__device__ __forceinline__ void xb_bulk(const float* mine, float* recv, unsigned long long* mbar, unsigned rank,
                                        unsigned phase) {
    const unsigned j = threadIdx.x & 31;
    if (j < G && j != rank) {
        asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     : : "r"(xb_remote(xb_smem(recv + rank * CHUNK), j)), "r"(xb_smem(mine)), "r"(CHUNK * 4),
                         "r"(xb_remote(xb_smem(mbar), j)) : "memory");
    }
    if (j == 0) {
        unsigned long long state;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;"
                     : "=l"(state) : "r"(xb_smem(mbar)), "r"((G - 1) * CHUNK * 4) : "memory");
        (void)state;
    }
    unsigned done = 0;
    while (!done) {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(xb_smem(mbar)), "r"(phase) : "memory");
    }
}

// modes: 0 barrier, 1 pull (all threads), 2 bulk (warp 0), 3 compute (warps 0..2: PRODS forward products each),
// 4 compute + bulk (warp 3), 5 compute + pull (warps 3..11); cycles[0] the loop, cycles[1] warp 0's products
extern "C" __global__ void __cluster_dims__(G, 1, 1) __launch_bounds__(384, 1)
exchange_bench(unsigned long long* cycles, float* sink, int reps, int mode, int prods) {
    extern __shared__ float4 xb_dyn[];
    float* mine = reinterpret_cast<float*>(xb_dyn);
    float* recv = mine + CHUNK;
    float* Wt = recv + G * CHUNK;
    float* act = Wt + HF * WS;
    unsigned long long* mbar = reinterpret_cast<unsigned long long*>(act + FR * RS);
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const unsigned t = threadIdx.x, warp = t >> 5;
    for (unsigned k = t; k < CHUNK; k += blockDim.x) mine[k] = rank + 1e-3f * k;
    for (unsigned k = t; k < G * CHUNK; k += blockDim.x) recv[k] = 0.0f;
    for (unsigned k = t; k < HF * WS; k += blockDim.x) Wt[k] = 1e-3f * (k % 97);
    for (unsigned k = t; k < FR * RS; k += blockDim.x) act[k] = 1e-3f * (k % 89);
    if (t == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" : : "r"(xb_smem(mbar)) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" : : : "memory");
    }
    asm volatile("fence.proxy.async.shared::cta;" : : : "memory");   // mine[] visible to the bulk copies
    __syncthreads();
    xb_cluster_sync();
    unsigned phase = 0;
    float acc = 0.0f;
    long long computing = 0;
    const int mt = (4 * (warp % 3) + lane_a()) % 11;
    const long long t0 = clock64();
    for (int rep = 0; rep < reps; ++rep) {
        if (mode == 1) xb_pull(mine, recv, rank, 0, blockDim.x);
        if (mode == 2 && warp == 0) xb_bulk(mine, recv, mbar, rank, phase);
        if (mode >= 3 && warp < 3) {
            const long long c0 = clock64();
            for (int p = 0; p < prods; ++p) {
                float c[4][NRT];
                tile<HF, WS, RS, NRT>(c, Wt, 4 * mt, act, NRT * lane_b());
#pragma unroll
                for (int m = 0; m < 4; ++m)
#pragma unroll
                    for (int r = 0; r < NRT; ++r) acc += c[m][r];
                asm volatile("" : : : "memory");
            }
            computing += clock64() - c0;
        }
        if (mode == 4 && warp == 3) xb_bulk(mine, recv, mbar, rank, phase);
        if (mode == 5 && warp >= 3) xb_pull(mine, recv, rank, 96, blockDim.x - 96);
        phase ^= 1u;
        __syncthreads();
        xb_cluster_sync();
        acc += recv[(4 * t + rep) % (G * CHUNK)];
    }
    const long long t1 = clock64();
    if (t == 0 && rank == 0) {
        cycles[0] = (unsigned long long)(t1 - t0);
        cycles[1] = (unsigned long long)computing;
    }
    sink[rank * blockDim.x + t] = acc;
}
"""


def main(argv: list[str]) -> int:
    if argv:
        print("usage: OUT=dir PYTHONPATH=. python3 scripts/exchange_microbench.py (no arguments)", file=sys.stderr)
        return 2
    kernel_file = KERNEL_SOURCE
    try:
        import cupy  # noqa: PLC0415

        kernels = {}
        for g in CLUSTERS:
            options = ("-std=c++14", f"-DNW={WARPS}", f"-DG={g}", f"-DROWS={rows_per_block(g)}", "-DSPLIT=1",
                       "-DCLUSTER=1", f"-DQB={PREDICT_ROWS}")
            kernels[g] = cupy.RawModule(code=kernel_file.read_text() + BENCH, options=options).get_function("exchange_bench")
            kernels[g].max_dynamic_shared_size_bytes = shared_bytes(g)
    except ImportError as exc:
        print(f"error: exchange_microbench needs CuPy ({exc}); run it on the GPU host", file=sys.stderr)
        return 2
    except Exception as exc:  # CuPy's compile and driver errors have no common base class
        print(f"error: the bench kernel did not build ({type(exc).__name__}: {' '.join(str(exc).split())[:300]}); "
              "run it on a CUDA GPU host of compute capability 9.0 with NVRTC 12.8 or later", file=sys.stderr)
        return 2
    cycles = cupy.zeros(2, dtype=cupy.uint64)
    sink = cupy.zeros(max(CLUSTERS) * THREADS, dtype=cupy.float32)
    rows = []
    for g in CLUSTERS:
        base = None
        for mode_index, mode in enumerate(MODES):
            best = None
            for _ in range(3):   # the fastest of three launches (the first pays the instruction fetch)
                cycles[...] = 0
                kernels[g]((g,), (THREADS,), (cycles, sink, cupy.int32(REPS), cupy.int32(mode_index), cupy.int32(PRODS)),
                           shared_mem=shared_bytes(g))
                cupy.cuda.Device().synchronize()
                loop, products = (int(c) / REPS for c in cycles.get())
                if best is None or loop < best[0]:
                    best = (loop, products)
            received = (g - 1) * chunk(g) * 4
            row = {"ctas": g, "mode": mode, "cycles_per_repetition": best[0], "bytes_in_per_block": received}
            text = f"G={g} {mode:12s}: {best[0]:8.1f} cycles per repetition"
            if mode == "barrier":
                base = best[0]
            if mode in ("pull", "bulk"):
                row["bytes_per_cycle_beyond_barrier"] = received / max(best[0] - base, 1.0)
                text += f", {received:,} B in per block, {row['bytes_per_cycle_beyond_barrier']:.1f} B/cycle beyond the barrier"
            if mode.startswith("compute"):
                row["product_cycles_per_repetition"] = best[1]
                text += f", warp 0's {PRODS} products {best[1]:8.1f} cycles"
            print(text, flush=True)
            rows.append(row)
    import cupy.cuda.runtime as rt  # noqa: PLC0415
    device = rt.getDeviceProperties(0)["name"].decode()
    major, minor = cupy.cuda.nvrtc.getVersion()
    out = Path(os.environ.get("OUT") or ".") / "exchange-microbench.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"schema": "exchange-microbench/2", "device": device, "reps": REPS, "products": PRODS,
                               "script_sha256": hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
                               "kernel_source_sha256": hashlib.sha256(kernel_file.read_bytes()).hexdigest(),
                               "cupy": cupy.__version__, "nvrtc": f"{major}.{minor}", "rows": rows}, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
