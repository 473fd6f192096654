"""Seeing the system: the System page, /healthz, /readyz and /metrics (docs/reliability.md "Seeing the system").

The page's figures are checked against real Celery workers (``tests.worker.WorkerEnv``): one busy in a
long job (PPMTF training on the judge's queue), whose row names that job, and one stopped, whose queue
then has no live worker and whose waiting message the broker counts. ``/readyz`` answers 503 when the only
judge worker is killed (its heartbeat falls silent) and when the broker's Redis (a server of the test's
own) is shut down. ``/metrics`` is refused without its token and counts a request.
"""
from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from contest import queues
from contest.models import Job
from contest.services import jobs
from contest.system.models import WorkerHeartbeat
from tests.contest.test_faults import (  # noqa: F401  (own_redis is a fixture)
    own_redis,
    request_generation,
    slow_contest,
    training_under_way,
)
from tests.worker import stop_worker, worker_env  # noqa: F401  (worker_env is a fixture)

#: Worker heartbeats every second in these tests, dead after six silent seconds: a worker whose pool child
#: trains PPMTF on a loaded 2-core machine missed three beats in one run of the suite (read as "silent").
FAST_WORKER_BEATS = {"TRACECUP_WORKER_HEARTBEAT_SECONDS": "1"}
STALE_SECONDS = 6.0


@pytest.fixture
def fast_worker_beats(settings):
    settings.TRACECUP_WORKER_HEARTBEAT_SECONDS = 1.0
    settings.TRACECUP_WORKER_STALE_SECONDS = STALE_SECONDS


def wait_until(check, timeout: float, what: str, log=lambda: ""):
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"{what} within {timeout} s\n{log()}"
        time.sleep(0.2)
    return value


def live_html(client) -> str:
    r = client.get("/system/live.json")
    assert r.status_code == 200 and r.json()["finished"] is False
    return r.json()["html"]


def worker_cell(html: str, name_part: str) -> str:
    """The table row of the worker whose name holds ``name_part``."""
    rows = re.findall(r'<tr data-worker="([^"]+)" data-state="(\w+)">(.*?)</tr>', html, re.S)
    found = [(state, body) for name, state, body in rows if name_part in name]
    assert len(found) == 1, rows
    return found[0]


