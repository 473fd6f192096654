"""After the broker's server restarts, the sweep sends every queued job again at once, whatever its back-off.

A job sent six times waits up to 15 minutes between sends (``jobs.requeue_stalled``'s back-off), which is
right while its message waits in a long queue; a Redis restarted without its data has lost that message,
and the job would sit for those minutes with its worker idle. The sweep asks the broker when it started
(``jobs.broker_started_at``) and sends again every queued job last sent before then.
tests/contest/test_redis_outage.py restarts a real Redis under real workers and beat.
"""
from __future__ import annotations

import socket
import time
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.db.models import F
from django.utils import timezone

from contest.models import Job
from contest.services import jobs

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch):
    """Jobs the sweep sends (recorded as the real dispatch records them, without a broker)."""
    record = []

    def dispatch(pk, kind):
        record.append(pk)
        return bool(Job.objects.filter(pk=pk).update(sent_at=timezone.now(), sends=F("sends") + 1))
    monkeypatch.setattr(jobs, "dispatch", dispatch)
    return record


def waiting_job(contest, sends: int, last_sent_ago: float) -> Job:
    """A queued job created an hour ago, sent ``sends`` times, the last ``last_sent_ago`` seconds ago."""
    now = timezone.now()
    job = Job.objects.create(kind="rescore", contest=contest, status=Job.QUEUED, args={"contest_id": contest.pk},
                             sends=sends, sent_at=now - timedelta(seconds=last_sent_ago))
    Job.objects.filter(pk=job.pk).update(created_at=now - timedelta(hours=1))
    return job


def test_a_job_sent_before_the_broker_started_is_sent_again_at_once(generated, sent, monkeypatch):
    lost = waiting_job(generated, sends=6, last_sent_ago=40)  # its back-off: 15 minutes
    later = waiting_job(generated, sends=6, last_sent_ago=5)  # sent to the server that runs now
    monkeypatch.setattr(jobs, "broker_started_at", lambda: timezone.now() - timedelta(seconds=20))
    jobs.requeue_stalled()
    assert lost.pk in sent and later.pk not in sent
    sent.clear()
    jobs.requeue_stalled()
    assert lost.pk not in sent and later.pk not in sent  # once: sent since the start, it backs off again
    lost.refresh_from_db()
    assert lost.sends == 7


def test_without_a_start_time_the_back_off_holds(generated, sent, monkeypatch):
    waiting = waiting_job(generated, sends=6, last_sent_ago=40)
    monkeypatch.setattr(jobs, "broker_started_at", lambda: None)  # the embedded broker, or no INFO
    jobs.requeue_stalled()
    assert waiting.pk not in sent


@pytest.mark.slow
def test_the_broker_start_time_is_redis_uptime_or_none_at_once(monkeypatch):
    from contest.celery import app
    from tests.worker import reset_broker_pools
    started = jobs.broker_started_at()
    if django_settings.CELERY_BROKER_URL.startswith("redis"):
        assert started is not None and started < timezone.now()
    else:
        assert started is None  # the embedded broker keeps its files across restarts
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    down = f"redis://127.0.0.1:{port}/0"
    monkeypatch.setattr(app.conf, "broker_url", down)
    monkeypatch.setenv("CELERY_BROKER_URL", down)  # Celery reads the variable before its conf
    reset_broker_pools(app)
    try:
        t0 = time.monotonic()
        assert jobs.broker_started_at() is None  # a Redis that is down: no start time, and no long wait
        assert time.monotonic() - t0 < 5
    finally:
        monkeypatch.undo()
        reset_broker_pools(app)
