"""An upload's deadline counts when its request began (rules §15): nginx reads a large body whole before
Django sees it, so an upload begun before the deadline reaches a view after it.

The trusted front states the start (``X-TraceCup-Request-Start: <msec> <request_time>``,
``contest.request_start``); the uploads check the phase at that time, under the phase's lock as before, and
the sweep closes a phase a grace after its deadline, so an upload begun in time is stored before the close.
A client's own header is ignored without the trusted proxy. Through the real nginx: tests/contest/test_edge.py.
"""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, RequestFactory
from django.utils import timezone
from rest_framework.test import APIClient

from contest import request_start
from contest.models import AnonymizedSet, Attack, Dataset, Job, Phase, PublicSet
from contest.tasks import sweep
from tests.contest.conftest import anonymize_csv, user

pytestmark = pytest.mark.django_db


def stated(start, now=None) -> str:
    """The header nginx sends for a request begun at ``start`` and passed on at ``now`` (datetimes)."""
    now = now or timezone.now()
    return f"{now.timestamp():.3f} {(now - start).total_seconds():.3f}"


def past_deadline(contest, seconds: float = 5.0) -> Phase:
    """The anonymization phase's deadline ``seconds`` ago, the close not run yet (within the grace)."""
    phase = Phase.objects.get(round__contest=contest, kind=Phase.ANONYMIZATION)
    Phase.objects.filter(pk=phase.pk).update(closes_at=timezone.now() - timedelta(seconds=seconds))
    phase.refresh_from_db()
    return phase


def api_as(username: str) -> APIClient:
    api = APIClient()
    api.force_authenticate(user(username))
    return api


def post_set(api, ds, header: str | None):
    extra = {"HTTP_X_TRACECUP_REQUEST_START": header} if header is not None else {}
    return api.post(f"/api/datasets/{ds.pk}/anonymized-sets/",
                    {"file": SimpleUploadedFile("a.csv", anonymize_csv(ds))}, format="multipart", **extra)


# ----- the header ---------------------------------------------------------------------------------------
def test_the_stated_start_is_msec_minus_request_time_and_anything_else_is_unreadable():
    assert request_start.stated_start("1700000000.250 12.125") == pytest.approx(1699999988.125)
    for bad in ("", "1700000000.250", "a b", "1700000000 -1", "nan 1", "1 2 3", "inf 0"):
        assert request_start.stated_start(bad) is None, bad


@pytest.mark.parametrize("trusted, seconds_ago, believed", [
    (True, 30.0, True),                                         # a body read for 30 s
    (True, request_start.MAX_AGE_SECONDS + 60, False),          # older than any honest request
    (True, -(request_start.CLOCK_SLACK_SECONDS + 5), False),    # in the future
    (True, -0.5, False),                                        # the clocks' slack: now
    (False, 30.0, False),                                       # no trusted proxy: anyone could say it
])
def test_the_start_is_believed_from_the_trusted_proxy_within_bounds(settings, trusted, seconds_ago, believed):
    settings.TRACECUP_TRUSTED_PROXY = trusted
    now = timezone.now()
    start = now - timedelta(seconds=seconds_ago)
    request = RequestFactory().post("/", HTTP_X_TRACECUP_REQUEST_START=stated(start, now))
    got = request_start.started_at(request, now)
    assert abs((got - start).total_seconds()) < 0.01 if believed else got == now
    assert request_start.started_at(RequestFactory().post("/"), now) == now  # no header: now