# ---------------------------------------------------------------- on real workers
@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_the_page_shows_a_busy_worker_and_a_stopped_one(worker_env, fast_worker_beats):
    """The judge's worker runs a long generation: alive, naming the job, its memory; the teams' worker is
    stopped: 'stopped', its queue without a live worker (an alert and a stuck job), the job sent to that
    queue counted in the broker's depth."""
    worker_env.env.update(FAST_WORKER_BEATS)
    judge = worker_env.start(concurrency=1, queues=queues.JUDGE_QUEUES)
    teams = worker_env.start(concurrency=1, queues=queues.DEFAULT_QUEUE)
    contest = slow_contest("system-busy")
    organizer = Client()
    organizer.force_login(contest.organizers.get())
    generating = request_generation(contest)
    wait_until(lambda: training_under_way(generating), 120, "the judge's worker never started training",
               worker_env.log)
    generating.refresh_from_db()
    assert "-1@" in generating.worker, generating.worker  # claimed by the judge's worker, started first
    wait_until(lambda: WorkerHeartbeat.objects.count() == 2, 10, "two heartbeat rows", worker_env.log)

    stop_worker(teams)
    waiting = jobs.create_job("email_announcement", contest=contest, announcement_id=0)
    wait_until(lambda: Job.objects.get(pk=waiting.pk).sent_at, 10, "the job was not sent")

    html = live_html(organizer)
    state, row = worker_cell(html, "-1@")  # the judge's worker, started first
    assert state == "alive" and f"#{generating.pk} {generating.get_kind_display()}" in row and "MiB" in row, row
    assert str(judge.pid) in row
    state, row = worker_cell(html, "-2@")
    assert state == "stopped" and "interactive" in row, row
    assert "No live worker consumes these queues; their jobs wait: interactive" in html
    assert re.search(r'data-queue="interactive">1 message waiting', html), html
    assert f'data-job="{waiting.pk}" data-why="no_worker"' in html
    assert re.search(r'<tr data-kind="generate_round">.*?<td class="num">1</td><td class="num">0</td>', html, re.S)
    assert "System" in organizer.get("/system/").content.decode()
    # the same in /readyz: the teams' queue has no worker
    r = Client().get("/readyz")
    assert r.status_code == 503 and r.json()["checks"]["workers"]["detail"] == "no live worker consumes: interactive"


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_readyz_fails_when_the_only_judge_worker_is_down(worker_env, fast_worker_beats):
    """Both workers alive: 200. The judge's worker killed (SIGKILL, no warm shutdown): its heartbeat
    falls silent and /readyz answers 503 naming the judge's queues; /readyz?lite=1 (the web server's own
    health) still 200."""
    worker_env.env.update(FAST_WORKER_BEATS)
    worker_env.start(concurrency=1, queues=queues.DEFAULT_QUEUE)
    worker_env.start(concurrency=1, queues=queues.JUDGE_QUEUES)
    wait_until(lambda: WorkerHeartbeat.objects.count() == 2, 10, "two heartbeat rows", worker_env.log)
    r = Client().get("/readyz")
    assert r.status_code == 200, r.json()
    assert set(r.json()["checks"]) == {"database", "cache", "broker", "migrations", "workers"}

    worker_env.kill()  # the judge's worker, started last
    r = wait_until(lambda: (r := Client().get("/readyz")).status_code == 503 and r, STALE_SECONDS + 5,
                   "/readyz still 200 after the judge's worker was killed")
    assert r.json()["checks"]["workers"] == {
        "status": "fail", "ms": r.json()["checks"]["workers"]["ms"],
        "detail": "no live worker consumes: generation, judge, results"}
    assert r.json()["status"] == "fail"
    assert Client().get("/readyz?lite=1").status_code == 200
    assert worker_cell(live_html(_logged_in(_superuser())), "-2@")[0] == "silent"


def _superuser():
    from django.contrib.auth.models import User
    return User.objects.create_superuser("root", password="pw")


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_readyz_fails_when_redis_is_down(own_redis):
    """The broker's Redis shut down: /readyz (and its lite form) answer 503 with the broker's check failed,
    within the check's time-outs; the other checks still pass. /healthz answers 200 throughout."""
    r = Client().get("/readyz?lite=1")
    assert r.status_code == 200, r.json()
    own_redis.shutdown_nosave()
    t0 = time.monotonic()
    r = Client().get("/readyz?lite=1")
    assert time.monotonic() - t0 < 5
    assert r.status_code == 503
    checks = r.json()["checks"]
    assert checks["broker"]["status"] == "fail" and checks["broker"]["detail"] == "ConnectionError", checks
    assert all(checks[c]["status"] == "ok" for c in ("database", "cache", "migrations")), checks
    assert Client().get("/healthz").status_code == 200


