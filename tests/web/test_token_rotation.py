"""The API token acts as its user without the password: a new password (changed on the account page,
reset by e-mail, set by the admin) replaces it, and its owner can revoke it from the account page. The
old token is refused by the API at once."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from contest.models import AuditLog
from tests.contest.conftest import user

pytestmark = pytest.mark.django_db


def _answer(key) -> int:
    """The API's status for a request made with token ``key``."""
    return APIClient(HTTP_AUTHORIZATION=f"Token {key}").get("/api/teams/join/").status_code


def _token(username) -> str:
    return Token.objects.get_or_create(user=user(username))[0].key


def test_a_password_change_replaces_the_token(generated, client_for):
    old = _token("beta1")
    assert _answer(old) == 405                                 # known (GET is not this endpoint's method)
    c = client_for("beta1")
    r = c.post("/account/password/", {"old_password": "pw", "new_password1": "Beta-new-pass-9",
                                      "new_password2": "Beta-new-pass-9"})
    assert r.status_code == 302
    new = Token.objects.get(user=user("beta1")).key
    assert new != old and _answer(old) == 401 and _answer(new) == 405
    assert AuditLog.objects.filter(action="rotate_token", actor=user("beta1"), details__reason="password").count() == 1
    assert new in c.get("/account/").content.decode()          # the page shows the new one


def test_a_password_reset_by_mail_replaces_the_token(generated):
    get_user_model().objects.filter(username="alpha1").update(email="alpha1@example.org")
    old = _token("alpha1")
    c = Client()
    c.post("/password-reset/", {"email": "alpha1@example.org"})
    link = re.search(r"https?://[^/\s]+(/password-reset/\S+/)", mail.outbox[0].body).group(1)
    form_url = c.get(link)["Location"]
    r = c.post(form_url, {"new_password1": "A-new-pass-2026!", "new_password2": "A-new-pass-2026!"})
    assert r.status_code == 302
    assert _answer(old) == 401 and Token.objects.get(user=user("alpha1")).key != old


def test_a_password_set_elsewhere_replaces_it_and_a_rehash_does_not(generated):
    u = user("gamma1")
    old = _token("gamma1")
    u.set_password("pw")                     # the same password again: what a hash upgrade at login does
    u.save()
    u.save(update_fields=["last_login"])
    assert Token.objects.get(user=u).key == old
    u.set_password("Gamma-admin-set-7")      # the admin's form and manage.py changepassword
    u.save()
    assert _answer(old) == 401 and Token.objects.get(user=u).key != old
    # A user without a token gets none from a new password: the account page makes one when asked.
    v = get_user_model().objects.create_user("tokenless", password="pw")
    v.set_password("Other-pass-123")
    v.save()
    assert not Token.objects.filter(user=v).exists()


def test_the_owner_revokes_the_token_from_the_account_page(generated, client_for):
    old = _token("alpha1")
    c = client_for("alpha1")
    assert "/account/token/revoke/" in c.get("/account/").content.decode()
    r = c.post("/account/token/revoke/")
    assert r.status_code == 302 and r["Location"] == "/account/#token"
    assert _answer(old) == 401 and not Token.objects.filter(user=user("alpha1")).exists()
    page = c.get("/account/").content.decode()
    assert "You have no API token" in page and "/account/token/revoke/" not in page
    assert AuditLog.objects.filter(action="revoke_token", actor=user("alpha1")).count() == 1
    assert c.get("/account/token/revoke/").status_code == 405          # a link cannot revoke it
    c.post("/token/", {"next": "/account/#token"})                      # a new one on request
    new = Token.objects.get(user=user("alpha1")).key
    assert new != old and _answer(new) == 405 and new in c.get("/account/").content.decode()


def test_a_script_revokes_its_own_token_through_the_api(generated):
    old = _token("gamma1")
    api = APIClient(HTTP_AUTHORIZATION=f"Token {old}")
    assert api.delete("/api/auth/token/").status_code == 204
    assert _answer(old) == 401 and not Token.objects.filter(user=user("gamma1")).exists()
    assert AuditLog.objects.filter(action="revoke_token", actor=user("gamma1")).count() == 1
    r = APIClient().delete("/api/auth/token/")
    assert r.status_code == 401 and r.json()["error"]["code"] == "not_authenticated"
