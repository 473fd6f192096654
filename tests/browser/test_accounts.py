"""Accounts and teams in Chromium at 1280 px in English and 390 px in Japanese (EACH_ONCE): a forgotten password is
reset by following the link of the mail (Django's locmem backend in tests), the account page changes
the e-mail and language, and the team page renames the team and makes a new invitation code. No page
scrolls sideways; every control has a label."""
from __future__ import annotations

import re

import pytest

from tests.browser.layout import overflow_problems
from tests.browser.test_contest_flow import assert_labelled
from tests.browser.test_every_page_policy import EACH_ONCE, _context, _login
from tests.contest.conftest import contest_spec

pytestmark = [pytest.mark.browser]

TEXT = {"en": {"forgot": "Forgot your password?", "send": "Send the link", "set": "Set the password",
               "done": "Password set", "save": "Save", "rename": "Rename", "new_code": "Make a new code"},
        "ja": {"forgot": "パスワードを忘れましたか?", "send": "リンクを送る", "set": "パスワードを設定",
               "done": "パスワードを設定しました", "save": "保存", "rename": "名前を変更", "new_code": "コードを作り直す"}}


@pytest.fixture
def account_site(live_server):
    from django.contrib.auth import get_user_model

    from contest.services.setup import create_contest
    contest = create_contest(contest_spec("ac"))
    get_user_model().objects.filter(username="alpha1").update(email="alpha1@example.org")
    return live_server.url, contest


@pytest.mark.parametrize("width,lang", EACH_ONCE)
def test_reset_a_forgotten_password_through_the_mail(account_site, browser, shot, width, lang):
    from django.core import mail

    from contest.models import Team
    base, contest = account_site
    words = TEXT[lang]
    ctx = _context(browser, base, width, lang)
    page = ctx.new_page()
    page.goto(f"{base}/login/")
    page.get_by_role("link", name=words["forgot"]).click()
    page.wait_for_url(re.compile(r"/password-reset/$"))
    assert_labelled(page)
    assert not overflow_problems(page, strict=width > 390)
    page.locator("#id_email").fill("alpha1@example.org")
    mail.outbox.clear()
    page.get_by_role("button", name=words["send"]).click()
    page.wait_for_url(re.compile(r"/password-reset/sent/$"))
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["alpha1@example.org"]
    link = re.search(r"https?://\S+/password-reset/\S+/", mail.outbox[0].body).group(0)
    page.goto(link)
    page.locator("#id_new_password1").fill("Fresh-pass-2026")
    page.locator("#id_new_password2").fill("Fresh-pass-2026")
    assert_labelled(page)
    shot(page, f"password-reset-{width}-{lang}")
    page.get_by_role("button", name=words["set"]).click()
    page.wait_for_url(re.compile(r"/password-reset/done/$"))
    assert words["done"] in page.locator("main h1").inner_text()
    _login(page, base, "alpha1", "Fresh-pass-2026")
    assert page.url.endswith("/c/ac/team/"), page.url                  # logged in with the new password

    # the account page: e-mail and language
    page.goto(f"{base}/account/")
    assert_labelled(page)
    assert not overflow_problems(page, strict=width > 390)
    page.locator("#id_email").fill("alpha@example.org")
    other = "ja" if lang == "en" else "en"
    page.locator("#id_language").select_option(other)
    page.get_by_role("button", name=words["save"], exact=True).click()
    page.wait_for_load_state()
    assert page.locator("html").get_attribute("lang") == other
    page.locator("#id_language").select_option(lang)
    page.get_by_role("button", name=TEXT[other]["save"], exact=True).click()
    page.wait_for_load_state()
    assert page.locator("html").get_attribute("lang") == lang

    # the team page: a new invitation code, then a new name (no upload yet)
    team = Team.objects.get(contest=contest, number=1)
    page.goto(f"{base}/c/ac/teams/{team.pk}/")
    assert_labelled(page)
    assert not overflow_problems(page, strict=width > 390)
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name=words["new_code"]).click()
    page.wait_for_load_state()
    team.refresh_from_db()
    assert page.locator("#invitation-code").input_value() == team.invitation_code
    page.locator("#id_name").fill(f"Alpha {width} {lang}")
    page.get_by_role("button", name=words["rename"], exact=True).click()
    page.wait_for_load_state()
    team.refresh_from_db()
    assert team.name == f"Alpha {width} {lang}" and team.name in page.locator("main h1").inner_text()
    message = page.locator("ul.messages li").first
    assert team.name in message.inner_text()                          # says the new name
    assert 0 <= message.bounding_box()["y"] < page.viewport_size["height"]   # the answer is in view
    shot(page, f"team-page-{width}-{lang}")
    ctx.close()


