"""The slurm engine: one Slurm batch job per :class:`~bundle.jobs.JobSpec`, through Slurm's own CLI.

:class:`SlurmEngine` implements the :class:`bundle.jobs.Engine` protocol on a cluster:

* each job is a small shell script (no pickled payload, nothing but the command line and the
  spec's environment) submitted with ``sbatch --parsable``; GPU jobs ask for one GPU
  (``--gres=gpu:1``, or ``--gpus=1`` with ``gpu_request="gpus"``); the time limit is the spec's
  timeout rounded up to whole minutes; partition, account, QOS and further ``sbatch`` options
  come from :class:`SlurmOptions` (command line or a small TOML file, :func:`load_options`);
* ``CUBLAS_WORKSPACE_CONFIG`` is removed from what the job inherits and set only from
  ``spec.env`` (spec 4.3), exactly as the native engine does;
* the script, its stdout and stderr live in a scratch folder on storage the nodes share (default
  ``<run folder>/.work/slurm``), are read when the job ends and are deleted then, so the run
  folder keeps only what the phases write;
* while the job runs, new output lines are handed to ``on_line``; completion, state and exit
  code come from Slurm's accounting: ``sacct`` (slurmdbd), or, where the cluster keeps no
  accounting database, ``sacct --completion`` (the job-completion log, ``JobCompType``);
* a job that ends ``NODE_FAIL``, ``BOOT_FAIL`` or ``PREEMPTED`` is resubmitted (``retries``
  times); ``TIMEOUT`` gives exit code 124 like the other engines; ``CANCELLED`` or
  ``OUT_OF_MEMORY`` raise one line. A job still queued or running when this process is
  interrupted is cancelled (``scancel``), also when it runs on a worker thread of an overlapped
  phase (:func:`bundle.jobs.kill_running_jobs`).

Every job is named ``rev88-<spec name>`` and carries ``--comment=org.rev88.bundle``.
This module never imports torch.
"""

from __future__ import annotations

import codecs
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from bundle.jobs import (
    OUTPUT_LIMIT_BYTES,
    TIMEOUT_EXIT_CODE,
    WORKSPACE_ENV,
    JobResult,
    JobSpec,
    _BoundedText,
    expand_argv,
    running_job,
)
from protocol.errors import BundleError

JOB_COMMENT = "org.rev88.bundle"
RESUBMIT_STATES = frozenset({"NODE_FAIL", "BOOT_FAIL", "PREEMPTED"})
REFUSED_STATES = frozenset({"CANCELLED", "OUT_OF_MEMORY", "DEADLINE", "REVOKED"})
DONE_STATES = frozenset({"COMPLETED", "FAILED", "TIMEOUT"}) | RESUBMIT_STATES | REFUSED_STATES
ACCOUNTING_DISABLED = "accounting storage is disabled"
_NAME_CLEAN = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class SlurmOptions:
    """What the slurm engine asks of the cluster.

    Attributes:
        partition: ``--partition`` (``None``: the cluster's default).
        account: ``--account``.
        qos: ``--qos``.
        python: the interpreter substituted for ``"{python}"`` on the nodes (default: this
            process's ``sys.executable``, right when the venv lives on shared storage); may be a
            command line such as ``"apptainer exec --nv rev88.sif python"``.
        gpu_request: ``"gres"`` (``--gres=gpu:1``) or ``"gpus"`` (``--gpus=1``).
        extra_args: further ``sbatch`` options, e.g. ``["--constraint=a100"]``.
        scratch_dir: the folder on shared storage for job scripts and output (default
            ``<job workdir>/.work/slurm``).
        poll_s: seconds between state queries.
        retries: resubmissions of a job that ended NODE_FAIL / BOOT_FAIL / PREEMPTED.
        submit_timeout_s: how long an ``sbatch`` / ``sacct`` / ``squeue`` call may take.
        settle_s: how long to wait for the accounting record after the job left the queue.
    """

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    python: str | None = None
    gpu_request: str = "gres"
    extra_args: tuple[str, ...] = ()
    scratch_dir: str | None = None
    poll_s: float = 1.0
    retries: int = 1
    submit_timeout_s: float = 60.0
    settle_s: float = 60.0

    def __post_init__(self) -> None:
        if self.gpu_request not in ("gres", "gpus"):
            raise BundleError(f"slurm option gpu_request={self.gpu_request!r}: use gres or gpus")
        if self.retries < 0 or self.poll_s <= 0 or self.submit_timeout_s <= 0 or self.settle_s < 0:
            raise BundleError("slurm options: retries >= 0, poll_s > 0, submit_timeout_s > 0 and settle_s >= 0")
        for name in ("partition", "account", "qos"):
            value = getattr(self, name)
            if value is not None and (not value or any(c.isspace() for c in value)):
                raise BundleError(f"slurm option {name}={value!r}: give one name without spaces")


