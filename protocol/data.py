"""MNIST raw files, the 11 qualification draws and the 28×28 → 9×9 resize (no torch).

Facts come from the original study (spec sections 1.1–1.7): the pinned raw files, IDX
header rules, the draw derivation ``Generator(PCG64(2026091400 + i)).permutation(60000)``
(positions 0…9999 train, 10000…19999 evaluation) and the box-area resize.

The learner only ever sees :meth:`Draw.learner_inputs` (``train_images``, ``train_labels``,
``test_images``); evaluation labels come from the separate scorer function
:func:`evaluation_labels`, which a phase calls only after every prediction exists.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from protocol.errors import BundleError
from protocol.hostrefs import RAW_MNIST

__all__ = [
    "RAW_FILES", "RawFile", "MIRRORS", "DATASET_SEED_BASE", "DRAW_COUNT", "TRAIN_COUNT",
    "TEST_COUNT", "RESIZE_METHODS", "default_raw_dir", "file_sha256", "array_sha256",
    "verify_raw_file", "raw_status", "parse_idx_images", "parse_idx_labels",
    "load_training_split", "overlap_matrix", "resize_exact", "resize_gemm_float32",
    "dataset_seed", "draw_indices", "Draw", "load_draw", "evaluation_labels", "fetch_raw_files",
]


@dataclass(frozen=True)
class RawFile:
    """One official MNIST ``.gz`` file, pinned (data/mnist/SOURCES.md, spec 1.1).

    Attributes:
        name: file name, e.g. ``"train-images-idx3-ubyte.gz"``.
        size_bytes: size of the ``.gz`` file in bytes.
        sha256: sha256 of the ``.gz`` bytes (hex).
        md5: md5 of the ``.gz`` bytes (hex), as the original protocol records it.
        used: whether rev88 reads it (only the training split is used).
    """

    name: str
    size_bytes: int
    sha256: str
    md5: str
    used: bool


RAW_FILES: dict[str, RawFile] = {
    "train_images": RawFile(
        "train-images-idx3-ubyte.gz", 9_912_422,
        "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
        "f68b3c2dcbeaaa9fbdd348bbdeb94873", True),
    "train_labels": RawFile(
        "train-labels-idx1-ubyte.gz", 28_881,
        "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
        "d53e105ee54ea40749a09fcbcd1e9432", True),
    "t10k_images": RawFile(
        "t10k-images-idx3-ubyte.gz", 1_648_877,
        "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
        "9fb629c4189551a2d022fa330f9573f3", False),
    "t10k_labels": RawFile(
        "t10k-labels-idx1-ubyte.gz", 4_542,
        "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
        "ec29112dd5afa0611ce80d1b7f02629c", False),
}

#: Official mirrors serving the four files under their usual names (first is the original's).
MIRRORS: tuple[str, ...] = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
    "https://yann.lecun.com/exdb/mnist/",
)

DATASET_SEED_BASE = 2026091400  #: draw i uses dataset seed 2026091400 + i (spec 1.3)
DRAW_COUNT = 11
TRAIN_COUNT = 10_000
TEST_COUNT = 10_000
SOURCE_ROWS = 60_000
#: ``exact`` (default, platform independent) or the original's ``gemm-float32``.
RESIZE_METHODS = ("exact", "gemm-float32")
_RESIZE_DENOMINATOR = 28 * 28 * 255  # 199,920 < 2**29
# Rows per block of resize_exact: each GEMM stays below OpenBLAS's threading threshold (M·N·K ≤ 262,144),
# since threads on these skinny products cost ~4x the CPU for no gain (0.11 s against 0.5 s for 60,000 rows).
_RESIZE_BLOCK_ROWS = 32
_FETCH_HINT = "run `rev88 data fetch --dest DIR` and pass `--raw-dir DIR` (or set REV88_RAW_DIR)"


def default_raw_dir() -> Path:
    """The raw-file folder: ``protocol.hostrefs.RAW_MNIST``'s search order.

    ``$REV88_RAW_DIR`` when set (the only place then), else the checkout's ``data/mnist`` when
    this package sits in one, else the image's ``/opt/rev88/data/mnist``: the first that holds
    the four pinned files, or, when none does, the first place looked at (the readers then name
    the missing file and how to fetch it).
    """
    return RAW_MNIST.location(pin.name for pin in RAW_FILES.values())


def file_sha256(path: Path) -> str:
    """sha256 (hex) of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def array_sha256(array: np.ndarray) -> str:
    """sha256 of an array's raw C-contiguous bytes (no shape/dtype header), as the original's "sha(x)".

    Args:
        array: any numpy array (native byte order); copied to C order if needed.

    Returns:
        64-character hex digest.
    """
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def verify_raw_file(key: str, raw_dir: Path | None = None) -> Path:
    """Return the path of a raw file after checking its sha256 against the pin.

    Args:
        key: a key of :data:`RAW_FILES` (``"train_images"``, ``"train_labels"``, ...).
        raw_dir: folder holding the files; default :func:`default_raw_dir`.

    Raises:
        BundleError: file missing, or its sha256 differs from the pinned value (the message
            names the file, the expected and actual sha256 and how to fetch a good copy).
    """
    pin = RAW_FILES[key]
    path = Path(raw_dir if raw_dir is not None else default_raw_dir()) / pin.name
    if not path.is_file():
        raise BundleError(f"MNIST raw file missing ({path}): {_FETCH_HINT}")
    actual = file_sha256(path)
    if actual != pin.sha256:
        raise BundleError(
            f"MNIST raw file {pin.name} has sha256 {actual}, expected {pin.sha256} ({path}; "
            f"truncated or altered): {_FETCH_HINT}")
    return path


