"""Answers that carry a secret are never kept by a cache: ``Cache-Control: no-store`` (``contest.no_store``,
decided by ``contest.permissions.answer_is_public``) on the account's API token, a team's invitation code,
original traces, ID tables, the attack material and the organizer's export, on the pages and in the API;
public answers keep their caching. Without it a shared computer's browser or a proxy could keep them."""
from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from contest.models import Dataset, PublicSet
from tests.contest.conftest import upload_all_and_close, user

pytestmark = pytest.mark.django_db


@pytest.fixture
def closed(generated, django_capture_on_commit_callbacks):
    return upload_all_and_close(generated, dict.fromkeys((1, 2, 3), ("A1-none", {})), django_capture_on_commit_callbacks)


def _kept_by_no_cache(response) -> bool:
    return "no-store" in response.get("Cache-Control", "")


def test_pages_showing_a_token_or_an_invitation_code_are_not_stored(closed, client_for):
    alpha, judge = client_for("alpha1"), client_for("judge")
    team = user("alpha1").memberships.get().team
    token = Token.objects.get_or_create(user=user("alpha1"))[0].key
    for url, secret in (("/account/", token), ("/token/", token), (f"/c/{closed.slug}/teams/{team.pk}/", team.invitation_code),
                        (f"/c/{closed.slug}/team/", team.invitation_code)):
        r = alpha.get(url, follow=True)
        assert r.status_code == 200 and secret in r.content.decode(), url
        assert _kept_by_no_cache(r), (url, r.get("Cache-Control"))
    r = judge.get(f"/console/{closed.slug}/")
    assert r.status_code == 200 and team.invitation_code in r.content.decode() and _kept_by_no_cache(r)
    assert "private" in alpha.get(f"/c/{closed.slug}/team/")["Cache-Control"]  # the dashboard's own mark kept


def test_downloads_of_secret_files_are_not_stored(closed, client_for):
    alpha, judge = client_for("alpha1"), client_for("judge")
    own = Dataset.objects.filter(round__contest=closed, team=user("alpha1").memberships.get().team).first()
    ps = PublicSet.objects.filter(dataset__round__contest=closed).first()
    for client, url in ((alpha, f"/files/{own.original_id}/"), (judge, f"/files/{ps.ptable_id}/"),
                        (alpha, f"/c/{closed.slug}/team/round/1/attack-material.zip")):
        r = client.get(url)
        assert r.status_code == 200 and _kept_by_no_cache(r), (url, r.status_code, r.get("Cache-Control"))
    r = judge.get(f"/console/{closed.slug}/export.zip")  # the zip, or the page following its build
    assert r.status_code in (200, 202) and _kept_by_no_cache(r)


def test_api_answers_carrying_a_secret_are_not_stored(closed):
    r = Client().post("/api/auth/token/", {"username": "alpha1", "password": "pw"})
    assert r.status_code == 200 and r.json()["token"] and _kept_by_no_cache(r)
    alpha = Client(HTTP_AUTHORIZATION=f"Token {r.json()['token']}")
    own = Dataset.objects.filter(round__contest=closed, team=user("alpha1").memberships.get().team).first()
    r = alpha.get(f"/api/datasets/{own.pk}/original/")
    assert r.status_code == 200 and _kept_by_no_cache(r)
    token = Client().post("/api/auth/token/", {"username": "judge", "password": "judge-pass"}).json()["token"]
    ps = PublicSet.objects.filter(dataset__round__contest=closed).first()
    r = Client(HTTP_AUTHORIZATION=f"Token {token}").get(f"/api/public-sets/{ps.pk}/ptable/")
    assert r.status_code == 200 and _kept_by_no_cache(r)


def test_public_answers_keep_their_caching(closed, client):
    for url in ("/", f"/c/{closed.slug}/", f"/c/{closed.slug}/rules/", "/api/contests/"):
        r = client.get(url)
        assert r.status_code == 200 and not _kept_by_no_cache(r), url
