"""Database connections dropped every second under load: no duplicate, no stored upload answered 500, no
upload left pending, no page answered 500.

Real parts: a gunicorn server (2 sync workers, kept connections as in production), a Celery worker scoring
the uploads, PostgreSQL. Two teams upload through the API with their tokens while pages are loaded, and a
side thread runs ``pg_terminate_backend`` on every session of the test database (the server's, the
worker's) but the test's own, every second for 25 s. The test process plays the beat afterwards (the
sweep, as the periodic task calls it) until the drops' jobs are done.

Each request's file has its own name, so each stored upload can be matched to the request that sent it:
a name stored twice is a duplicate, a stored name whose request was answered other than 202 is a wrong
answer. A page may answer 503 with ``Retry-After`` while the database is away, never 500.
"""
from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client

from contest.models import AnonymizedSet, Dataset, Job
from contest.services import jobs
from contest.workers import stop_process_groups
from tests.contest.conftest import anonymize_csv, user
from tests.contest.test_dropped_connections import terminate_other_sessions
from tests.worker import worker_env  # noqa: F401  (a fixture)

ROOT = Path(__file__).resolve().parents[2]
#: Seconds of drops: 25 in the suite; TRACECUP_DROP_SECONDS=75 repeats the issue's 75-second probe.
DROP_SECONDS = float(os.environ.get("TRACECUP_DROP_SECONDS", "25"))
DROP_EVERY = 1.0

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("dropping a server connection needs PostgreSQL: run with DATABASE_URL=postgres://...")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(env: dict, port: int, log_path: Path) -> subprocess.Popen:
    """gunicorn as production runs it (sync workers), answering once it serves the API."""
    with open(log_path, "w") as log:
        web = subprocess.Popen([sys.executable, "-m", "gunicorn", "contest.wsgi", "-b", f"127.0.0.1:{port}",
                                "--workers", "2", "--worker-class", "sync", "--timeout", "60"],
                               cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    for _ in range(150):
        try:
            if request(port, "GET", "/api/contests/")[0] == 200:
                return web
        except OSError:
            pass
        time.sleep(0.2)
    stop_process_groups([web], grace=5)
    pytest.fail("gunicorn did not start:\n" + log_path.read_text()[-3000:])


def request(port: int, method: str, path: str, body: bytes = b"", headers: dict | None = None) -> tuple:
    """(status, headers) of one request on a new connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, path, body=body or None, headers=headers or {})
        response = conn.getresponse()
        response.read()
        return response.status, dict(response.getheaders())
    finally:
        conn.close()


def multipart(name: str, content: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
            f"Content-Type: text/csv\r\n\r\n").encode() + content + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def uploader(port: int, token: str, dataset_id: int, content: bytes, prefix: str, stop: threading.Event,
             answers: dict) -> None:
    """Upload ``content`` again and again, each time under a new name, until ``stop``; record each answer."""
    n = 0
    while not stop.is_set():
        n += 1
        name = f"{prefix}-{n}.csv"
        body, content_type = multipart(name, content)
        try:
            answers[name] = request(port, "POST", f"/api/datasets/{dataset_id}/anonymized-sets/", body,
                                    {"Authorization": f"Token {token}", "Content-Type": content_type})[0]
        except OSError as exc:  # no answer at all: counted apart
            answers[name] = f"no answer ({exc})"


def page_loader(port: int, paths: list, cookie: str, stop: threading.Event, answers: list) -> None:
    """Load the pages in turn until ``stop``; record (path, status, Retry-After)."""
    while not stop.is_set():
        for path in paths:
            try:
                status, headers = request(port, "GET", path, headers={"Cookie": cookie})
                answers.append((path, status, headers.get("Retry-After")))
            except OSError as exc:
                answers.append((path, f"no answer ({exc})", None))


def dropper(keep_pid: int, stop: threading.Event, drops: list) -> None:
    while not stop.wait(DROP_EVERY):
        drops.append(terminate_other_sessions(keep_pid=keep_pid))


def wait_for_scoring(timeout: float) -> None:
    """Play the beat (the sweep) until no scoring job is queued or running, or ``timeout`` passes."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        jobs.requeue_stalled()
        if not Job.objects.filter(kind="score_anonymized", status__in=(Job.QUEUED, Job.RUNNING)).exists():
            return
        time.sleep(0.5)


def test_uploads_pages_and_jobs_survive_connections_dropped_every_second(postgres_only, generated, worker_env,
                                                                        settings, tmp_path):
    from rest_framework.authtoken.models import Token
    settings.TRACECUP_JOB_HEARTBEAT_SECONDS = 0.5
    settings.TRACECUP_JOB_STALE_SECONDS = 3.0
    generated.anonymized_upload_limit = 100000
    generated.save(update_fields=["anonymized_upload_limit"])
    worker_env.env.update(TRACECUP_JOB_HEARTBEAT_SECONDS="0.5", TRACECUP_JOB_STALE_SECONDS="3")
    worker_env.start()
    teams = [(user(name), Dataset.objects.get(round__contest=generated, number=number, challenge=1))
             for name, number in (("alpha1", 1), ("beta1", 2))]
    content = anonymize_csv(teams[0][1], "A1-none")
    browser = Client()
    browser.force_login(user("alpha1"))
    cookie = f"sessionid={browser.cookies['sessionid'].value}"
    slug = generated.slug
    paths = [f"/c/{slug}/", f"/c/{slug}/leaderboard/", f"/c/{slug}/team/", f"/c/{slug}/rules/"]
    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        mine = cur.fetchone()[0]
    stop, stop_drops = threading.Event(), threading.Event()
    uploads, pages, drops = {}, [], []
    port = free_port()
    tokens = [Token.objects.get_or_create(user=u)[0].key for u, _ in teams]
    threads = [threading.Thread(target=uploader, args=(port, token, ds.pk, content,
                                                       u.username, stop, uploads)) for (u, ds), token in zip(teams, tokens)]
    threads.append(threading.Thread(target=page_loader, args=(port, paths, cookie, stop, pages)))
    drop_thread = threading.Thread(target=dropper, args=(mine, stop_drops, drops))
    web = start_server(dict(worker_env.env), port, tmp_path / "gunicorn.log")
    try:
        for t in [*threads, drop_thread]:
            t.start()
        time.sleep(DROP_SECONDS)
        stop_drops.set()
        drop_thread.join()
        time.sleep(1.0)  # a last request or two with the database back
        stop.set()
        for t in threads:
            t.join(70)
        wait_for_scoring(timeout=30)
    finally:
        stop.set()
        stop_drops.set()
        stop_process_groups([web], grace=5)
    stored = Counter(AnonymizedSet.objects.filter(dataset__round__contest=generated)
                     .values_list("file__name", flat=True))
    answered = Counter(str(status) for status in uploads.values())
    page_answers = Counter((status, bool(retry)) for _, status, retry in pages)
    figures = (f"{len(drops)} drops ({sum(drops)} sessions), {len(uploads)} uploads answered {dict(answered)}, "
               f"{sum(stored.values())} stored; pages {dict(page_answers)}")
    duplicates = {name: n for name, n in stored.items() if n > 1}
    wrongly_answered = {name: uploads.get(name) for name in stored if uploads.get(name) != 202}
    pending = list(AnonymizedSet.objects.filter(status=AnonymizedSet.PENDING).values_list("file__name", flat=True))
    page_errors = [(path, status) for path, status, retry in pages
                   if status != 200 and not (status == 503 and retry)]
    log = (tmp_path / "gunicorn.log").read_text()[-4000:]
    figures += (f"; {len(duplicates)} duplicated, {len(wrongly_answered)} stored but not answered 202, "
                f"{len(pending)} pending, {len(page_errors)} page errors")
    print(figures)
    assert sum(drops) > len(drops), figures  # the drops hit the server's and the worker's sessions
    assert not duplicates, (figures, duplicates, log)
    assert not wrongly_answered, (figures, wrongly_answered, log)
    assert not pending, (figures, pending, list(Job.objects.exclude(status=Job.SUCCEEDED)
                                                .values_list("pk", "status", "attempts", "message")))
    assert not page_errors, (figures, page_errors[:20], log)
    assert answered["202"] >= 10, figures  # the uploads went on between the drops
