"""``rev88 reproduce``: every phase in protocol order through one engine, then the verifier.

Order: validate, compare, qualify, energy, profile (a subset may be chosen; the order stays).
A phase whose folder is already complete is skipped (resume), unless ``force``. Before the
first phase one probe job (:func:`bundle.preflight.probe_engine`) runs through the engine:
it fails fast with one line, and leaves nothing in the run folder, when the engine cannot
start a job (no Docker daemon, missing image, no GPU runtime) or when what the selected
phases need is missing where the jobs run (a CUDA device, NVML, ncu and counter
permission); it also tells where the jobs run. Each completed phase that did not record
its own execution in ``environment.json.gz`` gets the probe's record. Finally the offline
verifier (``rev88 verify RUN_DIR``) runs on this host and its exit status is the verdict.

Engines: ``native`` = :class:`bundle.jobs.SubprocessEngine`; ``docker`` =
:class:`bundle.docker_engine.DockerEngine` (one container per job, the run folder mounted at
the same path). A native engine inside the GPU image (compose's ``gpu`` service sets
``REV88_IMAGE_REFERENCE``) is recorded as docker with that image.

Phase modules are imported lazily; this module never imports torch.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from bundle import archive
from bundle.errors import BundleError
from bundle.jobs import Engine, JobSpec, SubprocessEngine

PHASES = ("validate", "compare", "qualify", "energy", "profile")
QUALIFY_WORKSPACE = ":16:8"  # the cache audit's qualification ran under :16:8 (spec 8.2)


def parse_phases(text: str | Iterable[str] | None) -> list[str]:
    """The selected phases in protocol order.

    Args:
        text: comma-separated names (``"validate,compare"``), a list of names, or ``None`` (all).

    Raises:
        BundleError: an unknown, repeated or empty selection.
    """
    if text is None:
        return list(PHASES)
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text) if n.strip()]
    unknown = [n for n in names if n not in PHASES]
    if unknown or not names or len(set(names)) != len(names):
        raise BundleError(
            f"invalid --phases {','.join(names) or '(empty)'!r}: name each of {','.join(PHASES)} at most once"
        )
    return [p for p in PHASES if p in names]


def make_engine(kind: str, *, image: str | None = None, run_dir: Path | None = None,
                slurm_options: Any | None = None) -> Engine:
    """The engine for ``--engine`` *kind*.

    Args:
        kind: ``"native"``, ``"docker"`` or ``"slurm"``.
        image: the image for the docker engine (default ``$REV88_GPU_IMAGE`` or ``rev88/gpu:local``).
        run_dir: mounted into every container at the same path (docker only).
        slurm_options: a :class:`bundle.slurm_engine.SlurmOptions` (slurm only; default options).

    Raises:
        BundleError: unknown kind; the docker SDK or daemon is unavailable.
    """
    if kind == "native":
        engine = SubprocessEngine()
        inside = os.environ.get("REV88_IMAGE_REFERENCE")
        if inside:  # native jobs inside the GPU image: say so in the records
            engine.kind = "docker"
            engine.image_reference = inside
        return engine
    if kind == "docker":
        from bundle.docker_engine import DockerEngine, default_image  # noqa: PLC0415

        mounts = [run_dir] if run_dir is not None else []
        return DockerEngine(image or default_image(), mounts=mounts)
    if kind == "slurm":
        from bundle.slurm_engine import SlurmEngine  # noqa: PLC0415

        return SlurmEngine(slurm_options)
    raise BundleError(f"unknown --engine {kind!r}: use native, docker or slurm")


def probe(engine: Engine, *, run_dir: Path, phases: Sequence[str] = PHASES, device: str = "cuda",
          command: str = "rev88 reproduce") -> dict[str, Any]:
    """Check, where the jobs will run, what *phases* need on *device*; report the hardware and software.

    Args:
        engine: the jobs' engine.
        run_dir: the run folder (must exist; the probe writes nothing into it).
        phases: the phases about to run.
        device: ``"cuda"`` or ``"cpu"``.
        command: for messages.

    Returns:
        ``{"hardware": hostinfo.hardware_record(), "software": hostinfo.software_record(),
        "checks": [...]}`` as printed by the probe job.

    Raises:
        BundleError: a GPU-only phase with ``--device cpu``, the job could not start or did
            not report, or a precondition is missing (one line each).
    """
    from bundle import preflight  # noqa: PLC0415

    needs = preflight.needs_for(phases, device)
    return preflight.probe_engine(engine, needs, command=command, run_dir=run_dir, gpu=device == "cuda",
                                  cpu_path=all(p in preflight.CPU_PHASES for p in phases))


def _check(result: Any, phase: str) -> None:
    if not result.ok:
        raise BundleError(
            f"phase {phase} failed (exit {result.exit_code}: {result.last_error_line()}): "
            f"fix the cause and rerun; completed phases are kept"
        )


def run_phase(phase: str, run_dir: Path, *, engine: Engine, device: str, force: bool,
              on_line: Callable[[str], None] | None) -> None:
    """Run one phase through *engine* (phase functions of the other modules, imported lazily)."""
    if phase == "validate":
        from bundle.phases.validate import run_validate  # noqa: PLC0415

        run_validate(run_dir, engine=engine, force=force, device=device, on_line=on_line)
    elif phase == "compare":
        from bundle.phases.compare import run_compare  # noqa: PLC0415

        run_compare(run_dir, engine=engine, force=force, device=device, on_line=on_line)
    elif phase == "qualify":
        # Qualification trains in one process (the phase's in-process runner); as a job it runs
        # natively or in one container like every other job.
        argv = ("{python}", "-m", "bundle.cli", "qualify", "--device", device, "--out", str(run_dir))
        env = {"CUBLAS_WORKSPACE_CONFIG": QUALIFY_WORKSPACE, "REV88_ENGINE": str(getattr(engine, "kind", "native"))}
        if getattr(engine, "image_reference", None):
            env["REV88_IMAGE_REFERENCE"] = str(engine.image_reference)
        spec = JobSpec(name="qualify", argv=argv + (("--force",) if force else ()), env=env, workdir=run_dir,
                       gpu=device == "cuda", timeout_s=7200.0)
        _check(engine.run(spec, on_line=on_line), phase)
    elif phase == "energy":
        from bundle.phases.energy import run_energy  # noqa: PLC0415

        run_energy(run_dir, engine=engine, force=force, device=device, on_line=on_line)
    elif phase == "profile":
        from bundle.phases.profile import run_profile  # noqa: PLC0415

        run_profile(run_dir, engine=engine, force=force, on_line=on_line)
    else:
        raise BundleError(f"unknown phase {phase!r}: use one of {','.join(PHASES)}")


def record_missing_executions(run_dir: Path, phases: Sequence[str], engine: Engine,
                              probed: dict[str, Any]) -> None:
    """Record where each completed phase in *phases* ran, unless the phase recorded it itself."""
    from bundle import hostinfo  # noqa: PLC0415  (torch only inside its functions)

    run = archive.RunArchive(run_dir)
    path = run_dir / archive.ENVIRONMENT_NAME
    recorded = set()
    if path.exists():
        for entry in archive.read_json_gz(path).get("executions", []):
            recorded.update(entry.get("phases", []))
    # The marker as the probe job saw it (inside the container), not as this host would read it.
    execution = hostinfo.execution_record(str(getattr(engine, "kind", "native")),
                                          getattr(engine, "image_reference", None),
                                          probed["hardware"] or {}, probed["software"],
                                          marker=probed.get("image_marker"))
    for phase in phases:
        if run.is_complete(phase) and phase not in recorded:
            run.record_execution(phase, execution)


def run_verifier(run_dir: Path, *, on_line: Callable[[str], None] | None = None) -> tuple[int, str]:
    """Run ``rev88 verify RUN_DIR`` on this host (no torch, no GPU).

    Returns:
        (exit code, the verifier's summary line for RUN_DIR, else its last non-empty line).
    """
    proc = subprocess.Popen([sys.executable, "-m", "bundle.cli", "verify", str(run_dir)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, encoding="utf-8", errors="replace")
    last, summary = "", ""
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip():
            last = line.rstrip("\n")
            if not summary and line.startswith(f"{run_dir} ("):
                summary = last
        if on_line is not None:
            on_line(line.rstrip("\n"))
    return proc.wait(), summary or last


def run_reproduce(run_dir: str | os.PathLike[str], *, engine: Engine, phases: Sequence[str] = PHASES,
                  device: str = "cuda", force: bool = False,
                  on_phase: Callable[[str, str], None] | None = None,
                  on_line: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run *phases* (protocol order) into *run_dir* through *engine*, then verify the archive.

    Args:
        run_dir: the run archive folder (created).
        engine: a :class:`bundle.jobs.Engine` (see :func:`make_engine`).
        phases: names from :data:`PHASES`.
        device: ``"cuda"`` (protocol) or ``"cpu"`` (diagnostic; qualify/validate/compare only).
        force: rerun phases that are already complete.
        on_phase: called ``(phase, "start" | "skip" | "done")``.
        on_line: receives each output line of each job and of the verifier.

    Returns:
        ``{"run_dir", "engine", "image_reference", "probe", "phases": [{"phase", "status",
        "duration_s"}], "verify_exit_code", "verdict"}``.

    Raises:
        BundleError: the engine cannot run jobs or a precondition is missing (nothing is
            written; a run folder created for the probe is removed again), or a phase fails
            (completed phases are kept).
    """
    from bundle import preflight  # noqa: PLC0415

    run_dir = Path(run_dir).resolve()
    phases = parse_phases(phases)
    preflight.needs_for(phases, device)  # a GPU-only phase with --device cpu: refused before the folder exists
    run = archive.RunArchive(run_dir)
    to_run = [p for p in phases if force or not run.is_complete(p)]
    with preflight.run_folder(run_dir):
        probed = probe(engine, run_dir=run_dir, phases=to_run, device=device)
    done: list[dict[str, Any]] = []
    for phase in phases:
        if run.is_complete(phase) and not force:
            done.append({"phase": phase, "status": "skipped (already complete)", "duration_s": 0.0})
            if on_phase:
                on_phase(phase, "skip")
            continue
        if on_phase:
            on_phase(phase, "start")
        started = time.perf_counter()
        run_phase(phase, run_dir, engine=engine, device=device, force=force, on_line=on_line)
        done.append({"phase": phase, "status": "ran", "duration_s": round(time.perf_counter() - started, 3)})
        record_missing_executions(run_dir, [phase], engine, probed)
        if on_phase:
            on_phase(phase, "done")
    code, verdict = run_verifier(run_dir, on_line=on_line)
    return {
        "run_dir": str(run_dir),
        "engine": str(getattr(engine, "kind", "native")),
        "image_reference": getattr(engine, "image_reference", None),
        "probe": probed,
        "phases": done,
        "verify_exit_code": code,
        "verdict": verdict,
    }
