"""The fresh-process measuring entry (spec 4.1): ``python -m bundle.fixture`` / ``rev88 fixture``.

One process prepares one task from an input npz (exactly ``train_images``, ``train_labels``,
``test_images``) and a config, runs one invocation, records the allocator's memory block,
the named-storage inventory and the eight state hashes, then does the mode's work
(``measure``: optional energy protocol; ``profile``: an ``ncu`` range between
``cudaProfilerStart``/``Stop``) and checks that the final hashes equal the same-process
reference. It writes ``<output>`` (a record, ``.json.gz`` or ``.json``) and
``<stem>.predictions.npy`` next to it.

``CUBLAS_WORKSPACE_CONFIG`` must be in the environment before torch is imported: this
module imports torch only inside :func:`run_fixture`, after the check, and refuses to be
imported at all once CUDA is initialised (cuBLAS reads the setting when it creates its
first workspace, so a later change would be silently ignored; spec 4.2-4.3).

Example::

    CUBLAS_WORKSPACE_CONFIG=:16:8 python -m bundle.fixture --input in.npz --config config.json \\
        --output out/workspace-16-8.json.gz --mode measure
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from protocol.errors import BundleError
from protocol.fixture_texts import INVENTORY_SCOPE, MEMORY_SCOPE

#: ``time.perf_counter()`` when this module was imported (the start of the fixture's own timeline).
_IMPORTED_AT = time.perf_counter()
TIMELINE_SCOPE = (
    "Seconds since the interpreter started (Linux /proc/self/stat start time against /proc/uptime; null "
    "elsewhere) at import of bundle.fixture, then seconds since that import at each step of this process. "
    "Under ncu app-range replay each pass is a new process; the record keeps the last pass's timeline.")


def _process_age_s() -> float | None:
    """Seconds since this process started (Linux ``/proc``), or ``None`` where that is unknown."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        uptime_s = float(Path("/proc/uptime").read_text().split()[0])
        return round(uptime_s - int(fields[19]) / os.sysconf("SC_CLK_TCK"), 3)
    except (OSError, ValueError, IndexError, KeyError):
        return None


class Timeline:
    """Step stamps of one fixture process: ``mark(name)`` records seconds since the module's import.

    ``as_record()`` gives ``{"scope", "process_age_at_import_s", "steps": [{"step", "at_s"}]}`` (s,
    float, non-decreasing); :meth:`line` is the one-line form printed to stderr.
    """

    def __init__(self) -> None:
        self.process_age_at_import_s = _process_age_s()
        if self.process_age_at_import_s is not None:
            self.process_age_at_import_s = round(self.process_age_at_import_s - (time.perf_counter() - _IMPORTED_AT), 3)
        self.steps: list[dict[str, Any]] = []

    def mark(self, step: str) -> None:
        """Stamp *step* now."""
        self.steps.append({"step": step, "at_s": round(time.perf_counter() - _IMPORTED_AT, 4)})

    def as_record(self) -> dict[str, Any]:
        """The record form (see the class docstring)."""
        return {"scope": TIMELINE_SCOPE, "process_age_at_import_s": self.process_age_at_import_s,
                "steps": list(self.steps)}

    def line(self) -> str:
        """``fixture timeline (s): interpreter-to-import 0.07; inputs_loaded 0.26; torch_imported 4.11; …``."""
        steps = "; ".join(f"{s['step']} {s['at_s']:.3f}" for s in self.steps)
        return f"fixture timeline (s): interpreter-to-import {self.process_age_at_import_s}; {steps}"


