"""The second factor (TOTP, django-otp; contest.second_factor): TRACECUP_REQUIRE_2FA_FOR sends superusers
(or organizers) without one from the console and the admin to the enrolment page; a password accepted
for an account with a device leaves the session owing a code, and nothing but the code's page opens
until it is given; the API's token endpoint does not hand a token out for the password alone."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django_otp.oath import totp
from django_otp.plugins.otp_totp.models import TOTPDevice

from contest.models import AuditLog
from tests.contest.conftest import user

pytestmark = pytest.mark.django_db


def code_of(device) -> str:
    """The code the device's app shows now."""
    return f"{totp(device.bin_key, step=device.step, t0=device.t0, digits=device.digits):0{device.digits}d}"


@pytest.fixture
def root(db):
    return get_user_model().objects.create_superuser("root", password="root-pass-2026")


def test_a_required_superuser_enrols_before_the_console_and_the_admin(root, settings):
    settings.TRACECUP_REQUIRE_2FA_FOR = "superusers"
    settings.OTP_TOTP_THROTTLE_FACTOR = 0    # django-otp's delay after a wrong code (1 s, doubling) is not tested here
    c = Client()
    c.force_login(root)
    for url in ("/console/", "/admin/", "/admin/auth/user/"):
        r = c.get(url)
        assert r.status_code == 302 and r["Location"].startswith("/account/two-factor/?next="), url
    assert c.get("/").status_code == 200                                 # public pages stay open
    page = c.get("/account/two-factor/?next=/console/").content.decode()
    device = TOTPDevice.objects.get(user=root, confirmed=False)
    secret = re.search(r'id="otp-secret"[^>]*value="([A-Z2-7]+)"', page).group(1)
    assert "data:image/svg+xml;base64," in page and "otpauth://totp/" in page
    r = c.post("/account/two-factor/", {"code": "000000" if code_of(device) != "000000" else "111111",
                                        "next": "/console/"})
    assert r.status_code == 200 and "not right" in r.content.decode()
    assert not TOTPDevice.objects.get(pk=device.pk).confirmed
    r = c.post("/account/two-factor/", {"code": code_of(device), "next": "/console/"})
    assert r.status_code == 302 and r["Location"] == "/console/"
    assert TOTPDevice.objects.get(pk=device.pk).confirmed and secret
    assert c.get("/console/").status_code == 200 and c.get("/admin/").status_code == 200
    assert AuditLog.objects.filter(action="enable_second_factor", actor=root).count() == 1


def test_a_password_alone_opens_nothing_until_the_code(generated, settings):
    settings.TRACECUP_REQUIRE_2FA_FOR = ""                               # a device asks for its code anyway
    device = TOTPDevice.objects.create(user=user("judge"), name="phone", confirmed=True)
    c = Client()
    r = c.post("/login/", {"username": "judge", "password": "judge-pass"})
    assert r.status_code == 302
    for url in ("/console/", f"/c/{generated.slug}/", "/account/", "/api/contests/"):
        r = c.get(url)
        assert r.status_code == 302 and r["Location"].startswith("/account/two-factor/verify/?next="), url
        assert "no-store" in r["Cache-Control"]                          # an answer made for a session
    r = c.post("/account/two-factor/verify/", {"code": "12345", "next": "/console/"})
    assert r.status_code == 200 and "6 digits" in r.content.decode()
    assert c.get("/console/").status_code == 302
    r = c.post("/account/two-factor/verify/", {"code": code_of(device), "next": "/console/"})
    assert r.status_code == 302 and r["Location"] == "/console/"
    assert c.get("/console/").status_code == 200 and c.get("/account/").status_code == 200
    # A next address of another site is not followed.
    c2 = Client()
    c2.post("/login/", {"username": "judge", "password": "judge-pass"})
    TOTPDevice.objects.filter(pk=device.pk).update(last_t=-1)
    r = c2.post("/account/two-factor/verify/", {"code": code_of(device), "next": "https://evil.example/"})
    assert r["Location"] == "/"


def test_who_must_have_it_follows_the_setting(generated, settings, root):
    judge = Client()
    judge.force_login(user("judge"))
    settings.TRACECUP_REQUIRE_2FA_FOR = "superusers"
    assert judge.get("/console/").status_code == 200                     # an organizer, not a superuser
    settings.TRACECUP_REQUIRE_2FA_FOR = "organizers"
    assert judge.get("/console/")["Location"].startswith("/account/two-factor/?next=")
    member = Client()
    member.force_login(user("alpha1"))
    assert member.get(f"/c/{generated.slug}/team/").status_code == 200   # teams are not asked
    settings.TRACECUP_REQUIRE_2FA_FOR = ""
    su = Client()
    su.force_login(root)
    assert su.get("/console/").status_code == 200


def test_the_token_endpoint_does_not_pass_by_the_second_factor(generated, settings):
    TOTPDevice.objects.create(user=user("judge"), name="phone", confirmed=True)
    r = Client().post("/api/auth/token/", {"username": "judge", "password": "judge-pass"})
    assert r.status_code == 403 and "second factor" in r.json()["error"]["message"]
    assert Client().post("/api/auth/token/", {"username": "alpha1", "password": "pw"}).status_code == 200
    settings.TRACECUP_REQUIRE_2FA_FOR = "organizers"
    TOTPDevice.objects.filter(user=user("judge")).delete()
    assert Client().post("/api/auth/token/", {"username": "judge", "password": "judge-pass"}).status_code == 403


def test_production_requires_it_of_superusers_by_default():
    script = "from contest import settings as s; print(repr(s.TRACECUP_REQUIRE_2FA_FOR))"
    env = dict(os.environ, TRACECUP_PRODUCTION="1", SECRET_KEY="second-factor-test-" + "abcdefghij" * 5)
    env.pop("TRACECUP_REQUIRE_2FA_FOR", None)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "'superusers'"
    env["TRACECUP_REQUIRE_2FA_FOR"] = "everyone"
    bad = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert bad.returncode != 0 and "TRACECUP_REQUIRE_2FA_FOR" in bad.stderr


def test_deleting_the_account_deletes_its_device(generated, client_for):
    c = client_for("beta1")
    TOTPDevice.objects.create(user=user("beta1"), name="phone", confirmed=True)  # added after this sign-in
    r = c.post("/account/delete/", {"password": "pw"})
    assert r.status_code == 302 and r["Location"] == "/"
    assert not TOTPDevice.objects.filter(name="phone").exists()