# ---------------------------------------------------------------- without workers
@pytest.mark.django_db
def test_healthz_answers_without_the_database(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        r = client.get("/healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok"}
    assert "no-cache" in r["Cache-Control"] or "no-store" in r["Cache-Control"]


@pytest.mark.django_db
def test_job_times_failures_and_who_sees_them(make_contest, client_for):
    """p50/p95 of the last hour's run times per kind, failures with their message; an organizer sees its
    contest's jobs only, the site's sizes are a superuser's; a team member is refused the page."""
    mine, other = make_contest(slug="mine"), make_contest(slug="other")
    now = timezone.now()
    for seconds in (1, 2, 3, 4, 100):
        Job.objects.create(kind="score_anonymized", contest=mine, status=Job.SUCCEEDED,
                           started_at=now - timedelta(seconds=seconds + 5), finished_at=now - timedelta(seconds=5))
    Job.objects.create(kind="score_anonymized", contest=mine, status=Job.FAILED, message="failed: bad row 7",
                       started_at=now - timedelta(seconds=10), finished_at=now - timedelta(seconds=8))
    Job.objects.create(kind="judge_attacks", contest=mine, status=Job.SUCCEEDED,
                       started_at=now - timedelta(hours=3), finished_at=now - timedelta(hours=2))  # out of the hour
    Job.objects.create(kind="close_set", contest=other, status=Job.FAILED, message="failed: secret of other",
                       started_at=now - timedelta(seconds=10), finished_at=now - timedelta(seconds=8))
    mine.organizers.clear()  # the spec's "judge" organizes both
    from django.contrib.auth.models import User
    solo = User.objects.create_user("solo", password="pw")
    mine.organizers.add(solo)
    c = Client()
    c.force_login(solo)
    html = live_html(c)
    row = re.search(r'<tr data-kind="score_anonymized">(.*?)</tr>', html, re.S).group(1)
    cells = re.findall(r'<td class="num">([^<]*)</td>', row)
    assert cells[:4] == ["6", "1", "2.5", "76.0"], cells  # 6 ended, 1 failed; run times 1,2,2,3,4,100 s
    assert "failed: bad row 7" in row
    assert "judge_attacks" not in html and "close_set" not in html and "secret of other" not in html
    assert 'id="system-sizes"' not in html
    assert 'id="system-sizes"' in live_html(_logged_in(_superuser()))
    member = client_for("alpha1")
    assert member.get("/system/").status_code == 403 and member.get("/system/live.json").status_code == 403
    assert Client().get("/system/").status_code == 302  # to the login page


def _logged_in(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


@pytest.mark.django_db
def test_metrics_are_refused_without_the_token_and_count_a_request(client, settings, make_contest):
    settings.TRACECUP_METRICS_TOKEN = ""
    assert client.get("/metrics").status_code == 404  # off by default
    settings.TRACECUP_METRICS_TOKEN = "s3cret-token"
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Token s3cret-token").status_code == 401

    def scrape() -> str:
        r = client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-token")
        assert r.status_code == 200 and r["Content-Type"].startswith("text/plain")
        return r.content.decode()

    def healthz_count(text: str) -> float:
        m = re.search(r'^tracecup_http_requests_total\{method="GET",status="200",view="healthz"\} (\S+)$', text, re.M)
        return float(m.group(1)) if m else 0.0

    contest = make_contest(slug="metrics")
    Job.objects.create(kind="score_anonymized", contest=contest, status=Job.SUCCEEDED,
                       started_at=timezone.now() - timedelta(seconds=3), finished_at=timezone.now())
    WorkerHeartbeat.objects.create(name="w1@host", hostname="host", queues=["interactive"], pid=1, rss_bytes=5 << 20)
    before = healthz_count(scrape())
    assert client.get("/healthz").status_code == 200
    text = scrape()
    assert healthz_count(text) == before + 1
    assert re.search(r'^tracecup_http_request_duration_seconds_bucket\{le="\+Inf",status="200",view="healthz"\} ',
                     text, re.M)
    assert 'tracecup_jobs{kind="score_anonymized",state="succeeded"} 1.0' in text
    assert 'tracecup_job_run_seconds_bucket{kind="score_anonymized",le="5.0"} 1.0' in text
    assert 'tracecup_job_run_seconds_bucket{kind="score_anonymized",le="1.0"} 0.0' in text
    assert 'tracecup_job_run_seconds_count{kind="score_anonymized"} 1.0' in text
    assert re.search(r'^tracecup_job_run_seconds_sum\{kind="score_anonymized"\} 3\.0\d*$', text, re.M), text
    assert 'tracecup_worker_up{worker="w1@host"} 1.0' in text
    assert 'tracecup_worker_resident_memory_bytes{worker="w1@host"} 5.24288e+06' in text
    assert re.search(r'^tracecup_queue_depth\{queue="interactive"\} \d', text, re.M)


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_gunicorns_processes_are_summed_in_multiprocess_mode(tmp_path):
    """docker-compose's web server: gunicorn with deploy/gunicorn.conf.py, 3 processes, a shared
    PROMETHEUS_MULTIPROC_DIR. 40 requests spread over the processes; every scrape (whichever process
    answers it) counts all 40 more than before them."""
    import http.client
    import os
    import subprocess
    import sys

    from contest import edge
    from contest.workers import database_url, stop_process_groups
    from tests.worker import ROOT
    port, folder = edge.free_port(), tmp_path / "metrics"
    env = dict(os.environ, DATABASE_URL=database_url(), PROMETHEUS_MULTIPROC_DIR=str(folder),
               TRACECUP_METRICS_TOKEN="t0ken", PYTHONUNBUFFERED="1")
    with open(tmp_path / "gunicorn.log", "w") as log:
        web = subprocess.Popen([sys.executable, "-m", "gunicorn", "contest.wsgi:application", "-c",
                                "deploy/gunicorn.conf.py", "-b", f"127.0.0.1:{port}", "--workers", "3"],
                               cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def get(path: str, headers=None) -> tuple[int, str]:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            conn.request("GET", path, headers=headers or {})
            r = conn.getresponse()
            return r.status, r.read().decode()
        finally:
            conn.close()

    try:
        wait_until(lambda: edge.get_status(port, "/healthz", timeout=2) == 200, 60, "gunicorn did not start",
                   lambda: (tmp_path / "gunicorn.log").read_text()[-2000:])
        def unmatched_counts(scrapes: int) -> set[float]:
            counts = set()
            for _ in range(scrapes):
                status, text = get("/metrics", {"Authorization": "Bearer t0ken"})
                assert status == 200, text
                m = re.search(r'^tracecup_http_requests_total\{method="GET",status="404",view="unmatched"\} (\S+)$',
                              text, re.M)
                counts.add(float(m.group(1)) if m else 0.0)
            return counts

        (before,) = unmatched_counts(1)
        for n in range(40):  # an address no probe asks for
            assert get(f"/no-such-page-{n}/")[0] == 404
        assert unmatched_counts(6) == {before + 40}
        assert len(list(folder.glob("counter_*.db"))) >= 2, "the requests did not reach several processes"
    finally:
        stop_process_groups([web], grace=5)


@pytest.mark.django_db
def test_worker_health_command_follows_this_hosts_heartbeat(settings):
    """docker-compose's worker health check: exit 0 while a worker of this host beats, 1 once it is silent."""
    import socket

    from django.core.management import CommandError, call_command
    settings.TRACECUP_WORKER_STALE_SECONDS = STALE_SECONDS
    with pytest.raises(CommandError, match="no live worker"):
        call_command("worker_health")
    row = WorkerHeartbeat.objects.create(name="celery@here", hostname=socket.gethostname(), queues=["judge"], pid=7)
    call_command("worker_health")
    WorkerHeartbeat.objects.filter(pk=row.pk).update(beat_at=timezone.now() - timedelta(seconds=STALE_SECONDS + 1))
    with pytest.raises(CommandError):
        call_command("worker_health")
    with pytest.raises(CommandError):
        call_command("worker_health", host="elsewhere")


@pytest.mark.django_db
def test_a_second_worker_under_the_same_name_is_warned_of(settings, monkeypatch, caplog):
    """Two workers started by hand on one machine without ``-n`` are both ``celery@<host>``: one row, so
    the page saw one of them and nothing said why (issue 38's operator walk). The second one's beat warns."""
    import os

    from contest.system import heartbeat
    settings.TRACECUP_WORKER_STALE_SECONDS = STALE_SECONDS
    now = timezone.now()
    heartbeat.beat("celery@here", ["results"], 1, now)
    with caplog.at_level("WARNING", logger="contest.system.heartbeat"):
        heartbeat.beat("celery@here", ["results"], 1, now)
        assert not caplog.records, "its own row is not another worker's"
        monkeypatch.setattr(os, "getpid", lambda: 424242)
        heartbeat.beat("celery@here", ["interactive"], 1, now)
    assert "same name" in caplog.text and "-n NAME@%h" in caplog.text
    assert WorkerHeartbeat.objects.get(name="celery@here").queues == ["interactive"]
