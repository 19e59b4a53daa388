"""Where the tools find the host's reference data: one definition of each place.

Three references are not part of any run archive but are read by the writer and the verifier:

========================  ======================  ==================================  =========================================
reference                 variable                in a repository checkout            in the images
========================  ======================  ==================================  =========================================
:data:`FROZEN_REFERENCE`  ``REV88_ORIGINAL_DIR``  ``evidence/rev88-original``         ``/opt/rev88/evidence/rev88-original``
:data:`RAW_MNIST`         ``REV88_RAW_DIR``       ``data/mnist``                      ``/opt/rev88/data/mnist``
:data:`GPU_LOCK_FILE`     ``REV88_GPU_LOCK_FILE``  ``docker/requirements-gpu.lock``   ``/opt/rev88/docker/requirements-gpu.lock``
========================  ======================  ==================================  =========================================

Search order (:meth:`HostRef.candidates`):

1. the variable, when set and not blank: then it is the ONLY place looked at, so an explicit
   choice is never silently replaced by another copy;
2. the repository checkout this package sits in (this file's folder's parent holds
   ``pyproject.toml``, ``bundle/`` and ``verify/``; true for the checkout and an editable install,
   false for ``pip install .`` / ``pip install --target DIR .``);
3. the images' copy under ``/opt/rev88`` (the Dockerfile copies all three there and also sets
   the variables).

None of them is package data: an installed package outside the images finds them through the
variables (the frozen reference and the MNIST files are 11 MB and belong to the repository).
When no place holds one, :meth:`HostRef.require` raises :class:`HostReferenceMissing`, one line
naming every place looked at and the variable to set.

This module imports neither ``bundle`` nor ``verify`` (nor torch): both import it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

IMAGE_ROOT = Path("/opt/rev88")
"""Where the images keep their copies (Dockerfile: ``COPY ... /opt/rev88/...``)."""

_PACKAGE_PARENT = Path(__file__).resolve().parent.parent


def checkout_root() -> Path | None:
    """The repository checkout this package sits in, or ``None`` for an installed copy.

    Returns:
        The folder holding ``pyproject.toml``, ``bundle/``, ``verify/`` and this ``protocol/``,
        when this file's package folder sits in it; ``None`` otherwise (a ``site-packages`` or a
        ``pip install --target`` folder has no ``pyproject.toml`` beside the packages).
    """
    root = _PACKAGE_PARENT
    if (root / "pyproject.toml").is_file() and (root / "bundle").is_dir() and (root / "verify").is_dir():
        return root
    return None


class HostReferenceMissing(LookupError):
    """No place of a :class:`HostRef`'s search order holds it (one line: the places and the variable).

    The writer turns it into a ``protocol.errors.BundleError`` (exit status 2), the verifier into
    ``verify.host.HostReferenceError``; both print the message as it is.
    """


@dataclass(frozen=True)
class HostRef:
    """One host reference: its variable and where a checkout and the images keep it.

    Attributes:
        label: what it is, for messages (``"the frozen reference"``).
        env: the environment variable that names it (``REV88_ORIGINAL_DIR``).
        repo_path: its path relative to the repository root (``evidence/rev88-original``).
        kind: ``"dir"`` or ``"file"``.
    """

    label: str
    env: str
    repo_path: str
    kind: str

    @property
    def image_path(self) -> Path:
        """The images' copy: ``/opt/rev88/<repo_path>``."""
        return IMAGE_ROOT / self.repo_path

    def named(self) -> Path | None:
        """The path the variable names, or ``None`` when it is unset or blank."""
        value = os.environ.get(self.env, "").strip()
        return Path(value) if value else None

    def candidates(self) -> list[tuple[Path, str]]:
        """Every place looked at, in order, each with how it came to be looked at.

        Returns:
            ``[(path, source)]``: only ``(named, "$VAR")`` when the variable is set; otherwise the
            checkout's copy (when this package sits in a checkout) and the image's copy.
        """
        named = self.named()
        if named is not None:
            return [(named, f"${self.env}")]
        out = []
        root = checkout_root()
        if root is not None:
            out.append((root / self.repo_path, "the repository checkout"))
        out.append((self.image_path, "the image's copy"))
        return out

    def _holds(self, path: Path, members: Iterable[str]) -> bool:
        if self.kind == "file":
            return path.is_file()
        return path.is_dir() and all((path / m).is_file() for m in members)

    def find(self, members: Iterable[str] = ()) -> tuple[Path, str] | None:
        """The first candidate that holds the reference, or ``None``.

        Args:
            members: for a folder, relative paths of files it must hold (``results/draw-00.json``);
                a folder without them does not count (an empty or partial copy is not the reference).

        Returns:
            ``(path, source)`` of the first candidate that is a file (``kind == "file"``), or a folder
            holding every member; ``None`` when none is.
        """
        members = tuple(members)
        return next(((p, s) for p, s in self.candidates() if self._holds(p, members)), None)

    def location(self, members: Iterable[str] = ()) -> Path:
        """Where the reference is, or where it was looked for first when nowhere holds it.

        For callers that check the contents themselves and name the path in their own message
        (the verifier's integrity checks of the frozen reference, the raw files' sha256 pins).

        Args:
            members: as :meth:`find`.
        """
        found = self.find(members)
        return found[0] if found is not None else self.candidates()[0][0]

    def looked_at(self) -> str:
        """Every place of :meth:`candidates` with its source, for messages (``/a (…); /b (…)``)."""
        return "; ".join(f"{p} ({s})" for p, s in self.candidates())

    def remedy(self) -> str:
        """What to do when no place holds the reference (names the variable)."""
        if self.named() is not None:
            return (f"point {self.env} at a copy of the repository's {self.repo_path}, or unset it to use the "
                    "repository's or the image's copy")
        return f"set {self.env} to a copy of the repository's {self.repo_path}"

    def missing_message(self, members: Iterable[str] = ()) -> str:
        """The one line :meth:`require` raises: every place looked at and the variable to set."""
        members = tuple(members)
        what = f", holding {', '.join(members)}" if members else ""
        return (f"{self.label} ({self.repo_path}{what}) is not on this host: looked at {self.looked_at()}; "
                f"{self.remedy()}")

    def require(self, members: Iterable[str] = ()) -> Path:
        """The reference's path; refuses when no candidate holds it.

        Args:
            members: as :meth:`find`.

        Returns:
            The path of the first candidate holding it.

        Raises:
            HostReferenceMissing: no candidate holds it (message: :meth:`missing_message`).
        """
        members = tuple(members)
        found = self.find(members)
        if found is None:
            raise HostReferenceMissing(self.missing_message(members))
        return found[0]