def acquire_gpu_lock(timeline: Timeline, mode: str = "measure") -> dict[str, Any] | None:
    """Wait for this job's turn and the board's GPU lock (``$REV88_GPU_LOCK``) before touching CUDA.

    A phase that starts several fixture processes for one board at once (the energy trials and the
    ncu runs) gives them one lock file (``fcntl.flock``). Each process imports torch and reads its
    inputs (CPU only) before it asks for the lock. What the lock then covers is
    ``$REV88_GPU_LOCK_SCOPE``:

    * ``process`` (default): exclusive from before CUDA initialisation until the process exits, so
      no two of them ever use the GPU at the same time (the energy trials: their idle windows need
      a quiet board).
    * ``range`` (profile mode only): shared from before CUDA initialisation, so several processes
      initialise CUDA, prepare and run their first invocation at once; :func:`exclusive_gpu_lock`
      makes it exclusive from the warm-ups before the profiled range until the process exits. No
      other process of the lock uses the GPU from this process's warm-ups on, so the range sees
      the same quiet board as with ``process`` (``--cache-control none``: the L2 holds what the
      warm-ups left); only the preparations overlap one another. Under ncu's
      app-range replay every pass is such a process, so another run's pass may come between two
      passes, as with ``process``.

    Order (``process`` only): with ``$REV88_GPU_TICKET`` (the job's position, 0, 1, …) the process
    first waits until the turn file ``<lock>.turn`` holds its ticket, and after taking the lock
    writes ticket + 1, so the jobs hold the GPU in the design's order (a turn of ``-1`` means an
    earlier job failed: this one refuses to run). Without ``$REV88_GPU_LOCK`` nothing is locked.

    Returns:
        ``{"path", "ticket", "scope", "waited_s", "acquired_at_s"}`` (s; ``acquired_at_s`` on the
        timeline; ``ticket`` ``None`` without one), or ``None`` without a lock. A ``range`` lock's
        record gains ``exclusive`` from :func:`exclusive_gpu_lock`.

    Raises:
        BundleError: the lock or turn file cannot be used, a malformed ticket, an unknown scope, a
            ``range`` scope outside profile mode or with a ticket, or an earlier job of the same
            lock failed.
    """
    import fcntl  # noqa: PLC0415  (POSIX; the fixture runs on Linux)

    from bundle.boards import LOCK_ENV, LOCK_SCOPE_ENV, LOCK_SCOPES, TICKET_ENV  # noqa: PLC0415

    path = os.environ.get(LOCK_ENV)
    if not path:
        return None
    scope = os.environ.get(LOCK_SCOPE_ENV) or "process"
    raw_ticket = os.environ.get(TICKET_ENV)
    if scope not in LOCK_SCOPES:
        raise BundleError(f"{LOCK_SCOPE_ENV}={scope!r} is not one of {', '.join(LOCK_SCOPES)}: set by the phase, "
                          "do not edit")
    if scope == "range" and (mode != "profile" or raw_ticket is not None):
        raise BundleError(f"{LOCK_SCOPE_ENV}=range is for profile-mode fixtures without a ticket (this one: mode "
                          f"{mode}, ticket {raw_ticket!r}): a measure or energy job needs the whole-process lock")
    if raw_ticket is not None and not re.fullmatch(r"[0-9]{1,9}", raw_ticket):
        raise BundleError(f"{TICKET_ENV}={raw_ticket!r} is not a job position (0, 1, …): set by the phase, do not edit")
    ticket = None if raw_ticket is None else int(raw_ticket)
    start = time.perf_counter()
    turn_path = Path(path + ".turn")
    try:
        while ticket is not None:
            text = turn_path.read_text().strip() if turn_path.is_file() else ""
            if text == "-1":
                raise BundleError(f"an earlier job of {path} failed (turn file {turn_path}): this job is not run; "
                                  "fix that job and rerun the phase")
            if text == str(ticket):
                break
            time.sleep(0.02)
        # A bare descriptor, never closed here: Python's finalisation closes file objects (and so
        # would release the lock) before the CUDA context and ncu's injection are torn down; the
        # kernel releases this one only when the process has exited.
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_SH if scope == "range" else fcntl.LOCK_EX)
        if ticket is not None:
            from bundle.boards import update_turn  # noqa: PLC0415

            if update_turn(turn_path, ticket + 1, only_if_below=False) == -1:
                raise BundleError(f"an earlier job of {path} failed while this one took the lock (turn file "
                                  f"{turn_path}): this job is not run; fix that job and rerun the phase")
    except OSError as exc:
        raise BundleError(f"cannot take the GPU lock {path} ({exc.strerror}): check that the run folder is "
                          "writable from the job") from None
    _HELD_LOCKS.append(fd)
    timeline.mark("gpu_lock_acquired")
    return {"path": path, "ticket": ticket, "scope": scope, "waited_s": round(time.perf_counter() - start, 4),
            "acquired_at_s": timeline.steps[-1]["at_s"]}


def exclusive_gpu_lock(gpu_lock: dict[str, Any] | None, timeline: Timeline) -> None:
    """Make a ``range`` GPU lock exclusive until the process exits (see :func:`acquire_gpu_lock`).

    Called before the profile warm-ups: from there on no other process of the lock touches the GPU
    (its preparation waits), so nothing but this process's warm-ups, range, outputs and exit meets
    the range. Adds ``gpu_lock["exclusive"] = {"waited_s", "acquired_at_s"}`` (s, on the timeline,
    whose steps gain ``gpu_lock_exclusive``). Does nothing for ``None`` or a ``process`` lock
    (exclusive already).

    Raises:
        BundleError: the lock cannot be converted.
    """
    if gpu_lock is None or gpu_lock.get("scope") != "range":
        return
    import fcntl  # noqa: PLC0415

    start = time.perf_counter()
    try:
        # flock converts by dropping this process's shared lock, then waiting for the exclusive one.
        fcntl.flock(_HELD_LOCKS[-1], fcntl.LOCK_EX)
    except OSError as exc:
        raise BundleError(f"cannot take the GPU lock {gpu_lock['path']} exclusively ({exc.strerror})") from None
    timeline.mark("gpu_lock_exclusive")
    gpu_lock["exclusive"] = {"waited_s": round(time.perf_counter() - start, 4),
                             "acquired_at_s": timeline.steps[-1]["at_s"]}


