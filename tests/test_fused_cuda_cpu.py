"""The CUDA kernel tool's own source on the CPU: bundle/fused_cuda.cu compiled by g++ with
tests/fused_cuda_cpu/shim.h (one OS thread per CUDA thread, a pthread barrier per block) and run by
tests/fused_cuda_cpu/harness.cpp.

The kernel's PTX lines are swapped for CPU stand-ins (:data:`SWAPS`: the acquire load of the grid barrier,
the read of the thread index that keeps the update's positions from being hoisted, the two
``extern __shared__`` declarations, the cluster's barrier halves (split on the CPU too, with some threads
sleeping after they arrive) and fences, ``mapa`` (another block's copy of a shared address, as a
shared::cluster address: the rank in the top bits) and the 16-byte read there, and the pushed exchange's
transaction barriers, proxy fences and bulk copies (shim.h)); every other line is the file the GPU runs, its operations
and their order included (g++ does not contract a * b + c into one FMA where NVRTC does, so the bits
are not the GPU's: hence the tolerances). Unused shared and global memory starts as NaN, so a read of
something never written shows up. Checks: against the numpy reference of the schedule
(``bundle.fused_cuda.reference_train``) on a short run at several launch shapes, and a whole draw
against the frozen predictions.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from bundle import fused_cuda
from bundle.fused_learner import triton_cdiv
from bundle.learner import FROZEN_CONFIG, build_model, epoch_orders
from protocol.data import load_draw
from tests.conftest import REPO_ROOT

HERE = REPO_ROOT / "tests" / "fused_cuda_cpu"
#: (kernel line, its CPU stand-in, how often the line occurs: a count, or the counts it may have where
#: kernel revisions differ; ARRIVES says how many of those lines a revision must have in all)
SEQ_CST_FENCE = "std::atomic_thread_fence(std::memory_order_seq_cst);"
SWAPS = (('asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");',
          "v = __atomic_load_n(p, __ATOMIC_ACQUIRE); sched_yield();", 1),
         ("extern __shared__ float4 sm4[];", "float4* sm4 = emu_shared;", 2),
         ('asm volatile("mov.u32 %0, %%tid.x;" : "=r"(first));', "first = threadIdx.x;", 1),
         # the cluster arrive: with release (sources up to ac5da96b…), or relaxed after restricted fences
         # (0ac8be88… on; swap_in_stand_ins() requires the release fence with it); the emulated arrive releases
         ('asm volatile("barrier.cluster.arrive;" : : : "memory");', "emu_cluster_arrive();", (0, 1)),
         ('asm volatile("fence.acquire.sync_restrict::shared::cluster.cluster;" : : : "memory");', SEQ_CST_FENCE,
          (0, 1)),
         ('asm volatile("fence.release.sync_restrict::shared::cta.cluster;" : : : "memory");', SEQ_CST_FENCE,
          (0, 1)),
         ('asm volatile("barrier.cluster.arrive.relaxed;" : : : "memory");', "emu_cluster_arrive();", (0, 1)),
         ('asm volatile("barrier.cluster.wait;" : : : "memory");', "emu_cluster_wait();", 1),
         ('asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));',
          "r = emu_cluster_addr(a, rank);", 1),
         ('asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), '
          '"=f"(v[3]) : "r"(addr) : "memory");', "emu_cluster_load4(addr, v);", 1),
         # the pushed exchange's transaction barriers, proxy fences and bulk copies (sources after 8feb27d9…)
         ('asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" : : "r"(bar) : "memory");', "emu_mbar_init(bar);",
          (0, 1)),
         ('asm volatile("fence.mbarrier_init.release.cluster;" : : : "memory");', SEQ_CST_FENCE, (0, 1)),
         ('asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" : : "r"(bar), "r"(bytes) : '
          '"memory");', "emu_mbar_expect(bar, bytes);", (0, 1)),
         ('asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; '
          '}" : "=r"(done) : "r"(bar), "r"(parity) : "memory");', "done = emu_mbar_done(bar, parity);", (0, 1)),
         ('asm volatile("fence.proxy.async.shared::cta;" : : : "memory");', SEQ_CST_FENCE, (0, 1)),
         ('asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" '
          ': : "r"(dst), "r"(src), "r"(bytes), "r"(bar) : "memory");', "emu_bulk_copy(dst, src, bytes, bar);", (0, 1)))

RELEASE_FENCE = 'asm volatile("fence.release.sync_restrict::shared::cta.cluster;" : : : "memory");'
#: the cluster arrive's forms: a source has exactly one of them, once (the first or the last)
ARRIVES = ('asm volatile("barrier.cluster.arrive;" : : : "memory");',
           'asm volatile("barrier.cluster.arrive.relaxed;" : : : "memory");')


def swap_in_stand_ins(text: str) -> str:
    """A kernel source with every line of :data:`SWAPS` replaced by its CPU stand-in.

    Raises:
        AssertionError: a line occurs a number of times :data:`SWAPS` does not allow, the source has not
            exactly one cluster arrive (:data:`ARRIVES`), or a relaxed arrive without the release fence.
    """
    arrives = sum(text.count(line) for line in ARRIVES)
    assert arrives == 1, f"the kernel source has {arrives} cluster arrives, not one"
    if ARRIVES[1] in text:   # a relaxed arrive releases nothing: the release fence must come with it
        assert text.count(RELEASE_FENCE) == 1, "the relaxed cluster arrive has no release fence before it"
    for line, stand_in, count in SWAPS:
        allowed = count if isinstance(count, tuple) else (count,)
        assert text.count(line) in allowed, f"the kernel source has {line!r} {text.count(line)} time(s), not {allowed}"
        text = text.replace(line, stand_in)
    return text


pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (the CI machine has one)")


def _build(tmp: Path, ctas: int, split: bool, warps: int = fused_cuda.WARPS,
           cluster: bool | None = None, push: bool = False) -> tuple[Path, int]:
    """The harness with the kernel at this launch shape (cluster: None, as on an sm_90 GPU; push: the pushed
    exchange, fused_cuda.cu PUSH) and the training block's shared bytes."""
    cluster = fused_cuda.cluster_possible(ctas, (9, 0)) if cluster is None else cluster
    text = swap_in_stand_ins(fused_cuda.KERNEL_SOURCE.read_text())
    (tmp / "kernel.inc").write_text(text)
    exe = tmp / "harness"
    rows = triton_cdiv(FROZEN_CONFIG["batch_size"], ctas)
    proc = subprocess.run(["g++", "-std=c++17", "-O2", "-pthread", f"-I{HERE}", f"-I{tmp}", f"-DNW={warps}",
                           f"-DG={ctas}", f"-DROWS={rows}", f"-DSPLIT={int(split)}", f"-DCLUSTER={int(cluster)}",
                           f"-DQB={fused_cuda.PREDICT_ROWS}", f"-DPUSH={int(push)}",
                           str(HERE / "harness.cpp"), "-o", str(exe)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return exe, fused_cuda.train_shared_bytes(rows, cluster, push, ctas)


def _run(build: tuple[Path, int], tmp: Path, raw, labels, orders, initial, query, ctas: int, epochs: int):
    raw.astype(np.float32).tofile(tmp / "raw.bin")
    labels.astype(np.int64).tofile(tmp / "labels.bin")
    orders.astype(np.int64).tofile(tmp / "orders.bin")
    initial.astype(np.float32).tofile(tmp / "init.bin")
    query.astype(np.float32).tofile(tmp / "query.bin")
    cfg = FROZEN_CONFIG
    exe, train_shared = build
    proc = subprocess.run([str(exe), str(tmp), str(len(raw)), str(epochs), str(cfg["batch_size"]), str(cfg["alpha"]),
                           str(cfg["momentum"]), str(cfg["learning_rate"]), str(cfg["weight_decay"]), str(len(query)),
                           str(train_shared), str(fused_cuda.predict_shared_bytes())],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = {name: np.fromfile(tmp / f"{name}.bin", dtype) for name, dtype in (
        ("params", np.float32), ("velocity", np.float32), ("scores", np.float32), ("predictions", np.int64))}
    return out, int(proc.stdout.split()[-1])


def _initial() -> np.ndarray:
    model = build_model(2, FROZEN_CONFIG["alpha"], FROZEN_CONFIG["seed"])
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy()


def _short_run() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Draw 0's first 300 training rows (float32 (300, 81) pixels, int64 labels), its first 200 query rows,
    one epoch's order of the 300 (int64) and the initial state vector (float32 (7554,))."""
    inputs = load_draw(0).learner_inputs()
    return (inputs["train_images"].reshape(-1, 81)[:300], inputs["train_labels"].astype(np.int64)[:300],
            inputs["test_images"].reshape(-1, 81)[:200], epoch_orders(300, 1, FROZEN_CONFIG["seed"]), _initial())


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / np.abs(b).max())


@pytest.mark.parametrize(("ctas", "split", "warps", "cluster"), [
    (1, False, fused_cuda.WARPS, None), (3, True, fused_cuda.WARPS, None), (3, True, fused_cuda.WARPS, False),
    (8, False, fused_cuda.WARPS, None), (8, True, fused_cuda.WARPS, None), (2, False, fused_cuda.WARPS, None),
    (2, False, 12, False), (64, True, fused_cuda.MIN_WARPS, None)])
def test_kernel_source_matches_the_reference_schedule(tmp_path, ctas, split, warps, cluster) -> None:
    """300 training rows of draw 0, one epoch (batches of 128, 128 and a short one of 44, so some blocks get
    no rows), 200 query rows: parameters, velocities and scores agree with the numpy reference to float32
    rounding, predictions exactly, every value finite, and the barrier counter adds up; for the launch
    shapes of an sm_90 GPU (cluster None: the cluster update at 2 to 8 blocks, split or not) and the grid barrier
    at G = 2 and, split, at G = 3.
    64 blocks run at the fewest warps (one OS thread per CUDA thread)."""
    raw, labels, query, orders, initial = _short_run()
    out, barrier = _run(_build(tmp_path, ctas, split, warps, cluster), tmp_path, raw, labels, orders, initial, query,
                        ctas, 1)
    params, velocity = fused_cuda.reference_train(raw.astype(np.float32), labels, orders, initial, ctas,
                                                  {**FROZEN_CONFIG, "epochs": 1})
    assert barrier == 3 * ctas * (2 if split else 1)
    for name in ("params", "velocity", "scores"):
        assert np.isfinite(out[name]).all(), name
    assert _relative(out["params"], params) < 1e-5 and _relative(out["velocity"], velocity) < 1e-5
    _, _, logits = fused_cuda.reference_forward(params, query.astype(np.float32), np.float32(FROZEN_CONFIG["alpha"]))
    assert _relative(out["scores"].reshape(-1, 10), logits) < 1e-5
    assert np.array_equal(out["predictions"], fused_cuda.reference_predict(params, query))


@pytest.mark.slow
def test_kernel_source_gives_the_frozen_predictions_of_draw_0(tmp_path) -> None:
    """The whole frozen procedure (10,000 rows, two epochs, 158 steps) at the archive's G = 2: all 10,000
    predictions equal the frozen ones (about a minute on two cores)."""
    inputs = load_draw(0).learner_inputs()
    raw = inputs["train_images"].reshape(-1, 81)
    labels = inputs["train_labels"].astype(np.int64)
    orders = epoch_orders(len(raw), FROZEN_CONFIG["epochs"], FROZEN_CONFIG["seed"])
    out, barrier = _run(_build(tmp_path, 2, False), tmp_path, raw, labels, orders, _initial(),
                        inputs["test_images"].reshape(-1, 81), 2, FROZEN_CONFIG["epochs"])
    assert barrier == 158 * 2
    frozen = np.load(REPO_ROOT / "evidence" / "rev88-original" / "predictions" / "draw-00.npy")
    assert int((out["predictions"] != frozen).sum()) == 0


@pytest.mark.parametrize(("ctas", "push"), [(2, False), (4, False), (8, False), (4, True), (5, True), (8, True)])
def test_the_cluster_split_update_gives_the_bits_of_the_unsplit_one(tmp_path, ctas, push) -> None:
    """The split update inside the cluster (each block sums and updates a slice, the others gather it; with
    ``push`` the slices' partials and new parameters go by bulk copies and transaction barriers, in padded
    regions, the slices of uneven size at G = 5) does the unsplit update's operations on the same values (at
    G = 8 with 16-row arrays and the gather rotated by block), so on 300 rows of draw 0 (one epoch, the last
    batch short, so that some blocks have no rows) its final parameters, velocities, scores and predictions
    are bit-equal to the unsplit cluster's at the same G; its barrier counter gets two arrivals per block
    and step."""
    raw, labels, query, orders, initial = _short_run()
    outs = {}
    for split in (False, True):
        tmp = tmp_path / f"split{int(split)}"
        tmp.mkdir()
        outs[split] = _run(_build(tmp, ctas, split, cluster=True, push=push and split), tmp, raw, labels, orders,
                           initial, query, ctas, 1)
    assert outs[False][1] == 3 * ctas and outs[True][1] == 6 * ctas
    for name in ("params", "velocity", "scores", "predictions"):
        assert outs[True][0][name].tobytes() == outs[False][0][name].tobytes(), name


def test_the_pushed_exchange_is_refused_where_it_cannot_run(tmp_path) -> None:
    """fused_cuda.cu refuses PUSH without the split cluster update or with blocks of more than 32 rows (G = 3),
    at compile time, as bundle.fused_cuda.push_possible says."""
    assert not fused_cuda.push_possible(43, True, True) and not fused_cuda.push_possible(16, True, False)
    assert fused_cuda.push_possible(32, True, True) and fused_cuda.push_possible(16, True, True)
    for ctas, split in ((3, True), (8, False)):
        with pytest.raises(AssertionError, match="PUSH needs the split cluster update"):
            _build(tmp_path, ctas, split, cluster=True, push=True)


def test_a_relaxed_cluster_arrive_without_its_release_fence_is_refused() -> None:
    """The CPU stand-in of the arrive always releases, so the harness could not see a missing fence: the swap
    refuses a source whose relaxed arrive lost it (as a trial patch of the kernel's ceiling study had it:
    docs/results/fused-learner.md)."""
    text = fused_cuda.KERNEL_SOURCE.read_text()
    assert RELEASE_FENCE in text and ARRIVES[1] in text
    swap_in_stand_ins(text)
    with pytest.raises(AssertionError, match="no release fence"):
        swap_in_stand_ins(text.replace(RELEASE_FENCE, ""))
