"""Stored ``.ncu-rep`` reports re-read through NVIDIA's ``ncu_report``, in worker processes.

A profile run record names its report in ``files.ncu_report`` (``path`` null and ``stored``
false when the run kept only the CSV). For every stored report the verifier decompresses
the ``.gz`` member (bounded, streamed) into a temporary file, re-checks the decompressed
sha256 and size against the manifest, and reads the single range result with
:func:`protocol.ncu.read_report_values`. Loading one H200 task-scope report (116 MB)
takes ~9 s of CPU inside ``ncu_report``, so the reads start right after integrity in up
to two spawned worker processes and run while the other checks do; the profile family
collects them (:meth:`ReportReads.result`). Nothing here imports torch.

Ctrl-C reaches the whole process group of a terminal. The workers never see it (SIGINT is blocked
while they start, so they inherit the block, and ignored once they run); the main process gets
the ``KeyboardInterrupt`` and :func:`bundle.commands.one_line_errors` prints one line, after
:meth:`ReportReads.close` (``now=True``) has stopped the workers instead of waiting for their reads.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import multiprocessing
import os
import signal
import tempfile
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any

from verify.integrity import MAX_CONTENT_BYTES, ArchiveFiles

MAX_WORKERS = 2
"""Worker processes for report reads (CI has 2 cores)."""

READ_TIMEOUT_S = 600.0
"""Longest wait for one report read."""

_CHUNK = 1 << 20


def stored_reports(f: ArchiveFiles) -> dict[str, str]:
    """Run record path -> archive path of its stored ``.ncu-rep.gz`` (from each record's ``files`` map).

    Records that do not parse, or whose ``files.ncu_report.path`` is null or not a verified
    member, are left out here; the profile checks report those.
    """
    out: dict[str, str] = {}
    for rel in sorted(f.content):
        if not (rel.startswith("profile/") and rel.endswith(".json.gz")) or rel.endswith(".fixture.json.gz"):
            continue
        try:
            rec = f.json(rel)
        except Exception:  # noqa: BLE001 - malformed records are reported by the profile checks
            continue
        files = rec.get("files") if isinstance(rec, dict) else None
        entry = files.get("ncu_report") if isinstance(files, dict) else None
        path = entry.get("path") if isinstance(entry, dict) else None
        if isinstance(path, str):
            full = f"{Path(rel).parent.as_posix()}/{path}"
            if f.stored_entry(full) is not None and full.endswith(".ncu-rep.gz"):
                out[rel] = full
    return out


def read_stored_report(root: str, rel: str, content_sha256: str, content_size_bytes: int) -> dict[str, Any]:
    """Worker: decompress ``root/rel`` to a temporary ``.ncu-rep`` and read it with ``ncu_report``.

    Returns:
        ``{"status": "read", "action_name", "values", "seconds"}``,
        ``{"status": "unavailable", "reason"}`` when ``ncu_report`` cannot be imported, or
        ``{"status": "error", "reason"}`` (changed bytes, bad gzip, unreadable report).
    """
    from protocol import ncu as profile  # noqa: PLC0415
    from protocol.errors import BundleError  # noqa: PLC0415
    from verify import safeio  # noqa: PLC0415

    t0 = time.perf_counter()
    module, reason = profile.import_ncu_report()
    if module is None:
        return {"status": "unavailable", "reason": reason}
    digest, size = hashlib.sha256(), 0
    with tempfile.TemporaryDirectory(prefix="rev88-ncu-") as tmp:
        target = Path(tmp) / Path(rel).name[: -len(".gz")]
        try:
            # the member passed integrity as a regular file; refuse one swapped in since (lstat, O_NOFOLLOW)
            fd, _ = safeio.open_regular(Path(root) / rel, limit=safeio.gzip_stored_limit(MAX_CONTENT_BYTES), where=rel)
            with os.fdopen(fd, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as src, open(target, "wb") as dst:
                while chunk := src.read(_CHUNK):
                    size += len(chunk)
                    if size > MAX_CONTENT_BYTES:
                        return {"status": "error", "reason": f"report content exceeds {MAX_CONTENT_BYTES} bytes "
                                f"({rel}): refusing to decompress further"}
                    digest.update(chunk)
                    dst.write(chunk)
        except (OSError, EOFError) as exc:
            return {"status": "error", "reason": f"bad or truncated gzip ({rel}): {exc}"}
        except BundleError as exc:
            return {"status": "error", "reason": str(exc)}
        if digest.hexdigest() != content_sha256 or size != content_size_bytes:
            return {"status": "error", "reason": f"report changed after it was verified ({rel}): re-run verify"}
        try:
            values = profile.read_report_values(module, target)
        except BundleError as exc:
            return {"status": "error", "reason": str(exc)}
    return {"status": "read", **values, "seconds": time.perf_counter() - t0}


def _ignore_sigint() -> None:
    """Worker initializer: Ctrl-C is the main process's to handle (no traceback from a worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """Block SIGINT in this thread for the block: processes started inside inherit the block (through
    ``exec``), so a Ctrl-C while a worker interpreter starts up cannot interrupt it; a Ctrl-C that
    arrived meanwhile is delivered to this process when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):  # not POSIX: the initializer alone
        yield
        return
    # The pool's semaphores start multiprocessing's resource tracker, which unblocks SIGINT after
    # starting itself; started first, it guards itself (it blocks, then ignores SIGINT).
    resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _terminate_workers(executor: ProcessPoolExecutor) -> None:
    """Kill the worker processes of *executor* (SIGTERM) without waiting for their running reads."""
    stop = getattr(executor, "terminate_workers", None)  # Python >= 3.14
    if stop is not None:
        stop()
        return
    for process in list((getattr(executor, "_processes", None) or {}).values()):
        with contextlib.suppress(Exception):  # already gone
            process.terminate()


