"""The quick subset's list (tests/quick.py) names tests that exist, and its module check can fail."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.quick import QUICK, REPO_ROOT, is_quick, missing_modules, project_modules, quick_files


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.startswith("test")}


def test_every_entry_names_an_existing_test() -> None:
    for entry in QUICK:
        file, _, name = entry.partition("::")
        path = REPO_ROOT / file
        assert path.is_file(), f"{entry}: no such test file"
        names = _test_names(path)
        assert names, f"{entry}: the file holds no test"
        if name:
            assert any(n.startswith(name) for n in names), f"{entry}: no test of that name in {file}"


def test_entries_select_by_prefix() -> None:
    assert is_quick("tests/bundle/test_archive.py::test_anything[param]")
    assert is_quick("tests/bundle/test_boards.py::test_select_refuses_in_one_line[4-available1-has 3 board]")
    assert not is_quick("tests/bundle/test_boards.py::test_qualification_places_draw_i_on_board_i_mod_b")
    assert not is_quick("tests/bundle/test_archive_other.py::test_x")
    assert quick_files()[0] == QUICK[0].split("::")[0] and len(set(quick_files())) == len(quick_files())


def test_the_module_check_names_what_no_quick_test_imported() -> None:
    modules = project_modules()
    assert {"bundle", "bundle.cli", "bundle.commands.verify", "bundle.phases.reproduce", "verify.checks.run",
            "verify.render"} <= set(modules)
    assert len(modules) == len(set(modules)) == sum(1 for p in ("bundle", "verify", "protocol")
                                                   for _ in (REPO_ROOT / p).rglob("*.py"))
    assert missing_modules(modules) == []
    assert missing_modules([m for m in modules if m != "verify.render"]) == ["verify.render"]
