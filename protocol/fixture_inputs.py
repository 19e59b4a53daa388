"""The fixture's input file and the synthetic smoke inputs.

A fixture reads its inputs from one uncompressed ``.npz`` holding :data:`INPUT_KEYS`, written with
fixed zip entry times so equal arrays give equal bytes (and an equal ``input_archive_sha256``). The
smoke inputs are the original's API/CLI smoke data, drawn from a fixed seed. The writer builds both;
the verifier rebuilds them to recompute the recorded hashes.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping

import numpy as np

from protocol.errors import BundleError

INPUT_KEYS = ("train_images", "train_labels", "test_images")
"""Arrays of a fixture's input ``.npz``, in the order they are written."""

SMOKE_SEED = 9140914
"""PCG64 seed of the smoke inputs."""
SMOKE_TRAIN, SMOKE_QUERY = 19, 7
"""Rows of the smoke training set and of the smoke query set."""

_ZIP_DATE_TIME = (1980, 1, 1, 0, 0, 0)  # fixed zip entry time: equal arrays, equal bytes


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """An uncompressed ``.npz`` (as ``numpy.savez``) with fixed entry times, so its bytes are reproducible.

    Args:
        arrays: name -> array, written in the mapping's order; no object arrays.

    Returns:
        The zip archive's bytes (one ``<name>.npy`` member per array, stored, zip64).

    Raises:
        BundleError: an object array (would need pickle).
    """
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, value in arrays.items():
            arr = np.asarray(value)
            if arr.dtype.hasobject:
                raise BundleError(f"array {name} has dtype object: inputs must be numeric")
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE_TIME)
            with zf.open(info, "w", force_zip64=True) as handle:
                np.lib.format.write_array(handle, arr, allow_pickle=False)
    return buffer.getvalue()


def smoke_inputs() -> dict[str, np.ndarray]:
    """Synthetic API/CLI smoke data: PCG64(9140914) train ``random((19,1,9,9))`` float32, labels
    ``integers(0,10,19)`` int64, query ``random((7,1,9,9))`` float32, drawn in that order (their
    hashes equal the original's ``api_cli_smoke.metadata.input_hashes``).

    Returns:
        ``{"train_images": float32 (19,1,9,9), "train_labels": int64 (19,), "test_images": float32 (7,1,9,9)}``.
    """
    rng = np.random.Generator(np.random.PCG64(SMOKE_SEED))
    train = rng.random((SMOKE_TRAIN, 1, 9, 9), dtype=np.float32)
    labels = rng.integers(0, 10, SMOKE_TRAIN).astype(np.int64)
    query = rng.random((SMOKE_QUERY, 1, 9, 9), dtype=np.float32)
    return {"train_images": train, "train_labels": labels, "test_images": query}
