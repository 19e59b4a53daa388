"""Jobs and engines: how a phase runs one process, natively or in a container.

Phases never start processes themselves. They describe a job as a :class:`JobSpec` and hand
it to an :class:`Engine`, which returns a :class:`JobResult`. :class:`SubprocessEngine` runs
the job on this host; ``bundle.docker_engine.DockerEngine`` runs one container per job.

``CUBLAS_WORKSPACE_CONFIG`` is removed from the inherited environment and set only from
``JobSpec.env``, so every fixture process starts with exactly the workspace configuration
its phase asked for (spec 4.3: one fresh process per configuration).

This module never imports torch.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol, runtime_checkable

from protocol.errors import BundleError

PYTHON_PLACEHOLDER = "{python}"
WORKSPACE_ENV = "CUBLAS_WORKSPACE_CONFIG"
#: The rev88-fused learner's training programs (bundle.fused_learner.train_ctas_from_env); the
#: phases forward it from the host into every fixture job (bundle.phases.fixture_runner.engine_env).
FUSED_CTAS_ENV = "REV88_FUSED_CTAS"
FUSED_DEFAULT_CTAS = 1   # its training programs when the variable is unset (bundle.fused_learner.DEFAULT_TRAIN_CTAS)
FUSED_CTAS_HINT = ("set it to the rev88-fused training programs (1 = the single-CTA kernel, 8 = the measured "
                   "multi-CTA one; on a GPU at most its SM count) or unset it")
#: The rev88-fused learner's product precision (bundle.fused_learner.product_precision_from_env),
#: forwarded like FUSED_CTAS_ENV.
FUSED_PRECISION_ENV = "REV88_FUSED_PRECISION"
FUSED_PRECISIONS = ("ieee", "tf32x3")  # bundle.fused_learner.PRODUCT_PRECISIONS; the first is the default
#: The rev88-fused learner's kernel tool, forwarded like FUSED_CTAS_ENV: "triton" (bundle/fused_kernels.py,
#: the default) or "cuda" (bundle/fused_cuda.cu through CuPy, bundle.fused_cuda).
FUSED_KERNEL_ENV = "REV88_FUSED_KERNEL"
FUSED_KERNEL_TOOLS = ("triton", "cuda")
#: The CUDA kernel tool's exchange of the split cluster update, forwarded like FUSED_CTAS_ENV: "pull" (the
#: default) or "push" (bulk copies and transaction barriers; bundle.fused_cuda.EXCHANGES).
FUSED_EXCHANGE_ENV = "REV88_FUSED_EXCHANGE"
FUSED_EXCHANGES = ("pull", "push")
OUTPUT_LIMIT_BYTES = 1 << 20  # keep the last 1 MiB of each stream
TIMEOUT_EXIT_CODE = 124  # as coreutils `timeout`
_RUNNING: dict[int, Callable[[], None]] = {}  # token -> how to stop one job an engine runs now (kill_running_jobs)
_RUNNING_GUARD = threading.Lock()
_TOKENS = itertools.count(1)
STOP_POLL_S = 0.25  # stop_jobs: how often it stops again what started since


def fused_train_programs(environ: Mapping[str, str] | None = None) -> int:
    """The rev88-fused training programs the host asks for: ``$REV88_FUSED_CTAS`` (:data:`FUSED_CTAS_ENV`)
    when set and not blank, else :data:`FUSED_DEFAULT_CTAS`.

    Torch-free, so the host checks it before a phase starts any job (``engine_env`` in
    :mod:`bundle.phases.fixture_runner`) and when it resumes; the fixture reads it through
    :func:`bundle.fused_learner.train_ctas_from_env`.

    Raises:
        BundleError: set but not a plain decimal from 1 to 999 (no sign, no leading zero).
    """
    raw = (os.environ if environ is None else environ).get(FUSED_CTAS_ENV)
    if raw is None or raw.strip() == "":
        return FUSED_DEFAULT_CTAS
    text = raw.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 3 and text[0] != "0"):
        raise BundleError(f"{FUSED_CTAS_ENV}={raw!r} is not a plain decimal from 1 to 999 (no sign, no leading zero): "
                          f"{FUSED_CTAS_HINT}")
    return int(text)


def _env_choice(environ: Mapping[str, str] | None, name: str, choices: tuple[str, ...], what: str, hint: str) -> str:
    """``$name`` stripped when set and not blank, else ``choices[0]``.

    Raises:
        BundleError: set to anything but one of *choices* (one line naming the variable, *what* it
            is and *hint*).
    """
    raw = (os.environ if environ is None else environ).get(name)
    if raw is None or raw.strip() == "":
        return choices[0]
    if raw.strip() not in choices:
        raise BundleError(f"{name}={raw!r} is not a {what}: set it to one of {', '.join(choices)} ({hint}) or unset it")
    return raw.strip()


def fused_kernel_tool(environ: Mapping[str, str] | None = None) -> str:
    """The rev88-fused kernel tool the host asks for: ``$REV88_FUSED_KERNEL`` (:data:`FUSED_KERNEL_ENV`)
    when set and not blank, else ``"triton"``. Torch-free, like :func:`fused_train_programs`.

    Raises:
        BundleError: set to anything but one of :data:`FUSED_KERNEL_TOOLS`.
    """
    return _env_choice(environ, FUSED_KERNEL_ENV, FUSED_KERNEL_TOOLS, "kernel tool",
                       "triton = bundle/fused_kernels.py, cuda = bundle/fused_cuda.cu through CuPy")


def fused_exchange(environ: Mapping[str, str] | None = None) -> str:
    """The CUDA kernel tool's exchange the host asks for: ``$REV88_FUSED_EXCHANGE`` (:data:`FUSED_EXCHANGE_ENV`)
    when set and not blank, else ``"pull"``. Torch-free, like :func:`fused_train_programs`; only the CUDA
    kernel tool reads it (:class:`bundle.fused_cuda.CudaFusedTask` refuses ``"push"`` where it cannot run).

    Raises:
        BundleError: set to anything but one of :data:`FUSED_EXCHANGES`.
    """
    return _env_choice(environ, FUSED_EXCHANGE_ENV, FUSED_EXCHANGES, "split-update exchange",
                       "pull = read after cluster barriers, push = bulk copies with transaction barriers")


def fused_product_precision(environ: Mapping[str, str] | None = None) -> str:
    """The rev88-fused product precision the host asks for: ``$REV88_FUSED_PRECISION``
    (:data:`FUSED_PRECISION_ENV`) when set and not blank, else ``"ieee"`` (the frozen procedure's
    float32 multiply-adds); ``"tf32x3"`` is the tensor-core variant (:mod:`bundle.fused_kernels`).

    Torch-free, like :func:`fused_train_programs`, so a phase refuses a bad value before its first job.

    Raises:
        BundleError: set to anything but one of :data:`FUSED_PRECISIONS`.
    """
    return _env_choice(environ, FUSED_PRECISION_ENV, FUSED_PRECISIONS, "product precision",
                       "ieee = the frozen float32 arithmetic")


#: The frozen batch (FROZEN_CONFIG["batch_size"]) and the most rows per block the pushed exchange takes
#: (bundle.fused_cuda.push_possible), so the host can refuse "push" at too few blocks before any job starts.
FROZEN_BATCH = 128
PUSH_MAX_ROWS = 32
PUSH_MAX_CLUSTER = 8   # bundle.fused_cuda.MAX_CLUSTER: the portable thread-block cluster size


def fused_launch_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """What is wrong with the combination of rev88-fused variables the host sets, as one line; None if nothing.

    Each variable alone is checked by its reader (:func:`fused_train_programs`, :func:`fused_kernel_tool`,
    :func:`fused_product_precision`, :func:`fused_exchange`); this checks what they ask for together:
    the CUDA kernel tool runs float32 FMAs only (product precision ``ieee``); the exchange ``push`` is the
    CUDA tool's and needs at most :data:`PUSH_MAX_ROWS` rows per block, ``ceil(128 / G) <= 32`` (G >= 4), in
    one cluster (G <= :data:`PUSH_MAX_CLUSTER`).
    Torch-free: ``engine_env`` in :mod:`bundle.phases.fixture_runner` refuses before a phase starts any
    job (every phase, since the variables are forwarded to every fixture job), and the fixture before
    it takes the GPU lock. Whether the device can form the cluster that ``push`` also needs (compute
    capability 9.0 or later) is known only on the device (:class:`bundle.fused_cuda.CudaFusedTask` refuses there).

    Raises:
        BundleError: one of the variables is malformed on its own.
    """
    ctas = fused_train_programs(environ)
    tool = fused_kernel_tool(environ)
    precision = fused_product_precision(environ)
    exchange = fused_exchange(environ)
    if tool == "cuda" and precision != "ieee":
        return (f"{FUSED_KERNEL_ENV}=cuda runs float32 FMAs only (product precision ieee), but product precision "
                f"{precision} was asked for: unset {FUSED_PRECISION_ENV} or use {FUSED_KERNEL_ENV}=triton")
    if exchange == "push" and tool != "cuda":
        return (f"{FUSED_EXCHANGE_ENV}=push is an exchange of the CUDA kernel tool's split update, but kernel tool "
                f"{tool} was asked for: unset {FUSED_EXCHANGE_ENV} or set {FUSED_KERNEL_ENV}=cuda")
    rows = -(-FROZEN_BATCH // ctas)
    if exchange == "push" and (rows > PUSH_MAX_ROWS or ctas > PUSH_MAX_CLUSTER):
        return (f"{FUSED_EXCHANGE_ENV}=push needs at most {PUSH_MAX_ROWS} rows per block in a cluster of at most "
                f"{PUSH_MAX_CLUSTER} blocks, but {FUSED_CTAS_ENV} asks for {ctas} training programs ({rows} rows each "
                f"of the batch of {FROZEN_BATCH}): set {FUSED_CTAS_ENV} to 4 to {PUSH_MAX_CLUSTER}, or unset "
                f"{FUSED_EXCHANGE_ENV}")
    return None


@contextlib.contextmanager
def running_job(stop: Callable[[], None]) -> Iterator[None]:
    """While the block runs, *stop* is how :func:`kill_running_jobs` stops this job.

    Every engine registers its running jobs here: :class:`SubprocessEngine` a SIGKILL of the
    job's process group, ``bundle.docker_engine.DockerEngine`` a kill of its container (which is
    then removed as after any end), ``bundle.slurm_engine.SlurmEngine`` an ``scancel``. *stop*
    must be safe to call from another thread and after the job ended.
    """
    with _RUNNING_GUARD:
        token = next(_TOKENS)
        _RUNNING[token] = stop
    try:
        yield
    finally:
        with _RUNNING_GUARD:
            _RUNNING.pop(token, None)


def kill_running_jobs() -> int:
    """Stop every job an engine of this process is running now (:func:`running_job`); how many.

    For an interrupted phase whose jobs run on worker threads: native jobs run in their own
    sessions (a terminal's Ctrl-C reaches only this process), containers and batch jobs outside
    it, so the interrupt stops them here; the threads' ``run`` calls then return (or raise) as
    for any killed job. A stop that fails (the job already gone) is ignored.
    """
    with _RUNNING_GUARD:
        stops = list(_RUNNING.values())
    for stop in stops:
        try:
            stop()
        except Exception:
            pass
    return len(stops)


def stop_jobs(futures: Collection[Any], wait_s: float = 600.0) -> None:
    """After an interrupt: cancel the *futures* (``concurrent.futures.Future``) not started, then
    stop the running jobs until every future is done (a job a worker thread started after a
    stop is stopped at the next poll), waiting at most *wait_s* s."""
    from concurrent.futures import wait  # noqa: PLC0415

    for future in futures:
        future.cancel()
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        kill_running_jobs()
        if not wait(futures, timeout=STOP_POLL_S).not_done:
            return


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@dataclass(frozen=True)
class JobSpec:
    """One process to run.

    Attributes:
        name: job name, e.g. ``"compare/workspace-16-8"``.
        argv: command line; every ``"{python}"`` is replaced by the engine's interpreter.
        env: added to the child's environment (``CUBLAS_WORKSPACE_CONFIG`` is set ONLY here).
        workdir: host folder the job reads/writes (docker bind-mounts it at the same path).
        timeout_s: wall-clock limit in seconds.
        gpu: whether the job needs the GPU (containers get ``--gpus``).
        cap_sys_admin: performance counters (ncu) in a container.
    """

    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    workdir: Path = Path(".")
    timeout_s: float = 1800.0
    gpu: bool = True
    cap_sys_admin: bool = False


@dataclass(frozen=True)
class JobResult:
    """What one job did.

    Attributes:
        name: the job's name.
        exit_code: process exit status (124 after a timeout; negative = killed by signal).
        stdout: full text, bounded to the last 1 MiB.
        stderr: full text, bounded to the last 1 MiB.
        duration_s: wall-clock seconds from start to exit.
    """

    name: str
    exit_code: int
    stdout: str
    stderr: str
    duration_s: float

    @property
    def ok(self) -> bool:
        """Whether the job exited with status 0."""
        return self.exit_code == 0

    def last_error_line(self) -> str:
        """The last non-empty stderr line (else stdout line), for one-line error messages."""
        for text in (self.stderr, self.stdout):
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            if lines:
                return lines[-1]
        return f"exit status {self.exit_code}, no output"


@runtime_checkable
class Engine(Protocol):
    """Runs a :class:`JobSpec`. Engines may also expose ``kind`` ("native" | "docker") and
    ``image_reference`` (``None`` natively) for the execution record."""

    def run(self, spec: JobSpec, *, on_line: Callable[[str], None] | None = None) -> JobResult:
        """Run *spec* to completion, passing each output line to *on_line* as it arrives."""
        ...


def expand_argv(argv: tuple[str, ...], python: str) -> list[str]:
    """Replace ``"{python}"`` in every argument of *argv* by *python*."""
    return [arg.replace(PYTHON_PLACEHOLDER, python) for arg in argv]


def child_environment(spec_env: Mapping[str, str], base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: *base* (default ``os.environ``) minus the workspace config, plus *spec_env*."""
    env = dict(os.environ if base is None else base)
    env.pop(WORKSPACE_ENV, None)
    env.update({str(k): str(v) for k, v in spec_env.items()})
    return env


class _BoundedText:
    """Keeps the last *limit* bytes of a text stream."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: collections.deque[str] = collections.deque()
        self.size = 0
        self.truncated = False

    def add(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text.encode("utf-8", "replace"))
        while self.size > self.limit and len(self.parts) > 1:
            self.size -= len(self.parts.popleft().encode("utf-8", "replace"))
            self.truncated = True

    def text(self) -> str:
        out = "".join(self.parts)
        if self.size > self.limit:
            out = out.encode("utf-8", "replace")[-self.limit :].decode("utf-8", "replace")
        return out


def _pump(stream: IO[str], sink: _BoundedText, on_line: Callable[[str], None] | None, lock: threading.Lock) -> None:
    for line in iter(stream.readline, ""):
        sink.add(line)
        if on_line is not None:
            with lock:
                on_line(line.rstrip("\n"))
    stream.close()


class SubprocessEngine:
    """Runs jobs as child processes of this one (the native engine).

    Args:
        python: interpreter substituted for ``"{python}"`` (default ``sys.executable``).
        cwd: working directory of the child (default: this process's).
        output_limit_bytes: how much of each stream to keep (the last bytes).
    """

    kind = "native"
    image_reference: str | None = None

    def __init__(
        self,
        python: str | None = None,
        *,
        cwd: str | os.PathLike[str] | None = None,
        output_limit_bytes: int = OUTPUT_LIMIT_BYTES,
    ) -> None:
        self.python = python or sys.executable
        self.cwd = cwd
        self.output_limit_bytes = output_limit_bytes

    def run(self, spec: JobSpec, *, on_line: Callable[[str], None] | None = None) -> JobResult:
        """Run *spec*; stream its lines (stdout and stderr) to *on_line*.

        Returns:
            The :class:`JobResult`; a timeout kills the process group and gives exit code 124.

        Raises:
            BundleError: the program cannot be started.
        """
        argv = expand_argv(spec.argv, self.python)
        env = child_environment(spec.env)
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=self.cwd,
                text=True,
                encoding="utf-8",
                errors="replace",
                bufsize=1,
                start_new_session=True,
            )
        except OSError as exc:
            raise BundleError(
                f"cannot start job {spec.name} ({argv[0]}: {exc.strerror}): check that the program is installed"
            ) from None
        out, err = _BoundedText(self.output_limit_bytes), _BoundedText(self.output_limit_bytes)
        lock = threading.Lock()
        threads = [
            threading.Thread(target=_pump, args=(proc.stdout, out, on_line, lock), daemon=True),
            threading.Thread(target=_pump, args=(proc.stderr, err, on_line, lock), daemon=True),
        ]
        for thread in threads:
            thread.start()
        with running_job(lambda: _kill_group(proc.pid)):
            try:
                exit_code = proc.wait(timeout=spec.timeout_s)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc.pid)
                proc.wait()
                exit_code = TIMEOUT_EXIT_CODE
            except BaseException:
                _kill_group(proc.pid)
                proc.wait()
                raise
        for thread in threads:
            thread.join(timeout=10)
        if timed_out:
            err.add(f"job {spec.name} timed out after {spec.timeout_s:g} s and was killed\n")
        return JobResult(
            name=spec.name,
            exit_code=exit_code,
            stdout=out.text(),
            stderr=err.text(),
            duration_s=time.perf_counter() - start,
        )


class Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler's or ``timeout``'s stop) inside :func:`sigterm_interrupts`.

    A :class:`KeyboardInterrupt`, so every path that handles Ctrl-C handles it: the running jobs
    of every engine are stopped (:func:`stop_jobs`: native process groups killed, containers
    killed and removed, Slurm jobs cancelled), a phase's staged records stay for a resume, and
    ``rev88 reproduce`` records the invocation as ``interrupted``.
    """


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """In the main thread, turn the first SIGTERM into :class:`Terminated` while the block runs.

    Further SIGTERMs are ignored until the block exits, so the cleanup it starts (killing jobs,
    writing the invocation record) is not cut short by a second one. Outside the main thread the
    block runs unchanged. The previous handler is restored on exit.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated(f"signal {signum}")
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
