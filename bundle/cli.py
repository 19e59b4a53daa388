"""The ``rev88`` command line (typer).

One command per phase plus ``reproduce``, ``verify`` and ``report``. Each command lives in
its own module under :mod:`bundle.commands` and registers itself on :data:`app`; this module
never imports torch (commands import their phase inside the command body).
"""

from __future__ import annotations

import importlib

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
    """Console-script entry point for ``rev88``."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
