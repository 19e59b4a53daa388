#!/usr/bin/env python3
"""Print a deb822 apt source for another suite of the base image's own Debian mirror.

The GPU image takes Nsight Compute from Debian's ``non-free`` component of a newer suite
(trixie carries the CUDA 12.4.1 toolkit's Nsight Compute 2024.1.1). No mirror host is written in
the repository: this script reads the base image's apt sources (deb822 files in
``/etc/apt/sources.list.d/*.sources`` as in ``debian:bookworm-slim``, or one-line entries in
``/etc/apt/sources.list`` as debootstrap writes them), takes the URI that serves the base suite
(default ``bookworm``) with the ``main`` component, and prints a deb822 stanza for
``--suite``/``--components`` at that URI, signed by the keyring the base entry names (or
Debian's archive keyring).

Exit status 1 with one line on stderr when no such entry exists.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DEFAULT_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


def deb822_entries(text: str) -> list[dict[str, str]]:
    """The stanzas of a deb822 ``.sources`` file as ``{field: value}`` (comments dropped)."""
    entries: list[dict[str, str]] = []
    current: dict[str, str] = {}
    last = None
    for raw in text.splitlines() + [""]:
        line = raw.rstrip()
        if line.startswith("#"):
            continue
        if not line.strip():
            if current:
                entries.append(current)
            current, last = {}, None
            continue
        if line[0] in " \t" and last is not None:
            current[last] += " " + line.strip()
            continue
        field, _, value = line.partition(":")
        last = field.strip().lower()
        current[last] = value.strip()
    return entries


def one_line_entries(text: str) -> list[dict[str, str]]:
    """One-line ``deb [options] URI suite component...`` entries in the deb822 field names."""
    entries = []
    for raw in text.splitlines():
        words = raw.split("#", 1)[0].split()
        if not words or words[0] != "deb":
            continue
        words = words[1:]
        options: dict[str, str] = {}
        if words and words[0].startswith("["):
            opts = []
            while words:
                opts.append(words.pop(0))
                if opts[-1].endswith("]"):
                    break
            for opt in " ".join(opts).strip("[] ").split():
                key, _, value = opt.partition("=")
                options[key.lower()] = value
        if len(words) < 3:
            continue
        entry = {"types": "deb", "uris": words[0], "suites": words[1], "components": " ".join(words[2:])}
        if "signed-by" in options:
            entry["signed-by"] = options["signed-by"]
        entries.append(entry)
    return entries


def base_entries(root: Path) -> list[dict[str, str]]:
    """Every apt source entry of the system under *root*."""
    entries = []
    listing = root / "etc/apt/sources.list"
    if listing.is_file():
        entries += one_line_entries(listing.read_text(encoding="utf-8"))
    parts = root / "etc/apt/sources.list.d"
    if parts.is_dir():
        for path in sorted(parts.iterdir()):
            if path.suffix == ".sources" and path.is_file():
                entries += deb822_entries(path.read_text(encoding="utf-8"))
            elif path.suffix == ".list" and path.is_file():
                entries += one_line_entries(path.read_text(encoding="utf-8"))
    return entries


def derive(entries: list[dict[str, str]], base_suite: str, suite: str, components: str) -> str:
    """The deb822 stanza for *suite*/*components* at the URI that serves *base_suite* ``main``.

    Raises:
        LookupError: no ``deb`` entry serves *base_suite* with the ``main`` component.
    """
    for entry in entries:
        if "deb" not in entry.get("types", "").split():
            continue
        if base_suite in entry.get("suites", "").split() and "main" in entry.get("components", "").split():
            uri = entry.get("uris", "").split()[0]
            keyring = entry.get("signed-by") or DEFAULT_KEYRING
            return (f"Types: deb\nURIs: {uri}\nSuites: {suite}\nComponents: {components}\n"
                    f"Signed-By: {keyring}\n")
    raise LookupError(f"no apt source serves {base_suite} main")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("/"), help="system root whose apt sources are read")
    parser.add_argument("--base-suite", default="bookworm")
    parser.add_argument("--suite", required=True)
    parser.add_argument("--components", default="non-free")
    args = parser.parse_args()
    try:
        print(derive(base_entries(args.root), args.base_suite, args.suite, args.components), end="")
    except (LookupError, OSError, UnicodeDecodeError) as exc:
        print(f"derive_apt_source: {exc} under {args.root}/etc/apt: give the base image a Debian "
              f"{args.base_suite} main source", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
