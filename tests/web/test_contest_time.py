"""Pages show a contest time one way: ``Contest.local_text`` through the ``contest_time`` filter.

Stored times are UTC (settings.TIME_ZONE) and a reader's zone is anything; a contest's times read in
the contest's own zone, as in its messages (``2019-11-20 17:00 JST``).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.template import Context, Template

from contest.models import Phase

pytestmark = pytest.mark.django_db

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def test_every_phase_time_on_the_pages_is_the_contests_local_text(make_contest, client, client_for):
    contest = make_contest()
    contest.time_zone = "America/Los_Angeles"  # far from UTC and from Tokyo, with summer time
    contest.save()
    phases = list(Phase.objects.filter(round__contest=contest))
    assert phases
    pages = {"rules": client.get(f"/c/{contest.slug}/rules/").content.decode(),
             "home": client.get(f"/c/{contest.slug}/").content.decode(),
             "console": client_for("judge").get(f"/console/{contest.slug}/").content.decode()}
    for p in phases:
        for dt in (p.opens_at, p.closes_at):
            text = contest.local_text(dt)
            assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d P[DS]T", text), text
            for name, html in pages.items():
                assert text in html, (name, text)
            assert dt.strftime("%Y-%m-%d %H:%M UTC") not in pages["rules"]


def test_the_filter_formats_to_the_minute_or_the_second_and_leaves_a_missing_time_empty(make_contest):
    contest = make_contest()
    phase = Phase.objects.filter(round__contest=contest).first()
    out = Template("{% load contest_time %}[{{ t|contest_time:c }}|{{ t|contest_time_seconds:c }}|"
                   "{{ none|contest_time_seconds:c|default:'—' }}]").render(
        Context({"t": phase.opens_at, "c": contest, "none": None}))
    assert out == f"[{contest.local_text(phase.opens_at)}|{contest.local_text(phase.opens_at, seconds=True)}|—]"


def test_no_template_formats_a_time_by_itself():
    """Only machine formats (ISO ``c``, epoch ``U``) are written with ``|date``; people read contest_time."""
    found = []
    for path in sorted(TEMPLATES.rglob("*.html")):
        text = path.read_text()
        found += [f"{path.name}: {m}" for m in re.findall(r"{% timezone [^%]*%}|\|date:(?!'c'|'U'|\"c\"|\"U\")\S+",
                                                            text)]
    assert not found, found
