"""The check modules of ``verify/checks/`` import each other without a cycle (lazy imports inside functions included)."""

from __future__ import annotations

import ast

from tests.conftest import REPO_ROOT

CHECKS = REPO_ROOT / "verify" / "checks"


def _imports(path) -> set[str]:
    """The ``verify.checks`` modules *path* imports anywhere in its body."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "verify.checks":
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("verify.checks."):
            out.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[2] for a in node.names if a.name.startswith("verify.checks.")}
    return out


def test_check_modules_form_no_import_cycle():
    graph = {p.stem: _imports(p) for p in CHECKS.glob("*.py")}
    assert graph["run_energy"] and "run_consistency" not in graph["run_energy"]
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        for dep in sorted(graph.get(module, set()) & graph.keys()):
            assert dep not in path, " -> ".join([*path[path.index(dep):], dep])
            if dep not in done:
                visit(dep, [*path, dep])
        done.add(module)

    for module in sorted(graph):
        visit(module, [module])