FROZEN_REFERENCE = HostRef("the frozen reference", "REV88_ORIGINAL_DIR",
                           "evidence/rev88-original", "dir")
"""The original study's archive that runs are compared with (spec 9)."""

RAW_MNIST = HostRef("the raw MNIST files", "REV88_RAW_DIR", "data/mnist", "dir")
"""The four official MNIST ``.gz`` files (sha256 pins: ``protocol.data.RAW_FILES``)."""

GPU_LOCK_FILE = HostRef("the GPU image's lock file", "REV88_GPU_LOCK_FILE", "docker/requirements-gpu.lock", "file")
"""The hash lock the GPU image is installed from; an image marker's ``lock_sha256`` is its sha256."""

HOST_REFERENCES = (FROZEN_REFERENCE, RAW_MNIST, GPU_LOCK_FILE)
"""Every host reference the tools read."""


def frozen_draw_member(draw_index: int) -> str:
    """``results/draw-XX.json``: the frozen reference's record of one qualification draw (0…10)."""
    return f"results/draw-{draw_index:02d}.json"


ORIGINAL_LAYOUT_MARKERS = ("protocol.json", "prediction-manifest.json")
"""Files only a folder laid out like the original study's archive holds at its top (run archives never do)."""


def reference_holding(path: str | os.PathLike[str]) -> Path | None:
    """The frozen reference folder, or a folder in the original archive's layout, that *path* is or lies in.

    A folder writer (``--out``) must never write there: the frozen reference is read-only, and a run
    folder inside it would make it no longer the original's layout for the verifier.

    Args:
        path: a folder that is about to be written (need not exist); resolved (symbolic links followed).

    Returns:
        The first folder from *path* upwards that is a place of :data:`FROZEN_REFERENCE`'s search order
        (existing or not) or holds every :data:`ORIGINAL_LAYOUT_MARKERS` file; ``None`` when none is.
    """
    target = Path(path).resolve()
    places = {p.resolve() for p, _ in FROZEN_REFERENCE.candidates()}
    for folder in (target, *target.parents):
        if folder in places or all((folder / m).is_file() for m in ORIGINAL_LAYOUT_MARKERS):
            return folder
    return None


FROZEN_ACCURACY = "accuracy.json"
"""The frozen reference's scored accuracy rows (qualify)."""

FROZEN_VALIDATION = "cache-audit/cuda-validation.json"
"""The frozen reference's validation record (validate's ``original_comparison``)."""
