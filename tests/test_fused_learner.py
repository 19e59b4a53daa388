"""Tests for bundle.fused_learner (``rev88-fused``): triton's interpreter on CPU, bad inputs, the GPU run.

The interpreter tests run in a fresh process with ``TRITON_INTERPRET=1``: triton reads it
when it decorates the kernels, so it must be set before ``bundle.fused_kernels`` is imported.
Each runs the single-CTA kernel (``ctas=1``) and the multi-CTA one. The interpreter runs a
grid's programs one after another, so its cost grows with the programs: draw 0 runs with
``ctas=3`` (~40 s on 2 cores; 43 live rows in 64-row tiles, a third program with 42 rows, and
in the last batch of 16 two programs without rows), the synthetic task with ``ctas=8``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

from bundle import fused_learner
from bundle.learner import FROZEN_CONFIG
from protocol.data import load_draw
from protocol.errors import BundleError
from tests.conftest import ORIGINAL_ARCHIVE, REPO_ROOT


def _triton_importable() -> bool:
    if importlib.util.find_spec("triton") is None:
        return False
    try:
        import triton  # noqa: F401, PLC0415
    except Exception:
        return False
    return True


HAS_TRITON = _triton_importable()
needs_triton = pytest.mark.skipif(not HAS_TRITON, reason="triton is not importable (install the test extra)")


def _frozen(draw: int) -> dict:
    return json.loads((ORIGINAL_ARCHIVE / "results" / f"draw-{draw:02d}.json").read_text())["metadata"]


DRAW_CHILD = """
import json, sys, time
from protocol.data import load_draw
from bundle.fused_learner import FusedTask
task = FusedTask(**load_draw(int(sys.argv[1])).learner_inputs(), device="cpu", ctas=int(sys.argv[2]))
started = time.perf_counter()
task.run()
seconds = time.perf_counter() - started
predictions, meta = task.outputs()
print(json.dumps({"meta": meta, "run_seconds": seconds, "keys": list(meta)}))
"""

SYNTHETIC_CHILD = """
import json, sys
import numpy as np, torch
import torch.nn.functional as F
from protocol.errors import BundleError
from bundle.fused_learner import GRID_TIMED_OUT, FusedTask
from bundle.learner import FROZEN_CONFIG, build_model, epoch_orders
rng = np.random.Generator(np.random.PCG64(913413))
train = rng.random((19, 1, 9, 9), dtype=np.float32)
labels = rng.integers(0, 10, 19).astype(np.int64)
query = rng.random((7, 1, 9, 9), dtype=np.float32)
cfg = {**FROZEN_CONFIG, "batch_size": 8, "seed": 781}
task = FusedTask(train, labels, query, cfg, device="cpu", ctas=int(sys.argv[1]))
try:
    task.outputs()
    early = None
except BundleError as exc:
    early = str(exc)
task.run()
first = task.state_hashes()
task.run()
second = task.state_hashes()
model = build_model(2, 0.5, 781)
sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=False)
def lift(a):
    x = torch.from_numpy(a.reshape(len(a), 81)) * 4.0 - 0.5
    return torch.cat([x, torch.zeros(len(a), 1)], dim=1)
x, q, y = lift(train), lift(query), torch.from_numpy(labels)
for order in epoch_orders(19, 2, 781):
    for start in range(0, 19, 8):
        index = torch.from_numpy(order[start:start + 8])
        sgd.zero_grad()
        F.cross_entropy(model.head(model.core_plain(x[index])), y[index]).backward()
        sgd.step()
with torch.no_grad():
    scores = model(q)
ref = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
vel = torch.cat([sgd.state[p]["momentum_buffer"].reshape(-1) for p in model.parameters()])
grid = {}
if task.ctas > 1:
    # the barrier code path (the GPU's single launch) in the interpreter: one program never waits;
    # it must give the bits of the per-step launches and count one arrival per step
    task._train_grid(1, barrier=False)
    segmented = task.state_hashes()["state_vector_sha256"]
    task._train_grid(1, barrier=True)
    grid["barrier_equals_segmented"] = task.state_hashes()["state_vector_sha256"] == segmented
    grid["barrier_count"] = int(task.barrier_count[0])
    grid["steps"] = task.steps
    grid["one_program_close"] = bool(torch.allclose(task.params, ref, atol=2e-5, rtol=3e-3))
    task.barrier_count.fill_(GRID_TIMED_OUT)
    try:
        task.outputs()
        grid["timeout_error"] = None
    except BundleError as exc:
        grid["timeout_error"] = str(exc)
