"""Shared test configuration: markers, the repository root, and GPU/docker skips."""

from __future__ import annotations

import copy
import importlib.util
import os
import shutil
import subprocess
import sys
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_MNIST = REPO_ROOT / "data" / "mnist"
ORIGINAL_ARCHIVE = REPO_ROOT / "evidence" / "rev88-original"
H200_ARCHIVE = REPO_ROOT / "evidence" / "h200-20261202"
RECORDED = Path(__file__).resolve().parent / "recorded"


def _cuda_available() -> bool:
    try:
        import torch  # noqa: PLC0415
    except Exception:
        return False
    return bool(torch.cuda.is_available())


def _dockerd_available() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=15).returncode == 0
    except Exception:
        return False


def _slurm_available() -> bool:
    if shutil.which("sinfo") is None:
        return False
    try:
        return subprocess.run(["sinfo", "--noheader"], capture_output=True, timeout=15).returncode == 0
    except Exception:
        return False


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects: the ``quick`` marker must be there
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the quick subset ``quick`` (:data:`tests.quick.QUICK`); skip ``gpu`` tests without CUDA,
    ``docker`` tests without a running dockerd and ``slurm`` tests without a Slurm controller
    (unless REV88_REQUIRE_DOCKER / REV88_REQUIRE_SLURM is 1)."""
    from tests.quick import is_quick  # noqa: PLC0415

    for item in items:
        if is_quick(item.nodeid) and "slow" not in item.keywords:
            item.add_marker(pytest.mark.quick)
    need_gpu = any("gpu" in item.keywords for item in items)
    need_docker = any("docker" in item.keywords for item in items)
    need_slurm = any("slurm" in item.keywords for item in items)
    has_gpu = _cuda_available() if need_gpu else False
    has_docker = _dockerd_available() if need_docker else False
    has_slurm = _slurm_available() if need_slurm else False
    require_docker = os.environ.get("REV88_REQUIRE_DOCKER") == "1"
    require_slurm = os.environ.get("REV88_REQUIRE_SLURM") == "1"
    for item in items:
        if "gpu" in item.keywords and not has_gpu:
            item.add_marker(pytest.mark.skip(reason="needs an NVIDIA GPU (run on the device)"))
        if "docker" in item.keywords and not has_docker and not require_docker:
            item.add_marker(pytest.mark.skip(reason="needs a running dockerd (.ci/run starts one)"))
        if "slurm" in item.keywords and not has_slurm and not require_slurm:
            item.add_marker(pytest.mark.skip(reason="needs a Slurm controller (.ci/run starts one)"))


def _quick_run(config: pytest.Config) -> bool:
    return (config.getoption("markexpr", "") or "").strip() == "quick"


_IMPORTED = pytest.StashKey[set]()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """pytest-xdist controller: gather the project modules each worker imported (quick runs)."""
    if _quick_run(node.config):
        node.config.stash.setdefault(_IMPORTED, set()).update(node.workeroutput.get("rev88_modules", ()))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After ``-m quick``: fail when a module of ``bundle/`` or ``verify/`` was imported by no quick test
    (:func:`tests.quick.missing_modules`; an xdist worker hands its modules to the controller)."""
    if not _quick_run(session.config):
        return
    from tests.quick import collects_only_quick_files, imported_project_modules, missing_modules  # noqa: PLC0415

    if hasattr(session.config, "workeroutput"):  # an xdist worker
        session.config.workeroutput["rev88_modules"] = imported_project_modules()
        return
    imported = session.config.stash.get(_IMPORTED, set()) | set(imported_project_modules())
    missing = missing_modules(imported)
    if not collects_only_quick_files(session.config.args, session.config.invocation_params.dir):
        line = ("quick subset: modules not checked (other test files were collected too; `make test-quick` "
                "collects only the quick files)")
    elif missing:
        line = f"quick subset: no quick test imported {', '.join(missing)}: add a test of it to tests/quick.py"
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    else:
        line = "quick subset: every module of bundle/ and verify/ was imported by a quick test"
    session.config.stash[_QUICK_LINE] = line


