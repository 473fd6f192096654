"""The organizer's calendar (issue 11 item 1): move, extend, open early, close at the deadline; every rule
through the service, the API and the console, each refusal with its reason and nothing changed."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from contest.models import AuditLog, Job, Phase, PublicSet
from contest.services import schedule, uploads
from contest.services.schedule import ScheduleError
from contest.tasks import sweep
from tests.contest.conftest import anonymize_csv, move_phase, user

pytestmark = pytest.mark.django_db


def phases(contest):
    rnd = contest.rounds.get()
    return rnd, Phase.objects.get(round=rnd, kind=Phase.ANONYMIZATION), Phase.objects.get(round=rnd, kind=Phase.ATTACK)


def judge_api():
    api = APIClient()
    api.force_authenticate(user("judge"))
    return api


def judge_console():
    c = Client()
    c.force_login(user("judge"))
    return c


def test_extending_the_deadline_keeps_uploads_open_after_the_old_one(generated):
    rnd, anon, attack = phases(generated)
    old_close = anon.closes_at
    schedule.reschedule_phase(attack, opens_at=attack.opens_at + timedelta(days=2),
                              closes_at=attack.closes_at + timedelta(days=2), user=user("judge"))
    anon = schedule.reschedule_phase(anon, closes_at=old_close + timedelta(days=1), user=user("judge"))
    assert anon.closes_at == old_close + timedelta(days=1)
    ds = generated.rounds.get().datasets.get(number=1, challenge=1)
    # an upload an hour after the old deadline is accepted
    later = old_close + timedelta(hours=1)
    aset = uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds, content=anonymize_csv(ds), name="a.csv",
                                         now=later)
    assert aset.pk
    entry = AuditLog.objects.filter(action="reschedule_phase").latest("id")
    assert entry.actor.username == "judge" and entry.details["before"]["closes_at"] == old_close.isoformat()


@pytest.mark.parametrize("change, reason", [
    (lambda a, t: dict(phase=a, closes_at=a.opens_at - timedelta(minutes=1)), "before it opens"),
    (lambda a, t: dict(phase=a, closes_at=timezone.now() - timedelta(minutes=5)), "already past"),
    (lambda a, t: dict(phase=a, closes_at=t.opens_at + timedelta(hours=1)), "move the attack phase first"),
    (lambda a, t: dict(phase=t, opens_at=a.closes_at - timedelta(hours=1)), "cannot open before that"),
])
def test_impossible_orders_are_refused_with_the_reason_and_change_nothing(generated, change, reason):
    rnd, anon, attack = phases(generated)
    before = list(Phase.objects.filter(round=rnd).values_list("opens_at", "closes_at", "closed_at"))
    kwargs = change(anon, attack)
    with pytest.raises(ScheduleError, match=reason):
        schedule.reschedule_phase(kwargs.pop("phase"), user=user("judge"), **kwargs)
    assert list(Phase.objects.filter(round=rnd).values_list("opens_at", "closes_at", "closed_at")) == before
    assert not AuditLog.objects.filter(action="reschedule_phase").exists()


def test_a_pseudonymized_round_cannot_reopen_its_anonymization_phase(closed_unobfuscated):
    generated = closed_unobfuscated
    rnd, anon, attack = phases(generated)
    with pytest.raises(ScheduleError, match="already pseudonymized"):
        schedule.reschedule_phase(anon, closes_at=timezone.now() + timedelta(days=3))
    r = judge_api().patch(f"/api/phases/{anon.pk}/", {"closes_at": (timezone.now() + timedelta(days=3)).isoformat()},
                          format="json")
    assert r.status_code == 409 and r.json()["error"]["code"] == "schedule_conflict"
    assert "already pseudonymized" in r.json()["error"]["message"]


def test_open_the_attack_phase_early_after_close_now(generated, django_capture_on_commit_callbacks):
    rnd, anon, attack = phases(generated)
    with pytest.raises(ScheduleError, match="not closed yet"):
        schedule.open_attack_now(rnd)
    move_phase(rnd, Phase.ATTACK, 24 * 7, 24 * 14)  # the attack phase a week away, as in the issue
    from contest.services import judge
    with django_capture_on_commit_callbacks(execute=True):
        for team in (1, 2, 3):
            ds = rnd.datasets.get(number=team, challenge=1)
            uploads.submit_anonymized_set(user=user(f"{ds.team.name.lower()}1"), dataset=ds,
                                          content=anonymize_csv(ds), name="a.csv")
        judge.close_phase_now(anon, user=user("judge"))
    assert PublicSet.objects.filter(dataset__round=rnd).exists()
    attack.refresh_from_db()
    assert not attack.is_open()
    r = judge_api().post(f"/api/rounds/{rnd.pk}/open-attack/")
    assert r.status_code == 200 and r.json()["is_open"] is True
    attack.refresh_from_db()
    assert attack.is_open() and attack.closes_at > timezone.now() + timedelta(days=13)
    with pytest.raises(ScheduleError, match="already open"):
        schedule.open_attack_now(rnd)
    assert AuditLog.objects.filter(action="open_attack_now", actor__username="judge").count() == 1


def test_the_sweep_closes_an_attack_phase_at_its_deadline_and_recomputes_results(generated):
    rnd, anon, attack = phases(generated)
    Phase.objects.filter(pk=anon.pk).update(closes_at=timezone.now() - timedelta(hours=3),
                                            closed_at=timezone.now() - timedelta(hours=3))
    move_phase(rnd, Phase.ATTACK, -2, -1)
    report = sweep()
    attack.refresh_from_db()
    assert report["phases_closed"] == 1 and attack.closed_at == attack.closes_at
    assert Job.objects.filter(kind="compute_results").exists()
    assert sweep()["phases_closed"] == 0  # once
    page = judge_console().get(f"/console/{generated.slug}/").content.decode()
    assert page.count(">closed<") >= 1 and "not open" not in page


def test_the_console_moves_a_phase_in_the_contest_time_zone_and_reports_refusals(generated):
    rnd, anon, attack = phases(generated)
    console = judge_console()
    tz = generated.tz
    new_close = (attack.closes_at + timedelta(days=3)).astimezone(tz).replace(second=0, microsecond=0)
    r = console.post(f"/console/{generated.slug}/phases/{attack.pk}/schedule/", {
        f"p{attack.pk}-opens_at": attack.opens_at.astimezone(tz).strftime("%Y-%m-%dT%H:%M"),
        f"p{attack.pk}-closes_at": new_close.strftime("%Y-%m-%dT%H:%M")}, follow=True)
    attack.refresh_from_db()
    assert attack.closes_at == new_close
    assert "The attack phase of Final now runs from" in r.content.decode()
    # in Japanese the phase is named as everywhere else on the page (it read "attackフェーズ")
    console.cookies.load({settings.LANGUAGE_COOKIE_NAME: "ja"})
    r = console.post(f"/console/{generated.slug}/phases/{attack.pk}/schedule/", {
        f"p{attack.pk}-opens_at": attack.opens_at.astimezone(tz).strftime("%Y-%m-%dT%H:%M"),
        f"p{attack.pk}-closes_at": (new_close + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")}, follow=True)
    assert "Final の攻撃フェーズは" in r.content.decode() and "attackフェーズ" not in r.content.decode()
    console.cookies.load({settings.LANGUAGE_COOKIE_NAME: "en"})
    r = console.post(f"/console/{generated.slug}/phases/{anon.pk}/schedule/", {
        f"p{anon.pk}-opens_at": anon.opens_at.astimezone(tz).strftime("%Y-%m-%dT%H:%M"),
        f"p{anon.pk}-closes_at": (attack.opens_at + timedelta(days=1)).astimezone(tz).strftime("%Y-%m-%dT%H:%M")},
        follow=True)
    assert "The phase was not changed: the attack phase opens at" in r.content.decode()
    # teams cannot
    team = Client()
    team.force_login(user("alpha1"))
    assert team.post(f"/console/{generated.slug}/phases/{anon.pk}/schedule/", {}).status_code == 403
    assert APIClient().patch(f"/api/phases/{anon.pk}/", {}, format="json").status_code == 401
    alpha = APIClient()
    alpha.force_authenticate(user("alpha1"))
    assert alpha.patch(f"/api/phases/{anon.pk}/", {"closes_at": new_close.isoformat()},
                       format="json").status_code == 403


def test_the_api_needs_a_time_and_names_the_field(generated):
    rnd, anon, attack = phases(generated)
    api = judge_api()
    r = api.patch(f"/api/phases/{anon.pk}/", {}, format="json")
    assert r.status_code == 400 and "opens_at, closes_at" in r.json()["error"]["message"]
    r = api.patch(f"/api/phases/{anon.pk}/", {"closes_at": "tomorrow"}, format="json")
    assert r.status_code == 400 and r.json()["error"]["issues"][0]["field"] == "closes_at"
