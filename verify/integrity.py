"""Integrity first: every byte of an archive is hashed before any figure is read.

Two layouts are known:

* a **run archive** (ours): ``manifest.json`` lists every file with its size and sha256 of
  the stored bytes and, for ``.gz``, of the decompressed content (docs/ARCHITECTURE.md);
* the **original** archive (``evidence/rev88-original``): no manifest of ours; the known
  46 JSON files are checked through the sha256 values that other retained files record
  (spec appendix A), and the 11 files no original record hashes are checked against their
  recorded character counts and against sha256 pins taken by this bundle when it shipped
  the copy.

Decompression is streamed and bounded (:data:`MAX_CONTENT_BYTES` per file). Files the
layout does not list, paths that leave the archive and symbolic links are errors.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import stat
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from verify.records import RecordError, get, parse_json
from verify.result import CheckResult, Status, check_equal, failed, passed

MAX_CONTENT_BYTES = 512 * 1024 * 1024
"""Refuse to decompress more than 512 MiB from one ``.gz`` file."""

KEEP_CONTENT_BYTES = 64 * 1024 * 1024
"""Decompressed content up to this size stays in memory for the checks."""

MANIFEST_NAME = "manifest.json"
_CHUNK = 1 << 20


@dataclass
class ArchiveFiles:
    """What integrity established: verified content by archive-relative path.

    Attributes:
        root: the archive folder.
        content: path -> verified bytes (decompressed for ``.gz``); large content is
            re-read and re-verified on demand by :meth:`read`.
        expected: path -> (sha256 of content, size) for files not kept in memory.
        results: the integrity verdicts.
        hashing_s: wall seconds spent reading, hashing and decompressing.
        entries: path -> manifest entry of every verified member (run archives only).
        background: work started after integrity that checks collect later (the
            ``.ncu-rep`` reads of :mod:`verify.ncu_reports`), or None.
    """

    root: Path
    content: dict[str, bytes | None] = field(default_factory=dict)
    expected: dict[str, tuple[str, int]] = field(default_factory=dict)
    results: list[CheckResult] = field(default_factory=list)
    hashing_s: float = 0.0
    entries: dict[str, dict] = field(default_factory=dict)
    background: object = None

    def stored_entry(self, path: str) -> dict | None:
        """The manifest entry (``size_bytes``, ``sha256``, ``content_sha256``, ``content_size_bytes``)
        of a verified member, or None (not a member, or not a run archive)."""
        return self.entries.get(path) if path in self.content else None

    @property
    def ok(self) -> bool:
        """True when no integrity check FAILed."""
        return all(r.status is not Status.FAIL for r in self.results)

    def has(self, path: str) -> bool:
        """Whether ``path`` is a verified file of the archive."""
        return path in self.content

    def read(self, path: str) -> bytes:
        """Verified content of ``path`` (decompressed for ``.gz``).

        Raises:
            RecordError: the file is not a verified member, or changed since it was hashed.
        """
        if path not in self.content:
            raise RecordError(f"file is not a verified member of the archive ({self.root / path}): "
                              "check the manifest")
        data = self.content[path]
        if data is not None:
            return data
        t0 = time.perf_counter()
        data, _ = _read_content(self.root / path, path.endswith(".gz"))
        self.hashing_s += time.perf_counter() - t0
        sha, size = self.expected[path]
        if hashlib.sha256(data).hexdigest() != sha or len(data) != size:
            raise RecordError(f"file changed after it was verified ({self.root / path}): re-run verify")
        return data

    def json(self, path: str) -> object:
        """Parsed JSON of a verified member (NaN/Infinity rejected)."""
        return parse_json(self.read(path), path)


def _read_content(path: Path, is_gz: bool) -> tuple[bytes, str]:
    """Read a file; for ``.gz`` return the decompressed bytes (bounded).

    Returns:
        (content bytes, sha256 of the stored file bytes).

    Raises:
        RecordError: bad or truncated gzip, or content over :data:`MAX_CONTENT_BYTES`.
    """
    raw = path.read_bytes()
    stored_sha = hashlib.sha256(raw).hexdigest()
    if not is_gz:
        return raw, stored_sha
    out = bytearray()
    try:
        with gzip.GzipFile(fileobj=_BytesReader(raw), mode="rb") as fh:
            while True:
                chunk = fh.read(_CHUNK)
                if not chunk:
                    break
                out += chunk
                if len(out) > MAX_CONTENT_BYTES:
                    raise RecordError(f"gzip content exceeds {MAX_CONTENT_BYTES} bytes ({path}): refusing to "
                                      "decompress further; the file is not an archive member this bundle writes")
    except RecordError:
        raise
    except (OSError, EOFError, zlib.error) as exc:
        raise RecordError(f"bad or truncated gzip ({path}): {str(exc) or type(exc).__name__}; "
                          "restore the file from the run") from None
    return bytes(out), stored_sha


class _BytesReader:
    """Minimal file object over bytes for :class:`gzip.GzipFile` (no copy)."""

    def __init__(self, data: bytes) -> None:
        self._view = memoryview(data)
        self._pos = 0

    def read(self, n: int = -1) -> bytes:
        end = len(self._view) if n is None or n < 0 else min(len(self._view), self._pos + n)
        chunk = bytes(self._view[self._pos:end])
        self._pos = end
        return chunk

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False


def safe_relative(path: object) -> str | None:
    """Return ``path`` if it is a plain archive-relative POSIX path, else None.

    Rejects non-strings, absolute paths, ``..`` or ``.`` parts, backslashes, empty parts.
    """
    if not isinstance(path, str) or not path or "\\" in path or "\x00" in path:
        return None
    p = PurePosixPath(path)
    if p.is_absolute() or any(part in ("..", ".", "") for part in path.split("/")):
        return None
    return path


def is_hidden(rel: str) -> bool:
    """Whether an archive-relative POSIX path has a hidden part (``.staging/…``, ``.work/…``, ``.x``).

    As bundle.archive's manifest writer, which never lists such files.
    """
    return any(part.startswith(".") for part in rel.split("/"))


def walk_archive(root: Path) -> tuple[list[str], list[str]]:
    """List regular files (relative POSIX paths) and symlinks/special entries under ``root``."""
    files: list[str] = []
    bad: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = Path(dirpath).relative_to(root)
        for name in list(dirnames):
            full = Path(dirpath) / name
            if full.is_symlink():
                bad.append((rel_dir / name).as_posix())
                dirnames.remove(name)
        for name in filenames:
            full = Path(dirpath) / name
            mode = os.lstat(full).st_mode
            rel = (rel_dir / name).as_posix()
            if stat.S_ISREG(mode):
                files.append(rel)
            else:
                bad.append(rel)
    return sorted(files), sorted(bad)


def verify_run_archive(root: Path) -> ArchiveFiles:
    """Check ``root/manifest.json`` against the files (one of our run archives).

    Returns:
        :class:`ArchiveFiles` with one verdict per file and aspect (``integrity.size_bytes``,
        ``integrity.sha256``, ``integrity.content_sha256``) plus layout verdicts
        (``integrity.manifest``, ``integrity.unlisted``, ``integrity.symlink``,
        ``integrity.path``, ``integrity.missing``, ``integrity.hidden``: any hidden file left in the
        folder, as the writer never lists one).
    """
    out = ArchiveFiles(root=root)
    t0 = time.perf_counter()
    try:
        manifest = parse_json((root / MANIFEST_NAME).read_bytes(), MANIFEST_NAME)
        entries = _parse_manifest(manifest)
    except (RecordError, OSError) as exc:
        out.results.append(failed("integrity.manifest", MANIFEST_NAME, str(exc)))
        out.hashing_s = time.perf_counter() - t0
        return out
    out.results.append(passed("integrity.manifest", MANIFEST_NAME, recomputed=len(entries),
                              reason=f"manifest lists {len(entries)} files"))
    present, special = walk_archive(root)
    for rel in special:
        out.results.append(failed("integrity.symlink", rel, "symbolic link or special file inside the archive: "
                                  "replace it by the regular file or remove it"))
    listed = {e["path"] for e in entries}
    for rel in present:
        if is_hidden(rel):
            out.results.append(failed("integrity.hidden", rel, "hidden file in the run folder (scratch of an unfinished "
                                      "phase under .staging/ or .work/?): a completed archive holds only the files "
                                      "its manifest lists; finish or rerun the phase, or delete the file"))
        elif rel != MANIFEST_NAME and rel not in listed:
            out.results.append(failed("integrity.unlisted", rel, "file is not listed in manifest.json: "
                                      "remove it or rebuild the manifest"))
    for entry in entries:
        _verify_entry(out, entry)
    out.hashing_s = time.perf_counter() - t0
    return out


def _parse_manifest(manifest: object) -> list[dict]:
    where = MANIFEST_NAME
    version = get(manifest, "schema_version", int, where)
    if version != 1:
        raise RecordError(f"unsupported manifest schema_version {version} ({where}): this verifier reads version 1")
    get(manifest, "run_id", str, where)
    files = get(manifest, "files", list, where)
    entries: list[dict] = []
    for i, item in enumerate(files):
        p = get(item, "path", str, f"{where}: files.{i}")
        if safe_relative(p) is None or p == MANIFEST_NAME:
            raise RecordError(f"path {p!r} leaves the archive or is not a plain relative path "
                              f"({where}: files.{i}): the manifest is corrupt", where)
        if is_hidden(p):
            raise RecordError(f"path {p!r} is hidden ({where}: files.{i}): the writer never lists hidden files "
                              "(.staging/, .work/ scratch); the manifest is corrupt", where)
        entry = {
            "path": p,
            "size_bytes": get(item, "size_bytes", int, f"{where}: files.{i}"),
            "sha256": get(item, "sha256", str, f"{where}: files.{i}"),
            "content_sha256": get(item, "content_sha256", (str, type(None)), f"{where}: files.{i}"),
            "content_size_bytes": get(item, "content_size_bytes", (int, type(None)), f"{where}: files.{i}"),
        }
        if p.endswith(".gz") and (entry["content_sha256"] is None or entry["content_size_bytes"] is None):
            raise RecordError(f"gzip member without content_sha256/content_size_bytes ({where}: files.{i}, {p}): "
                              "rebuild the manifest")
        entries.append(entry)
    paths = [e["path"] for e in entries]
    if paths != sorted(paths) or len(set(paths)) != len(paths):
        raise RecordError(f"manifest files are not sorted by path or repeat a path ({where}): rebuild the manifest")
    return entries


def _verify_entry(out: ArchiveFiles, entry: dict) -> None:
    rel = entry["path"]
    full = out.root / rel
    if not os.path.lexists(full):
        out.results.append(failed("integrity.missing", rel, "file listed in manifest.json is absent: "
                                  "restore it from the run"))
        return
    if full.is_symlink() or not full.is_file():
        return  # already reported by the walk (symlink or special file)
    if any(parent.is_symlink() for parent in full.relative_to(out.root).parents if str(parent) != "."):
        return
    size = full.stat().st_size
    out.results.append(check_equal("integrity.size_bytes", rel, entry["size_bytes"], size, what="stored size"))
    is_gz = rel.endswith(".gz")
    try:
        data, stored_sha = _read_content(full, is_gz)
    except RecordError as exc:
        # The stored hash still decides whether the bytes are the recorded ones.
        stored_sha = hashlib.sha256(full.read_bytes()).hexdigest()
        out.results.append(check_equal("integrity.sha256", rel, entry["sha256"], stored_sha, what="stored sha256"))
        out.results.append(failed("integrity.content_sha256", rel, str(exc), recorded=entry["content_sha256"]))
        return
    mine = [check_equal("integrity.sha256", rel, entry["sha256"], stored_sha, what="stored sha256")]
    if is_gz:
        content_sha = hashlib.sha256(data).hexdigest()
        mine.append(check_equal("integrity.content_sha256", rel, entry["content_sha256"], content_sha,
                                what="decompressed sha256"))
        mine.append(check_equal("integrity.content_size_bytes", rel, entry["content_size_bytes"],
                                len(data), what="decompressed size"))
    out.results.extend(mine)
    if any(r.status is Status.FAIL for r in mine) or size != entry["size_bytes"]:
        return  # never hand unverified bytes to a check
    out.entries[rel] = entry
    if len(data) <= KEEP_CONTENT_BYTES:
        out.content[rel] = data
    else:
        out.content[rel] = None
        out.expected[rel] = (hashlib.sha256(data).hexdigest(), len(data))