class ReportReads:
    """Report reads started in the background; :meth:`result` waits for one.

    Args:
        f: the verified archive.
        workers: worker processes (default :data:`MAX_WORKERS`, at most the CPU count).
    """

    def __init__(self, f: ArchiveFiles, *, workers: int | None = None) -> None:
        from protocol import ncu as profile  # noqa: PLC0415

        self.reports = stored_reports(f)
        self.unavailable_reason: str | None = None
        self._futures: dict[str, Future] = {}
        self._executor: ProcessPoolExecutor | None = None
        self.wait_s = 0.0  # main-process seconds spent waiting for reads
        self.read_s = 0.0  # worker seconds spent decompressing and reading reports
        if not self.reports:
            return
        module, reason = profile.import_ncu_report()
        if module is None:
            self.unavailable_reason = reason
            return
        n = max(1, min(workers or MAX_WORKERS, os.cpu_count() or 1, len(self.reports)))
        by_size = sorted(self.reports.items(), key=lambda kv: -int(f.entries[kv[1]]["content_size_bytes"] or 0))
        with _sigint_blocked():  # the pool starts its processes (workers, resource tracker) in here
            self._executor = ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("spawn"),
                                                 initializer=_ignore_sigint)
            for record, rel in by_size:
                entry = f.entries[rel]
                try:
                    self._futures[record] = self._executor.submit(
                        read_stored_report, str(f.root), rel, entry["content_sha256"], entry["content_size_bytes"])
                except Exception as exc:  # noqa: BLE001 - a pool whose workers died (BrokenProcessPool): a FAIL line each
                    failed: Future = Future()
                    failed.set_result({"status": "error",
                                       "reason": f"report read not started ({type(exc).__name__}: {exc})"})
                    self._futures[record] = failed

    def result(self, record: str) -> Mapping[str, Any] | None:
        """The read of ``record``'s report (see :func:`read_stored_report`), or None if none was started."""
        if self.unavailable_reason is not None and record in self.reports:
            return {"status": "unavailable", "reason": self.unavailable_reason}
        future = self._futures.get(record)
        if future is None:
            return None
        t0 = time.perf_counter()
        try:
            out = future.result(timeout=READ_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - a crashed worker becomes one FAIL line
            return {"status": "error", "reason": f"report read failed ({type(exc).__name__}: {exc})"}
        finally:
            self.wait_s += time.perf_counter() - t0
        self.read_s += float(out.get("seconds", 0.0))
        return out

    def close(self, *, now: bool = False) -> None:
        """Stop the workers (pending reads are cancelled).

        Args:
            now: kill the workers instead of letting their running reads finish (an interrupt, or an
                error that ends the verification).
        """
        if self._executor is not None:
            if now:
                _terminate_workers(self._executor)
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
