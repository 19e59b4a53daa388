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

import dataclasses
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from bundle import archive
from bundle.jobs import Engine, JobSpec, SubprocessEngine, sigterm_interrupts
from protocol.errors import BundleError

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
    repeated = [n for i, n in enumerate(names) if n in names[:i]]
    if unknown or not names or repeated:
        what = (f"unknown phase{'s' if len(unknown) > 1 else ''} {', '.join(repr(n) for n in unknown)}" if unknown
                else f"{repeated[0]!r} named twice" if repeated else "no phase named")
        raise BundleError(f"invalid --phases {','.join(names) or '(empty)'!r}: {what}; the phases are "
                          f"{','.join(PHASES)} (each at most once; they run in this order)")
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


class PlacedEngine:
    """An engine whose GPU jobs all run on one board (``bundle.boards.placement_env``).

    Everything else (``kind``, ``image_reference``, …) is the wrapped engine's.
    """

    def __init__(self, engine: Engine, board: Any) -> None:
        self._engine = engine
        self.board = board

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def run(self, spec: JobSpec, *, on_line: Callable[[str], None] | None = None) -> Any:
        """Run *spec* on the board (GPU jobs only; CPU jobs as given)."""
        if spec.gpu:
            from bundle.boards import placement_env  # noqa: PLC0415

            spec = dataclasses.replace(spec, env={**spec.env, **placement_env(self.board)})
        return self._engine.run(spec, on_line=on_line)


#: Fresh draw processes a qualification runs at once (all 11: measured on one H200, 13.0 s against
#: 20.1 s with 6 at once and 108.5 s one after another; predictions and peaks unchanged).
QUALIFY_JOBS = 11


def run_phase(phase: str, run_dir: Path, *, engine: Engine, device: str, force: bool,
              on_line: Callable[[str], None] | None, boards: Sequence[Any] = ()) -> None:
    """Run one phase through *engine* (phase functions of the other modules, imported lazily).

    *boards* (``bundle.boards.Board``) spread the phase's jobs: validate and compare run on the
    first board, qualification places draw i on board i mod B, energy runs one whole interleaved
    design per board (all at once), profile spreads its ncu runs over the boards. Energy records
    every NVML reading (``--record-nvml``), so the verifier can cross-check the stamps. Empty: the engine's default
    device, as before ``--gpus``.
    """
    first = PlacedEngine(engine, boards[0]) if boards else engine
    if phase == "validate":
        from bundle.phases.validate import run_validate  # noqa: PLC0415

        run_validate(run_dir, engine=first, force=force, device=device, on_line=on_line)
    elif phase == "compare":
        from bundle.phases.compare import run_compare  # noqa: PLC0415

        run_compare(run_dir, engine=first, force=force, device=device, on_line=on_line)
    elif phase == "qualify":
        # The qualification job starts one fresh fixture process per draw (QUALIFY_JOBS at once); as
        # a job it runs natively or in one container like every other job.
        argv = ("{python}", "-m", "bundle.cli", "qualify", "--device", device, "--out", str(run_dir))
        if device == "cuda":
            argv += ("--jobs", str(QUALIFY_JOBS))
        env = {"CUBLAS_WORKSPACE_CONFIG": QUALIFY_WORKSPACE, "REV88_ENGINE": str(getattr(engine, "kind", "native"))}
        if boards:
            from bundle.boards import VISIBLE_ENV  # noqa: PLC0415

            argv += ("--boards", ",".join(b.uuid for b in boards))
            env[VISIBLE_ENV] = ",".join(b.uuid for b in boards)
        if getattr(engine, "image_reference", None):
            env["REV88_IMAGE_REFERENCE"] = str(engine.image_reference)
        spec = JobSpec(name="qualify", argv=argv + (("--force",) if force else ()), env=env, workdir=run_dir,
                       gpu=device == "cuda", timeout_s=7200.0)
        _check(engine.run(spec, on_line=on_line), phase)
    elif phase == "energy":
        from bundle.phases.energy import run_energy  # noqa: PLC0415

        run_energy(run_dir, engine=engine, force=force, device=device, on_line=on_line,
                   board=boards[0] if boards else None, boards=boards, record_nvml=True)
    elif phase == "profile":
        from bundle.phases.profile import run_profile  # noqa: PLC0415

        run_profile(run_dir, engine=engine, force=force, on_line=on_line, boards=boards)
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


