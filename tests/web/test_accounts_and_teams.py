"""Accounts and teams (issue 26): password reset through the mail backend and password change (Django's
views, throttled like the login), the account page, and a team's page (members, invitation code,
renaming until the first upload, an organizer removing a member), every change audited."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client

from contest.models import AuditLog, Membership, Team
from contest.services import uploads
from tests.contest.conftest import anonymize_csv, user

pytestmark = pytest.mark.django_db


def _reset_link(message) -> str:
    return re.search(r"https?://[^/\s]+(/password-reset/\S+/)", message.body).group(1)


def test_a_forgotten_password_is_reset_through_the_mail(generated, settings):
    get_user_model().objects.filter(username="alpha1").update(email="alpha1@example.org")
    c = Client()
    c.cookies["django_language"] = "ja"
    r = c.post("/password-reset/", {"email": "alpha1@example.org"})
    assert r.status_code == 302 and r["Location"] == "/password-reset/sent/"
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["alpha1@example.org"]
    assert "パスワード" in mail.outbox[0].subject              # the mail in the asker's language
    link = _reset_link(mail.outbox[0])
    r = c.get(link)                                           # Django moves the token into the session
    assert r.status_code == 302
    form_url = r["Location"]
    r = c.post(form_url, {"new_password1": "A-new-pass-2026!", "new_password2": "A-new-pass-2026!"})
    assert r.status_code == 302 and r["Location"] == "/password-reset/done/"
    assert user("alpha1").check_password("A-new-pass-2026!")
    assert AuditLog.objects.filter(action="password_reset", actor=user("alpha1")).count() == 1
    # the link works once
    again = Client().get(link, follow=True)
    assert "does not work any more" in again.content.decode() or "もう使えません" in again.content.decode()
    # an unknown address: the same answer, no mail (nothing tells who has an account)
    r = Client().post("/password-reset/", {"email": "nobody@example.org"})
    assert r.status_code == 302 and len(mail.outbox) == 1


def test_password_reset_requests_are_throttled_like_the_login(db, settings):
    c = Client()
    answers = [c.post("/password-reset/", {"email": "x@example.org"}).status_code for _ in range(8)]
    assert answers[:settings.AXES_FAILURE_LIMIT] == [302] * settings.AXES_FAILURE_LIMIT
    assert set(answers[settings.AXES_FAILURE_LIMIT:]) == {429}
    assert "Too many attempts" in c.post("/password-reset/", {"email": "x@example.org"}).content.decode()


def test_a_password_is_changed_and_wrong_old_passwords_are_throttled(generated, client_for, settings):
    c = client_for("beta1")
    r = c.post("/account/password/", {"old_password": "pw", "new_password1": "Beta-new-pass-9",
                                      "new_password2": "Beta-new-pass-9"})
    assert r.status_code == 302 and r["Location"] == "/account/"
    assert user("beta1").check_password("Beta-new-pass-9")
    assert AuditLog.objects.filter(action="password_change", actor=user("beta1")).exists()
    guesses = [c.post("/account/password/", {"old_password": f"guess{i}", "new_password1": "Xx-123456789",
                                             "new_password2": "Xx-123456789"}).status_code for i in range(7)]
    assert guesses[:settings.AXES_FAILURE_LIMIT] == [200] * settings.AXES_FAILURE_LIMIT and guesses[-1] == 429


def test_the_account_page_keeps_email_language_and_token(generated, client_for):
    c = client_for("gamma1")
    from rest_framework.authtoken.models import Token
    c.post("/token/", {"next": "/account/#token"})          # the page shows a token once one was made
    page = c.get("/account/").content.decode()
    assert Token.objects.get(user=user("gamma1")).key in page and "/account/password/" in page
    r = c.post("/account/", {"email": "g@example.org", "language": "ja"})
    assert r.status_code == 302 and r.cookies["django_language"].value == "ja"
    assert user("gamma1").email == "g@example.org"
    assert AuditLog.objects.filter(action="update_account", actor=user("gamma1")).count() == 1
    assert '<html lang="ja">' in c.get("/account/").content.decode()
    r = c.post("/account/", {"email": "not an address", "language": "en"})
    assert r.status_code == 200 and user("gamma1").email == "g@example.org"   # refused, nothing changed
    old = Token.objects.get(user=user("gamma1")).key
    r = c.post("/token/", {"next": "/account/#token"})
    assert r["Location"] == "/account/#token" and Token.objects.get(user=user("gamma1")).key != old


def test_a_team_page_for_members_and_organizers(generated, client_for):
    contest = generated
    alpha = Team.objects.get(contest=contest, number=1)
    url = f"/c/{contest.slug}/teams/{alpha.pk}/"
    member, other, judge = client_for("alpha1"), client_for("beta1"), client_for("judge")
    assert alpha.invitation_code in member.get(url).content.decode()
    assert other.get(url).status_code == 403 and Client().get(url).status_code == 302
    # a new invitation code: the old one stops working
    old = alpha.invitation_code
    member.post(url + "invitation-code/")
    alpha.refresh_from_db()
    assert alpha.invitation_code != old and AuditLog.objects.filter(action="new_invitation_code").count() == 1
    # rename until the first upload; not to another team's name
    assert "already" in member.post(url + "rename/", {"name": "Beta"}, follow=True).content.decode()
    member.post(url + "rename/", {"name": "Aleph"})
    alpha.refresh_from_db()
    assert alpha.name == "Aleph" and AuditLog.objects.get(action="rename_team").details["old"] == "Alpha"
    ds = contest.rounds.get().datasets.get(team=alpha, challenge=1)
    uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds, content=anonymize_csv(ds), name="a.csv")
    page = member.post(url + "rename/", {"name": "Later"}, follow=True).content.decode()
    assert "only until its first upload" in page
    alpha.refresh_from_db()
    assert alpha.name == "Aleph"
    # only an organizer removes a member
    alpha2 = user("alpha2")
    assert member.post(url + f"members/{alpha2.pk}/remove/").status_code == 403
    assert "Remove" not in member.get(url).content.decode()
    judge.post(url + f"members/{alpha2.pk}/remove/")
    assert not Membership.objects.filter(team=alpha, user=alpha2).exists()
    assert AuditLog.objects.get(action="remove_member").details["member"] == "alpha2"
