"""Communication (issue 11 item 6): announcements on the contest and team pages and by e-mail; a team's
own history, the public leaderboard and the attack matrix as CSV (the same rows as the pages)."""
from __future__ import annotations

import csv
import io

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from rest_framework.test import APIClient

from contest.models import Announcement, AnonymizedSet, Phase, Team
from contest.services import results
from tests.contest.conftest import move_phase, upload_all_and_close, user

pytestmark = pytest.mark.django_db


def _client(username):
    c = Client()
    c.force_login(user(username))
    return c


def _rows(response) -> list[dict]:
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_an_announcement_reaches_the_pages_and_every_members_mailbox(generated, django_capture_on_commit_callbacks):
    contest = generated
    get_user_model().objects.filter(username__in=["alpha1", "beta1"]).update(email="x@example.org")
    get_user_model().objects.filter(username="gamma2").update(email="g@example.org")
    with django_capture_on_commit_callbacks(execute=True):
        r = _client("judge").post(f"/console/{contest.slug}/announce/",
                                  {"a-title": "Deadline extended", "a-body": "Round 1 now closes on Friday.",
                                   "a-email": "on"})
    assert r.status_code == 302
    item = Announcement.objects.get()
    assert sorted(m.to[0] for m in mail.outbox) == ["g@example.org", "x@example.org"]  # one each, no Cc
    assert mail.outbox[0].subject == f"[{contest.name}] Deadline extended" and item.emailed_to == 2
    for page in (Client().get(f"/c/{contest.slug}/"), _client("beta1").get(f"/c/{contest.slug}/team/")):
        html = page.content.decode()
        assert "Deadline extended" in html and "Round 1 now closes on Friday." in html
    api = APIClient()
    assert api.get(f"/api/contests/{contest.slug}/announcements/").json()[0]["title"] == "Deadline extended"
    api.force_authenticate(user("alpha1"))
    assert api.post(f"/api/contests/{contest.slug}/announcements/", {"title": "x", "body": "y"},
                    format="json").status_code == 403
    api.force_authenticate(user("judge"))
    r = api.post(f"/api/contests/{contest.slug}/announcements/", {"title": "", "body": "y"}, format="json")
    assert r.status_code == 400 and r.json()["error"]["issues"][0]["field"] == "title"
    r = api.post(f"/api/contests/{contest.slug}/announcements/", {"title": "Hi", "body": "<script>x</script>",
                                                                  "email": False}, format="json")
    assert r.status_code == 201 and len(mail.outbox) == 2
    assert "<script>x</script>" not in Client().get(f"/c/{contest.slug}/").content.decode()  # escaped


def test_an_announcement_to_a_contest_without_addresses_is_emailed_to_nobody(generated,
                                                                            django_capture_on_commit_callbacks):
    from contest.models import Job
    from contest.services import announcements
    with django_capture_on_commit_callbacks(execute=True):
        item = announcements.announce(generated, title="Hello", body="No one gave an address.", user=user("judge"))
    item.refresh_from_db()
    assert item.emailed_to == 0 and not mail.outbox
    assert Job.objects.get(kind="email_announcement").status == Job.SUCCEEDED


def test_a_team_downloads_its_own_history(generated, django_capture_on_commit_callbacks):
    contest = generated
    upload_all_and_close(contest, {1: ("A1-none", {}), 2: ("A3-kRR", {}), 3: ("A1-none", {})},
                         django_capture_on_commit_callbacks)
    rows = _rows(_client("alpha1").get(f"/c/{contest.slug}/team/history.csv"))
    mine = AnonymizedSet.objects.filter(team__number=1)
    assert len(rows) == mine.count() == 2
    assert {float(r["s_u"]) for r in rows} == {a.s_u for a in mine}
    assert {r["sha256"] for r in rows} == {a.file.sha256 for a in mine}
    assert Client().get(f"/c/{contest.slug}/team/history.csv").status_code == 302  # login first
    outsider = get_user_model().objects.create_user("eve", password="pw-eve-long")
    c = Client()
    c.force_login(outsider)
    assert c.get(f"/c/{contest.slug}/team/history.csv").status_code == 403


def test_public_csvs_are_the_pages_rows_and_respect_the_embargo(generated, django_capture_on_commit_callbacks):
    contest = generated
    upload_all_and_close(contest, {1: ("A1-none", {}), 2: ("A3-kRR", {}), 3: ("A1-none", {})},
                         django_capture_on_commit_callbacks)
    Team.objects.filter(contest=contest, number=2).update(name="=HYPERLINK(\"http://x\")")
    assert Client().get(f"/c/{contest.slug}/leaderboard.csv").status_code == 404  # embargoed
    move_phase(contest.rounds.get(), Phase.ATTACK, -5, -1)  # the attack phase is over: publishing is allowed
    with django_capture_on_commit_callbacks(execute=True):
        results.request_results(contest, publish=True)
    snap = results.published_snapshot(contest)
    rows = _rows(Client().get(f"/c/{contest.slug}/leaderboard.csv?round=total"))
    board = snap.data["leaderboards"]["total"]
    assert [int(r["team"]) for r in rows] == [b["team"] for b in board]
    totals = {t["team"]: t for t in snap.data["team_totals"]}
    assert all(float(r["overall"]) == totals[int(r["team"])]["overall"] for r in rows)
    assert any(r["team_name"] == "'=HYPERLINK(\"http://x\")" for r in rows)  # no formula for a spreadsheet
    rows = _rows(Client().get(f"/c/{contest.slug}/attack-matrix.csv?round=1"))
    cells = [r for r in rows if r["attacker"]]                  # the rest: each kind's minimum row
    assert len(cells) == len([c for c in snap.data["matrix"] if c["set"]["round"] == 1]) > 0
    valid = [s for s in snap.data["sets"] if s["set"]["round"] == 1 and s["valid"]]
    assert [r["attacker_label"] for r in rows].count("Minimum") == 2 * len(valid)
    assert {r["kind"] for r in cells} == {"reidentification", "trace_inference"}


def test_an_announcement_counts_the_mails_sent_the_organizers_copy_too(generated, django_capture_on_commit_callbacks):
    """The organizer gets a copy; "e-mailed to N addresses" counts every mail sent (it said "1 member" where
    two mails went)."""
    from contest.services import announcements
    get_user_model().objects.filter(username="judge").update(email="judge@example.org")
    with django_capture_on_commit_callbacks(execute=True):
        item = announcements.announce(generated, title="Hello", body="Only the organizer has an address.",
                                      user=user("judge"))
    item.refresh_from_db()
    assert [m.to for m in mail.outbox] == [["judge@example.org"]] and item.emailed_to == 1
    assert "e-mailed to 1 address" in Client().get(f"/c/{generated.slug}/").content.decode()
    get_user_model().objects.filter(username="beta2").update(email="b@example.org")
    with django_capture_on_commit_callbacks(execute=True):
        item = announcements.announce(generated, title="Again", body="Now one member too.", user=user("judge"))
    item.refresh_from_db()
    assert len(mail.outbox) == 3 and item.emailed_to == 2
    assert "e-mailed to 2 addresses" in Client().get(f"/c/{generated.slug}/").content.decode()
