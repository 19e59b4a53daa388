"""The byte format of an evidence archive: canonical JSON, canonical gzip, the schema version.

The writer (:mod:`bundle.archive`) produces these bytes and the verifier (:mod:`verify.safeio`,
:mod:`verify.integrity`) requires them, so the format is defined once, here. Records are JSON as
the original study wrote it (spec "Conventions": 2-space indent, insertion-ordered keys,
``allow_nan=False``, ASCII escaping, one trailing newline), stored as one gzip member with a
reproducible header (mtime 0, empty file name, level 9): the same record always gives the same bytes.
"""

from __future__ import annotations

import gzip
import io
import json
from typing import Any

from protocol.errors import BundleError

SCHEMA_VERSION = 1
"""``schema_version`` of the manifest and of every record the writer stamps."""

GZIP_LEVEL = 9
"""Deflate level of every stored ``.gz`` member."""

GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
"""The 10-byte member header :func:`gzip_bytes` writes (RFC 1952): deflate, no flags (no file
name, comment, extra field or header CRC), mtime 0, XFL 2 (level 9), OS 255 (unknown).
Together with one member and nothing after its 8-byte trailer this is the canonical gzip
form the verifier requires (``verify.safeio``)."""

KERNEL_SOURCE_REL = "fused_cuda.cu.gz"
"""Where an archive made with the CUDA kernel tool keeps the kernel source its jobs compiled (gzipped; the
bytes its records' ``kernel_source_sha256`` hashes): written by the writer, read by the verifier."""

RESUMED_NAME = "resumed.json.gz"
"""File written into every phase folder at completion (``bundle.archive.RunArchive.phase``)."""

RESUMED_SCOPE = ("runs (record file stems, relative to the phase folder) whose JSON records an earlier, unfinished "
                 "attempt at this phase had staged and that this completion kept byte for byte; every other record "
                 "of the phase was written by the invocation that completed it")
"""The ``scope`` text of :data:`RESUMED_NAME`, word for word."""


def dumps_canonical(obj: Any) -> str:
    """Serialise *obj* the way the original wrote its JSON evidence.

    Args:
        obj: JSON-compatible value (dicts keep insertion order).

    Returns:
        Text with 2-space indent, default separators, ASCII escaping and one trailing newline.

    Raises:
        BundleError: the value holds NaN/Infinity or a non-JSON type.
    """
    try:
        return json.dumps(obj, indent=2, allow_nan=False, ensure_ascii=True) + "\n"
    except (ValueError, TypeError) as exc:
        raise BundleError(f"record is not canonical JSON ({exc}): fix the value before writing") from None


def gzip_bytes(data: bytes) -> bytes:
    """Gzip *data* reproducibly: level 9, mtime 0, empty file name in the header.

    Args:
        data: the uncompressed bytes.

    Returns:
        The gzip stream (one member starting with :data:`GZIP_HEADER`); equal inputs give equal
        outputs on the same zlib.
    """
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", compresslevel=GZIP_LEVEL, fileobj=buffer, mtime=0) as gz:
        gz.write(data)
    return buffer.getvalue()