def resolve_boards(gpus: str | None, *, engine: Engine, device: str) -> list[Any]:
    """The boards of ``--gpus`` (``None``: no placement, the engine's default device).

    Raises:
        BundleError: ``--gpus`` with the slurm engine (Slurm places jobs itself), or a bad spec
            (``bundle.boards.select``).
    """
    if gpus is None:
        return []
    from bundle import boards  # noqa: PLC0415

    if getattr(engine, "kind", "native") == "slurm":
        raise BundleError("--gpus is not used with --engine slurm: Slurm places each job on a GPU (--gres); drop it")
    available = boards.discover() if device == "cuda" else None
    return boards.select(gpus, available)


def record_invocation(run_dir: Path, invocation: dict[str, Any]) -> None:
    """Append one ``rev88 reproduce`` invocation (phases, stamps, durations) to ``environment.json.gz``."""
    path = run_dir / archive.ENVIRONMENT_NAME
    record = (archive.read_json_gz(path) if path.exists()
              else {"schema_version": archive.SCHEMA_VERSION, "run_id": run_dir.name, "executions": []})
    record.setdefault("reproduce_invocations", []).append(invocation)
    archive.write_json_gz(path, record)
    archive.RunArchive(run_dir).write_manifest()


def run_reproduce(run_dir: str | os.PathLike[str], *, engine: Engine, phases: Sequence[str] = PHASES,
                  device: str = "cuda", force: bool = False,
                  on_phase: Callable[[str, str], None] | None = None,
                  on_line: Callable[[str], None] | None = None, gpus: str | None = None) -> dict[str, Any]:
    """Run *phases* (protocol order) into *run_dir* through *engine*, then verify the archive.

    Args:
        run_dir: the run archive folder (created).
        engine: a :class:`bundle.jobs.Engine` (see :func:`make_engine`).
        phases: names from :data:`PHASES`.
        device: ``"cuda"`` (protocol) or ``"cpu"`` (diagnostic; qualify/validate/compare only).
        force: rerun phases that are already complete.
        on_phase: called ``(phase, "start" | "skip" | "done")``.
        on_line: receives each output line of each job and of the verifier.
        gpus: ``--gpus`` (``all``, ``N``, ``ID,ID``; ``bundle.boards``), ``None`` for no placement.

    Returns:
        ``{"run_dir", "engine", "image_reference", "probe", "phases": [{"phase", "status",
        "duration_s"}], "verify_exit_code", "verdict"}``; ``{"run_dir", "nothing_to_do": True, "phases"}``
        when every selected phase is already complete and *force* is false (no probe, no phase, no
        verifier, nothing written: an invocation that runs no phase is not recorded).

    Raises:
        BundleError: *run_dir* is (in) the frozen reference, the engine cannot run jobs or a precondition is missing (nothing is
            written; a run folder created for the probe is removed again), or a phase fails
            (completed phases are kept).
        KeyboardInterrupt: Ctrl-C, or :class:`Terminated` on SIGTERM; the invocation is recorded
            first (status ``interrupted``, the running phase ``interrupted`` with its stamps), so a
            resume's records can be checked against it. SIGKILL leaves no record.
    """
    from bundle import preflight  # noqa: PLC0415

    preflight.refuse_reference_out(run_dir, command="rev88 reproduce")
    run_dir = Path(run_dir).resolve()
    phases = parse_phases(phases)
    preflight.needs_for(phases, device)  # a GPU-only phase with --device cpu: refused before the folder exists
    run = archive.RunArchive(run_dir)
    to_run = [p for p in phases if force or not run.is_complete(p)]
    if not to_run:  # every selected phase is already complete: nothing runs, nothing is written or recorded
        return {"run_dir": str(run_dir), "nothing_to_do": True, "phases": [
            {"phase": p, "status": "skipped (already complete)", "duration_s": 0.0} for p in phases]}
    # validate, compare and qualify compare with the frozen reference: refused here, before the folder exists
    preflight.require_frozen_reference(preflight.frozen_members(to_run))
    boards = resolve_boards(gpus, engine=engine, device=device)
    invocation_start, invocation_started_at = time.perf_counter(), archive.utc_now()
    with sigterm_interrupts():  # a timeout or scheduler stop ends like Ctrl-C: jobs killed, invocation recorded
        with preflight.run_folder(run_dir, command="rev88 reproduce"):
            probed = probe(engine, run_dir=run_dir, phases=to_run, device=device)
        done: list[dict[str, Any]] = []

        def record(status: str) -> None:
            record_invocation(run_dir, {
                "command": list(sys.argv) if sys.argv and sys.argv[0].endswith(("rev88", "cli.py", "__main__.py"))
                else ["rev88", "reproduce"],
                "engine": str(getattr(engine, "kind", "native")), "device": device, "gpus": gpus,
                "boards": [b.record() for b in boards], "started_at_utc": invocation_started_at,
                "finished_at_utc": archive.utc_now(), "total_s": round(time.perf_counter() - invocation_start, 3),
                "total_s_covers": "probe and every phase of this invocation, not the verifier that follows",
                "status": status, "phases": done})

        try:
            for phase in phases:
                if run.is_complete(phase) and not force:
                    done.append({"phase": phase, "status": "skipped (already complete)", "duration_s": 0.0,
                                 "started_at_utc": None, "finished_at_utc": None})
                    if on_phase:
                        on_phase(phase, "skip")
                    continue
                if on_phase:
                    on_phase(phase, "start")
                started, started_at = time.perf_counter(), archive.utc_now()
                was_complete = run.is_complete(phase)
                try:
                    run_phase(phase, run_dir, engine=engine, device=device, force=force, on_line=on_line, boards=boards)
                except BaseException as exc:
                    # stopped after the phase's folder was completed (its last bookkeeping): it ran
                    completed = not was_complete and run.is_complete(phase)
                    done.append({"phase": phase,
                                 "status": "ran" if completed else
                                 "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed",
                                 "duration_s": round(time.perf_counter() - started, 3),
                                 "started_at_utc": started_at, "finished_at_utc": archive.utc_now()})
                    raise
                done.append({"phase": phase, "status": "ran", "duration_s": round(time.perf_counter() - started, 3),
                             "started_at_utc": started_at, "finished_at_utc": archive.utc_now()})
                record_missing_executions(run_dir, [phase], engine, probed)
                if on_phase:
                    on_phase(phase, "done")
        except BaseException as exc:
            # the phases that ran before keep their stamps; a resume skips them
            record("interrupted" if isinstance(exc, KeyboardInterrupt) else "failed")
            exc.invocation_recorded = True  # for the CLI's message
            raise
        record("complete")
        code, verdict = run_verifier(run_dir, on_line=on_line)
        return {
            "run_dir": str(run_dir),
            "engine": str(getattr(engine, "kind", "native")),
            "image_reference": getattr(engine, "image_reference", None),
            "probe": probed,
            "phases": done,
            "boards": [b.record() for b in boards],
            "total_s": round(sum(p["duration_s"] for p in done), 3),
            "total_s_covers": "the phases' durations summed (the recorded invocation total adds the probe)",
            "verify_exit_code": code,
            "verdict": verdict,
        }
