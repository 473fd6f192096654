"""An account's owner deletes it: personal fields erased, memberships and the team's results kept under the
team's name, audited, confirmed with the password; the site's last superuser and a contest's only
organizer are refused until someone takes over. The privacy notice is the operator's text or a default."""
from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from contest.models import AnonymizedSet, AuditLog, Membership, Team
from contest.services import accounts
from tests.contest.conftest import user

pytestmark = pytest.mark.django_db


def test_the_owner_deletes_the_account_and_the_team_keeps_its_results(closed_unobfuscated, client_for):
    contest = closed_unobfuscated
    alpha = Team.objects.get(contest=contest, number=1)
    me = user("alpha1")
    token = Token.objects.get_or_create(user=me)[0].key
    uploads = set(AnonymizedSet.objects.filter(team=alpha).values_list("pk", "uploaded_by_id"))
    get_user_model().objects.filter(pk=me.pk).update(email="alpha1@example.org", first_name="Ada", last_name="L")
    Client().post("/login/", {"username": "alpha1", "password": "wrong"})        # a login record naming it
    assert AccessAttempt.objects.filter(username="alpha1").exists()
    c = client_for("alpha1")
    page = c.get("/account/delete/").content.decode()
    assert "Alpha" in page and "last member" not in page                          # alpha2 stays in the team
    r = c.post("/account/delete/", {"password": "not mine"})
    assert r.status_code == 200 and "not your password" in r.content.decode()
    assert user("alpha1").is_active                                               # nothing changed
    r = c.post("/account/delete/", {"password": "pw"})
    assert r.status_code == 302 and r["Location"] == "/"
    gone = get_user_model().objects.get(pk=me.pk)
    assert gone.username == f"deleted~{me.pk}" and accounts.is_deleted(gone)
    assert (gone.email, gone.first_name, gone.last_name) == ("", "", "")
    assert not gone.has_usable_password() and not gone.is_active
    assert not Token.objects.filter(user=gone).exists() and not AccessAttempt.objects.filter(username="alpha1").exists()
    assert Membership.objects.filter(user=gone, team=alpha).exists()
    assert set(AnonymizedSet.objects.filter(team=alpha).values_list("pk", "uploaded_by_id")) == uploads
    entry = AuditLog.objects.get(action="delete_account", object_id=str(me.pk))
    assert entry.actor_id == me.pk and entry.details == {"teams": [alpha.pk]}
    # Signed out; neither the password nor the token opens the account; the name is free for a new one.
    assert c.get("/account/").status_code == 302
    assert Client().post("/login/", {"username": "alpha1", "password": "pw"}).status_code == 200  # the form again
    assert APIClient(HTTP_AUTHORIZATION=f"Token {token}").get("/api/contests/").status_code == 401
    # The team shows the member as "deleted user", on its page, the dashboard and in the API.
    team_page = client_for("alpha2").get(f"/c/{contest.slug}/teams/{alpha.pk}/").content.decode()
    assert "deleted user" in team_page and "deleted~" not in team_page and "alpha1" not in team_page
    assert "deleted user" in client_for("alpha2").get(f"/c/{contest.slug}/team/").content.decode()
    api = APIClient()
    api.force_authenticate(user("alpha2"))
    members = api.get(f"/api/contests/{contest.slug}/me/").json()["team"]["members"]
    assert sorted(m["username"] for m in members) == ["alpha2", "deleted user"]


def test_the_last_member_is_told_what_stays(generated, client_for):
    Membership.objects.filter(user=user("beta2")).delete()
    page = client_for("beta1").get("/account/delete/").content.decode()
    assert "You are the last member of team Beta" in page
    assert client_for("beta1").post("/account/delete/", {"password": "pw"}).status_code == 302
    assert Team.objects.filter(name="Beta", contest=generated).exists()


def test_the_only_organizer_of_a_running_contest_and_the_last_superuser_are_refused(generated, client_for):
    judge = client_for("judge")
    page = judge.get("/account/delete/").content.decode()
    assert "only organizer of a contest that is not over" in page and generated.name in page
    assert 'type="password"' not in page
    judge.post("/account/delete/", {"password": "judge-pass"})
    assert user("judge").is_active and not AuditLog.objects.filter(action="delete_account").exists()
    generated.organizers.add(user("gamma1"))                                        # someone takes over
    assert judge.post("/account/delete/", {"password": "judge-pass"}).status_code == 302
    assert list(generated.organizers.all()) == [user("gamma1")]
    root = get_user_model().objects.create_superuser("root", password="root-pass")
    su = Client()
    su.force_login(root)
    assert "last superuser" in su.get("/account/delete/").content.decode()
    get_user_model().objects.create_superuser("root2", password="x")
    assert su.post("/account/delete/", {"password": "root-pass"}).status_code == 302


def test_nobody_signs_up_as_a_deleted_account(db):
    r = Client().post("/signup/", {"username": "deleted~1", "password1": "Abc-12345-xyz", "password2": "Abc-12345-xyz"})
    assert r.status_code == 200 and not get_user_model().objects.filter(username="deleted~1").exists()


def test_the_privacy_notice_is_the_operators_text_or_a_default(db, settings, tmp_path):
    home = Client().get("/").content.decode()
    assert 'href="/privacy/"' in home and 'href="/privacy/"' in Client().get("/signup/").content.decode()
    default = Client().get("/privacy/").content.decode()
    assert "delete your account" in default and "have not written a notice" in default
    notice = tmp_path / "privacy.txt"
    notice.write_text("We keep <b>e-mail</b> addresses.\n\nContact: dpo@example.org", encoding="utf-8")
    settings.TRACECUP_PRIVACY_NOTICE_FILE = str(notice)
    page = Client().get("/privacy/").content.decode()
    assert "<p>We keep &lt;b&gt;e-mail&lt;/b&gt; addresses.</p>" in page and "<p>Contact: dpo@example.org</p>" in page
    assert "have not written a notice" not in page