print(json.dumps({
    "grid": grid,
    "early_error": early,
    "repeatable": first == second,
    "param_max_abs_error": float((task.params - ref).abs().max()),
    "params_close": bool(torch.allclose(task.params, ref, atol=2e-5, rtol=3e-3)),
    "velocity_close": bool(torch.allclose(task.velocity, vel, atol=2e-5, rtol=3e-3)),
    "params_moved": float((task.params - task.initial).abs().max()),
    "scores_close": bool(torch.allclose(task.scores, scores, atol=2e-5, rtol=3e-3)),
    "predictions_equal": bool(torch.equal(task.predictions, torch.argmax(scores, dim=1))),
}))
"""


def _interpreted(code: str, *args: str, timeout: int = 600) -> dict:
    """Run *code* in a fresh interpreter-mode process; its last stdout line is JSON. Skip on a known-bad pair."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)
    if proc.returncode != 0 and "drops every store" in proc.stderr:
        pytest.skip(proc.stderr.strip().splitlines()[-1])
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@needs_triton
@pytest.mark.slow
@pytest.mark.parametrize("ctas", [1, 3])
def test_interpreter_draw0_equals_frozen_predictions(ctas):
    """Draw 0 on CPU through triton's interpreter: the frozen prediction, init and order hashes (~45 s, ~40 s)."""
    out = _interpreted(DRAW_CHILD, "0", str(ctas))
    meta, frozen = out["meta"], _frozen(0)
    assert meta["predictions_sha256"] == frozen["predictions_sha256"]
    assert meta["initial_parameter_sha256"] == frozen["initial_parameter_sha256"]
    assert meta["epoch_permutation_sha256"] == frozen["epoch_permutation_sha256"]
    assert meta["input_hashes"] == load_draw(0).input_hashes()  # the frozen image bits are not rebuildable
    assert out["keys"] == [*frozen, "learner"]  # the frozen metadata's keys and order, then the learner block
    kernel_sha = hashlib.sha256((REPO_ROOT / "bundle" / "fused_kernels.py").read_bytes()).hexdigest()
    assert meta["learner"]["name"] == "rev88-fused" and meta["learner"]["interpreter"] is True
    assert meta["learner"]["kernel_source_sha256"] == kernel_sha
    assert meta["learner"]["train_programs"] == ctas
    assert meta["run_count"] == 1 and meta["parameter_count"] == 7554


@needs_triton
@pytest.mark.parametrize("ctas", [1, 8])
def test_interpreter_matches_eager_autograd_and_resets(ctas):
    """Synthetic task (19 rows, batches 8, 8, 3; masked rows and padding) vs eager autograd + torch.optim.SGD.

    With 8 programs each has one row of a full batch, and five have none in the batch of 3.
    """
    out = _interpreted(SYNTHETIC_CHILD, str(ctas))
    assert out["early_error"] is not None and "before run()" in out["early_error"]
    assert out["params_moved"] > 1e-3  # training changed the weights at all
    assert out["params_close"] and out["velocity_close"] and out["scores_close"], out
    assert out["predictions_equal"]
    assert out["repeatable"]  # each run() starts from the initial copy
    if ctas > 1:
        grid = out["grid"]
        assert grid["barrier_equals_segmented"] and grid["one_program_close"], grid
        assert grid["barrier_count"] == grid["steps"] == 6
        assert "gave up" in grid["timeout_error"] and "\n" not in grid["timeout_error"]


TRIM_CHILD = """
import json, sys
import numpy as np
from bundle.fused_learner import FusedTask
rng = np.random.Generator(np.random.PCG64(5150))
train = rng.random((37, 1, 9, 9), dtype=np.float32)
labels = rng.integers(0, 10, 37).astype(np.int64)
query = rng.random((9, 1, 9, 9), dtype=np.float32)
from bundle.learner import FROZEN_CONFIG
task = FusedTask(train, labels, query, {**FROZEN_CONFIG, "batch_size": 16, "seed": 5}, device="cpu", ctas=int(sys.argv[1]),
                 feature_slice=16)
out = {"extent": task.feature_extent, "slices": None}
task.run()
_, meta = task.outputs()
out["slices"] = meta["learner"]["product_slices"]
trimmed = (task.state_hashes(), task.predictions.clone(), task.scores.clone())
task.feature_extent = 64   # the whole padded tile: one more slice of 16 per product over features
task.run()
task.outputs()
whole = (task.state_hashes(), task.predictions, task.scores)
out["state_equal"] = trimmed[0] == whole[0]
out["scores_bits_equal"] = bool((trimmed[2].view(-1).numpy().view(np.uint32) == whole[2].view(-1).numpy().view(np.uint32)).all())
out["predictions_equal"] = bool((trimmed[1] == whole[1]).all())
print(json.dumps(out))
"""


