"""Issue 16 measurement: how fast one SM runs the CUDA kernel's product tile, by active warps.

    OUT=$OUT PYTHONPATH=. python3 scripts/tile_microbench.py

Builds ``bundle/fused_cuda.cu`` (its ``tile()`` template and helpers, at G = 4's 32-row arrays) plus one
bench kernel through CuPy's NVRTC and launches a single block of 12 warps, of which the first W run a
product REPS times, each a clock64 interval; per mode and W it prints the mean cycles per product (the
slowest warp's) and the block's instructions per cycle as W x instructions-per-product / cycles. Modes:
``tile4x4`` (``tile<41, WS, 36, 4>``, a forward warp task at G = 4: 16 features x 32 rows),
``tile4x2`` (``tile<41, WS, 36, 2>``, 16 x 16), ``ffma`` (the 4 x 4 tile's 656 FMAs on operands already
in registers: the FP32 pipe alone) and ``lds`` (the tile's 82 16-byte shared reads alone). A memory
clobber after every product makes each repetition read shared memory again. Writes
``$OUT/tile-microbench.json`` (with the kernel source's sha256 and the CuPy and NVRTC versions; the file of
2026-12-04 in docs/measurements/fused-cuda-ceiling-20261204 predates those fields and was made with source
ac5da96b…). Takes no arguments; without CuPy or a CUDA GPU it says so in one line and exits 2. A
measurement for the issue's notes; nothing reads it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

REPS = 200
WARPS = (1, 2, 3, 4, 6, 8, 12)
MODES = ("tile4x4", "tile4x2", "ffma", "lds")
#: warp instructions per product, counted from the source (16 or 8 FMAs and two reads per term; the
#: loop and address overhead not counted), to turn cycles into a lower bound on instructions per cycle
INSTRUCTIONS = {"tile4x4": 41 * 18, "tile4x2": 41 * 10, "ffma": 41 * 16, "lds": 41 * 2}

BENCH = r"""
// every output of a tile, so that none of its chains is dead code
template <int NR>
__device__ __forceinline__ float sum_tile(const float (&c)[4][NR]) {
    float s = 0.0f;
#pragma unroll
    for (int m = 0; m < 4; ++m)
#pragma unroll
        for (int r = 0; r < NR; ++r) s += c[m][r];
    return s;
}

extern "C" __global__ void __launch_bounds__(384)
tile_bench(unsigned long long* cycles, float* sink, int active, int reps, int mode) {
    __shared__ __align__(16) float Wt[HF * WS];
    __shared__ __align__(16) float src[FR * 36];
    const int warp = threadIdx.x >> 5;
    for (int k = threadIdx.x; k < HF * WS; k += blockDim.x) Wt[k] = 1e-3f * (k % 97);
    for (int k = threadIdx.x; k < FR * 36; k += blockDim.x) src[k] = 1e-3f * (k % 89);
    __syncthreads();
    if (warp >= active) return;
    const int mt = 4 * (warp % 3) + lane_a();
    float acc = 0.0f;
    const long long t0 = clock64();
    for (int rep = 0; rep < reps; ++rep) {
        if (mode == 0) {
            float c[4][4];
            tile<HF, WS, 36, 4>(c, Wt, 4 * (mt % 11), src, 4 * lane_b());
            acc += sum_tile(c);
        } else if (mode == 1) {
            float c[4][2];
            tile<HF, WS, 36, 2>(c, Wt, 4 * (mt % 11), src, 2 * lane_b());
            acc += sum_tile(c);
        } else if (mode == 2) {
            float c[4][4], a[4], b[4];
#pragma unroll
            for (int m = 0; m < 4; ++m) { a[m] = acc + m; b[m] = acc - m; }
#pragma unroll
            for (int m = 0; m < 4; ++m)
#pragma unroll
                for (int r = 0; r < 4; ++r) c[m][r] = 0.0f;
#pragma unroll 8
            for (int k = 0; k < HF; ++k)
#pragma unroll
                for (int m = 0; m < 4; ++m)
#pragma unroll
                    for (int r = 0; r < 4; ++r) c[m][r] = fmaf(a[m], b[r], c[m][r]);
            acc += sum_tile(c);
        } else {
            float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 8
            for (int k = 0; k < HF; ++k) {
                const float4 a = ld4(Wt + k * WS + 4 * (mt % 11));
                const float4 b = ld4(src + k * 36 + 4 * lane_b());
                s.x += a.x; s.y += b.y; s.z += a.z; s.w += b.w;
            }
            acc += s.x + s.y + s.z + s.w;
        }
        asm volatile("" : : : "memory");
    }
    const long long t1 = clock64();
    if ((threadIdx.x & 31) == 0) cycles[warp] = (unsigned long long)(t1 - t0);
    sink[threadIdx.x] = acc;
}
"""


def main(argv: list[str]) -> int:
    if argv:
        print("usage: OUT=dir PYTHONPATH=. python3 scripts/tile_microbench.py (no arguments)", file=sys.stderr)
        return 2
    try:
        import cupy  # noqa: PLC0415

        kernel_file = Path(__file__).resolve().parents[1] / "bundle" / "fused_cuda.cu"
        source = kernel_file.read_text() + BENCH
        options = ("-std=c++14", "-DNW=12", "-DG=4", "-DROWS=32", "-DSPLIT=1", "-DCLUSTER=1", "-DQB=64")
        kernel = cupy.RawModule(code=source, options=options).get_function("tile_bench")
    except ImportError as exc:
        print(f"error: tile_microbench needs CuPy ({exc}); run it on the GPU host", file=sys.stderr)
        return 2
    except Exception as exc:  # CuPy's compile and driver errors have no common base class
        print(f"error: the bench kernel did not build ({type(exc).__name__}: {' '.join(str(exc).split())[:300]}); "
              "run it on a CUDA GPU host with NVRTC 12.8 or later", file=sys.stderr)
        return 2
    cycles = cupy.zeros(12, dtype=cupy.uint64)
    sink = cupy.zeros(384, dtype=cupy.float32)
    rows = []
    for mode_index, mode in enumerate(MODES):
        for warps in WARPS:
            best = None
            for _ in range(3):   # the fastest of three launches (the first pays the instruction fetch)
                cycles[...] = 0
                kernel((1,), (384,), (cycles, sink, cupy.int32(warps), cupy.int32(REPS), cupy.int32(mode_index)))
                cupy.cuda.Device().synchronize()
                slowest = int(cycles.get()[:warps].max()) / REPS
                best = slowest if best is None else min(best, slowest)
            ipc = warps * INSTRUCTIONS[mode] / best
            rows.append({"mode": mode, "warps": warps, "cycles_per_product": best, "ipc_lower_bound": ipc})
            print(f"{mode:8s} warps={warps:2d}: {best:8.1f} cycles per product, >= {ipc:.2f} instructions/cycle",
                  flush=True)
    out = Path(os.environ.get("OUT") or ".") / "tile-microbench.json"
    import cupy.cuda.runtime as rt  # noqa: PLC0415
    device = rt.getDeviceProperties(0)["name"].decode()
    major, minor = cupy.cuda.nvrtc.getVersion()
    out.write_text(json.dumps({"schema": "tile-microbench/1", "device": device, "reps": REPS,
                               "kernel_source_sha256": hashlib.sha256(kernel_file.read_bytes()).hexdigest(),
                               "cupy": cupy.__version__, "nvrtc": f"{major}.{minor}", "rows": rows}, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