_HELD_LOCKS: list[int] = []


def placement_record(hardware: dict[str, Any], gpu_lock: dict[str, Any] | None, *, cuda: bool) -> dict[str, Any]:
    """What board this process was given (``$REV88_BOARD_UUID``, ``$CUDA_VISIBLE_DEVICES``) and found.

    Returns:
        ``{"given_board_uuid", "cuda_visible_devices", "board_uuid", "nvml_pci_bus_id", "gpu_lock"}``.

    Raises:
        BundleError: on CUDA, the board found is not the board given (the engine did not
            place the job where the phase asked).
    """
    from bundle.boards import GIVEN_ENV, VISIBLE_ENV  # noqa: PLC0415

    given = os.environ.get(GIVEN_ENV) or None
    found = hardware.get("uuid") if cuda else None
    if cuda and given is not None and found != given:
        raise BundleError(f"this job was placed on board {given} but runs on {found}: the engine did not pass "
                          f"{VISIBLE_ENV}; check the engine (docker: device_ids)")
    return {"given_board_uuid": given, "cuda_visible_devices": os.environ.get(VISIBLE_ENV),
            "board_uuid": found, "nvml_pci_bus_id": hardware.get("nvml_pci_bus_id") if cuda else None,
            "gpu_lock": gpu_lock}


WORKSPACE_ENV = "CUBLAS_WORKSPACE_CONFIG"
INPUT_KEYS = ("train_images", "train_labels", "test_images")
SCHEMA_VERSION = 1
MODES = ("measure", "profile")
#: The learners the fixture can run: the frozen one (default, the reference) and the fused variant.
LEARNERS = ("rev88", "rev88-fused")
DEFAULT_LEARNER = "rev88"
SCOPES = ("task", "training")
ENERGY_MODES = ("none", "original", "trial")
PROFILE_WARMUP_TASKS = 2
#: ``CUBLAS_WORKSPACE_CONFIG``: one or more ``:SIZE_KIB:COUNT`` pairs of ASCII digits, matched
#: in full (``re.fullmatch``: no trailing newline, space or other character).
WORKSPACE_RE = re.compile(r"(?::[0-9]+:[0-9]+)+")
_PACKAGE_DIR = Path(__file__).resolve().parent



def _cuda_already_initialized() -> bool:
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    try:
        return bool(torch.cuda.is_initialized())
    except Exception:
        return False


def guard_entry() -> str | None:
    """Refuse a process whose CUDA is already initialised; return the workspace setting.

    Called when this module is imported and again by :func:`run_fixture`.

    Returns:
        The value of ``CUBLAS_WORKSPACE_CONFIG`` (``None`` if unset).

    Raises:
        BundleError: torch is imported and CUDA initialised (message contains
            "before CUDA initialization").
    """
    if _cuda_already_initialized():
        raise BundleError(
            "CUDA was initialised before the bundle's GPU entry was imported (bundle.fixture): "
            f"{WORKSPACE_ENV} only takes effect when set before CUDA initialization; "
            "start a fresh process with it in the environment"
        )
    return os.environ.get(WORKSPACE_ENV)


WORKSPACE_AT_IMPORT = guard_entry()


def require_workspace_config() -> str:
    """The workspace setting of this process, checked for presence, form and stability.

    Returns:
        e.g. ``":16:8"``.

    Raises:
        BundleError: unset, malformed, or changed since this module was imported.
    """
    value = os.environ.get(WORKSPACE_ENV)
    if value is None:
        raise BundleError(
            f"{WORKSPACE_ENV} is not set in the fixture's environment: set it (e.g. :16:8) in the "
            "job environment before CUDA initialization"
        )
    if not WORKSPACE_RE.fullmatch(value):
        raise BundleError(
            f"{WORKSPACE_ENV}={value!r} is malformed: use ':SIZE_KIB:COUNT' pairs such as :16:8 or :4096:8"
        )
    if WORKSPACE_AT_IMPORT is not None and value != WORKSPACE_AT_IMPORT:
        raise BundleError(
            f"{WORKSPACE_ENV} changed from {WORKSPACE_AT_IMPORT!r} to {value!r} inside the fixture: "
            "it must be set once, before CUDA initialization"
        )
    return value


def check_workspace_unchanged(expected: str) -> None:
    """Re-check the setting before prepare/run (as the original runtime wrapper did).

    Raises:
        BundleError: the environment value differs from *expected*.
    """
    value = os.environ.get(WORKSPACE_ENV)
    if value != expected:
        raise BundleError(
            f"{WORKSPACE_ENV} changed from {expected!r} to {value!r} during the fixture: "
            "it must be set once, before CUDA initialization"
        )


