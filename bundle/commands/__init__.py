"""CLI command modules; each defines ``register(app)``. See :mod:`bundle.cli`."""

from __future__ import annotations

import functools
import importlib.util
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from bundle.errors import BundleError

F = TypeVar("F", bound=Callable[..., Any])


def one_line_errors(func: F) -> F:
    """Turn a :class:`BundleError` raised by a command into one stderr line and its exit code.

    No traceback is printed; any other exception propagates unchanged (a bug, not bad input).
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except BundleError as exc:
            print(f"rev88: error: {exc}", file=sys.stderr)
            raise typer.Exit(code=exc.exit_code) from None

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
    process. A docker engine checks its own GPU runtime when its first job starts.

    Raises:
        BundleError: no CUDA device visible to torch on this host.
    """
    if engine != "native":
        return
    import torch  # noqa: PLC0415

    if not torch.cuda.is_available():
        raise BundleError(f"CUDA is not available to torch {torch.__version__} on this host ({command}): "
                          "run it on a GPU host (see docs/gpu-hosts.md); nothing was written")