_QUICK_LINE = pytest.StashKey[str]()


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """Print the quick subset's module check (:func:`pytest_sessionfinish`) in the summary."""
    if _QUICK_LINE in config.stash:
        terminalreporter.write_line(config.stash[_QUICK_LINE])


class _ReportReadsOncePerContent:
    """Stands in for :mod:`verify.ncu_reports`' process pool in the tests. A read of the same stored file (its
    ``lstat``: device, inode, size, modification time; a hard-linked copy of an archive keeps them) with the same
    expected content (sha256 and size, as the manifest records) as a read that succeeded earlier in this test
    session gives that read again, with ``seconds`` 0. Any other read goes to a real pool of spawned workers, as
    in the product, so a report changed, swapped or truncated after integrity, a forged report (its content and
    manifest entry change) and a missing ``ncu_report`` are read for real. Loading one task-scope report costs
    ~9 s of CPU, and many tests verify the same archives with one record forged."""

    done: dict[tuple, dict] = {}

    def __init__(self, max_workers: int, mp_context, **options) -> None:
        self._args = {"max_workers": max_workers, "mp_context": mp_context, **options}  # options: initializer
        self._pool: ProcessPoolExecutor | None = None

    def submit(self, fn, root: str, rel: str, content_sha256: str, content_size_bytes: int) -> Future:
        try:
            st = os.lstat(Path(root) / rel)
            key = (fn, content_sha256, content_size_bytes, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            key = None   # no file to read: the worker says so
        if key in self.done:
            future: Future = Future()
            future.set_result({**copy.deepcopy(self.done[key]), "seconds": 0.0})
            return future
        if self._pool is None:
            self._pool = ProcessPoolExecutor(**self._args)
        future = self._pool.submit(fn, root, rel, content_sha256, content_size_bytes)

        def keep(f: Future) -> None:
            if key is not None and not f.cancelled() and f.exception() is None and f.result().get("status") == "read":
                self.done[key] = copy.deepcopy(f.result())
        future.add_done_callback(keep)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)
            self._pool = None


@pytest.fixture(scope="session", autouse=True)
def _report_reads_once_per_content():
    """The verifier runs of the tests read a stored ``.ncu-rep`` file of given content once per session, that
    is once per pytest-xdist worker under ``make test`` (see
    :class:`_ReportReadsOncePerContent`); ``rev88 verify`` run as a subprocess is not affected."""
    from verify import ncu_reports  # noqa: PLC0415

    saved = ncu_reports.ProcessPoolExecutor
    ncu_reports.ProcessPoolExecutor = _ReportReadsOncePerContent
    yield
    ncu_reports.ProcessPoolExecutor = saved


