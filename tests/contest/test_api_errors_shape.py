"""Under /api/ every error has the one JSON error shape, the page's and the API's refusals agree."""
from __future__ import annotations

import io

import pytest
from rest_framework.test import APIClient

from contest.models import AnonymizedSet, Dataset, StoredFile
from tests.contest.conftest import user


@pytest.mark.parametrize("debug", [False, True])
def test_an_unknown_api_address_answers_the_json_error_shape(db, settings, debug):
    settings.DEBUG = debug
    for method in ("get", "post", "delete"):
        r = getattr(APIClient(), method)("/api/no-such-thing/42/")
        assert r.status_code == 404 and r["Content-Type"] == "application/json", (method, r.content[:80])
        assert r.json()["error"]["code"] == "not_found" and r.json()["error"]["message"]


def test_a_server_error_under_api_answers_the_json_error_shape(db, settings):
    from django.test import Client
    settings.ROOT_URLCONF = "tests.contest.urls_api_error"
    r = Client(raise_request_exception=False).get("/api/boom/")
    assert r.status_code == 500 and r.json()["error"]["code"] == "server_error"
    page = Client(raise_request_exception=False).get("/boom/")
    assert page.status_code == 500 and page["Content-Type"].startswith("text/html")


def test_an_empty_file_is_refused_at_once_by_the_api_as_on_the_page(generated):
    ds = Dataset.objects.get(round__contest=generated, number=1, challenge=1)
    api = APIClient()
    api.force_authenticate(user("alpha1"))
    before = StoredFile.objects.count()
    empty = io.BytesIO(b"")
    empty.name = "empty.csv"
    r = api.post(f"/api/datasets/{ds.pk}/anonymized-sets/", {"file": empty}, format="multipart")
    assert r.status_code == 400, r.content
    assert "empty (0 bytes)" in r.json()["error"]["message"]
    assert StoredFile.objects.count() == before and not AnonymizedSet.objects.filter(dataset=ds).exists()
