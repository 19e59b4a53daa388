"""The evidence archive: canonical JSON, reproducible gzip, atomic writes, phases, manifest.

A run archive is one folder (``evidence/<run-id>/``)::

    manifest.json          # every completed file: size, sha256, content sha256 for .gz
    environment.json.gz    # where each phase ran (native or docker, pinned image or not)
    <phase>/...            # one folder per completed phase
    <phase>/resumed.json.gz  # after a resume: which records an earlier, unfinished attempt had staged
    .staging/<phase>/...   # an unfinished phase (kept for resume; never in the manifest)

Records are written as the original study wrote its JSON (spec "Conventions": 2-space
indent, insertion-ordered keys, ``allow_nan=False``, ASCII escaping, one trailing newline)
and stored gzipped with a reproducible header (mtime 0, empty file name, level 9), so the
same record always gives the same bytes. Every write goes to a temporary file in the
destination folder, is fsynced and then renamed over the destination (``os.replace``).

The byte format itself (canonical JSON and gzip, the schema version) is defined in
:mod:`protocol.archive_format`; this module never imports torch.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from protocol.archive_format import (  # noqa: F401  (re-exported: the writer's call sites use bundle.archive.*)
    GZIP_HEADER,
    GZIP_LEVEL,
    RESUMED_NAME,
    RESUMED_SCOPE,
    SCHEMA_VERSION,
    dumps_canonical,
    gzip_bytes,
)
from protocol.atomic_write import (  # noqa: F401  (re-exported)
    atomic_write_bytes,
    fsync_dir,
    make_folders,
    remove_empty_folders,
)
from protocol.errors import BundleError

MANIFEST_NAME = "manifest.json"
ENVIRONMENT_NAME = "environment.json.gz"
STAGING_DIR = ".staging"
WORK_DIR = ".work"  # per-phase scratch (derived inputs); removed when the phase completes
_CHUNK_BYTES = 1 << 20


def utc_now() -> str:
    """Current UTC time as ISO 8601 with offset (as the original's ``*_at_utc`` fields)."""
    return datetime.now(UTC).isoformat()


def write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write *obj* as canonical, uncompressed JSON (see :func:`dumps_canonical`), atomically."""
    return atomic_write_bytes(path, dumps_canonical(obj).encode("ascii"))


def write_json_gz(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write *obj* as canonical JSON, reproducibly gzipped, atomically.

    Args:
        path: destination, conventionally ``<name>.json.gz``.
        obj: JSON-compatible record.

    Returns:
        The destination path.

    Raises:
        BundleError: non-canonical value or unwritable folder.
    """
    return atomic_write_bytes(path, gzip_bytes(dumps_canonical(obj).encode("ascii")))


def read_json_gz(path: str | os.PathLike[str]) -> Any:
    """Read a record written by :func:`write_json_gz` (plain ``.json`` is read as is).

    Raises:
        BundleError: the file is missing, not gzip or not JSON.
    """
    src = Path(path)
    try:
        raw = src.read_bytes()
        text = gzip.decompress(raw) if src.name.endswith(".gz") else raw
        return json.loads(text)
    except FileNotFoundError:
        raise BundleError(f"record not found ({src}): run the phase that writes it first") from None
    except (OSError, EOFError, ValueError) as exc:
        raise BundleError(f"record is unreadable ({src}: {exc}): remove it and rerun its phase") from None


def write_bytes_gz(path: str | os.PathLike[str], data: bytes) -> Path:
    """Store raw tool output (ncu CSV, ``.ncu-rep``, NVML stamp logs) reproducibly gzipped."""
    return atomic_write_bytes(path, gzip_bytes(bytes(data)))


def write_npy(path: str | os.PathLike[str], array: np.ndarray) -> Path:
    """Write *array* as ``.npy`` without pickle, atomically.

    Args:
        path: destination ``.npy`` path.
        array: a numeric array (predictions: int64, shape (M,)).

    Raises:
        BundleError: object arrays (they would need pickle).
    """
    arr = np.asarray(array)
    if arr.dtype.hasobject:
        raise BundleError(f"refusing to write an object array to {path}: convert it to a numeric dtype")
    buffer = io.BytesIO()
    np.save(buffer, arr, allow_pickle=False)
    return atomic_write_bytes(path, buffer.getvalue())


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 (hex) of the stored bytes of *path*, streamed."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def file_entry(path: Path, rel: str) -> dict[str, Any]:
    """One manifest entry: stored size/sha256 and, for ``.gz``, the decompressed size/sha256.

    Raises:
        BundleError: a ``.gz`` file is not a valid gzip stream.
    """
    content_sha256: str | None = None
    content_size: int | None = None
    if rel.endswith(".gz"):
        digest = hashlib.sha256()
        content_size = 0
        try:
            with gzip.open(path, "rb") as handle:
                while chunk := handle.read(_CHUNK_BYTES):
                    digest.update(chunk)
                    content_size += len(chunk)
        except (OSError, EOFError) as exc:
            raise BundleError(f"corrupt gzip file in the archive ({path}: {exc}): rerun its phase") from None
        content_sha256 = digest.hexdigest()
    return {
        "path": rel,
        "size_bytes": path.stat().st_size,
        "sha256": file_sha256(path),
        "content_sha256": content_sha256,
        "content_size_bytes": content_size,
    }


class PhaseStage:
    """The staging folder of one phase (``run_dir/.staging/<phase>/``).

    Jobs write their records into :attr:`path`; :meth:`has` tells a resumed phase which
    outputs already exist (each was written atomically, so existing means complete).
    """

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self.path = path

    def __truediv__(self, rel: str) -> Path:
        return self.path / rel

    def has(self, rel: str) -> bool:
        """Whether the staged file *rel* exists (a job's output from an earlier attempt)."""
        return (self.path / rel).is_file()


class RunArchive:
    """One run folder: phases staged and completed by rename, plus ``manifest.json``.

    Args:
        run_dir: the run folder (created on first use).
        run_id: recorded in the manifest; defaults to the folder name.
    """

    def __init__(self, run_dir: str | os.PathLike[str], run_id: str | None = None) -> None:
        self.run_dir = Path(run_dir)
        if self.run_dir.exists() and not self.run_dir.is_dir():
            raise BundleError(f"--out {self.run_dir} is not a folder: give a new or existing run folder")
        self.run_id = run_id or self.run_dir.resolve().name

    def phase_dir(self, name: str) -> Path:
        """Folder of the completed phase *name* (may not exist)."""
        return self.run_dir / name

    def is_complete(self, name: str) -> bool:
        """Whether the phase *name* has been completed (its folder exists)."""
        return self.phase_dir(name).is_dir()

    def completed_phases(self) -> list[str]:
        """Names of the completed phases, sorted."""
        if not self.run_dir.is_dir():
            return []
        return sorted(p.name for p in self.run_dir.iterdir() if p.is_dir() and not p.name.startswith("."))

    @contextlib.contextmanager
    def phase(self, name: str, *, force: bool = False) -> Iterator[PhaseStage]:
        """Stage the phase *name*; complete it by rename when the block exits cleanly.

        Args:
            name: phase folder name (``validate``, ``compare``, ``qualify``, ``energy``, ``profile``).
            force: replace an already completed phase (only at the moment of completion, so a
                crash in the rerun keeps the old result).

        Yields:
            The :class:`PhaseStage`; files already staged by an interrupted attempt are kept. At
            completion, when JSON records staged before the block are still there unchanged (a
            resume), :data:`RESUMED_NAME` lists their runs (``resumed_runs``, file stems relative
            to the phase folder), so the verifier knows which records came from that attempt.

        Raises:
            BundleError: the phase is already complete and *force* is false.
        """
        if not name or "/" in name or name.startswith("."):
            raise BundleError(f"invalid phase name {name!r}: use a plain folder name such as 'compare'")
        final = self.phase_dir(name)
        if final.exists() and not force:
            raise BundleError(
                f"phase '{name}' is already complete ({final}): pass --force to replace it "
                "or use another --out folder"
            )
        staging = self.run_dir / STAGING_DIR / name
        try:
            created = make_folders(staging)
        except OSError as exc:
            raise BundleError(f"cannot create the run folder {self.run_dir} ({exc.strerror}): "
                              "give --out a writable folder") from None
        staged = _json_records(staging)  # what an earlier, unfinished attempt left (a resume keeps it)
        try:
            yield PhaseStage(name, staging)
        except BaseException:  # refused or failed before anything was staged: no empty folder stays
            remove_empty_folders(created)
            raise
        # Reached only when the block raised nothing: complete by rename. Temporary files of
        # atomic_write_bytes left by a writer killed mid-write (an earlier, interrupted invocation
        # that staged this phase) are not part of it.
        for stale in staging.rglob(".*.tmp"):
            with contextlib.suppress(OSError):
                stale.unlink()
        kept = _json_records(staging)
        resumed = sorted({_run_stem(rel) for rel, sha in staged.items() if kept.get(rel) == sha})
        if resumed:  # the verifier holds the phase's record stamps to this list (reproduce.timing)
            write_json_gz(staging / RESUMED_NAME, {"schema_version": SCHEMA_VERSION, "phase": name,
                                                   "resumed_runs": resumed, "scope": RESUMED_SCOPE})
        trash = self.run_dir / STAGING_DIR / f"{name}.replaced"
        if final.exists():
            if trash.exists():
                shutil.rmtree(trash)
            os.replace(final, trash)
        os.replace(staging, final)
        fsync_dir(self.run_dir)
        if trash.exists():
            shutil.rmtree(trash)
        self._remove_scratch(name)
        self.write_manifest()

    def _remove_scratch(self, name: str) -> None:
        """Remove the phase's scratch folder ``.work/<name>`` and empty hidden folders.

        Scratch inputs (the fixture npz, ncu's uncompressed outputs) are derived copies; a
        completed archive holds only what its manifest lists, and the verifier treats any other
        file, hidden ones included, as an integrity failure.
        """
        shutil.rmtree(self.run_dir / WORK_DIR / name, ignore_errors=True)
        for hidden in (WORK_DIR, STAGING_DIR):
            with contextlib.suppress(OSError):
                (self.run_dir / hidden).rmdir()  # only when empty

    def manifest_entries(self) -> list[dict[str, Any]]:
        """Entries for every file of the completed phases and the root records, sorted by path.

        ``manifest.json`` itself, hidden files and ``.staging/`` are not listed.
        """
        entries = []
        if not self.run_dir.is_dir():
            return entries
        for path in sorted(self.run_dir.rglob("*")):
            rel = path.relative_to(self.run_dir).as_posix()
            if rel == MANIFEST_NAME or any(part.startswith(".") for part in rel.split("/")):
                continue
            if path.is_file():
                entries.append(file_entry(path, rel))
        entries.sort(key=lambda e: e["path"])
        return entries

    def write_manifest(self) -> Path:
        """(Re)write ``manifest.json`` over every completed phase (canonical JSON, not gzipped)."""
        manifest = {"schema_version": SCHEMA_VERSION, "run_id": self.run_id, "files": self.manifest_entries()}
        return write_json(self.run_dir / MANIFEST_NAME, manifest)

    def read_manifest(self) -> dict[str, Any]:
        """Read ``manifest.json``.

        Raises:
            BundleError: missing or unreadable.
        """
        return read_json_gz(self.run_dir / MANIFEST_NAME)

    def record_execution(self, phase: str, execution: Mapping[str, Any]) -> Path:
        """Add where *phase* ran to ``environment.json.gz`` and refresh the manifest.

        Executions that are equal apart from their phase list share one entry, so a run made
        entirely on one host has one entry listing every phase.

        Args:
            phase: the phase name.
            execution: a record from :func:`bundle.hostinfo.execution_record`.

        Returns:
            Path of ``environment.json.gz``.
        """
        path = self.run_dir / ENVIRONMENT_NAME
        record = (
            read_json_gz(path)
            if path.exists()
            else {"schema_version": SCHEMA_VERSION, "run_id": self.run_id, "executions": []}
        )
        body = {k: v for k, v in execution.items() if k not in ("phases", "recorded_at_utc")}
        for entry in record["executions"]:
            if {k: v for k, v in entry.items() if k not in ("phases", "recorded_at_utc")} == body:
                if phase not in entry["phases"]:
                    entry["phases"].append(phase)
                break
        else:
            record["executions"].append({"phases": [phase], "recorded_at_utc": utc_now(), **body})
        write_json_gz(path, record)
        self.write_manifest()
        return path


def _json_records(folder: Path) -> dict[str, str]:
    """sha256 of every JSON record (``.json``, ``.json.gz``) under *folder* by relative path, not
    :data:`RESUMED_NAME` and no hidden file."""
    if not folder.is_dir():
        return {}
    return {path.relative_to(folder).as_posix(): file_sha256(path) for path in sorted(folder.rglob("*"))
            if path.is_file() and path.name.endswith((".json", ".json.gz")) and path.name != RESUMED_NAME
            and not any(part.startswith(".") for part in path.relative_to(folder).parts)}


def _run_stem(rel: str) -> str:
    """The run a record belongs to: its path up to the first dot of its name (``trial-r00-workspace-16-8``
    for ``trial-r00-workspace-16-8.json.gz``, ``smoke/worker`` for ``smoke/worker.json.gz``)."""
    folder, _, name = rel.rpartition("/")
    return f"{folder}/{name.split('.')[0]}" if folder else name.split(".")[0]
