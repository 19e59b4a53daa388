"""`rev88 data fetch` and `rev88 data check`: the four pinned MNIST raw files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bundle.commands import one_line_errors

data_app = typer.Typer(help="Fetch and check the pinned MNIST raw files.", no_args_is_help=True)


@data_app.command("fetch")
@one_line_errors
def fetch(
    dest: Annotated[Path, typer.Option("--dest", help="folder to download the four .gz files into")],
    mirror: Annotated[list[str] | None, typer.Option(
        "--mirror", help="base URL to use instead of the official mirrors (repeatable; file:// works)")] = None,
) -> None:
    """Download the four official MNIST files, check each sha256, then rename into DEST."""
    from rich.console import Console  # noqa: PLC0415

    from protocol.data import MIRRORS, fetch_raw_files  # noqa: PLC0415
    from protocol.errors import BundleError  # noqa: PLC0415

    if dest.exists() and not dest.is_dir():
        raise BundleError(f"--dest {dest} is a file, not a folder: give the folder to download the raw files into")
    mirrors = tuple(mirror) if mirror else MIRRORS
    for row in fetch_raw_files(dest, mirrors):
        Console().print(f"{row['file']}: {row['status']} ({row['source']})")


@data_app.command("check")
@one_line_errors
def check(
    raw_dir: Annotated[Path | None, typer.Option("--raw-dir", help="raw folder (default: REV88_RAW_DIR or data/mnist)")] = None,
) -> None:
    """Print the status of the four raw files; exit non-zero if any is missing or altered."""
    from rich.console import Console  # noqa: PLC0415

    from bundle.commands.console import print_table  # noqa: PLC0415
    from protocol.data import default_raw_dir, raw_status  # noqa: PLC0415
    from protocol.errors import BundleError  # noqa: PLC0415

    folder = raw_dir if raw_dir is not None else default_raw_dir()
    if folder.exists() and not folder.is_dir():
        raise BundleError(f"--raw-dir {folder} is a file, not a folder: give the folder that holds the four "
                          "MNIST .gz files")
    rows = raw_status(folder)
    print_table(Console(), f"MNIST raw files in {folder}", ("file", "used by rev88", "status", "size (bytes)", "sha256"),
                [(row["file"], "yes" if row["used"] else "no", row["status"],
                  "-" if row["size_bytes"] is None else f"{row['size_bytes']:,}", (row["sha256"] or "-")[:16])
                 for row in rows], right_align_from=3)
    bad = [r for r in rows if r["status"] != "ok"]
    if bad:
        first = bad[0]
        raise BundleError(f"{len(bad)} raw file(s) not ok in {folder} (first: {first['file']} {first['status']}, "
                          f"expected sha256 {first['expected_sha256']}, got {first['sha256'] or 'no file'}): "
                          f"run `rev88 data fetch --dest {folder}`")


def register(app: typer.Typer) -> None:
    """Register the ``rev88 data`` command group on *app*."""
    app.add_typer(data_app, name="data")
