"""The import layers of pyproject.toml's [tool.importlinter] contracts, checked with ``lint-imports``.

protocol/ imports neither bundle/ nor verify/; verify/ never imports bundle/; only bundle.commands.verify
(the command-line layer) imports verify/; protocol/ and verify/ never import torch. The tree must keep
every contract, and an import planted against each one must break it (so the contracts are live). The
contracts see import statements only; verifying an archive must not load the writer or torch at run time either.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT = shutil.which("lint-imports", path=str(Path(sys.executable).parent))

needs_lint = pytest.mark.skipif(LINT is None, reason="import-linter is not installed (the test extra has it)")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([LINT, "--no-cache", "--config", str(root / "pyproject.toml")], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


@needs_lint
def test_the_tree_keeps_every_contract():
    result = _lint(REPO)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


@needs_lint
@pytest.mark.parametrize(("module", "planted", "edge"), [
    ("verify/checks/run.py", "import bundle.archive", "verify.checks.run -> bundle.archive"),
    ("protocol/data.py", "import verify.records", "protocol.data -> verify.records"),
    ("bundle/archive.py", "import verify.records", "bundle.archive -> verify.records"),
    ("verify/records.py", "import torch", "verify.records -> torch"),
])
def test_a_planted_import_breaks_its_contract(tmp_path, module, planted, edge):
    for package in ("protocol", "bundle", "verify"):
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n{planted}  # planted by the test\n")
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert edge in result.stdout, result.stdout[-3000:]


def test_verifying_an_archive_loads_neither_the_writer_nor_torch():
    code = ("import sys\nfrom pathlib import Path\nfrom verify.registry import verify_archives\n"
            "(report,) = verify_archives([Path('evidence/pinned-cpu-20261201')], workers=1)\n"
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('bundle', 'torch'))\n"
            "assert report.results and not loaded, loaded\n")
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=300)