@needs_triton
@pytest.mark.parametrize("ctas", [1, 4])
def test_feature_extent_trim_leaves_every_bit(ctas):
    """Products over features summed over 48 columns (slices of 16) give the bits of the whole 64-column tile.

    The columns past 41 are zero padding, so the skipped slice adds exact zeros; final state, scores and
    predictions must be bit-equal (interpreter, a synthetic task of 37 rows in batches of 16).
    """
    out = _interpreted(TRIM_CHILD, str(ctas))
    assert out["extent"] == 48
    assert out["slices"] == {"features": 16, "rows": 16, "feature_extent": 48}
    assert out["state_equal"] and out["scores_bits_equal"] and out["predictions_equal"], out


def test_bad_inputs_are_one_line_bundle_errors():
    inputs = load_draw(0).learner_inputs()
    cases = [
        ({"config": {**FROZEN_CONFIG, "depth": 1}}, "depth 2"),
        ({"config": {**FROZEN_CONFIG, "batch_size": 512}}, "batch_size <= 256"),
        ({"config": {"width": 3}}, "unknown learner config"),
        ({"device": "mps"}, "unsupported device"),
        ({"num_warps": 3}, "num_warps"),
        *[({"ctas": bad}, "ctas must be a positive int") for bad in (0, -2, 2.0, True, "8", None)],
        *[({"feature_slice": bad}, "feature_slice must be one of") for bad in (8, 48, 128, True, "16", 16.0,
                                                                           np.float32(32), np.array([16, 32]))],
        ({"row_slice": 24}, "row_slice must be one of"),
        *[({"product_precision": bad}, "product_precision must be one of") for bad in ("tf32", "IEEE", "", 1, True)],
    ]
    for kwargs, message in cases:
        with pytest.raises(BundleError, match=message) as info:
            fused_learner.FusedTask(**inputs, **kwargs)
        assert "\n" not in str(info.value)
    with pytest.raises(BundleError, match="float32"):
        fused_learner.FusedTask(**{**inputs, "test_images": inputs["test_images"].astype(np.float64)})
    with pytest.raises(BundleError, match="0..9"):
        fused_learner.FusedTask(**{**inputs, "train_labels": inputs["train_labels"] + 1})


