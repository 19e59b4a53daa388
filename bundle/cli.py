"""The ``rev88`` command line (typer).

One command per phase plus ``reproduce``, ``verify`` and ``report``. Each command lives in
its own module under :mod:`bundle.commands` and registers itself on :data:`app`; this module
never imports torch (commands import their phase inside the command body).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
from typing import Any

import typer

from bundle.commands import stop_reported

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


def _click_class(name: str) -> type[Exception]:
    """click's exception class *name* (``UsageError``, ``ClickException``, ``Abort``), from typer's
    own ``BadParameter`` lineage: typer >= 0.2x vendors click as ``typer._click``, older typer uses click."""
    import typer as _typer  # noqa: PLC0415

    for cls in _typer.BadParameter.__mro__:
        if cls.__name__ == name:
            return cls
    return next(c for c in (_typer.Abort,) if c.__name__ == name)


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def _command_path(ctx: Any) -> str:
    """``rev88 <command>`` for a usage error: its context's path, else (click gives some parse errors,
    e.g. a missing option value, no context) the command named first on the command line."""
    if ctx is not None:
        return str(ctx.command_path)
    first = sys.argv[1] if len(sys.argv) > 1 else ""
    return f"rev88 {first}" if first in {c.name for c in app.registered_commands} else "rev88"


STDOUT_UNWRITABLE_EXIT = 2
"""Exit status when standard output cannot be written (a full disk, ``> /dev/full``): not verify's 1 (FAIL)."""


def _stdout_unwritable() -> bool:
    """Whether standard output refuses writes: what is buffered does not flush, or an empty write fails
    (``/dev/full``). A write error from elsewhere (an archive file on a full disk) leaves it writable."""
    try:
        sys.stdout.flush()
        os.write(sys.stdout.fileno(), b"")
    except (OSError, ValueError):
        return True
    return False


def main() -> None:
    """Console-script entry point for ``rev88`` (through :func:`bundle.entry.main`).

    Standard output that cannot be written (no space left on its device, ``> /dev/full``) is one
    stderr line naming it and exit status :data:`STDOUT_UNWRITABLE_EXIT` (2), not a traceback; what
    was written before is incomplete.

    Command-line mistakes (an unknown option or command, a missing or malformed value) are one
    stderr line and exit 2: ``rev88 <command>: error: <what is wrong> (try 'rev88 <command> --help')``,
    instead of click's usage block in a box; ``rev88`` alone and ``--help`` still print the help.
    Ctrl-C outside a command (while parsing) is one line and exit 130.

    When the reader of the output pipe goes away (``rev88 verify … | head -1``), click exits with status 1,
    which ``rev88 verify`` uses for "something FAILs"; the status is then 141 (128 + SIGPIPE) instead, as a
    process killed by SIGPIPE reports in a shell.
    """
    try:
        try:
            _dispatch()
        finally:  # what is still buffered is written now, where a failure can be reported
            if not sys.stdout.closed:
                sys.stdout.flush()
    except OSError as exc:
        if not _stdout_unwritable():
            raise
        print(f"rev88: error: standard output could not be written ({exc.strerror or exc}): the output is "
              "incomplete; free space where it goes or send it elsewhere", file=sys.stderr)
        with contextlib.suppress(OSError, ValueError):  # nothing more reaches it (no second error at exit)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(STDOUT_UNWRITABLE_EXIT) from None


def _dispatch() -> None:
    usage_error, click_error = _click_class("UsageError"), _click_class("ClickException")
    try:
        code = app(standalone_mode=False, prog_name="rev88")
    except SystemExit as exc:
        # click (vendored as typer._click in typer >= 0.2x) swaps stdout for its PacifyFlushWrapper on EPIPE
        if exc.code == 1 and type(sys.stdout).__name__ == "PacifyFlushWrapper":
            raise SystemExit(128 + signal.SIGPIPE) from None
        raise
    except usage_error as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # `rev88` alone: the help was printed
            raise SystemExit(exc.exit_code) from None
        where = _command_path(getattr(exc, "ctx", None))
        print(f"{where}: error: {_one_line(exc.format_message()).rstrip('.')} (try '{where} --help')",
              file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
    except click_error as exc:
        print(f"rev88: error: {_one_line(exc.format_message())}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
    except (KeyboardInterrupt, _click_class("Abort")):
        print("rev88: interrupted (Ctrl-C)", file=sys.stderr)
        raise SystemExit(130) from None
    if code == 130 and not stop_reported():  # typer's silent status for a Ctrl-C while parsing or printing help
        print("rev88: interrupted (Ctrl-C)", file=sys.stderr)
    raise SystemExit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
