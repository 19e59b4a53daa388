"""Preconditions of the phases, checked before any work: one line and nothing written on failure.

Every phase command and ``rev88 reproduce`` call :func:`require` before they create a
staging folder, write an input or start a worker. A phase needs, on ``--device cuda``:

========  ==================================================================
phase     needs
========  ==================================================================
validate  ``cuda`` (a CUDA device visible to torch)
compare   ``cuda``
qualify   ``cuda``
energy    ``cuda``, ``nvml`` (NVML initialises and reads the energy counter)
profile   ``cuda``, ``ncu`` (Nsight Compute found), ``counters`` (native: GPU
          performance counters not restricted to admin users)
========  ==================================================================

With ``--device cpu`` validate, compare and qualify need nothing (CPU diagnostics); energy
and profile measure the GPU and are refused. The docker engine is checked by running one
probe container (``python -m bundle.preflight --probe``): it answers only when the daemon is
reachable, the image exists and, for GPU work, Docker has a GPU runtime; inside the
container the probe runs the same checks and reports the hardware and software the jobs
will see. The native engine runs the checks in this process (``torch.cuda.is_available()``
does not initialise CUDA).

Every device: validate, compare and qualify compare their results with the frozen reference
(``protocol.hostrefs.FROZEN_REFERENCE``); :func:`require_frozen_reference` refuses in one line,
naming every place looked at and ``REV88_ORIGINAL_DIR``, before anything is written when it does
not hold the files the phases read (:func:`frozen_members`).

torch, pynvml and the docker SDK are imported inside functions only.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from protocol import hostrefs
from protocol.data import DRAW_COUNT
from protocol.errors import BundleError

PROBE_MARK = "REV88-PROBE "
"""Prefix of the probe job's one JSON line on stdout."""

NEEDS_ORDER = ("cuda", "nvml", "ncu", "counters")
GPU_PHASES_NEEDS: Mapping[str, tuple[str, ...]] = {
    "validate": ("cuda",),
    "compare": ("cuda",),
    "qualify": ("cuda",),
    "energy": ("cuda", "nvml"),
    "profile": ("cuda", "ncu", "counters"),
}
CPU_PHASES = ("validate", "compare", "qualify")
"""Phases that have a CPU diagnostic path (``--device cpu``)."""

PROFILING_PARAMS = Path("/proc/driver/nvidia/params")
ADMIN_ONLY_KEY = "RmProfilingAdminOnly"
GPU_HOSTS_DOC = "docs/gpu-hosts.md"


def needs_for(phases: Iterable[str], device: str) -> tuple[str, ...]:
    """What *phases* need on *device*, in :data:`NEEDS_ORDER`.

    Args:
        phases: phase names (``validate``, ``compare``, ``qualify``, ``energy``, ``profile``).
        device: ``"cuda"`` (the protocol) or ``"cpu"`` (diagnostic).

    Returns:
        e.g. ``("cuda", "nvml")``; ``()`` for CPU diagnostics.

    Raises:
        BundleError: an unknown device, or a GPU-only phase (energy, profile) with ``--device cpu``.
    """
    phases = list(phases)
    if device not in ("cuda", "cpu"):
        raise BundleError(f"--device {device!r} is not supported: use cuda or cpu")
    if device == "cpu":
        gpu_only = [p for p in phases if p not in CPU_PHASES]
        if gpu_only:
            what = (f"phase {gpu_only[0]} measures the GPU and has" if len(gpu_only) == 1
                    else f"phases {', '.join(gpu_only)} measure the GPU and have")
            raise BundleError(f"{what} no --device cpu path: select only CPU diagnostics "
                              f"(--phases {','.join(p for p in phases if p in CPU_PHASES) or 'qualify'}) "
                              "or use --device cuda on a GPU host")
        return ()
    wanted = {need for p in phases for need in GPU_PHASES_NEEDS.get(p, ())}
    return tuple(n for n in NEEDS_ORDER if n in wanted)


