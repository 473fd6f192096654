"""A failed "Create contest" submit is summarized at the top of the console page: a message that the contest
was not created, each problem linking to its field, and the form posts to the summary's anchor so the
response opens there, in both languages."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model

from contest.models import Contest
from tests.web.test_pages import _console_form

LEAD = {"en": "The contest was not created. Correct these fields and submit again:",
        "ja": "コンテストは作成されませんでした。次の項目を直してもう一度送信してください:"}


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_a_failed_create_shows_a_summary_at_the_top_linking_to_the_fields(db, client_for, lang):
    get_user_model().objects.create_user("boss", password="x-very-long-pass", is_staff=True)
    boss = client_for("boss")
    boss.cookies["django_language"] = lang
    blank = boss.get("/console/").content.decode()
    # the forms post to the page itself: an anchor in their action would stay in the address of the
    # contest page a successful create redirects to (a redirect keeps the fragment)
    assert 'id="form-errors"' not in blank and "#form-errors" not in blank
    form = _console_form(**{"c-name": "", "c-slug": "cup", "c-synthesizer": "city"})
    r = boss.post("/console/", form)
    page = r.content.decode()
    assert r.status_code == 200 and not Contest.objects.filter(slug="cup").exists()
    # focused (and so scrolled to) as the page loads: autofocus on the focusable summary
    summary = re.search(r'<div class="msg msg-error" role="alert" id="form-errors" tabindex="-1" autofocus>(.*?)</div>',
                        page, re.S)
    assert summary and LEAD[lang] in summary.group(1)
    assert '<a href="#id_c-name">' in summary.group(1)
    # the summary comes before the list of contests and the forms, right under the heading
    assert page.index('id="form-errors"') < page.index('id="new"')


@pytest.mark.parametrize("missing", ["c-name", "r-attack_opens", "r-anonymization_opens"])
def test_a_wrong_phase_order_is_reported_with_the_missing_fields(db, client_for, missing):
    """One submit reports every problem: the anonymization phase closing after the attack phase closes is
    reported beside a missing name or a missing time (the order was checked only when all four times were
    given, so a second submit found it)."""
    get_user_model().objects.create_user("boss", password="x-very-long-pass", is_staff=True)
    form = _console_form(**{"c-name": "Cup", "c-slug": "cup", "c-synthesizer": "city",
                            "r-anonymization_closes": "2099-02-01T10:00", missing: ""})
    r = client_for("boss").post("/console/", form)
    summary = r.content.decode().split('id="form-errors"')[1].split("</div>")[0]
    assert not Contest.objects.filter(slug="cup").exists()
    assert f'<a href="#id_{missing}">' in summary, summary
    assert "Phases must be in order" in summary, summary
