"""Back up and restore (contest.services.backup, ``manage.py backup`` / ``restore``), and the drill.

The drill plays a small contest, backs the database up, restores the backup into a fresh database
(PostgreSQL: a database this test creates; SQLite: a new file) and finds every page's HTML and every
stored file's SHA-256 identical in both.
"""
from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, connections
from django.test import Client

from contest.models import StoredFile
from contest.services import backup, storage
from contest.services.setup import create_contest
from tests.contest.conftest import contest_spec, upload_all_and_close, user

#: Who sees which pages in the drill: nobody (public pages), a team member, the organizer.
PAGES = {
    None: ["/", "/c/{slug}/", "/c/{slug}/rules/", "/c/{slug}/leaderboard/", "/c/{slug}/attack-matrix/",
           "/c/{slug}/awards/", "/c/{slug}/plots/", "/c/{slug}/analyses/"],
    "alpha1": ["/c/{slug}/team/", "/account/"],
    "judge": ["/console/", "/console/{slug}/", "/console/{slug}/jobs/"],
}


#: What a page draws anew at every request, blanked before pages are compared: the CSRF token, and the
#: random seed the console's new-contest form offers.
FRESH_EACH_TIME = re.compile(r'((?:name="csrfmiddlewaretoken"|name="(?:initial-)?c-seed") value=")[^"]+')


def _pages(slug: str) -> dict[str, str]:
    """Every page of :data:`PAGES` rendered against the current database, by viewer and address, with
    :data:`FRESH_EACH_TIME` blanked."""
    cache.clear()
    out = {}
    for viewer, urls in PAGES.items():
        client = Client()
        if viewer is not None:
            client.force_login(user(viewer))
        for url in urls:
            r = client.get(url.format(slug=slug))
            assert r.status_code == 200, (viewer, url, r.status_code)
            html = r.content.decode()
            out[f"{viewer} {url}"] = FRESH_EACH_TIME.sub(r"\1", html)
    return out


def _files() -> dict[int, str]:
    """Every stored file's SHA-256, computed from its content (read a chunk at a time)."""
    sums = {}
    for stored in StoredFile.objects.order_by("pk"):
        h = hashlib.sha256()
        for block in storage.iter_bytes(stored):
            h.update(block)
        sums[stored.pk] = h.hexdigest()
    return sums


class _FreshDatabase:
    """A new, empty database of the configured engine, made the default connection's for a while."""

    def __init__(self, tmp_path):
        self.old = connection.settings_dict["NAME"]
        self.postgres = connection.vendor == "postgresql"
        self.name = f"{self.old}_restored" if self.postgres else str(tmp_path / "restored.sqlite3")

    def __enter__(self):
        if self.postgres:
            with connection.cursor() as cursor:
                cursor.execute(f'DROP DATABASE IF EXISTS "{self.name}"')
                cursor.execute(f'CREATE DATABASE "{self.name}"')
        connections.close_all()
        connection.settings_dict["NAME"] = self.name
        return self

    def __exit__(self, *exc):
        connections.close_all()
        connection.settings_dict["NAME"] = self.old
        if self.postgres:
            with connection.cursor() as cursor:
                cursor.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_restore_drill_gives_every_page_and_every_file_back(tmp_path, django_capture_on_commit_callbacks):
    contest = create_contest(contest_spec(slug="drill"))
    from contest.services import generation
    generation.generate_round_data(contest.rounds.get())
    upload_all_and_close(contest, dict.fromkeys((1, 2, 3), ("A1-none", {})), django_capture_on_commit_callbacks)
    before_pages, before_files = _pages("drill"), _files()
    assert len(before_files) > 20

    call_command("backup", folder=str(tmp_path / "backups"))
    [made] = backup.backups(tmp_path / "backups")
    with pytest.raises(CommandError, match="holds data"):  # the played database is not replaced unasked
        call_command("restore", str(made))

    with _FreshDatabase(tmp_path):
        call_command("restore", str(made))
        after_pages, after_files = _pages("drill"), _files()
    assert after_files == before_files
    assert after_pages.keys() == before_pages.keys()
    for key, html in before_pages.items():
        assert after_pages[key] == html, key


@pytest.mark.django_db
def test_a_backup_keeps_the_newest_and_is_scheduled_daily(tmp_path, make_contest):
    make_contest(slug="kept")
    made = [backup.backup(tmp_path, keep=2).path for _ in range(3)]
    assert backup.backups(tmp_path) == made[1:] and not list(tmp_path.glob(".*.part"))
    assert all(p.stat().st_size > 0 for p in made[1:])
    entry = settings.CELERY_BEAT_SCHEDULE["backup-database"]
    assert entry["task"] == "contest.tasks.backup" and entry["schedule"] == timedelta(days=1)
    assert settings.TRACECUP_BACKUP_DIR == settings.VAR_DIR / "backups"
    from contest.celery import app
    assert "contest.tasks.backup" in app.tasks


def test_a_backup_of_another_engine_is_refused(tmp_path, db):
    other = tmp_path / ("tracecup-1.sqlite3" if connection.vendor == "postgresql" else "tracecup-1.dump")
    other.write_bytes(b"x")
    with pytest.raises(CommandError, match="is not a"):
        call_command("restore", str(other), force=True)
