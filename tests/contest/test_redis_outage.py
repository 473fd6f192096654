"""A Redis outage in docker-compose's topology: the broker and the page cache on one Redis server, stopped.

The test starts its own redis-server (``own_redis``: a free port, no persistence; never the shared one),
points the Celery broker (database 0) and the cache (database 1, built by ``contest.settings.cache_settings``
from a ``CACHE_URL`` as compose's is) at it, and runs what compose runs on it: the teams' worker, the
judge's worker and a real ``celery beat`` (its sweep every 60 s, as configured). Then, as on a contest
day: the judge's worker is busy with a long job (PPMTF training), three teams upload, their privacy
previews wait behind that job in the judge's queue and are sent again by the sweep as time passes, five
times. Redis is shut down without saving (every queued message is gone) for 30 s, during which teams
upload through the API and visitors and teams load pages; then it starts again, empty, and nobody
touches the workers or beat.

What must hold: during the outage every upload is answered 202 and stored once, every public page and
the team dashboard answers 200; after it, every queued job (the previews sent six times, the uploads
and generation jobs the outbox kept) has run within 2 minutes of Redis's return, each upload scored
once, no worker or beat gone.
"""
from __future__ import annotations

import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models import F
from django.test import Client
from rest_framework.test import APIClient

from contest import queues
from contest.models import AnonymizedSet, Dataset, Job, Score
from contest.services import generation, jobs
from contest.services.setup import create_contest
from contest.settings import cache_settings
from tests.contest.conftest import anonymize_csv, contest_spec, user
from tests.contest.test_faults import (  # noqa: F401  (own_redis is a fixture)
    assert_no_duplicate_current_scores,
    assert_stored_files_intact,
    own_redis,
    request_generation,
    slow_contest,
    training_under_way,
    wait_until,
)
from tests.worker import ROOT, stop_worker, worker_env  # noqa: F401  (worker_env is a fixture)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

#: Seconds Redis is down (the issue's probe: 30 s).
OUTAGE_SECONDS = 30
#: Longest the queued work may wait after Redis is back (the target: every queued job run within 2 minutes).
RECOVERY_SECONDS = 120
#: Sends of each preview before the outage: the sweep's back-off then reached 15 minutes.
PREVIEW_SENDS = 6


def start_beat(worker_env) -> subprocess.Popen:
    """``celery beat`` as compose runs it (its schedule in the test's folder), logging to ``beat.log``."""
    log_path = worker_env.tmp_path / "beat.log"
    with open(log_path, "w") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "contest", "beat", "-l", "INFO",
             "-s", str(worker_env.tmp_path / "celerybeat-schedule")],
            cwd=ROOT, env=worker_env.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def api_client(username: str) -> APIClient:
    client = APIClient()
    r = client.post("/api/auth/token/", {"username": username, "password": "pw"}, format="json")
    assert r.status_code == 200, r.content
    client.credentials(HTTP_AUTHORIZATION=f"Token {r.json()['token']}")
    return client


def api_upload(contest, team: int, challenge: int, seed: int) -> int:
    """Upload an anonymized set of ``team``'s data set through the API; 202 within 10 s, or the test fails."""
    ds = Dataset.objects.get(round__contest=contest, number=team, challenge=challenge)
    client = api_client(f"{ds.team.name.lower()}1")
    t0 = time.monotonic()
    r = client.post(f"/api/datasets/{ds.pk}/anonymized-sets/",
                    {"file": SimpleUploadedFile(f"team{team}.csv", anonymize_csv(ds, "A3-kRR", seed=seed))},
                    format="multipart")
    assert r.status_code == 202, r.content[:500]
    assert time.monotonic() - t0 < 10, "an upload hung on the dead Redis"
    return r.json()["id"]


def public_pages(contest) -> list[str]:
    slug = contest.slug
    return ["/", f"/c/{slug}/", f"/c/{slug}/rules/", f"/c/{slug}/leaderboard/", f"/c/{slug}/attack-matrix/"]


def assert_pages_answer(contest, team_member: Client) -> list[str]:
    """Every public page (an anonymous visitor) and the team's dashboard answer 200; returns the public
    pages' ``X-Page-Cache`` marks."""
    marks = []
    for path in public_pages(contest):
        r = Client().get(path)
        assert r.status_code == 200, (path, r.status_code, r.content[:300])
        marks.append(r.get("X-Page-Cache", ""))
    r = team_member.get(f"/c/{contest.slug}/team/")
    assert r.status_code == 200, ("dashboard", r.status_code, r.content[:300])
    return marks