def load_inputs(path: Path) -> dict[str, Any]:
    """Load the input npz without pickle; require exactly the three learner arrays.

    Args:
        path: ``.npz`` holding ``train_images`` float32 (N,1,9,9), ``train_labels`` int64 (N,),
            ``test_images`` float32 (M,1,9,9).

    Returns:
        The arrays in :data:`INPUT_KEYS` order.

    Raises:
        BundleError: missing/unreadable file, or any other key set (message contains
            "exactly the three"; e.g. an added ``test_labels``).
    """
    import zipfile  # noqa: PLC0415

    import numpy as np  # noqa: PLC0415

    if Path(path).is_file() and not zipfile.is_zipfile(path):
        raise BundleError(f"input archive {path} is not an .npz (a zip of .npy arrays): pass --input with the "
                          "draw's npz")
    try:
        with np.load(path, allow_pickle=False) as npz:
            keys = list(npz.files)
            if sorted(keys) != sorted(INPUT_KEYS):
                extra = sorted(set(keys) - set(INPUT_KEYS))
                missing = sorted(set(INPUT_KEYS) - set(keys))
                raise BundleError(
                    f"input archive {path} must hold exactly the three arrays {', '.join(INPUT_KEYS)} "
                    f"(extra: {extra or 'none'}, missing: {missing or 'none'}); no query labels may be "
                    "passed: rebuild it from the draw's learner inputs"
                )
            return {key: npz[key] for key in INPUT_KEYS}
    except FileNotFoundError:
        raise BundleError(f"input archive not found ({path}): pass --input with the draw's npz") from None
    except (OSError, ValueError) as exc:
        raise BundleError(f"input archive {path} is unreadable ({exc}): rewrite it with numpy.savez") from None


def load_config(path: Path) -> dict[str, Any]:
    """Read the config JSON; the fixture requires ``epochs == 2`` (spec 4.1).

    Raises:
        BundleError: missing, not a JSON object, or epochs other than 2.
    """
    try:
        config = json.loads(path.read_text())
    except FileNotFoundError:
        raise BundleError(f"config not found ({path}): pass --config with the frozen config.json") from None
    except (OSError, ValueError) as exc:
        raise BundleError(f"config {path} is not valid JSON ({exc}): fix the file") from None
    if not isinstance(config, dict):
        raise BundleError(f"config {path} must be a JSON object: use the frozen config.json")
    if config.get("epochs") != 2:
        raise BundleError(
            f"config {path} has epochs={config.get('epochs')!r}; the fixture requires epochs 2: "
            "use the frozen config"
        )
    return config


def predictions_path_for(output: Path) -> Path:
    """``<stem>.predictions.npy`` next to *output* (``r.json.gz`` → ``r.predictions.npy``)."""
    name = output.name
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return output.with_name(f"{name}.predictions.npy")


def source_sha256() -> dict[str, str | None]:
    """File sha of the fixture, learner and energy sources (``None`` for a missing file)."""
    from bundle.archive import file_sha256  # noqa: PLC0415

    out: dict[str, str | None] = {}
    for name in ("fixture.py", "learner.py", "energy.py", "energy_glue.py"):
        path = _PACKAGE_DIR / name
        out[name] = file_sha256(path) if path.is_file() else None
    return out


def execution_engine() -> tuple[str, str | None]:
    """Engine kind and image of this process: :func:`bundle.hostinfo.execution_engine`.

    ``REV88_ENGINE``/``REV88_IMAGE_REFERENCE`` are set by the phases; without them the engine
    is native (a ``/.dockerenv`` file proves nothing about the image).

    Raises:
        BundleError: ``REV88_ENGINE`` is neither ``native`` nor ``docker``.
    """
    from bundle import hostinfo  # noqa: PLC0415  (torch-free)

    return hostinfo.execution_engine()


def cache_reference(hardware: dict[str, Any]) -> dict[str, Any]:
    """The device's own L2 size as the nominal cache reference (replaces the A100's fixed 40 MiB)."""
    l2 = hardware.get("l2_cache_bytes")
    return {
        "bytes": l2,
        "unit": None if l2 is None else f"{l2 / 2**20:g} MiB",
        "meaning": (
            f"L2 capacity of {hardware.get('name')} as the device reports it at run time "
            "(torch device properties L2_cache_size); a nominal reference, not measured cache "
            "residency or a per-kernel working set"
        ),
    }