def raw_status(raw_dir: Path | None = None) -> list[dict]:
    """Status of the four raw files (for ``rev88 data check``).

    Returns:
        One dict per file in :data:`RAW_FILES` order with keys ``file``, ``used``, ``status``
        (``"ok"``, ``"missing"`` or ``"sha256 mismatch"``), ``size_bytes`` (or None),
        ``expected_sha256``, ``sha256`` (or None).
    """
    folder = Path(raw_dir if raw_dir is not None else default_raw_dir())
    rows = []
    for pin in RAW_FILES.values():
        path = folder / pin.name
        if not path.is_file():
            rows.append({"file": pin.name, "used": pin.used, "status": "missing", "size_bytes": None,
                         "expected_sha256": pin.sha256, "sha256": None})
            continue
        actual = file_sha256(path)
        rows.append({"file": pin.name, "used": pin.used,
                     "status": "ok" if actual == pin.sha256 else "sha256 mismatch",
                     "size_bytes": path.stat().st_size, "expected_sha256": pin.sha256, "sha256": actual})
    return rows


def _gunzip(data: bytes, where: str) -> bytes:
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise BundleError(f"cannot decompress MNIST file ({where}: {exc}): {_FETCH_HINT}") from None


def parse_idx_images(gz_bytes: bytes, *, count: int = SOURCE_ROWS, where: str = "images") -> np.ndarray:
    """Parse a gzipped IDX3 image file (spec 1.2).

    Args:
        gz_bytes: the ``.gz`` file's bytes.
        count: required image count (60000 for the training split).
        where: name used in error messages.

    Returns:
        uint8 array (count, 28, 28).

    Raises:
        BundleError: not gzip, header not exactly (2051, count, 28, 28) big-endian, or payload
            length not count×784.
    """
    raw = _gunzip(gz_bytes, where)
    if len(raw) < 16:
        raise BundleError(f"IDX image header truncated ({where}: {len(raw)} bytes): {_FETCH_HINT}")
    header = tuple(int(v) for v in np.frombuffer(raw[:16], dtype=">u4"))
    if header != (2051, count, 28, 28):
        raise BundleError(f"IDX image header is {header}, expected (2051, {count}, 28, 28) ({where}): "
                          f"{_FETCH_HINT}")
    if len(raw) - 16 != count * 784:
        raise BundleError(f"IDX image payload is {len(raw) - 16} bytes, expected {count * 784} ({where}): "
                          f"{_FETCH_HINT}")
    return np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(count, 28, 28).copy()


