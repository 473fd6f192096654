"""A two-round contest steered from the console in headless Chromium (issue 11): the organizer extends a
deadline, closes the anonymization phase early, opens the attack phase early, publishes round 1
(provisional, round 2 "not played yet"), announces, plays round 2, publishes (final) and everyone
downloads the CSVs. Jobs run on a real Celery worker; the teams' uploads go through the services
(the upload pages have their own browser test). Screenshots at 1280 and 390 px.
"""
from __future__ import annotations

import csv
import io
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.browser.layout import overflow_problems
from tests.browser.test_contest_flow import login
from tests.contest.conftest import anonymize_csv, contest_spec, user
from tests.worker import wait_for_jobs

pytestmark = [pytest.mark.browser, pytest.mark.integration]

PASSWORD = "a-long-organizer-pass"


def two_round_contest():
    from contest.services.setup import create_contest
    spec = contest_spec(slug="two")
    first = spec["rounds"][0]
    first.pop("weight")  # the 2019 rule: 0.1 and 0.9
    first["name"] = "Preliminary"
    second = {**first, "number": 2, "name": "Final", "phases": {
        "anonymization": {"opens": "now+72h", "closes": "now+96h"}, "attack": {"opens": "now+96h", "closes": "now+120h"}}}
    spec["rounds"] = [first, second]
    spec["contest"]["organizers"] = ["organizer"]
    spec["users"] = [{"username": "organizer", "password": PASSWORD}]
    return create_contest(spec)


def round_card(page, name):
    return page.locator(".card", has=page.locator("h3", has_text=name))


def phase_row(page, round_name, kind):
    return round_card(page, round_name).locator("tbody tr", has=page.locator("th", has_text=kind))


def generate(org, base, contest, round_name):
    org.goto(f"{base}/console/{contest.slug}/")
    round_card(org, round_name).get_by_role("button", name=re.compile("Start data generation")).click()
    org.wait_for_url(re.compile(r"/jobs/\d+/$"))
    wait_for_jobs(contest, kinds=["generate_round", "generate_dataset"], timeout=240)


def teams_upload(rnd):
    from contest.models import Dataset
    from contest.services import uploads
    for ds in Dataset.objects.filter(round=rnd, kind=Dataset.TEAM):
        uploads.submit_anonymized_set(user=user(f"{ds.team.name.lower()}1"), dataset=ds,
                                      content=anonymize_csv(ds, "A3-kRR", seed=ds.number), name="a.csv")


def set_dates(org, round_name, kind, *, opens=None, closes=None, tz):
    """Open the phase's "Change dates" and save new times (contest time zone)."""
    row = phase_row(org, round_name, kind)
    row.locator("summary").click()
    fmt = "%Y-%m-%dT%H:%M"
    if opens is not None:
        row.locator("input[name$='-opens_at']").fill(opens.astimezone(tz).strftime(fmt))
    if closes is not None:
        row.locator("input[name$='-closes_at']").fill(closes.astimezone(tz).strftime(fmt))
    row.get_by_role("button", name="Save dates").click()
    org.wait_for_load_state()


def publish(org, contest, round_name):
    org.locator("#publish-round").select_option(label=round_name)
    org.once("dialog", lambda d: d.accept())
    org.get_by_role("button", name="Publish results").click()
    org.wait_for_load_state()
    wait_for_jobs(contest, kinds=["compute_results"], timeout=240)


def close_attack(org, base, contest, round_name):
    """The organizer closes the round's open attack phase from the console (its results job runs)."""
    org.goto(f"{base}/console/{contest.slug}/")
    org.once("dialog", lambda d: d.accept())
    phase_row(org, round_name, "attack").get_by_role("button", name=re.compile("Close now")).click()
    org.wait_for_load_state()
    wait_for_jobs(contest, kinds=["compute_results"], timeout=240)
    org.goto(f"{base}/console/{contest.slug}/")


def look(page, shot, name):
    """Screenshots at 1280 and 390 px; nothing may make the page scroll sideways."""
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        assert not [p for p in overflow_problems(page, strict=False) if "page scrolls" in p], page.url
        shot(page, f"{name}-{width}")
    page.set_viewport_size({"width": 1280, "height": 900})


