"""``rev88 reproduce``: every phase in protocol order through one engine, then the verifier.

Order: validate, compare, qualify, energy, profile (a subset may be chosen; the order stays).
A phase whose folder is already complete is skipped (resume), unless ``force``. Before the
first phase one probe job runs through the engine: it fails fast with one line when the
engine cannot start a job (no GPU runtime, missing image) and tells where the jobs run. Each
completed phase that did not record its own execution in ``environment.json.gz`` gets the
probe's record. Finally the offline verifier (``rev88 verify RUN_DIR``) runs on this host and
its exit status is the verdict.

Engines: ``native`` = :class:`bundle.jobs.SubprocessEngine`; ``docker`` =
:class:`bundle.docker_engine.DockerEngine` (one container per job, the run folder mounted at
the same path). A native engine inside the GPU image (compose's ``gpu`` service sets
``REV88_IMAGE_REFERENCE``) is recorded as docker with that image.

Phase modules are imported lazily; this module never imports torch.
"""

from __future__ import annotations

import json
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
PROBE_MARK = "REV88-PROBE "
PROBE_CODE = (
    "import json; from bundle import hostinfo; "
    "record = {'hardware': hostinfo.hardware_record(), 'software': hostinfo.software_record()}; "
    f"print({PROBE_MARK!r} + json.dumps(record))"
)


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


def make_engine(kind: str, *, image: str | None = None, run_dir: Path | None = None) -> Engine:
    """The engine for ``--engine`` *kind*.

    Args:
        kind: ``"native"`` or ``"docker"``.
        image: the image for the docker engine (default ``$REV88_GPU_IMAGE`` or ``rev88/gpu:local``).
        run_dir: mounted into every container at the same path (docker only).

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
    raise BundleError(f"unknown --engine {kind!r}: use native or docker")


def probe(engine: Engine, *, run_dir: Path, gpu: bool) -> dict[str, Any]:
    """Run one job that reports the hardware and software the phases' jobs will see.

    Returns:
        ``{"hardware": hostinfo.hardware_record(), "software": hostinfo.software_record()}``
        as printed by the job.

    Raises:
        BundleError: the job could not start or did not report.
    """
    spec = JobSpec(name="reproduce/probe", argv=("{python}", "-c", PROBE_CODE), workdir=run_dir, gpu=gpu,
                   timeout_s=300.0)
    result = engine.run(spec)
    for line in result.stdout.splitlines():
        if line.startswith(PROBE_MARK):
            return json.loads(line[len(PROBE_MARK):])
    raise BundleError(
        f"the probe job failed (exit {result.exit_code}: {result.last_error_line()}) in {run_dir}: "
        "check that the engine's Python has the bundle and torch installed "
        "(the docker engine needs the GPU image: `make image`)"
    )


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
    execution = hostinfo.execution_record(str(getattr(engine, "kind", "native")),
                                          getattr(engine, "image_reference", None),
                                          probed["hardware"], probed["software"])
    for phase in phases:
        if run.is_complete(phase) and phase not in recorded:
            run.record_execution(phase, execution)


def run_verifier(run_dir: Path, *, on_line: Callable[[str], None] | None = None) -> tuple[int, str]:
    """Run ``rev88 verify RUN_DIR`` on this host (no torch, no GPU). Returns (exit code, last line)."""
    proc = subprocess.Popen([sys.executable, "-m", "bundle.cli", "verify", str(run_dir)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, encoding="utf-8", errors="replace")
    last = ""
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip():
            last = line.rstrip("\n")
        if on_line is not None:
            on_line(line.rstrip("\n"))
    return proc.wait(), last


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
        BundleError: the engine cannot run jobs, or a phase fails (completed phases are kept).
    """
    run_dir = Path(run_dir).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    phases = parse_phases(phases)
    probed = probe(engine, run_dir=run_dir, gpu=device == "cuda")
    run = archive.RunArchive(run_dir)
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