def parse_idx_labels(gz_bytes: bytes, *, count: int = SOURCE_ROWS, where: str = "labels") -> np.ndarray:
    """Parse a gzipped IDX1 label file (spec 1.2).

    Returns:
        int64 array (count,) with values 0…9.

    Raises:
        BundleError: not gzip, header not exactly (2049, count), wrong payload length, or a
            label above 9.
    """
    raw = _gunzip(gz_bytes, where)
    if len(raw) < 8:
        raise BundleError(f"IDX label header truncated ({where}: {len(raw)} bytes): {_FETCH_HINT}")
    header = tuple(int(v) for v in np.frombuffer(raw[:8], dtype=">u4"))
    if header != (2049, count):
        raise BundleError(f"IDX label header is {header}, expected (2049, {count}) ({where}): {_FETCH_HINT}")
    if len(raw) - 8 != count:
        raise BundleError(f"IDX label payload is {len(raw) - 8} bytes, expected {count} ({where}): "
                          f"{_FETCH_HINT}")
    labels = np.frombuffer(raw, dtype=np.uint8, offset=8)
    if int(labels.max()) > 9:
        raise BundleError(f"IDX labels contain {int(labels.max())} > 9 ({where}): {_FETCH_HINT}")
    return labels.astype(np.int64)


@lru_cache(maxsize=2)
def _training_split_cached(raw_dir: str) -> tuple[np.ndarray, np.ndarray]:
    images_path = verify_raw_file("train_images", Path(raw_dir))
    labels_path = verify_raw_file("train_labels", Path(raw_dir))
    images = parse_idx_images(images_path.read_bytes(), where=str(images_path))
    labels = parse_idx_labels(labels_path.read_bytes(), where=str(labels_path))
    images.flags.writeable = False
    labels.flags.writeable = False
    return images, labels


