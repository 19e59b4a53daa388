"""CLI command modules; each defines ``register(app)``. See :mod:`bundle.cli`."""

from __future__ import annotations

import functools
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
