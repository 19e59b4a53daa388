"""``rev88-fused``: the frozen rev88 learner's training and prediction as two Triton kernel launches.

Same model, data handling, initialisation and epoch orders as :mod:`bundle.learner` (the
initial weights come from :func:`bundle.learner.build_model`, the orders from
:func:`bundle.learner.epoch_orders`, so ``initial_parameter_sha256`` and
``epoch_permutation_sha256`` are the frozen ones). One invocation (:meth:`FusedTask.run`) is

1. training, by one of two kernels (``FusedTask(ctas=G)``):

   * ``ctas=1``: one launch of :func:`bundle.fused_kernels.train_kernel` with a single program:
     reset from the initial copy, then all 158 momentum-SGD updates (2 epochs × 79 batches of
     128, the last of 16) by that one CTA, its weights, velocities and staging tiles in a small
     work buffer (bundle/fused_kernels.py, "Layouts"), the current batch's activations in registers;
   * ``ctas=G >= 2`` (measured :data:`GRID_TRAIN_CTAS` = 8, chosen per host with
     ``$REV88_FUSED_CTAS``, :func:`train_ctas_from_env`; on an H200 2.8x faster than ``ctas=1`` with
     all 11 draws bit-equal, but more idle-adjusted mJ/task, so ``ctas=1`` stays the default):
     :func:`bundle.fused_kernels.grid_train_kernel`
     over G programs, each batch's rows split between them (cdiv(batch, G) rows each): partial
     gradients per program, a grid barrier, then every program sums the G partials in the same
     order and updates its own copy of the state. On the GPU that is a memset of the barrier's
     counter plus ONE launch; in triton's interpreter (programs run one after another, a spin
     barrier cannot work) one launch per step, the launch boundaries standing in for the barrier
     (the kernel's docstring has the protocol and what differs between the two modes);

2. one launch of :func:`bundle.fused_kernels.predict_kernel` over blocks of query rows.

The arithmetic is float32 throughout and no product uses TF32, but the summation order of
the products differs from cuBLAS's and from the CPU's (and on the GPU triton may contract a
multiply and an add into one FMA, its default), so final parameters, velocities and scores
are not the frozen learner's bits; predictions are compared with the frozen ones
(tests/test_fused_learner.py; on an H200: docs/results/fused-learner.md). Products are summed on the GPU in
slices of 16 over features (48 of the 64 padded columns: the rest is zero padding, skipped
bit-exactly) and 32 over batch rows, and whole in the interpreter (compile-time constants of the
same code: each slice costs interpreter time), so the interpreter's bits are not the GPU's either. The multi-CTA
kernel sums every gradient over its G row blocks first and then over the blocks (in program
order), so its bits are not the single-CTA kernel's either; again only predictions are compared.

Why Triton: the kernels are Python-level code (``bundle/fused_kernels.py``) that PyTorch's
CUDA wheels already ship a compiler for (no CUDA toolkit or C++ extension build), and
triton's interpreter (``TRITON_INTERPRET=1``) runs the exact same kernel functions on CPU
tensors, which gives a CPU reference of the very code that runs on the GPU.

Interpreter mode is fixed when :mod:`bundle.fused_kernels` is first imported (triton reads
``TRITON_INTERPRET`` when it decorates the kernels): set it in the environment before that,
e.g. in a fresh process. ``device="cpu"`` needs it on, ``device="cuda"`` needs it off.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch

from bundle.jobs import FUSED_DEFAULT_CTAS, FUSED_PRECISIONS, fused_product_precision, fused_train_programs
from bundle.learner import (
    FROZEN_CONFIG,
    HALF,
    INPUT_KEYS,
    STATE_HASH_KEYS,
    build_model,
    epoch_orders,
    normalise_config,
    task_metadata,
    validate_inputs,
)
from protocol.data import array_sha256
from protocol.errors import BundleError
from protocol.learners import FUSED_LEARNER, FUSED_TIMING_SCOPE

LEARNER_NAME = FUSED_LEARNER
KERNEL_SOURCE = Path(__file__).resolve().parent / "fused_kernels.py"
CLASSES = 10
HALF_TILE = 64            # register tile width of a 41-wide half
CLASS_TILE = 16           # register tile width of the 10 classes
GPU_PRODUCT_SLICE = 32    # summed-axis slice per tl.dot over batch rows on the GPU (bundle/fused_kernels.py, "Products")
GPU_FEATURE_SLICE = 16    # ... and over features: 48 of the 64 tile columns summed (measured on an H200, draw 0:
                          # ctas=1 21.9 ms/task against 25.2 with 32; G=8 7.6 against 9.3; docs/results/fused-learner.md)
PRODUCT_SLICES = (16, 32, 64)  # the slices a FusedTask accepts (tl.dot needs >= 16; a half tile is 64)
PRODUCT_PRECISIONS = FUSED_PRECISIONS  # tl.dot input_precision of every product (bundle/fused_kernels.py, "Products")
DEFAULT_PRODUCT_PRECISION = PRODUCT_PRECISIONS[0]  # "ieee": float32 multiply-adds, the frozen procedure's arithmetic
TF32X3_CTAS = (1, 8)      # training-program counts at which "tf32x3" was measured on an H200 (triton 3.6.0:
                          # all 11 draws' predictions the frozen ones; ctas=2 hit an illegal memory access)
PREDICT_BLOCK = 128       # query rows per program of the predict kernel
PREDICT_WARPS = 8
MAX_BATCH_TILE = 256
DEFAULT_TRAIN_WARPS = 8   # warps of the single-CTA training program (ctas=1)
DEFAULT_TRAIN_CTAS = FUSED_DEFAULT_CTAS  # 1 training program by default: the single-CTA kernel, the least idle-adjusted mJ/task measured
GRID_TRAIN_CTAS = 8       # the multi-CTA kernel's measured G (REV88_FUSED_CTAS=8): 8 × 16 rows of a 128-row batch,
                          # 11 draws bit-equal and 2.8x faster on an H200, but more idle-adjusted mJ/task (docs/results/fused-learner.md)
DEFAULT_GRID_WARPS = 8    # warps of each multi-CTA training program (no spills in an offline sm_90 compile; 4 spill)
GRID_REDUCE_BLOCK = 1024  # floats per chunk of the multi-CTA update loop on the GPU (whole state in the interpreter)
GRID_SPIN_LIMIT = 1 << 22  # counter reads before a grid-barrier wait gives up (seconds on an H200, not minutes)
GRID_TIMED_OUT = 1 << 30   # the counter value a wait that gave up sets (fused_kernels._grid_barrier)
TIMING_SCOPE = FUSED_TIMING_SCOPE  # defined in protocol/learners.py, which the verifier reads too

__all__ = ["LEARNER_NAME", "DEFAULT_TRAIN_CTAS", "GRID_TRAIN_CTAS", "FusedTask", "train_ctas_from_env",
           "product_precision_from_env", "PRODUCT_PRECISIONS", "kernel_source_sha256", "interpreter_active",
           "triton_version", "work_floats", "grid_work_floats", "grid_shape", "grid_state_map"]


def kernel_source_sha256() -> str:
    """sha256 (hex) of the bytes of ``bundle/fused_kernels.py``, the file that holds both kernels."""
    return hashlib.sha256(KERNEL_SOURCE.read_bytes()).hexdigest()


def _kernels():
    """Import :mod:`bundle.fused_kernels` (and triton).

    Raises:
        BundleError: triton is not importable.
    """
    try:
        from bundle import fused_kernels  # noqa: PLC0415
    except ImportError as exc:
        raise BundleError(f"the fused learner needs triton, which is not importable ({exc}): "
                          "install torch's CUDA wheel (it ships triton) or pip install triton") from None
    return fused_kernels


def interpreter_active() -> bool:
    """True when the kernels were decorated in triton's interpreter mode (``TRITON_INTERPRET=1``).

    Raises:
        BundleError: triton is not importable.
    """
    from triton.runtime.interpreter import InterpretedFunction  # noqa: PLC0415

    return isinstance(_kernels().train_kernel, InterpretedFunction)


def triton_version() -> str | None:
    """``triton.__version__``, or None when triton is not importable."""
    try:
        import triton  # noqa: PLC0415
    except ImportError:
        return None
    return triton.__version__


def _version_tuple(version: str | None) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version or "0")[:2])


def work_floats(batch_tile: int) -> int:
    """float32 elements of the training program's work buffer (layout in bundle/fused_kernels.py)."""
    tiles = 4 * HALF_TILE * HALF_TILE + CLASS_TILE * 2 * HALF_TILE + CLASS_TILE
    return 2 * tiles + 2 * batch_tile * HALF_TILE + batch_tile * CLASS_TILE


