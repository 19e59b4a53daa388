"""The docker engine: one fresh container per job, through the Docker SDK.

:class:`DockerEngine` implements the :class:`bundle.jobs.Engine` protocol. Each
:class:`~bundle.jobs.JobSpec` becomes one container of the given image:

* the command line is the spec's ``argv`` with ``"{python}"`` replaced by ``python`` (the
  image's interpreter); it replaces the image's ENTRYPOINT and CMD;
* the environment is exactly ``spec.env`` (so ``CUBLAS_WORKSPACE_CONFIG`` is set at container
  start, before torch is imported; spec 4.3) plus ``REV88_IMAGE_REFERENCE`` (the reference as
  given) and ``REV88_IMAGE_ID`` (the image ID the daemon resolved it to, ``sha256:…``), which the
  job's execution record carries next to the image's own marker;
* jobs have no network (``network_mode="none"``): nothing a phase does needs one;
* ``spec.workdir`` is bind-mounted read-write at the same absolute path and is the working
  directory, so paths in ``argv`` mean the same inside and outside;
* ``spec.gpu`` adds a GPU device request (``--gpus``), ``spec.cap_sys_admin`` adds
  ``CAP_SYS_ADMIN`` (performance counters for ncu) and runs the job as root; other jobs run
  as the host user so the files they write stay the user's;
* output is streamed line by line to ``on_line`` and kept (last 1 MiB per stream);
* while it runs, :func:`bundle.jobs.kill_running_jobs` (an interrupted phase) kills it;
* the container is ALWAYS removed afterwards, also when it could not start (a failed GPU
  request leaves a created container behind even with ``remove=True``) and when the daemon's
  answer to ``create`` was lost (each container is named ``rev88-<job>-<12 hex>``, so it is
  found by name); :meth:`DockerEngine.run` returns only once the daemon no longer lists it.

Every container carries the label :data:`JOB_LABEL` (value: the job name), so leftovers can
be found with ``docker ps -a --filter label=org.rev88.bundle.job``.

The ``docker`` package is imported lazily; this module never imports torch.
"""

from __future__ import annotations

import codecs
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bundle.boards import VISIBLE_ENV
from bundle.jobs import (
    OUTPUT_LIMIT_BYTES,
    TIMEOUT_EXIT_CODE,
    JobResult,
    JobSpec,
    _BoundedText,
    expand_argv,
    running_job,
)
from protocol.errors import BundleError

JOB_LABEL = "org.rev88.bundle.job"
DEFAULT_IMAGE = "rev88/gpu:local"  # what `make image` tags; override with $REV88_GPU_IMAGE or --image
IMAGE_ENV = "REV88_IMAGE_REFERENCE"
IMAGE_ID_ENV = "REV88_IMAGE_ID"
STREAM_DRAIN_S = 10.0  # how long the attached stream may lag behind the container's exit
NO_GPU_RUNTIME_MARKERS = ("could not select device driver", "nvidia-container-cli", "unknown or invalid runtime")
REMOVE_WAIT_S = 120.0  # how long another removal of the same container may take before run() gives up


def container_name(job_name: str) -> str:
    """A fresh container name for job *job_name*: ``rev88-<job, [a-zA-Z0-9_.-] only>-<12 hex>``.

    Docker accepts ``[a-zA-Z0-9][a-zA-Z0-9_.-]+``; other characters become ``-`` and the job part
    is cut at 80 characters. The random suffix keeps names of concurrent and repeated jobs apart.
    """
    slug = re.sub(r"[^a-zA-Z0-9_.-]+", "-", job_name).strip("-.")[:80] or "job"
    return f"rev88-{slug}-{uuid.uuid4().hex[:12]}"


def default_image() -> str:
    """The GPU image to use when none is named: ``$REV88_GPU_IMAGE`` or :data:`DEFAULT_IMAGE`."""
    return os.environ.get("REV88_GPU_IMAGE") or DEFAULT_IMAGE


def _docker() -> Any:
    try:
        import docker  # noqa: PLC0415
    except ImportError:
        raise BundleError(
            "the Docker SDK is not installed (python package 'docker'): "
            "pip install 'rev88-bundle[docker]' or use --engine native"
        ) from None
    return docker


