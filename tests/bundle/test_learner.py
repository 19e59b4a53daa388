"""Tests for bundle.learner: config, inputs, init, reversible backward, CPU task, replay validation."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from bundle import learner
from protocol.data import array_sha256, load_draw
from protocol.errors import BundleError
from tests.conftest import ORIGINAL_ARCHIVE

FROZEN_DRAW0 = json.loads((ORIGINAL_ARCHIVE / "results" / "draw-00.json").read_text())
DEPTH1_INITIAL = {  # spec 2.4, depth 1 column
    "weights.0": "194490b683f6426b65457a6725f0646768f8d46a361d9b125cfc768ab614f8fb",
    "weights.1": "bcbcbf732d68415f6c7c393c31343810467d8a86951e70237f6c36712785dd02",
    "head.weight": "cf377ee51b392e583b6f4a793bfe463be5923a301aa6bdbf2c50c7618b10416f",
    "head.bias": "3cb77813041da40618ec2c920f202aebfdde2e6422e84b01e7d42f652f3faaaf",
}


def test_config_orders_and_checks():
    assert list(learner.FROZEN_CONFIG) == list(json.loads((ORIGINAL_ARCHIVE / "config.json").read_text()))
    assert learner.normalise_config(learner.FROZEN_CONFIG) == FROZEN_DRAW0["metadata"]["config"]
    assert list(learner.normalise_config(learner.FROZEN_CONFIG)) == list(FROZEN_DRAW0["metadata"]["config"])
    assert learner.normalise_config({})["epochs"] == 4
    for bad in ({"depth": 3}, {"epochs": 0}, {"learning_rate": float("inf")}, {"width": 8}, {"seed": "x"}):
        with pytest.raises(BundleError):
            learner.normalise_config(bad)


def test_inputs_must_be_exactly_the_three_arrays():
    draw = load_draw(0)
    inputs = draw.learner_inputs()
    with pytest.raises(BundleError, match="no evaluation labels"):
        learner.validate_inputs({**inputs, "test_labels": inputs["train_labels"]})
    with pytest.raises(BundleError, match="float32"):
        learner.validate_inputs({**inputs, "test_images": inputs["test_images"].astype(np.float64)})
    with pytest.raises(BundleError, match="outside"):
        learner.validate_inputs({**inputs, "train_images": inputs["train_images"] * 2})
    with pytest.raises(BundleError, match="0..9"):
        learner.validate_inputs({**inputs, "train_labels": inputs["train_labels"] + 1})


def test_initialisation_matches_the_frozen_hashes_and_keeps_outer_rng():
    state = torch.random.get_rng_state()
    for depth, expected in ((2, FROZEN_DRAW0["metadata"]["initial_parameter_sha256"]), (1, DEPTH1_INITIAL)):
        model = learner.build_model(depth, 0.5, 11)
        hashes = {n: array_sha256(p.detach().numpy()) for n, p in model.named_parameters()}
        assert hashes == expected  # names and order included
        assert sum(p.numel() for p in model.parameters()) == {1: 4192, 2: 7554}[depth]
    assert torch.equal(state, torch.random.get_rng_state())
    orders = learner.epoch_orders(10000, 2, 11)
    assert orders.dtype == np.int64 and [array_sha256(r) for r in orders] == \
        FROZEN_DRAW0["metadata"]["epoch_permutation_sha256"]


@pytest.mark.parametrize("dtype,atol,rtol", [(torch.float64, 1e-12, 1e-10), (torch.float32, 2e-6, 3e-3)])
@pytest.mark.parametrize("depth", [1, 2])
def test_reversible_backward_matches_plain_autograd(dtype, atol, rtol, depth):
    model = learner.build_model(depth, 0.5, 5).to(dtype)
    generator = torch.Generator().manual_seed(1)
    pixels = torch.rand((64, 81), generator=generator, dtype=dtype) * 4 - 0.5
    x = F.pad(pixels, (0, 1))  # the lift's zero coordinate
    labels = torch.randint(0, 10, (64,), generator=generator)
    params = list(model.parameters())
    grads = []
    for core in (model.core_plain, model.core):
        # Gradients w.r.t. the 81 pixel coordinates only: at the constant zero coordinate the
        # reconstructed value is ~1e-17 instead of exactly 0, which flips ReLU's strict mask there.
        leaf = pixels.clone().requires_grad_(True)
        loss = F.cross_entropy(model.head(core(F.pad(leaf, (0, 1)))), labels)
        grads.append(torch.autograd.grad(loss, [leaf, *params]))
    for plain, rev in zip(*grads, strict=True):
        torch.testing.assert_close(rev, plain, atol=atol, rtol=rtol)
    with torch.no_grad():
        out = model.core(x)
        torch.testing.assert_close(model.inverse(out), x, atol=atol * 10, rtol=rtol)
    # Keep the output alive while reading its node's saved tensors: the node saves the output
    # itself, and torch 2.5.1 refuses to unpack it once a temporary output has been freed.
    out = model.core(x.clone().requires_grad_(True))
    saved = out.grad_fn.saved_tensors
    assert len(saved) == 1 + 2 * depth and all(s is w for s, w in zip(saved[1:], model.weights, strict=True))
    assert saved[0].untyped_storage().data_ptr() == out.untyped_storage().data_ptr()  # one (B, 82) activation


def test_cpu_reconstruction_selftest_records():
    checks = learner.cpu_reconstruction_selftest()
    assert [(c["dtype"], c["depth"]) for c in checks] == [
        ("torch.float64", 1), ("torch.float64", 2), ("torch.float32", 1), ("torch.float32", 2)]
    frozen = FROZEN_DRAW0["metadata"]["validation"]["checks"]
    for ours, theirs in zip(checks, frozen, strict=True):
        assert list(ours) == list(theirs)
        assert ours["passed"] and ours["forward_bitwise_equal"]
        for key in ("saved_activation_storages", "saved_activation_bytes", "saved_parameter_references"):
            assert ours[key] == theirs[key]
        assert ours["maximum_gradient_abs_error"] <= (2e-12 if "64" in ours["dtype"] else 2e-6)


def test_validate_replay_eager_part_on_cpu():
    record = learner.validate_cuda_replay(device="cpu")
    assert record["passed"], record
    assert record["checks"] == 212 and not record["captured_graphs"]
    assert record["maximum_abs_error"] < 2e-5 and record["tolerance"] == {"atol": 2e-5, "rtol": 3e-3}
    assert [c["batch_sizes"] for c in record["cases"]] == [[8, 8, 3]] * 2
    assert [c["saved_core_activation_bytes"] for c in record["cases"]] == [984, 984]


# What the protocol guarantees on a CPU, on every x86-64 model and at every thread count: the
# inputs, initial parameters, epoch orders and predictions. Full final-state bits (parameters,
# velocity, state vector, scores) depend on the CPU's kernels and the intra-op thread count
# (torch 2.13 and 2.5.1 on an AMD EPYC: a different final state at each of 1, 2, 4, 8 threads,
# docs/results/workspace-study.md); they are only guaranteed within one process at one thread count.
THREAD_INDEPENDENT_KEYS = ("input_hashes", "initial_parameter_sha256", "epoch_permutation_sha256",
                           "predictions_sha256")


def test_cpu_task_metadata_resets_and_threads():
    draw = load_draw(0)
    task = learner.prepare_task(*draw.learner_inputs().values(), device="cpu")
    task.run()
    predictions, metadata = task.outputs()
    frozen = FROZEN_DRAW0["metadata"]
    assert list(metadata) == list(frozen)
    assert metadata["predictions_sha256"] == frozen["predictions_sha256"] == array_sha256(predictions)
    assert metadata["initial_parameter_sha256"] == frozen["initial_parameter_sha256"]
    assert metadata["epoch_permutation_sha256"] == frozen["epoch_permutation_sha256"]
    assert predictions.dtype == np.int64 and predictions.shape == (10000,)
    assert metadata["parameter_count"] == 7554 and metadata["run_count"] == 1
    assert list(task.state_hashes()) == list(learner.STATE_HASH_KEYS)
    names = [n for n, _ in task.named_tensors()]
    assert len(names) == 33 and names[-9:] == ["raw", "raw_query", "labels", "x", "q", "orders", "order",
                                               "predictions", "scores"]
    first = task.state_hashes()
    assert first["final_parameter_sha256"] != first["initial_parameter_sha256"]
    threads = torch.get_num_threads()
    other = 1 if threads != 1 else 2
    try:
        task.run()  # a second invocation at the same thread count starts from the initial state: identical bits
        assert task.state_hashes() == first and task.run_count == 2
        torch.set_num_threads(other)
        task.run()  # another thread count: the same predictions, whatever the final-state bits
        at_other = task.state_hashes()
        task.run()  # and again at that count: identical bits within this process
        assert task.state_hashes() == at_other and task.run_count == 4
    finally:
        torch.set_num_threads(threads)
    assert {k: at_other[k] for k in THREAD_INDEPENDENT_KEYS} == {k: first[k] for k in THREAD_INDEPENDENT_KEYS}
    assert np.array_equal(task.outputs()[0], predictions)
    task.run()  # back at the first thread count: its bits again
    assert task.state_hashes() == first and task.run_count == 5


@pytest.mark.gpu
def test_cuda_graph_draw0_equals_frozen_predictions():
    draw = load_draw(0)
    task = learner.prepare_task(*draw.learner_inputs().values(), device="cuda")
    task.run()
    predictions, metadata = task.outputs()
    frozen = FROZEN_DRAW0["metadata"]
    assert metadata["predictions_sha256"] == frozen["predictions_sha256"]
    assert metadata["initial_parameter_sha256"] == frozen["initial_parameter_sha256"]
    assert metadata["epoch_permutation_sha256"] == frozen["epoch_permutation_sha256"]
    first = task.state_hashes()
    task.run()
    assert task.state_hashes() == first
    cpu = learner.train_predict(*draw.learner_inputs().values(), device="cpu")[0]
    print(f"cuda vs cpu predictions differing: {int((cpu != predictions).sum())}")


@pytest.mark.gpu
def test_validate_cuda_replay_on_gpu():
    record = learner.validate_cuda_replay()
    print(json.dumps({k: record[k] for k in ("device", "checks", "maximum_abs_error")}))
    assert record["passed"] and record["captured_graphs"] and record["checks"] == 212
    assert all(c["complete_replay_byte_repeatable"] for c in record["cases"])
