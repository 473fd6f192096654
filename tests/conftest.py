"""Shared fixtures. The 2019 public data is read in place from ../shared (never copied).

``make test`` runs the suite in parallel processes (pytest-xdist, the Makefile's ``PARALLEL``). Each has its own test
database (pytest-django names it ``test_<name>_gw<N>``) and, set here before any test runs, its own
Redis database for the broker and a Redis cache: the tests' real Celery workers purge and consume
their broker queues, and every test clears the cache, which must not reach another process's test.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PWSCUP2019 = ROOT.parent / "shared" / "data" / "pwscup2019"


def redis_database_of_worker(url: str, worker: str) -> str:
    """``url`` with its Redis database number moved by the xdist worker's number (``gw1``: +1,
    modulo Redis's 16 databases); any other URL unchanged."""
    match = re.fullmatch(r"(rediss?://[^/]*)(?:/(\d+))?(\?.*)?", url)
    if not match or not worker.startswith("gw"):
        return url
    number = (int(match.group(2) or 0) + int(worker[2:])) % 16
    return f"{match.group(1)}/{number}{match.group(3) or ''}"


def _services_of_this_worker() -> None:
    """Point this xdist worker's broker and Redis cache at databases of its own (see the docstring)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker:
        return
    from django.conf import settings

    from contest.celery import app
    broker = redis_database_of_worker(settings.CELERY_BROKER_URL, worker)
    settings.CELERY_BROKER_URL = os.environ["CELERY_BROKER_URL"] = app.conf.broker_url = broker
    cache = settings.CACHES["default"]
    if "redis" in cache["BACKEND"].lower() and isinstance(cache.get("LOCATION"), str):
        cache["LOCATION"] = redis_database_of_worker(cache["LOCATION"], worker)
        if os.environ.get("CACHE_URL"):
            os.environ["CACHE_URL"] = redis_database_of_worker(os.environ["CACHE_URL"], worker)


_services_of_this_worker()


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
    """The tables migrations fill (tests/snapshots.py): what no built state holds."""
    from tests import snapshots
    with django_db_blocker.unblock():
        return snapshots.migration_tables()


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """PBKDF2 at production strength costs ~0.3 s a user on this machine; tests need no strength. Every
    test hashes the same way, so a password stored by a state built in one test (tests/snapshots.py)
    checks in any other."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _empty_cache():
    """Each test starts with an empty cache (the page cache, the state stamp and the render limits live in it)."""
    from django.core.cache import cache
    cache.clear()
    yield
