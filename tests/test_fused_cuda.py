"""rev88-fused with kernel tool ``cuda`` (bundle/fused_cuda.cu, bundle/fused_cuda.py).

On the CPU: the numpy reference of the kernel's step schedule reproduces the frozen predictions, the
kernel source compiles for sm_80 and sm_90 without register spills where nvcc is on PATH, the host's
choice of kernel tool (``REV88_FUSED_KERNEL``) is parsed, forwarded and checked on resume, and the
fixture refuses the tool on the CPU in one line. On a GPU (marker ``gpu``, run on the device): all 11
draws' predictions equal the frozen ones at the default and the split shapes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

from bundle import fused_cuda
from bundle.jobs import (
    FUSED_EXCHANGE_ENV,
    FUSED_KERNEL_ENV,
    SubprocessEngine,
    fused_exchange,
    fused_kernel_tool,
)
from bundle.learner import FROZEN_CONFIG, build_model, epoch_orders
from bundle.phases.fixture_runner import check_resumed_launch, engine_env
from protocol.data import load_draw
from protocol.errors import BundleError
from tests.conftest import REPO_ROOT

FROZEN = REPO_ROOT / "evidence" / "rev88-original"


def _frozen_predictions(draw: int) -> np.ndarray:
    return np.load(FROZEN / "predictions" / f"draw-{draw:02d}.npy")


def _reference_predictions(draw: int, ctas: int) -> np.ndarray:
    inputs = load_draw(draw).learner_inputs()
    raw = inputs["train_images"].reshape(-1, 81).astype(np.float32)
    labels = inputs["train_labels"].astype(np.int64)
    model = build_model(2, FROZEN_CONFIG["alpha"], FROZEN_CONFIG["seed"])
    initial = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy()
    orders = epoch_orders(len(raw), FROZEN_CONFIG["epochs"], FROZEN_CONFIG["seed"])
    params, velocity = fused_cuda.reference_train(raw, labels, orders, initial, ctas)
    assert params.dtype == velocity.dtype == np.float32 and params.shape == (fused_cuda.STATE,)
    assert np.isfinite(params).all() and not np.array_equal(params, initial)
    return fused_cuda.reference_predict(params, inputs["test_images"].reshape(-1, 81))


@pytest.mark.parametrize(("draw", "ctas"), [(0, 1), (0, 16), (3, 8), (10, 64)])
def test_reference_schedule_gives_the_frozen_predictions(draw, ctas) -> None:
    """The kernel's schedule (row blocks of ceil(128 / G), partials summed in block order) in numpy float32."""
    pred = _reference_predictions(draw, ctas)
    frozen = _frozen_predictions(draw)
    assert pred.shape == frozen.shape and pred.dtype == np.int64
    assert int((pred != frozen).sum()) == 0


def test_reference_partials_sum_to_the_whole_batch_gradient() -> None:
    """Split into blocks or not, a step's gradient is the same up to float32 rounding (the schedule only
    reorders the sum), and a block with no rows contributes exactly zero."""
    rng = np.random.default_rng(5)
    p = (rng.standard_normal(fused_cuda.STATE) * 0.05).astype(np.float32)
    x = rng.random((128, 81), dtype=np.float32)
    y = rng.integers(0, 10, 128)
    whole = fused_cuda._partial(p, x, y, 128, np.float32(0.5))
    parts = sum(fused_cuda._partial(p, x[b * 16:(b + 1) * 16], y[b * 16:(b + 1) * 16], 128, np.float32(0.5))
                for b in range(8))
    assert np.abs(whole).max() > 1e-3
    np.testing.assert_allclose(parts, whole, rtol=1e-4, atol=1e-6)
    assert not fused_cuda._partial(p, x[:0], y[:0], 128, np.float32(0.5)).any()