def load_training_split(raw_dir: Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The official 60,000-row training split, sha-checked and parsed (cached per folder).

    Returns:
        (images uint8 (60000, 28, 28), labels int64 (60000,)), both read-only.

    Raises:
        BundleError: a file is missing, altered or malformed.
    """
    folder = Path(raw_dir if raw_dir is not None else default_raw_dir()).resolve()
    return _training_split_cached(str(folder))


def overlap_matrix() -> np.ndarray:
    """Integer box overlaps of the 28 → 9 resize (spec 1.4, coordinates scaled by 28·9).

    Output bin j covers [28j, 28j+28), input pixel i covers [9i, 9i+9);
    overlap(j, i) = max(0, min(28j+28, 9i+9) − max(28j, 9i)), a value in 0…9.

    Returns:
        int64 array (9, 28); every row sums to exactly 28 (and every column to 9).
    """
    j = np.arange(9, dtype=np.int64)[:, None]
    i = np.arange(28, dtype=np.int64)[None, :]
    return np.maximum(0, np.minimum(28 * j + 28, 9 * i + 9) - np.maximum(28 * j, 9 * i))


def resize_exact(images: np.ndarray) -> np.ndarray:
    """Exact box-area 28×28 → 9×9 average with one rounding to float32 (the default resize).

    value(a, b) = N / 199920 with the integer numerator
    N = Σ_i Σ_k ov(a, i)·ov(b, k)·img[i, k] (ov from :func:`overlap_matrix`, 199920 = 28·28·255).

    Exactness of N: it is formed as a float64 matrix product of small integers; every
    product and partial sum is an integer ≤ 199920 < 2**53, so every float64 operation is
    exact in any order (BLAS kernel, FMA, threads make no difference), and N is an exact
    integer held in float64.

    One correct rounding: N/199920 is divided in float64 (correctly rounded) and then cast
    to float32. Double rounding could only go wrong if the float64 quotient landed exactly
    on a float32 midpoint m while N/199920 ≠ m. Write m = M·2**e with M an integer below
    2**25. Then |N/199920 − m| = |N·2**−e − M·199920|·2**e / 199920 ≥ 2**e / 199920 (a
    nonzero integer numerator), while half a float64 ulp at m is at most 2**(e−29). Since
    199920 < 2**29 the quotient is farther from m than half an ulp, so the float64 result
    is never m; the cast therefore rounds N/199920 correctly to nearest-even float32.
    Values lie in [0, 1] because 0 ≤ N ≤ 199920; no clip is needed.

    Args:
        images: uint8 (N, 28, 28).

    Returns:
        float32 (N, 1, 9, 9), C-contiguous.
    """
    ov = overlap_matrix().astype(np.float64)
    n = images.shape[0]
    numerator = np.empty((n, 9, 9), dtype=np.float64)
    # Per block of rows (no 376 MB float64 copy of all 60,000 images), two plain 2-D GEMMs instead
    # of 2·N batched 9×28 products: columns first, T[n, i, b] = Σ_k img[n, i, k]·ov(b, k), then rows,
    # N[n, a, b] = Σ_i ov(a, i)·T[n, i, b].
    for start in range(0, n, _RESIZE_BLOCK_ROWS):
        block = images[start:start + _RESIZE_BLOCK_ROWS]
        m = block.shape[0]
        by_column = block.reshape(m * 28, 28).astype(np.float64) @ ov.T
        by_column = np.ascontiguousarray(by_column.reshape(m, 28, 9).transpose(0, 2, 1)).reshape(m * 9, 28)
        numerator[start:start + m] = (by_column @ ov.T).reshape(m, 9, 9).transpose(0, 2, 1)
    # numerator holds exact integers (see above): rint is a no-op kept as a guard, and the float64 quotient
    # of the integer is the one an int64 round trip would give.
    values = (np.rint(numerator) / float(_RESIZE_DENOMINATOR)).astype(np.float32)
    return np.ascontiguousarray(values[:, None, :, :])


def resize_gemm_float32(images: np.ndarray) -> np.ndarray:
    """The original's float32 two-GEMM resize (spec 1.4), kept as the named alternative.

    uint8 → float32 / float32(255); W = (overlap / 28 in float64) cast to float32 (9×28);
    result = (W @ img) @ Wᵀ as float32 ``matmul``; clip to [0, 1].

    Not the default: with 3–4 nonzero terms per dot product the float32 result bits depend
    on the BLAS kernel's accumulation order and FMA use, so image hashes vary by machine;
    the original's recorded image hashes were not reproduced from it on any known BLAS.

    Args:
        images: uint8 (N, 28, 28).

    Returns:
        float32 (N, 1, 9, 9), C-contiguous.
    """
    weights = (overlap_matrix().astype(np.float64) / 28.0).astype(np.float32)
    scaled = images.astype(np.float32) / np.float32(255)
    result = np.ascontiguousarray(np.matmul(np.matmul(weights, scaled), weights.T), dtype=np.float32)
    np.clip(result, 0.0, 1.0, out=result)
    return np.ascontiguousarray(result[:, None, :, :])


def dataset_seed(draw_index: int) -> int:
    """Dataset seed of qualification draw *draw_index* (0…10): 2026091400 + i."""
    if not 0 <= int(draw_index) < DRAW_COUNT:
        raise BundleError(f"draw index {draw_index} is out of range (0…{DRAW_COUNT - 1}): pick a draw 0-10")
    return DATASET_SEED_BASE + int(draw_index)


def draw_indices(draw_index: int) -> tuple[np.ndarray, np.ndarray]:
    """Train and evaluation row indices of a draw (spec 1.3).

    One ``Generator(PCG64(seed)).permutation(60000)``; positions 0…9999 train,
    10000…19999 evaluation.

    Returns:
        (train int64 (10000,), evaluation int64 (10000,)).

    Raises:
        BundleError: the two slices are not disjoint (cannot happen for a permutation).
    """
    permutation = np.random.Generator(np.random.PCG64(dataset_seed(draw_index))).permutation(SOURCE_ROWS)
    permutation = permutation.astype(np.int64)
    train = permutation[:TRAIN_COUNT].copy()
    test = permutation[TRAIN_COUNT:TRAIN_COUNT + TEST_COUNT].copy()
    # no row twice among the 20,000 (a count per row of 0…59,999: linear, where np.unique sorts or hashes)
    if np.bincount(np.concatenate([train, test]), minlength=SOURCE_ROWS).max() > 1:
        raise BundleError(f"draw {draw_index}: train and evaluation rows overlap: report this as a bug")
    return train, test


@dataclass(frozen=True)
class Draw:
    """A qualification draw as the learner may see it (no evaluation labels).

    Attributes:
        draw_index: 0…10.
        dataset_seed: 2026091400 + draw_index.
        resize: resize method name (``"exact"`` or ``"gemm-float32"``).
        train_indices: int64 (10000,) rows of the official training split.
        test_indices: int64 (10000,) evaluation rows.
        train_images: float32 (10000, 1, 9, 9) in [0, 1].
        train_labels: int64 (10000,).
        test_images: float32 (10000, 1, 9, 9) in [0, 1].
    """

    draw_index: int
    dataset_seed: int
    resize: str
    train_indices: np.ndarray
    test_indices: np.ndarray
    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray

    def learner_inputs(self) -> dict[str, np.ndarray]:
        """Exactly the three arrays handed to a learner (spec 1.6), in that key order."""
        return {"train_images": self.train_images, "train_labels": self.train_labels,
                "test_images": self.test_images}

    def input_hashes(self) -> dict[str, str]:
        """``input_hashes`` (spec 1.7): sha of train_images, train_labels (int64), test_images."""
        return {name: array_sha256(arr) for name, arr in self.learner_inputs().items()}

    def index_hashes(self) -> dict[str, str]:
        """``train_indices_sha256`` and ``test_indices_sha256`` (int64), as the draw manifest."""
        return {"train_indices_sha256": array_sha256(self.train_indices),
                "test_indices_sha256": array_sha256(self.test_indices)}


@lru_cache(maxsize=2)
def _resized_cached(raw_dir: str, resize: str) -> np.ndarray:
    images, _ = _training_split_cached(raw_dir)
    out = resize_exact(images) if resize == "exact" else resize_gemm_float32(images)
    out.flags.writeable = False
    return out


def load_draw(draw_index: int, raw_dir: Path | None = None, *, resize: str = "exact") -> Draw:
    """Build qualification draw *draw_index* (resize applied to all 60,000 rows, then indexed).

    Args:
        draw_index: 0…10.
        raw_dir: raw-file folder; default :func:`default_raw_dir`.
        resize: ``"exact"`` (default) or ``"gemm-float32"`` (the original's, BLAS dependent).

    Raises:
        BundleError: bad draw index, unknown resize, or a missing/altered raw file.
    """
    if resize not in RESIZE_METHODS:
        raise BundleError(f"unknown resize {resize!r} (choose one of {', '.join(RESIZE_METHODS)})")
    seed = dataset_seed(draw_index)
    folder = str(Path(raw_dir if raw_dir is not None else default_raw_dir()).resolve())
    _, labels = _training_split_cached(folder)
    resized = _resized_cached(folder, resize)
    train, test = draw_indices(draw_index)
    return Draw(draw_index=int(draw_index), dataset_seed=seed, resize=resize,
                train_indices=train, test_indices=test,
                train_images=np.ascontiguousarray(resized[train]),
                train_labels=np.ascontiguousarray(labels[train], dtype=np.int64),
                test_images=np.ascontiguousarray(resized[test]))


def evaluation_labels(draw_index: int, raw_dir: Path | None = None) -> np.ndarray:
    """The scorer's view: evaluation labels of a draw (never hand these to a learner).

    Returns:
        int64 (10000,), labels of positions 10000…19999 of the draw's permutation; their
        sha equals the original's ``test_labels_sha256``.
    """
    _, labels = load_training_split(raw_dir)
    _, test = draw_indices(draw_index)
    return np.ascontiguousarray(labels[test], dtype=np.int64)


def fetch_raw_files(dest: Path, mirrors: Iterable[str] = MIRRORS, *, keys: Iterable[str] | None = None,
                    timeout_s: float = 120.0) -> list[dict]:
    """Download the raw files into *dest* (temporary name, sha256 check, then rename).

    A file already present with the pinned sha256 is kept. Each file is tried on every
    mirror in turn; the first download whose sha256 matches is renamed into place.

    Args:
        dest: target folder (created with its missing parents if needed).
        mirrors: base URLs ending in ``/``.
        keys: which :data:`RAW_FILES` to fetch; default all four.
        timeout_s: socket timeout per request in seconds.

    Returns:
        One dict per file: ``file``, ``status`` (``"present"`` or ``"downloaded"``), ``source``.

    Raises:
        BundleError: no mirror delivered a file with the pinned sha256 (offline, blocked, or
            altered content); names the file and the last error. The folders this call created
            are removed again while empty (:func:`protocol.atomic_write.remove_empty_folders`).
        OSError: *dest* cannot be created.
    """
    from protocol.atomic_write import make_folders, remove_empty_folders  # noqa: PLC0415

    dest = Path(dest)
    created = make_folders(dest)
    try:
        return _fetch_into(dest, mirrors, keys, timeout_s)
    except BaseException:  # refused, offline or Ctrl-C: the folders made here go again while empty
        remove_empty_folders(created)
        raise


def _fetch_into(dest: Path, mirrors: Iterable[str], keys: Iterable[str] | None, timeout_s: float) -> list[dict]:
    results = []
    for key in keys if keys is not None else RAW_FILES:
        pin = RAW_FILES[key]
        target = dest / pin.name
        if target.is_file() and file_sha256(target) == pin.sha256:
            results.append({"file": pin.name, "status": "present", "source": str(target)})
            continue
        last_error = "no mirror given"
        for base in mirrors:
            url = base.rstrip("/") + "/" + pin.name
            part = dest / f".{pin.name}.{os.getpid()}.part"
            try:
                request = urllib.request.Request(url, headers={"User-Agent": "rev88-bundle/0.1"})
                digest = hashlib.sha256()
                with urllib.request.urlopen(request, timeout=timeout_s) as response, open(part, "wb") as out:
                    for block in iter(lambda response=response: response.read(1 << 20), b""):
                        digest.update(block)
                        out.write(block)
                    out.flush()
                    os.fsync(out.fileno())
                if digest.hexdigest() != pin.sha256:
                    last_error = f"{url} gave sha256 {digest.hexdigest()}, expected {pin.sha256}"
                    continue
                os.replace(part, target)
                results.append({"file": pin.name, "status": "downloaded", "source": url})
                break
            except (urllib.error.URLError, OSError, TimeoutError) as exc:
                last_error = f"{url}: {getattr(exc, 'reason', exc)}"
            finally:
                if part.exists():
                    part.unlink()
        else:
            raise BundleError(f"could not download {pin.name} into {dest} (last error: {last_error}): "
                              f"check the network or pass --mirror URL, or copy the file there by hand")
    return results
