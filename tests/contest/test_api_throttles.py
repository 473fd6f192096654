"""The API's request rates (contest.api.throttles): per client address as nginx reports it, per user, and
upload bursts; each answered 429 with Retry-After in the API's error shape, and free again once the
window has passed."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from contest.api import throttles
from contest.models import AnonymizedSet, Dataset
from tests.contest.conftest import anonymize_csv, user

pytestmark = pytest.mark.django_db


@pytest.fixture
def rates(settings):
    """Small rates for the tests (production's are 120/min, 600/min and 10/min)."""
    settings.TRACECUP_API_THROTTLE_RATES = {"anon": None, "user": None, "uploads": None}
    return settings.TRACECUP_API_THROTTLE_RATES


@pytest.fixture
def clock(monkeypatch):
    """The throttles' clock, moved by hand."""
    now = [1_000_000.0]
    monkeypatch.setattr(throttles._SettingsRate, "timer", lambda self: now[0])
    return now


def _token_client(username) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user(username))[0].key}")
    return c


def _assert_throttled(r, most_seconds):
    assert r.status_code == 429
    body = r.json()["error"]
    assert body["code"] == "throttled" and set(body) >= {"message", "issues", "retry_after"}
    assert 1 <= int(r["Retry-After"]) <= most_seconds and body["retry_after"] == int(r["Retry-After"])


def test_anonymous_requests_are_counted_per_client_address_behind_nginx(generated, settings, rates, clock):
    settings.TRACECUP_TRUSTED_PROXY = True
    rates["anon"] = "3/min"
    one, other = APIClient(HTTP_X_REAL_IP="203.0.113.5"), APIClient(HTTP_X_REAL_IP="203.0.113.6")
    assert [one.get("/api/contests/").status_code for _ in range(3)] == [200] * 3
    _assert_throttled(one.get(f"/api/contests/{generated.slug}/"), 60)
    # Every request's socket peer is nginx (127.0.0.1): another client behind it is not throttled.
    assert other.get("/api/contests/").status_code == 200
    # A user's requests are the user scope's, not the address's.
    signed_in = _token_client("alpha1")
    signed_in.defaults["HTTP_X_REAL_IP"] = "203.0.113.5"
    assert signed_in.get("/api/contests/").status_code == 200
    clock[0] += 61
    assert one.get("/api/contests/").status_code == 200


def test_without_the_trusted_proxy_the_header_is_ignored(generated, rates, clock):
    rates["anon"] = "2/min"
    answers = [APIClient(HTTP_X_REAL_IP=f"203.0.113.{i}").get("/api/contests/").status_code for i in range(3)]
    assert answers == [200, 200, 429]  # one socket peer, whatever each client claims


def test_a_users_requests_are_counted_per_user_wherever_they_come_from(generated, rates, clock):
    rates["user"] = "4/min"
    alpha = _token_client("alpha1")
    answers = [alpha.get(f"/api/contests/{generated.slug}/me/", REMOTE_ADDR=f"10.0.0.{i}").status_code
               for i in range(5)]
    assert answers[:4] == [200] * 4
    _assert_throttled(alpha.get("/api/contests/"), 60)
    assert _token_client("beta1").get("/api/contests/").status_code == 200
    assert APIClient().get("/api/contests/").status_code == 200
    clock[0] += 60
    assert alpha.get("/api/contests/").status_code == 200


def test_an_upload_burst_is_refused_before_the_upload_is_read(generated, rates, clock):
    rates["uploads"] = "2/min"
    team = user("alpha1").memberships.get().team
    ds = Dataset.objects.filter(round__contest=generated, team=team).first()
    content = anonymize_csv(ds)
    alpha = _token_client("alpha1")

    def upload():
        return alpha.post(f"/api/datasets/{ds.pk}/anonymized-sets/",
                          {"file": SimpleUploadedFile("a.csv", content)}, format="multipart")
    assert [upload().status_code for _ in range(2)] == [202, 202]
    _assert_throttled(upload(), 60)
    assert AnonymizedSet.objects.filter(dataset=ds).count() == 2     # the third was never stored
    assert alpha.get(f"/api/contests/{generated.slug}/anonymized-sets/").status_code == 200  # reads go on
    assert _token_client("beta1").get("/api/contests/").status_code == 200
    clock[0] += 31
    _assert_throttled(upload(), 30)                                   # the window is not over yet
    clock[0] += 30
    assert upload().status_code == 202


def test_the_limits_are_on_in_production_only_and_documented_in_the_schema(client, settings):
    script = "from contest import settings as s; print(s.TRACECUP_API_THROTTLE_RATES)"
    env = dict(os.environ, TRACECUP_PRODUCTION="1", SECRET_KEY="throttle-test-" + "abcdefghij" * 5,
               TRACECUP_API_UPLOAD_RATE="5/min")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "{'anon': '120/min', 'user': '600/min', 'uploads': '5/min'}"
    env.pop("TRACECUP_PRODUCTION")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "{'anon': None, 'user': None, 'uploads': '5/min'}"
    schema = client.get("/api/schema/").content.decode()
    assert "429" in schema and "Retry-After" in schema
