"""The energy protocol inside the fixture process: CUDA events, synchronisation, PCI bus id.

``bundle.fixture`` calls :func:`measure_in_fixture` when run with ``--energy original`` (spec 5:
three trials in one process) or ``--energy trial`` (one trial of the interleaved protocol).
torch is imported inside functions only, so :func:`measure_protocol` (the device-independent
part) runs in tests with a replayed NVML log and a fake timer, without torch.
"""

from __future__ import annotations

import ctypes
import dataclasses
import glob
import os
import platform
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from bundle.energy import (
    COUNTER_UPDATE_INTERVAL_S,
    ORIGINAL_IDLE_S,
    ORIGINAL_SETTLE_S,
    ORIGINAL_TARGET_MS,
    ORIGINAL_TRIALS,
    PER_TASK_KEYS,
    SAMPLER_THREAD_NAME,
    EnergyCounter,
    EnergyTrial,
    EnergyWindows,
    Telemetry,
    invocations_for,
    summarise_original,
)
from protocol.errors import BundleError

SCOPE = ("Each invocation resets weights and momentum, trains two epochs from scratch and predicts all "
         "queries, as one GPU-resident graph replay sequence; the active window covers every invocation. "
         "Excluded: transfers, allocation, graph capture, host preprocessing and output verification.")

ORIGINAL_SETTINGS: dict[str, Any] = {"trials": ORIGINAL_TRIALS, "target_ms": ORIGINAL_TARGET_MS,
                                     "settle_seconds": ORIGINAL_SETTLE_S, "idle_seconds": ORIGINAL_IDLE_S}
"""Settings of ``--energy original`` (spec 5); overridable through ``--energy-config``."""

TRIAL_SETTINGS: dict[str, Any] = {"trial": 0, "settle_seconds": 2.0, "idle_seconds": 3.0, "active_seconds": 10.0,
                                  "align_stamps": True, "sample_interval_s": 0.05,
                                  "counter_update_interval_s": COUNTER_UPDATE_INTERVAL_S}
"""Settings of ``--energy trial`` (one interleaved trial); see docs/evidence-format.md, energy section."""


