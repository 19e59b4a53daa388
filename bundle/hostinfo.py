"""Hardware, software and execution records, read at run time.

Nothing here asserts a GPU model, an L2 size or a driver: the original scripts required an
A100 and a 40 MiB L2 (spec 8.3); this bundle records whatever device it runs on. torch and
NVML (``nvidia-ml-py``, module ``pynvml``) are imported lazily inside the functions, so the
module itself is torch-free. When NVML is missing or fails, its fields are ``null`` and
``nvml_unavailable_reason`` says why.

Every hardware record carries a ``cpu`` block (:func:`cpu_record`: CPU model and torch thread
counts), because CPU final-state bits depend on them. Whether a job ran in the pinned image
is decided by the image's marker file (:func:`read_image_marker`), never by the mere presence
of a container: :func:`pinned_image_holds` is the one rule, shared with the verifier.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from protocol.errors import BundleError
from protocol.host_records import (  # noqa: F401  (the record rules; re-exported for the writer's call sites)
    CPU_RECORD_KEYS,
    IMAGE_ID_RE,
    IMAGE_LOCK_FILE,
    IMAGE_MARKER_KEYS,
    IMAGE_MARKER_SCHEMA,
    IMAGE_MARKER_TARGET,
    PINNED_SOFTWARE,
    SHA256_RE,
    cpu_record_problems,
    image_marker_problems,
    pinned_image_holds,
    software_matches_pin,
)

PINNED_DESCRIPTION = "the pinned CUDA 12.4 / PyTorch 2.5.1 image"
ENGINES = ("native", "docker", "slurm")  #: engine kinds (``bundle.jobs``, ``docker_engine``, ``slurm_engine``)

# The GPU image's marker (written at image build time; see docs/evidence-format.md).
IMAGE_MARKER_ENV = "REV88_IMAGE_MARKER"
DEFAULT_IMAGE_MARKER = Path("/opt/rev88/image.json")
IMAGE_LOCK_SHA_ENV = "REV88_IMAGE_LOCK_SHA256"
IMAGE_ID_ENV = "REV88_IMAGE_ID"
IMAGE_MARKER_MAX_BYTES = 65536


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def software_record() -> dict[str, Any]:
    """Versions of the software stack of this process (imports torch lazily).

    Returns:
        ``{"python", "torch", "cuda", "numpy", "nvidia_ml_py"}`` (the original's ``software``
        keys plus ``nvidia_ml_py``); ``cuda`` is ``torch.version.cuda`` (``None`` on CPU builds).
    """
    import numpy  # noqa: PLC0415
    import torch  # noqa: PLC0415

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "numpy": numpy.__version__,
        "nvidia_ml_py": _dist_version("nvidia-ml-py"),
    }


def cpu_model() -> str:
    """The CPU model of this host, as the kernel names it.

    Returns:
        The first ``model name`` of ``/proc/cpuinfo`` (e.g. ``"AMD EPYC"``), else
        ``platform.processor()``, else ``platform.machine()``, else ``"unknown"``; never empty.
    """
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, sep, value = line.partition(":")
                if sep and key.strip() == "model name" and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor().strip() or platform.machine().strip() or "unknown"


def cpu_record() -> dict[str, Any]:
    """The CPU this process computes on and torch's thread settings (imports torch lazily).

    CPU results of the learner depend on both: final-state bits can differ between thread
    counts and CPU models while the predictions stay equal (see ``bundle/learner.py``).

    Returns:
        ``{"model": str (non-empty, :func:`cpu_model`), "logical_cpus": int | None
        (``os.cpu_count()``), "torch_num_threads": int (intra-op, ``torch.get_num_threads()``),
        "torch_num_interop_threads": int (``torch.get_num_interop_threads()``)}``.
    """
    import torch  # noqa: PLC0415

    return {
        "model": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "torch_num_threads": int(torch.get_num_threads()),
        "torch_num_interop_threads": int(torch.get_num_interop_threads()),
    }


def _torch_bus_id(props: Any) -> str | None:
    parts = [getattr(props, f"pci_{k}_id", None) for k in ("domain", "bus", "device")]
    if any(p is None for p in parts):
        return None
    return f"{parts[0]:08X}:{parts[1]:02X}:{parts[2]:02X}.0"


def _nvml_fields(uuid: str | None) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "nvml_pci_bus_id": None,
        "driver_version": None,
        "cuda_driver_version": None,
        "power_limit_w": None,
        "nvml_available": False,
        "nvml_unavailable_reason": None,
    }
    try:
        import pynvml  # noqa: PLC0415
    except ImportError:
        fields["nvml_unavailable_reason"] = "nvidia-ml-py (pynvml) is not installed"
        return fields
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError subclasses, missing libnvidia-ml
        fields["nvml_unavailable_reason"] = f"nvmlInit failed: {exc}"
        return fields
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        fields["driver_version"] = driver.decode() if isinstance(driver, bytes) else driver
        cuda_driver = pynvml.nvmlSystemGetCudaDriverVersion()
        fields["cuda_driver_version"] = f"{cuda_driver // 1000}.{cuda_driver % 1000 // 10}"
        if uuid is None:
            fields["nvml_unavailable_reason"] = "no CUDA device UUID to select an NVML handle"
        else:
            handle = pynvml.nvmlDeviceGetHandleByUUID(uuid)
            bus = pynvml.nvmlDeviceGetPciInfo(handle).busId
            fields["nvml_pci_bus_id"] = bus.decode() if isinstance(bus, bytes) else bus
            fields["power_limit_w"] = pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0
            fields["nvml_available"] = True
    except Exception as exc:
        fields["nvml_unavailable_reason"] = f"NVML query failed: {exc}"
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass
    return fields


def hardware_record(device_index: int = 0) -> dict[str, Any]:
    """The GPU this process uses, read from torch and NVML at run time.

    Reading device properties initialises CUDA: call it only after the workspace
    configuration is in place (the fixture calls it after ``torch.cuda.init()``).

    Args:
        device_index: CUDA device ordinal.

    Returns:
        Keys: ``device_index``, ``name``, ``uuid`` ("GPU-…"), ``cuda_pci_bus_id``,
        ``nvml_pci_bus_id``, ``l2_cache_bytes`` (bytes, as the device reports it),
        ``sm_count``, ``total_memory_bytes``, ``compute_capability`` ("9.0"),
        ``driver_version``, ``cuda_driver_version``, ``power_limit_w`` (W, NVML enforced
        limit), ``nvml_available``, ``nvml_unavailable_reason``, ``cuda_available``,
        ``cuda_unavailable_reason``, then ``cpu`` (:func:`cpu_record`: the CPU model and torch
        thread counts of this process). Missing facts are ``None``; nothing is asserted.
    """
    import torch  # noqa: PLC0415

    record: dict[str, Any] = {
        "device_index": device_index,
        "name": None,
        "uuid": None,
        "cuda_pci_bus_id": None,
        "l2_cache_bytes": None,
        "sm_count": None,
        "total_memory_bytes": None,
        "compute_capability": None,
        "cuda_available": bool(torch.cuda.is_available()),
        "cuda_unavailable_reason": None,
    }
    if not record["cuda_available"]:
        record["cuda_unavailable_reason"] = f"torch {torch.__version__} reports no CUDA device"
    else:
        props = torch.cuda.get_device_properties(device_index)
        uuid = getattr(props, "uuid", None)
        record.update(
            name=props.name,
            uuid=None if uuid is None else f"GPU-{uuid}",
            cuda_pci_bus_id=_torch_bus_id(props),
            l2_cache_bytes=getattr(props, "L2_cache_size", None),
            sm_count=props.multi_processor_count,
            total_memory_bytes=props.total_memory,
            compute_capability=f"{props.major}.{props.minor}",
        )
    record.update(_nvml_fields(record["uuid"]))
    record["cpu"] = cpu_record()
    return record


def execution_engine() -> tuple[str, str | None]:
    """Engine kind and image of this process, as the phase that started it says.

    The phases set ``REV88_ENGINE`` (``native`` or ``docker``) and, in a container,
    ``REV88_IMAGE_REFERENCE`` in every job's environment. Nothing is guessed from the file
    system: a ``/.dockerenv`` proves no image, so without ``REV88_ENGINE`` the engine is native.

    Returns:
        ``(engine, image_reference)``; the reference is ``None`` when unset or empty.

    Raises:
        BundleError: ``REV88_ENGINE`` holds something other than ``native``, ``docker`` or ``slurm``.
    """
    engine = os.environ.get("REV88_ENGINE") or "native"
    if engine not in ENGINES:
        raise BundleError(f"REV88_ENGINE={engine!r} is not an engine kind: the phases set native, docker or slurm; "
                          "unset it or fix the job environment")
    return engine, os.environ.get("REV88_IMAGE_REFERENCE") or None


def image_marker_path() -> Path:
    """Where this process looks for the image marker: ``$REV88_IMAGE_MARKER``, else ``/opt/rev88/image.json``."""
    return Path(os.environ.get(IMAGE_MARKER_ENV) or DEFAULT_IMAGE_MARKER)


def image_id_from_env() -> str | None:
    """The container's image ID from ``REV88_IMAGE_ID`` when it reads ``sha256:<64 hex>``, else ``None``."""
    value = os.environ.get(IMAGE_ID_ENV)
    return value if value and IMAGE_ID_RE.fullmatch(value) else None


