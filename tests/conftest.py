"""Shared fixtures. The 2019 public data is read in place from ../shared (never copied)."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PWSCUP2019 = ROOT.parent / "shared" / "data" / "pwscup2019"


@pytest.fixture(scope="session")
def pwscup2019() -> Path:
    """Path of the public PWS Cup 2019 data; skips the test where it is absent."""
    if not (PWSCUP2019 / "README.md").exists():
        pytest.skip(f"PWS Cup 2019 public data not found at {PWSCUP2019} "
                    "(it lives in ../shared/data/pwscup2019 beside the project)")
    return PWSCUP2019


@pytest.fixture(scope="session")
def osaka_grid(pwscup2019):
    from scoring.grid import Grid
    return Grid.from_info_region(pwscup2019 / "osaka" / "info_region.csv")


@pytest.fixture(scope="session")
def snapshot_base(django_db_setup, django_db_blocker):
    """The test database's tables as migrations left them (tests/snapshots.py): what no built state holds."""
    from tests import snapshots
    with django_db_blocker.unblock():
        return snapshots.base_marks()


@pytest.fixture(autouse=True)
def _empty_cache():
    """Each test starts with an empty cache (the results pages cache their tables in it)."""
    from django.core.cache import cache
    cache.clear()
    yield


@pytest.fixture(autouse=True)
def _bundle_dir(settings, tmp_path_factory):
    """Built bundles (attack material, exports) go to a folder of each test's own."""
    settings.TRACECUP_BUNDLE_DIR = tmp_path_factory.mktemp("bundles")
