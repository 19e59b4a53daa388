"""GPU boards of one host: which ones a run uses (``--gpus``) and how jobs are placed on them.

A *board* is one physical GPU, named by its NVML UUID (``GPU-…``) and PCI bus id. ``--gpus``
takes ``all``, a count ``N`` (the first N boards in NVML order) or a comma-separated list of
UUIDs or NVML indices. Jobs are placed one board each: natively the child gets
``CUDA_VISIBLE_DEVICES=<UUID>`` (so inside the job the board is CUDA device 0), in Docker the
container gets exactly that board (``device_ids``). The fixture records what it was given
(:data:`GIVEN_ENV`) next to the board it found, and refuses a mismatch.

Board discovery uses NVML (nvidia-ml-py) on the host that starts the jobs; with
``--device cpu`` no board is needed and an explicit list is taken as given (CPU tests of the
placement use such fake ids). No torch here.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from protocol.errors import BundleError

VISIBLE_ENV = "CUDA_VISIBLE_DEVICES"
#: Set by the phases on every job placed on a board: the UUID the job was given.
GIVEN_ENV = "REV88_BOARD_UUID"
#: A lock file that serialises the GPU part of the fixture processes of one board (see bundle.fixture).
LOCK_ENV = "REV88_GPU_LOCK"
#: The job's position in its lock's queue (bundle.fixture.acquire_gpu_lock keeps the design's order).
TICKET_ENV = "REV88_GPU_TICKET"
#: How much of a fixture process the lock covers: ``process`` (default: exclusive from before CUDA
#: initialisation to exit) or ``range`` (profile mode: shared while preparing, exclusive from the
#: warm-ups before the profiled range to its end; see bundle.fixture.acquire_gpu_lock).
LOCK_SCOPE_ENV = "REV88_GPU_LOCK_SCOPE"
LOCK_SCOPES = ("process", "range")
_UUID_RE = re.compile(r"(GPU|MIG)-[0-9A-Za-z-]+")


@dataclass(frozen=True)
class Board:
    """One GPU board.

    Attributes:
        index: NVML index on this host (``None`` for a board taken as given).
        uuid: NVML UUID, ``"GPU-…"`` (what jobs are given).
        pci_bus_id: NVML PCI bus id (``"00000000:19:00.0"``), ``None`` when not discovered.
        name: NVML product name, ``None`` when not discovered.
    """

    index: int | None
    uuid: str
    pci_bus_id: str | None = None
    name: str | None = None

    def record(self) -> dict[str, Any]:
        """The board as a JSON record (the four attributes)."""
        return asdict(self)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def discover() -> list[Board]:
    """The boards NVML sees on this host, in NVML index order.

    Raises:
        BundleError: nvidia-ml-py missing, or NVML cannot be initialised (no driver / no GPU).
    """
    try:
        import pynvml  # noqa: PLC0415
    except ImportError:
        raise BundleError("--gpus needs nvidia-ml-py to list the boards: pip install nvidia-ml-py") from None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        raise BundleError(f"NVML cannot list the GPU boards ({exc}): check the driver (nvidia-smi)") from None
    try:
        boards = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            uuid = pynvml.nvmlDeviceGetUUID(handle)
            bus = pynvml.nvmlDeviceGetPciInfo(handle).busId
            name = pynvml.nvmlDeviceGetName(handle)
            boards.append(Board(index, _text(uuid), _text(bus), _text(name)))
        return boards
    finally:
        pynvml.nvmlShutdown()


def select(spec: str, available: Sequence[Board] | None) -> list[Board]:
    """The boards ``--gpus SPEC`` names, in the order given.

    Args:
        spec: ``"all"``, a positive count ``"N"``, or ``"ID,ID"`` (UUIDs or NVML indices).
        available: the host's boards (:func:`discover`); ``None`` when none can be discovered
            (``--device cpu``): then only explicit UUIDs are accepted, taken as given.

    Returns:
        At least one :class:`Board`, no board twice.

    Raises:
        BundleError: empty or malformed spec, a count above what is there, an unknown or
            repeated id, or ``all``/a count/an index without discoverable boards.
    """
    text = (spec or "").strip()
    if not text:
        raise BundleError("--gpus is empty: use all, a count (2) or board ids (GPU-…,GPU-… or 0,1)")
    if text == "all" or re.fullmatch(r"[0-9]+", text):
        if available is None:
            raise BundleError(f"--gpus {text} needs the host's boards, but none can be listed here: "
                              "name the boards by UUID, or run on a GPU host")
        if not available:
            raise BundleError("NVML lists no GPU board on this host: check nvidia-smi")
        if text == "all":
            return list(available)
        count = int(text)
        if not 1 <= count <= len(available):
            raise BundleError(f"--gpus {count}: this host has {len(available)} board(s); ask for 1-{len(available)}")
        return list(available[:count])
    chosen: list[Board] = []
    for part in (p.strip() for p in text.split(",")):
        if re.fullmatch(r"[0-9]+", part):
            if available is None:
                raise BundleError(f"--gpus {text!r}: index {part} needs the host's boards; name boards by UUID here")
            match = [b for b in available if b.index == int(part)]
        elif _UUID_RE.fullmatch(part):
            match = ([b for b in available if b.uuid == part] if available is not None
                     else [Board(None, part)])
        else:
            raise BundleError(f"--gpus {text!r}: {part!r} is neither an NVML index nor a board UUID (GPU-…)")
        if not match:
            raise BundleError(f"--gpus {text!r}: no board {part} on this host (nvidia-smi -L lists them)")
        if match[0] in chosen:
            raise BundleError(f"--gpus {text!r} names board {part} twice: name each board once")
        chosen.append(match[0])
    return chosen


def round_robin(boards: Sequence[Board]) -> Iterator[Board]:
    """Boards in turn, forever (job i goes to board i mod B)."""
    if not boards:
        raise BundleError("no boards to place jobs on: pass --gpus")
    return itertools.cycle(boards)


def placement_env(board: Board | None, lock_path: str | None = None, ticket: int | None = None,
                  lock_scope: str = "process") -> dict[str, str]:
    """The environment that places a job on *board* (empty for ``None``).

    ``CUDA_VISIBLE_DEVICES`` and :data:`GIVEN_ENV` carry the UUID; :data:`LOCK_ENV` the lock file
    when the phase serialises the GPU part of its fixture processes, :data:`TICKET_ENV` the job's
    position in that lock's queue, :data:`LOCK_SCOPE_ENV` what the lock covers (only when it is
    not the default ``process``; a ``range`` lock takes no ticket).

    Raises:
        BundleError: an unknown *lock_scope*, or a ticket with a ``range`` lock.
    """
    if lock_scope not in LOCK_SCOPES or (lock_scope == "range" and ticket is not None):
        raise BundleError(f"GPU lock scope {lock_scope!r} with ticket {ticket!r}: use 'process' (any ticket) or "
                          "'range' (no ticket)")
    env: dict[str, str] = {}
    if board is not None:
        env[VISIBLE_ENV] = board.uuid
        env[GIVEN_ENV] = board.uuid
    if lock_path is not None:
        env[LOCK_ENV] = str(lock_path)
        if ticket is not None:
            env[TICKET_ENV] = str(int(ticket))
        if lock_scope != "process":
            env[LOCK_SCOPE_ENV] = lock_scope
    return env


def update_turn(turn_path: str | Path, value: int, *, only_if_below: bool) -> int:
    """Read-modify-write a GPU lock's turn file (``<lock>.turn``) under its guard (``<turn>.guard``, flock).

    The turn file holds the ticket whose job may take the lock next, or ``-1`` once a job failed.
    Writes *value* unless the turn is ``-1`` (a failure is never overwritten) or, with
    *only_if_below*, the turn is already at least *value*. The phase's host (advancing past a job
    that ended, or writing ``-1``) and each fixture process (advancing past itself) both go through
    here, so neither can overwrite the other's write. Returns the turn read before (0 for a missing
    or unreadable file).

    Raises:
        OSError: the guard or turn file cannot be used.
    """
    import fcntl  # noqa: PLC0415  (POSIX; the phases run on Linux)

    from bundle import archive  # noqa: PLC0415

    turn_path = Path(turn_path)
    fd = os.open(f"{turn_path}.guard", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        text = turn_path.read_text().strip() if turn_path.is_file() else ""
        current = int(text) if re.fullmatch(r"-?[0-9]+", text) else 0
        if current != -1 and not (only_if_below and current >= value):
            archive.atomic_write_bytes(turn_path, f"{value}\n".encode())
        return current
    finally:
        os.close(fd)


def parse_board_list(text: str | None) -> list[Board]:
    """The inverse of ``",".join(b.uuid for b in boards)`` (the nested qualify job's ``--boards``).

    Raises:
        BundleError: an empty part, a part that is not a board UUID, or a board named twice.
    """
    if not text:
        return []
    parts = text.split(",")
    bad = [p for p in parts if not _UUID_RE.fullmatch(p)]
    if bad or len(set(parts)) != len(parts):
        raise BundleError(f"--boards {text!r}: give distinct board UUIDs (GPU-…), comma-separated "
                          f"({'not a UUID: ' + repr(bad[0]) if bad else 'a board is named twice'})")
    return [Board(None, part) for part in parts]
