"""A new contest is a draft, at 1280 px in English and 390 px in Japanese (EACH_ONCE): a visitor meets the site's 404 page
and no list names it; its organizer's console says it is a draft and opens it with 'Open to the public'
(after a confirmation), and then the visitor finds it on the home page."""
from __future__ import annotations

import re

import pytest

from tests.browser.layout import overflow_problems
from tests.browser.test_every_page_policy import EACH_ONCE, _context, _login
from tests.contest.conftest import contest_spec

pytestmark = [pytest.mark.browser]

TEXT = {"en": {"open": "Open to the public", "draft": "Draft: only the organizers see this contest",
               "opened": "is open to the public"},
        "ja": {"open": "公開する", "draft": "下書き: このコンテストは運営者にしか見えません",
               "opened": "を公開しました"}}


@pytest.mark.parametrize("width,lang", EACH_ONCE)
def test_a_draft_is_opened_to_the_public_from_the_console(live_server, browser, shot, width, lang):
    from contest.models import Contest
    from contest.services.setup import create_contest
    spec = contest_spec(f"d{width}{lang}")
    del spec["contest"]["draft"]
    contest = create_contest(spec)
    base, words = live_server.url, TEXT[lang]
    visitor = _context(browser, base, width, lang).new_page()
    assert visitor.goto(f"{base}/c/{contest.slug}/").status == 404
    visitor.goto(f"{base}/")
    assert visitor.get_by_role("link", name=contest.name).count() == 0

    ctx = _context(browser, base, width, lang)
    page = ctx.new_page()
    _login(page, base, "judge", "judge-pass")
    page.goto(f"{base}/console/{contest.slug}/")
    panel = page.locator("#draft")
    assert words["draft"] in panel.inner_text() and panel.is_visible()
    assert panel.bounding_box()["y"] < page.viewport_size["height"]    # said at the top of the console
    assert not overflow_problems(page, strict=width > 390), overflow_problems(page, strict=width > 390)
    shot(page, f"console-draft-{width}-{lang}")
    page.once("dialog", lambda d: d.accept())
    panel.get_by_role("button", name=words["open"]).click()
    page.wait_for_url(re.compile(rf"/console/{contest.slug}/$"))
    assert words["opened"] in page.locator("ul.messages").inner_text()
    assert page.locator("#draft").count() == 0
    contest.refresh_from_db()
    assert not contest.draft and Contest.objects.filter(draft=True).count() == 0

    assert visitor.goto(f"{base}/c/{contest.slug}/").status == 200
    visitor.goto(f"{base}/")
    assert visitor.get_by_role("link", name=contest.name).is_visible()
    ctx.close()
    visitor.context.close()
