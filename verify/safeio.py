"""Reading evidence that may be hostile: regular files only, every read bounded, canonical gzip.

Every byte the verifier reads from an archive or from the host's reference data comes
through this module:

* a path is ``lstat``-ed first and refused unless it is a regular file (a symbolic link, a
  FIFO, a device, a socket or a folder is never opened, so ``manifest.json -> /dev/zero``
  cannot be read until memory runs out and a FIFO cannot block the verifier); it is then
  opened with ``O_NOFOLLOW | O_NONBLOCK`` and ``fstat``-ed again, so a swap between the two
  calls is caught too;
* a file larger than the limit of its kind is refused from its size alone, before a byte is
  read, and a file that grows while it is read is refused at the limit;
* ``.gz`` members must be in the one form :func:`protocol.archive_format.gzip_bytes` writes: the
  10-byte header :data:`protocol.archive_format.GZIP_HEADER`, one deflate stream, its 8-byte trailer
  (CRC-32 and size, both checked) and nothing after it. Decompression is streamed and stops
  at the content limit, so no stored file can expand beyond it in memory.

This module never imports torch.
"""

from __future__ import annotations

import hashlib
import os
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path

from protocol.archive_format import GZIP_HEADER
from verify.records import RecordError

_CHUNK = 1 << 20
_OUT_CHUNK = 1 << 20


def gzip_stored_limit(content_limit: int) -> int:
    """Largest stored size accepted for a ``.gz`` member whose content may reach *content_limit* bytes.

    Deflate never expands incompressible input by more than 5 bytes per 16 KiB block; the
    margin (0.2 % + 1 KiB for header and trailer) is generous.
    """
    return content_limit + content_limit // 512 + 1024


def describe_mode(mode: int) -> str:
    """A plain name for what a path is (``symbolic link``, ``FIFO``, ``character device`` …)."""
    for test, name in ((stat.S_ISLNK, "symbolic link"), (stat.S_ISFIFO, "FIFO (named pipe)"),
                       (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISDIR, "folder"), (stat.S_ISREG, "regular file")):
        if test(mode):
            return name
    return "special file"


def _refuse(path: Path, where: str, what: str) -> RecordError:
    return RecordError(f"{where} is a {what}, not a regular file ({path}): the verifier never opens links or special "
                       "files; replace it by the regular file the run wrote", where)