def run_fixture(
    input_path: Path,
    config_path: Path,
    output_path: Path,
    *,
    mode: str = "measure",
    scope: str = "task",
    repeats: int = 16,
    energy: str = "none",
    energy_config_path: Path | None = None,
    device: str = "cuda",
    learner: str = "rev88",
) -> dict[str, Any]:
    """Run the fixture protocol once in this (fresh) process and write its record.

    Args:
        input_path: the input npz (exactly the three arrays).
        config_path: config JSON (epochs 2).
        output_path: record path (``.json.gz`` reproducibly gzipped, or ``.json``).
        mode: ``measure`` or ``profile`` (spec 6.2 range protocol).
        scope: ``task`` (``repeats`` run()s in the range) or ``training`` (one train_sequence()).
        repeats: run()s inside a task-scope profile range (>= 1).
        energy: ``none``, ``original`` or ``trial`` (``bundle.energy_glue.measure_in_fixture``);
            only with mode measure and scope task.
        energy_config_path: JSON object handed to the energy glue.
        device: ``cuda`` (the protocol) or ``cpu`` (diagnostic: no memory block, no inventory).
        learner: ``rev88`` (the frozen learner, the default and the reference) or ``rev88-fused``
            (:mod:`bundle.fused_learner`; on ``cpu`` through Triton's interpreter, which this
            process switches on before the kernels are imported). The record's ``learner``
            block names it, the sha256 of its kernel source, and its training programs (CTAs)
            and warps per program.

    Returns:
        The record written (keys documented in docs/evidence-format.md).

    Raises:
        BundleError: bad arguments or inputs, a workspace-setting violation, a non-fresh
            process, or final hashes that differ from the same-process reference.
    """
    workspace = require_workspace_config()
    guard_entry()
    if mode not in MODES:
        raise BundleError(f"unknown --mode {mode!r}: choose one of {', '.join(MODES)}")
    if scope not in SCOPES:
        raise BundleError(f"unknown --scope {scope!r}: choose one of {', '.join(SCOPES)}")
    if energy not in ENERGY_MODES:
        raise BundleError(f"unknown --energy {energy!r}: choose one of {', '.join(ENERGY_MODES)}")
    if repeats < 1:
        raise BundleError(f"--repeats must be at least 1 (got {repeats})")
    if energy != "none" and (mode != "measure" or scope != "task"):
        raise BundleError("--energy is only allowed with --mode measure and --scope task")
    if device not in ("cuda", "cpu"):
        raise BundleError(f"unknown --device {device!r}: use cuda (or cpu for a diagnostic run)")
    if device == "cpu" and mode == "profile":
        raise BundleError("--mode profile needs --device cuda")
    if learner not in LEARNERS:
        raise BundleError(f"unknown --learner {learner!r}: choose one of {', '.join(LEARNERS)}")
    if learner == "rev88-fused" and device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before bundle.fused_kernels is imported
    if energy != "none" and device != "cuda":
        raise BundleError(f"--energy {energy} needs --device cuda: NVML measures a GPU board's energy, and a "
                          "--device cpu run has none to measure (leave out --energy for a CPU diagnostic run)")
    if Path(output_path).is_dir():
        raise BundleError(f"--output {output_path} is a folder: give the record's file path, e.g. "
                          f"{Path(output_path) / 'record.json.gz'}")
    energy_config: dict[str, Any] = {}
    if energy != "none":
        if energy_config_path is None:
            raise BundleError("--energy needs --energy-config E.json (the energy protocol's settings)")
        try:
            energy_config = json.loads(Path(energy_config_path).read_text())
        except (OSError, ValueError) as exc:
            raise BundleError(f"energy config {energy_config_path} is unreadable ({exc}): fix the file") from None
    timeline = Timeline()
    arrays = load_inputs(Path(input_path))
    config = load_config(Path(config_path))
    timeline.mark("inputs_loaded")
    # Everything below needs torch; the workspace setting is in place and CUDA is untouched.
    with WarningCapture() as captured:
        return _execute(
            arrays, config, Path(input_path), Path(config_path), Path(output_path), workspace=workspace,
            mode=mode, scope=scope, repeats=repeats, energy=energy, energy_config=energy_config, device=device,
            captured=captured, timeline=timeline, learner_name=learner,
        )


#: Warnings torch is known to give for this workload: (name, message pattern, what it means).
KNOWN_WARNINGS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("cublaslt_workspace_cap",
     re.compile(r"Requested unified CUBLASLT workspace size of \d+ bytes exceeds CUBLAS workspace size"),
     "cuBLASLt asked for a larger workspace than CUBLAS_WORKSPACE_CONFIG allows and is capped to it "
     "(e.g. 1 MiB capped to 128 KiB under :16:8); explains slower GEMMs under small workspaces"),
)


