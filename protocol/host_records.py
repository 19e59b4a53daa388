"""Rules for the host facts a record states: the pinned software, the GPU image's marker, the CPU block.

The writer (:mod:`bundle.hostinfo`) records these facts and decides ``pinned_image`` with
:func:`pinned_image_holds`; the verifier (:mod:`verify.checks.run_host`) checks the recorded facts with
the same rules, which are the protocol's definition of a well-formed record (``docs/evidence-format.md``).
Torch-free.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from protocol.hostrefs import GPU_LOCK_FILE

PINNED_SOFTWARE = {"python": "3.11", "torch": "2.5.1+cu124", "cuda": "12.4", "numpy": "2.2.6"}
"""The pinned image of the reproduction (spec 8.3): torch 2.5.1+cu124, Python 3.11, CUDA 12.4, numpy 2.2.6."""
IMAGE_MARKER_SCHEMA = "rev88-image/1"
"""``schema`` of the GPU image's marker (``/opt/rev88/image.json``)."""
IMAGE_MARKER_TARGET = "gpu"
"""``target`` of the GPU image's marker."""
IMAGE_LOCK_FILE = GPU_LOCK_FILE.repo_path  # "docker/requirements-gpu.lock": the marker's lock_file
IMAGE_MARKER_KEYS = ("schema", "target", "lock_file", "lock_sha256", "python", "torch", "numpy", "nvidia_ml_py",
                     "ncu_version", "ncu_source", "base_image")
"""Keys every image marker holds as non-empty strings."""
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
"""64 lowercase hex digits."""
IMAGE_ID_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
"""A docker image id: ``sha256:`` and 64 lowercase hex digits."""


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


CPU_RECORD_KEYS = ("model", "logical_cpus", "torch_num_threads", "torch_num_interop_threads")
"""Keys of a record's ``cpu`` block."""


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def cpu_record_problems(cpu: Any) -> list[str]:
    """What is wrong with a recorded ``cpu`` block (``bundle.hostinfo.cpu_record``; torch-free).

    Args:
        cpu: the parsed ``cpu`` object of a record.

    Returns:
        One short phrase per problem, empty when well formed: every key of :data:`CPU_RECORD_KEYS`
        present, ``model`` a non-empty string, the two torch thread counts positive integers,
        ``logical_cpus`` a positive integer or null.
    """
    if not isinstance(cpu, Mapping):
        return [f"the cpu block is {_kind(cpu)}, not an object"]
    problems = [f"cpu.{k} is missing" for k in CPU_RECORD_KEYS if k not in cpu]
    model = cpu.get("model")
    if "model" in cpu and not (isinstance(model, str) and model.strip()):
        problems.append(f"cpu.model {model!r:.40} is not a non-empty string")
    for key in ("logical_cpus", "torch_num_threads", "torch_num_interop_threads"):
        value = cpu.get(key)
        if key in cpu and not _positive_int(value) and not (key == "logical_cpus" and value is None):
            problems.append(f"cpu.{key} {value!r:.40} is not a positive integer")
    return problems


def software_matches_pin(software: Mapping[str, Any]) -> bool:
    """Whether *software* is the pinned stack (Python 3.11.x, torch 2.5.1+cu124, CUDA 12.4, numpy 2.2.6)."""
    python = str(software.get("python") or "")
    return (
        (python == PINNED_SOFTWARE["python"] or python.startswith(PINNED_SOFTWARE["python"] + "."))
        and software.get("torch") == PINNED_SOFTWARE["torch"]
        and software.get("cuda") == PINNED_SOFTWARE["cuda"]
        and software.get("numpy") == PINNED_SOFTWARE["numpy"]
    )


def image_marker_problems(marker: Any) -> list[str]:
    """What is wrong with an image marker's content (torch-free; the verifier uses it too).

    Args:
        marker: a parsed marker (the ``image_marker`` of a record, or ``/opt/rev88/image.json``).

    Returns:
        One short phrase per problem, empty when well formed: a JSON object holding every key of
        :data:`IMAGE_MARKER_KEYS` as a non-empty string, ``schema`` ``"rev88-image/1"``, ``target``
        ``"gpu"``, ``lock_file`` ``"docker/requirements-gpu.lock"``, ``lock_sha256`` 64 lowercase
        hex digits; an ``image_id``, if present, null or ``sha256:<64 hex>``.
    """
    if not isinstance(marker, Mapping):
        return [f"the marker is {_kind(marker)}, not a JSON object"]
    problems = [f"{k} is missing" for k in IMAGE_MARKER_KEYS if k not in marker]
    problems += [f"{k} is not a non-empty string" for k in IMAGE_MARKER_KEYS
                 if k in marker and not (isinstance(marker[k], str) and marker[k].strip())]
    for key, want in (("schema", IMAGE_MARKER_SCHEMA), ("target", IMAGE_MARKER_TARGET), ("lock_file", IMAGE_LOCK_FILE)):
        if isinstance(marker.get(key), str) and marker[key] != want:
            problems.append(f"{key} is {marker[key]!r:.60}, not {want!r}")
    lock = marker.get("lock_sha256")
    if isinstance(lock, str) and not SHA256_RE.fullmatch(lock):
        problems.append(f"lock_sha256 {lock!r:.70} is not 64 lowercase hex digits")
    image_id = marker.get("image_id")
    if image_id is not None and not (isinstance(image_id, str) and IMAGE_ID_RE.fullmatch(image_id)):
        problems.append(f"image_id {image_id!r:.80} is not sha256:<64 hex>")
    return problems


def pinned_image_holds(engine: str, marker: Mapping[str, Any] | None, software: Mapping[str, Any]) -> bool:
    """The rule for ``pinned_image`` (torch-free; the verifier applies the same rule).

    True only for engine ``docker`` with a well-formed marker (:func:`image_marker_problems`),
    *software* matching :data:`PINNED_SOFTWARE` and the marker's ``torch`` and ``numpy`` equal
    to the software's. A running container alone proves nothing.
    """
    return (engine == "docker" and marker is not None and not image_marker_problems(marker)
            and software_matches_pin(software)
            and marker.get("torch") == software.get("torch") and marker.get("numpy") == software.get("numpy"))
