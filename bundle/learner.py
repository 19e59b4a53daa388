"""The frozen rev88 learner: a reversible MLP over the 82-coordinate lift of 9×9 MNIST.

Spec sections 2 and 3. Two additive coupling blocks (depth 2) over halves 0…40 / 41…81,
bias-free 41×41 branches after ReLU with residual scale 0.5, an ordinary Linear(82, 10)
head; 7,554 parameters. Training: two epochs of PCG64(11) permutations, batches of 128
(79 updates per epoch), mean cross-entropy, hand-written momentum SGD (lr 0.1, momentum 0.9).
The core's backward reconstructs earlier activations by subtraction (:class:`ReversibleCore`).

On CUDA one invocation replays three captured graphs (reset, epoch, predict; spec 2.8);
on CPU the same operations run eagerly. Every invocation starts from the initial weights.

CPU thread count (docs/results/workspace-study.md; measured on a 2-core AMD EPYC with torch
2.13.0+cpu and 2.5.1+cu124 at 1, 2, 4 and 8 intra-op threads, all 11 draws): predictions,
initial parameters and epoch orders are the same at every thread count and equal the frozen
ones; final parameters, velocity, state vector and scores differ between thread counts (four
distinct final states per draw), agree between the two torch versions at each count, and
repeat bit for bit at one count (a second invocation in the same process; for draw 0 also a
fresh process). So across thread counts and CPU models only predictions are compared; nothing
is pinned, and every CPU record states its CPU model and thread counts
(``bundle.hostinfo.cpu_record``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.function import once_differentiable

from protocol.data import array_sha256
from protocol.errors import BundleError

FROZEN_CONFIG: dict = {"alpha": 0.5, "batch_size": 128, "momentum": 0.9, "weight_decay": 0.0,
                       "seed": 11, "depth": 2, "epochs": 2, "learning_rate": 0.1}
_DEFAULTS = {"depth": 1, "alpha": 0.5, "seed": 11, "epochs": 4, "learning_rate": 0.1,
             "batch_size": 128, "momentum": 0.9, "weight_decay": 0.0}
_INT_KEYS = ("depth", "seed", "epochs", "batch_size")
INPUT_KEYS = ("train_images", "train_labels", "test_images")
STATE_HASH_KEYS: tuple[str, ...] = (
    "input_hashes", "initial_parameter_sha256", "epoch_permutation_sha256", "final_parameter_sha256",
    "final_velocity_sha256", "state_vector_sha256", "predictions_sha256", "scores_sha256")
HALF = 41          # coordinates per half; 82 = 81 pixels + one zero
FEATURES = 82
PREDICT_CHUNK = 1024
BRANCH_STD = 0.05 / math.sqrt(41)
SELFTEST_SCOPE = ("Identical weights; ordinary autograd versus custom reconstruction for inputs and every "
                  "parameter. First-order differentiation only.")
REPLAY_SCOPE = ("Both depths; every gradient, parameter update and momentum state versus independent ordinary "
                "eager autograd/SGD, complete captured scores and exact replay-reset checks. Test uses only "
                "generated synthetic data.")
TIMING_SCOPE = ("run resets weights/gradients/momentum, normalizes raw train and query pixels, copies resident "
                "epoch permutations, trains and predicts. Excludes setup, CPU permutation generation, "
                "allocation, transfer, capture and diagnostics.")
REPLAY_TOLERANCE = {"atol": 2e-5, "rtol": 3e-3}


def normalise_config(config: Mapping[str, Any]) -> dict:
    """Defaults overlaid with *config*, typed and checked (spec 2.1), in metadata key order.

    Returns:
        dict with keys depth, alpha, seed, epochs, learning_rate, batch_size, momentum,
        weight_decay (ints for depth/seed/epochs/batch_size, floats otherwise).

    Raises:
        BundleError: unknown key, depth not 1 or 2, epochs/batch_size < 1, non-finite float.
    """
    unknown = sorted(set(config) - set(_DEFAULTS))
    if unknown:
        raise BundleError(f"unknown learner config keys {unknown} (allowed: {', '.join(_DEFAULTS)}): fix the config")
    merged = {**_DEFAULTS, **dict(config)}
    out: dict = {}
    for key in _DEFAULTS:
        try:
            out[key] = int(merged[key]) if key in _INT_KEYS else float(merged[key])
        except (TypeError, ValueError):
            raise BundleError(f"learner config {key}={merged[key]!r} is not a number: fix the config") from None
    if out["depth"] not in (1, 2) or out["epochs"] < 1 or out["batch_size"] < 1:
        raise BundleError(f"learner config out of range (depth {out['depth']} must be 1 or 2, epochs "
                          f"{out['epochs']} and batch_size {out['batch_size']} must be >= 1): fix the config")
    if not all(math.isfinite(out[k]) for k in out if k not in _INT_KEYS):
        raise BundleError("learner config has a non-finite float: fix the config")
    return out


def validate_inputs(arrays: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Check the learner's inputs (spec 1.6): exactly train_images, train_labels, test_images.

    Returns:
        (train_images float32 (N,1,9,9), train_labels as given (integer, (N,)),
        test_images float32 (M,1,9,9)), each C-contiguous numpy.

    Raises:
        BundleError: any other key (evaluation labels above all), wrong dtype/shape, empty,
            non-finite or out-of-range pixels, labels outside 0…9.
    """
    if set(arrays) != set(INPUT_KEYS):
        raise BundleError(f"learner inputs must be exactly the three arrays {', '.join(INPUT_KEYS)} "
                          f"(got {sorted(arrays)}; no evaluation labels): pass only those")
    train_images, train_labels, test_images = (np.ascontiguousarray(np.asarray(arrays[k])) for k in INPUT_KEYS)
    for name, images in (("train_images", train_images), ("test_images", test_images)):
        if images.dtype != np.float32 or images.ndim != 4 or images.shape[1:] != (1, 9, 9) or len(images) == 0:
            raise BundleError(f"{name} must be float32 (N, 1, 9, 9) with N > 0 (got {images.dtype} "
                              f"{images.shape}): build inputs with protocol.data")
        if not np.isfinite(images).all() or images.min() < 0.0 or images.max() > 1.0:
            raise BundleError(f"{name} has pixels outside [0, 1] or non-finite: build inputs with protocol.data")
    if (train_labels.shape != (len(train_images),) or not np.issubdtype(train_labels.dtype, np.integer)
            or train_labels.min() < 0 or train_labels.max() > 9):
        raise BundleError(f"train_labels must be integers 0..9 of shape ({len(train_images)},) (got "
                          f"{train_labels.dtype} {train_labels.shape}): build inputs with protocol.data")
    return train_images, train_labels, test_images


