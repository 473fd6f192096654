"""Database connections dropped by the server (issue 25 item 7): no page answers 500, no upload is lost.

PostgreSQL only (the embedded SQLite has no server to drop a connection). The server drops them as a
restart or a failover does: ``pg_terminate_backend`` on this test database's sessions, never another's.

- Pages: a real gunicorn sync worker keeps its connection between requests (``CONN_MAX_AGE=60``); after
  the drop, the next requests must all answer 200 (``CONN_HEALTH_CHECKS`` replaces the dead connection).
- An upload: the connection is dropped in the middle of the upload's transaction (after the limit check,
  while the file is stored); the transaction is run again once on a new connection and the upload is
  stored exactly once.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psycopg2
import pytest
from django.db import connection

from contest.models import AnonymizedSet, Job, StoredFile
from contest.services import storage, uploads
from contest.workers import database_url, stop_process_groups
from tests.contest.conftest import anonymize_csv, user

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("dropping a server connection needs PostgreSQL: run with DATABASE_URL=postgres://... (CI does)")


def terminate_other_sessions(keep_pid: int | None = None) -> int:
    """``pg_terminate_backend`` every session of the test database but ``keep_pid`` (from a side connection)."""
    sd = connection.settings_dict
    side = psycopg2.connect(dbname=sd["NAME"], user=sd["USER"], password=sd.get("PASSWORD") or None,
                            host=sd["HOST"] or "127.0.0.1", port=sd["PORT"] or 5432)
    side.autocommit = True
    try:
        with side.cursor() as cur:
            cur.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
                        "current_database() AND pid <> pg_backend_pid() AND pid <> %s", [keep_pid or 0])
            return cur.fetchone()[0]
    finally:
        side.close()


def test_pages_answer_after_the_server_dropped_the_web_workers_connection(postgres_only, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, DATABASE_URL=database_url(), PYTHONUNBUFFERED="1")
    log = open(tmp_path / "gunicorn.log", "w")
    web = subprocess.Popen([sys.executable, "-m", "gunicorn", "contest.wsgi", "-b", f"127.0.0.1:{port}",
                            "--workers", "1", "--worker-class", "sync"], cwd=ROOT, env=env, stdout=log,
                           stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/api/contests/"
    try:
        for _ in range(100):
            try:
                assert urllib.request.urlopen(url, timeout=5).status == 200  # opens the kept connection
                break
            except OSError:
                time.sleep(0.2)
        with connection.cursor() as cur:
            cur.execute("SELECT pg_backend_pid()")
            mine = cur.fetchone()[0]
        assert terminate_other_sessions(keep_pid=mine) >= 1  # the web worker's kept connection
        statuses = []
        for _ in range(12):
            try:
                statuses.append(urllib.request.urlopen(url, timeout=10).status)
            except urllib.error.HTTPError as exc:
                statuses.append(exc.code)
        assert statuses == [200] * 12, (statuses, (tmp_path / "gunicorn.log").read_text()[-3000:])
    finally:
        stop_process_groups([web], grace=5)
        log.close()


def test_an_upload_whose_connection_drops_mid_transaction_is_stored_once(postgres_only, generated, monkeypatch):
    from contest.models import Dataset
    ds = Dataset.objects.get(round__contest=generated, number=1, challenge=1)
    content = anonymize_csv(ds, "A3-kRR", seed=1)
    real_store = storage.store_upload
    dropped = []

    def store_after_a_drop(*args, **kwargs):
        if not dropped:  # the first try: the server drops this very connection inside the transaction
            with connection.cursor() as cur:
                cur.execute("SELECT pg_backend_pid()")
                dropped.append(cur.fetchone()[0])
            terminate_other_sessions()  # this test's own session included (the side connection is kept)
        return real_store(*args, **kwargs)

    monkeypatch.setattr(storage, "store_upload", store_after_a_drop)
    aset = uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds, content=content, name="a.csv")
    assert dropped, "the drop never happened: the test shows nothing"
    assert AnonymizedSet.objects.filter(dataset=ds).count() == 1 and aset.seq == 1
    assert StoredFile.objects.filter(sha256=aset.file.sha256).count() == 1
    assert storage.read_bytes(aset.file) == content
    assert Job.objects.filter(kind="score_anonymized", args__anonymized_set_id=aset.pk).count() == 1


def test_an_upload_the_database_fails_twice_is_answered_503_and_stored_nowhere(generated, monkeypatch):
    """Both tries failed: the team is told the upload was not stored (not a bare 500, never a silent loss)."""
    from django.db import OperationalError
    from rest_framework.test import APIClient

    from contest.models import Dataset
    ds = Dataset.objects.get(round__contest=generated, number=1, challenge=1)
    tries = []

    def down(*args, **kwargs):
        tries.append(1)
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(uploads, "_store_anonymized_set", down)
    api = APIClient()
    api.force_authenticate(user("alpha1"))
    from django.core.files.uploadedfile import SimpleUploadedFile
    r = api.post(f"/api/datasets/{ds.pk}/anonymized-sets/",
                 {"file": SimpleUploadedFile("a.csv", anonymize_csv(ds, "A1-none"), content_type="text/csv")},
                 format="multipart")
    assert len(tries) == 2
    assert r.status_code == 503 and r.json()["error"]["code"] == "database_unavailable", r.content
    assert "was not stored" in r.json()["error"]["message"]
    assert not AnonymizedSet.objects.filter(dataset=ds).exists()