def test_two_rounds_steered_from_the_console(live_server, celery_worker_process, browser, shot, tmp_path):
    from contest.models import Phase, ResultsSnapshot

    base = live_server.url
    contest = two_round_contest()
    tz = contest.tz
    r1, r2 = contest.rounds.order_by("number")
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    org = ctx.new_page()
    login(org, base, "organizer", PASSWORD)
    generate(org, base, contest, "Preliminary")

    # ---- extend round 1's deadline: the attack phase moves first, then the anonymization phase
    org.goto(f"{base}/console/{contest.slug}/")
    anon1, attack1 = r1.phases.get(kind=Phase.ANONYMIZATION), r1.phases.get(kind=Phase.ATTACK)
    set_dates(org, "Preliminary", "anonymization", closes=attack1.opens_at + timedelta(hours=6), tz=tz)
    assert "The phase was not changed: the attack phase opens at" in org.content()  # refused, with the reason
    set_dates(org, "Preliminary", "attack", opens=attack1.opens_at + timedelta(days=7),
              closes=attack1.closes_at + timedelta(days=7), tz=tz)
    set_dates(org, "Preliminary", "anonymization", closes=anon1.closes_at + timedelta(days=2), tz=tz)
    assert "now runs from" in org.content()
    old_close = anon1.closes_at
    anon1.refresh_from_db()
    assert abs(anon1.closes_at - (old_close + timedelta(days=2))) < timedelta(minutes=1)  # the form has minutes
    look(org, shot, "console-two-rounds")

    # ---- the teams upload; the organizer closes early and opens the attack phase early
    teams_upload(r1)
    wait_for_jobs(contest, kinds=["score_anonymized"], timeout=240)
    org.goto(f"{base}/console/{contest.slug}/")
    org.once("dialog", lambda d: d.accept())
    phase_row(org, "Preliminary", "anonymization").get_by_role("button", name=re.compile("Close now")).click()
    org.wait_for_url(re.compile(r"/jobs/\d+/$"))
    wait_for_jobs(contest, timeout=300)
    org.goto(f"{base}/console/{contest.slug}/")
    phase_row(org, "Preliminary", "attack").get_by_role("button", name=re.compile("Open now")).click()
    org.wait_for_load_state()
    assert "The attack phase of Preliminary is open." in org.content()
    attack1.refresh_from_db()
    assert attack1.is_open()

    # ---- publish round 1: refused while its attack phase is open (its attacks are not all in) ...
    # (the console offers no round it could not publish, and says why, before anyone confirms)
    assert org.get_by_role("button", name="Publish results").is_disabled()
    assert org.locator("#publish-round").count() == 0
    assert "the attack phase of Preliminary has not closed" in org.locator("#publish-refusal").inner_text()
    assert not ResultsSnapshot.objects.filter(contest=contest, published=True).exists()
    close_attack(org, base, contest, "Preliminary")
    # ... then provisional, round 2 not played yet
    publish(org, contest, "Preliminary")
    public = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True).new_page()
    public.goto(f"{base}/c/{contest.slug}/leaderboard/?round=total")
    standing = public.locator(".standing").inner_text()
    assert "Provisional standings." in standing and "Not played yet: Final" in standing
    assert "Weighted total over the rounds played so far" in public.content()
    look(public, shot, "leaderboard-provisional")
    public.get_by_role("link", name=re.compile(r"Final .*not played yet")).click()
    public.locator("#not-played").wait_for()
    assert public.locator("#leaderboard").count() == 0  # no table of zeros

    # ---- announce
    org.goto(f"{base}/console/{contest.slug}/")
    form = org.locator("section", has=org.locator("#announcements")).locator("details")
    if form.get_attribute("open") is None:
        form.locator("summary").click()
    org.get_by_label("Title").fill("Round 2 opens early")
    org.get_by_label("Text").fill("The final round's data is out now.")
    org.get_by_role("button", name="Announce").click()
    org.wait_for_load_state()
    public.goto(f"{base}/c/{contest.slug}/")
    assert "Round 2 opens early" in public.locator(".announcements").inner_text()

    # ---- play round 2 and publish: final
    generate(org, base, contest, "Final")
    from contest.services import schedule
    schedule.reschedule_phase(r2.phases.get(kind=Phase.ANONYMIZATION), opens_at=timezone.now() - timedelta(minutes=1))
    teams_upload(r2)
    wait_for_jobs(contest, kinds=["score_anonymized"], timeout=240)
    org.goto(f"{base}/console/{contest.slug}/")
    org.once("dialog", lambda d: d.accept())
    phase_row(org, "Final", "anonymization").get_by_role("button", name=re.compile("Close now")).click()
    org.wait_for_url(re.compile(r"/jobs/\d+/$"))
    wait_for_jobs(contest, timeout=300)
    org.goto(f"{base}/console/{contest.slug}/")
    phase_row(org, "Final", "attack").get_by_role("button", name=re.compile("Open now")).click()
    org.wait_for_load_state()
    close_attack(org, base, contest, "Final")
    publish(org, contest, "Final")
    assert ResultsSnapshot.objects.filter(contest=contest, published=True).latest("id").data["standing"]["final"]
    public.goto(f"{base}/c/{contest.slug}/leaderboard/?round=total")
    assert "Final standings." in public.locator(".standing").inner_text()
    assert "not played yet" not in public.content()
    look(public, shot, "leaderboard-final")

    # ---- the CSVs: the leaderboard and the matrix (public), the team's own history
    with public.expect_download() as dl:
        public.get_by_role("link", name="Download this table (CSV)").click()
    board = list(csv.DictReader(io.StringIO(dl.value.path().read_text())))
    assert len(board) == 3 and dl.value.suggested_filename.endswith("_final.csv")
    public.goto(f"{base}/c/{contest.slug}/attack-matrix/?round=2")
    with public.expect_download() as dl:
        public.get_by_role("link", name="Download the matrix (CSV)").click()
    assert dl.value.path().read_text().startswith("round,kind,attacker,attacker_label,target_team")
    team = browser.new_context(viewport={"width": 390, "height": 900}, accept_downloads=True).new_page()
    login(team, base, "alpha1", "pw")
    team.goto(f"{base}/c/{contest.slug}/team/")
    assert "Round 2 opens early" in team.content()
    look(team, shot, "team-with-announcement")
    with team.expect_download() as dl:
        team.get_by_role("link", name="Your uploads and scores (CSV)").click()
    history = list(csv.DictReader(io.StringIO(dl.value.path().read_text())))
    assert {r["round"] for r in history} == {"1", "2"} and len(history) == 4
