"""The project's documents name files and modules that exist.

A README that points a newcomer at ``access.py`` when there is none costs them an hour. Every
backquoted file name (``*.py``, ``*.html``, ``*.yaml``, ...) in the project's Markdown must be a
file of the repository, and every backquoted dotted name under ``bench``, ``contest``, ``scoring`` or
``synth`` must import (a module, or an attribute of one).
"""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SKIP_DIRS = {".venv", "var", ".git", ".pytest_cache", "node_modules", "staticfiles", "build"}
#: File names of the official 2019 programs (pwscup/dp-locationdata), which documents cite as the
#: source of a figure; they are not files of this repository.
OFFICIAL_2019_PROGRAMS = {"A1-none.py", "I3-HomeProb.py", "EvalUtilPriv.py"}
FILE_NAME = re.compile(r"[\w./-]+\.(?:py|html|js|css|ya?ml|lua|toml|txt|sh)")
DOTTED = re.compile(r"((?:bench|contest|scoring|synth)(?:\.\w+)+)(?:\(\))?")


def _project_files() -> list[str]:
    return [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*")
            if p.is_file() and not SKIP_DIRS & set(p.relative_to(ROOT).parts)]


def _documents() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.md") if not SKIP_DIRS & set(p.relative_to(ROOT).parts))


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


def _missing(document: Path, files: list[str]) -> list[str]:
    out = []
    for token in re.findall(r"`([^`\s]+)`", document.read_text()):
        token = token.strip("()")
        if FILE_NAME.fullmatch(token) and not token.startswith("../") and token not in OFFICIAL_2019_PROGRAMS:
            if not any(f == token or f.endswith("/" + token) for f in files):
                out.append(token)
        elif DOTTED.fullmatch(token) and not _resolves(DOTTED.fullmatch(token).group(1)):
            out.append(token)
    return out


@pytest.mark.parametrize("document", _documents(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_documents_name_files_and_modules_that_exist(document):
    assert not _missing(document, _project_files()), f"{document.relative_to(ROOT)} names what does not exist"


def test_the_check_finds_a_missing_file(tmp_path):
    doc = tmp_path / "README.md"
    doc.write_text("See `contest/access.py`, `contest.services.nowhere` and `contest/permissions.py`.")
    assert _missing(doc, _project_files()) == ["contest/access.py", "contest.services.nowhere"]
