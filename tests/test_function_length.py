"""No function or method of the platform, the judge or the synthesizers is longer than 80 lines (docstring
included): a newcomer reads one on one screen. Migrations, made by Django, are not counted."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 80


def too_long(package: str, root: Path = ROOT) -> list[str]:
    """``path:line name (n lines)`` of every function of ``package`` (below ``root``) over :data:`LIMIT` lines."""
    found = []
    for path in sorted((root / package).rglob("*.py")):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > LIMIT:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines} lines)")
    return found


@pytest.mark.parametrize("package", ["contest", "scoring", "synth"])
def test_no_function_is_over_80_lines(package):
    assert not too_long(package), too_long(package)


def test_the_check_sees_a_long_function(tmp_path):
    (tmp_path / "pkg").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    (tmp_path / "pkg" / "m.py").write_text(f"def long():\n{body}\n\n\ndef short():\n    return 1\n")
    assert too_long("pkg", tmp_path) == ["pkg/m.py:1 long (81 lines)"]
