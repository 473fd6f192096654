"""Japanese to the last line (issue 40 item 10): what the schedule service refuses, what the API answers
with ``Accept-Language: ja`` (409s, 404s, 403s, 400s, the API's own 404 route), what a job says on the
console (its kind and its message, written in English by a worker), where the analyses page's points of
interest come from, and the upload history's labels on a phone: none of it in English."""
from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone, translation
from rest_framework.test import APIClient

from contest.models import Job, Phase
from contest.services import schedule
from contest.services.job_messages import TEMPLATES, say, shown
from contest.services.schedule import ScheduleError
from tests.contest.conftest import user

pytestmark = pytest.mark.django_db

#: Three English words in a row: a sentence (or most of one) left untranslated. The contest's own notation
#: (s_I,min, TP-TV-Top50, SHA-256, file names, a date format's YYYY-MM-DD) is no word run.
ENGLISH = re.compile(r"\b[A-Za-z][a-z]+(?:[ ,;:']+[a-z]{2,}){2,}\b")


def english(text: str) -> list[str]:
    """The English word runs of ``text``."""
    return ENGLISH.findall(str(text))


def ja_api(username: str | None = "judge") -> APIClient:
    api = APIClient(HTTP_ACCEPT_LANGUAGE="ja")
    if username:
        api.force_authenticate(user(username))
    return api


def phases(contest):
    rnd = contest.rounds.get()
    return rnd, Phase.objects.get(round=rnd, kind=Phase.ANONYMIZATION), Phase.objects.get(round=rnd, kind=Phase.ATTACK)


@pytest.mark.parametrize("change", [
    lambda a, t: dict(phase=a, closes_at=a.opens_at - timedelta(minutes=1)),
    lambda a, t: dict(phase=a, closes_at=timezone.now() - timedelta(minutes=5)),
    lambda a, t: dict(phase=a, closes_at=t.opens_at + timedelta(hours=1)),
    lambda a, t: dict(phase=t, opens_at=a.closes_at - timedelta(hours=1)),
])
def test_the_schedule_services_refusals_read_in_japanese(generated, change):
    rnd, anon, attack = phases(generated)
    kwargs = change(anon, attack)
    with translation.override("ja"), pytest.raises(ScheduleError) as refused:
        schedule.reschedule_phase(kwargs.pop("phase"), **kwargs)
    assert not english(refused.value), str(refused.value)
    with translation.override("ja"), pytest.raises(ScheduleError) as refused:
        schedule.open_attack_now(rnd)
    assert not english(refused.value), str(refused.value)


def test_the_apis_errors_read_in_japanese_with_accept_language(generated):
    rnd, anon, attack = phases(generated)
    answers = {
        # 409: a service's refusal (the schedule's), and the attack phase that cannot open yet
        "409 schedule": ja_api().patch(f"/api/phases/{anon.pk}/", {"closes_at": (anon.opens_at - timedelta(
            hours=1)).isoformat()}, format="json"),
        "409 open attack": ja_api().post(f"/api/rounds/{rnd.pk}/open-attack/"),
        # 400: a serializer's own check, and a field of the wrong type
        "400 no dates": ja_api().patch(f"/api/phases/{anon.pk}/", {}, format="json"),
        "400 bad date": ja_api().patch(f"/api/phases/{anon.pk}/", {"closes_at": "tomorrow"}, format="json"),
        # 404: an object that is not there, and an address no endpoint has
        "404 object": ja_api().get("/api/jobs/999999/"),
        "404 route": ja_api().get("/api/no-such-endpoint/"),
        # 401 without a token, 403 for a team member at the organizer's endpoint
        "401": ja_api(None).get(f"/api/contests/{generated.slug}/me/"),
        "403": ja_api("alpha1").patch(f"/api/phases/{anon.pk}/", {"closes_at": timezone.now().isoformat()},
                                      format="json"),
    }
    for name, r in answers.items():
        status = int(name.split()[0])
        assert r.status_code == status, (name, r.status_code, r.content[:300])
        error = r.json()["error"]
        texts = [error["message"]] + [i.get("message", "") for i in error.get("issues", [])]
        assert error["message"] and not any(english(t) for t in texts), (name, texts)
    # the same request in English still answers in English
    r = APIClient(HTTP_ACCEPT_LANGUAGE="en").get("/api/no-such-endpoint/")
    assert "no API endpoint" in r.json()["error"]["message"]


