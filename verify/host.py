"""The verifying host's reference data: the frozen original archive and the raw MNIST files.

Neither belongs to the archive under verification. Run archives are compared with the
frozen reference (``protocol.hostrefs.FROZEN_REFERENCE``: ``$REV88_ORIGINAL_DIR``, else the
checkout's ``evidence/rev88-original``, else the image's copy):
each draw's predictions must equal its frozen ``predictions_sha256``. Every archive's draws
are rebuilt from the raw MNIST files (``protocol.hostrefs.RAW_MNIST``: ``$REV88_RAW_DIR``, else
the checkout's ``data/mnist``, else the image's copy), pinned by sha256 in :data:`protocol.data.RAW_FILES`.

When either is missing or altered on this host, :func:`require_reference_data` raises
:class:`HostReferenceError`: one line naming the folder and what to do, exit status 2. The
verifier then reports nothing about the archive, so a host without its reference data can
never read "verified" (frozen checks UNAVAILABLE) nor blame an archive with FAILs that are
the host's.

The frozen reference is read only through its own integrity (:func:`frozen_reference`: sha
chains and bundle pins of :mod:`verify.original_layout`), so an altered copy is refused, not
trusted. This module never imports torch.
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

from protocol import data
from protocol.errors import BundleError
from protocol.hostrefs import FROZEN_REFERENCE, RAW_MNIST
from verify import safeio
from verify.integrity import ArchiveFiles
from verify.original_layout import is_original_archive, verify_original_archive
from verify.records import RecordError
from verify.result import Status

ORIGINAL_ROOT = FROZEN_REFERENCE.location()
"""The frozen reference (``protocol.hostrefs.FROZEN_REFERENCE``): ``$REV88_ORIGINAL_DIR`` when set (the
verify image sets it), else the checkout's ``evidence/rev88-original`` when the package sits in one, else
the image's copy; when none exists, the first place looked at (:func:`frozen_reference` then refuses)."""


class HostReferenceError(BundleError):
    """The verifying host's reference data (frozen reference or raw MNIST) is missing or altered.

    Not a defect of any archive: the verifier stops with this one line (exit status 2).
    """


def _original_source() -> str:
    return f"set by {FROZEN_REFERENCE.env}" if FROZEN_REFERENCE.named() is not None else "found by the search order"


def _original_hint() -> str:
    return f"looked at {FROZEN_REFERENCE.looked_at()}; {FROZEN_REFERENCE.remedy()}"


def _signature(root: Path) -> tuple[tuple[str, int, int, int, int], ...]:
    """(path, mode, size, mtime, inode) of every entry under *root*: a changed copy is re-verified."""
    rows = []
    base = os.fspath(root)
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        # plain strings, no Path objects: every check of a run archive reads the reference (~200 calls a run)
        prefix = os.path.relpath(dirpath, base).replace(os.sep, "/")
        prefix = "" if prefix == "." else prefix + "/"
        for name in (*dirnames, *filenames):
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            rows.append((prefix + name, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(sorted(rows))


@lru_cache(maxsize=4)
def _verified_original(root: str, signature: tuple) -> ArchiveFiles:
    files = verify_original_archive(Path(root))
    bad = [r for r in files.results if r.status is Status.FAIL]
    if bad:
        first = bad[0]
        raise HostReferenceError(
            f"the frozen reference archive on this host is altered ({root}, {_original_source()}: {len(bad)} integrity "
            f"failure{'s' if len(bad) != 1 else ''}, first {first.check_id} {first.subject}: {first.reason}): run "
            f"archives cannot be compared with it; {_original_hint()}")
    return files


def frozen_reference() -> ArchiveFiles:
    """The frozen reference archive at :data:`ORIGINAL_ROOT`, after its own integrity checks.

    Returns:
        Its verified files (cached while the folder's entries keep their size, mtime and inode).

    Raises:
        HostReferenceError: the folder is absent, not the original layout, or fails integrity.
    """
    root = ORIGINAL_ROOT
    if not root.is_dir() or not is_original_archive(root):
        if root.is_dir():  # there, but changed (e.g. a run folder written into it: manifest.json)
            raise HostReferenceError(
                f"the frozen reference archive on this host is not in the original archive's layout ({root}: "
                "protocol.json and prediction-manifest.json at its top and no manifest.json; "
                f"{_original_source()}): run archives are compared with it; remove what was written into it (a run's "
                f"manifest.json, environment.json.gz, phase folders) or restore it from the repository; "
                f"{_original_hint()}")
        what = "no such folder" if not root.exists() else "not a folder"
        raise HostReferenceError(
            f"the frozen reference archive is missing on this host ({root}: {what}; {_original_source()}): run "
            f"archives are compared with it; {_original_hint()}")
    return _verified_original(str(root), _signature(root))


def _raw_hint() -> str:
    if RAW_MNIST.named() is not None:
        return ("set REV88_RAW_DIR to the folder holding the four pinned files, or unset it to use the repository's "
                "data/mnist (`rev88 data fetch --dest DIR` downloads them)")
    return (f"looked at {RAW_MNIST.looked_at()}; restore data/mnist from the repository, or `rev88 data fetch "
            "--dest DIR` and set REV88_RAW_DIR=DIR")


def _raw_problems(folder: Path) -> list[str]:
    problems = []
    for pin in data.RAW_FILES.values():
        try:
            blob = safeio.read_regular(folder / pin.name, limit=pin.size_bytes, where=pin.name, follow_symlinks=True)
        except RecordError as exc:
            text = str(exc)
            problems.append(f"{pin.name} " + ("missing" if "is absent" in text else
                                              "larger than pinned" if "more than the" in text else
                                              "not a regular file" if "not a regular file" in text else "unreadable"))
            continue
        if hashlib.sha256(blob).hexdigest() != pin.sha256:
            problems.append(f"{pin.name} altered (sha256 differs from the pin)")
    return problems


@lru_cache(maxsize=4)
def _checked_raw(folder: str, signature: tuple) -> None:
    problems = _raw_problems(Path(folder))
    if problems:
        source = "set by REV88_RAW_DIR" if RAW_MNIST.named() is not None else "found by the search order"
        raise HostReferenceError(
            f"the raw MNIST files on this host are missing or altered ({folder}, {source}: {'; '.join(problems)}): "
            f"every draw is rebuilt from them, so no archive is checked; {_raw_hint()}")


def require_raw_mnist() -> Path:
    """Check the four raw MNIST files of :func:`protocol.data.default_raw_dir` against their sha256 pins.

    Returns:
        The folder.

    Raises:
        HostReferenceError: the folder or a file is absent, not a regular file, larger than
            pinned, or altered.
    """
    folder = data.default_raw_dir()
    rows = []
    for pin in data.RAW_FILES.values():
        try:
            st = os.stat(folder / pin.name)
            rows.append((pin.name, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino))
        except OSError:
            rows.append((pin.name, 0, -1, 0, 0))
    _checked_raw(str(folder), tuple(rows))
    return folder


def require_reference_data(kind: str) -> None:
    """Everything the host must provide to verify an archive of *kind*.

    Args:
        kind: ``"run"`` (needs the raw MNIST files and the frozen reference) or
            ``"original"`` (needs the raw MNIST files).

    Raises:
        HostReferenceError: one line naming the missing or altered folder and what to do.
    """
    require_raw_mnist()
    if kind == "run":
        frozen_reference()