def docker_client() -> Any:
    """A client for the local Docker daemon (``docker.from_env()``).

    Raises:
        BundleError: the SDK is missing or the daemon does not answer.
    """
    docker = _docker()
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        raise BundleError(
            f"cannot reach the Docker daemon ({_first_line(exc)}): start dockerd "
            "(or set DOCKER_HOST) or use --engine native"
        ) from None
    return client


def _first_line(exc: BaseException) -> str:
    text = getattr(exc, "explanation", None) or str(exc) or type(exc).__name__
    return str(text).strip().splitlines()[0] if str(text).strip() else type(exc).__name__


class _LineSplitter:
    """Decodes byte chunks of one stream and hands complete lines to *on_line*."""

    def __init__(self, sink: _BoundedText, on_line: Callable[[str], None] | None, lock: threading.Lock):
        self.sink, self.on_line, self.lock = sink, on_line, lock
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.partial = ""

    def feed(self, chunk: bytes, *, final: bool = False) -> None:
        """Add *chunk*; on *final*, also hand over a last line that has no newline."""
        *lines, self.partial = (self.partial + self.decoder.decode(chunk, final=final)).split("\n")
        for line in lines:
            self._emit(line + "\n")
        if final and self.partial:
            self._emit(self.partial)
            self.partial = ""

    def _emit(self, line: str) -> None:
        self.sink.add(line)
        if self.on_line is not None:
            with self.lock:
                self.on_line(line.rstrip("\n"))


