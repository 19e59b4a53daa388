"""Where a record says it ran: the pinned-image claim, the image marker, the CPU block.

* ``pinned_image: true`` needs a well-formed ``image_marker`` (``protocol.host_records.image_marker_problems``),
  engine ``docker``, the pinned software stack, and the marker's ``torch``/``numpy`` equal to
  the record's software (``protocol.host_records.pinned_image_holds``, the writer's own rule);
* a recorded marker's ``lock_sha256`` equals the sha256 of ``docker/requirements-gpu.lock``
  when that file can be found (``protocol.hostrefs.GPU_LOCK_FILE``: ``$REV88_GPU_LOCK_FILE``, else
  the checkout's copy, else the image's); otherwise that sub-check is UNAVAILABLE, never PASS;
* ``image_id``, where recorded and not null, reads ``sha256:<64 hex>``;
* a ``cpu`` block (hardware records, in-process qualification records, executions) holds a
  non-empty ``model`` and positive integer thread counts (``protocol.host_records.cpu_record_problems``).

Older records have none of these keys and ``pinned_image: false``: nothing here applies to them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from protocol import host_records as hostinfo
from protocol.hostrefs import GPU_LOCK_FILE
from verify import safeio
from verify.result import CheckResult, check_equal, check_true, failed, unavailable

LOCK_FILE_ENV = GPU_LOCK_FILE.env
MARKER_CHECK = "consistency.image_marker"
LOCK_CHECK = "consistency.image_marker.lock_sha256"
IMAGE_ID_CHECK = "consistency.image_id"
CPU_CHECK = "consistency.cpu"


def gpu_lock_file() -> tuple[Path | None, str]:
    """The GPU image's lock file this verifier compares markers with (``protocol.hostrefs.GPU_LOCK_FILE``).

    Returns:
        ``(path, where)`` with *where* naming how it was found (``$REV88_GPU_LOCK_FILE=…`` or the
        path), or ``(None, reason)`` when ``$REV88_GPU_LOCK_FILE`` names no file or, unset, neither
        the checkout's ``docker/requirements-gpu.lock`` nor the image's copy exists.
    """
    named = GPU_LOCK_FILE.named()
    found = GPU_LOCK_FILE.find()
    if named is not None:
        if found is not None:
            return found[0], f"{LOCK_FILE_ENV}={named}"
        return None, f"{LOCK_FILE_ENV}={named} is not a file"
    if found is not None:
        return found[0], str(found[0])
    return None, (f"{hostinfo.IMAGE_LOCK_FILE} is not on this host (looked at {GPU_LOCK_FILE.looked_at()}) and "
                  f"{LOCK_FILE_ENV} is unset")


def _lock_sha256(path: Path) -> str:
    # a regular file of at most 16 MiB (a FIFO or /dev/zero named by the variable is refused, never read)
    return hashlib.sha256(safeio.read_regular(path, limit=16 << 20, where=LOCK_FILE_ENV, follow_symlinks=True)).hexdigest()


def check_execution_block(ex: Any, subject: str) -> list[CheckResult]:
    """The pinned-image claim, marker, lock sha and image ID of one execution block.

    Args:
        ex: an execution object (``environment.json.gz`` ``executions[i]`` or a record's ``execution``).
        subject: what the verdicts name (file and position).

    Returns:
        Nothing for a block that claims no pinned image and records no marker or image ID (every
        older record); else ``consistency.image_marker``, ``consistency.image_marker.lock_sha256``
        and ``consistency.image_id`` verdicts.
    """
    if not isinstance(ex, Mapping):
        return []
    out: list[CheckResult] = []
    pinned = ex.get("pinned_image")
    marker = ex.get("image_marker")
    software = ex.get("software") if isinstance(ex.get("software"), Mapping) else {}
    if pinned is True or marker is not None:
        problems = [] if marker is not None else ["no image_marker is recorded"]
        if marker is not None:
            problems += hostinfo.image_marker_problems(marker)
        if pinned is True:
            if ex.get("engine") != "docker":
                problems.append(f"engine is {ex.get('engine')!r}, not docker")
            if not hostinfo.software_matches_pin(software):
                problems.append(f"software {dict(software)} is not the pinned stack")
            if isinstance(marker, Mapping):
                for key in ("torch", "numpy"):
                    if marker.get(key) != software.get(key):
                        problems.append(f"the marker's {key} {marker.get(key)!r} differs from the software's "
                                        f"{software.get(key)!r}")
        claim = "claims the pinned image" if pinned is True else "records an image marker"
        out.append(check_true(MARKER_CHECK, subject, not problems,
                              f"{claim} but {'; '.join(problems[:4])}: only a container with the image's own "
                              "marker (read by the writer's bundle.hostinfo.read_image_marker) and the pinned versions may claim it",
                              recorded=marker))
    if isinstance(marker, Mapping) and isinstance(marker.get("lock_sha256"), str) \
            and hostinfo.SHA256_RE.fullmatch(marker["lock_sha256"]):
        lock, where = gpu_lock_file()
        if lock is None:
            out.append(unavailable(LOCK_CHECK, subject, f"the marker's lock_sha256 cannot be compared: {where}",
                                   recorded=marker["lock_sha256"]))
        else:
            out.append(check_equal(LOCK_CHECK, subject, marker["lock_sha256"], _lock_sha256(lock),
                                   what=f"image marker lock_sha256 vs sha256 of {where}"))
    image_id = ex.get("image_id")
    if image_id is not None:
        out.append(check_true(IMAGE_ID_CHECK, subject, isinstance(image_id, str)
                              and bool(hostinfo.IMAGE_ID_RE.fullmatch(image_id)),
                              f"image_id {image_id!r:.80} is not sha256:<64 hex>", recorded=image_id))
    return out


def check_cpu_block(cpu: Any, subject: str, *, optional: bool = True) -> list[CheckResult]:
    """One ``cpu`` block: non-empty ``model``, positive integer thread counts.

    Args:
        cpu: the recorded block (``None`` where absent).
        subject: what the verdict names.
        optional: ``None`` passes silently (older records carry no block).

    Returns:
        One ``consistency.cpu`` verdict, or nothing for an absent optional block.
    """
    if cpu is None and optional:
        return []
    problems = hostinfo.cpu_record_problems(cpu)
    return [check_true(CPU_CHECK, subject, not problems, f"{'; '.join(problems[:4])}: the cpu block must name the "
                       "CPU model and the torch thread counts (bundle.hostinfo.cpu_record)", recorded=cpu)]


def check_hardware_cpu(hardware: Any, subject: str) -> list[CheckResult]:
    """The ``cpu`` block of a hardware object, where present.

    Older in-process qualification records store ``hardware.cpu`` as the bare processor string
    (with ``cpu_count``/``torch_threads`` beside it); those are accepted unchecked.
    """
    if not isinstance(hardware, Mapping) or "cpu" not in hardware:
        return []
    cpu = hardware["cpu"]
    if isinstance(cpu, str) and "cpu_count" in hardware:
        return []
    if cpu is None:
        return [failed(CPU_CHECK, subject, "hardware.cpu is null: a record that carries the key must state the CPU "
                       "model and torch thread counts")]
    return check_cpu_block(cpu, subject, optional=False)