def resent_previews(contest) -> list[int]:
    """The three previews, each sent ``PREVIEW_SENDS`` times while it waited behind the judge's job: as
    the sweep does once a job's last send is older than its back-off (the clock moved on by the back-off
    each time, here by moving the job's creation and last send back an hour)."""
    previews = Job.objects.filter(contest=contest, kind="privacy_preview")
    wait_until(lambda: previews.filter(status=Job.QUEUED, sent_at__isnull=False).count() == 3,
               "three previews queued behind the judge's job", timeout=60)
    for _ in range(PREVIEW_SENDS - 1):
        previews.update(sent_at=F("sent_at") - timedelta(hours=1), created_at=F("created_at") - timedelta(hours=1))
        assert jobs.requeue_stalled()["sent"] >= 3
    assert sorted(previews.values_list("status", "sends")) == [(Job.QUEUED, PREVIEW_SENDS)] * 3
    return list(previews.values_list("pk", flat=True))


def test_a_redis_outage_loses_no_upload_no_page_and_delays_no_queued_job(own_redis, worker_env, settings):
    cache_url = own_redis.url.rsplit("/", 1)[0] + "/1"  # compose: broker on database 0, CACHE_URL on 1
    settings.CACHES = {"default": cache_settings(cache_url)}
    settings.TRACECUP_PAGE_CACHE_SECONDS = 10
    worker_env.env.update(CELERY_BROKER_URL=own_redis.url, CACHE_URL=cache_url)
    worker_env.env.pop("TRACECUP_BROKER_DIR", None)
    worker_env.broker_dir = None

    contest = create_contest(contest_spec(slug="outage"))
    generation.generate_round_data(contest.rounds.get())  # in this process, before the workers start
    busy = slow_contest("outage-busy")
    teams = worker_env.start(concurrency=1, queues=queues.DEFAULT_QUEUE)  # as compose runs them
    judge = worker_env.start(concurrency=1, queues=queues.JUDGE_QUEUES)
    beat = start_beat(worker_env)
    try:
        idle = lambda: not Job.objects.filter(status__in=(Job.QUEUED, Job.RUNNING)).exists()  # noqa: E731
        wait_until(idle, "the jobs of the generation done", workers=worker_env)  # a job's end is a new stamp
        member = Client()
        member.force_login(user("alpha1"))
        assert assert_pages_answer(contest, member)  # the cache works: pages are stored
        assert "hit" in assert_pages_answer(contest, member)

        training = request_generation(busy)  # the judge's worker is busy from here on
        wait_until(lambda: training_under_way(training), "training started", workers=worker_env)
        before = {team: api_upload(contest, team, 1, seed=team) for team in (1, 2, 3)}
        previews = resent_previews(contest)

        own_redis.shutdown_nosave()
        down_until = time.monotonic() + OUTAGE_SECONDS
        assert Job.objects.filter(pk=training.pk, status=Job.RUNNING).exists(), "training ended before the stop"
        assert Job.objects.filter(pk__in=previews, status=Job.QUEUED).count() == 3  # their messages are gone
        t0 = time.monotonic()
        during = {team: api_upload(contest, team, 2, seed=10 + team) for team in (1, 2, 3)}
        upload_seconds, loads = (time.monotonic() - t0) / 3, []
        while time.monotonic() < down_until:
            t0 = time.monotonic()
            assert_pages_answer(contest, member)
            loads.append(time.monotonic() - t0)
            time.sleep(1)
        own_redis.start()
        back = time.monotonic()

        wait_until(idle, "every queued job run after Redis returned", timeout=RECOVERY_SECONDS, workers=worker_env)
        recovery = time.monotonic() - back
        print(f"Redis down: an upload {upload_seconds:.2f} s, six pages {max(loads):.2f} s at most; "  # noqa: T201
              f"every queued job done {recovery:.1f} s after Redis returned")  # the figures of the docs
        assert teams.poll() is None and judge.poll() is None, "a worker exited:\n" + worker_env.log()
        for n in (1, 2):  # the fault did reach both workers
            assert "Connection to broker lost" in (worker_env.tmp_path / f"worker{n}.log").read_text()
        assert beat.poll() is None, "beat exited:\n" + (worker_env.tmp_path / "beat.log").read_text()[-3000:]
    finally:
        stop_worker(beat)

    assert not Job.objects.exclude(status=Job.SUCCEEDED).exists(), list(
        Job.objects.exclude(status=Job.SUCCEEDED).values_list("pk", "kind", "status", "message"))
    assert Job.objects.filter(pk__in=previews, sends__gt=PREVIEW_SENDS).count() == 3  # sent again after the return
    for uploads in (before, during):
        for team, aset_id in uploads.items():  # stored once, scored once
            ds = Dataset.objects.get(round__contest=contest, number=team, challenge=1 if uploads is before else 2)
            assert list(AnonymizedSet.objects.filter(dataset=ds).values_list("pk", flat=True)) == [aset_id]
            assert AnonymizedSet.objects.get(pk=aset_id).status == AnonymizedSet.VALID
            assert Score.objects.filter(anonymized_set_id=aset_id, metric=Score.UTILITY).count() == 1
    assert_no_duplicate_current_scores()
    assert_stored_files_intact()
    assert assert_pages_answer(contest, member)  # and the cache is used again: pages are stored and served
    assert "hit" in assert_pages_answer(contest, member)