def frozen_members(phases: Iterable[str], *, compare_draw: int | None = 0,
                   qualify_draws: Iterable[int] = range(DRAW_COUNT)) -> tuple[str, ...]:
    """The frozen reference's files that *phases* read (relative to the reference folder).

    Args:
        phases: phase names; energy and profile read none.
        compare_draw: the draw compare runs (``--draw``), or ``None`` for custom inputs (no
            reference applies: the comparison records ``draw_index: null``).
        qualify_draws: the draws qualify trains.

    Returns:
        e.g. ``("cache-audit/cuda-validation.json", "results/draw-00.json", "accuracy.json")``;
        ``()`` when none is read.
    """
    members: list[str] = []
    phases = list(phases)
    if "validate" in phases:
        members.append(hostrefs.FROZEN_VALIDATION)
    if "compare" in phases and compare_draw is not None:
        members.append(hostrefs.frozen_draw_member(compare_draw))
    if "qualify" in phases:
        members += [hostrefs.frozen_draw_member(i) for i in qualify_draws] + [hostrefs.FROZEN_ACCURACY]
    return tuple(dict.fromkeys(members))


def require_frozen_reference(members: Iterable[str]) -> Path | None:
    """The frozen reference folder holding *members*, checked before a phase writes anything.

    Args:
        members: from :func:`frozen_members`; empty means no phase reads the reference.

    Returns:
        The folder (``protocol.hostrefs.FROZEN_REFERENCE.require``), or ``None`` for no members.

    Raises:
        BundleError: no place of the search order holds every member: one line naming each place
            looked at and ``REV88_ORIGINAL_DIR`` (exit status 2).
    """
    members = tuple(members)
    if not members:
        return None
    try:
        return hostrefs.FROZEN_REFERENCE.require(members)
    except hostrefs.HostReferenceMissing as exc:
        raise BundleError(str(exc)) from None


# --- the checks themselves (run in this process or inside the probe job) ------------------

