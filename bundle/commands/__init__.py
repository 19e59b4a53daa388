"""CLI command modules; each defines ``register(app)``. See :mod:`bundle.cli`."""

from __future__ import annotations

import functools
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer

from protocol.errors import BundleError

F = TypeVar("F", bound=Callable[..., Any])
PATH_ERRORS = (FileNotFoundError, FileExistsError, NotADirectoryError, IsADirectoryError, PermissionError)
"""The :class:`OSError` kinds that say what is wrong with a path a user gave (when they name the file)."""


_STOPS_REPORTED: list[int] = []


def report_stop(line: str, code: int) -> typer.Exit:
    """Print *line* (why the command stops: Ctrl-C, SIGTERM) on stderr and note that it was said.

    typer turns a Ctrl-C outside a command (while it parses or prints help) into a silent exit status
    130, which :func:`bundle.cli.main` then reports in one line unless a command already did
    (:func:`stop_reported`).

    Returns:
        ``typer.Exit(code)``, to raise.
    """
    print(line, file=sys.stderr)
    _STOPS_REPORTED.append(code)
    return typer.Exit(code=code)


def stop_reported() -> bool:
    """Whether a command of this process printed its own line for a Ctrl-C or SIGTERM (:func:`report_stop`)."""
    return bool(_STOPS_REPORTED)


def one_line_errors(func: F) -> F:
    """Turn a :class:`BundleError` raised by a command into one stderr line and its exit code.

    An error about a path (:data:`PATH_ERRORS` naming a file: missing, of the wrong kind, or not
    readable/writable by this user) is one line and exit 2 too, naming the path; other OS errors (a
    full disk, a library that fails to load, a refused connection) propagate, and a broken output pipe
    is left to click (see :func:`bundle.cli.main`). No traceback is printed; any other exception
    propagates unchanged (a bug, not bad input).
    SIGTERM while the command runs becomes :class:`bundle.jobs.Terminated` (handled like Ctrl-C:
    the running jobs of every engine are stopped), then one line and exit 143; Ctrl-C
    (:class:`KeyboardInterrupt`) that the command did not handle itself is one line and exit 130.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from bundle.jobs import Terminated, sigterm_interrupts  # noqa: PLC0415

        try:
            with sigterm_interrupts():  # SIGTERM ends a command like Ctrl-C: running jobs are stopped
                return func(*args, **kwargs)
        except BundleError as exc:
            print(f"rev88: error: {exc}", file=sys.stderr)
            raise typer.Exit(code=exc.exit_code) from None
        except PATH_ERRORS as exc:
            if not exc.filename:
                raise
            print(f"rev88: error: {exc.strerror or exc} ({exc.filename}): check that path (it must exist, be a "
                  "file or folder as the option asks, and be readable, or writable for an output, by this user)",
                  file=sys.stderr)
            raise typer.Exit(code=2) from None
        except Terminated:
            raise report_stop("rev88: error: stopped by SIGTERM: running jobs were stopped (processes and containers "
                              "killed, Slurm jobs cancelled); a phase's staged records stay, so the same command "
                              "resumes it", 143) from None
        except KeyboardInterrupt:
            raise report_stop("rev88: interrupted (Ctrl-C)", 130) from None

    return wrapper  # type: ignore[return-value]


def require_module(module: str, command: str, remedy: str) -> None:
    """Raise a one-line :class:`BundleError` when *module* cannot be imported.

    Args:
        module: top-level import name (``"torch"``, ``"matplotlib"``).
        command: the command that needs it, for the message.
        remedy: what to run to get it.

    Raises:
        BundleError: the module is not installed in this environment.
    """
    if importlib.util.find_spec(module) is None:
        raise BundleError(f"{command} needs {module}, which is not installed in this environment ({sys.prefix}): "
                          f"{remedy}")


def require_cuda(command: str, engine: str) -> None:
    """With the native engine, raise a one-line :class:`BundleError` when torch sees no CUDA device.

    ``torch.cuda.is_available()`` does not initialise CUDA, so this is safe in the orchestrating
    process. (:func:`checked_engine` also checks a docker engine, through a probe container.)

    Raises:
        BundleError: no CUDA device visible to torch on this host.
    """
    if engine != "native":
        return
    from bundle import preflight  # noqa: PLC0415

    preflight.raise_first_failure([preflight.check_cuda()], command=command, where="on this host")


def checked_engine(phase: str, *, engine: str, device: str, out: Path, command: str,
                   ncu: str | None = None, draw: int = 0) -> Any:
    """The engine named by ``--engine``, after *phase*'s preconditions on *device* were checked.

    Runs before the phase writes anything: natively the checks run in this process; with
    ``--engine docker`` one probe container runs them (the run folder is created for its
    mount and removed again if the probe fails and the folder is still empty).

    Args:
        phase: ``validate``, ``compare``, ``qualify``, ``energy`` or ``profile``.
        engine: ``native`` or ``docker``.
        device: ``cuda`` or ``cpu``.
        out: the run folder (``--out``).
        command: for messages (``"rev88 compare"``).
        ncu: the ``--ncu`` path (profile).
        draw: the draw compare compares with the frozen reference (``--draw``).

    Returns:
        A :class:`bundle.jobs.Engine`.

    Raises:
        BundleError: unknown engine or device, a GPU-only phase on the CPU, the frozen reference
            missing for a phase that compares with it, *out* in the frozen reference, or a missing
            precondition (one line; nothing written).
    """
    from bundle import preflight  # noqa: PLC0415
    from bundle.commands.compare import make_engine  # noqa: PLC0415

    preflight.refuse_reference_out(out, command=command)
    preflight.needs_for([phase], device)
    preflight.require_frozen_reference(preflight.frozen_members([phase], compare_draw=draw))
    job_engine = make_engine(engine)
    if getattr(job_engine, "kind", "native") == "docker":
        with preflight.run_folder(Path(out), command=command) as run_dir:
            preflight.require([phase], device=device, command=command, engine=job_engine, run_dir=run_dir.resolve(),
                              ncu=ncu)
    else:
        preflight.require([phase], device=device, command=command, ncu=ncu)
    return job_engine