def open_regular(path: str | os.PathLike[str], *, limit: int, where: str,
                 follow_symlinks: bool = False) -> tuple[int, int]:
    """Open a regular file for reading after refusing anything else, and check its size.

    Args:
        path: the file.
        limit: largest accepted size in bytes.
        where: name for error lines (an archive-relative path, or the host folder's file).
        follow_symlinks: accept a symbolic link to a regular file (the host's own reference
            data only; never for archive members).

    Returns:
        ``(file descriptor, size in bytes)``; the caller closes the descriptor.

    Raises:
        RecordError: absent, not a regular file (checked with ``lstat`` before opening and
            ``fstat`` after), unreadable, or larger than *limit*.
    """
    full = Path(path)
    try:
        before = os.stat(full) if follow_symlinks else os.lstat(full)
    except FileNotFoundError:
        raise RecordError(f"{where} is absent ({full}): restore it", where) from None
    except OSError as exc:
        raise RecordError(f"{where} cannot be examined ({full}: {exc.strerror}): check its permissions", where) from None
    if not stat.S_ISREG(before.st_mode):
        raise _refuse(full, where, describe_mode(before.st_mode))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(full, flags)
    except OSError as exc:
        raise RecordError(f"{where} cannot be opened ({full}: {exc.strerror}): check its permissions", where) from None
    after = os.fstat(fd)
    if not stat.S_ISREG(after.st_mode) or (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
        os.close(fd)
        raise _refuse(full, where, describe_mode(after.st_mode) + " (swapped in while it was opened)")
    if after.st_size > limit:
        os.close(fd)
        raise RecordError(f"{where} is {after.st_size:,} bytes, more than the {limit:,} bytes a file of its kind may "
                          f"hold ({full}): it is not a file the bundle writes; restore it", where)
    return fd, after.st_size


def read_regular(path: str | os.PathLike[str], *, limit: int, where: str, follow_symlinks: bool = False) -> bytes:
    """All bytes of a regular file of at most *limit* bytes (see :func:`open_regular`).

    Raises:
        RecordError: as :func:`open_regular`, or the file grew past *limit* while it was read.
    """
    fd, _ = open_regular(path, limit=limit, where=where, follow_symlinks=follow_symlinks)
    with os.fdopen(fd, "rb", buffering=0) as handle:
        parts, total = [], 0
        while chunk := handle.read(min(_CHUNK, limit + 1 - total)):
            parts.append(chunk)
            total += len(chunk)
            if total > limit:
                raise RecordError(f"{where} grew past {limit:,} bytes while it was read ({path}): "
                                  "verify a folder nothing writes to", where)
    return b"".join(parts)


@dataclass
class Member:
    """What reading one stored file established.

    Attributes:
        stored_sha256: sha256 (hex) of the stored bytes.
        stored_size: stored size in bytes.
        content_sha256: sha256 of the decompressed bytes (``.gz``; else of the stored bytes),
            or None when the gzip stream is not valid and canonical.
        content_size: decompressed size in bytes (``.gz``; else the stored size), or None.
        content: the content bytes when at most ``keep`` bytes, else None.
        gzip_problem: why the stored bytes are not canonical gzip (one line), or None.
        over_limit: the gzip content exceeded the content limit (``gzip_problem`` says so).
    """

    stored_sha256: str
    stored_size: int
    content_sha256: str | None
    content_size: int | None
    content: bytes | None
    gzip_problem: str | None = None
    over_limit: bool = False


class _Gunzip:
    """Streaming, bounded inflater for exactly one canonical gzip member."""

    def __init__(self, where: str, limit: int, keep: int) -> None:
        self.where, self.limit, self.keep = where, limit, keep
        self.head = b""
        self.inflater = zlib.decompressobj(-zlib.MAX_WBITS)
        self.digest = hashlib.sha256()
        self.crc = 0
        self.size = 0
        self.parts: list[bytes] | None = []
        self.tail = b""
        self.tail_size = 0
        self.problem: str | None = None
        self.over_limit = False

    def _fail(self, problem: str) -> None:
        if self.problem is None:
            self.problem = problem
        self.parts = None

    def _emit(self, out: bytes) -> None:
        if not out:
            return
        self.size += len(out)
        if self.size > self.limit:
            self.over_limit = True
            self._fail(f"gzip content exceeds {self.limit:,} bytes ({self.where}): refusing to decompress further; "
                       "the file is not an archive member this bundle writes")
            return
        self.digest.update(out)
        self.crc = zlib.crc32(out, self.crc)
        if self.parts is not None:
            if self.size <= self.keep:
                self.parts.append(out)
            else:
                self.parts = None

    def feed(self, data: bytes) -> None:
        if self.problem is not None:
            return
        if len(self.head) < len(GZIP_HEADER):
            need = len(GZIP_HEADER) - len(self.head)
            self.head += data[:need]
            data = data[need:]
            if len(self.head) < len(GZIP_HEADER):
                return
            if self.head[:2] != GZIP_HEADER[:2]:
                self._fail(f"bad or truncated gzip ({self.where}): not a gzip stream; restore the file from the run")
                return
            if self.head != GZIP_HEADER:
                self._fail(f"non-canonical gzip header ({self.where}: {self.head.hex()}, the writer's is "
                           f"{GZIP_HEADER.hex()}: no file name, mtime 0, level 9): this is not a member the bundle "
                           "wrote; restore it from the run")
                return
        if self.inflater.eof:
            self._add_tail(data)
            return
        while True:
            try:
                out = self.inflater.decompress(data, _OUT_CHUNK)
            except zlib.error as exc:
                self._fail(f"bad or truncated gzip ({self.where}): {exc}; restore the file from the run")
                return
            self._emit(out)
            if self.problem is not None:
                return
            data = self.inflater.unconsumed_tail
            if self.inflater.eof:
                self._add_tail(self.inflater.unused_data)
                return
            if not data and not out:
                return

    def _add_tail(self, data: bytes) -> None:
        self.tail_size += len(data)
        if len(self.tail) < 16:
            self.tail += data[: 16 - len(self.tail)]

    def finish(self) -> None:
        if self.problem is not None:
            return
        if len(self.head) < len(GZIP_HEADER) or not self.inflater.eof:
            self._fail(f"bad or truncated gzip ({self.where}): the stream ends early; restore the file from the run")
            return
        if self.tail_size < 8:
            self._fail(f"bad or truncated gzip ({self.where}): the 8-byte trailer is cut; restore the file from the run")
            return
        crc, isize = int.from_bytes(self.tail[:4], "little"), int.from_bytes(self.tail[4:8], "little")
        if crc != self.crc or isize != self.size & 0xFFFFFFFF:
            self._fail(f"bad gzip trailer ({self.where}): CRC-32 or size disagrees with the content; restore the file")
            return
        if self.tail_size > 8:
            extra = self.tail_size - 8
            what = ("a second gzip member" if self.tail[8:10] == GZIP_HEADER[:2]
                    else f"{extra:,} trailing byte{'s' if extra != 1 else ''}")
            self._fail(f"non-canonical gzip ({self.where}): {what} after the first member's trailer; the writer "
                       "stores exactly one member and nothing after it; restore the file from the run")


def read_member(path: str | os.PathLike[str], *, gz: bool, content_limit: int, keep: int, where: str) -> Member:
    """Hash one stored file and, for ``.gz``, inflate it as one canonical gzip member (streamed, bounded).

    Args:
        path: the stored file.
        gz: whether it is a ``.gz`` member.
        content_limit: largest accepted content size in bytes (decompressed for ``.gz``); the
            stored size may be at most this (plain) or :func:`gzip_stored_limit` of it (``.gz``).
        keep: content up to this many bytes is returned in :attr:`Member.content`.
        where: the archive-relative path, for error lines.

    Returns:
        The :class:`Member`; a gzip stream that is not valid and canonical is described in
        ``gzip_problem`` (the stored hash is still computed, so it can be compared).

    Raises:
        RecordError: not a regular file, unreadable, or stored size over the limit.
    """
    stored_limit = gzip_stored_limit(content_limit) if gz else content_limit
    fd, _ = open_regular(path, limit=stored_limit, where=where)
    digest = hashlib.sha256()
    total = 0
    gunzip = _Gunzip(where, content_limit, keep) if gz else None
    parts: list[bytes] | None = [] if not gz else None
    with os.fdopen(fd, "rb", buffering=0) as handle:
        while chunk := handle.read(_CHUNK):
            total += len(chunk)
            if total > stored_limit:
                raise RecordError(f"{where} grew past {stored_limit:,} bytes while it was read ({path}): "
                                  "verify a folder nothing writes to", where)
            digest.update(chunk)
            if gunzip is not None:
                gunzip.feed(chunk)
            elif parts is not None:
                if total <= keep:
                    parts.append(chunk)
                else:
                    parts = None
    stored_sha = digest.hexdigest()
    if gunzip is None:
        return Member(stored_sha, total, stored_sha, total, b"".join(parts) if parts is not None else None)
    gunzip.finish()
    if gunzip.problem is not None:
        return Member(stored_sha, total, None, None, None, gunzip.problem, gunzip.over_limit)
    content = b"".join(gunzip.parts) if gunzip.parts is not None else None
    return Member(stored_sha, total, gunzip.digest.hexdigest(), gunzip.size, content)