def check_cuda() -> dict[str, Any]:
    """Whether torch sees a CUDA device (does not initialise CUDA).

    Returns:
        ``{"need": "cuda", "ok": bool, "detail": str}``; ``detail`` names torch's version and
        whether it is a CPU-only build.
    """
    try:
        import torch  # noqa: PLC0415
    except ImportError as exc:
        return {"need": "cuda", "ok": False, "detail": f"torch is not installed ({exc})"}
    if torch.version.cuda is None:
        return {"need": "cuda", "ok": False, "detail": f"torch {torch.__version__} is a CPU-only build"}
    if not torch.cuda.is_available():
        return {"need": "cuda", "ok": False,
                "detail": f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA device"}
    return {"need": "cuda", "ok": True, "detail": f"{torch.cuda.device_count()} CUDA device(s)"}


def check_nvml() -> dict[str, Any]:
    """Whether NVML initialises and device 0 answers the total-energy query (field the energy phase reads).

    Returns:
        ``{"need": "nvml", "ok": bool, "detail": str}``.
    """
    try:
        import pynvml  # noqa: PLC0415
    except ImportError:
        return {"need": "nvml", "ok": False, "detail": "nvidia-ml-py (module pynvml) is not installed"}
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return {"need": "nvml", "ok": False, "detail": f"nvmlInit failed: {exc}"}
    try:
        count = pynvml.nvmlDeviceGetCount()
        if count < 1:
            return {"need": "nvml", "ok": False, "detail": "NVML lists no GPU"}
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        return {"need": "nvml", "ok": True, "detail": f"NVML lists {count} GPU(s) with an energy counter"}
    except Exception as exc:
        return {"need": "nvml", "ok": False, "detail": f"NVML energy counter query failed: {exc}"}
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def check_ncu(ncu: str | None = None) -> dict[str, Any]:
    """Whether an ``ncu`` executable is found (``--ncu``, ``$REV88_NCU``, PATH, the usual install folders).

    Returns:
        ``{"need": "ncu", "ok": bool, "detail": str, "path": str | None}``.
    """
    from bundle.profile import find_ncu  # noqa: PLC0415  (torch-free)

    try:
        path = find_ncu(ncu)
    except BundleError as exc:
        return {"need": "ncu", "ok": False, "detail": str(exc).split(": install")[0], "path": None}
    return {"need": "ncu", "ok": True, "detail": path, "path": path}


def check_counters(params: Path = PROFILING_PARAMS, euid: int | None = None) -> dict[str, Any]:
    """Whether GPU performance counters are open to this process (native ncu jobs).

    Reads ``RmProfilingAdminOnly`` from the NVIDIA driver's parameters: ``1`` restricts the
    counters to processes with ``CAP_SYS_ADMIN`` (root). A file that cannot be read is not a
    refusal (ncu itself reports ``ERR_NVGPUCTRPERM`` then).

    Args:
        params: the driver's parameter file.
        euid: effective user id (default: this process's).

    Returns:
        ``{"need": "counters", "ok": bool, "detail": str}``.
    """
    euid = os.geteuid() if euid is None and hasattr(os, "geteuid") else (euid or 0)
    try:
        text = params.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {"need": "counters", "ok": True, "detail": f"{params} not readable; ncu will tell"}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == ADMIN_ONLY_KEY:
            restricted = value.strip() == "1"
            if restricted and euid != 0:
                return {"need": "counters", "ok": False,
                        "detail": f"{ADMIN_ONLY_KEY}: 1 in {params} and this process runs as uid {euid}"}
            return {"need": "counters", "ok": True, "detail": f"{ADMIN_ONLY_KEY}: {value.strip()}, uid {euid}"}
    return {"need": "counters", "ok": True, "detail": f"no {ADMIN_ONLY_KEY} in {params}"}


def run_checks(needs: Sequence[str], *, ncu: str | None = None) -> list[dict[str, Any]]:
    """Run the checks named in *needs* in this process, in order.

    Args:
        needs: from :func:`needs_for`.
        ncu: the ``--ncu`` path, if given.

    Returns:
        One result per need (see the ``check_*`` functions).
    """
    out = []
    for need in needs:
        if need == "cuda":
            out.append(check_cuda())
        elif need == "nvml":
            out.append(check_nvml())
        elif need == "ncu":
            out.append(check_ncu(ncu))
        elif need == "counters":
            out.append(check_counters())
        else:
            raise BundleError(f"unknown precondition {need!r}: use one of {', '.join(NEEDS_ORDER)}")
    return out


# --- turning a failed check into one line ----------------------------------------------

def _remedy(need: str, *, command: str, engine: str, cpu_path: bool) -> str:
    if need == "cuda":
        alt = " or pass --device cpu for a CPU diagnostic" if cpu_path else ""
        inside = ("check that the image's torch has CUDA and that Docker passes the GPU (--gpus)"
                  if engine == "docker" else "run it on a host with an NVIDIA GPU and driver")
        return f"{inside} ({GPU_HOSTS_DOC}){alt}"
    if need == "nvml":
        return (f"install the NVIDIA driver (libnvidia-ml) and nvidia-ml-py (.venv/bin/pip install -e '.[gpu]'), see {GPU_HOSTS_DOC}; "
                "the energy phase reads NVML's energy counter")
    if need == "ncu":
        return "install Nsight Compute or pass --ncu PATH (or set REV88_NCU)"
    if need == "counters":
        return (f"set NVreg_RestrictProfilingToAdminUsers=0 on the host ({GPU_HOSTS_DOC}), run {command} as root, "
                "or use --engine docker (ncu jobs get SYS_ADMIN there)")
    return "see docs/gpu-hosts.md"


WHAT = {"cuda": "no CUDA device", "nvml": "NVML is not usable", "ncu": "Nsight Compute (ncu) not found",
        "counters": "GPU performance counters are restricted to admin users"}


def raise_first_failure(checks: Sequence[Mapping[str, Any]], *, command: str, where: str, engine: str = "native",
                        cpu_path: bool = False) -> None:
    """Raise one :class:`BundleError` line for the first failed check, if any.

    Args:
        checks: results of :func:`run_checks` (here or in the probe job).
        command: the command, for the message (``"rev88 compare"``).
        where: where the checks ran (``"on this host"``, ``"in docker image rev88/gpu:local"``).
        engine: ``"native"`` or ``"docker"`` (changes the remedy).
        cpu_path: whether ``--device cpu`` is an alternative for this command.

    Raises:
        BundleError: ``"<what> <where> (<detail>; <command>): <what to do>; nothing was written"``.
    """
    for check in checks:
        if not check.get("ok"):
            need = str(check.get("need"))
            raise BundleError(f"{WHAT.get(need, need)} {where} ({check.get('detail')}; {command}): "
                              f"{_remedy(need, command=command, engine=engine, cpu_path=cpu_path)}; "
                              "nothing was written")


# --- the probe job ------------------------------------------------------------------------

def probe_argv(needs: Sequence[str], ncu: str | None = None) -> tuple[str, ...]:
    """The probe job's command line (``{python}`` is the engine's interpreter)."""
    argv: tuple[str, ...] = ("{python}", "-m", "bundle.preflight", "--probe", "--needs", ",".join(needs) or "-")
    return argv + (("--ncu", ncu) if ncu else ())


def probe_main(argv: Sequence[str] | None = None) -> int:
    """``python -m bundle.preflight --probe --needs cuda,nvml``: print the probe line, exit 0.

    The line is :data:`PROBE_MARK` + JSON ``{"hardware", "software", "checks", "image_marker",
    "image_marker_reason"}``: the records of :mod:`bundle.hostinfo` (device 0 only when the CUDA
    check passed, so a failed probe never initialises CUDA), the results of :func:`run_checks`,
    and the image marker as the job sees it (:func:`bundle.hostinfo.read_image_marker`).
    """
    import argparse  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog="python -m bundle.preflight")
    parser.add_argument("--probe", action="store_true", required=True)
    parser.add_argument("--needs", default="-")
    parser.add_argument("--ncu", default=None)
    args = parser.parse_args(argv)
    needs = [n for n in args.needs.split(",") if n and n != "-"]
    try:
        checks = run_checks(needs, ncu=args.ncu)
    except BundleError as exc:
        print(f"rev88 probe: error: {exc}", file=sys.stderr)
        return exc.exit_code
    from bundle import hostinfo  # noqa: PLC0415

    marker, marker_reason = hostinfo.read_image_marker()
    record = {"hardware": hostinfo.hardware_record() if all(c["ok"] for c in checks) else None,
              "software": hostinfo.software_record(), "checks": checks,
              "image_marker": marker, "image_marker_reason": marker_reason}
    print(PROBE_MARK + json.dumps(record), flush=True)
    return 0