class WarningCapture:
    """Collect the Python warnings of a block (torch's C++ ``TORCH_WARN`` arrive as these) for the record.

    Known torch warnings (:data:`KNOWN_WARNINGS`) are kept only in the record; any other
    warning is also printed once to stderr when the block ends. :meth:`summary` gives one
    entry per distinct warning: ``{"name", "category", "message", "source", "count", "meaning"}``
    (``name``/``meaning`` ``None`` for unknown ones; ``source`` is ``file:line``).
    """

    def __init__(self) -> None:
        import warnings  # noqa: PLC0415

        self._warnings = warnings
        self._manager = warnings.catch_warnings(record=True)
        self.caught: list[Any] = []

    def __enter__(self) -> WarningCapture:
        self.caught = self._manager.__enter__()
        self._warnings.simplefilter("always")
        return self

    def summary(self) -> list[dict[str, Any]]:
        """The distinct warnings caught so far, in first-seen order, with their counts."""
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for w in self.caught:
            message = str(w.message)
            key = (w.category.__name__, message)
            if key not in out:
                known = next((k for k in KNOWN_WARNINGS if k[1].search(message)), None)
                out[key] = {"name": known[0] if known else None, "category": w.category.__name__, "message": message,
                            "source": f"{Path(w.filename).name}:{w.lineno}", "count": 0,
                            "meaning": known[2] if known else None}
            out[key]["count"] += 1
        return list(out.values())

    def __exit__(self, *exc: object) -> None:
        caught = list(self.caught)
        self._manager.__exit__(*exc)
        shown: set[tuple[str, str]] = set()
        for w in caught:
            key = (w.category.__name__, str(w.message))
            if key not in shown and not any(k[1].search(key[1]) for k in KNOWN_WARNINGS):
                shown.add(key)
                self._warnings.showwarning(w.message, w.category, w.filename, w.lineno)


def buffer_inventory(task: Any, allocated_bytes: int) -> dict[str, Any]:
    """Named-storage inventory of a prepared task (spec 4.1).

    CUDA tensors from ``task.named_tensors()`` (inventory order) are deduplicated by
    (device, storage data pointer, storage bytes); each unique storage gets a sequential id.

    Args:
        task: a ``bundle.learner.PreparedTask``.
        allocated_bytes: ``torch.cuda.memory_allocated()`` at this moment.

    Returns:
        ``named_tensors``, ``unique_storages``, ``unique_named_storage_bytes``,
        ``allocator_allocated_bytes``, ``allocated_bytes_without_named_storage_reference``,
        ``scope``, ``is_per_kernel_working_set`` (false), ``cache_residency_established`` (false).

    Raises:
        BundleError: named storages exceed the allocator's count (an accounting error).
    """
    named: list[dict[str, Any]] = []
    storages: dict[tuple[str, int, int], dict[str, Any]] = {}
    for name, tensor in task.named_tensors():
        if not tensor.is_cuda:
            continue
        storage = tensor.untyped_storage()
        key = (str(tensor.device), int(storage.data_ptr()), int(storage.nbytes()))
        if key not in storages:
            storages[key] = {"storage_id": len(storages), "device": key[0], "address": key[1],
                             "bytes": key[2], "aliases": []}
        entry = storages[key]
        entry["aliases"].append(name)
        named.append({
            "name": name, "storage_id": entry["storage_id"], "shape": list(tensor.shape),
            "stride": list(tensor.stride()), "dtype": str(tensor.dtype),
            "storage_offset": int(tensor.storage_offset()),
            "logical_bytes": int(tensor.numel() * tensor.element_size()),
        })
    total = sum(s["bytes"] for s in storages.values())
    if total > allocated_bytes:
        raise BundleError(f"named storages ({total} B) exceed allocated bytes ({allocated_bytes} B): "
                          "the inventory is inconsistent; report this as a bug")
    return {
        "named_tensors": named,
        "unique_storages": list(storages.values()),
        "unique_named_storage_bytes": total,
        "allocator_allocated_bytes": allocated_bytes,
        "allocated_bytes_without_named_storage_reference": allocated_bytes - total,
        "scope": INVENTORY_SCOPE,
        "is_per_kernel_working_set": False,
        "cache_residency_established": False,
    }


def _profile_range(task: Any, torch: Any, scope: str, repeats: int, workspace: str,
                   gpu_lock: dict[str, Any] | None = None, timeline: Timeline | None = None) -> dict[str, Any]:
    """Spec 6.2: warm-ups, then the measured range between cudaProfilerStart and Stop.

    A ``range`` lock becomes exclusive first (:func:`exclusive_gpu_lock`): another process's GPU
    work never overlaps the warm-ups or the range.
    """
    exclusive_gpu_lock(gpu_lock, timeline if timeline is not None else Timeline())
    for _ in range(PROFILE_WARMUP_TASKS):
        task.run()
    torch.cuda.synchronize()
    if scope == "training":
        task.reset()
        torch.cuda.synchronize()
    check_workspace_unchanged(workspace)
    cudart = torch.cuda.cudart()
    status = cudart.cudaProfilerStart()
    if int(getattr(status, "value", status)) != 0:
        raise BundleError(f"cudaProfilerStart returned status {status}: check the CUDA runtime and ncu")
    try:
        if scope == "task":
            for _ in range(repeats):
                task.run()
        else:
            task.train_sequence()
        torch.cuda.synchronize()
    finally:
        cudart.cudaProfilerStop()
    if scope == "training":
        task.predict()
        torch.cuda.synchronize()
    task_scope = scope == "task"
    return {
        "scope": scope,
        "warmup_complete_tasks": PROFILE_WARMUP_TASKS,
        "requested_repeats": repeats,
        "fresh_tasks_in_range": repeats if task_scope else 0,
        "fresh_training_sequences_in_range": repeats if task_scope else 1,
        "epochs_per_sequence": 2,
        "training_scope_ignores_repeats": not task_scope,
        "reset_inside_range": task_scope,
        "prediction_inside_range": task_scope,
        "epoch_order_copies_inside_range": True,
        "output_serialization_inside_range": False,
        "cpu_validation_inside_range": False,
        "synchronized_before_stop": True,
    }


