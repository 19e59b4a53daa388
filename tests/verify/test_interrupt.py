"""Ctrl-C during ``rev88 verify``: one line, exit 130, nothing from the report-reader workers.

A terminal sends SIGINT to the whole foreground process group, workers included. The test does
the same (its own session, ``killpg``) once the verifier has started its worker processes, and
never depends on how fast anything runs: it waits for the workers to exist, then signals.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
ARCHIVE = REPO_ROOT / "evidence" / "h200-fused-cuda-20261205"  # holds stored .ncu-rep reports
SAFETY_S = 600.0
"""Only against a hang: reaching it means the verifier never started its workers or never ended."""


def _processes() -> list[tuple[int, int, int, str]]:
    """(pid, parent pid, process group, command line) of every process this user can read."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended meanwhile
            continue
        fields = stat.rsplit(")", 1)[1].split()
        out.append((int(entry), int(fields[1]), int(fields[2]), cmdline))
    return out


def _workers(pgid: int) -> list[int]:
    return [pid for pid, _, group, cmdline in _processes() if group == pgid and "spawn_main" in cmdline]


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads the process table from /proc (Linux)")
def test_ctrl_c_is_one_line_and_exit_130_without_worker_tracebacks() -> None:
    pytest.importorskip("ncu_report")  # without NVIDIA's reader no worker starts
    proc = subprocess.Popen([sys.executable, "-c", "from bundle.cli import main; main()", "verify", str(ARCHIVE)],
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + SAFETY_S
        while not _workers(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None and _workers(proc.pid), "the verifier ended or never started its report readers"
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        out, err = proc.communicate(timeout=SAFETY_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and "Fatal Python error" not in err and "KeyboardInterrupt" not in err, err
    assert err.splitlines() == ["rev88: interrupted (Ctrl-C)"], err
    assert out == ""  # no summary that looks complete
    assert not _workers(proc.pid)  # the workers were stopped, not left reading
