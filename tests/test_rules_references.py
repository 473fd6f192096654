"""Every citation of the rules names a part of ``docs/rules.md`` that exists, and history stays out of code.

The code, tests and guides cite the contract as "rules §7" (section 7), "rules §8.4" (item 4 of
section 8) or "rules §§3-5, 12" (several). A citation is only useful to a reader of a clone if the
section is there, so this test reads ``docs/rules.md``'s numbered headings (``## 7. Scores``) and
their numbered items (``4. **Close.**``) and resolves every citation in the repository's text files.
Issue numbers ("issue 23") do not resolve in a clone at all: the commit message is where history
lives, so the shipped code (``contest``, ``scoring``, ``synth``, ``templates``, ``static``) has none.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "docs" / "rules.md"
SKIP_DIRS = {".venv", "var", ".git", ".pytest_cache", "node_modules", "staticfiles", "build", "locale"}
TEXT_SUFFIXES = {".py", ".md", ".html", ".js", ".css", ".yaml", ".yml", ".txt", ".toml", ".cfg", ".ini"}
SHIPPED = ("contest", "scoring", "synth", "templates", "static")

#: "rules §7", "rules §8.4", "rules §§3-5, 12", "rules §8.1, 9, 12": a list of numbers, items and ranges.
CITATION = re.compile(r"\brules §§?((?:\d+(?:\.\d+)?(?:-\d+)?)(?:, (?:\d+(?:\.\d+)?(?:-\d+)?))*)")
#: The old citations of a specification that does not ship with the repository.
OLD_CITATION = re.compile(r"\bSPEC\b")
ISSUE_NUMBER = re.compile(r"\bissues? #?\d+", re.IGNORECASE)


def _text_files(under: tuple[str, ...] | None = None) -> list[Path]:
    roots = [ROOT / name for name in under] if under else [ROOT]
    files = []
    for root in roots:
        paths = [root] if root.is_file() else root.rglob("*")
        files += [p for p in paths if p.is_file() and p.suffix in TEXT_SUFFIXES
                  and not SKIP_DIRS & set(p.relative_to(ROOT).parts)]
    return sorted(files)


def rules_parts() -> set[str]:
    """The citable parts of docs/rules.md: {"7", "8", "8.1", ..., "8.6", "9.1", ...}."""
    parts: set[str] = set()
    section = None
    for line in RULES.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"## (\d+)\. ", line)
        if heading:
            section = heading.group(1)
            parts.add(section)
        elif line.startswith("## "):
            section = None
        elif section and (item := re.match(r"(\d+)\. ", line)):
            parts.add(f"{section}.{item.group(1)}")
    return parts


def cited_parts(text: str) -> list[str]:
    """Every part a text cites, ranges unfolded: "rules §§3-5, 8.2" gives ["3", "4", "5", "8.2"]."""
    out = []
    for match in CITATION.finditer(text):
        for piece in match.group(1).split(", "):
            if "-" in piece:
                first, last = piece.split("-")
                out += [str(n) for n in range(int(first), int(last) + 1)]
            else:
                out.append(piece)
    return out


def test_the_rules_are_numbered_sections_with_numbered_steps():
    parts = rules_parts()
    assert {str(n) for n in range(1, 16)} <= parts
    assert {"8.1", "8.6", "9.1", "9.5"} <= parts


def test_every_citation_of_the_rules_names_a_part_that_exists():
    parts = rules_parts()
    citations = [(path.relative_to(ROOT).as_posix(), part)
                 for path in _text_files() if path != Path(__file__)
                 for part in cited_parts(path.read_text(encoding="utf-8"))]
    assert len(citations) > 100, "the code cites the rules; finding almost none means the pattern broke"
    unresolved = [f"{path}: rules §{part}" for path, part in citations if part not in parts]
    assert not unresolved, "citations of sections docs/rules.md does not have:\n" + "\n".join(unresolved)


def test_a_citation_of_a_missing_section_is_found():
    assert cited_parts("see rules §§3-5, 8.2 and rules §16") == ["3", "4", "5", "8.2", "16"]
    assert "16" not in rules_parts() and "8.9" not in rules_parts()


def test_no_citation_of_the_old_specification_is_left():
    found = [f"{p.relative_to(ROOT)}:{n}" for p in _text_files() if p != Path(__file__)
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if OLD_CITATION.search(line)]
    assert not found, "cite docs/rules.md (rules §n) instead of SPEC:\n" + "\n".join(found)


def test_the_shipped_code_names_no_issue_numbers():
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()[:100]}" for p in _text_files(SHIPPED)
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if ISSUE_NUMBER.search(line)]
    assert not found, "issue numbers belong in commit messages, not in code:\n" + "\n".join(found)
