"""Merge completed phases of several run archives into one archive, then rewrite its manifest.

Used when the phases of one run were executed in separate device calls (each on a fresh
machine): the completed phase folders are copied unchanged, ``environment.json.gz`` lists
every execution (each with its own GPU UUID), and ``manifest.json`` is regenerated over the
result. Hidden folders (``.work``, ``.staging``) are never copied. ``--drop NAME`` removes
files of that name (e.g. a derived ``input.npz`` copy that older runs stored in a phase
folder); each dropped file is listed in ``environment.json.gz`` under ``dropped_files``. A source's CUDA kernel
source (``fused_cuda.cu.gz``) is carried over; sources that keep different ones are refused.

Usage::

    python scripts/merge_archives.py --dest evidence/h200-YYYYMMDD /tmp/runA /tmp/runB --drop input.npz
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from bundle import archive
from bundle.phases.fixture_runner import KERNEL_SOURCE_REL


def main() -> None:
    """Command-line entry."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="+", type=Path)
    parser.add_argument("--dest", required=True, type=Path)
    parser.add_argument("--drop", action="append", default=[])
    args = parser.parse_args()
    if args.dest.exists():
        raise SystemExit(f"{args.dest} exists: choose a new destination")
    args.dest.mkdir(parents=True)
    executions, dropped = [], []
    for source in args.sources:
        run = archive.RunArchive(source)
        for phase in run.completed_phases():
            if (args.dest / phase).exists():
                raise SystemExit(f"phase {phase} appears in more than one source ({source})")
            shutil.copytree(source / phase, args.dest / phase)
            for name in args.drop:
                for path in sorted((args.dest / phase).rglob(name)):
                    dropped.append({"path": path.relative_to(args.dest).as_posix(),
                                    "sha256": archive.file_sha256(path), "size_bytes": path.stat().st_size,
                                    "reason": "derived input copy; rebuilt from the raw MNIST files by the verifier"})
                    path.unlink()
        kernel = source / KERNEL_SOURCE_REL   # the CUDA kernel source the phases' records name: one per archive
        if kernel.is_file():
            kept = args.dest / KERNEL_SOURCE_REL
            if kept.exists() and kept.read_bytes() != kernel.read_bytes():
                raise SystemExit(f"{kernel} differs from the {KERNEL_SOURCE_REL} of an earlier source: an archive "
                                 "holds one kernel source")
            shutil.copy2(kernel, kept)
        env = archive.read_json_gz(source / "environment.json.gz")
        executions.extend(dict(e, source_run_id=env["run_id"]) for e in env["executions"])
    merged = archive.RunArchive(args.dest)
    record = {"schema_version": archive.SCHEMA_VERSION, "run_id": merged.run_id, "executions": executions}
    if dropped:
        record["dropped_files"] = dropped
    archive.write_json_gz(args.dest / "environment.json.gz", record)
    merged.write_manifest()
    print(f"{args.dest}: phases {merged.completed_phases()}, {len(merged.manifest_entries())} files")


if __name__ == "__main__":
    main()
