"""Atomic file writes (a temporary file in the destination folder, fsync, rename) and folders a
refused command removes again.

The project's rule for every file it writes (no partial file that looks complete). The writer
(:mod:`bundle.archive`) and the verifier's report (:mod:`verify.report`) both write through here.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from protocol.errors import BundleError


def fsync_dir(folder: Path) -> None:
    """fsync the folder *folder* so a rename into it is durable; errors (a file system that
    cannot fsync a folder) are ignored."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _current_umask() -> int:
    """The process umask (read by setting and restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write *data* to *path* atomically (temporary file in the same folder, fsync, rename).

    Args:
        path: destination; parent folders are created.
        data: bytes to store.

    Returns:
        The destination path.

    Raises:
        BundleError: the folder cannot be written.
    """
    dest = Path(path)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    except OSError as exc:
        raise BundleError(f"cannot write {dest} ({exc.strerror}): check the folder permissions") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp creates 0600; give the file the mode an ordinary open() would (0666 & ~umask),
        # so an archive written by root in a container stays readable by its users.
        os.chmod(tmp_name, 0o666 & ~_current_umask())
        os.replace(tmp_name, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    fsync_dir(dest.parent)
    return dest


def make_folders(path: str | os.PathLike[str]) -> list[Path]:
    """Create the folder *path* and its missing parents.

    Returns:
        The folders this call created, deepest first (empty when *path* existed), for
        :func:`remove_empty_folders` when the work that needed them is refused or fails.

    Raises:
        OSError: a folder cannot be created.
    """
    path = Path(path)
    missing: list[Path] = []
    folder = path
    while not os.path.lexists(folder) and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    path.mkdir(parents=True, exist_ok=True)
    return missing


def remove_empty_folders(created: list[Path]) -> None:
    """Remove the folders of :func:`make_folders` again, deepest first, while they are empty, so a
    refused or failed command leaves no empty folder behind (``out/`` of ``out/run-local``
    included); a folder that holds anything (a staged record kept for a resume) and every folder
    above it stay."""
    for created_folder in created:
        try:
            created_folder.rmdir()  # only when empty
        except OSError:
            return
