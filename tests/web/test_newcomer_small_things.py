"""The smaller things a new user hit (issue 40 item 11): a job's arguments and the audit log name objects,
not ids; the data generation button goes once a round has all its data; "Publish results" offers only
rounds it can publish and says why when none; training traces say how their time ids were read; an etraces
file sent as an etable is told to pick the other kind; the per-user list reads "I2-VisitProb; I3-HomeProb";
the plots page defines s_req and names its paper; the map page says which numbering info_region.csv uses;
the page script's deadline has the pages' one time format."""
from __future__ import annotations

import csv
import io
import re
from datetime import timedelta

import numpy as np
import pytest
from django.test import Client
from django.utils import timezone

from contest.models import AuditLog, Job, Phase
from tests.contest.conftest import move_phase, user

pytestmark = pytest.mark.django_db


def organizer() -> Client:
    c = Client()
    c.force_login(user("judge"))
    return c


def test_a_jobs_page_names_its_arguments_and_the_audit_log_its_objects(generated):
    rnd = generated.rounds.get()
    ds = rnd.datasets.get(number=1, challenge=1)
    job = Job.objects.create(kind="round_figures", contest=generated, args={"round_id": rnd.pk, "part": "fairness"})
    page = organizer().get(f"/console/{generated.slug}/jobs/{job.pk}/").content.decode()
    assert "round_id" not in page and "{&#x27;" not in page, page[page.find("Arguments"):][:300]
    assert f"Round: {rnd.name}" in page and "Part: fairness" in page
    from contest.services import uploads
    from tests.contest.conftest import anonymize_csv
    aset = uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds, content=anonymize_csv(ds), name="a.csv")
    job = Job.objects.create(kind="score_anonymized", contest=generated, args={"anonymized_set_id": aset.pk})
    page = organizer().get(f"/console/{generated.slug}/jobs/{job.pk}/").content.decode()
    assert f'href="/c/{generated.slug}/team/uploads/{aset.pk}/"' in page and f"#{aset.seq} of {ds.label}" in page
    # the audit log: the upload by name and link, not "AnonymizedSet 17"
    from contest.services import audit
    audit.record("select_upload", contest=generated, actor=user("alpha1"), obj=aset)
    page = organizer().get(f"/console/{generated.slug}/").content.decode()
    log = page[page.index('id="audit"'):]
    assert f"AnonymizedSet {aset.pk}" not in log and f"#{aset.seq} of {ds.label}" in log
    assert AuditLog.objects.filter(object_type="AnonymizedSet").exists()


def test_a_round_with_all_its_data_offers_no_generation(generated, make_contest):
    page = organizer().get(f"/console/{generated.slug}/").content.decode()
    assert "Generate missing data" not in page and "Start data generation" not in page
    assert "data sets of the round are generated" in page
    fresh = make_contest(slug="fresh")
    assert "Start data generation" in organizer().get(f"/console/{fresh.slug}/").content.decode()


def _publish_form(page: str) -> str:
    return page[page.index('class="publish-form"'):].split("</form>")[0]


def test_publish_offers_only_rounds_it_can_publish_and_says_why_not(closed_unobfuscated):
    contest = closed_unobfuscated
    rnd = contest.rounds.get()
    # played, but the attack phase is still open: nothing to publish, the button disabled with the reason
    form = _publish_form(organizer().get(f"/console/{contest.slug}/").content.decode())
    assert "<option" not in form and "disabled" in form and "has not closed" in form, form
    # the attack phase closed: the round is offered
    move_phase(rnd, Phase.ATTACK, -3, -1)
    Phase.objects.filter(round=rnd, kind=Phase.ATTACK).update(closed_at=timezone.now() - timedelta(hours=1))
    from django.core.cache import cache
    cache.clear()
    form = _publish_form(organizer().get(f"/console/{contest.slug}/").content.decode())
    assert f'<option value="{rnd.number}"' in form and "disabled" not in form, form


