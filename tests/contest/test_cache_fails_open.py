"""The Redis cache fails open (contest.cache): while Redis is down, every page renders and every upload is
stored, never a 500.

Here the cache is a ``CACHE_URL`` on a port where nothing listens (what a stopped Redis is to its clients),
built by ``contest.settings.cache_settings`` as the settings build compose's; no redis-server is needed.
tests/contest/test_redis_outage.py stops a real one under real workers.
"""
from __future__ import annotations

import logging
import socket
import time

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from contest import cache as fail_open
from contest.models import AnonymizedSet, Dataset, Job
from contest.settings import cache_settings
from tests.contest.conftest import anonymize_csv, user

pytestmark = pytest.mark.django_db


@pytest.fixture
def redis_down(settings, monkeypatch):
    """The default cache on a Redis that does not answer (a free port), with the outage state of a fresh
    process; the page cache on, as in production."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings.CACHES = {"default": cache_settings(f"redis://127.0.0.1:{port}/1")}
    settings.TRACECUP_PAGE_CACHE_SECONDS = 10
    settings.TRACECUP_PAGE_RENDERS_PER_MINUTE = 5
    monkeypatch.setattr(fail_open, "_OUTAGE", fail_open._Outage())
    return port


def test_a_redis_cache_url_gets_the_failing_open_cache_with_short_timeouts():
    config = cache_settings("redis://redis:6379/1")
    assert config["BACKEND"] == "contest.cache.FailOpenRedisCache"
    assert config["OPTIONS"] == {"socket_connect_timeout": 0.5, "socket_timeout": 1.0}
    assert cache_settings("locmemcache://tracecup")["BACKEND"].endswith("LocMemCache")


def test_a_cache_whose_redis_is_down_answers_as_an_empty_cache_that_forgets_and_warns_once(redis_down, caplog):
    t0 = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="contest.cache"):
        for _ in range(50):
            assert cache.get("k") is None and cache.get("k", default=7) == 7 and cache.get("k", 7) == 7
            assert cache.add("k", 1, 10) is True  # what an empty cache says; the caller goes on as the first
            assert cache.set("k", 1, 10) is None and cache.get("k") is None
            assert cache.get_many(["a", "b"]) == {} and cache.has_key("k") is False
            assert cache.set_many({"a": 1, "b": 2}) == ["a", "b"]
            assert cache.delete("k") is False and cache.touch("k") is False
            with pytest.raises(ValueError):  # as for a missing key: the callers start a new count
                cache.incr("k")
    assert time.monotonic() - t0 < 2  # one refused connection, then the cache is skipped for a while
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and warnings[0].startswith("the cache is unreachable (ConnectionError on get")


def test_pages_render_and_an_upload_is_stored_while_the_cache_is_down(generated, redis_down,
                                                                      django_capture_on_commit_callbacks):
    slug = generated.slug
    for path in ("/", f"/c/{slug}/", f"/c/{slug}/rules/", f"/c/{slug}/leaderboard/", f"/c/{slug}/attack-matrix/"):
        for _ in range(8):  # past the render limit too: without its count, a client is not limited
            r = Client().get(path)
            assert r.status_code == 200, (path, r.status_code)
    alpha = Client()
    alpha.force_login(user("alpha1"))
    assert alpha.get(f"/c/{slug}/team/").status_code == 200
    ds = Dataset.objects.get(round__contest=generated, number=1, challenge=1)
    with django_capture_on_commit_callbacks(execute=True):
        r = alpha.post(f"/c/{slug}/team/datasets/{ds.pk}/upload/",
                       {"file": SimpleUploadedFile("a.csv", anonymize_csv(ds, "A3-kRR", seed=1))})
    assert r.status_code == 302, r.content[:300]
    aset = AnonymizedSet.objects.get(dataset=ds)  # stored once, and scored (jobs run inline here)
    assert aset.status == AnonymizedSet.VALID
    assert Job.objects.get(kind="score_anonymized", args__anonymized_set_id=aset.pk).status == Job.SUCCEEDED
    assert alpha.get(f"/c/{slug}/team/").status_code == 200
