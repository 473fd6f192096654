"""The parallel run's schedule: the long files named in tests/conftest.py exist, and they are put first."""
from pathlib import Path
from types import SimpleNamespace

from tests.conftest import LONG_FILES, pytest_collection_modifyitems

ROOT = Path(__file__).resolve().parent.parent


def test_every_long_file_exists():
    """A renamed or deleted long file would silently go back to its place in the order."""
    assert [name for name in LONG_FILES if not (ROOT / name).is_file()] == []


def test_the_long_files_go_first_longest_first_and_the_rest_keep_their_order():
    names = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py"))
    items = [SimpleNamespace(fspath=ROOT / name, n=n) for name in names for n in range(2)]
    pytest_collection_modifyitems(None, items)
    order = [Path(str(i.fspath)).relative_to(ROOT).as_posix() for i in items]
    longest_first = sorted(LONG_FILES, key=lambda n: (-LONG_FILES[n], names.index(n)))  # ties: collected order
    assert order[:2 * len(LONG_FILES)] == [name for name in longest_first for _ in range(2)]
    assert order[2 * len(LONG_FILES):] == [name for name in names if name not in LONG_FILES for _ in range(2)]
    assert [i.n for i in items[:2]] == [0, 1]  # a file's own tests stay in order