NEWCOMER = {"en": {"optional": "can be reset only by a link sent to this address", "create": "Create account",
                   "join": "Join a team", "subject": "TraceCup: choose a new password",
                   "folder": "This site does not send mail"},
            "ja": {"optional": "再設定用のリンクはこのアドレスにだけ送られます", "create": "アカウントを作成",
                   "join": "チームに参加", "subject": "TraceCup: 新しいパスワードを選んでください",
                   "folder": "このサイトはメールを送信しません"}}


@pytest.mark.parametrize("width,lang", EACH_ONCE)
def test_a_newcomer_finds_the_join_link_and_the_demo_mail(account_site, browser, settings, tmp_path, shot,
                                                          width, lang):
    """A new member: sign-up says the e-mail is what a password reset needs; signed in and in no team, the
    home page offers 'Join a team'; a site that writes its mail to a folder (the demo) names that folder on
    the 'Check your mailbox' page, and the mail there is readable, its subject in the asker's language."""
    settings.EMAIL_BACKEND = "contest.mail_folder.FolderEmailBackend"
    settings.TRACECUP_MAIL_DIR = str(tmp_path / "mail")
    base, _contest = account_site
    words = NEWCOMER[lang]
    ctx = _context(browser, base, width, lang)
    page = ctx.new_page()
    page.goto(f"{base}/signup/")
    assert words["optional"] in page.locator("#id_email_helptext").inner_text()
    name = f"newbie{width}{lang}"
    page.locator("#id_username").fill(name)
    page.locator("#id_email").fill(f"{name}@example.org")
    page.locator("#id_password1").fill("Newcomer-pass-2026")
    page.locator("#id_password2").fill("Newcomer-pass-2026")
    page.get_by_role("button", name=words["create"]).click()
    page.wait_for_url(re.compile(r"/join/$"))

    page.goto(f"{base}/")
    join = page.locator("#join-a-team").get_by_role("link", name=words["join"], exact=True)
    assert join.is_visible() and not overflow_problems(page, strict=width > 390)
    join.click()
    page.wait_for_url(re.compile(r"/join/$"))

    page.context.clear_cookies()
    page.context.add_cookies([{"name": "django_language", "value": lang, "url": base}])
    page.goto(f"{base}/password-reset/")
    page.locator("#id_email").fill(f"{name}@example.org")
    page.get_by_role("button", name=TEXT[lang]["send"]).click()
    page.wait_for_url(re.compile(r"/password-reset/sent/$"))
    note = page.locator("#mail-folder")
    assert words["folder"] in note.inner_text() and str(tmp_path / "mail") in note.inner_text()
    assert not overflow_problems(page, strict=width > 390)
    shot(page, f"reset-mail-folder-{width}-{lang}")
    [mail_file] = (tmp_path / "mail").glob("*.txt")
    text = mail_file.read_text(encoding="utf-8")
    assert f"Subject: {words['subject']}\n" in text and f"To: {name}@example.org\n" in text
    page.goto(re.search(r"https?://\S+/password-reset/\S+/", text).group(0))
    assert page.locator("#id_new_password1").is_visible()              # the link in the file works
    ctx.close()