def test_shared_memory_fits_every_block_count() -> None:
    for ctas in (1, 2, 4, 8, 16, 32, 64, 128):
        rows = -(-128 // ctas)
        assert fused_cuda.train_shared_bytes(rows) <= fused_cuda.SHARED_LIMIT
    # G = 1: parameters 16,144 floats (weight rows of 44); 6 activation arrays and the logits, 44 and 10 feature rows of 132; rows, labels
    assert fused_cuda.train_shared_bytes(128) == 4 * (16144 + (6 * 44 + 10) * 132 + 256) == 210272
    # blocks of up to 16 rows keep 16-row arrays (lane tiles of 4 x 2): a stride of 20
    assert fused_cuda.train_shared_bytes(16) == 4 * (16144 + (6 * 44 + 10) * 20 + 32)
    assert fused_cuda.train_shared_bytes(8) == fused_cuda.train_shared_bytes(16) - 4 * 16
    assert fused_cuda.train_shared_bytes(17) == 4 * (16144 + (6 * 44 + 10) * 36 + 34)
    assert fused_cuda.train_shared_bytes(64) <= 163 * 1024   # an A100 block from G = 2 on
    assert fused_cuda.predict_shared_bytes() == 4 * (16144 + (4 * 44 + 10) * 68 + 64) <= 163 * 1024
    # the cluster update (2 to 8 blocks) also keeps 2 x 7,556 floats (two steps' partials, or a partial and the
    # split update's slice) in every block
    for ctas in range(2, fused_cuda.MAX_CLUSTER + 1):
        rows = -(-128 // ctas)
        assert fused_cuda.train_shared_bytes(rows, True) == fused_cuda.train_shared_bytes(rows) + 4 * 2 * 7556
        assert fused_cuda.train_shared_bytes(rows, True) <= fused_cuda.SHARED_LIMIT


@pytest.mark.parametrize(("ctas", "capability", "want"), [
    (1, (9, 0), False), (2, (9, 0), True), (8, (9, 0), True), (9, (9, 0), False), (4, (8, 0), False),
    (4, (10, 0), True)])
def test_the_cluster_update_where_clusters_exist(ctas, capability, want) -> None:
    assert fused_cuda.cluster_possible(ctas, capability) is want


@pytest.mark.parametrize(("rows", "limit", "want"), [
    (128, 227 * 1024, None),                 # H100/H200, G = 1
    (64, 163 * 1024, None),                  # A100, G = 2
    (128, 163 * 1024, "use more ctas"),      # A100, G = 1
    (1, 99 * 1024, "use kernel tool triton"),  # sm_86/sm_89: no G fits
    (16, 100 * 1024, "use kernel tool triton")])
def test_shared_memory_problem_says_what_helps(rows, limit, want) -> None:
    problem = fused_cuda.shared_memory_problem(rows, limit)
    assert problem is None if want is None else (want in problem and "\n" not in problem and str(limit) in problem)


@pytest.mark.parametrize(("kwargs", "word"), [({"split": "yes"}, "split"), ({"split": 1}, "split"),
                                              ({"warps": 4}, "warps"), ({"warps": 17}, "warps"),
                                              ({"warps": True}, "warps"), ({"cluster": 1}, "cluster"),
                                              ({"exchange": "fast"}, "exchange"), ({"exchange": True}, "exchange")])
def test_bad_split_or_warps_is_one_line_before_any_gpu_work(kwargs, word) -> None:
    inputs = load_draw(0).learner_inputs()
    with pytest.raises(BundleError) as info:
        fused_cuda.CudaFusedTask(**inputs, device="cuda", ctas=2, **kwargs)
    assert str(info.value).startswith(word) and "\n" not in str(info.value)


def test_kernel_source_sha256_is_the_file() -> None:
    import hashlib

    assert fused_cuda.kernel_source_sha256() == hashlib.sha256(fused_cuda.KERNEL_SOURCE.read_bytes()).hexdigest()


def test_the_task_refuses_the_cpu_in_one_line() -> None:
    inputs = load_draw(0).learner_inputs()
    with pytest.raises(BundleError) as info:
        fused_cuda.CudaFusedTask(**inputs, device="cpu")
    assert "cuda" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc on PATH (the CI machine has one)")
@pytest.mark.parametrize(("arch", "ctas", "split", "warps", "push"), [
    ("sm_90", 1, 0, fused_cuda.WARPS, 0), ("sm_90", 2, 0, fused_cuda.WARPS, 0), ("sm_90", 8, 0, fused_cuda.WARPS, 0),
    ("sm_90", 16, 1, fused_cuda.WARPS, 0), ("sm_90", 2, 0, fused_cuda.MIN_WARPS, 0), ("sm_90", 12, 0, 12, 0),
    ("sm_90", 2, 0, fused_cuda.MAX_WARPS, 0), ("sm_90", 4, 0, fused_cuda.MAX_WARPS, 0),
    ("sm_90", 4, 1, fused_cuda.WARPS, 0), ("sm_90", 8, 1, fused_cuda.MAX_WARPS, 0), ("sm_90", 8, 1, fused_cuda.WARPS, 0),
    ("sm_90", 3, 1, fused_cuda.MIN_WARPS, 0), ("sm_80", 2, 0, fused_cuda.WARPS, 0), ("sm_80", 64, 1, fused_cuda.WARPS, 0),
    ("sm_90", 8, 1, fused_cuda.WARPS, 1), ("sm_90", 4, 1, fused_cuda.WARPS, 1), ("sm_90", 7, 1, fused_cuda.MIN_WARPS, 1),
    ("sm_90", 8, 1, fused_cuda.MAX_WARPS, 1)])
def test_kernels_compile_without_spills(tmp_path, arch, ctas, split, warps, push) -> None:
    """nvcc's ptxas report for the shapes the fixture launches, with the cluster update where the host would
    choose it (sm_90, 2 to 8 blocks; ``push``: the pushed exchange, whose PTX only the GPU's compiler sees, since
    the CPU harness swaps it): both kernels, no stack frame, no spills (on sm_80, whose blocks get at most 163 KB
    of shared memory, from G = 2 on: G = 1 needs 210,272 B)."""
    rows = -(-128 // ctas)
    cluster = fused_cuda.cluster_possible(ctas, (9, 0) if arch == "sm_90" else (8, 0))
    proc = subprocess.run(["nvcc", "-std=c++14", f"-arch={arch}", "-cubin", "-o", str(tmp_path / "k.cubin"),
                           f"-DNW={warps}", f"-DG={ctas}", f"-DROWS={rows}", f"-DSPLIT={split}",
                           f"-DCLUSTER={int(cluster)}", f"-DPUSH={push}",
                           f"-DQB={fused_cuda.PREDICT_ROWS}", "-Xptxas", "-v", str(fused_cuda.KERNEL_SOURCE)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", proc.stderr)
    assert len(spills) == 2 and all(a == b == "0" for a, b in spills), proc.stderr


#: the sources the kept fused archives ran (made before archives carried their source; the verifier's legacy
#: layouts, verify.checks.run_energy.LEGACY_LAYOUTS), and the commits that hold them: evidence/h200-fused-cuda-
#: 20261204e (0ac8be88…, G = 2) and evidence/h200-fused-cuda-20261205 (9da9db69…, G = 8)
ARCHIVED_SOURCES = (("0ac8be88a18f761d3bbdd8e97b10805182246bf99ee473ad15d6eb1cec60f1bc",
                     "2b1c9f44b65ced083f8033ed7d3d6129754544b1"),
                    ("9da9db69e68ac4f874179804bb4c492737a753d506dbd1a65cd0a8c9deda1f4a",
                     "223c55e14bb58bfb91c27cc8af21662754ab4ab8"))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc on PATH (the CI machine has one)")
@pytest.mark.parametrize("archived", ARCHIVED_SOURCES, ids=["0ac8be88", "9da9db69"])
@pytest.mark.parametrize(("arch", "ctas", "split", "cluster"), [("sm_90", 2, 0, 1), ("sm_90", 3, 1, 1),
                                                                ("sm_90", 4, 1, 1), ("sm_90", 8, 1, 1),
                                                                ("sm_90", 8, 0, 1), ("sm_90", 16, 1, 0),
                                                                ("sm_80", 2, 0, 0)])
def test_the_current_source_compiles_to_the_archived_sources_code(tmp_path, archived, arch, ctas, split,
                                                                  cluster) -> None:
    """Without ``-DPUSH=1`` (exchange ``"push"``, ``fused_cuda.push_possible``: the default split cluster
    update at G = 4 and 8 included),
    ``bundle/fused_cuda.cu`` since 0ac8be88… changed nothing nvcc compiles: byte-identical cubins, so
    the kept fused archives measured the code the current source builds at their shapes, and the layout the
    current source declares is theirs."""
    sha, commit = archived
    proc = subprocess.run(["git", "-C", str(REPO_ROOT), "show", f"{commit}:bundle/fused_cuda.cu"], capture_output=True)
    assert proc.returncode == 0, f"git show {commit}: {proc.stderr.decode()[-300:]} (the tests need the git history)"
    assert hashlib.sha256(proc.stdout).hexdigest() == sha
    (tmp_path / "archived.cu").write_bytes(proc.stdout)
    cubins = []
    for name, source in (("archived", tmp_path / "archived.cu"), ("current", fused_cuda.KERNEL_SOURCE)):
        out = tmp_path / f"{name}.cubin"
        rows = -(-128 // ctas)
        run = subprocess.run(["nvcc", "-std=c++14", f"-arch={arch}", "-cubin", "-o", str(out), f"-DNW={fused_cuda.WARPS}",
                              f"-DG={ctas}", f"-DROWS={rows}", f"-DSPLIT={split}", f"-DCLUSTER={cluster}",
                              f"-DQB={fused_cuda.PREDICT_ROWS}", "-x", "cu", str(source)],
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-2000:]
        cubins.append(out.read_bytes())
    assert cubins[0] == cubins[1]


@pytest.mark.parametrize(("raw", "want"), [(None, "triton"), ("", "triton"), (" cuda ", "cuda"), ("triton", "triton")])
def test_the_kernel_tool_variable_or_the_default(raw, want) -> None:
    assert fused_kernel_tool({} if raw is None else {FUSED_KERNEL_ENV: raw}) == want


@pytest.mark.parametrize("raw", ["CUDA", "cupy", "triton,cuda", "1"])
def test_a_bad_kernel_tool_is_one_line(raw) -> None:
    with pytest.raises(BundleError) as info:
        fused_kernel_tool({FUSED_KERNEL_ENV: raw})
    assert FUSED_KERNEL_ENV in str(info.value) and repr(raw) in str(info.value) and "\n" not in str(info.value)


def test_the_phases_forward_the_kernel_tool(monkeypatch) -> None:
    monkeypatch.delenv(FUSED_KERNEL_ENV, raising=False)
    assert FUSED_KERNEL_ENV not in engine_env(SubprocessEngine())
    monkeypatch.setenv(FUSED_KERNEL_ENV, "cuda")
    assert engine_env(SubprocessEngine())[FUSED_KERNEL_ENV] == "cuda"
    monkeypatch.setenv(FUSED_KERNEL_ENV, "nvrtc")
    with pytest.raises(BundleError, match=FUSED_KERNEL_ENV):
        engine_env(SubprocessEngine())


@pytest.mark.parametrize(("raw", "want"), [(None, "pull"), (" ", "pull"), ("push", "push"), (" pull ", "pull")])
def test_the_exchange_variable_or_the_default(raw, want) -> None:
    assert fused_exchange({} if raw is None else {FUSED_EXCHANGE_ENV: raw}) == want


@pytest.mark.parametrize("raw", ["PUSH", "bulk", "push,pull"])
def test_a_bad_exchange_is_one_line_and_the_phases_forward_a_good_one(monkeypatch, raw) -> None:
    with pytest.raises(BundleError) as info:
        fused_exchange({FUSED_EXCHANGE_ENV: raw})
    assert FUSED_EXCHANGE_ENV in str(info.value) and repr(raw) in str(info.value) and "\n" not in str(info.value)
    monkeypatch.setenv(FUSED_EXCHANGE_ENV, raw)
    with pytest.raises(BundleError, match=FUSED_EXCHANGE_ENV):
        engine_env(SubprocessEngine())
    monkeypatch.setenv(FUSED_EXCHANGE_ENV, "push")
    monkeypatch.setenv(FUSED_KERNEL_ENV, "cuda")
    monkeypatch.setenv("REV88_FUSED_CTAS", "8")
    assert engine_env(SubprocessEngine())[FUSED_EXCHANGE_ENV] == "push"


def test_the_hosts_push_limits_are_the_kernels() -> None:
    """bundle.jobs checks push without torch; its copies of the batch and the limits must be the kernel's."""
    from bundle import jobs  # noqa: PLC0415

    assert jobs.FROZEN_BATCH == FROZEN_CONFIG["batch_size"] and jobs.PUSH_MAX_CLUSTER == fused_cuda.MAX_CLUSTER
    assert fused_cuda.push_possible(jobs.PUSH_MAX_ROWS, True, True)
    assert not fused_cuda.push_possible(jobs.PUSH_MAX_ROWS + 1, True, True)


#: (REV88_FUSED_CTAS, _KERNEL, _PRECISION, _EXCHANGE; None = unset), and the variable the refusal names (None: taken)
_COMBINATIONS = [("8", "cuda", None, "push", None), ("4", "cuda", None, "push", None),
                 ("3", "cuda", None, "push", "REV88_FUSED_CTAS"), ("16", "cuda", None, "push", "REV88_FUSED_CTAS"), (None, "cuda", None, "push", "REV88_FUSED_CTAS"),
                 ("8", None, None, "push", FUSED_KERNEL_ENV), ("8", "triton", None, "push", FUSED_KERNEL_ENV),
                 ("8", "cuda", "tf32x3", None, "REV88_FUSED_PRECISION"), ("8", "triton", "tf32x3", None, None),
                 ("2", "cuda", None, "pull", None), (None, None, None, None, None)]


@pytest.mark.parametrize(("ctas", "tool", "precision", "exchange", "named"), _COMBINATIONS)
def test_the_phases_refuse_variables_no_kernel_runs_together(monkeypatch, ctas, tool, precision, exchange,
                                                              named) -> None:
    """push with Triton or at fewer than 4 training programs (over 32 rows per block), and the CUDA tool at
    tf32x3, are one line from engine_env, before a phase starts its first job; what runs is forwarded."""
    for name, value in (("REV88_FUSED_CTAS", ctas), (FUSED_KERNEL_ENV, tool), ("REV88_FUSED_PRECISION", precision),
                        (FUSED_EXCHANGE_ENV, exchange)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    if named is None:
        assert engine_env(SubprocessEngine()).get(FUSED_EXCHANGE_ENV) == exchange
        return
    with pytest.raises(BundleError) as info:
        engine_env(SubprocessEngine())
    assert named in str(info.value) and "\n" not in str(info.value)


#: (record key, its variable, the rest of the kept block, the other variables the host sets, recorded, asked, refused)
_RESUMES = [("kernel_tool", FUSED_KERNEL_ENV, {"train_programs": 1}, {}, *case)
            for case in ((None, None, False), (None, "cuda", True), ("cuda", None, True), ("cuda", "cuda", False),
                         ("triton", "triton", False))]
_RESUMES += [("exchange", FUSED_EXCHANGE_ENV, {"train_programs": 8, "kernel_tool": "cuda"},
              {"REV88_FUSED_CTAS": "8", FUSED_KERNEL_ENV: "cuda"}, *case)
             for case in ((None, None, False), (None, "push", True), ("push", None, True), ("push", "push", False),
                          ("pull", None, False))]


@pytest.mark.parametrize(("key", "variable", "block", "host", "recorded", "env", "refused"), _RESUMES)
def test_a_resume_refuses_kept_records_of_another_tool_or_exchange(monkeypatch, key, variable, block, host, recorded,
                                                                  env, refused) -> None:
    block = {"name": "rev88-fused", **block, **({} if recorded is None else {key: recorded})}
    for name in ("REV88_FUSED_CTAS", "REV88_FUSED_PRECISION", FUSED_KERNEL_ENV, FUSED_EXCHANGE_ENV):
        monkeypatch.delenv(name, raising=False)
    for name, value in {**host, **({} if env is None else {variable: env})}.items():
        monkeypatch.setenv(name, value)
    if refused:
        with pytest.raises(BundleError, match=f"resume with {variable}="):
            check_resumed_launch(block, "kept record")
    else:
        check_resumed_launch(block, "kept record")


def test_the_fixture_refuses_the_pushed_exchange_with_triton(tmp_path) -> None:
    """REV88_FUSED_EXCHANGE=push is the CUDA tool's: with the Triton tool (here its interpreter on the CPU) the
    fixture stops with one line before any work, and no draw record."""
    out = tmp_path / "run"
    env = {**os.environ, FUSED_EXCHANGE_ENV: "push", "PYTHONPATH": str(REPO_ROOT)}
    for name in ("REV88_FUSED_PRECISION", FUSED_KERNEL_ENV, "REV88_FUSED_CTAS"):
        env.pop(name, None)
    proc = subprocess.run([sys.executable, "-m", "bundle.cli", "qualify", "--device", "cpu", "--learner", "rev88-fused",
                           "--jobs", "1", "--draws", "0", "--out", str(out)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert FUSED_EXCHANGE_ENV in proc.stderr.strip().splitlines()[-1], proc.stderr[-2000:]
    assert not list(out.rglob("draw-*.json.gz"))


def test_the_fixture_refuses_the_cuda_tool_on_the_cpu(tmp_path) -> None:
    """``rev88 qualify --device cpu --learner rev88-fused`` with REV88_FUSED_KERNEL=cuda: one line, non-zero
    exit, no draw record."""
    out = tmp_path / "run"
    env = {**os.environ, FUSED_KERNEL_ENV: "cuda", "PYTHONPATH": str(REPO_ROOT)}
    env.pop("REV88_FUSED_PRECISION", None)
    proc = subprocess.run([sys.executable, "-m", "bundle.cli", "qualify", "--device", "cpu", "--learner", "rev88-fused",
                           "--jobs", "1", "--draws", "0", "--out", str(out)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "cuda" in proc.stderr.strip().splitlines()[-1], proc.stderr[-2000:]
    assert not list(out.rglob("draw-*.json.gz"))


@pytest.mark.gpu
@pytest.mark.parametrize(("ctas", "split", "cluster", "exchange"), [
    (16, True, None, None), (4, False, None, None), (4, True, None, None), (2, False, False, None),
    (8, True, True, "push")])
def test_gpu_all_draws_equal_frozen_predictions(ctas, split, cluster, exchange) -> None:
    """On a GPU with CuPy: every draw's predictions equal the frozen ones, the barrier counter adds up and a
    second invocation repeats the state bits (with the pushed exchange too: its transaction barriers start
    every invocation afresh)."""
    pytest.importorskip("cupy")
    for draw in range(11):
        task = fused_cuda.CudaFusedTask(**load_draw(draw).learner_inputs(), device="cuda", ctas=ctas, split=split,
                                        cluster=cluster, exchange=exchange)
        task.run()
        pred, meta = task.outputs()
        assert int((pred != _frozen_predictions(draw)).sum()) == 0, draw
        frozen = json.loads((FROZEN / "results" / f"draw-{draw:02d}.json").read_text())["metadata"]
        assert meta["predictions_sha256"] == frozen["predictions_sha256"]
        assert meta["initial_parameter_sha256"] == frozen["initial_parameter_sha256"]
        assert meta["learner"]["kernel_tool"] == "cuda" and meta["learner"]["train_programs"] == ctas
        task.run()
        assert task.state_hashes()["state_vector_sha256"] == meta["state_vector_sha256"]


@pytest.mark.gpu
@pytest.mark.parametrize(("ctas", "exchanges"), [(3, ("pull",)), (8, ("pull", "push")), (4, ("push",)),
                                               (5, ("push",))])
def test_gpu_cluster_split_update_gives_the_unsplit_bits(ctas, exchanges) -> None:
    """On an sm_90 GPU with CuPy: with the blocks one cluster, the split update (two cluster barriers per step,
    or with the pushed exchange bulk copies and transaction barriers) ends draw 0 in the same state vector as
    the unsplit one, and its barrier counter adds up (two arrivals per block and step)."""
    pytest.importorskip("cupy")
    hashes = {}
    for split, exchange in ((False, "pull"), *((True, e) for e in exchanges)):
        task = fused_cuda.CudaFusedTask(**load_draw(0).learner_inputs(), device="cuda", ctas=ctas, split=split,
                                        cluster=True, exchange=exchange)
        task.run()
        _, meta = task.outputs()
        assert meta["learner"]["split_update"] is split and meta["learner"]["cluster_update"] is True
        assert meta["learner"]["exchange"] == exchange
        hashes[(split, exchange)] = meta["state_vector_sha256"]
    assert len(set(hashes.values())) == 1, hashes


@pytest.mark.gpu
def test_gpu_the_pushed_exchange_is_one_line_where_it_cannot_run() -> None:
    """exchange push at G = 2 (no split) or G = 3 (43 rows per block): one line before any kernel is built."""
    pytest.importorskip("cupy")
    for ctas in (2, 3):
        with pytest.raises(BundleError) as info:
            fused_cuda.CudaFusedTask(**load_draw(0).learner_inputs(), device="cuda", ctas=ctas, split=True,
                                     cluster=True, exchange="push")
        assert "exchange 'push' (REV88_FUSED_EXCHANGE=push) needs" in str(info.value) and "\n" not in str(info.value)


def test_the_pushed_exchange_allocates_for_the_tasks_own_block_count() -> None:
    """The pushed exchange's buffers depend on G, not only on the rows per block: batch 112 at G = 7 gives 16 rows
    as batch 128 at G = 8 does, and needs G = 7's slots (the review found the host assuming batch 128)."""
    assert fused_cuda.pushed_exchange_floats(8) == 2 * 7568 + 8 * (16 * 53 + 4 * 26) + 24
    seven = fused_cuda.train_shared_bytes(16, True, True, 7)
    assert seven == 4 * (16144 + (6 * 44 + 10) * 20 + fused_cuda.pushed_exchange_floats(7) + 32)
    assert seven > fused_cuda.train_shared_bytes(16, True, True) == fused_cuda.train_shared_bytes(16, True, True, 8)