def test_an_oversized_gz_is_refused_in_japanese(generated):
    """The size rule's 413 for a .gz whose CSV is larger than the contest's limit, in the request's language."""
    import gzip

    from django.core.files.uploadedfile import SimpleUploadedFile
    type(generated).objects.filter(pk=generated.pk).update(upload_size_limit=4096)
    ds = generated.rounds.get().datasets.get(number=1, challenge=1)
    big = gzip.compress(b"reg_id\n" + b"1\n" * 10_000)
    r = ja_api("alpha1").post(f"/api/datasets/{ds.pk}/anonymized-sets/",
                              {"file": SimpleUploadedFile("anotraces.csv.gz", big)}, format="multipart")
    assert r.status_code == 413, r.content[:300]
    message = r.json()["error"]["message"]
    assert "4\xa0KiB" in message and not english(message), message


def _example(template: str) -> str:
    """``template`` filled with stand-in values: names (A1), numbers, a reason the catalog knows."""
    names = re.findall(r"%\((\w+)\)s", template)
    values = {n: ("a rejected upload cannot be selected" if n == "reason" else "valid" if n == "status"
                  else "Alpha-IDP" if n == "set" else "3") for n in names}
    return say(template, **values)


def test_every_job_message_reads_in_japanese():
    """Each message a job writes (stored in English) is shown in Japanese with its values."""
    for template in TEMPLATES:
        message = _example(template)
        with translation.override("ja"):
            text = shown(message)
        assert text != message and not english(text), (message, text)
        assert all(v in text for v in re.findall(r"\b\d+\b", message)), (message, text)
    with translation.override("en"):
        assert shown(_example("%(set)s pseudonymized; %(n)s judge attacks run")) == "Alpha-IDP pseudonymized; 3 judge attacks run"


def test_the_console_names_job_kinds_and_messages_in_japanese(generated):
    rnd, anon, attack = phases(generated)
    ds = rnd.datasets.first()
    job = Job.objects.create(kind="close_set", contest=generated, args={"dataset_id": ds.pk}, status=Job.SUCCEEDED,
                             progress=1.0, message=say("%(set)s pseudonymized; %(n)s judge attacks run",
                                                       set=ds.label, n=4))
    failed = Job.objects.create(kind="round_figures", contest=generated, args={"round_id": rnd.pk, "part": "fairness"},
                                status=Job.FAILED, message=say("failed: %(reason)s",
                                                               reason="a rejected upload cannot be selected"))
    c = Client(HTTP_ACCEPT_LANGUAGE="ja")
    c.force_login(user("judge"))
    for url in (f"/console/{generated.slug}/jobs/", f"/console/{generated.slug}/jobs/{job.pk}/",
                f"/console/{generated.slug}/jobs/{failed.pk}/"):
        r = c.get(url)
        assert r.status_code == 200, url
        body = r.content.decode()
        main = body[body.index("<main"):body.index("</main>")]
        text = re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style|option)\b.*?</\1>", " ", main, flags=re.S))
        assert "close_set" not in text and "round_figures" not in text, (url, text[:2000])
        assert "pseudonymized" not in text and "rejected upload" not in text, url


def test_the_analyses_page_names_its_points_of_interest_in_japanese():
    from contest.web.analyses import poi_source_text
    with translation.override("ja"):
        text = poi_source_text("city model (seed 2019, 4168 POIs)")
    assert "2019" in text and "4,168" in text and not english(text) and "POI" not in text, text
    with translation.override("en"):
        assert poi_source_text("city model (seed 2019, 4168 POIs)") == (
            "the built-in city model (seed 2019), 4,168 points of interest")
