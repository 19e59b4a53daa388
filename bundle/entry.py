"""The ``rev88`` console script's entry point: Ctrl-C at any moment is one line and exit status 130.

``bundle.cli`` imports typer, rich and every command module and builds the commands when it is
imported (a few tenths of a second); a Ctrl-C then arrives before :func:`bundle.cli.main`'s own
handling. This module imports nothing but :mod:`sys` and imports :mod:`bundle.cli` inside the
handler, so the interrupt is caught there too.
"""

from __future__ import annotations

import sys

INTERRUPTED = "rev88: interrupted (Ctrl-C)"
"""The one stderr line of an interrupted command (also :func:`bundle.cli.main`'s)."""


def main() -> None:
    """Import and run :func:`bundle.cli.main`; a Ctrl-C while importing or building the commands prints
    :data:`INTERRUPTED` and exits 130 instead of a ``KeyboardInterrupt`` traceback.

    Raises:
        SystemExit: always (the command's exit status; 130 after Ctrl-C).
    """
    try:
        from bundle.cli import main as cli_main  # noqa: PLC0415  (imports typer and every command module)

        cli_main()
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        raise SystemExit(130) from None


if __name__ == "__main__":  # pragma: no cover
    main()