def read_image_marker(path: str | os.PathLike[str] | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """The GPU image's marker, if this process runs in that image.

    Valid only when *path* is a regular file (not a link) of at most 64 KiB holding a JSON object
    without :func:`image_marker_problems`, and its ``lock_sha256`` equals ``$REV88_IMAGE_LOCK_SHA256``
    (baked into the image when it was built, so a marker copied elsewhere does not count).

    Args:
        path: the marker file (default :func:`image_marker_path`).

    Returns:
        ``(marker, None)`` with the marker's keys plus ``image_id`` (:func:`image_id_from_env`),
        or ``(None, reason)`` with one line saying why there is no valid marker. Never raises.
    """
    path = Path(path) if path is not None else image_marker_path()
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None, f"no image marker at {path}"
    except OSError as exc:
        return None, f"image marker {path} is unreadable ({exc.strerror or exc})"
    if not stat.S_ISREG(info.st_mode):
        return None, f"image marker {path} is not a regular file"
    if info.st_size > IMAGE_MARKER_MAX_BYTES:
        return None, f"image marker {path} is larger than {IMAGE_MARKER_MAX_BYTES} bytes"
    try:
        marker = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return None, f"image marker {path} is not JSON ({str(exc).splitlines()[0]})"
    problems = image_marker_problems({k: v for k, v in marker.items() if k != "image_id"}
                                     if isinstance(marker, dict) else marker)
    if problems:
        return None, f"image marker {path} is malformed: {'; '.join(problems[:3])}"
    baked = os.environ.get(IMAGE_LOCK_SHA_ENV)
    if not baked:
        return None, f"{IMAGE_LOCK_SHA_ENV} is not set, so the marker {path} is not the image's own"
    if baked != marker["lock_sha256"]:
        return None, (f"image marker {path} names lock sha256 {marker['lock_sha256'][:12]}... but "
                      f"{IMAGE_LOCK_SHA_ENV} is {baked[:12]}...")
    return {**{k: v for k, v in marker.items() if k != "image_id"}, "image_id": image_id_from_env()}, None


def image_marker() -> dict[str, Any] | None:
    """This process's valid image marker (see :func:`read_image_marker`), or ``None``."""
    return read_image_marker()[0]


_READ_MARKER = object()


def execution_record(
    engine: str,
    image_reference: str | None,
    hardware: Mapping[str, Any],
    software: Mapping[str, Any],
    *,
    marker: Mapping[str, Any] | None | object = _READ_MARKER,
) -> dict[str, Any]:
    """Where and how a phase ran, stated plainly (for ``environment.json.gz`` and job records).

    Args:
        engine: ``"native"`` or ``"docker"`` (an engine's ``kind``).
        image_reference: the container image (``None`` natively).
        hardware: a :func:`hardware_record` (usually the one a fixture job recorded); its ``cpu``
            block, when present, is copied.
        software: a :func:`software_record` from the same job.
        marker: the job's image marker (:func:`read_image_marker` in the job's process) or
            ``None``; by default this process's own marker is read. Pass the job's when the
            record is assembled outside the job (a host-side probe).

    Returns:
        ``{"engine", "image_reference", "pinned_image", "statement", "gpu", "gpu_uuid",
        "driver_version", "software", "host_python", "cpu", "image_marker", "image_id"}``;
        ``pinned_image`` follows :func:`pinned_image_holds`; ``image_id`` is the marker's, else
        :func:`image_id_from_env`.
    """
    reason = None
    if marker is _READ_MARKER:
        marker, reason = read_image_marker()
    marker = dict(marker) if isinstance(marker, Mapping) else None
    pinned = pinned_image_holds(engine, marker, software)
    gpu = hardware.get("name") or "no CUDA device (CPU only: no GPU was used)"
    where = (f"docker image {image_reference} on {gpu}" if engine == "docker"
             else f"slurm job on {gpu}" if engine == "slurm" else f"{engine} {gpu}")
    stack = f"torch {software.get('torch')}"
    verdict = PINNED_DESCRIPTION if pinned else f"not {PINNED_DESCRIPTION}"
    if engine == "docker" and not pinned:
        verdict += f" ({_not_pinned_reason(marker, reason, software)})"
    return {
        "engine": engine,
        "image_reference": image_reference,
        "pinned_image": pinned,
        "statement": f"{where}, {stack} - {verdict}",
        "gpu": hardware.get("name"),
        "gpu_uuid": hardware.get("uuid"),
        "driver_version": hardware.get("driver_version"),
        "software": dict(software),
        "host_python": sys.version.split()[0],
        "cpu": dict(hardware["cpu"]) if isinstance(hardware.get("cpu"), Mapping) else None,
        "image_marker": marker,
        "image_id": (marker or {}).get("image_id") or image_id_from_env(),
    }


def _not_pinned_reason(marker: Mapping[str, Any] | None, reason: str | None, software: Mapping[str, Any]) -> str:
    if marker is None:
        return reason or "no valid image marker"
    if image_marker_problems(marker):
        return "malformed image marker"
    if not software_matches_pin(software):
        return "software is not the pinned stack"
    return f"image marker names torch {marker.get('torch')} / numpy {marker.get('numpy')}"
