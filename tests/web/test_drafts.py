"""A new contest is a draft: its organizers see it, nobody else (pages 404, no list names it, the API
neither) until 'Open to the public' in the console; the contest file may say draft: false (the demo's)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from django.test import Client
from rest_framework.test import APIClient

from contest.models import AuditLog, Contest
from contest.services.setup import SetupError, create_contest
from tests.contest.conftest import contest_spec

pytestmark = pytest.mark.django_db

CONTEST_DIR = Path(__file__).resolve().parents[2] / "contest"


def _draft(slug="dr") -> Contest:
    spec = contest_spec(slug)
    del spec["contest"]["draft"]  # as an organizer writes it: no draft key
    return create_contest(spec)


def _client(username=None) -> Client:
    from django.contrib.auth import get_user_model
    client = Client()
    if username:
        client.force_login(get_user_model().objects.get(username=username))
    return client


def test_a_new_contest_is_seen_by_its_organizers_only_until_opened():
    contest = _draft()
    assert contest.draft
    pages = ["/c/dr/", "/c/dr/rules/", "/c/dr/leaderboard/", "/c/dr/team/"]
    for who in (None, "alpha1"):                       # a visitor, a member of one of its teams
        client = _client(who)
        for url in pages:
            r = client.get(url)
            assert r.status_code == 404, (who, url)
            assert "There is no such page." in r.content.decode()   # the site's own 404, as for no contest
        assert "Contest dr" not in client.get("/").content.decode()
        api = APIClient()
        if who:
            api.force_authenticate(Contest.objects.get().teams.first().memberships.first().user)
        assert [c["slug"] for c in api.get("/api/contests/").json()] == []
        assert api.get("/api/contests/dr/").status_code == 404
    organizer = _client("judge")
    assert organizer.get("/c/dr/").status_code == 200
    home = organizer.get("/").content.decode()
    assert "Contest dr" in home and "draft" in home
    console = organizer.get("/console/dr/").content.decode()
    assert 'id="draft"' in console and "Open to the public" in console

    assert organizer.post("/console/dr/open/").status_code == 302
    contest.refresh_from_db()
    assert not contest.draft and AuditLog.objects.filter(action="open_contest", contest=contest).count() == 1
    assert 'id="draft"' not in organizer.get("/console/dr/").content.decode()
    visitor = _client()
    assert visitor.get("/c/dr/").status_code == 200 and "Contest dr" in visitor.get("/").content.decode()
    assert [c["slug"] for c in APIClient().get("/api/contests/").json()] == ["dr"]
    assert organizer.post("/console/dr/open/").status_code == 302     # once open, it stays open
    assert AuditLog.objects.filter(action="open_contest").count() == 1


def test_only_its_organizers_open_a_draft():
    contest = _draft()
    assert _client("alpha1").post("/console/dr/open/").status_code in (403, 404)
    contest.refresh_from_db()
    assert contest.draft


def test_the_contest_file_says_draft_or_not():
    spec = contest_spec("open")
    assert not create_contest(spec).draft
    spec = contest_spec("bad")
    spec["contest"]["draft"] = "no"
    with pytest.raises(SetupError) as refused:
        create_contest(spec)
    assert "contest.draft: expected true or false" in str(refused.value)
    # the demo opens at once; the example shows the key and stays a draft until opened
    assert yaml.safe_load((CONTEST_DIR / "demo.yaml").read_text())["contest"]["draft"] is False
    assert yaml.safe_load((CONTEST_DIR / "example_contest.yaml").read_text())["contest"]["draft"] is True


def test_a_member_of_a_draft_is_not_sent_to_its_pages():
    """Logging in lands a member on the join page, not on the draft's team page (a 404), and the header
    links no team of a draft; once the contest is open, both lead to the team page."""
    from contest.services.setup import open_to_public
    contest = _draft()
    client = Client()
    r = client.post("/login/", {"username": "alpha1", "password": "pw"})
    assert r.status_code == 302 and r["Location"] == "/join/"
    assert "/c/dr/team/" not in client.get("/join/").content.decode()
    open_to_public(contest)
    client = Client()
    assert client.post("/login/", {"username": "alpha1", "password": "pw"})["Location"] == "/c/dr/team/"
    assert "/c/dr/team/" in client.get("/join/").content.decode()
