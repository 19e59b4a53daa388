"""Draw and data checks: raw MNIST files, draw indices, labels, images, epoch orders.

Everything here is recomputed with :mod:`protocol.data` (the writer's own definitions, no
torch): the raw files' sha256/md5, each draw's ``PCG64(2026091400 + i)`` permutation and
its index/label hashes, the exact 9×9 resize (for our archives), and the learner's epoch
permutations ``Generator(PCG64(seed)).permutation(N)`` per epoch (spec 2.5).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

import numpy as np

from protocol import data
from verify import safeio
from verify.records import get, get_str
from verify.result import CheckResult, check_equal, unavailable

SELECTION_TRAIN_COUNT = 8000
SELECTION_VALIDATION_COUNT = 2000
IMAGE_HASH_REASON = ("not reproducible: the original's 9x9 image bits came from a float32 BLAS GEMM on the "
                     "submitter's own machine (spec 1.4, 10.1); no known BLAS reproduces them")


def check_raw_sources(raw_sources: dict, *, subject: str, where: str, raw_dir: Path | None = None) -> list[CheckResult]:
    """The raw MNIST files on disk have the sha256 and md5 the record states (and the bundle pins)."""
    out: list[CheckResult] = []
    folder = Path(raw_dir) if raw_dir is not None else data.default_raw_dir()
    for key, source in raw_sources.items():
        name = get_str(source, "file", where)
        path = folder / name
        if not path.is_file():
            out.append(unavailable("data.raw_file", f"{subject} {name}", f"raw file absent ({path}): run "
                                   "`rev88 data fetch`"))
            continue
        # a regular file of at most the pinned size (no FIFO or device read): verify.host checked the pins first
        limit = data.RAW_FILES[key].size_bytes if key in data.RAW_FILES else 64 << 20
        blob = safeio.read_regular(path, limit=limit, where=name, follow_symlinks=True)
        out.append(check_equal("data.raw_file.sha256", name, get_str(source, "sha256", where),
                               hashlib.sha256(blob).hexdigest(), what=f"sha256 of {path}"))
        if "md5" in source:
            out.append(check_equal("data.raw_file.md5", name, get_str(source, "md5", where),
                                   hashlib.md5(blob, usedforsecurity=False).hexdigest(), what=f"md5 of {path}"))
        pin = data.RAW_FILES.get(key)
        if pin is not None:
            out.append(check_equal("data.raw_file.bundle_pin", name, get_str(source, "sha256", where), pin.sha256,
                                   what="sha256 recorded vs protocol.data pin"))
    return out


@lru_cache(maxsize=16)
def draw_hashes(draw_index: int) -> dict[str, str]:
    """Index and label hashes of a draw: train/test indices, train labels, evaluation labels."""
    train, test = data.draw_indices(draw_index)
    _, labels = data.load_training_split()
    return {
        "train_indices_sha256": data.array_sha256(train),
        "test_indices_sha256": data.array_sha256(test),
        "train_labels": data.array_sha256(np.ascontiguousarray(labels[train], dtype=np.int64)),
        "test_labels_sha256": data.array_sha256(np.ascontiguousarray(labels[test], dtype=np.int64)),
    }


@lru_cache(maxsize=16)
def exact_input_hashes(draw_index: int) -> dict[str, str]:
    """sha of the learner inputs of a draw with the exact 9x9 resize (``protocol.data.Draw.input_hashes``), cached."""
    return dict(data.load_draw(draw_index).input_hashes())


@lru_cache(maxsize=16)
def input_npz_sha256(draw_index: int) -> str:
    """sha256 of the fixture input ``.npz`` of a draw rebuilt from the raw files (the writer's ``npz_bytes``), cached."""
    from protocol.fixture_inputs import INPUT_KEYS, npz_bytes  # noqa: PLC0415

    inputs = data.load_draw(draw_index).learner_inputs()
    return hashlib.sha256(npz_bytes({k: inputs[k] for k in INPUT_KEYS})).hexdigest()


def warm_draw_caches() -> None:
    """Compute every draw's index, label and exact-resize input hashes now (they are cached).

    :func:`verify.registry.verify_archives` calls this once before it forks its workers, so each
    inherits them instead of recomputing them (about 0.6 s of CPU per process).

    Raises:
        BundleError: a raw MNIST file is missing or altered (as the checks that read them would).
    """
    for index in range(data.DRAW_COUNT):
        draw_hashes(index)
        exact_input_hashes(index)


@lru_cache(maxsize=4)
def selection_hashes() -> dict[str, str]:
    """Training-only selection split of draw 0 (positions 0…7999 / 8000…9999)."""
    train, _ = data.draw_indices(0)
    _, labels = data.load_training_split()
    sel_train, sel_val = train[:SELECTION_TRAIN_COUNT], train[SELECTION_TRAIN_COUNT:]
    return {
        "train_indices_sha256": data.array_sha256(sel_train),
        "validation_indices_sha256": data.array_sha256(sel_val),
        "train_labels": data.array_sha256(np.ascontiguousarray(labels[sel_train], dtype=np.int64)),
    }


def selection_validation_labels() -> np.ndarray:
    """Labels of the selection's validation split (draw 0's training positions 8000…9999), int64 (2000,)."""
    train, _ = data.draw_indices(0)
    _, labels = data.load_training_split()
    return np.ascontiguousarray(labels[train[SELECTION_TRAIN_COUNT:]], dtype=np.int64)


@lru_cache(maxsize=8)
def epoch_permutation_hashes(n: int, epochs: int, seed: int = 11) -> tuple[str, ...]:
    """sha of each epoch's int64 permutation row from one ``Generator(PCG64(seed))`` (spec 2.5)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    return tuple(data.array_sha256(rng.permutation(n).astype(np.int64)) for _ in range(epochs))


def check_epoch_permutations(recorded: list, *, n: int, seed: int, subject: str) -> CheckResult:
    """Recorded ``epoch_permutation_sha256`` equals the recomputed list."""
    return check_equal("draws.epoch_permutation_sha256", subject, recorded,
                       list(epoch_permutation_hashes(n, len(recorded), seed)), what=f"epoch permutations (N={n})")


def check_draw_record_hashes(index: int, recorded: dict, *, subject: str, where: str,
                             images: str = "unavailable") -> list[CheckResult]:
    """Index, label and (when reproducible) image hashes of one draw.

    Args:
        recorded: holds any of ``train_indices_sha256``, ``test_indices_sha256``,
            ``input_sha256`` / ``input_hashes`` {train_images, train_labels, test_images},
            ``test_labels_sha256``.
        images: ``"unavailable"`` (original: not reproducible) or ``"exact"`` (our archives:
            recompute with :func:`protocol.data.load_draw`).
    """
    h = draw_hashes(index)
    out: list[CheckResult] = []
    for key in ("train_indices_sha256", "test_indices_sha256", "test_labels_sha256"):
        if key in recorded:
            out.append(check_equal(f"draws.{key}", subject, get(recorded, key, str, where), h[key], what=key))
    inputs = recorded.get("input_sha256", recorded.get("input_hashes"))
    if isinstance(inputs, dict):
        out.append(check_equal("draws.input_hashes.train_labels", subject, get(inputs, "train_labels", str, where),
                               h["train_labels"], what="train_labels sha (int64)"))
        if images == "exact":
            got = exact_input_hashes(index)
            for key in ("train_images", "test_images"):
                out.append(check_equal(f"draws.input_hashes.{key}", subject, get(inputs, key, str, where), got[key],
                                       what=f"{key} sha (exact resize)"))
        else:
            for key in ("train_images", "test_images"):
                out.append(unavailable(f"draws.input_hashes.{key}", subject, IMAGE_HASH_REASON,
                                       recorded=get(inputs, key, str, where)))
    return out