def test_grid_state_map_is_the_tile_layout():
    """The compact-partial → padded-tile map: state-vector entries onto distinct live tile slots (those of the
    flat ↔ tile copy), pads onto distinct padding slots of the first weight tile; a bad size is refused."""
    shape = fused_learner.grid_shape(128, 8, interpreted=False)
    index = fused_learner.grid_state_map(shape["cstate"])
    assert index.dtype == np.int32 and len(index) == shape["cstate"] and len(set(index.tolist())) == len(index)
    live, pad = index[:7554], index[7554:]
    assert (live[:1681] == [r * 64 + c for r in range(41) for c in range(41)]).all()
    assert (live[4 * 1681:4 * 1681 + 82] == [16384 + f if f < 41 else 16384 + 64 + f - 41 for f in range(82)]).all()
    assert (live[-10:] == 16384 + 16 * 128 + np.arange(10)).all()
    assert (pad // 64 >= 41).all() and (pad < 4096).all()
    for bad in (7553, 7554 + 23 * 64 + 1):
        with pytest.raises(BundleError, match="cstate"):
            fused_learner.grid_state_map(bad)


def test_more_ctas_than_sms_is_a_bundle_error(monkeypatch):
    """On a GPU, ctas above the SM count is refused before anything is placed on the device."""
    import torch  # noqa: PLC0415

    class Props:
        multi_processor_count = 132

    monkeypatch.setattr(fused_learner, "interpreter_active", lambda: False)
    monkeypatch.setattr(fused_learner, "_kernels", lambda: None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda _: Props())
    with pytest.raises(BundleError, match="ctas=133 exceeds the 132 SMs") as info:
        fused_learner.FusedTask(**load_draw(0).learner_inputs(), device="cuda", ctas=133)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("ctas", [2, 4, 16])
def test_tf32x3_at_an_unmeasured_ctas_is_a_bundle_error(monkeypatch, ctas):
    """On a GPU, tensor-core products run only at the program counts measured (ctas=2 faulted on an H200)."""
    import torch  # noqa: PLC0415

    class Props:
        multi_processor_count = 132

    monkeypatch.setattr(fused_learner, "interpreter_active", lambda: False)
    monkeypatch.setattr(fused_learner, "_kernels", lambda: None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda _: Props())
    with pytest.raises(BundleError, match=re.escape(f"tf32x3 was measured at ctas {fused_learner.TF32X3_CTAS} only")) as info:
        fused_learner.FusedTask(**load_draw(0).learner_inputs(), device="cuda", ctas=ctas, product_precision="tf32x3")
    assert "\n" not in str(info.value) and f"ctas={ctas}" in str(info.value)


PRECISION_CHILD = """
import json, sys
import numpy as np
from bundle.fused_learner import FusedTask
from bundle.learner import FROZEN_CONFIG
rng = np.random.Generator(np.random.PCG64(77))
train = rng.random((29, 1, 9, 9), dtype=np.float32)
labels = rng.integers(0, 10, 29).astype(np.int64)
query = rng.random((7, 1, 9, 9), dtype=np.float32)
out = {}
for precision in ("ieee", "tf32x3"):
    task = FusedTask(train, labels, query, {**FROZEN_CONFIG, "batch_size": 16, "seed": 3}, device="cpu",
                     ctas=int(sys.argv[1]), product_precision=precision)
    task.run()
    predictions, meta = task.outputs()
    out[precision] = {"named": meta["learner"]["product_precision"], "state": task.state_hashes(),
                      "predictions": predictions.tolist()}
print(json.dumps(out))
"""


@needs_triton
@pytest.mark.parametrize("ctas", [1, 4])
def test_the_product_precision_reaches_every_kernel(ctas):
    """Interpreter, a synthetic task: both precisions compile through every kernel (a product left
    without the constexpr fails there) and records name the one that ran. Triton's interpreter computes
    every input_precision as a numpy float32 matmul, so there the two give the same bits; what tf32x3
    does to predictions is measured on the GPU (test_gpu_all_draws_equal_frozen_predictions)."""
    out = _interpreted(PRECISION_CHILD, str(ctas))
    assert out["ieee"]["named"] == "ieee" and out["tf32x3"]["named"] == "tf32x3"
    assert out["ieee"]["state"] == out["tf32x3"]["state"] and out["ieee"]["predictions"] == out["tf32x3"]["predictions"]


@needs_triton
def test_device_needs_the_matching_interpreter_mode():
    inputs = load_draw(0).learner_inputs()
    if fused_learner.interpreter_active():
        with pytest.raises(BundleError, match="unset TRITON_INTERPRET"):
            fused_learner.FusedTask(**inputs, device="cuda")
    else:
        with pytest.raises(BundleError, match="TRITON_INTERPRET=1"):
            fused_learner.FusedTask(**inputs, device="cpu")


@pytest.mark.gpu
@needs_triton
@pytest.mark.parametrize(("ctas", "precision"), [(1, "ieee"), (fused_learner.GRID_TRAIN_CTAS, "ieee"),
                                                 *[(g, "tf32x3") for g in fused_learner.TF32X3_CTAS]])
def test_gpu_all_draws_equal_frozen_predictions(record_property, ctas, precision):
    """All 11 draws compiled on CUDA (single-CTA and the default multi-CTA kernel, float32 multiply-adds and
    tensor-core tf32x3 products): predictions_sha256 equal to the frozen ones; ms/task recorded."""
    import torch  # noqa: PLC0415

    if fused_learner.interpreter_active():
        pytest.skip("TRITON_INTERPRET=1 in this process: the GPU test needs the compiled kernels")
    mismatched, timings = [], []
    for draw in range(11):
        task = fused_learner.FusedTask(**load_draw(draw).learner_inputs(), device="cuda", ctas=ctas,
                                       product_precision=precision)
        task.run()  # compiles on the first draw
        torch.cuda.synchronize()
        started = time.perf_counter()
        for _ in range(5):
            task.run()
        torch.cuda.synchronize()
        timings.append((time.perf_counter() - started) / 5 * 1e3)
        _, meta = task.outputs()  # with ctas > 1 also checks the barrier counter
        assert meta["learner"]["train_programs"] == ctas and meta["learner"]["product_precision"] == precision
        if meta["predictions_sha256"] != _frozen(draw)["predictions_sha256"]:
            mismatched.append(draw)
    record_property(f"fused_ctas{ctas}_{precision}_ms_per_task_median", float(np.median(timings)))
    print(f"fused ctas={ctas} {precision} ms/task (median over draws of 5-run means): {np.median(timings):.3f}")
    assert mismatched == []