@pytest.fixture(autouse=True)
def _no_fused_variables_from_the_shell(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """CPU tests start without the host's ``REV88_FUSED_*`` variables (a shell's leftovers would change what
    the phases refuse); GPU tests (marker ``gpu``) keep them, since device runs may set them on purpose."""
    if request.node.get_closest_marker("gpu") is None:
        for name in [n for n in os.environ if n.startswith("REV88_FUSED_")]:
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root."""
    return REPO_ROOT


@pytest.fixture
def hidden_ncu_report(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``import ncu_report`` fail, as on a machine without the ``ncu`` extra."""
    monkeypatch.setitem(sys.modules, "ncu_report", None)


def linked_copy(src: Path, tmp_path: Path, name: str | None = None) -> Path:
    """A copy of the archive *src* under *tmp_path* made of hard links (cheap; tests replace files, never write through)."""
    dest = tmp_path / (name or src.name)
    shutil.copytree(src, dest, copy_function=_link_or_copy)
    return dest


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system (the read-only checkout mounted into a container): copy
        shutil.copy2(src, dst)


NOT_THE_WRITERS_NUMPY = "is not the writer's"
"""Reason fragment of the .npz byte checks when the verifying host's numpy/Python differ from the writer's."""


def npz_bytes_unavailable(r) -> bool:
    """True for an UNAVAILABLE .npz-container byte check on a host whose numpy/Python are not the writer's."""
    return (r.check_id in ("consistency.input_archive_sha256", "consistency.dropped_input")
            and r.status.value == "UNAVAILABLE" and NOT_THE_WRITERS_NUMPY in r.reason)


def load_script(name: str) -> ModuleType:
    """Import ``scripts/<name>.py`` as module *name* (the scripts folder is not a package)."""
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


def check_statuses(path: Path) -> dict[str, set[str]]:
    """check id -> the set of statuses (``"PASS"``, ``"FAIL"``, ``"UNAVAILABLE"``) ``verify_archive(path)`` gave it."""
    from verify.registry import verify_archive  # noqa: PLC0415 - conftest stays import-light

    out: dict[str, set[str]] = {}
    for r in verify_archive(path).results:
        out.setdefault(r.check_id, set()).add(r.status.value)
    return out


def one_line_error(res, *needles: str) -> str:
    """The one stderr line of a refused ``CliRunner`` invocation: exit 2, ``rev88: error: ``, no traceback.

    Returns:
        The line, after checking that it contains each of *needles*.
    """
    assert res.exit_code == 2, (res.exit_code, res.output)
    err = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("rev88: error: "), res.stderr
    assert "Traceback" not in res.output
    for needle in needles:
        assert needle in err[0], (needle, err[0])
    return err[0]


def forge_record(root: Path, rel: str, change) -> None:
    """Rewrite the gz JSON record *rel* of run archive *root* with ``change(record)``, then rebuild the manifest.

    The hashes match again afterwards, so integrity passes and only the record's content is wrong.
    """
    from bundle import archive  # noqa: PLC0415 - conftest stays import-light

    rec = archive.read_json_gz(root / rel)
    change(rec)
    (root / rel).unlink()  # break the hard link
    archive.write_json_gz(root / rel, rec)
    (root / "manifest.json").unlink()
    archive.RunArchive(root).write_manifest()


class ProcessInfo(NamedTuple):
    """One process of :func:`processes` (from ``/proc/<pid>/status`` and ``cmdline``)."""

    pid: int
    ppid: int
    pgid: int
    state: str
    cmdline: str
    sigkill_pending: bool

    @property
    def stopped(self) -> bool:
        """Dead (a zombie) or killed: a SIGKILL is pending (on a loaded machine a killed process may not
        have died yet; it is stopped all the same). Needs no waiting, so no timing."""
        return self.state in ("Z", "X") or self.sigkill_pending


def processes(naming: str = "") -> list[ProcessInfo]:
    """The processes (Linux ``/proc``) whose command line contains *naming*, this test process aside."""
    import signal  # noqa: PLC0415

    sigkill = 1 << (signal.SIGKILL - 1)
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            status = dict(line.split(":", 1) for line in (entry / "status").read_text().splitlines() if ":" in line)
        except OSError:  # ended meanwhile
            continue
        if naming in cmdline:
            pending = any(int(status.get(key, "0").strip(), 16) & sigkill for key in ("SigPnd", "ShdPnd"))
            out.append(ProcessInfo(int(entry.name), int(stat[1]), int(stat[2]), stat[0], cmdline, pending))
    return out


def interrupted_when(ready, run, timeout_s: float = 600.0) -> float:
    """Call *run* () and deliver Ctrl-C (KeyboardInterrupt, through SIGALRM to the main thread)
    once *ready* () is true (polled from a thread, at most *timeout_s* s); *run* must raise it.

    Returns the seconds from the interrupt to *run*'s raise (what an interrupted phase spent
    stopping its jobs; for a report, never for a pass/fail bound). Fails the test when *run*
    returns or raises something else, or when *ready* never became true (*timeout_s* only stops
    a hang: the interrupt is then sent anyway, and the test fails on behaviour, not speed).
    """
    import signal  # noqa: PLC0415
    import threading  # noqa: PLC0415
    import time  # noqa: PLC0415

    sent: list[float] = []
    became_ready: list[bool] = []

    def watch() -> None:
        deadline = time.monotonic() + timeout_s
        while not (held := bool(ready())) and time.monotonic() < deadline:
            time.sleep(0.1)
        became_ready.append(held)
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGALRM)

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    threading.Thread(target=watch, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run()
        assert became_ready == [True], f"the condition to interrupt on never held within {timeout_s} s"
        return time.monotonic() - sent[0]
    finally:
        signal.signal(signal.SIGALRM, previous)