def parse_probe(stdout: str) -> dict[str, Any] | None:
    """The probe record from a probe job's stdout, or None when it printed none."""
    for line in stdout.splitlines():
        if line.startswith(PROBE_MARK):
            return json.loads(line[len(PROBE_MARK):])
    return None


def engine_where(engine: Any) -> str:
    """``"on this host"`` or ``"in docker image <ref>"`` for messages."""
    if getattr(engine, "kind", "native") == "docker" and getattr(engine, "image_reference", None):
        return f"in docker image {engine.image_reference}"
    return "on this host"


def refuse_reference_out(run_dir: str | os.PathLike[str], *, command: str) -> None:
    """Refuse a run folder (``--out``) that is the frozen reference, or lies in it or in any folder laid
    out like the original archive (:func:`protocol.hostrefs.reference_holding`), before anything is written.

    Raises:
        BundleError: one line naming the folder and what to do (exit status 2).
    """
    held = hostrefs.reference_holding(run_dir)
    if held is not None:
        what = ("the frozen reference" if held in {p.resolve() for p, _ in hostrefs.FROZEN_REFERENCE.candidates()}
                else "a folder in the original archive's layout")
        inside = "is" if held == Path(run_dir).resolve() else f"lies inside {held}, which is"
        raise BundleError(f"--out {run_dir} {inside} {what} ({command} never writes there): give --out a "
                          "run folder of its own, e.g. evidence/<run-id>; nothing was written")


