"""The ``rev88`` command line (typer).

One command per phase plus ``reproduce``, ``verify`` and ``report``. Each command lives in
its own module under :mod:`bundle.commands` and registers itself on :data:`app`; this module
never imports torch (commands import their phase inside the command body).
"""

from __future__ import annotations

import importlib
import signal
import sys

import typer

app = typer.Typer(
    name="rev88",
    help="Reproduce and audit the rev88 MNIST-medium energy study (see README.md).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Each module defines ``register(app: typer.Typer) -> None``.
COMMAND_MODULES = (
    "bundle.commands.data",
    "bundle.commands.qualify",
    "bundle.commands.fixture",
    "bundle.commands.compare",
    "bundle.commands.validate",
    "bundle.commands.energy",
    "bundle.commands.profile",
    "bundle.commands.reproduce",
    "bundle.commands.verify",
)

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def main() -> None:
    """Console-script entry point for ``rev88``.

    When the reader of the output pipe goes away (``rev88 verify … | head -1``), click exits with status 1,
    which ``rev88 verify`` uses for "something FAILs"; the status is then 141 (128 + SIGPIPE) instead, as a
    process killed by SIGPIPE reports in a shell.
    """
    try:
        app()
    except SystemExit as exc:
        # click (vendored as typer._click in typer >= 0.2x) swaps stdout for its PacifyFlushWrapper on EPIPE
        if exc.code == 1 and type(sys.stdout).__name__ == "PacifyFlushWrapper":
            raise SystemExit(128 + signal.SIGPIPE) from None
        raise


if __name__ == "__main__":  # pragma: no cover
    main()
