"""The organizer console answers every action where the organizer is looking, at 1280 px in English
and 390 px in Japanese (EACH_ONCE): the message of "Change dates" (refused), "Announce", "Publish" (refused)
lies inside the visible area after the page's jump to the section. Moving a running phase that has
uploads asks first and says what teams will see; "Close now" is offered on open phases only; the
header's job count follows the server without a reload."""
from __future__ import annotations

import pytest

from tests.browser.test_every_page_policy import EACH_ONCE, _context, _login
from tests.contest.conftest import anonymize_csv, contest_spec

pytestmark = [pytest.mark.browser]

JUDGE = ("judge", "judge-pass")


@pytest.fixture
def console_site(live_server):
    from contest.models import Dataset
    from contest.services import uploads
    from contest.services.generation import generate_round_data
    from contest.services.setup import create_contest
    from tests.contest.conftest import user

    contest = create_contest(contest_spec("cm"))
    generate_round_data(contest.rounds.get())
    # the round's figures jobs that generation queued are not this test's subject: done
    from contest.models import Job
    Job.objects.filter(contest=contest, status=Job.QUEUED).update(status=Job.SUCCEEDED)
    ds = Dataset.objects.get(round__contest=contest, team__number=1, challenge=1)
    # an upload in the open anonymization phase; no worker runs, so its job stays queued
    uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds, content=anonymize_csv(ds), name="a.csv")
    return live_server.url, contest


def _in_view(page, locator) -> bool:
    box = locator.bounding_box()
    height = page.viewport_size["height"]
    return box is not None and box["y"] >= 0 and box["y"] + min(box["height"], 40) <= height


@pytest.mark.parametrize("width,lang", EACH_ONCE)
def test_console_messages_are_where_the_organizer_is(console_site, browser, width, lang):
    from contest.models import Job
    base, contest = console_site
    ctx = _context(browser, base, width, lang)
    page = ctx.new_page()
    _login(page, base, *JUDGE)
    page.goto(f"{base}/console/cm/")
    rows = page.locator("#rounds ~ .card tbody tr")
    anon_row, attack_row = rows.nth(0), rows.nth(1)

    # "Close now" on the open anonymization phase only, not on the attack phase that has not opened
    assert anon_row.locator("form[action$='/close/'] button").count() == 1
    assert attack_row.locator("form[action$='/close/'] button").count() == 0

    # the job count of the header follows the server: the upload's job is queued, then it is not
    counts = page.locator("#job-counts")
    assert " 1 " in f" {counts.inner_text()} "
    Job.objects.filter(contest=contest, status=Job.QUEUED).update(status=Job.SUCCEEDED)
    page.wait_for_function("() => / 0 /.test(' ' + document.querySelector('#job-counts').innerText + ' ')",
                           timeout=15_000)

    # "Change dates" of the running phase with an upload: asked first, with what teams will see
    anon_row.locator("details.schedule summary").click()
    asked = []

    def answer(dialog):
        asked.append(dialog.message)
        dialog.dismiss()
    page.once("dialog", answer)
    anon_row.locator("input[name$=opens_at]").fill("2099-01-01T00:00")   # the opening moves
    anon_row.locator("form[action$='/schedule/'] button[type=submit]").click()
    page.wait_for_timeout(300)
    assert asked and ("waiting for the phase" in asked[0] if lang == "en" else "待機" in asked[0]), asked
    assert page.url.endswith("/console/cm/")                                # dismissed: nothing sent
    # only the deadline changes: nothing to ask (teams keep uploading); the answer is in view
    anon_row.locator("input[name$=opens_at]").evaluate("el => { el.value = el.defaultValue; }")
    anon_row.locator("input[name$=closes_at]").fill("2099-01-01T00:00")
    anon_row.locator("form[action$='/schedule/'] button[type=submit]").click()
    page.wait_for_load_state()
    assert len(asked) == 1
    assert _in_view(page, page.locator("ul.messages li").first)
    anon_row = page.locator("#rounds ~ .card tbody tr").nth(0)
    attack_row = page.locator("#rounds ~ .card tbody tr").nth(1)

    # a refused order (closing before opening) on the attack phase: the refusal is in view
    attack_row.locator("details.schedule summary").click()
    attack_row.locator("input[name$=closes_at]").fill("2000-01-01T00:00")
    attack_row.locator("form[action$='/schedule/'] button[type=submit]").click()
    page.wait_for_load_state()
    message = page.locator("ul.messages li").first
    assert "error" in message.get_attribute("class")
    assert _in_view(page, message), (width, lang, message.bounding_box())

    # an announcement: its confirmation is in view
    page.locator("#id_a-title").fill("Hello")
    page.locator("#id_a-body").fill("The phase is open.")
    page.locator("#announcements ~ details form button[type=submit], #announcements + details form button").first.click()
    page.wait_for_load_state()
    message = page.locator("ul.messages li").first
    assert "success" in message.get_attribute("class") and _in_view(page, message), message.bounding_box()

    # publishing a round not played: refused, and the refusal is in view
    page.evaluate("""() => {
      const form = document.querySelector('form.publish-form');
      const round = document.createElement('input');
      round.type = 'hidden'; round.name = 'round'; round.value = '1';
      form.appendChild(round);
      form.querySelector('button').disabled = false;
    }""")
    page.once("dialog", lambda d: d.accept())
    page.locator("form.publish-form button").click()
    page.wait_for_load_state()
    message = page.locator("ul.messages li").first
    assert "error" in message.get_attribute("class") and _in_view(page, message), message.bounding_box()

    # "Open now" refused (the sets are not pseudonymized yet): the refusal is in view
    from django.utils import timezone

    from contest.models import Phase
    anon = Phase.objects.get(round__contest=contest, kind=Phase.ANONYMIZATION)
    anon.closed_at = timezone.now()
    anon.save()
    page.goto(f"{base}/console/cm/")
    page.locator("form[action$='/open-attack/'] button").click()
    page.wait_for_load_state()
    message = page.locator("ul.messages li").first
    assert "error" in message.get_attribute("class") and _in_view(page, message), message.bounding_box()
    ctx.close()