def _execute(arrays: dict[str, Any], config: dict[str, Any], input_path: Path, config_path: Path,
             output_path: Path, *, workspace: str, mode: str, scope: str, repeats: int, energy: str,
             energy_config: dict[str, Any], device: str, captured: WarningCapture | None = None,
             timeline: Timeline | None = None, learner_name: str = "rev88") -> dict[str, Any]:
    import torch  # noqa: PLC0415

    from bundle import archive, hostinfo, learner  # noqa: PLC0415

    timeline = timeline if timeline is not None else Timeline()
    timeline.mark("torch_imported")

    cuda = device == "cuda"
    fused_ctas = fused_precision = fused_tool = fused_exchange = None
    if learner_name == "rev88-fused":  # a bad $REV88_FUSED_CTAS, _PRECISION or _KERNEL fails here, before the GPU lock
        from bundle import fused_learner  # noqa: PLC0415
        from bundle.jobs import fused_exchange as exchange_from_env  # noqa: PLC0415
        from bundle.jobs import fused_kernel_tool, fused_launch_problem  # noqa: PLC0415

        fused_ctas = fused_learner.train_ctas_from_env()
        fused_exchange = exchange_from_env()
        fused_precision = fused_learner.product_precision_from_env()
        fused_tool = fused_kernel_tool()
        problem = fused_launch_problem()
        if problem:
            raise BundleError(problem)
    gpu_lock = acquire_gpu_lock(timeline, mode) if cuda else None
    engine, image = execution_engine()  # a bad REV88_ENGINE fails before any work
    if cuda and not torch.cuda.is_available():
        raise BundleError(f"CUDA is not available to torch {torch.__version__}: the fixture needs a GPU")
    train_images, train_labels, test_images = learner.validate_inputs(arrays)
    memory: dict[str, Any] | None = None
    inventory: dict[str, Any] | None = None
    if cuda:
        torch.cuda.init()
        torch.cuda.synchronize()
        entry_allocated = torch.cuda.memory_allocated()
        entry_reserved = torch.cuda.memory_reserved()
        if entry_allocated or entry_reserved:
            raise BundleError(f"not a fresh process: {entry_allocated} B allocated / {entry_reserved} B "
                              "reserved before prepare; run the fixture in its own process")
        torch.cuda.reset_peak_memory_stats()
        timeline.mark("cuda_initialised")
    check_workspace_unchanged(workspace)
    if learner_name == "rev88-fused" and fused_tool == "cuda":
        from bundle import fused_cuda  # noqa: PLC0415

        task = fused_cuda.CudaFusedTask(train_images, train_labels, test_images, config, device=device,
                                        ctas=fused_ctas, exchange=fused_exchange)
    elif learner_name == "rev88-fused":
        task = fused_learner.FusedTask(train_images, train_labels, test_images, config, device=device,
                                       ctas=fused_ctas, product_precision=fused_precision)
    if learner_name == "rev88-fused":   # the record's block: metadata.learner less the product slicing
        learner_block = {k: v for k, v in task.learner_block().items() if k != "product_slices"}
    else:
        task = learner.prepare_task(train_images, train_labels, test_images, config, device=device)
        learner_block = None
    if cuda:
        torch.cuda.synchronize()
        after_prepare = torch.cuda.memory_allocated()
    timeline.mark("task_prepared")
    check_workspace_unchanged(workspace)
    wall_start = time.perf_counter()
    if cuda:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        task.run()
        end.record()
        torch.cuda.synchronize()
        cuda_ms: float | None = float(start.elapsed_time(end))
    else:
        task.run()
        cuda_ms = None
    wall_ms = (time.perf_counter() - wall_start) * 1000.0
    timeline.mark("first_invocation_done")
    if cuda:
        peak = torch.cuda.max_memory_allocated()
        memory = {
            "allocated_before_prepare_bytes": entry_allocated,
            "reserved_before_prepare_bytes": entry_reserved,
            "allocated_after_prepare_bytes": after_prepare,
            "prepare_and_invoke_peak_allocated_bytes": peak,
            "allocated_after_invoke_bytes": torch.cuda.memory_allocated(),
            "reserved_after_invoke_bytes": torch.cuda.memory_reserved(),
            "prepare_and_invoke_peak_reserved_bytes": torch.cuda.max_memory_reserved(),
            "scope": MEMORY_SCOPE,
            "added_peak_over_entry_allocated_bytes": peak - entry_allocated,
        }
        inventory = buffer_inventory(task, torch.cuda.memory_allocated())
    reference = task.state_hashes()
    hardware = hostinfo.hardware_record(torch.cuda.current_device() if cuda else 0)
    placement = placement_record(hardware, gpu_lock, cuda=cuda)
    software = hostinfo.software_record()
    timeline.mark("reference_hashes_and_host_records")
    profile = (_profile_range(task, torch, scope, repeats, workspace, gpu_lock, timeline)
               if mode == "profile" else None)
    if profile is not None:
        timeline.mark("profile_range_done")
    energy_record = None
    if energy != "none":
        check_workspace_unchanged(workspace)
        from bundle import energy_glue  # noqa: PLC0415

        energy_record = energy_glue.measure_in_fixture(task, energy, energy_config)
        timeline.mark("energy_protocol_done")
    predictions, metadata = task.outputs()
    final = task.state_hashes()
    changed = [key for key in learner.STATE_HASH_KEYS if final.get(key) != reference.get(key)]
    changed += [key for key in learner.STATE_HASH_KEYS if key not in changed and metadata.get(key) != final.get(key)]
    if changed:
        raise BundleError(f"Fresh invocation changed {', '.join(changed)} relative to the same-process reference "
                          f"({output_path}): the task is not replay-deterministic; keep the record out of evidence")
    pred_path = archive.write_npy(predictions_path_for(output_path), predictions)
    timeline.mark("outputs_checked_and_predictions_written")
    record = {
        "schema_version": SCHEMA_VERSION,
        "completed_at_utc": archive.utc_now(),
        "mode": mode,
        "requested_scope": scope,
        "device": device,
        "config": config,
        "input_archive_sha256": archive.file_sha256(input_path),
        "config_file_sha256": archive.file_sha256(config_path),
        "source_sha256": source_sha256(),
        "cublas_workspace_config": workspace,
        "environment_was_set_externally": WORKSPACE_AT_IMPORT == workspace,
        "software": software,
        "gpu": hardware["name"],
        "cuda_device_index": hardware["device_index"] if cuda else None,
        "hardware": hardware,
        "execution": hostinfo.execution_record(engine, image, hardware, software),
        "memory": memory,
        "buffer_inventory": inventory,
        "cache_reference": cache_reference(hardware),
        "timing": {"first_invocation_cuda_ms": cuda_ms, "first_invocation_wall_ms": wall_ms,
                   "scope": "first run() after prepare (reset + two epochs + predict), CUDA events "
                            "around it, synchronised; includes first-use effects"},
        "profile": profile,
        "energy": energy_record,
        "metadata": metadata,
        "same_process_reference_hashes_matched": list(learner.STATE_HASH_KEYS),
        "frozen_qualification_comparison": "Must be performed independently by the orchestrator",
        "predictions_file": pred_path.name,
        "predictions_file_sha256": archive.file_sha256(pred_path),
        "test_labels_read": False,
        "warnings": captured.summary() if captured is not None else [],
        "timeline": timeline.as_record(),
        "placement": placement,
        **({"learner": learner_block} if learner_block is not None else {}),
    }
    if output_path.name.endswith(".gz"):
        archive.write_json_gz(output_path, record)
    else:
        archive.write_json(output_path, record)
    print(timeline.line(), file=sys.stderr, flush=True)
    return record


