"""``rev88-fused`` with kernel tool ``cuda``: the frozen procedure as two CUDA C++ kernel launches.

The kernels are ``bundle/fused_cuda.cu`` (its header comment has the schedule), compiled at run time
by NVRTC through CuPy's :class:`cupy.RawModule`. Same model, initialisation, epoch orders and
resident inputs as :class:`bundle.fused_learner.FusedTask` (this class derives from it and shares
its preparation, hashes and outputs); what differs is the kernels:

* training, ``rev88_train``: one launch of G blocks (``ctas``) of 32 x ``warps`` threads, each
  keeping a whole copy of the 7,554 parameters (every weight twice, as is and transposed) and its
  rows' activations in shared memory, feature-major (44 feature rows of the rows rounded up to 32,
  or of 16 rows for blocks of up to 16 rows, plus 4); velocities in registers; products as 4 x 4
  register tiles of scalar float32 FMAs, a warp per 16 features x 32 rows (with 16-row arrays 4 x 2
  tiles, a warp per 16 x 16: the same sums in the same order); per step a partial gradient per block, a barrier, then the G partials
  summed in block order (every block for its own copy, or with ``split`` each block a slice,
  published at a second barrier). With 2 to 8 blocks on sm_90 on (``cluster``) the blocks are one
  thread-block cluster: the partials and published slices stay in the blocks' shared memory and are
  read over distributed shared memory, 16 bytes at a time; otherwise they go through global memory
  and an atomic grid barrier;
* prediction, ``rev88_predict``: blocks of :data:`PREDICT_ROWS` query rows.

Why CUDA C++ through CuPy: the Triton kernels (kernel tool ``triton``) stage every product through
global memory in padded 64-wide tiles and spill registers (docs/results/fused-learner.md); here the
shared-memory layout, the thread mapping and the barrier are written out. CuPy
compiles with NVRTC at run time, so no CUDA toolkit or C++ extension build is needed on the host,
and its kernels take torch's CUDA tensors zero-copy (``__cuda_array_interface__``), so every buffer
is a torch allocation and ``torch.cuda.max_memory_allocated`` sees all of them.

The summation order differs from every other implementation, so final parameters and scores are
not their bits; only predictions are compared with the frozen ones. :func:`reference_train` is
the CPU reference of this kernel's step schedule (numpy float32, the same row blocks and the same
order of the partial sums; numpy's own product order inside a block).
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np
import torch

from bundle.fused_learner import LEARNER_NAME, FusedTask, triton_cdiv
from bundle.learner import FROZEN_CONFIG, HALF, INPUT_KEYS, normalise_config, validate_inputs
from protocol.errors import BundleError

KERNEL_TOOL = "cuda"
KERNEL_SOURCE = Path(__file__).resolve().parent / "fused_cuda.cu"
STATE = 4 * HALF * HALF + 10 * 2 * HALF + 10   # 7554 floats, state-vector order of spec 3
PARTIAL_STRIDE = 7556     # floats between a cluster block's two shared partial buffers (fused_cuda.cu PSTR: STATE
                          # rounded up to 4, so that both buffers allow 16-byte distributed-shared-memory reads)
EXCHANGES = ("pull", "push")   # how the split cluster update moves partials and new parameters (CudaFusedTask)
DEFAULT_EXCHANGE = "pull"      # every archive; "push" (fused_cuda.cu PUSH): the same bits, slower on an H200 (README)
PADDED_STATE = 7568      # the state in five regions padded to quads (fused_cuda.cu PPAD: branch weights 1,684 floats
                          # each, head and bias 832), the pushed exchange's order
FEATURE_ROWS = 44         # feature rows of a shared activation array (41 live; fused_cuda.cu FR)
WEIGHT_STRIDE = 44        # row stride of a shared weight copy (fused_cuda.cu WS: 41 live, 3 zero)
SHARED_PARAMS = 8 * HALF * WEIGHT_STRIDE + 10 * 88 + 82 * 10 + 12   # shared floats of the parameters, both copies (PSZ)
WARPS = 12                # warps per block of both kernels (fused_cuda.cu NW): 384 threads. H200 GPU-073d795d, draw 0,
                          # training on CUDA events, the revision just before 93597b73: at G = 2 (the least energy)
                          # 4.16 ms against 4.24 at 16 warps, at G = 4 3.13 against 3.20
                          # (docs/results/fused-learner.md); 12 warps also keep
                          # the update's offsets in registers (fused_cuda.cu KEEP_CODES)
MIN_WARPS, MAX_WARPS = 5, 16   # four take weight gradients, at least one the rows; 16: 512 threads, 128 registers
PREDICT_ROWS = 64         # query rows per predict block
SPIN_LIMIT = 1 << 22      # counter reads before a barrier wait gives up (seconds, as the Triton tool's)
TIMED_OUT = 1 << 30       # the counter value a wait that gave up sets (fused_cuda.cu)
SHARED_LIMIT = 227 * 1024  # dynamic shared memory per block on sm_90, when torch does not report the device's
MAX_CLUSTER = 8           # blocks of one portable thread-block cluster (sm_90 on): the cluster update from 2 to this
CLUSTER_NVRTC = (12, 8)   # the cluster barrier's restricted fences (PTX ISA 8.6, source 0ac8be88… on) need NVRTC 12.8+
SPLIT_FROM = 16           # the default split (the fixture's) with the grid barrier: from this many blocks on (H200
                          # GPU-007a355d, draw 0, kernel 4764c796: G=8 3.42 ms/task split against 3.27 unsplit, G=16
                          # 3.33 against 3.50; docs/results/fused-learner.md)
CLUSTER_SPLIT_FROM = 4    # the default split with the cluster: from this many blocks on (block 0's cycles per step,
                          # docs/results/fused-learner.md, GPU-beca542f, source
                          # 352ca9b5: G=4 33,411 split against 35,755 unsplit, G=8 30,070 split; on GPU-632cf3fa
                          # the trial's G=8 unsplit took 40,276; G=2 48,896 unsplit against 50,792 split on
                          # GPU-f643c17f; G=3 was never run unsplit with this source, so it stays unsplit)


def kernel_source_sha256() -> str:
    """sha256 (hex) of the bytes of ``bundle/fused_cuda.cu``, both kernels of this tool."""
    return hashlib.sha256(KERNEL_SOURCE.read_bytes()).hexdigest()


def cluster_compiles(nvrtc: tuple[int, int]) -> bool:
    """Whether NVRTC ``(major, minor)`` compiles the cluster update of ``bundle/fused_cuda.cu``: its barrier's
    ``fence.*.sync_restrict`` instructions are PTX ISA 8.6, first in CUDA 12.8 (:data:`CLUSTER_NVRTC`)."""
    return tuple(nvrtc) >= CLUSTER_NVRTC


def cluster_nvrtc_rule(requested: bool | None, nvrtc: tuple[int, int]) -> bool:
    """Whether NVRTC ``(major, minor)`` leaves the cluster update to the launch rule: True where it compiles
    it (:func:`cluster_compiles`), False where it does not and the cluster was left to the default rule
    (``requested`` None or False: the grid barrier instead, the same arithmetic).

    Raises:
        BundleError: ``requested`` True with an NVRTC older than :data:`CLUSTER_NVRTC`.
    """
    if cluster_compiles(nvrtc):
        return True
    if requested:
        raise BundleError(f"cluster=True needs NVRTC {CLUSTER_NVRTC[0]}.{CLUSTER_NVRTC[1]} or later (the cluster "
                          f"barrier's fences are PTX ISA 8.6), and this CuPy has NVRTC {nvrtc[0]}.{nvrtc[1]}: "
                          "install a CuPy for CUDA 12.8 or later, or use cluster=None (the grid barrier)")
    return False


def cupy_versions() -> dict | None:
    """``{"cupy": version, "nvrtc": "major.minor"}``, or None when CuPy is not importable."""
    try:
        import cupy  # noqa: PLC0415
    except ImportError:
        return None
    major, minor = cupy.cuda.nvrtc.getVersion()
    return {"cupy": cupy.__version__, "nvrtc": f"{major}.{minor}"}


def row_stride(rows: int) -> int:
    """Feature-row stride of a shared activation array of ``rows`` rows (floats): 16 rows up to 16 (lane tiles of
    4 features x 2 rows), else the rows rounded up to 32; plus 4 (fused_cuda.cu RP, RS)."""
    return (16 if rows <= 16 else triton_cdiv(rows, 32) * 32) + 4


def push_possible(rows: int, cluster: bool, split: bool) -> bool:
    """Whether the training kernel can exchange partials and new parameters by bulk copies into the owners'
    and the blocks' shared memory (fused_cuda.cu PUSH, exchange ``"push"``): the split update inside the
    cluster with activation arrays of up to 32 rows (at most 32 rows per block: G >= 4 at the frozen batch)."""
    return bool(cluster and split and row_stride(rows) <= 36)


def pushed_exchange_floats(ctas: int) -> int:
    """Shared floats of the pushed exchange at G = ``ctas`` blocks (fused_cuda.cu): the padded partial and the
    padded new state (:data:`PADDED_STATE` each), G slots of the others' partials of this block's slices
    (16 ceil(421 / G) + 4 ceil(208 / G) floats each) and six 16-byte transaction barriers."""
    slot = 16 * triton_cdiv(421, ctas) + 4 * triton_cdiv(208, ctas)
    return 2 * PADDED_STATE + ctas * slot + 4 * 6


def train_shared_bytes(rows: int, cluster: bool = False, push: bool = False, ctas: int | None = None) -> int:
    """Dynamic shared memory of one training block of ``rows`` rows (bytes): the parameters (both copies),
    six activation arrays (halves as is and through relu, their gradients), the logits, with
    ``cluster`` 2 x 7,556 floats (:data:`PARTIAL_STRIDE`: the block's partial gradients of two steps, or with
    the split update one partial and its slice's new parameters), or with ``push`` (the pushed exchange of
    ``ctas`` blocks; None: ceil(128 / rows), the frozen batch's) :func:`pushed_exchange_floats`, then row
    indices and labels (fused_cuda.cu)."""
    if push:
        exchange = pushed_exchange_floats(triton_cdiv(128, rows) if ctas is None else ctas)
    else:
        exchange = 2 * PARTIAL_STRIDE if cluster else 0
    return 4 * (SHARED_PARAMS + (6 * FEATURE_ROWS + 10) * row_stride(rows) + exchange + 2 * rows)


def cluster_possible(ctas: int, capability: tuple[int, int]) -> bool:
    """Whether G = ``ctas`` training blocks can be one thread-block cluster: 2 to :data:`MAX_CLUSTER`
    blocks and compute capability 9.0 or later (clusters and distributed shared memory begin with
    sm_90: not on an A100), with or without the split update."""
    return 2 <= ctas <= MAX_CLUSTER and tuple(capability) >= (9, 0)


def predict_shared_bytes(rows: int | None = None) -> int:
    """Dynamic shared memory of one predict block of ``rows`` query rows (default :data:`PREDICT_ROWS`; bytes)."""
    rows = PREDICT_ROWS if rows is None else rows
    return 4 * (SHARED_PARAMS + (4 * FEATURE_ROWS + 10) * row_stride(rows) + rows)


def shared_memory_problem(rows: int, limit: int, cluster: bool = False, push: bool = False,
                          ctas: int | None = None) -> str | None:
    """Why blocks of ``rows`` training rows do not fit ``limit`` bytes of shared memory per block, or None.

    Args:
        rows: training rows per block, ceil(batch / G); limit: the GPU's opt-in shared memory per block (bytes);
        cluster: the blocks are one cluster (:func:`cluster_possible`), so each also holds its partials;
        push: the pushed exchange (:func:`push_possible`) of ``ctas`` blocks, so each also holds its buffers.

    Returns:
        None when the training block (:func:`train_shared_bytes`) and the predict block
        (:func:`predict_shared_bytes`) both fit; else one line: more blocks help when only the
        training block is too large, nothing does when even one row per block is (the GPU has less
        shared memory per block than the kernels need: 163 KB on an A100, 227 KB on an H100/H200).
    """
    if max(train_shared_bytes(1), predict_shared_bytes()) > limit:
        return (f"this GPU gives a block {limit} B of shared memory, less than the {train_shared_bytes(1)} B (training "
                f"at one row per block) and {predict_shared_bytes()} B (prediction) the CUDA kernels need: use kernel "
                "tool triton (REV88_FUSED_KERNEL=triton)")
    if train_shared_bytes(rows, cluster, push, ctas) > limit:
        return (f"{rows} rows per block need {train_shared_bytes(rows, cluster, push, ctas)} B of shared memory, over this GPU's "
                f"{limit} B per block: use more ctas (REV88_FUSED_CTAS)")
    return None


class CudaFusedTask(FusedTask):
    """A prepared invocation of ``rev88-fused`` with the CUDA C++ kernels (``bundle/fused_cuda.cu``).

    Args:
        train_images: float32 (N, 1, 9, 9) in [0, 1].
        train_labels: integer (N,) in 0…9.
        test_images: float32 (M, 1, 9, 9) in [0, 1].
        config: learner config (default :data:`bundle.learner.FROZEN_CONFIG`); depth 2 only.
        device: ``"cuda"`` only.
        ctas: training blocks G, 1 to the SM count; each takes ceil(batch / G) rows of every batch.
        split: False: every block sums all G partials and updates its own state copy (one barrier
            per step); True: each block sums and updates one slice and publishes it (two barriers);
            None (default): True from :data:`CLUSTER_SPLIT_FROM` blocks on with the cluster, from
            :data:`SPLIT_FROM` on without.
        warps: warps per block (threads = 32 x warps), :data:`MIN_WARPS` to :data:`MAX_WARPS`; default
            :data:`WARPS`.
        cluster: True: the G blocks are one thread-block cluster; each keeps its partial gradients in
            its shared memory, the others read them there (distributed shared memory) after the
            hardware cluster barrier, instead of global memory and an atomic grid barrier; False: the
            grid barrier; None (default): True where :func:`cluster_possible` (2 to 8 blocks, sm_90
            on), CuPy's NVRTC compiles the cluster barrier (:data:`CLUSTER_NVRTC`, 12.8, on:
            :func:`cluster_nvrtc_rule`) and the cluster's blocks fit the GPU's shared memory. True where
            it is not possible raises.
        exchange: how the split cluster update moves partials and new parameters between the blocks:
            ``"pull"`` (the default, :data:`DEFAULT_EXCHANGE`): after a cluster barrier each block reads
            its slice's partials from the others' shared memory, and after a second one every slice;
            ``"push"``: bulk copies into the owners' and the blocks' shared memory, each region's as
            soon as the phase that wrote it ends, counted by transaction barriers (needs
            :func:`push_possible`: G >= 4 inside a cluster, split). The same sums in the same order.

    Attributes (on the GPU): ``initial``, ``params``, ``velocity``, ``raw``, ``raw_query``,
    ``labels``, ``orders``, ``scores``, ``predictions`` as :class:`FusedTask`; ``partials`` float32
    (2, G, 7554) (``cluster``: (1,), unused); ``published`` float32 (7554,) (``split`` without
    ``cluster`` only, else (1,)); ``barrier_count`` int32 (1,).

    Raises:
        BundleError: bad inputs or config, CuPy missing or its NVRTC not loading, no CUDA GPU, ``ctas``
            out of range, a cluster asked for where it is not possible (the GPU, the block count, or an
            NVRTC before 12.8), or the kernels do not compile or do not fit the GPU's shared memory.
    """

    #: extra NVRTC options of a measurement subclass (the phase-clock build, ``-DREV88_PHASE_CLOCK``, whose
    #: cycle counts docs/results/fused-learner.md cites); empty in every task the protocol runs.
    extra_defines: tuple[str, ...] = ()

    def __init__(self, train_images, train_labels, test_images, config=None, *, device: str = "cuda",
                 ctas: int = 8, split: bool | None = None, warps: int = WARPS,
                 cluster: bool | None = None, exchange: str | None = None) -> None:
        started = time.perf_counter()
        self.config = normalise_config(FROZEN_CONFIG if config is None else config)
        cfg = self.config
        if cfg["depth"] != 2:
            raise BundleError(f"the fused learner supports depth 2 only (got depth {cfg['depth']}): use bundle.learner")
        if isinstance(ctas, bool) or not isinstance(ctas, int | np.integer) or ctas < 1:
            raise BundleError(f"ctas must be a positive int, the training blocks (got {ctas!r})")
        if isinstance(warps, bool) or not isinstance(warps, int | np.integer) or not MIN_WARPS <= warps <= MAX_WARPS:
            raise BundleError(f"warps must be an int from {MIN_WARPS} to {MAX_WARPS} (got {warps!r})")
        if split is not None and not isinstance(split, bool):
            raise BundleError(f"split must be True, False or None (the default rule), got {split!r}")
        if cluster is not None and not isinstance(cluster, bool):
            raise BundleError(f"cluster must be True, False or None (the default rule), got {cluster!r}")
        if exchange is not None and exchange not in EXCHANGES:
            raise BundleError(f"exchange must be one of {', '.join(EXCHANGES)} or None (the default, "
                              f"{DEFAULT_EXCHANGE!r}), got {exchange!r}")
        if device != "cuda":
            raise BundleError(f"kernel tool {KERNEL_TOOL} runs on device cuda only (got {device!r}); on the CPU use "
                              "bundle.fused_cuda.reference_train or kernel tool triton's interpreter")
        if not torch.cuda.is_available():
            raise BundleError("device cuda requested but torch sees no CUDA GPU: use a GPU host")
        try:
            import cupy  # noqa: PLC0415
        except ImportError as exc:
            raise BundleError(f"kernel tool {KERNEL_TOOL} needs CuPy, which is not importable ({exc}): install the "
                              "bundle's [cuda] extra (cupy-cuda12x) or use kernel tool triton") from None
        arrays = validate_inputs(dict(zip(INPUT_KEYS, (train_images, train_labels, test_images), strict=True)))
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        ctas = int(ctas)
        if ctas > props.multi_processor_count:
            raise BundleError(f"ctas={ctas} exceeds the {props.multi_processor_count} SMs of this GPU: the grid "
                              "barrier needs every training block resident at once; use ctas <= the SM count")
        self.ctas, self.warps = ctas, int(warps)
        self.threads = 32 * self.warps
        possible = cluster_possible(ctas, (props.major, props.minor))
        if cluster and not possible:
            raise BundleError(f"cluster=True needs 2 to {MAX_CLUSTER} ctas and compute capability 9.0 or later "
                              f"(got ctas={ctas}, {props.major}.{props.minor}): use cluster=None")
        try:
            nvrtc = tuple(cupy.cuda.nvrtc.getVersion())
        except Exception as exc:  # a CuPy whose NVRTC library does not load
            raise BundleError(f"CuPy's NVRTC did not load ({type(exc).__name__}: {' '.join(str(exc).split())[:200]}): "
                              "install the CuPy that matches this host's CUDA (the bundle's [cuda] extra)") from None
        possible = possible and cluster_nvrtc_rule(cluster, nvrtc)   # the default rule falls back to the grid barrier
        self.rows = triton_cdiv(cfg["batch_size"], ctas)
        limit = int(getattr(props, "shared_memory_per_block_optin", 0) or SHARED_LIMIT)
        # the default takes the cluster only where its blocks (which also hold their partials) fit
        self.cluster = (possible and shared_memory_problem(self.rows, limit, True) is None) if cluster is None else cluster
        self.split = ctas >= (CLUSTER_SPLIT_FROM if self.cluster else SPLIT_FROM) if split is None else split
        self.exchange = DEFAULT_EXCHANGE if exchange is None else exchange
        if self.exchange == "push" and not push_possible(self.rows, self.cluster, self.split):
            raise BundleError(f"exchange 'push' (REV88_FUSED_EXCHANGE=push) needs the split update inside a cluster and "
                              f"at most 32 rows per block (G >= 4 at batch 128); this task has G={ctas}, "
                              f"{self.rows} rows per block, cluster={self.cluster}, split={self.split}: use exchange "
                              "'pull' (unset REV88_FUSED_EXCHANGE)")
        problem = shared_memory_problem(self.rows, limit, self.cluster, self.exchange == "push", ctas)
        if problem:
            raise BundleError(problem)
        self.device = torch.device(device)
        self.interpreted = False
        self.num_warps = self.warps
        self.product_precision = "ieee"
        self._prepare_resident(arrays)
        self.partials = torch.zeros((1,) if self.cluster else (2, ctas, STATE), dtype=torch.float32, device=self.device)
        self.published = torch.zeros(STATE if self.split and not self.cluster else 1, dtype=torch.float32,
                                     device=self.device)
        self.barrier_count = torch.zeros(1, dtype=torch.int32, device=self.device)
        self.steps = cfg["epochs"] * triton_cdiv(self.train_count, cfg["batch_size"])
        self._barrier_expected = 0
        self._compile(cupy)
        self.run_count = 0
        self.preparation_seconds = time.perf_counter() - started

    def _compile(self, cupy) -> None:
        options = ("-std=c++14", f"-DNW={self.warps}", f"-DG={self.ctas}", f"-DROWS={self.rows}",
                   f"-DSPLIT={int(self.split)}", f"-DCLUSTER={int(self.cluster)}", f"-DQB={PREDICT_ROWS}",
                   *(("-DPUSH=1",) if self.exchange == "push" else ()), *self.extra_defines)
        try:
            module = cupy.RawModule(code=KERNEL_SOURCE.read_text(), options=options)
            self._module = module
            self._train_fn = module.get_function("rev88_train")
            self._predict_fn = module.get_function("rev88_predict")
            self._train_fn.max_dynamic_shared_size_bytes = train_shared_bytes(self.rows, self.cluster,
                                                                               self.exchange == "push", self.ctas)
            self._predict_fn.max_dynamic_shared_size_bytes = predict_shared_bytes()
        except Exception as exc:  # CuPy's compile and driver errors have no common base class
            raise BundleError(f"the CUDA kernels of bundle/fused_cuda.cu did not compile or load "
                              f"({type(exc).__name__}: {' '.join(str(exc).split())[:300]})") from None
        self._cupy = cupy
        view = cupy.asarray
        self._views = {name: view(getattr(self, name)) for name in (
            "initial", "params", "velocity", "partials", "published", "barrier_count", "raw", "labels", "orders",
            "raw_query", "scores", "predictions")}

    def _stream(self):
        """torch's current stream on this device as a CuPy stream (the kernels launch in torch's stream order):
        through the CUDA stream protocol (``Stream.from_external``, CuPy 14 on, where torch's stream has
        ``__cuda_stream__``), else by its handle (``ExternalStream``, which CuPy 14 deprecates)."""
        current = torch.cuda.current_stream(self.device)
        streams = self._cupy.cuda
        if hasattr(streams.Stream, "from_external") and hasattr(current, "__cuda_stream__"):
            return streams.Stream.from_external(current)
        return streams.ExternalStream(current.cuda_stream)

    def train(self) -> None:
        """Zero the barrier counter, then ONE ``rev88_train`` launch (reset + every update).

        The G blocks must all be resident at once: G <= the SM count (checked) and at least one block
        fits on every SM (its shared memory is checked against the device's limit), so on an idle GPU
        every block starts at launch; nothing else may hold the SMs for long meanwhile (a wait gives up after :data:`SPIN_LIMIT` reads and :meth:`barrier_check` reports it).
        """
        cfg, v, np32 = self.config, self._views, np.float32
        self.barrier_count.zero_()
        with self._stream():
            self._train_fn(
                (self.ctas,), (self.threads,),
                (v["initial"], v["params"], v["velocity"], v["partials"], v["published"], v["barrier_count"],
                 v["raw"], v["labels"], v["orders"], np.int32(self.train_count), np.int32(cfg["epochs"]),
                 np.int32(cfg["batch_size"]), np32(cfg["alpha"]), np32(cfg["momentum"]), np32(-cfg["learning_rate"]),
                 np32(cfg["weight_decay"]), np.uint32(SPIN_LIMIT)),
                shared_mem=train_shared_bytes(self.rows, self.cluster, self.exchange == "push", self.ctas))
        self._barrier_expected = self.steps * self.ctas * (2 if self.split else 1)

    def predict(self) -> None:
        """One ``rev88_predict`` launch over blocks of :data:`PREDICT_ROWS` query rows (reads ``params``)."""
        v = self._views
        with self._stream():
            self._predict_fn(
                (triton_cdiv(self.test_count, PREDICT_ROWS),), (self.threads,),
                (v["params"], v["raw_query"], v["scores"], v["predictions"], np.int32(self.test_count),
                 np.float32(self.config["alpha"])), shared_mem=predict_shared_bytes())

    def barrier_check(self) -> None:
        """Raise if the last training's barrier counter is not steps × blocks × barriers per step (synchronises).

        Raises:
            BundleError: the counter is off (a wait gave up, or a broken barrier).
        """
        if self.run_count == 0:
            return
        got = int(self.barrier_count.cpu()[0])
        if got != self._barrier_expected:
            why = "a grid-barrier wait gave up" if got >= TIMED_OUT else "the arrivals do not add up"
            raise BundleError(f"CUDA training is invalid: barrier counter {got}, expected {self._barrier_expected} "
                              f"({why})")

    def learner_block(self) -> dict:
        """The record's ``learner`` block for this kernel tool (docs/evidence-format.md)."""
        return {"name": LEARNER_NAME, "kernel_tool": KERNEL_TOOL, "kernel_source_sha256": kernel_source_sha256(),
                "cupy": cupy_versions(), "interpreter": False, "train_programs": self.ctas,
                "train_threads": self.threads, "rows_per_program": self.rows, "split_update": self.split,
                "cluster_update": self.cluster, "exchange": self.exchange,
                "product_precision": "ieee"}

    def named_tensors(self) -> list[tuple[str, torch.Tensor]]:
        """Named resident tensors: per-parameter views of ``params``, then the other buffers."""
        named = [(f"parameters.{n}", t) for n, t in self._named_views(self.params)]
        named += [(n, getattr(self, n)) for n in ("initial", "velocity", "partials", "published", "barrier_count",
                                                  "raw", "raw_query", "labels", "orders", "predictions", "scores")]
        return named


def reference_train(raw: np.ndarray, labels: np.ndarray, orders: np.ndarray, initial: np.ndarray, ctas: int,
                    config: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """CPU reference of ``rev88_train``'s step schedule in numpy float32.

    Args:
        raw: float32 (N, 81) training pixels; labels: integer (N,); orders: integer (epochs, N)
            (:func:`bundle.learner.epoch_orders`); initial: float32 (7554,) initial state vector.
        ctas: blocks G; block b takes rows [b·R, (b+1)·R) of each batch, R = ceil(batch / G).
        config: as :func:`bundle.learner.normalise_config` (default the frozen one).

    Returns:
        (params, velocity), float32 (7554,) each, after every update: each block's partial gradient
        is computed on its rows at the pre-step weights and the G partials are summed in block
        order before the momentum-SGD step, as the kernel does (products inside a block in numpy's
        order, so bits differ from the GPU's; predictions are what is compared).
    """
    cfg = normalise_config(FROZEN_CONFIG if config is None else config)
    f32 = np.float32
    alpha, mom, lr, wd = f32(cfg["alpha"]), f32(cfg["momentum"]), f32(cfg["learning_rate"]), f32(cfg["weight_decay"])
    p = initial.astype(f32).copy()
    v = np.zeros_like(p)
    n, batch = len(raw), cfg["batch_size"]
    rows_per = triton_cdiv(batch, ctas)
    for e in range(cfg["epochs"]):
        for first in range(0, n, batch):
            count = min(batch, n - first)
            grad = np.zeros_like(p)
            for b in range(ctas):
                lo, hi = min(b * rows_per, count), min((b + 1) * rows_per, count)
                part = _partial(p, raw[orders[e, first + lo:first + hi]], labels[orders[e, first + lo:first + hi]],
                                count, alpha)
                grad = grad + part
            v = v * mom + grad
            v = v + wd * p
            p = p - lr * v
    return p, v


def _unpack(p: np.ndarray) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    w = [p[k * HALF * HALF:(k + 1) * HALF * HALF].reshape(HALF, HALF) for k in range(4)]
    head = p[4 * HALF * HALF:4 * HALF * HALF + 10 * 2 * HALF].reshape(10, 2 * HALF)
    return w, head, p[-10:]


def reference_forward(p: np.ndarray, x: np.ndarray, alpha) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(l2, r2, logits) of rows x (float32 (R, 81)) under state vector p, as the kernels compute them."""
    f32 = np.float32
    w, head, bias = _unpack(p)
    lifted = np.concatenate([x * f32(4.0) - f32(0.5), np.zeros((len(x), 1), f32)], axis=1)
    left, right = lifted[:, :HALF].copy(), lifted[:, HALF:].copy()
    left = left + (np.maximum(right, 0) @ w[0].T) * alpha
    right = right + (np.maximum(left, 0) @ w[1].T) * alpha
    left = left + (np.maximum(right, 0) @ w[2].T) * alpha
    right = right + (np.maximum(left, 0) @ w[3].T) * alpha
    return left, right, left @ head[:, :HALF].T + right @ head[:, HALF:].T + bias


def _partial(p: np.ndarray, x: np.ndarray, y: np.ndarray, count: int, alpha) -> np.ndarray:
    f32 = np.float32
    grad = np.zeros_like(p)
    if len(x) == 0:
        return grad
    w, head, _ = _unpack(p)
    left, right, z = reference_forward(p, x, alpha)
    z = z - z.max(axis=1, keepdims=True)
    prob = np.exp(z - np.log(np.exp(z).sum(axis=1, keepdims=True)))
    prob[np.arange(len(y)), y] -= f32(1.0)
    g = (prob / f32(count)).astype(f32)
    gw, gh, gb = _unpack(grad)
    gh[:, :HALF] = g.T @ left
    gh[:, HALF:] = g.T @ right
    gb[:] = g.sum(axis=0)
    d_left, d_right = g @ head[:, :HALF], g @ head[:, HALF:]
    # block 1 then block 0: (leaf, upstream, weight, gradient of the other half, half to rebuild)
    for k in (3, 2, 1, 0):
        leaf, up = (left, d_right) if k % 2 else (right, d_left)
        scaled, act = up * alpha, np.maximum(leaf, 0)
        gw[k][:] = scaled.T @ act
        if k == 0:
            break
        d_leaf = np.where(leaf > 0, scaled @ w[k], f32(0.0))
        branch = (act @ w[k].T) * alpha
        if k % 2:
            d_left, right = d_left + d_leaf, right - branch
        else:
            d_right, left = d_right + d_leaf, left - branch
    return grad


def reference_predict(p: np.ndarray, query: np.ndarray, config: dict | None = None) -> np.ndarray:
    """int64 (M,) first maximal class of the logits of query rows (float32 (M, 81)) under state p."""
    cfg = normalise_config(FROZEN_CONFIG if config is None else config)
    return reference_forward(p, query.astype(np.float32), np.float32(cfg["alpha"]))[2].argmax(axis=1).astype(np.int64)
