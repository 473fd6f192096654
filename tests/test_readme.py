"""The README a newcomer reads points only inside the clone: its links resolve, and neither it nor the
project's own documents (docs/) send the reader to ../shared, which a clone does not have."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_links_resolve_inside_the_repository():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)", text)
    assert "docs/rules.md" in targets and "docs/design.md" in targets and "docs/benchmarks.md" in targets
    missing = [t for t in targets if not t.startswith("http") and not (ROOT / t).exists()]
    assert not missing, missing


def test_no_document_points_outside_the_clone():
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        assert "../shared" not in doc.read_text(encoding="utf-8"), doc


def test_the_readme_starts_with_the_commands_and_where_things_are():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    head = text[:text.index("## ")]
    assert "make demo" in head and "make test" in head and "make check" in head
    assert "## Where things are" in text and "## Tests" in text
    assert "| judge (`python -m bench.judge`)" not in text  # figures live in docs/benchmarks.md


def test_the_readme_is_short_and_links_every_guide():
    """The README is what a person reads first: under 200 lines, the reference in the guides of docs/,
    each of which it links (a new guide nobody can find from the README fails here)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200, len(text.splitlines())
    targets = set(re.findall(r"\]\(([^)#\s]+)", text))
    guides = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")}
    assert {"docs/organizer.md", "docs/team.md", "docs/operator.md", "docs/api.md"} <= guides
    assert not guides - targets, sorted(guides - targets)
