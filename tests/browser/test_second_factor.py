"""The second factor in Chromium, as an operator meets it: a superuser who must have one (production's
TRACECUP_REQUIRE_2FA_FOR) signs in with the password, is sent from the console to the enrolment page,
adds an authenticator with the key the page shows (the code computed here, as the app would), reaches the
console; signs out, signs in again and gives the code on the verification page. At 1280 px in English
and 390 px in Japanese (EACH_ONCE), under the site's Content-Security-Policy (the QR code is a data: image)."""
from __future__ import annotations

import re
from base64 import b32decode

import pytest

from tests.browser.layout import overflow_problems
from tests.browser.test_contest_flow import assert_labelled
from tests.browser.test_every_page_policy import EACH_ONCE, _context, _login

pytestmark = [pytest.mark.browser]

PASSWORD = "Root-pass-for-2fa-2026"
WORDS = {"en": {"turn_on": "Turn it on", "verify": "Verify"}, "ja": {"turn_on": "有効にする", "verify": "確認"}}


def _code(key: bytes) -> str:
    """The code an authenticator app shows now for ``key`` (django-otp's TOTP: 30 s steps, 6 digits)."""
    from django_otp.oath import totp
    return f"{totp(key):06d}"


@pytest.mark.parametrize("width,lang", EACH_ONCE)
def test_a_superuser_enrols_and_signs_in_with_a_code(live_server, settings, browser, shot, width, lang):
    from django.contrib.auth import get_user_model
    from django_otp.plugins.otp_totp.models import TOTPDevice

    settings.TRACECUP_REQUIRE_2FA_FOR = "superusers"
    get_user_model().objects.create_superuser("root", "root@example.org", PASSWORD)
    base, words = live_server.url, WORDS[lang]
    page = _context(browser, base, width, lang).new_page()
    _login(page, base, "root", PASSWORD)
    page.wait_for_url(re.compile(r"/account/two-factor/\?next=%2Fconsole%2F$"))
    assert page.locator("img.qr").evaluate("img => img.complete && img.naturalWidth > 0")
    assert_labelled(page)
    assert not overflow_problems(page, strict=width > 390)
    shot(page, f"two-factor-enrol-{width}-{lang}")
    secret = page.locator("#otp-secret").input_value()
    page.locator("#id_code").fill(_code(b32decode(secret)))
    page.get_by_role("button", name=words["turn_on"]).click()
    page.wait_for_url(re.compile(r"/console/$"))
    assert TOTPDevice.objects.get(user__username="root").confirmed

    # A new session (another browser): the password alone leads to the code's page, whatever is asked for.
    page.context.clear_cookies()
    page.context.add_cookies([{"name": "django_language", "value": lang, "url": base}])
    TOTPDevice.objects.update(last_t=-1)       # the app's next code may fall in the same 30 s as the first
    _login(page, base, "root", PASSWORD)
    page.wait_for_url(re.compile(r"/account/two-factor/verify/\?next="))
    page.goto(f"{base}/admin/")
    page.wait_for_url(re.compile(r"/account/two-factor/verify/\?next=%2Fadmin%2F$"))
    assert_labelled(page)
    shot(page, f"two-factor-verify-{width}-{lang}")
    page.locator("#id_code").fill(_code(TOTPDevice.objects.get(user__username="root").bin_key))
    page.get_by_role("button", name=words["verify"]).click()
    page.wait_for_url(re.compile(r"/admin/$"))
    assert page.locator("#site-name, #user-tools").first.is_visible()
    page.context.close()