def _branch(h: torch.Tensor, weight: torch.Tensor, alpha: float) -> torch.Tensor:
    """relu → linear (h·Wᵀ) → × alpha, the order of spec 2.2."""
    return F.linear(F.relu(h), weight) * alpha


def _core_loop(x: torch.Tensor, weights: tuple[torch.Tensor, ...], alpha: float) -> torch.Tensor:
    left, right = x[:, :HALF], x[:, HALF:]
    for b in range(len(weights) // 2):
        left = left + _branch(right, weights[2 * b], alpha)
        right = right + _branch(left, weights[2 * b + 1], alpha)
    return torch.cat([left, right], dim=1)


class ReversibleCore(torch.autograd.Function):
    """Additive coupling core whose backward reconstructs activations (spec 2.3).

    Saves only the core output (B, 82) and references to the 2d weights; backward walks the
    blocks last to first, rebuilding each branch input by subtraction, one branch graph at a
    time. First-order only.
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, alpha: float, *weights: torch.Tensor) -> torch.Tensor:  # noqa: D102
        out = _core_loop(x, weights, alpha)
        ctx.alpha = alpha
        ctx.save_for_backward(out, *weights)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out: torch.Tensor):  # noqa: D102
        out, *weights = ctx.saved_tensors
        alpha = ctx.alpha
        grad_left, grad_right = grad_out[:, :HALF], grad_out[:, HALF:]
        left, right = out.detach()[:, :HALF], out.detach()[:, HALF:]
        grads: list[torch.Tensor | None] = [None] * len(weights)
        for b in reversed(range(len(weights) // 2)):
            for index, use_left in ((2 * b + 1, True), (2 * b, False)):
                leaf = (left if use_left else right).detach().requires_grad_(True)
                with torch.enable_grad():
                    branch = _branch(leaf, weights[index], alpha)
                    d_leaf, d_weight = torch.autograd.grad(
                        branch, (leaf, weights[index]), grad_right if use_left else grad_left)
                if use_left:   # second branch of the block: R ← R − branch, dL += d(leaf)
                    right = right - branch.detach()
                    grad_left = grad_left + d_leaf
                else:          # first branch: L ← L − branch, dR += d(leaf)
                    left = left - branch.detach()
                    grad_right = grad_right + d_leaf
                grads[index] = d_weight
                del branch
        return (torch.cat([grad_left, grad_right], dim=1), None, *grads)


class ReversibleMLP(nn.Module):
    """Parameters ``weights.0…weights.{2d−1}`` (41×41, no bias) then ``head`` Linear(82, 10).

    Build with :func:`build_model` so the seeded initialisation of spec 2.4 is used.
    """

    def __init__(self, depth: int, alpha: float) -> None:
        super().__init__()
        self.alpha = float(alpha)
        self.weights = nn.ParameterList([nn.Parameter(torch.empty(HALF, HALF)) for _ in range(2 * depth)])
        for weight in self.weights:          # registration order, before the head exists
            nn.init.normal_(weight, 0.0, BRANCH_STD)
        self.head = nn.Linear(FEATURES, 10)  # default init draws from the same generator

    def core_plain(self, x: torch.Tensor) -> torch.Tensor:
        """The plain coupling loop (ordinary autograd if enabled). x: (B, 82) → (B, 82)."""
        return _core_loop(x, tuple(self.weights), self.alpha)

    def core(self, x: torch.Tensor) -> torch.Tensor:
        """Reversible custom function when grad is enabled, else the plain loop."""
        if torch.is_grad_enabled():
            return ReversibleCore.apply(x, self.alpha, *self.weights)
        return self.core_plain(x)

    def inverse(self, out: torch.Tensor) -> torch.Tensor:
        """Invert the core (diagnostic): blocks in reverse, subtracting each branch."""
        left, right = out[:, :HALF], out[:, HALF:]
        for b in reversed(range(len(self.weights) // 2)):
            right = right - _branch(left, self.weights[2 * b + 1], self.alpha)
            left = left - _branch(right, self.weights[2 * b], self.alpha)
        return torch.cat([left, right], dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (B, 10) from lifted inputs (B, 82)."""
        return self.head(self.core(x))


def build_model(depth: int, alpha: float, seed: int) -> ReversibleMLP:
    """CPU float32 model initialised as spec 2.4 inside a forked CPU RNG (outer state untouched)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return ReversibleMLP(depth, alpha)


def epoch_orders(count: int, epochs: int, seed: int) -> np.ndarray:
    """One ``Generator(PCG64(seed))``, one ``permutation(count)`` per epoch: int64 (epochs, count)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    return np.stack([rng.permutation(count) for _ in range(epochs)]).astype(np.int64)


def _host(t: torch.Tensor) -> np.ndarray:
    return t.detach().to("cpu").contiguous().numpy()


def task_metadata(config: Mapping[str, Any], parameter_count: int, train_count: int, test_count: int,
                  hashes: Mapping[str, str], preparation_seconds: float, run_count: int,
                  validation: Any, timing_scope: str = TIMING_SCOPE) -> dict:
    """One invocation's metadata in spec 3 key order (as the original fixture's ``metadata``).

    Args:
        config: the normalised config; parameter_count: 7,554 for the frozen config;
        train_count, test_count: N and M; hashes: :data:`STATE_HASH_KEYS` → sha256 hex (``input_hashes``
        a dict); preparation_seconds: s; run_count: invocations so far; validation: the built-in
        validation record, or ``None`` where a learner has none; timing_scope: what a timed
        invocation covers.
    """
    return {
        "config": dict(config),
        "parameter_count": int(parameter_count),
        "train_count": train_count, "test_count": test_count,
        "fresh_initialization_per_run": True, "checkpoint_loaded": False,
        "normalization": "4*x-0.5 then append one zero coordinate",
        "initialization": "branch normal(0,0.05/sqrt(41)); standard torch Linear head; seed-only",
        "optimizer": "SGD momentum; zero initial velocity; gradient mean cross entropy",
        "shuffle": "independent PCG64 permutation each epoch, seed-only",
        "augmentation": "none",
        **{k: hashes[k] for k in ("input_hashes", "epoch_permutation_sha256", "initial_parameter_sha256",
                                  "final_parameter_sha256", "final_velocity_sha256", "state_vector_sha256",
                                  "predictions_sha256", "scores_sha256")},
        "preparation_seconds": preparation_seconds,
        "run_count": run_count,
        "validation": validation,
        "reversible_core": True, "retained_core_states": 1,
        "core_saved_bytes_per_example": FEATURES * 4,
        "head_reversible": False, "input_lift_injective": True,
        "timing_scope": timing_scope,
    }


class PreparedTask:
    """A prepared invocation (spec 2.7): resident inputs, orders, state and (CUDA) graphs.

    Args:
        train_images: float32 (N, 1, 9, 9) in [0, 1].
        train_labels: integer (N,) in 0…9.
        test_images: float32 (M, 1, 9, 9) in [0, 1].
        config: learner config (default :data:`FROZEN_CONFIG`).
        device: ``"cuda"`` (graphs) or ``"cpu"`` (eager, same operations).
        run_selftest: run :func:`cpu_reconstruction_selftest` first (recorded as ``validation``).

    Raises:
        BundleError: bad inputs/config, CUDA requested but unavailable, self-test failure.
    """

    def __init__(self, train_images, train_labels, test_images, config=None, *, device="cuda",
                 run_selftest=True) -> None:
        started = time.perf_counter()
        self.config = normalise_config(FROZEN_CONFIG if config is None else config)
        arrays = validate_inputs({"train_images": train_images, "train_labels": train_labels,
                                  "test_images": test_images})
        self.validation = _selftest_record() if run_selftest else None
        self.device = torch.device(device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise BundleError("device cuda requested but torch sees no CUDA GPU: use --device cpu or a GPU host")
        if self.device.type not in ("cuda", "cpu"):
            raise BundleError(f"unsupported device {device!r}: use cpu or cuda")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        self.input_hashes = {k: array_sha256(a) for k, a in zip(INPUT_KEYS, arrays, strict=True)}
        cfg = self.config
        self.model = build_model(cfg["depth"], cfg["alpha"], cfg["seed"]).to(self.device)
        self.parameter_names = [name for name, _ in self.model.named_parameters()]
        self.params = [p for _, p in self.model.named_parameters()]
        self.initial = [p.detach().clone() for p in self.params]
        self.velocity = [torch.zeros_like(p) for p in self.params]
        for p in self.params:
            p.grad = torch.zeros_like(p)
        train_x, labels, query = arrays
        self.train_count, self.test_count = len(train_x), len(query)
        self.raw = torch.from_numpy(train_x.reshape(self.train_count, 81).copy()).to(self.device)
        self.raw_query = torch.from_numpy(query.reshape(self.test_count, 81).copy()).to(self.device)
        self.labels = torch.from_numpy(labels.astype(np.int64)).to(self.device)
        self.x = torch.empty((self.train_count, FEATURES), dtype=torch.float32, device=self.device)
        self.q = torch.empty((self.test_count, FEATURES), dtype=torch.float32, device=self.device)
        orders = epoch_orders(self.train_count, cfg["epochs"], cfg["seed"])
        self.epoch_permutation_sha256 = [array_sha256(row) for row in orders]
        self.orders = torch.from_numpy(orders).to(self.device)
        self.order = self.orders[0].clone()
        self.predictions = torch.empty(self.test_count, dtype=torch.int64, device=self.device)
        self.scores = torch.empty((self.test_count, 10), dtype=torch.float32, device=self.device)
        self.initial_parameter_sha256 = {n: array_sha256(_host(t)) for n, t in zip(self.parameter_names,
                                                                                   self.initial, strict=True)}
        size = cfg["batch_size"]
        self.batches = [(first, min(first + size, self.train_count)) for first in range(0, self.train_count, size)]
        self.run_count = 0
        self._graphs: dict[str, torch.cuda.CUDAGraph] = {}
        if self.device.type == "cuda":
            self._capture()
        else:
            self._reset_ops()
        self.preparation_seconds = time.perf_counter() - started

    # -- the operations (eager on CPU, captured on CUDA) ------------------------------------
    def _reset_ops(self) -> None:
        with torch.no_grad():
            for p, init, v in zip(self.params, self.initial, self.velocity, strict=True):
                p.copy_(init)
                p.grad.zero_()
                v.zero_()
            for dst, src in ((self.x, self.raw), (self.q, self.raw_query)):
                dst[:, :81].copy_(src)
                dst[:, :81].mul_(4.0)
                dst[:, :81].sub_(0.5)
                dst[:, 81].zero_()

    def _step(self, first: int, end: int) -> None:
        """One update on batch ``order[first:end]`` (spec 2.6)."""
        cfg = self.config
        index = self.order[first:end]
        inputs = self.x.index_select(0, index)
        targets = self.labels.index_select(0, index)
        for p in self.params:
            p.grad.zero_()
        loss = F.cross_entropy(self.model(inputs), targets)
        loss.backward()
        with torch.no_grad():
            for p, v in zip(self.params, self.velocity, strict=True):
                v.mul_(cfg["momentum"])
                v.add_(p.grad)
                if cfg["weight_decay"] != 0.0:
                    v.add_(p, alpha=cfg["weight_decay"])
                p.add_(v, alpha=-cfg["learning_rate"])

    def _epoch_ops(self) -> None:
        for first, end in self.batches:
            self._step(first, end)

    def _predict_ops(self) -> None:
        with torch.no_grad():
            for start in range(0, self.test_count, PREDICT_CHUNK):
                stop = min(start + PREDICT_CHUNK, self.test_count)
                self.scores[start:stop].copy_(self.model(self.q[start:stop]))
            self.predictions.copy_(torch.argmax(self.scores, dim=1))

    def _capture(self) -> None:
        """Eager warm-up then capture of the reset, epoch and predict graphs on a side stream (spec 2.8)."""
        side = torch.cuda.Stream(device=self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            self._reset_ops()
            self._step(0, min(self.config["batch_size"], self.train_count))
            remainder = self.train_count % self.config["batch_size"]
            if remainder:
                self._step(self.train_count - remainder, self.train_count)
            self._predict_ops()
            self._reset_ops()
        torch.cuda.current_stream(self.device).wait_stream(side)
        torch.cuda.synchronize(self.device)
        for name, ops in (("reset", self._reset_ops), ("epoch", self._epoch_ops), ("predict", self._predict_ops)):
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=side):
                ops()
            self._graphs[name] = graph
        self._graphs["reset"].replay()
        torch.cuda.synchronize(self.device)

    # -- public API ------------------------------------------------------------------------
    def _replay_or_eager(self, name: str, ops) -> None:
        if self._graphs:
            self._graphs[name].replay()
        else:
            ops()

    def reset(self) -> None:
        """Restore initial weights, zero grads and momentum, re-normalise x and q."""
        self._replay_or_eager("reset", self._reset_ops)

    def train_sequence(self) -> None:
        """For each epoch copy ``orders[e]`` → ``order`` and run the epoch (no reset, no predict)."""
        for e in range(self.config["epochs"]):
            self.order.copy_(self.orders[e])
            self._replay_or_eager("epoch", self._epoch_ops)

    def predict(self) -> None:
        """Write ``scores`` (M, 10) float32 logits and ``predictions`` (M,) int64 argmax."""
        self._replay_or_eager("predict", self._predict_ops)

    def run(self) -> None:
        """One invocation: reset + train_sequence + predict (asynchronous on CUDA)."""
        self.reset()
        self.train_sequence()
        self.predict()
        self.run_count += 1

    def _synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def state_hashes(self) -> dict:
        """The eight hash fields of spec 3 in :data:`STATE_HASH_KEYS` order (synchronises)."""
        self._synchronize()
        params = [_host(p) for p in self.params]
        return {
            "input_hashes": dict(self.input_hashes),
            "initial_parameter_sha256": dict(self.initial_parameter_sha256),
            "epoch_permutation_sha256": list(self.epoch_permutation_sha256),
            "final_parameter_sha256": {n: array_sha256(a) for n, a in zip(self.parameter_names, params, strict=True)},
            "final_velocity_sha256": {n: array_sha256(_host(v))
                                      for n, v in zip(self.parameter_names, self.velocity, strict=True)},
            "state_vector_sha256": array_sha256(np.concatenate([a.ravel() for a in params])),
            "predictions_sha256": array_sha256(_host(self.predictions)),
            "scores_sha256": array_sha256(_host(self.scores)),
        }

    def outputs(self) -> tuple[np.ndarray, dict]:
        """Synchronise and return (predictions int64 (M,), metadata in spec 3 key order).

        Raises:
            BundleError: a score or parameter is not finite.
        """
        self._synchronize()
        predictions, scores = _host(self.predictions).copy(), _host(self.scores)
        if not np.isfinite(scores).all() or not all(torch.isfinite(p).all().item() for p in self.params):
            raise BundleError("Nonfinite scores or model state after training: the run diverged; check inputs/config")
        h = self.state_hashes()
        metadata = task_metadata(self.config, sum(p.numel() for p in self.params), self.train_count,
                                 self.test_count, h, self.preparation_seconds, self.run_count, self.validation)
        return predictions, metadata

    def named_tensors(self) -> list[tuple[str, torch.Tensor]]:
        """Named resident tensors in the inventory order of spec 4.1."""
        named: list[tuple[str, torch.Tensor]] = []
        for name, p in zip(self.parameter_names, self.params, strict=True):
            named.append((f"parameters.{name}", p))
            if p.grad is not None:
                named.append((f"gradients.{name}", p.grad))
        named += [(f"initial.{i}", t) for i, t in enumerate(self.initial)]
        named += [(f"velocity.{i}", t) for i, t in enumerate(self.velocity)]
        named += [(n, getattr(self, n)) for n in ("raw", "raw_query", "labels", "x", "q", "orders", "order",
                                                  "predictions", "scores")]
        return named


def prepare_task(train_images, train_labels, test_images, config=None, *, device="cuda") -> PreparedTask:
    """Build a :class:`PreparedTask` (self-test included); see its arguments."""
    return PreparedTask(train_images, train_labels, test_images, config, device=device)


def train_predict(train_images, train_labels, test_images, config=None, *, device="cuda") -> tuple[np.ndarray, dict]:
    """Prepare, run one invocation, return (predictions int64 (M,), metadata)."""
    task = prepare_task(train_images, train_labels, test_images, config, device=device)
    task.run()
    return task.outputs()


def _saved_audit(model: ReversibleMLP, x: torch.Tensor) -> dict:
    """What the custom node saved for input rows *x* (B, 82): storages, bytes, weight references."""
    with torch.enable_grad():
        out = model.core(x.detach().requires_grad_(True))
    saved = out.grad_fn.saved_tensors
    activation, refs = saved[0], saved[1:]
    same_storage = activation.untyped_storage().data_ptr() == out.untyped_storage().data_ptr()
    refs_ok = len(refs) == len(model.weights) and all(r is w for r, w in zip(refs, model.weights, strict=False))
    return {"storages": 1 if same_storage else 0, "bytes": activation.untyped_storage().nbytes(),
            "references": len(refs) if refs_ok else -1, "ok": same_storage and refs_ok}


def cpu_reconstruction_selftest() -> list[dict]:
    """Plain autograd vs the reversible path on CPU (spec 2.10), float64 then float32, depth 1 then 2.

    Model seed 199; inputs ``torch.rand((3, 82))`` from a generator seeded 20260914, ×4 − 0.5,
    last column 0; gradients w.r.t. the 81 inputs and every parameter; labels [2, 7, 1].

    Returns:
        Four dicts: dtype, depth, passed, forward_bitwise_equal, maximum_gradient_abs_error,
        inverse_max_abs_error, saved_activation_storages, saved_activation_bytes,
        saved_parameter_references. Error values are measured (they vary by CPU host).
    """
    records = []
    for dtype, (atol, rtol) in ((torch.float64, (2e-12, 2e-10)), (torch.float32, (2e-6, 3e-3))):
        for depth in (1, 2):
            model = build_model(depth, 0.5, 199).to(dtype)
            generator = torch.Generator().manual_seed(20260914)
            base = torch.rand((3, FEATURES), generator=generator, dtype=dtype) * 4 - 0.5
            base[:, 81] = 0
            labels = torch.tensor([2, 7, 1])
            params = list(model.parameters())
            results = []
            for core in (model.core_plain, model.core):
                pixels = base[:, :81].clone().requires_grad_(True)
                with torch.enable_grad():
                    logits = model.head(core(F.pad(pixels, (0, 1))))
                    grads = torch.autograd.grad(F.cross_entropy(logits, labels), [pixels, *params])
                results.append((logits.detach(), grads))
            (plain_logits, plain_grads), (rev_logits, rev_grads) = results
            grad_err = max(float((a - b).abs().max()) for a, b in zip(plain_grads, rev_grads, strict=True))
            grads_close = all(torch.allclose(b, a, atol=atol, rtol=rtol)
                              for a, b in zip(plain_grads, rev_grads, strict=True))
            with torch.no_grad():
                core_out = model.core_plain(base)
                recovered = model.inverse(core_out)
            inverse_err = float((recovered - base).abs().max())
            audit = _saved_audit(model, base)
            bitwise = bool(torch.equal(plain_logits, rev_logits))
            passed = (bitwise and grads_close and audit["ok"]
                      and torch.allclose(recovered, base, atol=atol, rtol=rtol))
            records.append({"dtype": str(dtype), "depth": depth, "passed": bool(passed),
                            "forward_bitwise_equal": bitwise, "maximum_gradient_abs_error": grad_err,
                            "inverse_max_abs_error": inverse_err, "saved_activation_storages": audit["storages"],
                            "saved_activation_bytes": audit["bytes"],
                            "saved_parameter_references": audit["references"]})
    return records


def _selftest_record() -> dict:
    """The metadata ``validation`` object; raises BundleError if any case fails."""
    checks = cpu_reconstruction_selftest()
    if not all(c["passed"] for c in checks):
        raise BundleError(f"CPU reconstruction self-test failed ({[c for c in checks if not c['passed']]}): "
                          "the reversible backward disagrees with autograd; report this as a bug")
    return {"passed": True, "device": "cpu", "checks": checks, "scope": SELFTEST_SCOPE}


def validate_cuda_replay(config: Mapping[str, Any] | None = None, *, device: str = "cuda") -> dict:
    """The task's own step and full run vs eager autograd + ``torch.optim.SGD(foreach=False)`` (spec 2.10).

    Synthetic PCG64(913413) data: train ``random((19,1,9,9), float32)``, labels
    ``integers(0, 10, 19)``, query ``random((7,1,9,9), float32)``. For depth 1 and 2 with
    epochs 2, batch_size 8, seed 781 (batches 8, 8, 3): after every step compare each
    gradient, parameter and momentum buffer (3 checks per parameter); then a full ``run()``
    (captured graphs on CUDA, eager on CPU) against the reference's final scores (1 check),
    predictions (exact), parameters, gradients and momentum; two consecutive runs must give
    equal final parameter / velocity / scores / prediction hashes. 212 checks in all.

    Args:
        config: base config (default :data:`FROZEN_CONFIG`); depth/epochs/batch/seed overridden.
        device: ``"cuda"`` (replays captured graphs) or ``"cpu"`` (eager run; for CI).

    Returns:
        dict: passed, device, captured_graphs, checks, maximum_abs_error, tolerance, cases, scope.
    """
    rng = np.random.Generator(np.random.PCG64(913413))
    train = rng.random((19, 1, 9, 9), dtype=np.float32)
    labels = rng.integers(0, 10, 19).astype(np.int64)
    query = rng.random((7, 1, 9, 9), dtype=np.float32)
    base = normalise_config(FROZEN_CONFIG if config is None else config)
    atol, rtol = REPLAY_TOLERANCE["atol"], REPLAY_TOLERANCE["rtol"]
    state = {"checks": 0, "max_err": 0.0, "ok": True}

    def check(actual: torch.Tensor, expected: torch.Tensor) -> None:
        state["checks"] += 1
        state["max_err"] = max(state["max_err"], float((actual - expected).abs().max()))
        state["ok"] &= bool(torch.allclose(actual, expected, atol=atol, rtol=rtol))

    cases = []
    for depth in (1, 2):
        cfg = normalise_config({**base, "depth": depth, "epochs": 2, "batch_size": 8, "seed": 781})
        task = PreparedTask(train, labels, query, cfg, device=device, run_selftest=False)
        reference = build_model(depth, cfg["alpha"], cfg["seed"]).to(task.device)
        ref_params = list(reference.parameters())
        sgd = torch.optim.SGD(ref_params, lr=cfg["learning_rate"], momentum=cfg["momentum"], dampening=0.0,
                              weight_decay=cfg["weight_decay"], foreach=False)

        def lift(raw: torch.Tensor) -> torch.Tensor:
            return torch.cat([raw * 4.0 - 0.5, torch.zeros_like(raw[:, :1])], dim=1)

        ref_x, ref_q = lift(task.raw), lift(task.raw_query)
        task._reset_ops()
        for e in range(cfg["epochs"]):
            task.order.copy_(task.orders[e])
            for first, end in task.batches:
                task._step(first, end)
                sgd.zero_grad()
                index = task.orders[e][first:end]
                logits = reference.head(reference.core_plain(ref_x.index_select(0, index)))
                F.cross_entropy(logits, task.labels.index_select(0, index)).backward()
                sgd.step()
                for p, v, r in zip(task.params, task.velocity, ref_params, strict=True):
                    check(p.grad, r.grad)
                    check(p.detach(), r.detach())
                    check(v, sgd.state[r]["momentum_buffer"])
        task.run()
        task._synchronize()
        with torch.no_grad():
            ref_scores = reference(ref_q)
        check(task.scores, ref_scores)
        predictions_match = bool(torch.equal(task.predictions, torch.argmax(ref_scores, dim=1)))
        state["ok"] &= predictions_match
        for p, v, r in zip(task.params, task.velocity, ref_params, strict=True):
            check(p.detach(), r.detach())
            check(p.grad, r.grad)
            check(v, sgd.state[r]["momentum_buffer"])
        keys = ("final_parameter_sha256", "final_velocity_sha256", "scores_sha256", "predictions_sha256")
        first_hashes = task.state_hashes()
        task.run()
        second_hashes = task.state_hashes()
        repeatable = all(first_hashes[k] == second_hashes[k] for k in keys)
        audit = _saved_audit(task.model, task.x[:3])
        case_ok = repeatable and predictions_match and audit["ok"]
        state["ok"] &= case_ok
        cases.append({"depth": depth, "config": cfg, "passed": bool(case_ok and state["ok"]),
                      "epochs": cfg["epochs"], "batch_sizes": [end - first for first, end in task.batches],
                      "complete_replay_byte_repeatable": repeatable,
                      "predictions_match_independent_eager": predictions_match,
                      "saved_core_activation_storages": audit["storages"],
                      "saved_core_activation_bytes": audit["bytes"],
                      "saved_parameter_references": audit["references"]})
    dev = torch.device(device)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    return {"passed": bool(state["ok"]), "device": name, "captured_graphs": dev.type == "cuda",
            "checks": state["checks"], "maximum_abs_error": state["max_err"], "tolerance": dict(REPLAY_TOLERANCE),
            "cases": cases, "scope": REPLAY_SCOPE}


__all__ = ["FROZEN_CONFIG", "STATE_HASH_KEYS", "INPUT_KEYS", "normalise_config", "validate_inputs",
           "ReversibleCore", "ReversibleMLP", "build_model", "epoch_orders", "PreparedTask", "prepare_task",
           "train_predict", "cpu_reconstruction_selftest", "validate_cuda_replay"]
