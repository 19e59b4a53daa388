"""Hardware, software and execution records, read at run time.

Nothing here asserts a GPU model, an L2 size or a driver: the original scripts required an
A100 and a 40 MiB L2 (spec 8.3); this bundle records whatever device it runs on. torch and
NVML (``nvidia-ml-py``, module ``pynvml``) are imported lazily inside the functions, so the
module itself is torch-free. When NVML is missing or fails, its fields are ``null`` and
``nvml_unavailable_reason`` says why.
"""

from __future__ import annotations

import importlib.metadata
import platform
import sys
from collections.abc import Mapping
from typing import Any

# The pinned image of the reproduction (spec 8.3): torch 2.5.1+cu124, Python 3.11, numpy 2.2.6.
PINNED_SOFTWARE = {"python": "3.11", "torch": "2.5.1+cu124", "cuda": "12.4", "numpy": "2.2.6"}
PINNED_DESCRIPTION = "the pinned CUDA 12.4 / PyTorch 2.5.1 image"


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
        ``cuda_unavailable_reason``. Missing facts are ``None``; nothing is asserted.
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
    return record


def software_matches_pin(software: Mapping[str, Any]) -> bool:
    """Whether *software* is the pinned stack (Python 3.11.x, torch 2.5.1+cu124, CUDA 12.4, numpy 2.2.6)."""
    python = str(software.get("python") or "")
    return (
        (python == PINNED_SOFTWARE["python"] or python.startswith(PINNED_SOFTWARE["python"] + "."))
        and software.get("torch") == PINNED_SOFTWARE["torch"]
        and software.get("cuda") == PINNED_SOFTWARE["cuda"]
        and software.get("numpy") == PINNED_SOFTWARE["numpy"]
    )


def execution_record(
    engine: str,
    image_reference: str | None,
    hardware: Mapping[str, Any],
    software: Mapping[str, Any],
) -> dict[str, Any]:
    """Where and how a phase ran, stated plainly (for ``environment.json.gz``).

    Args:
        engine: ``"native"`` or ``"docker"`` (an engine's ``kind``).
        image_reference: the container image (``None`` natively).
        hardware: a :func:`hardware_record` (usually the one a fixture job recorded).
        software: a :func:`software_record` from the same job.

    Returns:
        ``{"engine", "image_reference", "pinned_image", "statement", "gpu", "gpu_uuid",
        "driver_version", "software", "host_python"}``; ``pinned_image`` is true only for a
        container whose stack matches :data:`PINNED_SOFTWARE`.
    """
    pinned = engine == "docker" and software_matches_pin(software)
    gpu = hardware.get("name") or "no CUDA device"
    where = f"{engine} {gpu}" if engine == "native" else f"docker image {image_reference} on {gpu}"
    stack = f"torch {software.get('torch')}"
    verdict = PINNED_DESCRIPTION if pinned else f"not {PINNED_DESCRIPTION}"
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
    }