def load_options(path: Path | None = None, **overrides: Any) -> SlurmOptions:
    """Slurm options from a TOML file (keys of :class:`SlurmOptions`), then *overrides* (not ``None``).

    Raises:
        BundleError: the file is missing or not TOML, a key is unknown, or a value has the wrong type.
    """
    values: dict[str, Any] = {}
    if path is not None:
        try:
            values = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise BundleError(f"cannot read the slurm config {path} ({exc.strerror}): give an existing TOML file") \
                from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise BundleError(f"slurm config {path} is not valid TOML ({exc}): fix the file") from None
        values = values.get("slurm", values)
    values.update({k: v for k, v in overrides.items() if v is not None})
    known = {f.name: f for f in fields(SlurmOptions)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise BundleError(f"unknown slurm option(s) {', '.join(unknown)}: use {', '.join(known)}")
    if "extra_args" in values:
        extra = values["extra_args"]
        if isinstance(extra, str):
            extra = shlex.split(extra)
        if not isinstance(extra, (list, tuple)) or not all(isinstance(a, str) for a in extra):
            raise BundleError("slurm option extra_args: give a list of sbatch options")
        values["extra_args"] = tuple(extra)
    for name in ("poll_s", "submit_timeout_s", "settle_s"):
        if name in values and (isinstance(values[name], bool) or not isinstance(values[name], (int, float))):
            raise BundleError(f"slurm option {name}: give a number of seconds")
    if "retries" in values and (isinstance(values["retries"], bool) or not isinstance(values["retries"], int)):
        raise BundleError("slurm option retries: give a whole number")
    for name in ("partition", "account", "qos", "python", "gpu_request", "scratch_dir"):
        if name in values and not isinstance(values[name], str):
            raise BundleError(f"slurm option {name}: give a string")
    return SlurmOptions(**values)


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise BundleError(f"Slurm's `{name}` is not on PATH: run on a cluster login node with the Slurm client "
                          "installed, or use --engine native / docker")
    return path


@dataclass
class _Submitted:
    job_id: str
    script: Path
    stdout: Path
    stderr: Path
    offsets: list[int] = field(default_factory=lambda: [0, 0])
    partial: list[str] = field(default_factory=lambda: ["", ""])
    decoders: list[Any] = field(default_factory=lambda: [codecs.getincrementaldecoder("utf-8")("replace")
                                                         for _ in range(2)])


class SlurmEngine:
    """Runs each job as one Slurm batch job (the slurm engine of ``rev88 reproduce``).

    Args:
        options: what to ask of the cluster (:class:`SlurmOptions`).
        output_limit_bytes: how much of each stream to keep (the last bytes).
        runner: runs a Slurm CLI command line (default :func:`subprocess.run` with a timeout);
            injectable so that the command lines can be inspected without a cluster.

    Attributes:
        kind: ``"slurm"`` (for the execution record).
        image_reference: ``None`` (the nodes' own interpreter, see ``SlurmOptions.python``).
        job_ids: Slurm job IDs of every submission, in order (resubmissions included).
    """

    kind = "slurm"
    image_reference: str | None = None

    def __init__(self, options: SlurmOptions | None = None, *, output_limit_bytes: int = OUTPUT_LIMIT_BYTES,
                 runner: Callable[[Sequence[str]], subprocess.CompletedProcess[str]] | None = None) -> None:
        self.options = options or SlurmOptions()
        self.output_limit_bytes = output_limit_bytes
        self._runner = runner
        self.job_ids: list[str] = []

    # --- the command lines -------------------------------------------------------------------

    def python_argv(self) -> list[str]:
        """The interpreter command line substituted for ``"{python}"``."""
        return shlex.split(self.options.python) if self.options.python else [sys.executable]

    def job_script(self, spec: JobSpec) -> str:
        """The batch script for *spec*: ``cd`` into the workdir, the spec's environment, the command line.

        Raises:
            BundleError: *spec* has an empty command line.
        """
        python = " ".join(shlex.quote(a) for a in self.python_argv())
        argv = [python if a == "{python}" else shlex.quote(a)
                for a in expand_argv(spec.argv, "{python}")]
        if not argv:
            raise BundleError(f"job {spec.name} has an empty command line: this is a bug in its phase")
        exports = "".join(f"export {k}={shlex.quote(str(v))}\n" for k, v in spec.env.items()
                          if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(k)))
        return ("#!/bin/bash\n"
                f"# rev88 job {spec.name} (written by bundle.slurm_engine; deleted when the job ends)\n"
                "set -e\n"
                f"cd {shlex.quote(str(Path(spec.workdir).resolve()))}\n"
                f"unset {WORKSPACE_ENV}\n"
                f"{exports}"
                f"exec {' '.join(argv)}\n")

    def sbatch_argv(self, spec: JobSpec, script: Path, stdout: Path, stderr: Path) -> list[str]:
        """The ``sbatch`` command line that submits *script* for *spec*."""
        opts = self.options
        minutes = max(1, math.ceil(spec.timeout_s / 60.0))
        argv = [_tool("sbatch"), "--parsable", f"--job-name=rev88-{_NAME_CLEAN.sub('_', spec.name)}",
                f"--output={stdout}", f"--error={stderr}", f"--chdir={Path(spec.workdir).resolve()}",
                f"--time={minutes}", "--nodes=1", "--ntasks=1", f"--comment={JOB_COMMENT}", "--no-requeue"]
        for flag, value in (("--partition", opts.partition), ("--account", opts.account), ("--qos", opts.qos)):
            if value:
                argv.append(f"{flag}={value}")
        if spec.gpu:
            argv.append("--gres=gpu:1" if opts.gpu_request == "gres" else "--gpus=1")
        argv.extend(opts.extra_args)
        argv.append(str(script))
        return argv

    # --- running -------------------------------------------------------------------------------

    def _call(self, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        if self._runner is not None:
            return self._runner(argv)
        try:
            return subprocess.run(list(argv), capture_output=True, text=True, check=False,
                                  timeout=self.options.submit_timeout_s)
        except subprocess.TimeoutExpired:
            raise BundleError(f"`{Path(argv[0]).name}` did not answer within {self.options.submit_timeout_s:g} s: "
                              "check slurmctld (scontrol ping)") from None

    def _scratch(self, spec: JobSpec) -> Path:
        base = Path(self.options.scratch_dir) if self.options.scratch_dir else Path(spec.workdir) / ".work" / "slurm"
        base = base.resolve()
        base.mkdir(parents=True, exist_ok=True)
        return base

    def _submit(self, spec: JobSpec, attempt: int) -> _Submitted:
        scratch = self._scratch(spec)
        stem = f"{_NAME_CLEAN.sub('_', spec.name)}.{os.getpid()}.{attempt}"
        script, stdout, stderr = (scratch / f"{stem}.sh", scratch / f"{stem}.out", scratch / f"{stem}.err")
        script.write_text(self.job_script(spec), encoding="utf-8")
        script.chmod(0o755)
        for path in (stdout, stderr):
            path.write_text("", encoding="utf-8")
        proc = self._call(self.sbatch_argv(spec, script, stdout, stderr))
        job_id = proc.stdout.strip().split(";")[0] if proc.returncode == 0 else ""
        if not job_id.isdigit():
            for path in (script, stdout, stderr):
                path.unlink(missing_ok=True)
            message = (proc.stderr.strip().splitlines() or [proc.stdout.strip() or f"exit {proc.returncode}"])[-1]
            raise BundleError(f"sbatch refused job {spec.name} ({message}): check the partition, account and "
                              "GPU request (--slurm-config / --partition / --account)")
        self.job_ids.append(job_id)
        return _Submitted(job_id, script, stdout, stderr)

    def _queued(self, job_id: str) -> bool:
        """Whether the job is still known to the queue as pending/running/completing."""
        proc = self._call([_tool("squeue"), "--noheader", "--jobs", job_id, "--format=%T"])
        state = proc.stdout.strip().upper()
        return proc.returncode == 0 and state not in ("",) and state.split()[0] not in DONE_STATES

    def accounting(self, job_id: str) -> tuple[str, int, int] | None:
        """``(state, exit code, signal)`` of *job_id* from ``sacct`` (or ``sacct --completion``), or None.

        Raises:
            BundleError: neither accounting source answers for this cluster.
        """
        fmt = ["--noheader", "--parsable2", "--format=JobID,State,ExitCode", "--jobs", job_id]
        proc = self._call([_tool("sacct"), *fmt])
        if proc.returncode != 0 and ACCOUNTING_DISABLED in (proc.stderr + proc.stdout).lower():
            proc = self._call([_tool("sacct"), "--completion", *fmt])
        if proc.returncode != 0:
            message = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            raise BundleError(f"sacct cannot report job {job_id} ({message}): the engine needs Slurm accounting "
                              "(slurmdbd) or a job-completion log (JobCompType=jobcomp/filetxt)")
        for line in proc.stdout.splitlines():
            parts = line.strip().split("|")
            if len(parts) >= 3 and parts[0] == job_id:
                state = parts[1].split()[0].upper() if parts[1].strip() else ""
                code, _, sig = parts[2].partition(":")
                if state in DONE_STATES and code.isdigit():
                    return state, int(code), int(sig) if sig.isdigit() else 0
        return None

    def _drain(self, job: _Submitted, sinks: Sequence[_BoundedText], on_line: Callable[[str], None] | None,
               final: bool = False) -> None:
        """Hand the output that arrived since the last call to *sinks* and *on_line*, line by line."""
        for i, path in enumerate((job.stdout, job.stderr)):
            try:
                with path.open("rb") as handle:
                    handle.seek(job.offsets[i])
                    chunk = handle.read()
            except OSError:
                chunk = b""
            job.offsets[i] += len(chunk)
            *complete, job.partial[i] = (job.partial[i] + job.decoders[i].decode(chunk, final=final)).split("\n")
            for line in complete:
                sinks[i].add(line + "\n")
                if on_line is not None:
                    on_line(line)
            if final and job.partial[i]:
                sinks[i].add(job.partial[i])
                if on_line is not None:
                    on_line(job.partial[i])
                job.partial[i] = ""

    def _cleanup(self, job: _Submitted) -> None:
        for path in (job.script, job.stdout, job.stderr):
            path.unlink(missing_ok=True)
        scratch = job.script.parent
        for folder in (scratch, scratch.parent):
            try:
                folder.rmdir()  # only when empty: another job may still use it
            except OSError:
                break

    def _cancel(self, job_id: str) -> None:
        try:
            self._call([_tool("scancel"), job_id])
        except BundleError:
            pass

    def run(self, spec: JobSpec, *, on_line: Callable[[str], None] | None = None) -> JobResult:
        """Submit *spec* as a batch job, stream its output lines, and wait for Slurm's verdict.

        Returns:
            The :class:`~bundle.jobs.JobResult` with Slurm's exit code (124 after ``TIMEOUT``).

        Raises:
            BundleError: the Slurm CLI is missing or refuses the job, accounting cannot report
                it, it was cancelled or ran out of memory, or it failed on its node more than
                ``retries`` times.
        """
        for tool in ("sbatch", "squeue", "sacct", "scancel"):
            _tool(tool)  # before anything is written: a host without Slurm gets one line
        start = time.perf_counter()
        attempt = 0
        while True:
            out, err = _BoundedText(self.output_limit_bytes), _BoundedText(self.output_limit_bytes)
            job = self._submit(spec, attempt)
            verdict: tuple[str, int, int] | None = None
            try:
                deadline = time.monotonic() + spec.timeout_s + 600.0  # Slurm's --time kills it first
                with running_job(lambda job_id=job.job_id: self._cancel(job_id)):  # kill_running_jobs cancels it
                    while self._queued(job.job_id):
                        self._drain(job, (out, err), on_line)
                        if time.monotonic() > deadline:
                            self._cancel(job.job_id)
                            break
                        time.sleep(self.options.poll_s)
                settle = time.monotonic() + self.options.settle_s
                while (verdict := self.accounting(job.job_id)) is None and time.monotonic() < settle:
                    time.sleep(min(self.options.poll_s, 1.0))
                self._drain(job, (out, err), on_line, final=True)
            except BaseException:
                self._cancel(job.job_id)
                self._cleanup(job)
                raise
            self._cleanup(job)
            if verdict is None:
                raise BundleError(f"Slurm job {job.job_id} ({spec.name}) left the queue but accounting has no end "
                                  "state for it: check sacct and rerun; completed phases are kept")
            state, code, sig = verdict
            if state in RESUBMIT_STATES and attempt < self.options.retries:
                attempt += 1
                if on_line is not None:
                    on_line(f"[slurm] job {job.job_id} ({spec.name}) ended {state}; resubmitting "
                            f"({attempt}/{self.options.retries})")
                continue
            if state in RESUBMIT_STATES:
                raise BundleError(f"Slurm job {job.job_id} ({spec.name}) ended {state} after {attempt + 1} "
                                  "submission(s): check the node (sinfo -R) and rerun; completed phases are kept")
            if state in REFUSED_STATES:
                raise BundleError(f"Slurm job {job.job_id} ({spec.name}) ended {state}: nothing of it was recorded; "
                                  "rerun the phase (completed jobs are kept)")
            exit_code = TIMEOUT_EXIT_CODE if state == "TIMEOUT" else (code if not sig else 128 + sig)
            if state == "TIMEOUT":
                err.add(f"job {spec.name} (Slurm job {job.job_id}) reached its time limit and was killed\n")
            return JobResult(name=spec.name, exit_code=exit_code, stdout=out.text(), stderr=err.text(),
                             duration_s=time.perf_counter() - start)


def options_summary(options: SlurmOptions) -> Mapping[str, Any]:
    """The options as a plain mapping (for records and messages)."""
    return {f.name: getattr(options, f.name) for f in fields(SlurmOptions)}