class DockerEngine:
    """Runs each job in a fresh container of *image* (the docker engine of ``rev88 reproduce``).

    Args:
        image: image reference, e.g. ``"rev88/gpu:local"`` or ``"repo@sha256:..."`` (default
            :func:`default_image`).
        client: a ``docker.DockerClient`` (default: ``docker.from_env()`` on first use).
        python: interpreter substituted for ``"{python}"`` (the image's, on its PATH).
        gpu_count: GPUs per GPU job: ``-1`` = all (``--gpus all``) or a positive count.
        as_host_user: run jobs without ``cap_sys_admin`` as this process's uid:gid.
        network: the containers' network mode (default ``"none"``).
        mounts: further host folders (e.g. the run folder) mounted read-write at the same path
            in every container, besides each job's ``workdir``.
        output_limit_bytes: how much of each stream to keep (the last bytes).

    Attributes:
        kind: ``"docker"`` (for the execution record).
        image_reference: *image*.
        image_id: the ID of *image* (``sha256:…``) once :meth:`resolve_image` ran (first job).
    """

    kind = "docker"

    def __init__(
        self,
        image: str | None = None,
        *,
        client: Any | None = None,
        python: str = "python",
        gpu_count: int = -1,
        as_host_user: bool = True,
        mounts: Sequence[str | os.PathLike[str]] = (),
        output_limit_bytes: int = OUTPUT_LIMIT_BYTES,
        network: str = "none",
    ) -> None:
        image = image or default_image()
        if gpu_count == 0 or gpu_count < -1:
            raise BundleError(f"invalid GPU count {gpu_count} for the docker engine: use -1 (all) or a positive count")
        self.image_reference = image
        self.python = python
        self.gpu_count = gpu_count
        self.as_host_user = as_host_user
        self.output_limit_bytes = output_limit_bytes
        self.mounts = [str(Path(m).resolve()) for m in mounts]
        self.network = network
        self.image_id: str | None = None
        self._client = client

    @property
    def client(self) -> Any:
        """The Docker client (connected on first use; raises :class:`BundleError` if unreachable)."""
        if self._client is None:
            self._client = docker_client()
        return self._client

    def resolve_image(self) -> str:
        """The ID of :attr:`image_reference` as the daemon has it (``sha256:…``), looked up once.

        Raises:
            BundleError: the daemon is unreachable or has no such image.
        """
        if self.image_id is None:
            docker = _docker()
            try:
                self.image_id = str(self.client.images.get(self.image_reference).id)
            except docker.errors.ImageNotFound:
                raise BundleError(
                    f"image {self.image_reference} not found on this Docker daemon: build it with `make image` (or pull it), "
                    "or pass --image"
                ) from None
            except docker.errors.APIError as exc:
                raise BundleError(f"cannot inspect image {self.image_reference} ({_first_line(exc)}): "
                                  "check the Docker daemon") from None
        return self.image_id

    def container_options(self, spec: JobSpec) -> dict[str, Any]:
        """Keyword arguments for ``client.containers.create`` for *spec* (no side effects).

        Returns:
            ``image``, ``name`` (:func:`container_name`, fresh on every call), ``entrypoint``,
            ``command``, ``environment``, ``working_dir``, ``volumes``, ``labels``, ``detach`` and, as the spec asks, ``device_requests``, ``cap_add``, ``user``.

        Raises:
            BundleError: *spec* has an empty command line.
        """
        docker = _docker()
        argv = expand_argv(spec.argv, self.python)
        if not argv:
            raise BundleError(f"job {spec.name} has an empty command line: this is a bug in its phase")
        workdir = str(Path(spec.workdir).resolve())
        environment = {IMAGE_ENV: self.image_reference}
        if self.image_id is not None:
            environment[IMAGE_ID_ENV] = self.image_id
        environment.update({str(k): str(v) for k, v in spec.env.items()})
        options: dict[str, Any] = {
            "image": self.image_reference,
            "name": container_name(spec.name),
            "entrypoint": [argv[0]],
            "command": argv[1:],
            "environment": environment,
            "working_dir": workdir,
            "volumes": {path: {"bind": path, "mode": "rw"} for path in dict.fromkeys([workdir, *self.mounts])},
            "labels": {JOB_LABEL: spec.name},
            "network_mode": self.network,
            "detach": True,
        }
        placed = spec.env.get(VISIBLE_ENV)
        if spec.gpu and placed:  # a job placed on boards gets exactly those (bundle.boards)
            options["device_requests"] = [docker.types.DeviceRequest(device_ids=placed.split(","),
                                                                     capabilities=[["gpu"]])]
        elif spec.gpu:
            options["device_requests"] = [docker.types.DeviceRequest(count=self.gpu_count, capabilities=[["gpu"]])]
        if spec.cap_sys_admin:
            options["cap_add"] = ["SYS_ADMIN"]
            options["user"] = "0:0"
        elif self.as_host_user and hasattr(os, "getuid"):
            options["user"] = f"{os.getuid()}:{os.getgid()}"
        return options

    def run(self, spec: JobSpec, *, on_line: Callable[[str], None] | None = None) -> JobResult:
        """Run *spec* in a fresh container; stream its lines (stdout and stderr) to *on_line*.

        Returns:
            The :class:`~bundle.jobs.JobResult` with the container's exit status (124 after a
            timeout, when the container is killed).

        Raises:
            BundleError: the daemon is unreachable, the image is missing, no GPU runtime is
                available for a GPU job, the container cannot start for another reason, or it
                cannot be removed afterwards.
        """
        docker = _docker()
        self.resolve_image()
        options = self.container_options(spec)
        client = self.client
        container = None
        start = time.perf_counter()
        try:
            try:
                container = client.containers.create(**options)
                # Attach before start (as the docker CLI does), so no early output is lost.
                stream = container.attach(stdout=True, stderr=True, stream=True, logs=True, demux=True)
                out, err = _BoundedText(self.output_limit_bytes), _BoundedText(self.output_limit_bytes)
                lock = threading.Lock()
                pump = threading.Thread(target=self._pump, args=(stream, out, err, on_line, lock), daemon=True)
                pump.start()
                container.start()
            except docker.errors.ImageNotFound:
                raise BundleError(
                    f"image {self.image_reference} not found for job {spec.name}: build it with "
                    "`make image` (or pull it), or pass --image"
                ) from None
            except docker.errors.APIError as exc:
                raise self._start_error(spec, exc) from None
            with running_job(lambda: self._kill(container)):  # an interrupt's kill_running_jobs stops it
                exit_code, timed_out = self._wait(container, spec.timeout_s)
            pump.join(timeout=STREAM_DRAIN_S)
            if pump.is_alive():  # the stream did not end: take the daemon's log instead
                out, err = self._logs(container, out, err)
            if timed_out:
                err.add(f"job {spec.name} timed out after {spec.timeout_s:g} s; its container was killed\n")
            return JobResult(
                name=spec.name,
                exit_code=exit_code,
                stdout=out.text(),
                stderr=err.text(),
                duration_s=time.perf_counter() - start,
            )
        finally:
            if container is None:  # create() failed: a container may exist all the same
                container = self._find(options["name"])
            if container is not None:
                self._remove(container)

    def _find(self, name: str) -> Any:
        """The container named *name*, or None when the daemon has none (or cannot be asked)."""
        try:
            return self.client.containers.get(name)
        except Exception:
            return None

    def _start_error(self, spec: JobSpec, exc: Any) -> BundleError:
        message = _first_line(exc)
        if spec.gpu and any(marker in str(exc) for marker in NO_GPU_RUNTIME_MARKERS):
            return BundleError(
                f"no GPU runtime available to Docker for job {spec.name} (the daemon answered: {message}): "
                "install the NVIDIA driver and the NVIDIA Container Toolkit and restart dockerd "
                "(docs/gpu-hosts.md), or use --engine native"
            )
        return BundleError(
            f"container for job {spec.name} could not start (image {self.image_reference}: {message}): "
            "check the image and the Docker daemon, or use --engine native"
        )

    @staticmethod
    def _pump(
        stream: Any,
        out: _BoundedText,
        err: _BoundedText,
        on_line: Callable[[str], None] | None,
        lock: threading.Lock,
    ) -> None:
        splitters = (_LineSplitter(out, on_line, lock), _LineSplitter(err, on_line, lock))
        try:
            for chunk_out, chunk_err in stream:
                if chunk_out:
                    splitters[0].feed(chunk_out)
                if chunk_err:
                    splitters[1].feed(chunk_err)
        except Exception as exc:  # the stream ends when the container is killed or removed
            err.add(f"[log stream ended: {_first_line(exc)}]\n")
        finally:
            for splitter in splitters:
                splitter.feed(b"", final=True)

    def _logs(self, container: Any, out: _BoundedText, err: _BoundedText) -> tuple[_BoundedText, _BoundedText]:
        """Both streams as the daemon logged them (fallback when the attached stream hangs)."""
        texts = []
        for streams in ({"stdout": True, "stderr": False}, {"stdout": False, "stderr": True}):
            text = _BoundedText(self.output_limit_bytes)
            try:
                text.add(container.logs(**streams).decode("utf-8", "replace"))
            except Exception:
                return out, err
            texts.append(text)
        return texts[0], texts[1]

    @staticmethod
    def _kill(container: Any) -> None:
        """SIGKILL the container's processes (its wait then returns); nothing when it already stopped."""
        try:
            container.kill()
        except Exception:
            pass

    @staticmethod
    def _wait(container: Any, timeout_s: float) -> tuple[int, bool]:
        """Wait for the container; kill it after *timeout_s*. Returns (exit code, timed out)."""
        import requests  # noqa: PLC0415 (a dependency of the docker SDK)

        try:
            status = container.wait(timeout=timeout_s)
            return int(status.get("StatusCode", -1)), False
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            try:
                container.kill()
            except Exception:  # already gone
                pass
            try:
                container.wait(timeout=60)
            except Exception:
                pass
            return TIMEOUT_EXIT_CODE, True
        except BaseException:
            try:
                container.kill()
            except Exception:
                pass
            raise

    @staticmethod
    def _remove(container: Any, wait_s: float = REMOVE_WAIT_S) -> None:
        """Remove *container* (killing it if it runs); return once the daemon no longer has it.

        Another removal of the same container under way (the daemon answers "already in
        progress") is waited for: the remove is retried until the daemon answers "not found".

        Raises:
            BundleError: the daemon refused, or the container was still there after *wait_s* s.
        """
        docker = _docker()
        deadline = time.monotonic() + wait_s
        while True:
            try:
                container.remove(force=True)
                return
            except docker.errors.NotFound:
                return
            except Exception as exc:
                in_progress = isinstance(exc, docker.errors.APIError) and "already in progress" in str(exc)
                if not in_progress or time.monotonic() > deadline:
                    raise BundleError(
                        f"could not remove container {container.id[:12]} ({_first_line(exc)}): "
                        f"remove it with `docker rm -f {container.id[:12]}`"
                    ) from None
            time.sleep(0.2)