STATE_TILES = 4 * HALF_TILE * HALF_TILE + CLASS_TILE * 2 * HALF_TILE + CLASS_TILE  # padded tile floats of a state
STATE_FLAT = 4 * HALF * HALF + CLASSES * 2 * HALF + CLASSES                         # 7554 live floats


def grid_shape(batch_size: int, programs: int, interpreted: bool) -> dict:
    """Compile-time shape of the multi-CTA kernel for *programs* programs (G >= 1 here; the host uses G >= 2).

    Returns a dict: ``rows`` batch rows per program (cdiv(batch_size, G)), ``block_rows`` their
    tile (power of two >= 16), ``reduce_block`` floats per reset/update chunk
    (:data:`GRID_REDUCE_BLOCK` on the GPU; in the interpreter, where each chunk costs interpreter
    time, 7554 rounded up to a power of two), ``state`` floats per state copy
    (:data:`STATE_TILES` rounded up to a multiple of ``reduce_block``), ``cstate`` floats per
    compact partial gradient (:data:`STATE_FLAT` rounded up likewise).
    """
    rows = -(-batch_size // programs)
    red = _next_pow2(STATE_FLAT) if interpreted else GRID_REDUCE_BLOCK
    return {"rows": rows, "block_rows": max(16, _next_pow2(rows)), "reduce_block": red,
            "state": -(-STATE_TILES // red) * red, "cstate": -(-STATE_FLAT // red) * red}


def grid_work_floats(programs: int, block_rows: int, state: int, cstate: int) -> int:
    """float32 elements of the multi-CTA work buffer: per program 2·state + 2·block_rows·64 + block_rows·16,
    then the partial gradients (2 parities × programs × cstate); layout in ``grid_train_kernel``."""
    region = 2 * state + 2 * block_rows * HALF_TILE + block_rows * CLASS_TILE
    return programs * region + 2 * programs * cstate


def grid_state_map(cstate: int) -> np.ndarray:
    """int32 (cstate,): the padded-tile offset (bundle/fused_kernels.py, "Layouts") of every state-vector
    index 0…7553 (spec 3 order: weights.0…3 41×41 row-major, head.weight 10×82, head.bias), then, for
    the pad entries, distinct padding slots of the first weight tile (rows 41…63, always zero).

    Raises:
        BundleError: *cstate* below 7554 or with more pad entries than those padding rows hold.
    """
    pad = cstate - STATE_FLAT
    if pad < 0 or pad > (HALF_TILE - HALF) * HALF_TILE:
        raise BundleError(f"grid_state_map: cstate {cstate} outside [{STATE_FLAT}, "
                          f"{STATE_FLAT + (HALF_TILE - HALF) * HALF_TILE}]")
    r, c = np.divmod(np.arange(HALF * HALF), HALF)
    weights = [b * HALF_TILE * HALF_TILE + r * HALF_TILE + c for b in range(4)]
    cls, feature = np.divmod(np.arange(CLASSES * 2 * HALF), 2 * HALF)
    head_base = 4 * HALF_TILE * HALF_TILE
    head = head_base + cls * 2 * HALF_TILE + np.where(feature < HALF, feature, HALF_TILE + feature - HALF)
    bias = head_base + CLASS_TILE * 2 * HALF_TILE + np.arange(CLASSES)
    padding = HALF * HALF_TILE + np.arange(pad)
    return np.concatenate([*weights, head, bias, padding]).astype(np.int32)


def feature_extent(feature_slice: int) -> int:
    """Features summed by a product over features (the kernels' ``KP``): the smallest multiple of
    *feature_slice* that is >= 41, e.g. 48 for 16 and 64 for 32 or 64 (bundle/fused_kernels.py, "Products")."""
    return -(-HALF // feature_slice) * feature_slice


def _host(t: torch.Tensor) -> np.ndarray:
    return t.detach().to("cpu").contiguous().numpy()


def _next_pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def train_ctas_from_env(environ: Mapping[str, str] | None = None) -> int:
    """The training programs (CTAs) a fixture process gives :class:`FusedTask`.

    ``$REV88_FUSED_CTAS`` (:data:`bundle.jobs.FUSED_CTAS_ENV`) when set, else
    :data:`DEFAULT_TRAIN_CTAS`. Every record of the learner names what ran (its ``learner`` block's
    ``train_programs``), and the verifier requires one value across an archive.

    Args:
        environ: the environment to read (default ``os.environ``).

    Returns:
        A positive int.

    Raises:
        BundleError: the variable is set but not a plain decimal from 1 to 999 (the GPU path also
            refuses more than the SM count, in :class:`FusedTask`).
    """
    return fused_train_programs(environ)


def product_precision_from_env(environ: Mapping[str, str] | None = None) -> str:
    """The product precision a fixture process gives :class:`FusedTask`: ``$REV88_FUSED_PRECISION``
    (:data:`bundle.jobs.FUSED_PRECISION_ENV`) when set, else :data:`DEFAULT_PRODUCT_PRECISION`.
    Records name it (``learner.product_precision``) and the verifier requires one value per archive.

    Raises:
        BundleError: set to anything but one of :data:`PRODUCT_PRECISIONS`.
    """
    return fused_product_precision(environ)


class FusedTask:
    """A prepared fused invocation: resident inputs, orders, flat parameter state, compiled kernels.

    Args:
        train_images: float32 (N, 1, 9, 9) in [0, 1].
        train_labels: integer (N,) in 0…9.
        test_images: float32 (M, 1, 9, 9) in [0, 1].
        config: learner config (default :data:`bundle.learner.FROZEN_CONFIG`), normalised as
            :func:`bundle.learner.normalise_config`; depth must be 2 and batch_size <= 256.
        device: ``"cuda"`` (compiled kernels; interpreter off) or ``"cpu"`` (triton's
            interpreter; ``TRITON_INTERPRET=1`` set before :mod:`bundle.fused_kernels` was imported).
        num_warps: warps of each training program (GPU only; the interpreter ignores it); default
            :data:`DEFAULT_TRAIN_WARPS` for ``ctas=1``, :data:`DEFAULT_GRID_WARPS` otherwise.
        ctas: training programs (CTAs), a positive int, default :data:`DEFAULT_TRAIN_CTAS`. 1 runs
            :func:`bundle.fused_kernels.train_kernel` (one program, unchanged); G >= 2 runs
            :func:`bundle.fused_kernels.grid_train_kernel` with G programs, which wait for each
            other at a grid barrier every step and so must all be resident at once: on the GPU G
            must not exceed the SM count (132 on an H200; one program always fits on an SM, and
            nothing else may hold SMs for long while it runs).
        feature_slice, row_slice: summed-axis slice of every tl.dot over features and over batch
            rows, one of :data:`PRODUCT_SLICES` (rows capped at the row tile; the record names the
            capped value); default on the GPU :data:`GPU_FEATURE_SLICE` over features and
            :data:`GPU_PRODUCT_SLICE` over rows, in the interpreter the whole sum. Products over
            features sum :func:`feature_extent` (feature_slice) columns. Measured on an H200: with
            one program the final bits did not depend on the slicing (16/48 and 32/64 gave the same
            state hashes: the skipped padding adds exact zeros, and triton's FMA products add the
            terms in the same order either way); with 8 programs they did, predictions did not.
            Records name the slicing (metadata ``learner.product_slices``).
        product_precision: ``tl.dot``'s input_precision for every product, one of
            :data:`PRODUCT_PRECISIONS`; default :data:`DEFAULT_PRODUCT_PRECISION` (``"ieee"``, the
            frozen procedure's float32 multiply-adds). ``"tf32x3"`` (tensor cores, a three-term TF32
            split of each operand, float32 accumulation) is other arithmetic: on the GPU only at
            ``ctas`` in :data:`TF32X3_CTAS`, the counts measured (docs/results/fused-learner.md); in the
            interpreter as triton's interpreter computes it. Records name it
            (metadata ``learner.product_precision``).

    Attributes (all on ``device``):
        initial, params, velocity: float32 (7554,), state-vector order of spec 3.
        work: float32, the training programs' padded state and staging tiles (:func:`work_floats` (1,)
            for ``ctas=1``, :func:`grid_work_floats` otherwise, program 0's parameter tiles first).
        barrier_count: int32 (1,), the grid barrier's arrival counter (``ctas >= 2``, else None;
            zeroed by every :meth:`train`).
        state_map: int32, :func:`grid_state_map` (``ctas >= 2``, else None).
        scratch: float32 (cdiv(M, 128)·128·64,), the predict programs' staging tiles.
        raw: float32 (N, 81); raw_query: float32 (M, 81); labels: int64 (N,);
        orders: int64 (epochs, N); scores: float32 (M, 10); predictions: int64 (M,).

    Raises:
        BundleError: bad inputs or config, triton missing, CUDA unavailable, wrong interpreter mode,
            ctas not a positive int or (GPU) more than the SM count, product_precision unknown
            or (GPU) "tf32x3" at an unmeasured ctas.
    """

    def __init__(self, train_images, train_labels, test_images, config=None, *, device: str = "cuda",
                 num_warps: int | None = None, ctas: int = DEFAULT_TRAIN_CTAS, feature_slice: int | None = None,
                 row_slice: int | None = None, product_precision: str | None = None) -> None:
        started = time.perf_counter()
        self.config = normalise_config(FROZEN_CONFIG if config is None else config)
        cfg = self.config
        if cfg["depth"] != 2 or cfg["batch_size"] > MAX_BATCH_TILE:
            raise BundleError(f"the fused learner supports depth 2 and batch_size <= {MAX_BATCH_TILE} only (got "
                              f"depth {cfg['depth']}, batch_size {cfg['batch_size']}): use bundle.learner")
        if isinstance(ctas, bool) or not isinstance(ctas, int | np.integer) or ctas < 1:
            raise BundleError(f"ctas must be a positive int, the training programs (got {ctas!r})")
        ctas = int(ctas)
        if num_warps is None:
            num_warps = DEFAULT_TRAIN_WARPS if ctas == 1 else DEFAULT_GRID_WARPS
        if num_warps not in (1, 2, 4, 8, 16, 32):
            raise BundleError(f"num_warps must be a power of two from 1 to 32 (got {num_warps!r})")
        for what, value in (("feature_slice", feature_slice), ("row_slice", row_slice)):
            if value is not None and (isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer)
                                      or int(value) not in PRODUCT_SLICES):
                raise BundleError(f"{what} must be one of {PRODUCT_SLICES} (got {value!r})")
        precision = DEFAULT_PRODUCT_PRECISION if product_precision is None else product_precision
        if precision not in PRODUCT_PRECISIONS:
            raise BundleError(f"product_precision must be one of {PRODUCT_PRECISIONS} (got {product_precision!r})")
        arrays = validate_inputs(dict(zip(INPUT_KEYS, (train_images, train_labels, test_images), strict=True)))
        if device not in ("cuda", "cpu"):
            raise BundleError(f"unsupported device {device!r} for the fused learner: use cuda or cpu")
        self._kernels = _kernels()
        interpreted = interpreter_active()
        if interpreted and _version_tuple(triton_version()) < (3, 2) and _version_tuple(np.__version__) >= (2, 0):
            raise BundleError(f"triton {triton_version()}'s interpreter drops every store under numpy "
                              f"{np.__version__} (measured; 3.2.0 and later work): use triton >= 3.2 or numpy < 2")
        if device == "cpu" and not interpreted:
            raise BundleError("device cpu needs triton's interpreter: set TRITON_INTERPRET=1 before "
                              "bundle.fused_kernels is imported (e.g. in a fresh process)")
        if device == "cuda" and interpreted:
            raise BundleError("device cuda with TRITON_INTERPRET=1 would run the interpreter: unset "
                              "TRITON_INTERPRET in a fresh process")
        if device == "cuda" and not torch.cuda.is_available():
            raise BundleError("device cuda requested but torch sees no CUDA GPU: use a GPU host")
        if device == "cuda":
            sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
            if ctas > sms:
                raise BundleError(f"ctas={ctas} exceeds the {sms} SMs of this GPU: the grid barrier needs every "
                                  "training program resident at once; use ctas <= the SM count")
        if device == "cuda" and precision == "tf32x3" and ctas not in TF32X3_CTAS:
            raise BundleError(f"product precision tf32x3 was measured at ctas {TF32X3_CTAS} only (ctas=2 hit an "
                              f"illegal memory access on an H200 with triton 3.6.0); got ctas={ctas}: use one of "
                              f"those or product precision ieee")
        self.product_precision = precision
        self.device = torch.device(device)
        self.num_warps = int(num_warps)
        self.ctas = ctas
        self.interpreted = interpreted
        self._prepare_resident(arrays)
        self.batch_tile = max(16, _next_pow2(cfg["batch_size"]))
        # summed-axis slices: on the GPU 16 over features, 32 over rows (measured fastest); whole
        # sums in the interpreter, where each slice costs interpreter overhead (same code, other
        # compile-time constants)
        if feature_slice is None:
            feature_slice = HALF_TILE if interpreted else GPU_FEATURE_SLICE
        self.feature_slice = int(feature_slice)
        self.feature_extent = feature_extent(self.feature_slice)
        self.row_slice = self.batch_tile if interpreted else min(GPU_PRODUCT_SLICE, self.batch_tile)
        self.grid = None if ctas == 1 else grid_shape(cfg["batch_size"], ctas, interpreted)
        if self.grid is None:
            self.work = torch.zeros(work_floats(self.batch_tile), dtype=torch.float32, device=self.device)
        else:
            rows = self.grid["block_rows"]
            self.row_slice = rows if interpreted else min(GPU_PRODUCT_SLICE, rows)
            self.work = torch.zeros(grid_work_floats(ctas, rows, self.grid["state"], self.grid["cstate"]),
                                    dtype=torch.float32, device=self.device)
        if row_slice is not None:
            self.row_slice = min(int(row_slice), self.batch_tile if self.grid is None else self.grid["block_rows"])
        self.barrier_count = None if self.grid is None else torch.zeros(1, dtype=torch.int32, device=self.device)
        self.state_map = None if self.grid is None else torch.from_numpy(grid_state_map(self.grid["cstate"])).to(
            self.device)
        self._barrier_expected = 0
        self.steps = cfg["epochs"] * triton_cdiv(self.train_count, cfg["batch_size"])
        blocks = triton_cdiv(self.test_count, PREDICT_BLOCK)
        self.scratch = torch.zeros(blocks * PREDICT_BLOCK * HALF_TILE, dtype=torch.float32, device=self.device)
        self.run_count = 0
        self.preparation_seconds = time.perf_counter() - started

    def _prepare_resident(self, arrays: tuple) -> None:
        """Hashes, initial parameters (:func:`bundle.learner.build_model`), epoch orders and the resident
        inputs and outputs on ``self.device`` (the attributes listed in the class docstring); *arrays* as
        returned by :func:`bundle.learner.validate_inputs`. Shared by every kernel tool's task."""
        cfg = self.config
        self.input_hashes = {k: array_sha256(a) for k, a in zip(INPUT_KEYS, arrays, strict=True)}
        model = build_model(cfg["depth"], cfg["alpha"], cfg["seed"])
        self.parameter_names = [name for name, _ in model.named_parameters()]
        self.parameter_shapes = [tuple(p.shape) for _, p in model.named_parameters()]
        self.initial_parameter_sha256 = {n: array_sha256(_host(p)) for n, p in model.named_parameters()}
        flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        self.initial = flat.to(self.device)
        self.params = torch.empty_like(self.initial)
        self.velocity = torch.empty_like(self.initial)
        train_x, labels, query = arrays
        self.train_count, self.test_count = len(train_x), len(query)
        self.raw = torch.from_numpy(train_x.reshape(self.train_count, 81).copy()).to(self.device)
        self.raw_query = torch.from_numpy(query.reshape(self.test_count, 81).copy()).to(self.device)
        self.labels = torch.from_numpy(labels.astype(np.int64)).to(self.device)
        orders = epoch_orders(self.train_count, cfg["epochs"], cfg["seed"])
        self.epoch_permutation_sha256 = [array_sha256(row) for row in orders]
        self.orders = torch.from_numpy(orders).to(self.device)
        self.predictions = torch.empty(self.test_count, dtype=torch.int64, device=self.device)
        self.scores = torch.empty((self.test_count, CLASSES), dtype=torch.float32, device=self.device)

    def train(self) -> None:
        """Launch the training: reset params/velocity from ``initial``, then every update.

        ``ctas=1``: one ``train_kernel`` launch. ``ctas >= 2``: zero the barrier counter, then one
        ``grid_train_kernel`` launch on the GPU, or steps + 1 launches in the interpreter.
        """
        if self.grid is not None:
            self._train_grid(self.ctas, barrier=not self.interpreted)
            return
        cfg = self.config
        self._kernels.train_kernel[(1,)](
            self.initial, self.params, self.velocity, self.work, self.raw, self.labels, self.orders,
            cfg["alpha"], cfg["momentum"], -cfg["learning_rate"], cfg["weight_decay"],
            N_TRAIN=self.train_count, EPOCHS=cfg["epochs"], BATCH=cfg["batch_size"], BLOCK_B=self.batch_tile,
            P=HALF_TILE, KP=self.feature_extent, C=CLASS_TILE, KF=self.feature_slice, KR=self.row_slice,
            HALF=HALF, NCLS=CLASSES, PREC=self.product_precision, num_warps=self.num_warps)

    def _train_grid(self, programs: int, barrier: bool) -> None:
        """The multi-CTA training with *programs* programs; *barrier*: one launch with the grid barrier.

        ``train`` passes (ctas, not interpreted). Other pairs are for tests: (1, True) runs the
        barrier code in the interpreter (one program never waits); ``programs`` must give the same
        tile shape as ``ctas`` (the buffers are sized for it).

        Raises:
            BundleError: *programs* out of range or of another tile shape than ``ctas``.
        """
        cfg = self.config
        shape = grid_shape(cfg["batch_size"], programs, self.interpreted)
        keys = ("block_rows", "state", "cstate")
        if self.grid is None or not 1 <= programs <= self.ctas or {k: shape[k] for k in keys} != {
                k: self.grid[k] for k in keys}:
            raise BundleError(f"grid training with {programs} programs does not fit buffers sized for ctas={self.ctas}")
        self.barrier_count.zero_()
        segments = [(0, self.steps)] if barrier else [(k, min(k + 1, self.steps)) for k in range(self.steps + 1)]
        for begin, end in segments:
            self._kernels.grid_train_kernel[(programs,)](
                self.initial, self.params, self.velocity, self.work, self.barrier_count, self.state_map, self.raw,
                self.labels, self.orders, cfg["alpha"], cfg["momentum"], -cfg["learning_rate"], cfg["weight_decay"],
                N_TRAIN=self.train_count, EPOCHS=cfg["epochs"], BATCH=cfg["batch_size"], G=programs,
                ROWS=shape["rows"], BLOCK_R=shape["block_rows"], STATE=shape["state"], CSTATE=shape["cstate"],
                RED=shape["reduce_block"],
                P=HALF_TILE, KP=self.feature_extent, C=CLASS_TILE, KF=self.feature_slice, KR=self.row_slice,
                HALF=HALF, NCLS=CLASSES,
                STEP_BEGIN=begin, STEP_END=end, FINAL=barrier or begin == self.steps, BARRIER=barrier,
                SPIN_LIMIT=GRID_SPIN_LIMIT, TIMED_OUT=GRID_TIMED_OUT, PREC=self.product_precision,
                num_warps=self.num_warps)
        self._barrier_expected = self.steps * programs if barrier else 0

    def barrier_check(self) -> None:
        """Raise if the last multi-CTA training's barrier counter is not steps × programs (0 without a barrier).

        Synchronises. A wait that gave up (:data:`GRID_SPIN_LIMIT`) leaves it >= :data:`GRID_TIMED_OUT`.

        Raises:
            BundleError: the counter is off (programs not co-resident, or a broken barrier).
        """
        if self.grid is None or self.run_count == 0:
            return
        got = int(_host(self.barrier_count)[0])
        if got != self._barrier_expected:
            why = "a grid-barrier wait gave up" if got >= GRID_TIMED_OUT else "the arrivals do not add up"
            raise BundleError(f"multi-CTA training is invalid: barrier counter {got}, expected "
                              f"{self._barrier_expected} ({why}; are all {self.ctas} programs resident at once?)")

    def predict(self) -> None:
        """Launch the predict kernel: ``scores`` (M, 10) float32 logits, ``predictions`` (M,) int64.

        It reads the trained parameter tiles that :meth:`train` leaves in ``work``.
        """
        grid = (triton_cdiv(self.test_count, PREDICT_BLOCK),)
        self._kernels.predict_kernel[grid](
            self.work, self.scratch, self.raw_query, self.scores, self.predictions, self.test_count,
            self.config["alpha"], BLOCK_Q=PREDICT_BLOCK, P=HALF_TILE, KP=self.feature_extent, C=CLASS_TILE,
            KF=self.feature_slice, HALF=HALF,
            NCLS=CLASSES, PREC=self.product_precision, num_warps=PREDICT_WARPS)

    def reset(self) -> None:
        """Nothing to do: the training launch itself restores ``params``/``velocity`` from ``initial``.

        Present so the fixture's training-scope profile (reset, then :meth:`train_sequence` in the
        range) runs this learner; for it the reset lies inside the training launch, so inside the range.
        """

    def train_sequence(self) -> None:
        """Every epoch of training (one launch, which starts with the reset), no prediction."""
        self.train()

    def run(self) -> None:
        """One invocation = train + predict (asynchronous on CUDA; the first call also compiles)."""
        self.train()
        self.predict()
        self.run_count += 1

    def _synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def _named_views(self, flat: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
        views, start = [], 0
        for name, shape in zip(self.parameter_names, self.parameter_shapes, strict=True):
            size = int(np.prod(shape))
            views.append((name, flat[start:start + size].view(shape)))
            start += size
        return views

    def state_hashes(self) -> dict:
        """The eight hash fields in :data:`bundle.learner.STATE_HASH_KEYS` order, defined as
        :meth:`bundle.learner.PreparedTask.state_hashes` (synchronises)."""
        self._synchronize()
        params = _host(self.params)
        hashes = {
            "input_hashes": dict(self.input_hashes),
            "initial_parameter_sha256": dict(self.initial_parameter_sha256),
            "epoch_permutation_sha256": list(self.epoch_permutation_sha256),
            "final_parameter_sha256": {n: array_sha256(_host(v)) for n, v in self._named_views(self.params)},
            "final_velocity_sha256": {n: array_sha256(_host(v)) for n, v in self._named_views(self.velocity)},
            "state_vector_sha256": array_sha256(params),
            "predictions_sha256": array_sha256(_host(self.predictions)),
            "scores_sha256": array_sha256(_host(self.scores)),
        }
        assert tuple(hashes) == STATE_HASH_KEYS
        return hashes

    def outputs(self) -> tuple[np.ndarray, dict]:
        """Synchronise and return (predictions int64 (M,), metadata).

        The metadata has the keys of :meth:`bundle.learner.PreparedTask.outputs` in the same
        order (``validation`` is None: no self-test runs), then ``learner`` (name, kernel
        source sha256, triton version, interpreter flag, training programs (``ctas``) and warps
        of each, the summed-axis slices of its products).

        Raises:
            BundleError: no invocation ran yet, the grid barrier failed (:meth:`barrier_check`), or a
                score or parameter is not finite.
        """
        if self.run_count == 0:
            raise BundleError("FusedTask.outputs() before run(): call run() first")
        self._synchronize()
        self.barrier_check()
        predictions, scores = _host(self.predictions).copy(), _host(self.scores)
        if not np.isfinite(scores).all() or not np.isfinite(_host(self.params)).all():
            raise BundleError("Nonfinite scores or model state after training: the run diverged; check inputs/config")
        h = self.state_hashes()
        metadata = task_metadata(self.config, self.initial.numel(), self.train_count, self.test_count, h,
                                 self.preparation_seconds, self.run_count, None, TIMING_SCOPE)
        metadata |= {"learner": self.learner_block()}
        return predictions, metadata

    def learner_block(self) -> dict:
        """The record's ``learner`` block: name, kernel source sha256, triton version, interpreter flag,
        training programs (``ctas``) and warps of each, the summed-axis slices of the products and
        their precision (docs/evidence-format.md)."""
        return {"name": LEARNER_NAME, "kernel_source_sha256": kernel_source_sha256(),
                "triton_version": triton_version(), "interpreter": self.interpreted,
                "train_programs": self.ctas, "train_num_warps": self.num_warps,
                "product_slices": {"features": self.feature_slice, "rows": self.row_slice,
                                   "feature_extent": self.feature_extent},
                "product_precision": self.product_precision}

    def named_tensors(self) -> list[tuple[str, torch.Tensor]]:
        """Named resident tensors: per-parameter views of ``params`` (``parameters.<name>``), then
        ``initial``, ``velocity``, ``work``, ``scratch``, raw, raw_query, labels, orders, predictions, scores,
        and ``barrier_count``, ``state_map`` when ``ctas >= 2``."""
        named = [(f"parameters.{n}", v) for n, v in self._named_views(self.params)]
        named += [(n, getattr(self, n)) for n in ("initial", "velocity", "work", "scratch", "raw", "raw_query",
                                                  "labels", "orders", "predictions", "scores")]
        if self.grid is not None:
            named += [("barrier_count", self.barrier_count), ("state_map", self.state_map)]
        return named


def triton_cdiv(a: int, b: int) -> int:
    """Ceiling division of positive ints (as ``triton.cdiv``)."""
    return -(-a // b)
