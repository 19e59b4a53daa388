"""The ``rev88`` console script as a user starts it: Ctrl-C while it starts, and a standard output that cannot be
written (``> /dev/full``). Each test runs the entry point that ``pyproject.toml``'s ``[project.scripts]`` names,
the way the generated script does (``sys.exit(main())``), in a fresh interpreter.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest

from bundle.entry import INTERRUPTED
from tests.conftest import REPO_ROOT

PINNED_CPU = REPO_ROOT / "evidence" / "pinned-cpu-20261201"


def _script() -> str:
    """The console script's body for the entry point pyproject names (``module:function``)."""
    target = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]["rev88"]
    module, func = target.split(":")
    return f"import sys\nfrom {module} import {func}\nsys.exit({func}())\n"


# Sends SIGINT to this process at the first import statement naming the module in argv[1], then runs the script:
# typer (bundle.cli's first import), protocol.errors (bundle.commands' imports), bundle.commands (the first command
# module registering itself on the app), rich (typer's help printing: typer turns that interrupt into a silent exit
# 130). A hook that never fired would leave the command to finish (exit 0).
HOOK = """
import builtins, os, signal, sys
trigger = sys.argv.pop(1)
real_import = builtins.__import__
def hooked(name, *args, **kwargs):
    if name == trigger:
        builtins.__import__ = real_import
        os.kill(os.getpid(), signal.SIGINT)
    return real_import(name, *args, **kwargs)
builtins.__import__ = hooked
"""


@pytest.mark.parametrize("trigger", ["typer", "protocol.errors", "bundle.commands", "rich"])
def test_ctrl_c_while_the_commands_are_imported_is_one_line_and_130(trigger: str) -> None:
    proc = subprocess.run([sys.executable, "-c", HOOK + _script(), trigger, "verify", "--help"], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr and "KeyboardInterrupt" not in proc.stderr, proc.stderr
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert proc.stderr.strip() == INTERRUPTED


def test_a_full_standard_output_is_one_line_and_its_own_status() -> None:
    with open("/dev/full", "w", encoding="utf-8") as full:
        proc = subprocess.run([sys.executable, "-c", _script(), "verify", str(PINNED_CPU)], cwd=REPO_ROOT,
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=600)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("rev88: error: standard output could not be written"), lines
    assert "No space left on device" in lines[0]