class PowerSampler:
    """Background thread reading instantaneous power at a fixed cadence (for plots, not figures).

    Args:
        read_power_w: returns W, or None when field 186 does not answer (sampling then stops).
        interval_s: cadence in seconds.
        clock: monotonic seconds, the same clock as the stamps.
    """

    def __init__(self, read_power_w: Callable[[], float | None], *, interval_s: float = 0.05,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.read_power_w = read_power_w
        self.interval_s = interval_s
        self.clock = clock
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=SAMPLER_THREAD_NAME, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            a = self.clock()
            watts = self.read_power_w()
            if watts is None:
                return
            self.samples.append(((a + self.clock()) / 2, watts))
            self._stop.wait(self.interval_s)

    def __enter__(self) -> PowerSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class TaskTimer(Protocol):
    """The device side of a trial (:class:`CudaTaskTimer`; fakes in tests)."""

    def run_invocations(self, invocations: int) -> float:
        """Run ``invocations`` fresh tasks, wait for them, return their CUDA-event time (ms)."""
        ...

    def synchronize(self) -> None:
        """Wait for all queued device work."""
        ...


class EnergyDevice(EnergyCounter, Protocol):
    """An energy counter with telemetry and a hardware record (:class:`bundle.nvml.NvmlDevice`)."""

    def telemetry(self) -> Telemetry: ...

    def instant_power_w(self) -> float | None: ...

    def hardware_record(self, total_memory_bytes: int) -> dict[str, Any]: ...


def measure_protocol(timer: TaskTimer, device: EnergyDevice, *, mode: str, calibration_ms: float,
                     total_memory_bytes: int, settings: Mapping[str, Any] | None = None,
                     clock: Callable[[], float] = time.perf_counter,
                     sleep: Callable[[float], None] = time.sleep, sample_power: bool = True) -> dict[str, Any]:
    """Run the energy protocol on an opened device after calibration (spec 5 steps 3-5 and 7).

    Args:
        mode: ``"original"`` (3 trials, ~5 s active windows, 3 s settle + 3 s idle, unaligned
            stamps, spec 5) or ``"trial"`` (one interleaved trial: stamps aligned to counter
            updates, ``active_seconds`` of invocations, instant power sampled in the background).
        calibration_ms: one invocation's CUDA-event time (ms).
        total_memory_bytes: the CUDA device's memory, for the hardware record.
        settings: overrides of :data:`ORIGINAL_SETTINGS` / :data:`TRIAL_SETTINGS` (``workspace_config``
            is accepted and ignored).
        clock, sleep: injected for replay tests.
        sample_power: run the background sampler in ``trial`` mode.

    Returns:
        ``{calibration_ms, repeats_per_trial, trials, summary (original only), hardware, settings}``.

    Raises:
        BundleError: unknown mode or setting, or any failure of the window protocol.
    """
    defaults = {"original": ORIGINAL_SETTINGS, "trial": TRIAL_SETTINGS}.get(mode)
    if defaults is None:
        raise BundleError(f"unknown energy mode {mode!r} (fixture --energy): use 'original' or 'trial'")
    unknown = sorted(set(settings or {}) - set(defaults) - {"workspace_config"})
    if unknown:
        raise BundleError(f"unknown energy settings {unknown} (--energy-config): known are {sorted(defaults)}")
    cfg = {**defaults, **{k: v for k, v in (settings or {}).items() if k != "workspace_config"}}
    hardware = device.hardware_record(total_memory_bytes)
    windows = EnergyWindows(device, clock=clock, sleep=sleep, synchronize=timer.synchronize,
                            counter_update_interval_s=cfg.get("counter_update_interval_s", COUNTER_UPDATE_INTERVAL_S),
                            align_stamps=bool(cfg.get("align_stamps", False)))
    trials: list[EnergyTrial] = []
    if mode == "original":
        repeats = invocations_for(calibration_ms, cfg["target_ms"])
        for k in range(int(cfg["trials"])):
            trial = windows.measure_trial(k, repeats, timer.run_invocations, device.telemetry,
                                          settle_s=cfg["settle_seconds"], idle_s=cfg["idle_seconds"])
            print(f"Energy trial {k} {trial.figures()['idle_adjusted_mj_per_task']} mJ/task", flush=True)
            trials.append(trial)
    else:
        repeats = invocations_for(calibration_ms, cfg["active_seconds"] * 1000, maximum=1_000_000)
        sampler = PowerSampler(device.instant_power_w if sample_power else (lambda: None),
                               interval_s=cfg["sample_interval_s"], clock=clock)
        with sampler:
            trial = windows.measure_trial(int(cfg["trial"]), repeats, timer.run_invocations, device.telemetry,
                                          settle_s=cfg["settle_seconds"], idle_s=cfg["idle_seconds"])
        trial = dataclasses.replace(trial, power_samples=tuple(sampler.samples))
        print(f"Energy trial {trial.trial} {trial.figures()['idle_adjusted_mj_per_task']} mJ/task", flush=True)
        trials.append(trial)
    out: dict[str, Any] = {"calibration_ms": calibration_ms, "repeats_per_trial": repeats,
                           "trials": [t.to_dict() for t in trials]}
    if mode == "original":
        out["summary"] = {key: summarise_original([t.figures()[key] for t in trials]) for key in PER_TASK_KEYS}
    out["hardware"] = hardware
    out["settings"] = {"mode": mode, **cfg}
    return out


def _cudart() -> ctypes.CDLL:
    """libcudart, searched as the original did (spec 5.3), site-packages generalised to sys.path."""
    candidates: list[str] = []
    for entry in sys.path:
        candidates += sorted(glob.glob(os.path.join(entry, "nvidia", "cuda_runtime", "lib", "libcudart.so*")))
    candidates += sorted(glob.glob("/usr/local/cuda/lib64/libcudart.so*")) + ["libcudart.so.12", "libcudart.so"]
    for name in candidates:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise BundleError("libcudart not found (PCI bus id of the CUDA device): install the CUDA runtime "
                      "(nvidia-cuda-runtime) or use torch >= 2.5 with pci_bus_id in device properties")


def cuda_pci_bus_id(device_index: int) -> str:
    """PCI bus id ``DDDD:BB:DD.F`` (hex) of CUDA device ``device_index``.

    From ``torch.cuda.get_device_properties`` (pci_domain_id/pci_bus_id/pci_device_id) where
    torch has them, otherwise ``cudaDeviceGetPCIBusId`` through ctypes (32-byte buffer).

    Raises:
        BundleError: no libcudart, or the runtime call fails.
    """
    import torch  # noqa: PLC0415

    props = torch.cuda.get_device_properties(device_index)
    if all(hasattr(props, a) for a in ("pci_domain_id", "pci_bus_id", "pci_device_id")):
        return f"{props.pci_domain_id:04X}:{props.pci_bus_id:02X}:{props.pci_device_id:02X}.0"
    buf = ctypes.create_string_buffer(32)
    code = _cudart().cudaDeviceGetPCIBusId(buf, ctypes.c_int(32), ctypes.c_int(device_index))
    if code != 0:
        raise BundleError(f"cudaDeviceGetPCIBusId returned {code} (CUDA device {device_index}): check the device")
    return buf.value.decode()


class CudaTaskTimer:
    """Runs invocations of a prepared CUDA task between CUDA events (spec 5.2 and 5.5)."""

    def __init__(self, task: Any) -> None:
        import torch  # noqa: PLC0415

        self.torch = torch
        self.task = task

    def synchronize(self) -> None:
        """``torch.cuda.synchronize()``."""
        self.torch.cuda.synchronize()

    def run_invocations(self, invocations: int) -> float:
        """Record start, ``invocations`` x ``task.run()``, record stop, wait for stop; return ms."""
        start = self.torch.cuda.Event(enable_timing=True)
        stop = self.torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(invocations):
            self.task.run()
        stop.record()
        stop.synchronize()
        return float(start.elapsed_time(stop))


def measure_in_fixture(task: Any, energy_mode: str, energy_config: Mapping[str, Any] | None = None, *,
                       backend: Any = None) -> dict[str, Any]:
    """The fixture's energy record (spec 5): warm run, outputs, calibration, trials, outputs again.

    Args:
        task: a CUDA :class:`bundle.learner.PreparedTask`.
        energy_mode: ``original`` or ``trial`` (see :func:`measure_protocol`).
        energy_config: settings overrides (JSON object from ``--energy-config``).
        backend: an NVML backend (default: pynvml, recorded to ``$REV88_NVML_RECORD`` when set).

    Returns:
        The original's energy keys (calibration_ms, repeats_per_trial, trials, summary, hardware,
        software, repeat_predictions_equal, repeat_state_hashes_equal, state_hash_keys_checked,
        scope, before_metadata, after_metadata) plus ``settings``.

    Raises:
        BundleError: NVML failures (no library, no permission, counter not supported or stuck,
            bus ids that differ) or outputs/state hashes changed by the trials.
    """
    import numpy as np  # noqa: PLC0415
    import torch  # noqa: PLC0415

    from bundle.nvml import NvmlDevice, nvidia_ml_py_version, open_backend  # noqa: PLC0415

    timer = CudaTaskTimer(task)
    task.run()
    timer.synchronize()
    before_predictions, before_metadata = task.outputs()
    before_hashes = task.state_hashes()
    calibration_ms = timer.run_invocations(1)
    index = task.device.index if task.device.index is not None else torch.cuda.current_device()
    with NvmlDevice.open(cuda_pci_bus_id(index), backend if backend is not None else open_backend()) as device:
        result = measure_protocol(timer, device, mode=energy_mode, calibration_ms=calibration_ms,
                                  total_memory_bytes=torch.cuda.get_device_properties(index).total_memory,
                                  settings=energy_config)
    after_predictions, after_metadata = task.outputs()
    after_hashes = task.state_hashes()
    predictions_equal = bool(np.array_equal(before_predictions, after_predictions))
    changed = [k for k in before_hashes if before_hashes[k] != after_hashes.get(k)]
    if not predictions_equal or changed:
        raise BundleError(f"energy trials changed the task's outputs (predictions equal: {predictions_equal}; "
                          f"hashes changed: {changed}): the invocation is not replay-deterministic; "
                          "keep this run out of evidence")
    software = {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
                "cuda": torch.version.cuda, "nvidia_ml_py": nvidia_ml_py_version()}
    return {"calibration_ms": result["calibration_ms"], "repeats_per_trial": result["repeats_per_trial"],
            "trials": result["trials"], **({"summary": result["summary"]} if "summary" in result else {}),
            "hardware": result["hardware"], "software": software, "repeat_predictions_equal": predictions_equal,
            "repeat_state_hashes_equal": not changed, "state_hash_keys_checked": list(before_hashes),
            "scope": SCOPE, "before_metadata": before_metadata, "after_metadata": after_metadata,
            "settings": result["settings"]}