# ----- uploads checked at the request's start --------------------------------------------------------------
def test_an_upload_begun_before_the_deadline_and_handled_after_it_is_accepted_before_the_close(generated, settings):
    settings.TRACECUP_TRUSTED_PROXY = True
    ds = Dataset.objects.get(round__contest=generated, number=1, challenge=1)
    phase = past_deadline(generated)
    began = phase.closes_at - timedelta(seconds=3)  # nginx was still reading its body at the deadline
    r = post_set(api_as("alpha1"), ds, stated(began))
    assert r.status_code == 202, r.content
    aset = AnonymizedSet.objects.get(pk=r.json()["id"])
    assert abs((aset.created_at - began).total_seconds()) < 0.01  # the row says when it began
    # begun after the deadline: refused, though the close has not run either
    r = post_set(api_as("alpha1"), ds, stated(phase.closes_at + timedelta(seconds=1)))
    assert r.status_code == 409 and "not open" in r.json()["error"]["message"]
    # the web page's upload reads the same header
    web = Client(HTTP_X_TRACECUP_REQUEST_START=stated(began))
    web.force_login(user("alpha1"))
    r = web.post(f"/c/{generated.slug}/team/datasets/{ds.pk}/upload/",
                 {"file": SimpleUploadedFile("b.csv", anonymize_csv(ds, seed=2))}, HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    assert r.status_code == 201, r.content[:300]
    assert AnonymizedSet.objects.filter(dataset=ds).count() == 2


def test_a_clients_own_start_header_is_ignored_without_the_trusted_proxy(generated, settings):
    settings.TRACECUP_TRUSTED_PROXY = False
    ds = Dataset.objects.get(round__contest=generated, number=1, challenge=1)
    phase = past_deadline(generated)
    r = post_set(api_as("alpha1"), ds, stated(phase.closes_at - timedelta(seconds=3)))
    assert r.status_code == 409 and "not open" in r.json()["error"]["message"]
    assert not AnonymizedSet.objects.filter(dataset=ds).exists()


def test_an_upload_begun_in_time_that_arrives_after_the_close_is_refused_and_says_so(generated, settings,
                                                                                    django_capture_on_commit_callbacks):
    settings.TRACECUP_TRUSTED_PROXY = True
    ds = Dataset.objects.get(round__contest=generated, number=1, challenge=1)
    phase = past_deadline(generated, seconds=request_start.deadline_grace().total_seconds() + 5)
    generated.judge_attacks_enabled = False
    generated.save()
    with django_capture_on_commit_callbacks(execute=True):
        assert sweep()["phases_closed"] == 1
    r = post_set(api_as("alpha1"), ds, stated(phase.closes_at - timedelta(seconds=1)))
    message = r.json()["error"]["message"]
    assert r.status_code == 409 and "not open: it was closed at" in message and "before this upload" in message


def test_an_attack_begun_before_the_deadline_is_accepted_until_the_sweep_closes_the_phase(closed_unobfuscated,
                                                                                         settings):
    settings.TRACECUP_TRUSTED_PROXY = True
    contest = closed_unobfuscated
    target = PublicSet.objects.get(dataset__round__contest=contest, dataset__number=1, dataset__challenge=1)
    attack = Phase.objects.get(round__contest=contest, kind=Phase.ATTACK)
    Phase.objects.filter(pk=attack.pk).update(closes_at=timezone.now() - timedelta(seconds=5))
    attack.refresh_from_db()
    etable = ("user_id\n" + "\n".join(str(u) for u in range(1, contest.users_per_set + 1)) + "\n").encode()

    def send(began):
        return api_as("beta1").post(f"/api/public-sets/{target.pk}/attacks/",
                                    {"file": SimpleUploadedFile("e.csv", etable), "kind": "etable"},
                                    format="multipart", HTTP_X_TRACECUP_REQUEST_START=stated(began))
    assert send(attack.closes_at - timedelta(seconds=2)).status_code == 202
    assert send(attack.closes_at + timedelta(seconds=1)).status_code == 409
    assert sweep(attack.closes_at + request_start.deadline_grace())["phases_closed"] == 1
    assert send(attack.closes_at - timedelta(seconds=2)).status_code == 409  # the close came first
    assert Attack.objects.filter(target=target).count() == 1


# ----- the close waits the grace ---------------------------------------------------------------------------
def test_the_sweep_closes_a_phase_only_a_grace_after_its_deadline(generated, settings):
    settings.TRACECUP_DEADLINE_GRACE_SECONDS = 60.0
    rnd = generated.rounds.get()
    anon = past_deadline(generated, seconds=1)
    attack = Phase.objects.get(round=rnd, kind=Phase.ATTACK)
    grace = timedelta(seconds=60)
    assert sweep(anon.closes_at + grace - timedelta(seconds=1))["phases_closed"] == 0
    assert not Job.objects.filter(kind="close_anonymization").exists()
    assert sweep(anon.closes_at + grace)["phases_closed"] == 1
    assert Job.objects.filter(kind="close_anonymization", args__round_id=rnd.pk).count() == 1
    # the attack phase the same way (its close is marked at its deadline)
    Phase.objects.filter(pk=anon.pk).update(closed_at=anon.closes_at)
    Phase.objects.filter(pk=attack.pk).update(opens_at=anon.closes_at, closes_at=anon.closes_at + timedelta(hours=1))
    attack.refresh_from_db()
    assert sweep(attack.closes_at + grace - timedelta(seconds=1))["phases_closed"] == 0
    assert sweep(attack.closes_at + grace)["phases_closed"] == 1
    attack.refresh_from_db()
    assert attack.closed_at == attack.closes_at


def test_the_pages_say_when_the_close_runs(generated, settings):
    """Within the grace the console says the close is still to run, and when; the rules page states the rule."""
    settings.TRACECUP_DEADLINE_GRACE_SECONDS = 60.0
    past_deadline(generated, seconds=1)
    judge = Client()
    judge.force_login(user("judge"))
    page = judge.get(f"/console/{generated.slug}/").content.decode()
    assert "deadline passed; the close runs after" in page
    rules = Client().get(f"/c/{generated.slug}/rules/").content.decode()
    assert "An upload counts from when its request began" in rules and "60 seconds or a little more" in rules
