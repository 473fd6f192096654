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

from bench import machine

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

#: The tables Django's ``post_migrate`` fills (content types, permissions): kept when a test's database is
#: emptied, since ``post_migrate`` would only make the same rows again (nothing in the suite adds to them).
KEPT_BY_FLUSH = frozenset({"django_content_type", "auth_permission"})


def _flush_by_deleting() -> None:
    """Empty the test database after a ``transaction=True`` test with DELETE instead of TRUNCATE (PostgreSQL).

    pytest-django empties the database after every test that commits (the browser, integration and fault
    tests: about 200 of them) with Django's ``flush``. On PostgreSQL that is one TRUNCATE of every table,
    which makes new files for each table and index, and then ``post_migrate`` makes the content types and
    permissions again: 1.0-1.5 s a test on this machine. Deleting the few rows a test left takes 5-50 ms.
    The foreign keys Django makes are deferred, so the tables empty in any order within flush's
    transaction. A flush that resets sequences still truncates (none in this suite asks for it)."""
    from django.db.backends.postgresql.operations import DatabaseOperations
    truncate = DatabaseOperations.sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences:
            return truncate(self, style, tables, reset_sequences=True, allow_cascade=allow_cascade)
        delete = f"{style.SQL_KEYWORD('DELETE')} {style.SQL_KEYWORD('FROM')}"
        return [f"{delete} {style.SQL_FIELD(self.quote_name(t))};" for t in sorted(tables) if t not in KEPT_BY_FLUSH]
    DatabaseOperations.sql_flush = sql_flush


_flush_by_deleting()


#: The files that take longest (seconds of wall time in a run of ``.ci/run`` on the 2-core machine,
#: 2026-11-28, those over 25 s; the accessibility sweep's measured again on 2026-12-05, after axe was
#: given two views instead of four), which the parallel run starts first. pytest-xdist hands out whole files
#: (``--dist loadfile``) in collection order when told ``--no-loadscope-reorder`` (the Makefile does);
#: by default it hands out the files with the most tests first, and the one-test files of a whole round
#: in the browser (80 s) and the Redis outage (77 s) came last, one process running alone at the end.
LONG_FILES = {
    "tests/contest/test_faults.py": 144,
    "tests/contest/test_demo.py": 85,
    "tests/browser/test_contest_flow.py": 80,
    "tests/contest/test_redis_outage.py": 77,
    "tests/synth/test_empirical_audit.py": 59,
    "tests/scoring/test_interval_coverage.py": 57,
    "tests/browser/test_accessibility.py": 55,
    "tests/browser/test_every_page_policy.py": 54,
    "tests/browser/test_two_rounds.py": 48,
    "tests/contest/test_simulation.py": 47,
    "tests/browser/test_phone.py": 45,
    "tests/contest/test_connection_drops_under_load.py": 40,
    "tests/browser/test_console_messages.py": 34,
    "tests/contest/test_edge.py": 29,
    "tests/contest/test_permissions_urls.py": 29,
    "tests/web/test_system.py": 29,
    "tests/browser/test_accounts.py": 29,
    "tests/contest/test_round_publishing.py": 28,
    "tests/browser/test_upload_failures.py": 28,
    "tests/web/test_leaderboard_csv_is_the_page.py": 28,
    "tests/web/test_second_newcomer.py": 27,
    "tests/browser/test_privacy_preview.py": 26,
    "tests/synth/test_calibrate.py": 26,
    "tests/synth/test_audit.py": 26,
}


def pytest_report_header(config) -> str:
    """The machine's speed as the run begins (bench/machine.py): the suite's time means little without it."""
    return machine.reading()


def pytest_collection_modifyitems(config, items):
    """Put the tests of :data:`LONG_FILES` first, longest file first, the rest in their order (a stable
    sort, the same in every process, as pytest-xdist requires)."""
    def file_of(item) -> str:
        return Path(str(item.fspath)).relative_to(Path(__file__).resolve().parent.parent).as_posix()
    items.sort(key=lambda item: -LONG_FILES.get(file_of(item), 0))


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
def snapshot_base(django_db_setup, django_db_blocker, tmp_path_factory):
    """The tables migrations fill (tests/snapshots.py): what no built state holds. In a pytest-xdist
    worker, the named states are shared with the run's other workers through the folder above this
    worker's temporary folder, which is the run's (pytest removes it with the run's other folders)."""
    from tests import snapshots
    if os.environ.get("PYTEST_XDIST_WORKER"):
        snapshots.share_between_processes(tmp_path_factory.getbasetemp().parent / "states")
    with django_db_blocker.unblock():
        return snapshots.migration_tables()


def demo_state(base):
    """The demo contest of ``make demo`` (round 1 played and published, the final round open with Beta's and
    Gamma's sets) in the current test's database. Built for real (``setup_demo``: two rounds generated, one
    played, about ten seconds) by the first test of the process that asks for it, then laid from its rows
    (tests/snapshots.py) in a fraction of a second. ``base``: the ``snapshot_base`` fixture's value; call it
    from a test or fixture on ``db`` or ``transactional_db``."""
    from contest.services.demo import setup_demo
    from tests import snapshots
    return snapshots.built_once("demo", lambda: setup_demo(log=lambda *a: None), base)


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """PBKDF2 at production strength costs ~0.3 s a user on this machine; tests need no strength. Every
    test hashes the same way, so a password stored by a state built in one test (tests/snapshots.py)
    checks in any other."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _default_language():
    """Each test starts in the site's default language. Django's LocaleMiddleware activates the language of
    each request it serves in the serving thread and leaves it there, so without this a test after one that
    fetched a Japanese page would read Japanese messages, depending on which tests a process ran before."""
    from django.conf import settings
    from django.utils import translation
    translation.activate(settings.LANGUAGE_CODE)
    yield
    translation.activate(settings.LANGUAGE_CODE)


@pytest.fixture(autouse=True)
def _empty_cache():
    """Each test starts with an empty cache (the page cache, the state stamp and the render limits live in it)."""
    from django.core.cache import cache
    cache.clear()
    yield