@contextlib.contextmanager
def run_folder(run_dir: Path, *, command: str = "rev88") -> Iterator[Path]:
    """Yield *run_dir* (created when missing, with its missing parents) and remove again every
    folder created here that is still empty when the block fails, so a refused command leaves no
    folder behind (:func:`bundle.archive.remove_empty_folders`).

    Raises:
        BundleError: *run_dir* is not a folder, cannot be created, or is (in) the frozen reference
            (:func:`refuse_reference_out`).
    """
    from bundle.archive import make_folders, remove_empty_folders  # noqa: PLC0415  (imports numpy)

    run_dir = Path(run_dir)
    refuse_reference_out(run_dir, command=command)
    if run_dir.exists() and not run_dir.is_dir():
        raise BundleError(f"--out {run_dir} is not a folder: give a new or existing run folder")
    try:
        created = make_folders(run_dir)
    except OSError as exc:
        raise BundleError(f"cannot create the run folder {run_dir} ({exc.strerror}): "
                          "give --out a writable folder") from None
    try:
        yield run_dir
    except BaseException:
        remove_empty_folders(created)
        raise


def probe_engine(engine: Any, needs: Sequence[str], *, command: str, run_dir: Path, gpu: bool,
                 ncu: str | None = None, cpu_path: bool = False) -> dict[str, Any]:
    """Run the probe job through *engine* and raise one line for its first failed check.

    Args:
        engine: a :class:`bundle.jobs.Engine` (native or docker).
        needs: from :func:`needs_for` (``counters`` is dropped for the docker engine: ncu
            jobs run there with ``SYS_ADMIN``).
        command: for messages.
        run_dir: the job's working folder (must exist; the probe writes nothing).
        gpu: request the GPU for the probe container (``--device cuda``).
        ncu: the ``--ncu`` path, if given.
        cpu_path: whether ``--device cpu`` is an alternative (for the message).

    Returns:
        The probe record ``{"hardware", "software", "checks"}``.

    Raises:
        BundleError: the engine cannot run the job (no daemon, no image, no GPU runtime: the
            engine's own one line), the probe printed nothing, or a check failed.
    """
    from bundle.jobs import JobSpec  # noqa: PLC0415

    docker = getattr(engine, "kind", "native") == "docker"
    wanted = [n for n in needs if not (docker and n == "counters")]
    spec = JobSpec(name="preflight/probe", argv=probe_argv(wanted, ncu), workdir=Path(run_dir), gpu=gpu,
                   timeout_s=300.0)
    result = engine.run(spec)
    where = engine_where(engine)
    record = parse_probe(result.stdout)
    if record is None:
        raise BundleError(
            f"the probe job printed no report {where} (exit {result.exit_code}: {result.last_error_line()}; "
            f"{command}): check that its Python has the bundle and torch installed (for --engine docker "
            "rebuild the GPU image with `make image`); nothing was written")
    raise_first_failure(record["checks"], command=command, where=where, engine="docker" if docker else "native",
                        cpu_path=cpu_path)
    return record


def require(phases: Sequence[str], *, device: str, command: str, engine: Any | None = None,
            run_dir: Path | None = None, ncu: str | None = None) -> dict[str, Any] | None:
    """Check what *phases* need on *device* before any work; raise one line if something is missing.

    With the native engine (or ``engine=None``) the checks run in this process; with the
    docker engine one probe container runs them (*run_dir* must then exist: see
    :func:`run_folder`).

    Args:
        phases: the phases about to run.
        device: ``"cuda"`` or ``"cpu"``.
        command: for messages (``"rev88 energy"``).
        engine: the jobs' engine, or None for work done in this process.
        run_dir: the run folder (docker probe's working folder).
        ncu: the ``--ncu`` path, if given.

    Returns:
        The docker probe's record, or None for native checks.

    Raises:
        BundleError: see :func:`needs_for`, :func:`raise_first_failure`, :func:`probe_engine`.
    """
    needs = needs_for(phases, device)
    cpu_path = all(p in CPU_PHASES for p in phases)
    if engine is not None and getattr(engine, "kind", "native") == "docker":
        if run_dir is None:
            raise BundleError("the docker engine's probe needs a run folder: this is a bug in the command")
        return probe_engine(engine, needs, command=command, run_dir=run_dir, gpu=device == "cuda", ncu=ncu,
                            cpu_path=cpu_path)
    where = engine_where(engine) if engine is not None else "on this host"
    raise_first_failure(run_checks(needs, ncu=ncu), command=command, where=where, cpu_path=cpu_path)
    return None


if __name__ == "__main__":
    sys.exit(probe_main())
