"""What a job says, in Japanese, on the console and through the API (issue 40 item 10): a privacy preview a
newer upload superseded says so in the reader's language and is marked superseded (not "succeeded" with an
empty bar); the API's job rows show their message in the request's language as the pages do."""
from __future__ import annotations

import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

from contest.models import Job
from contest.services.job_messages import say
from tests.contest.conftest import user
from tests.contest.test_fair_queue import _preview_job, _upload_scored
from tests.web.test_japanese_last_line import english

pytestmark = pytest.mark.django_db


def _main_text(body: str) -> str:
    main = body[body.index("<main"):body.index("</main>")]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style|option)\b.*?</\1>", " ", main,
                                                              flags=re.S)))


def test_a_superseded_preview_says_so_in_japanese(generated, django_capture_on_commit_callbacks):
    first = _upload_scored(generated, 1, capture=django_capture_on_commit_callbacks)
    second = _upload_scored(generated, 1, capture=django_capture_on_commit_callbacks)
    old = _preview_job(first)
    assert old.superseded and f"#{second.seq}" in old.message
    c = Client(HTTP_ACCEPT_LANGUAGE="ja")
    c.force_login(user("judge"))
    for url in (f"/console/{generated.slug}/jobs/", f"/console/{generated.slug}/jobs/{old.pk}/"):
        r = c.get(url)
        assert r.status_code == 200, url
        text = _main_text(r.content.decode())
        assert "superseded" not in text and "newer upload" not in text and "preview" not in text, (url, text)
    page = _main_text(c.get(f"/console/{generated.slug}/jobs/{old.pk}/").content.decode())
    assert f"#{second.seq}" in page and "0%" not in page and "成功" not in page, page
    en = Client(HTTP_ACCEPT_LANGUAGE="en")
    en.force_login(user("judge"))
    page = _main_text(en.get(f"/console/{generated.slug}/jobs/{old.pk}/").content.decode())
    assert "superseded" in page and "succeeded" not in page and "0%" not in page, page


def test_the_apis_job_messages_read_in_the_requests_language(generated):
    said = {
        say("%(sets)s sets to publish: %(queued)s set jobs queued; analyses queued on %(analysed)s",
            sets=7, queued=0, analysed=0): "7",
        say("%(round)s: model ready, %(queued)s of %(expected)s data sets queued",
            round="Preliminary", queued=0, expected=12): "12",
    }
    for message, value in said.items():
        job = Job.objects.create(kind="close_set", contest=generated, status=Job.SUCCEEDED, progress=1.0,
                                 message=message)
        api = APIClient(HTTP_ACCEPT_LANGUAGE="ja")
        api.force_authenticate(user("judge"))
        r = api.get(f"/api/jobs/{job.pk}/")
        assert r.status_code == 200, r.content
        text = r.json()["message"]
        assert text != message and value in text and not english(text.replace("Preliminary", "")), text
        en = APIClient(HTTP_ACCEPT_LANGUAGE="en")
        en.force_authenticate(user("judge"))
        assert en.get(f"/api/jobs/{job.pk}/").json()["message"] == message