def main(argv: list[str] | None = None) -> int:
    """``python -m bundle.fixture``: parse arguments, run, print one line; errors -> one line, exit 2."""
    import argparse  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog="python -m bundle.fixture", description=__doc__.split("\n")[0])
    parser.add_argument("--input", required=True, type=Path, help="input npz (exactly the three arrays)")
    parser.add_argument("--config", required=True, type=Path, help="config JSON (epochs 2)")
    parser.add_argument("--output", required=True, type=Path, help="record path (.json.gz or .json)")
    parser.add_argument("--mode", required=True, choices=MODES)
    parser.add_argument("--scope", default="task", choices=SCOPES)
    parser.add_argument("--repeats", default=16, type=int)
    parser.add_argument("--energy", default="none", choices=ENERGY_MODES)
    parser.add_argument("--energy-config", default=None, type=Path)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--learner", default=DEFAULT_LEARNER, choices=LEARNERS)
    args = parser.parse_args(argv)
    try:
        record = run_fixture(
            args.input, args.config, args.output, mode=args.mode, scope=args.scope, repeats=args.repeats,
            energy=args.energy, energy_config_path=args.energy_config, device=args.device, learner=args.learner,
        )
    except BundleError as exc:
        print(f"rev88 fixture: error: {exc}", file=sys.stderr)
        return exc.exit_code
    memory = record.get("memory") or {}
    peak = memory.get("prepare_and_invoke_peak_allocated_bytes")
    peak_text = f"peak allocated {peak} B" if peak is not None else "no CUDA memory figures (cpu diagnostic)"
    print(f"fixture {record['mode']}/{record['requested_scope']} {record['cublas_workspace_config']}: "
          f"{peak_text}, predictions {record['metadata']['predictions_sha256']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
