"""NVML adapter: the only module that calls ``pynvml`` (nvidia-ml-py), plus a recorder and replay.

Layers (as Zeus keeps vendor calls behind one GPU class):

* a *backend* answers ``call(name, *args)`` with plain JSON values, ``name`` being the pynvml
  function (``nvmlDeviceGetTotalEnergyConsumption``); :class:`PynvmlBackend` is the real one,
  :class:`RecordingBackend` writes every call as a JSON line, :class:`ReplayBackend` reads such a
  log back and fails when the call sequence drifts (as Zeus's ``ReplayZeusMonitor``);
* :class:`NvmlDevice` turns a backend into the energy counter, telemetry and hardware record.

NVML errors are mapped once, by code, to one-line :class:`BundleError` s
(:func:`nvml_error`). Log line format: ``{"seq", "channel", "call", "args", "value" |
"error_code", "t_start_s", "t_end_s"}`` (``channel`` is ``main`` or ``sampler``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from bundle.energy import SAMPLER_THREAD_NAME, Telemetry
from protocol.errors import BundleError

RECORD_ENV = "REV88_NVML_RECORD"
"""Environment variable: path of a JSON-lines file that receives every NVML reading."""

NVML_FI_DEV_POWER_INSTANT = 186
NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_MEM = 2

# NVML return codes (nvml.h; tests check them against pynvml).
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15

_ERROR_TEXT = {
    NVML_ERROR_UNINITIALIZED: ("NVML is not initialised", "call nvmlInit first (a bug in the caller)"),
    NVML_ERROR_NOT_SUPPORTED: ("not supported on this GPU", "use a GPU and driver that support it"),
    NVML_ERROR_NO_PERMISSION: ("no permission (NVML_ERROR_NO_PERMISSION)",
                               "run as a user allowed to read GPU counters, or give the container the GPU"),
    NVML_ERROR_NOT_FOUND: ("device not found", "check that the GPU is visible (nvidia-smi)"),
    NVML_ERROR_DRIVER_NOT_LOADED: ("NVIDIA driver not loaded", "load the driver (nvidia-smi must work)"),
    NVML_ERROR_LIBRARY_NOT_FOUND: ("no NVML library (libnvidia-ml.so.1 not found)",
                                   "install the NVIDIA driver or run with the NVIDIA container runtime"),
    NVML_ERROR_FUNCTION_NOT_FOUND: ("function missing from the NVML library", "update the NVIDIA driver"),
    NVML_ERROR_GPU_IS_LOST: ("GPU is lost", "reset or reboot the machine, then rerun"),
}

_OPTIONAL_CODES = (NVML_ERROR_NOT_SUPPORTED,)  # telemetry calls that may not answer


def nvml_error(call: str, code: int) -> BundleError:
    """Map an NVML return code from ``call`` to one user-facing line.

    The energy counter gets its own wording ("energy counter not supported on this GPU").
    """
    if call == "nvmlDeviceGetTotalEnergyConsumption" and code == NVML_ERROR_NOT_SUPPORTED:
        return BundleError("energy counter not supported on this GPU (nvmlDeviceGetTotalEnergyConsumption): "
                           "measure on a Volta or newer data-centre GPU")
    what, todo = _ERROR_TEXT.get(code, (f"NVML error code {code}", "check the GPU with nvidia-smi and rerun"))
    return BundleError(f"{what} ({call}): {todo}")


class NvmlCallError(Exception):
    """An NVML call that returned ``code`` (kept raw so the recorder and replay can log it)."""

    def __init__(self, call: str, code: int) -> None:
        super().__init__(f"{call} returned NVML error {code}")
        self.call = call
        self.code = code


class NvmlBackend(Protocol):
    """Answers NVML calls by pynvml function name with JSON-able values."""

    def call(self, name: str, *args: Any) -> Any:
        """Perform ``name(*args)`` (the device handle is implicit); raise :class:`NvmlCallError`."""
        ...


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class PynvmlBackend:
    """The real backend over ``pynvml``; holds the device handle after ``nvmlDeviceGetHandleByPciBusId``.

    Raises:
        BundleError: nvidia-ml-py is not installed.
    """

    def __init__(self) -> None:
        try:
            import pynvml  # noqa: PLC0415
        except ImportError:
            raise BundleError("no NVML python binding (import pynvml failed): "
                              "pip install 'rev88-bundle[gpu]' (nvidia-ml-py)") from None
        self.pynvml = pynvml
        self.handle: Any = None

    def call(self, name: str, *args: Any) -> Any:
        """See :class:`NvmlBackend`."""
        nv = self.pynvml
        try:
            if name in ("nvmlInit", "nvmlShutdown"):
                getattr(nv, name)()
                return None
            if name == "nvmlSystemGetDriverVersion":
                return _text(nv.nvmlSystemGetDriverVersion())
            if name == "nvmlDeviceGetHandleByPciBusId":
                self.handle = nv.nvmlDeviceGetHandleByPciBusId(str(args[0]).encode())
                return "handle"
            if self.handle is None:
                raise NvmlCallError(name, NVML_ERROR_UNINITIALIZED)
            if name == "nvmlDeviceGetPciInfo":
                return {"busId": _text(nv.nvmlDeviceGetPciInfo(self.handle).busId)}
            if name == "nvmlDeviceGetFieldValues":
                out = []
                for item in nv.nvmlDeviceGetFieldValues(self.handle, list(args[0])):
                    ret = int(item.nvmlReturn)
                    member = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")[int(item.valueType)]
                    out.append({"fieldId": int(item.fieldId), "nvmlReturn": ret,
                                "value": getattr(item.value, member) if ret == 0 else None})
                return out
            value = getattr(nv, name)(self.handle, *args)
            return _text(value) if isinstance(value, bytes | str) else value
        except nv.NVMLError as exc:
            raise NvmlCallError(name, int(exc.value)) from None


class RecordingBackend:
    """Wraps a backend and appends every call (args, value or error code, times) to a JSON-lines file.

    Thread-safe; calls from the power-sampler thread are tagged ``channel: "sampler"``.
    """

    def __init__(self, inner: NvmlBackend, path: str | os.PathLike[str],
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.inner = inner
        self.path = Path(path)
        self.clock = clock
        self.seq = 0
        self.lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.file = self.path.open("w", encoding="ascii")

    def call(self, name: str, *args: Any) -> Any:
        """See :class:`NvmlBackend`; the call is logged whether it answers or fails."""
        t_start = self.clock()
        entry: dict[str, Any] = {"call": name, "args": list(args)}
        try:
            value = self.inner.call(name, *args)
            entry["value"] = value
            return value
        except NvmlCallError as exc:
            entry["error_code"] = exc.code
            raise
        finally:
            entry["t_start_s"], entry["t_end_s"] = t_start, self.clock()
            channel = "sampler" if threading.current_thread().name == SAMPLER_THREAD_NAME else "main"
            with self.lock:
                line = {"seq": self.seq, "channel": channel, **entry}
                self.seq += 1
                self.file.write(json.dumps(line, allow_nan=False) + "\n")
                self.file.flush()
                if name == "nvmlShutdown":
                    self.file.close()


class ReplayBackend:
    """Replays a recorded NVML log; fails when the call sequence drifts.

    Calls from the sampler thread are served from the ``sampler`` channel, all others from
    ``main``. :meth:`clock` replays the recorded times around each call, so the energy
    protocol's stamps reproduce the recorded ones (a stamp reads the clock, the counter, the
    clock).

    Raises:
        BundleError: on drift ("NVML replay drifted at entry N: expected X, got Y") or when
            the log is exhausted.
    """

    def __init__(self, entries: list[dict[str, Any]], *, source: str = "NVML log") -> None:
        self.source = source
        self.queues = {ch: [e for e in entries if e.get("channel", "main") == ch] for ch in ("main", "sampler")}
        self.pos = {"main": 0, "sampler": 0}
        self._pending_end: float | None = None

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> ReplayBackend:
        """Read a JSON-lines log written by :class:`RecordingBackend`."""
        lines = Path(path).read_text(encoding="ascii").splitlines()
        return cls([json.loads(line) for line in lines if line.strip()], source=str(path))

    def call(self, name: str, *args: Any) -> Any:
        """See :class:`NvmlBackend`."""
        channel = "sampler" if threading.current_thread().name == SAMPLER_THREAD_NAME else "main"
        queue, i = self.queues[channel], self.pos[channel]
        if i >= len(queue):
            raise BundleError(f"NVML replay exhausted at {name}{tuple(args)} ({self.source}, {channel} channel): "
                              "the protocol made more calls than were recorded")
        entry = queue[i]
        if entry["call"] != name or list(entry.get("args", [])) != list(args):
            raise BundleError(f"NVML replay drifted at {channel} entry {i} ({self.source}): expected "
                              f"{entry['call']}{tuple(entry.get('args', []))}, got {name}{tuple(args)}")
        self.pos[channel] = i + 1
        if channel == "main" and name == "nvmlDeviceGetTotalEnergyConsumption":
            self._pending_end = entry.get("t_end_s")
        if "error_code" in entry:
            raise NvmlCallError(name, int(entry["error_code"]))
        return entry.get("value")

    def clock(self) -> float:
        """Recorded time: the end of the counter read just served, else the start of the next call (s)."""
        if self._pending_end is not None:
            t, self._pending_end = self._pending_end, None
            return float(t)
        queue, i = self.queues["main"], self.pos["main"]
        if i < len(queue):
            return float(queue[i]["t_start_s"])
        return float(queue[-1]["t_end_s"]) if queue else 0.0

    def remaining(self, channel: str = "main") -> int:
        """Entries of ``channel`` not yet replayed."""
        return len(self.queues[channel]) - self.pos[channel]


def parse_pci_bus_id(text: str) -> tuple[int, int, int, int]:
    """Parse ``domain:bus:device.function`` as hex (``0000:50:00.0`` and ``00000000:50:00.0`` agree).

    Raises:
        BundleError: not of that form.
    """
    try:
        domain, bus, rest = text.strip().split(":")
        device, function = rest.split(".")
        return int(domain, 16), int(bus, 16), int(device, 16), int(function, 16)
    except ValueError:
        raise BundleError(f"PCI bus id {text!r} is not domain:bus:device.function (hex): "
                          "report the driver and torch versions") from None


class NvmlDevice:
    """One GPU through NVML, selected by the CUDA device's PCI bus id (spec 5.3).

    Implements :class:`bundle.energy.EnergyCounter`.
    """

    def __init__(self, backend: NvmlBackend, cuda_pci_bus_id: str, nvml_pci_bus_id: str) -> None:
        self.backend = backend
        self.cuda_pci_bus_id = cuda_pci_bus_id
        self.nvml_pci_bus_id = nvml_pci_bus_id
        self.closed = False

    def _call(self, name: str, *args: Any, optional: bool = False) -> Any:
        try:
            return self.backend.call(name, *args)
        except NvmlCallError as exc:
            if optional and exc.code in _OPTIONAL_CODES:
                return None
            raise nvml_error(name, exc.code) from None

    @classmethod
    def open(cls, cuda_pci_bus_id: str, backend: NvmlBackend) -> NvmlDevice:
        """nvmlInit, then the handle for ``cuda_pci_bus_id``; check both ids name one device.

        Raises:
            BundleError: no NVML library, no permission, no such device, or bus ids that differ.
        """
        probe = cls(backend, cuda_pci_bus_id, "")
        probe._call("nvmlInit")
        try:
            probe._call("nvmlDeviceGetHandleByPciBusId", cuda_pci_bus_id)
            nvml_bus = str(probe._call("nvmlDeviceGetPciInfo")["busId"])
            if parse_pci_bus_id(nvml_bus) != parse_pci_bus_id(cuda_pci_bus_id):
                raise BundleError(f"NVML device {nvml_bus} is not the CUDA device {cuda_pci_bus_id} "
                                  "(PCI bus ids differ): check CUDA_VISIBLE_DEVICES and the driver")
        except BaseException:
            probe.close()
            raise
        probe.nvml_pci_bus_id = nvml_bus
        return probe

    def read_energy_mj(self) -> int:
        """Cumulative energy since driver load, mJ (``nvmlDeviceGetTotalEnergyConsumption``)."""
        return int(self._call("nvmlDeviceGetTotalEnergyConsumption"))

    def instant_power_w(self) -> float | None:
        """Instantaneous power (W) from field NVML_FI_DEV_POWER_INSTANT (186), None if it does not answer."""
        values = self._call("nvmlDeviceGetFieldValues", [NVML_FI_DEV_POWER_INSTANT], optional=True)
        if not values or values[0]["nvmlReturn"] != 0 or values[0]["value"] is None:
            return None
        return float(values[0]["value"]) / 1000

    def telemetry(self) -> Telemetry:
        """Temperature (C), power (W, NVML 1 s average), graphics/memory clock (MHz), instant power (W)."""
        power_mw = self._call("nvmlDeviceGetPowerUsage", optional=True)
        return Telemetry(
            temperature_c=self._call("nvmlDeviceGetTemperature", NVML_TEMPERATURE_GPU, optional=True),
            power_w=None if power_mw is None else power_mw / 1000,
            graphics_clock_mhz=self._call("nvmlDeviceGetClockInfo", NVML_CLOCK_GRAPHICS, optional=True),
            memory_clock_mhz=self._call("nvmlDeviceGetClockInfo", NVML_CLOCK_MEM, optional=True),
            instant_power_w=self.instant_power_w(),
        )

    def hardware_record(self, total_memory_bytes: int) -> dict[str, Any]:
        """The original's hardware record (spec 5.3 key order); never asserts a GPU model."""
        limit_mw = self._call("nvmlDeviceGetPowerManagementLimit", optional=True)
        return {"gpu": self._call("nvmlDeviceGetName"), "uuid": self._call("nvmlDeviceGetUUID"),
                "total_memory_bytes": int(total_memory_bytes),
                "power_limit_w": None if limit_mw is None else limit_mw / 1000,
                "driver": self._call("nvmlSystemGetDriverVersion"), "cuda_pci_bus_id": self.cuda_pci_bus_id,
                "nvml_pci_bus_id": self.nvml_pci_bus_id, "nvml_handle_selected_by_cuda_pci_bus_id": True}

    def close(self) -> None:
        """nvmlShutdown (once)."""
        if not self.closed:
            self.closed = True
            self._call("nvmlShutdown")

    def __enter__(self) -> NvmlDevice:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        """Shut NVML down; a failure to do so never hides the error already propagating."""
        try:
            self.close()
        except BundleError:
            if exc_type is None:
                raise


def open_backend(record_path: str | os.PathLike[str] | None = None) -> NvmlBackend:
    """The real backend, recording to ``record_path`` (or ``$REV88_NVML_RECORD``) when given."""
    backend: NvmlBackend = PynvmlBackend()
    path = record_path or os.environ.get(RECORD_ENV)
    return RecordingBackend(backend, path) if path else backend


def nvidia_ml_py_version() -> str | None:
    """The installed nvidia-ml-py version, or None."""
    from importlib import metadata  # noqa: PLC0415

    try:
        return metadata.version("nvidia-ml-py")
    except metadata.PackageNotFoundError:
        return None