def test_training_traces_say_how_their_time_ids_were_read(make_contest):
    from contest.services import training_data
    from scoring.io.writers import write_traces
    from scoring.traces import Traces
    contest = make_contest(slug="slots", synthesizer="coloc",
                           extra={"synthesizer_params": {"min_users": 2, "options": {"theta": 5}}})
    rnd = contest.rounds.get()
    per_day = rnd.time_axis().slots_per_day
    n_ids = per_day + 15  # a day and 15 slots more
    rng = np.random.default_rng(0)
    traces = Traces(np.arange(1, 41), np.arange(1, n_ids + 1),
                    rng.integers(0, contest.grid_nx * contest.grid_ny, (40, n_ids)).astype(np.int32))
    buf = io.BytesIO()
    write_traces(traces, buf)
    training_data.give_training_data(rnd, user=user("judge"), content=buf.getvalue(), name="train.csv",
                                     kind="traces")
    page = organizer().get(f"/console/{contest.slug}/").content.decode()
    note = re.search(r'<p class="small training">(.*?)</p>', page, re.S).group(1)
    assert f"40 users with {n_ids} time ids each" in note and f"{per_day}-slot day" in note, note
    assert "1 day(s) and 15 slot(s)" in note, note


def test_an_etraces_file_sent_as_an_etable_is_told_to_pick_the_other_kind():
    from scoring.errors import ValidationError
    from scoring.io.readers import read_etable
    with pytest.raises(ValidationError) as refused:
        read_etable(b"reg_id\n5\n7\n", 2, 2)
    issue = refused.value.issues[0]
    assert issue.code == "etraces_header" and "kind etraces" in issue.message, issue.message
    assert "expected header 'user_id', found 'reg_id'" in issue.message


def test_the_per_user_list_of_attacks_has_a_space_after_each_semicolon():
    from django.template import Context, Template
    text = Template("{% load listing %}{{ v|semicolon_list }}").render(Context({"v": "I2-VisitProb;I3-HomeProb"}))
    assert text == "I2-VisitProb; I3-HomeProb"
    from pathlib import Path
    template = (Path(__file__).resolve().parents[2] / "templates/web/_privacy_preview.html").read_text()
    assert "r.reidentified_by|semicolon_list" in template


def test_the_plots_page_defines_s_req_and_names_its_paper(closed_unobfuscated):
    from contest.services import results
    contest = closed_unobfuscated
    results.snapshot(contest)
    page = organizer().get(f"/c/{contest.slug}/plots/?preview=1").content.decode()
    assert "the contest paper" not in page
    assert "Designing a Location Trace Anonymization Contest" in page
    assert f"s_req = {contest.s_req:g}" in page or f"s_req = {contest.s_req}" in page


def test_the_map_page_says_which_numbering_info_region_uses(generated):
    rnd = generated.rounds.get()
    ds = rnd.datasets.get(number=1, challenge=1)
    c = Client()
    c.force_login(user("alpha1"))
    page = c.get(f"/c/{generated.slug}/team/datasets/{ds.pk}/map/").content.decode()
    assert "count from 0" in page and "x_id is x + 1" in page and "y_id is y + 1" in page
    row = re.search(r'<th scope="row">(\d+)</th><td class="num">(\d+)</td><td class="num">(\d+)</td>', page)
    region, x, y = (int(g) for g in row.groups())
    assert region == y * generated.grid_nx + x + 1
    info = c.get(f"/api/rounds/{rnd.pk}/info_region.csv")
    rows = {int(r["reg_id"]): r for r in csv.DictReader(io.StringIO(b"".join(info.streaming_content).decode()
                                                                     if info.streaming else info.content.decode()))}
    assert (int(rows[region]["x_id"]), int(rows[region]["y_id"])) == (x + 1, y + 1)


def test_a_deadline_has_its_zones_abbreviation_for_the_page_script(generated):
    from contest.templatetags.contest_time import contest_time, contest_zone
    when = timezone.now()
    assert contest_time(when, generated).endswith(" " + contest_zone(when, generated))
    page = Client().get(f"/c/{generated.slug}/").content.decode()
    assert re.search(r'data-countdown[^>]*data-tz-name="[A-Z+\-0-9]+"', page), "no zone name on the countdown"
